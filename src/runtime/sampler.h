// Choosing the next token from logits, with HF's logits processors in HF's order: repetition
// penalty, then (when sampling) temperature, top-k, top-p, min-p. Greedy (argmax) unless a temperature
// > 0 is given. Sampling is deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace smolvlm {

struct SamplingOptions {
  float temperature = 0.0f;         // 0: greedy
  int64_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off; applies to every token already in the sequence
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0.0f; }
  // Error(BadInput) naming the option when a value is out of range.
  void validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // `history`: every token of the sequence so far (prompt + generated), for the repetition penalty.
  int64_t next(std::span<const float> logits, std::span<const int64_t> history);

 private:
  SamplingOptions opt_;
  std::mt19937_64 rng_;
  std::vector<float> scores_;
  std::vector<int64_t> order_;
  std::vector<float> probs_;
};

}  // namespace smolvlm
