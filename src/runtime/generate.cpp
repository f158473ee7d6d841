#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace smolvlm {

GenerationResult generate(Session& session, std::span<const int64_t> prompt_ids, const GenerationOptions& options,
                          const std::function<bool(int64_t)>& on_token) {
  if (options.max_new_tokens < 0) throw bad_input("max_new_tokens must be >= 0");
  Sampler sampler(options.sampling);
  GenerationResult r;
  std::vector<int64_t> history(prompt_ids.begin(), prompt_ids.end());
  std::span<const float> logits = session.logits();
  while (static_cast<int64_t>(r.ids.size()) < options.max_new_tokens) {
    if (options.keep_step_logits) r.step_logits.insert(r.step_logits.end(), logits.begin(), logits.end());
    const int64_t id = sampler.next(logits, history);
    r.ids.push_back(id);
    history.push_back(id);
    const auto& eos = options.eos_token_ids;
    const bool is_eos = std::find(eos.begin(), eos.end(), id) != eos.end();
    if (on_token && !on_token(id) && !is_eos) {
      r.stopped_by_caller = true;
      break;
    }
    if (is_eos) {
      r.stopped_on_eos = true;
      break;
    }
    if (static_cast<int64_t>(r.ids.size()) == options.max_new_tokens) break;
    if (session.position() >= session.capacity()) {  // context full: stop, the text so far stands
      r.context_full = true;
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    logits = session.decode(id);
    r.decode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return r;
}

}  // namespace smolvlm
