// SwiGLU's silu(gate) * up runs on the gate/up product's threads where each thread's share of the
// columns is long (LlamaModel::mlp_block), after the product otherwise. A synth Llama with a wide MLP
// takes each way by thread count: 1 thread (the whole range at once), 2 (split, 2048 columns each),
// 3 (1365 each: after the product). Decode and a batched step give the same bits every way.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/model_test_util.h"
#include "model/synth.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace smolvlm {
namespace {

struct WideMlpRun {
  std::vector<float> steps;    // logits of each decode step, one after the other
  std::vector<float> batched;  // the logits of two sessions stepped together
};

WideMlpRun run_wide_mlp(const Model& model, int threads) {
  ThreadPool pool(threads);
  WideMlpRun r;
  Session s(model, pool, 32);
  s.prefill(std::vector<int64_t>{1, 5, 9});
  for (int64_t token : {7, 11, 13, 2}) {
    const std::span<const float> logits = s.decode(token);
    r.steps.insert(r.steps.end(), logits.begin(), logits.end());
  }
  Session a(model, pool, 32), b(model, pool, 32);
  a.prefill(std::vector<int64_t>{3, 4});
  b.prefill(std::vector<int64_t>{6, 8, 10});
  Session* both[] = {&a, &b};
  const int64_t tokens[] = {12, 14};
  decode_batch(both, tokens);
  for (const Session* x : both) r.batched.insert(r.batched.end(), x->logits().begin(), x->logits().end());
  return r;
}

TEST(MlpSplit, SwiGluOnTheProductsThreadsGivesTheBitsOfOneThread) {
  test::ScratchDir scratch("wide_mlp");
  std::filesystem::copy(test::model_dir("llama-tiny"), scratch / "src");
  test::write_text_file(scratch / "src" / "config.json", test::edited_config("llama-tiny", [](nlohmann::json& c) {
                          c["intermediate_size"] = 4096;
                        }));
  synth_checkpoint(scratch / "src", scratch / "out", {});
  const auto model = Model::load(scratch / "out");
  const WideMlpRun one = run_wide_mlp(*model, 1);
  ASSERT_FALSE(one.steps.empty());
  for (int threads : {2, 3}) {
    const WideMlpRun other = run_wide_mlp(*model, threads);
    ASSERT_EQ(other.steps.size(), one.steps.size());
    EXPECT_EQ(0, std::memcmp(other.steps.data(), one.steps.data(), one.steps.size() * sizeof(float)))
        << threads << " threads, decode";
    ASSERT_EQ(other.batched.size(), one.batched.size());
    EXPECT_EQ(0, std::memcmp(other.batched.data(), one.batched.data(), one.batched.size() * sizeof(float)))
        << threads << " threads, batched step";
  }
}

}  // namespace
}  // namespace smolvlm
