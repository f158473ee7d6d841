// A small HTTP client over libcurl for the hub protocol: HEAD without redirects (to read the hub's
// headers), small GETs, and streamed GETs with a byte-range start (to resume downloads).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace smolvlm::hub {

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the final response; names lower-cased
  std::string body;                           // small bodies, and error bodies of streamed GETs
  std::string url;                            // the URL that gave the final response

  // Header value by lower-case name; empty when absent.
  std::string header(const std::string& lower_name) const;
};

// Why a request got no HTTP answer at all.
enum class TransportFailure {
  Connect,  // could not reach the server: refused, DNS, TLS, connect timeout
  Cut,      // the connection broke or stalled during the body (worth resuming)
  Sink,     // the body's consumer refused the bytes (its own error is rethrown instead)
};

class TransportError : public std::runtime_error {
 public:
  TransportError(TransportFailure failure, const std::string& message)
      : std::runtime_error(message), failure_(failure) {}
  TransportFailure failure() const { return failure_; }

 private:
  TransportFailure failure_;
};

class HttpClient {
 public:
  // `token`, when not empty, is sent as "Authorization: Bearer <token>" (libcurl drops it on a
  // redirect to another host, as the hub's CDN expects).
  explicit HttpClient(std::string token = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD without following redirects. Throws TransportError.
  HttpResponse head(const std::string& url);
  // GET following redirects; bodies larger than `max_body` are refused (TransportError Cut).
  HttpResponse get(const std::string& url, size_t max_body = size_t(16) << 20);
  // GET following redirects from byte `offset` (Range: bytes=offset-). The body of a 200/206 answer
  // goes to `sink` in pieces; any other answer's body lands in HttpResponse::body. An exception
  // thrown by `sink` aborts the transfer and is rethrown. Throws TransportError.
  // `answer` holds the status and headers of the response the bytes belong to.
  using Sink = std::function<void(const HttpResponse& answer, const char* data, size_t size)>;
  HttpResponse get_stream(const std::string& url, uint64_t offset, const Sink& sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a URL path segment; with `keep_slash`, '/' stays (file paths inside a repo).
std::string url_escape(const std::string& s, bool keep_slash);

// Resolves a Location header against the URL it came from (absolute, "/path" or relative).
std::string resolve_location(const std::string& base_url, const std::string& location);

}  // namespace smolvlm::hub
