// Fuzzes the --messages parser: any bytes are either turns in OpenAI's message shape or a clean
// api::Error naming the input, and the request they fill is well formed.
#include <smolvlm.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smolvlm::api::Chat chat;
  try {
    smolvlm::cli::add_messages_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", chat);
  } catch (const smolvlm::api::Error& e) {
    if (e.status() != SMOLVLM_ERR_BAD_INPUT) std::abort();
    return 0;
  }
  smolvlm_request r;
  smolvlm_request_init(&r);
  chat.fill(r);
  for (size_t i = 0; i < r.n_messages; ++i)
    for (size_t j = 0; j < r.messages[i].n_parts; ++j) {
      const smolvlm_part& p = r.messages[i].parts[j];
      if (p.kind == SMOLVLM_PART_TEXT ? p.text == nullptr : p.image.path == nullptr) std::abort();
    }
  return 0;
}
