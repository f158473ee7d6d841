#include "hub/http.h"

#include <curl/curl.h>

#include <cctype>
#include <exception>
#include <mutex>

namespace smolvlm::hub {

namespace {

constexpr long kConnectTimeoutS = 15;
// A transfer that moves less than 1 byte/s for this long is treated as cut (and resumed).
constexpr long kStallTimeoutS = 30;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// State shared with libcurl's callbacks during one request.
struct Transfer {
  CURL* curl = nullptr;
  HttpResponse* response = nullptr;
  const HttpClient::Sink* sink = nullptr;
  size_t max_body = 0;
  bool body_too_large = false;
  std::exception_ptr sink_error;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  std::string line(data, n);
  // Each response of a redirect chain starts with a status line: keep only the last one's headers.
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();
    return n;
  }
  size_t colon = line.find(':');
  if (colon != std::string::npos) t->response->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  bool to_sink = t->sink && (status == 200 || status == 206);
  if (!to_sink) {
    if (t->response->body.size() + n > t->max_body) {
      t->body_too_large = true;
      return 0;
    }
    t->response->body.append(data, n);
    return n;
  }
  t->response->status = status;
  try {
    (*t->sink)(*t->response, data, n);
  } catch (...) {
    // Exceptions must not cross libcurl's C frames: keep it, abort the transfer, rethrow later.
    t->sink_error = std::current_exception();
    return 0;
  }
  return n;
}

bool is_connect_failure(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

struct HttpClient::Impl {
  std::string token;
  CURL* curl = nullptr;

  HttpResponse perform(const std::string& url, bool head, bool follow, uint64_t offset, const Sink* sink,
                       size_t max_body) {
    curl_easy_reset(curl);
    HttpResponse response;
    Transfer t;
    t.curl = curl;
    t.response = &response;
    t.sink = sink;
    t.max_body = max_body;
    char error_text[CURL_ERROR_SIZE] = {0};

    // Sizes must be the stored bytes (huggingface_hub asks for identity encoding too).
    curl_slist* headers = curl_slist_append(nullptr, "Accept-Encoding: identity");
    if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
    std::string range = std::to_string(offset) + "-";  // libcurl sends "Range: bytes=<range>"

    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "smolvlm/0.1.0");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kStallTimeoutS);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    if (head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    if (offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());

    CURLcode code = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    char* effective = nullptr;
    curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
    response.url = effective ? effective : url;

    if (t.sink_error) std::rethrow_exception(t.sink_error);
    if (code == CURLE_OK) return response;
    std::string why = error_text[0] ? error_text : curl_easy_strerror(code);
    if (t.body_too_large) throw TransportError(TransportFailure::Cut, url + ": answer larger than expected");
    if (is_connect_failure(code)) throw TransportError(TransportFailure::Connect, url + ": " + why);
    throw TransportError(TransportFailure::Cut, url + ": " + why);
  }
};

HttpClient::HttpClient(std::string token) : impl_(std::make_unique<Impl>()) {
  global_init();
  impl_->token = std::move(token);
  impl_->curl = curl_easy_init();
  if (!impl_->curl) throw std::runtime_error("libcurl: cannot create a handle");
}

HttpClient::~HttpClient() {
  if (impl_ && impl_->curl) curl_easy_cleanup(impl_->curl);
}

HttpResponse HttpClient::head(const std::string& url) { return impl_->perform(url, true, false, 0, nullptr, 0); }

HttpResponse HttpClient::get(const std::string& url, size_t max_body) {
  return impl_->perform(url, false, true, 0, nullptr, max_body);
}

HttpResponse HttpClient::get_stream(const std::string& url, uint64_t offset, const Sink& sink) {
  return impl_->perform(url, false, true, offset, &sink, size_t(1) << 20);
}

std::string url_escape(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string resolve_location(const std::string& base_url, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  size_t scheme = base_url.find("://");
  size_t host_end = scheme == std::string::npos ? std::string::npos : base_url.find('/', scheme + 3);
  std::string origin = host_end == std::string::npos ? base_url : base_url.substr(0, host_end);
  if (!location.empty() && location[0] == '/') return origin + location;
  std::string path = host_end == std::string::npos ? "/" : base_url.substr(host_end);
  size_t query = path.find('?');
  if (query != std::string::npos) path.resize(query);
  return origin + path.substr(0, path.rfind('/') + 1) + location;
}

}  // namespace smolvlm::hub
