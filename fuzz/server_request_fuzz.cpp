// Fuzzes the server's request parsing: any body is either an engine request whose every pointer is
// set, or an HttpError with a 4xx status (never another exception, never a crash). The same bytes
// also go through the data-URL decoder. No file or network access: file:// is refused (no media
// folder) and remote fetches are answered by a stub that refuses.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http_error.h"
#include "server/media.h"
#include "server/request.h"

using namespace smolvlm::server;

namespace {

std::string refuse_fetch(const std::string&, const MediaPolicy&, const std::string& param) {
  throw HttpError(400, param + ": no fetching while fuzzing", param);
}

void check_parse(const std::string& body, Endpoint endpoint) {
  MediaPolicy policy;
  policy.allow_remote = true;
  policy.max_image_bytes = 1 << 16;
  try {
    ParsedRequest r = parse_request(body, endpoint, policy, refuse_fetch);
    smolvlm_request req;
    smolvlm_request_init(&req);
    r.fill(req);
    if (endpoint == Endpoint::Completion && !req.prompt) std::abort();
    for (size_t i = 0; i < req.n_messages; ++i)
      for (size_t j = 0; j < req.messages[i].n_parts; ++j) {
        const smolvlm_part& p = req.messages[i].parts[j];
        if (p.kind == SMOLVLM_PART_TEXT ? p.text == nullptr : (p.image.data == nullptr || p.image.size == 0)) std::abort();
      }
    for (size_t i = 0; i < req.n_stop; ++i)
      if (!req.stop[i] || !*req.stop[i]) std::abort();
  } catch (const HttpError& e) {
    if (e.status < 400 || e.status >= 500) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  check_parse(body, Endpoint::Chat);
  check_parse(body, Endpoint::Completion);
  try {
    const std::string bytes = decode_data_url(body, 1 << 16, "fuzz");
    if (bytes.empty() || bytes.size() > (1 << 16)) std::abort();
  } catch (const HttpError& e) {
    if (e.status != 400) std::abort();
  }
  return 0;
}
