#include "server/media.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "server/http_error.h"

namespace smolvlm::server {

namespace {

HttpError bad(const std::string& param, const std::string& message) { return HttpError(400, param + ": " + message, param, "invalid_image_url"); }

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

std::string shorten(std::string_view s) {
  std::string out(s.substr(0, 48));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s.size() > 48 ? out + "..." : out;
}

}  // namespace

bool decode_base64(std::string_view in, std::string& out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;
  out.clear();
  out.reserve(in.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    const int v = base64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string decode_data_url(std::string_view url, size_t max_bytes, const std::string& param) {
  const size_t comma = url.find(',');
  if (url.substr(0, 5) != "data:" || comma == std::string_view::npos)
    throw bad(param, "a data URL must look like data:image/png;base64,...");
  const std::string_view meta = url.substr(5, comma - 5);
  if (meta.substr(0, 6) != "image/") throw bad(param, "data URL of type \"" + shorten(meta) + "\": expected image/...");
  if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64")
    throw bad(param, "data URL is not base64 (expected ;base64, before the payload)");
  const std::string_view payload = url.substr(comma + 1);
  if (payload.size() / 4 * 3 > max_bytes + 3)
    throw bad(param, "image of about " + std::to_string(payload.size() / 4 * 3) + " bytes exceeds the limit of " +
                         std::to_string(max_bytes));
  std::string bytes;
  if (!decode_base64(payload, bytes)) throw bad(param, "data URL payload is not valid base64");
  if (bytes.empty()) throw bad(param, "data URL holds no bytes");
  if (bytes.size() > max_bytes)
    throw bad(param, "image of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " + std::to_string(max_bytes));
  return bytes;
}

std::string read_media_file(std::string_view url, const MediaPolicy& policy, const std::string& param) {
  if (policy.media_path.empty())
    throw bad(param, "file:// URLs are refused (the server reads local files only under --media-path)");
  std::string path(url.substr(7));
  if (path.empty() || path[0] != '/') throw bad(param, "a file:// URL needs an absolute path");
  if (path.find('\0') != std::string::npos) throw bad(param, "the file path holds a NUL byte");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::canonical(policy.media_path, ec);
  if (ec) throw HttpError(500, "the media folder " + policy.media_path + " cannot be resolved: " + ec.message());
  const fs::path real = fs::canonical(path, ec);
  if (ec) throw bad(param, "file " + shorten(path) + " not found under the media folder");
  // Symlinks and .. are resolved by canonical(): what counts is where the file really is.
  const std::string r = real.string(), base = root.string() + (root.string() == "/" ? "" : "/");
  if (r.compare(0, base.size(), base) != 0 || r.size() == base.size())
    throw bad(param, "file " + shorten(path) + " is outside the media folder");
  if (!fs::is_regular_file(real, ec)) throw bad(param, "file " + shorten(path) + " is not a regular file");
  const auto size = fs::file_size(real, ec);
  if (ec || size > policy.max_image_bytes)
    throw bad(param, "file " + shorten(path) + " exceeds the image size limit of " + std::to_string(policy.max_image_bytes));
  std::ifstream f(real, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!f || !f.read(bytes.data(), static_cast<std::streamsize>(size))) throw bad(param, "file " + shorten(path) + " cannot be read");
  return bytes;
}

bool is_private_address(const std::string& ip) {
  unsigned char a[16];
  if (inet_pton(AF_INET, ip.c_str(), a) == 1) {
    const unsigned b0 = a[0], b1 = a[1];
    return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) || (b0 == 172 && (b1 & 0xf0) == 16) ||
           (b0 == 192 && b1 == 168) || (b0 == 100 && (b1 & 0xc0) == 64) || (b0 == 192 && b1 == 0 && a[2] == 0) ||
           (b0 == 198 && (b1 & 0xfe) == 18) || b0 >= 224;
  }
  if (inet_pton(AF_INET6, ip.c_str(), a) == 1) {
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a, kMapped, 12) == 0) {
      char v4[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, a + 12, v4, sizeof v4);
      return is_private_address(v4);
    }
    bool zero15 = true;
    for (int i = 0; i < 15; ++i) zero15 = zero15 && a[i] == 0;
    if (zero15 && (a[15] == 0 || a[15] == 1)) return true;  // :: and ::1
    if ((a[0] & 0xfe) == 0xfc) return true;                 // fc00::/7 unique local
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return true; // fe80::/10 link-local
    if (a[0] == 0xff) return true;                          // multicast
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) return true;  // documentation
    return false;
  }
  return true;  // not an address we can judge: refuse
}

namespace {

struct Fetch {
  const MediaPolicy* policy;
  std::string body;
  std::string refused;  // an address the policy refused
  bool too_big = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<Fetch*>(user);
  if (f->body.size() + size * n > f->policy->max_image_bytes) {
    f->too_big = true;
    return 0;
  }
  f->body.append(data, size * n);
  return size * n;
}

// Called for every connection libcurl opens (redirects included), after name resolution: the
// address actually connected to is the one checked, so DNS tricks cannot slip past.
curl_socket_t open_checked_socket(void* user, curlsocktype, struct curl_sockaddr* addr) {
  auto* f = static_cast<Fetch*>(user);
  char ip[INET6_ADDRSTRLEN] = "";
  if (addr->family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr->addr)->sin_addr, ip, sizeof ip);
  else if (addr->family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr->addr)->sin6_addr, ip, sizeof ip);
  if (!f->policy->allow_private && is_private_address(ip)) {
    f->refused = ip[0] ? ip : "an address of an unknown family";
    return CURL_SOCKET_BAD;
  }
  return socket(addr->family, addr->socktype, addr->protocol);
}

}  // namespace

std::string fetch_remote_image(const std::string& url, const MediaPolicy& policy, const std::string& param) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialized) throw HttpError(500, "libcurl failed to initialize");
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw HttpError(500, "libcurl failed to initialize");
  Fetch f{&policy, {}, {}, false};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, policy.max_redirects);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, std::min(policy.fetch_timeout_s, 5L));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, policy.fetch_timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "smolvlm-server/0.2");
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(policy.max_image_bytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // the address checked is the one connected to
  const CURLcode rc = curl_easy_perform(c);
  if (!f.refused.empty())
    throw HttpError(400, param + ": remote image refused: the host resolves to the private or reserved address " +
                             f.refused + " (allowed only with --allow-private-images)", param, "invalid_image_url");
  if (f.too_big || rc == CURLE_FILESIZE_EXCEEDED)
    throw bad(param, "remote image exceeds the limit of " + std::to_string(policy.max_image_bytes) + " bytes");
  if (rc != CURLE_OK) throw bad(param, std::string("remote image could not be fetched: ") + curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) throw bad(param, "remote image answered HTTP " + std::to_string(status));
  return std::move(f.body);
}

std::string load_image_url(const std::string& url, const MediaPolicy& policy, const RemoteFetcher& fetch,
                           const std::string& param) {
  if (url.rfind("data:", 0) == 0) return decode_data_url(url, policy.max_image_bytes, param);
  if (url.rfind("file://", 0) == 0) return read_media_file(url, policy, param);
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    if (!policy.allow_remote)
      throw bad(param, "remote image URLs are refused (start the server with --allow-remote-images)");
    return fetch(url, policy, param);
  }
  throw bad(param, "image URL \"" + shorten(url) + "\": expected a data:, file:// or http(s):// URL");
}

}  // namespace smolvlm::server
