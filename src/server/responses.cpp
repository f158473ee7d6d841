#include "server/responses.h"

#include <vector>

namespace smolvlm::server {

using ojson = nlohmann::ordered_json;

const char* openai_finish_reason(smolvlm_finish_reason reason) {
  return reason == SMOLVLM_FINISH_LENGTH || reason == SMOLVLM_FINISH_CONTEXT_FULL ? "length" : "stop";
}

namespace {
const char* finish(const smolvlm_result& r, bool timed_out) { return timed_out ? "length" : openai_finish_reason(r.finish_reason); }
const char* object_name(const ResponseHeader& h, bool chunk) {
  if (h.endpoint == Endpoint::Chat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}
ojson head(const ResponseHeader& h, bool chunk) {
  ojson j;
  j["id"] = h.id;
  j["object"] = object_name(h, chunk);
  j["created"] = h.created;
  j["model"] = h.model;
  return j;
}
}  // namespace

ojson usage_json(const smolvlm_result& r) {
  const auto completion = static_cast<int64_t>(r.n_tokens);
  // cached_tokens: OpenAI's name for prompt tokens served from an earlier request's state (the slot's KV).
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", r.reused_tokens}}}};
}

ojson engine_json(const smolvlm_result& r, bool timed_out) {
  const smolvlm_timings& t = r.timings;
  ojson j;
  j["token_ids"] = std::vector<int32_t>(r.token_ids, r.token_ids + r.n_tokens);
  j["finish_reason"] = timed_out ? "time_limit" : smolvlm_finish_reason_name(r.finish_reason);
  j["image_tiles"] = r.image_tiles;
  j["timings"] = {{"load_s", t.load_s},       {"preprocess_s", t.preprocess_s}, {"vision_s", t.vision_s},
                  {"prefill_s", t.prefill_s}, {"decode_s", t.decode_s}};
  j["kernel_path"] = r.kernel_path ? r.kernel_path : "";
  return j;
}

ojson completion_json(const ResponseHeader& h, const smolvlm_result& r, bool timed_out) {
  ojson j = head(h, false);
  ojson choice;
  choice["index"] = 0;
  const std::string text(r.text ? r.text : "", r.text_size);
  if (h.endpoint == Endpoint::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish(r, timed_out);
  j["choices"] = ojson::array({choice});
  j["usage"] = usage_json(r);
  j["smolvlm"] = engine_json(r, timed_out);
  return j;
}

ojson chunk_json(const ResponseHeader& h, const std::string& text, bool first, const smolvlm_result* result,
                 bool timed_out, bool include_usage) {
  ojson j = head(h, true);
  ojson choice;
  choice["index"] = 0;
  if (h.endpoint == Endpoint::Chat) {
    ojson delta = ojson::object();
    if (first) delta["role"] = "assistant";
    if (!result || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = result ? ojson(finish(*result, timed_out)) : ojson();
  j["choices"] = ojson::array({choice});
  if (include_usage) j["usage"] = nullptr;
  if (result) j["smolvlm"] = engine_json(*result, timed_out);
  return j;
}

ojson usage_chunk_json(const ResponseHeader& h, const smolvlm_result& r) {
  ojson j = head(h, true);
  j["choices"] = ojson::array();
  j["usage"] = usage_json(r);
  return j;
}

std::string sse(const ojson& j) {
  return "data: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace smolvlm::server
