// A decode step (one row, or a batched step's rows) on a pool of several threads runs as one pool
// call whose threads split every product, RoPE and attention (LlamaModel::decode_team); on one thread
// it runs op by op. Every thread count gives the bits of one thread, on models with grouped-query attention,
// HunYuan's per-head query/key norms, tied and untied heads, including counts that leave a thread
// without heads or rows of a step.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/model_test_util.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace smolvlm {
namespace {

// The logits of 5 decode steps of one session, then of 2 batched steps of three sessions.
std::vector<float> decode_steps(const Model& model, int threads) {
  ThreadPool pool(threads);
  Session s(model, pool, 32);
  s.prefill(std::vector<int64_t>{1, 5, 9});
  std::vector<float> steps;
  for (int64_t token : {7, 11, 13, 2, 4}) {
    const std::span<const float> logits = s.decode(token);
    steps.insert(steps.end(), logits.begin(), logits.end());
  }
  Session a(model, pool, 32), b(model, pool, 32), c(model, pool, 32);
  a.prefill(std::vector<int64_t>{3, 4});
  b.prefill(std::vector<int64_t>{6, 8, 10, 12});
  c.prefill(std::vector<int64_t>{2});
  Session* all[] = {&a, &b, &c};
  for (const int64_t first : {12, 20}) {
    const int64_t tokens[] = {first, first + 1, first + 2};
    decode_batch(all, tokens);
    for (const Session* x : all) steps.insert(steps.end(), x->logits().begin(), x->logits().end());
  }
  return steps;
}

TEST(TeamStep, EveryThreadCountGivesTheBitsOfOneThread) {
  for (const char* name : {"llama-tiny", "hunyuan-tiny-a", "hunyuan-tiny-b", "smolvlm-tiny-tied"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(test::model_dir(name));
    const std::vector<float> one = decode_steps(*model, 1);
    ASSERT_FALSE(one.empty());
    for (int threads : {2, 3, 4, 7}) {
      const std::vector<float> other = decode_steps(*model, threads);
      ASSERT_EQ(other.size(), one.size());
      EXPECT_EQ(0, std::memcmp(other.data(), one.data(), one.size() * sizeof(float))) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace smolvlm
