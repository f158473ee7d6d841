#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "kernels/ops.h"

namespace smolvlm {

void SamplingOptions::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature))
    throw bad_input("sampling temperature must be >= 0, got " + std::to_string(temperature));
  if (top_k < 0) throw bad_input("top_k must be >= 0, got " + std::to_string(top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) throw bad_input("top_p must be in (0, 1], got " + std::to_string(top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f)) throw bad_input("min_p must be in [0, 1], got " + std::to_string(min_p));
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    throw bad_input("repetition_penalty must be > 0, got " + std::to_string(repetition_penalty));
}

Sampler::Sampler(const SamplingOptions& options) : opt_(options), rng_(options.seed) { opt_.validate(); }

int64_t Sampler::next(std::span<const float> logits, std::span<const int64_t> history) {
  const int64_t V = static_cast<int64_t>(logits.size());
  scores_.assign(logits.begin(), logits.end());
  if (opt_.repetition_penalty != 1.0f) {
    // HF RepetitionPenaltyLogitsProcessor: each distinct earlier token once; shrink toward "less likely".
    for (int64_t id : history) {
      if (id < 0 || id >= V) continue;
      const float s = logits[id];
      scores_[id] = s < 0 ? s * opt_.repetition_penalty : s / opt_.repetition_penalty;
    }
  }
  if (opt_.greedy()) return argmax(scores_.data(), V);

  for (float& s : scores_) s /= opt_.temperature;
  // Candidates sorted by score, descending (ties by id, for determinism).
  order_.resize(static_cast<size_t>(V));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) { return scores_[a] > scores_[b]; });
  int64_t keep = V;
  if (opt_.top_k > 0 && opt_.top_k < keep) {
    // HF keeps every token scoring at least the k-th score.
    const float kth = scores_[order_[opt_.top_k - 1]];
    keep = opt_.top_k;
    while (keep < V && scores_[order_[keep]] >= kth) ++keep;
  }
  auto softmax_of_kept = [&] {
    probs_.resize(static_cast<size_t>(keep));
    for (int64_t i = 0; i < keep; ++i) probs_[i] = scores_[order_[i]];
    softmax(probs_.data(), keep);
  };
  if (opt_.top_p < 1.0f) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    softmax_of_kept();
    double cumulative = 0.0;
    int64_t n = 0;
    while (n < keep) {
      cumulative += probs_[n++];
      if (cumulative >= opt_.top_p) break;
    }
    keep = std::max<int64_t>(n, 1);
  }
  if (opt_.min_p > 0.0f) {
    softmax_of_kept();
    const float threshold = opt_.min_p * probs_[0];
    int64_t n = 1;
    while (n < keep && probs_[n] >= threshold) ++n;
    keep = n;
  }
  softmax_of_kept();
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double cumulative = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += probs_[i];
    if (u < cumulative) return order_[i];
  }
  return order_[keep - 1];
}

}  // namespace smolvlm
