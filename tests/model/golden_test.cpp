// Every model golden (13 image cases, 10 text cases, 7 HunYuan dense cases `hy_*`) from its own inputs: the vision tower, the
// connector, the prefill logits and every greedy step must be within 1e-4 of HF, the generated ids
// identical; results bitwise identical for 1 and 2 threads, and within 1e-4 on every kernel path.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>

#include "golden_run.h"
#include "golden_util.h"
#include "kernels/cpu.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"

namespace smolvlm {
namespace {

using test::Golden;

constexpr float kTolerance = 1e-4f;

const Model& model_for(const Golden& g) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[g.model_dir().string()];
  if (!m) m = Model::load(g.model_dir());
  return *m;
}

using test::CaseRun;

CaseRun run_case(const Golden& g, int threads) { return test::run_golden(model_for(g), g, threads); }

class GoldenCase : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCase, MatchesReference) {
  const Golden g = test::load_golden(GetParam());
  const Model& model = model_for(g);
  EXPECT_EQ(model.config().generation.eos_token_ids, g.ids("eos_token_ids")) << "generation_config eos ids";
  const CaseRun r = run_case(g, 2);
  float vision_err = 0, connector_err = 0;
  if (g.has_images()) {
    NpyArray vis = g.npy("vision_last_hidden.npy"), img = g.npy("image_hidden_states.npy");
    ASSERT_EQ(static_cast<int64_t>(r.images.vision_last_hidden.size()), vis.numel());
    ASSERT_EQ(static_cast<int64_t>(r.images.image_hidden_states.size()), img.numel());
    vision_err = test::max_abs_diff(r.images.vision_last_hidden.data(), vis.data<float>(), vis.numel());
    connector_err = test::max_abs_diff(r.images.image_hidden_states.data(), img.data<float>(), img.numel());
    EXPECT_LE(vision_err, kTolerance) << "vision_last_hidden";
    EXPECT_LE(connector_err, kTolerance) << "image_hidden_states";
  }
  const int64_t V = model.text().vocab();
  float prefill_err = 0;
  if (g.has("prefill_topk_ids.npy")) {
    NpyArray ti = g.npy("prefill_topk_ids.npy"), tv = g.npy("prefill_topk_values.npy"), pr = g.npy("prefill_probe.npy");
    prefill_err = test::compact_logits_error(r.prefill_logits.data(), ti.data<int64_t>(), tv.data<float>(),
                                             pr.data<float>(), pr.numel());
  }
  if (g.has("prefill_logits_last.npy")) {  // stored in full (small vocabularies)
    NpyArray ref = g.npy("prefill_logits_last.npy");
    ASSERT_EQ(ref.numel(), V);
    prefill_err = test::max_abs_diff(r.prefill_logits.data(), ref.data<float>(), V);
  } else if (auto full = g.shared_file("prefill_logits_last.npy"); !full.empty()) {
    NpyArray ref = read_npy(full);
    ASSERT_EQ(ref.numel(), V);
    prefill_err = std::max(prefill_err, test::max_abs_diff(r.prefill_logits.data(), ref.data<float>(), V));
  }
  EXPECT_LE(prefill_err, kTolerance) << "prefill_logits_last";

  const std::vector<int64_t> expected_ids = g.npy("generated_ids.npy").to_vector<int64_t>();
  EXPECT_EQ(r.generation.ids, expected_ids);
  EXPECT_EQ(r.generation.stopped_on_eos, g.spec["stopped_on_eos"].get<bool>());
  int64_t steps = 0;
  float step_err = 0;
  bool full_steps = false;
  if (g.has("step_logits.npy")) {  // stored in full (small vocabularies)
    NpyArray ref = g.npy("step_logits.npy");
    steps = ref.shape.at(0);
    ASSERT_EQ(static_cast<int64_t>(r.generation.step_logits.size()), ref.numel());
    step_err = test::max_abs_diff(r.generation.step_logits.data(), ref.data<float>(), ref.numel());
    full_steps = true;
  } else {
    NpyArray ti = g.npy("step_logits_topk_ids.npy"), tv = g.npy("step_logits_topk_values.npy"),
             pr = g.npy("step_logits_probe.npy");
    steps = ti.shape.at(0);
    const int64_t probe_len = pr.shape.at(1);
    ASSERT_EQ(static_cast<int64_t>(r.generation.step_logits.size()), steps * V);
    for (int64_t s = 0; s < steps; ++s)
      step_err = std::max(step_err, test::compact_logits_error(r.generation.step_logits.data() + s * V,
                                                               ti.data<int64_t>() + s * 32, tv.data<float>() + s * 32,
                                                               pr.data<float>() + s * probe_len, probe_len));
  }
  if (auto full = g.shared_file("step_logits.npy"); !full_steps && !full.empty()) {
    NpyArray ref = read_npy(full);
    ASSERT_EQ(ref.numel(), steps * V);
    step_err = std::max(step_err, test::max_abs_diff(r.generation.step_logits.data(), ref.data<float>(), steps * V));
    full_steps = true;
  }
  EXPECT_LE(step_err, kTolerance) << "step_logits";
  std::printf("[golden] %-24s vision %.2e  connector %.2e  prefill %.2e  steps(%lld%s) %.2e  ids %s\n",
              g.name.c_str(), vision_err, connector_err, prefill_err, static_cast<long long>(steps),
              full_steps ? ", full" : ", top32+probe", step_err,
              r.generation.ids == expected_ids ? "identical" : "DIFFERENT");
}

TEST_P(GoldenCase, BitwiseAcrossThreadCountsAndCloseAcrossKernelPaths) {
  const Golden g = test::load_golden(GetParam());
  const CaseRun two = run_case(g, 2);
  const CaseRun one = run_case(g, 1);
  EXPECT_EQ(one.images.vision_last_hidden, two.images.vision_last_hidden);
  EXPECT_EQ(one.images.image_hidden_states, two.images.image_hidden_states);
  EXPECT_EQ(one.prefill_logits, two.prefill_logits);
  EXPECT_EQ(one.generation.step_logits, two.generation.step_logits);
  EXPECT_EQ(one.generation.ids, two.generation.ids);
  const CaseRun again = run_case(g, 2);
  EXPECT_EQ(again.generation.step_logits, two.generation.step_logits) << "repeated run";

  for (KernelPath path : supported_kernel_paths()) {
    const ScopedKernelPath scope(path);  // ends with the iteration, also when an assertion returns early
    const CaseRun p = run_case(g, 2);
    const auto n = static_cast<int64_t>(two.generation.step_logits.size());
    ASSERT_EQ(static_cast<int64_t>(p.generation.step_logits.size()), n) << kernel_path_name(path);
    EXPECT_EQ(p.generation.ids, two.generation.ids) << kernel_path_name(path);
    const float err = test::max_abs_diff(p.generation.step_logits.data(), two.generation.step_logits.data(), n);
    EXPECT_LE(err, kTolerance) << kernel_path_name(path);
    if (g.has("step_logits.npy")) {  // full reference logits: this path against HF itself
      const NpyArray ref = g.npy("step_logits.npy");
      ASSERT_EQ(ref.numel(), n);
      const float ref_err = test::max_abs_diff(p.generation.step_logits.data(), ref.data<float>(), n);
      EXPECT_LE(ref_err, kTolerance) << kernel_path_name(path) << " against the reference";
      std::printf("[golden] %-24s path %-7s step logits vs the default path %.2e, vs the reference %.2e\n",
                  g.name.c_str(), kernel_path_name(path), err, ref_err);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenCase, ::testing::ValuesIn(test::golden_cases()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace smolvlm
