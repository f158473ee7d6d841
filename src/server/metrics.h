// Counters for GET /metrics, in Prometheus' text format.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "server/scheduler.h"

namespace smolvlm::server {

class Metrics {
 public:
  void count_response(const std::string& path, int status);
  // A generation that finished: tokens (the prompt's, those of them kept from the slot's KV), time
  // to first token, decode time.
  void count_generation(int64_t prompt_tokens, int64_t reused_tokens, int64_t completion_tokens, double ttft_s,
                        double decode_s);
  std::string render(const SchedulerStats& s) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> responses_;
  uint64_t generations_ = 0, prompt_tokens_ = 0, reused_tokens_ = 0, completion_tokens_ = 0, ttft_count_ = 0, decode_tokens_ = 0;
  double ttft_sum_ = 0, decode_seconds_ = 0;
};

}  // namespace smolvlm::server
