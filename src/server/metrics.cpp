#include "server/metrics.h"

#include <sstream>

namespace smolvlm::server {

void Metrics::count_response(const std::string& path, int status) {
  std::lock_guard lock(mutex_);
  ++responses_[{path, status}];
}

void Metrics::count_generation(int64_t prompt_tokens, int64_t reused_tokens, int64_t completion_tokens, double ttft_s,
                               double decode_s) {
  std::lock_guard lock(mutex_);
  ++generations_;
  prompt_tokens_ += static_cast<uint64_t>(prompt_tokens - reused_tokens);
  reused_tokens_ += static_cast<uint64_t>(reused_tokens);
  completion_tokens_ += static_cast<uint64_t>(completion_tokens);
  if (ttft_s >= 0) {
    ++ttft_count_;
    ttft_sum_ += ttft_s;
  }
  if (completion_tokens > 1) {  // the first token comes from the prefill
    decode_tokens_ += static_cast<uint64_t>(completion_tokens - 1);
    decode_seconds_ += decode_s;
  }
}

std::string Metrics::render(const SchedulerStats& s) const {
  std::lock_guard lock(mutex_);
  std::ostringstream o;
  o << "# HELP smolvlm_requests_total HTTP responses by path and status.\n# TYPE smolvlm_requests_total counter\n";
  for (const auto& [key, n] : responses_)
    o << "smolvlm_requests_total{path=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << "\n";
  o << "# HELP smolvlm_generations_total Generations that ran to an end.\n# TYPE smolvlm_generations_total counter\n"
    << "smolvlm_generations_total " << generations_ << "\n"
    << "# HELP smolvlm_prompt_tokens_total Prompt tokens prefilled.\n# TYPE smolvlm_prompt_tokens_total counter\n"
    << "smolvlm_prompt_tokens_total " << prompt_tokens_ << "\n"
    << "# HELP smolvlm_prompt_tokens_reused_total Prompt tokens kept from a slot's KV of an earlier request, not prefilled.\n"
    << "# TYPE smolvlm_prompt_tokens_reused_total counter\n"
    << "smolvlm_prompt_tokens_reused_total " << reused_tokens_ << "\n"
    << "# HELP smolvlm_completion_tokens_total Tokens generated.\n# TYPE smolvlm_completion_tokens_total counter\n"
    << "smolvlm_completion_tokens_total " << completion_tokens_ << "\n"
    << "# HELP smolvlm_time_to_first_token_seconds From enqueue to the first streamed text.\n"
    << "# TYPE smolvlm_time_to_first_token_seconds summary\n"
    << "smolvlm_time_to_first_token_seconds_sum " << ttft_sum_ << "\n"
    << "smolvlm_time_to_first_token_seconds_count " << ttft_count_ << "\n"
    << "# HELP smolvlm_decode_tokens_per_second Decoded tokens over decode time, all requests so far.\n"
    << "# TYPE smolvlm_decode_tokens_per_second gauge\n"
    << "smolvlm_decode_tokens_per_second " << (decode_seconds_ > 0 ? decode_tokens_ / decode_seconds_ : 0.0) << "\n"
    << "# HELP smolvlm_queue_depth Requests waiting for a slot.\n# TYPE smolvlm_queue_depth gauge\n"
    << "smolvlm_queue_depth " << s.queued << "\n"
    << "# HELP smolvlm_slots_busy Slots generating.\n# TYPE smolvlm_slots_busy gauge\n"
    << "smolvlm_slots_busy " << s.busy << "\n"
    << "# HELP smolvlm_generations_cancelled_total Generations stopped early: client gone, time limit or shutdown.\n"
    << "# TYPE smolvlm_generations_cancelled_total counter\n"
    << "smolvlm_generations_cancelled_total " << s.cancelled << "\n"
    << "# HELP smolvlm_slots Slots in all.\n# TYPE smolvlm_slots gauge\n"
    << "smolvlm_slots " << s.slots << "\n";
  return o.str();
}

}  // namespace smolvlm::server
