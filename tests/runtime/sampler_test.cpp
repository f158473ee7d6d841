#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/error.h"
#include "runtime/sampler.h"

namespace smolvlm {
namespace {

std::vector<float> logits() { return {0.1f, 2.0f, -1.0f, 1.5f, 1.9f, -3.0f, 0.0f, 1.0f}; }

TEST(Sampler, GreedyIsArgmaxAndRepetitionPenaltyFollowsHF) {
  Sampler greedy(SamplingOptions{});
  EXPECT_EQ(greedy.next(logits(), {}), 1);
  SamplingOptions o;
  o.repetition_penalty = 1.2f;
  Sampler penalized(o);
  // 2.0 / 1.2 = 1.667 < 1.9: token 4 wins once token 1 was seen.
  EXPECT_EQ(penalized.next(logits(), std::vector<int64_t>{1}), 4);
  // Negative scores are multiplied: token 2 (-1.0) gets further away, nothing changes at the top.
  EXPECT_EQ(penalized.next(logits(), std::vector<int64_t>{2}), 1);
}

TEST(Sampler, DeterministicForASeedAndRestrictedByTopK) {
  SamplingOptions o;
  o.temperature = 1.5f;
  o.seed = 7;
  Sampler a(o), b(o);
  std::vector<int64_t> sa, sb;
  for (int i = 0; i < 50; ++i) {
    sa.push_back(a.next(logits(), {}));
    sb.push_back(b.next(logits(), {}));
  }
  EXPECT_EQ(sa, sb);
  o.top_k = 2;
  Sampler k2(o);
  for (int i = 0; i < 50; ++i) {
    const int64_t id = k2.next(logits(), {});
    EXPECT_TRUE(id == 1 || id == 4) << id;
  }
  o.top_k = 0;
  o.top_p = 0.01f;  // only the most likely token reaches the mass
  Sampler p(o);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(p.next(logits(), {}), 1);
  o.top_p = 1.0f;
  // min-p (HF MinPLogitsWarper) keeps the tokens whose probability is >= min_p times the top one's.
  // At temperature 1.5, token 4 (logit 1.9) has exp(-0.1/1.5) = 0.9355 of token 1's (2.0) probability
  // and token 3 (1.5) exp(-0.5/1.5) = 0.7165 of it.
  o.min_p = 0.95f;  // 0.9355 < 0.95: only token 1 is kept
  Sampler only_top(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(only_top.next(logits(), {}), 1);
  o.min_p = 0.93f;  // 0.7165 < 0.93 <= 0.9355: tokens 1 and 4 are kept, both about equally likely
  Sampler top_two(o);
  std::set<int64_t> drawn;
  for (int i = 0; i < 50; ++i) drawn.insert(top_two.next(logits(), {}));
  EXPECT_EQ(drawn, (std::set<int64_t>{1, 4}));
}

TEST(Sampler, OutOfRangeOptionsAreBadInput) {
  SamplingOptions o;
  o.temperature = -1.f;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.top_p = 0.f;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.top_k = -2;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.repetition_penalty = 0.f;
  EXPECT_THROW(Sampler{o}, Error);
}

}  // namespace
}  // namespace smolvlm
