// Where the images of a request come from: data: URLs (always), file:// under a media folder (only
// when one is given, never outside it), http(s):// (only when allowed, fetched with libcurl under
// the rules that keep a server from being turned against its own network).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace smolvlm::server {

struct MediaPolicy {
  std::string media_path;      // "" : file:// URLs are refused
  bool allow_remote = false;   // http(s):// URLs
  bool allow_private = false;  // remote hosts on loopback, private, link-local or reserved addresses
  size_t max_image_bytes = size_t(20) << 20;
  long fetch_timeout_s = 10;
  long max_redirects = 3;
};

// The bytes of a data URL "data:image/<type>[;...];base64,<payload>". Throws HttpError 400 naming
// `param` for anything else (not base64, not an image type, bad characters, over the size cap).
std::string decode_data_url(std::string_view url, size_t max_bytes, const std::string& param);

// Standard base64 (padding optional, no whitespace inside); false on any other character.
bool decode_base64(std::string_view in, std::string& out);

// The bytes of a file:// URL whose real path (symlinks and .. resolved) lies inside the media
// folder. Throws HttpError 400 naming `param`.
std::string read_media_file(std::string_view url, const MediaPolicy& policy, const std::string& param);

// An http(s) fetch: the body, or HttpError 400 naming `param`. Replaceable (fuzzing, tests).
using RemoteFetcher = std::function<std::string(const std::string& url, const MediaPolicy&, const std::string& param)>;
std::string fetch_remote_image(const std::string& url, const MediaPolicy& policy, const std::string& param);

// True for loopback, private (RFC 1918, unique local), link-local, CGNAT, multicast, unspecified
// and reserved addresses, given as a numeric IPv4 or IPv6 string.
bool is_private_address(const std::string& numeric_ip);

// The image bytes any URL of a request part names, by the policy.
std::string load_image_url(const std::string& url, const MediaPolicy& policy, const RemoteFetcher& fetch,
                           const std::string& param);

}  // namespace smolvlm::server
