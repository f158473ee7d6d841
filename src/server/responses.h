// The JSON bodies the server answers with, in OpenAI's shapes: whole completions, stream chunks
// and usage. Each carries an extra "smolvlm" object (token ids, engine finish reason, stage timings,
// kernel path) that OpenAI clients pass through untouched.
#pragma once

#include <smolvlm.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/request.h"

namespace smolvlm::server {

struct ResponseHeader {
  std::string id;     // "chatcmpl-..." or "cmpl-..."
  std::string model;  // the served model's id
  int64_t created = 0;
  Endpoint endpoint = Endpoint::Chat;
};

// OpenAI's finish_reason for the engine's: "stop" (eos, a stop string) or "length".
const char* openai_finish_reason(smolvlm_finish_reason reason);

nlohmann::ordered_json usage_json(const smolvlm_result& r);
nlohmann::ordered_json engine_json(const smolvlm_result& r, bool timed_out);
// A whole (non-streamed) answer.
nlohmann::ordered_json completion_json(const ResponseHeader& h, const smolvlm_result& r, bool timed_out);
// One stream chunk: `text` as the delta (chat: the first chunk also carries the role), or the final
// chunk when `result` is given (empty delta, finish_reason, the smolvlm object).
nlohmann::ordered_json chunk_json(const ResponseHeader& h, const std::string& text, bool first,
                                  const smolvlm_result* result, bool timed_out, bool include_usage);
// The usage chunk that ends a stream when stream_options.include_usage is set.
nlohmann::ordered_json usage_chunk_json(const ResponseHeader& h, const smolvlm_result& r);
// "data: <json>\n\n"
std::string sse(const nlohmann::ordered_json& j);

}  // namespace smolvlm::server
