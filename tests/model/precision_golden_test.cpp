// What Precision::Fast costs, over every model golden: the same model run with the exact and the
// fast avx512 pool. Per case it prints the vision output's max error against exact fp32 (image
// cases), whether the greedy ids stay HF's, and the mean KL of the next-token distributions against
// exact fp32 (the prefill's and each step's while the two runs have generated the same tokens).
// Asserted: the fast products ran (the vision output moved), each case's KL stays under a regression
// bound set well above what was measured, and fast is bitwise identical for 1 and 2 threads. The
// summary line is the README's accuracy table.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>

#include "golden_run.h"
#include "golden_util.h"
#include "kernels/cpu.h"

namespace smolvlm {
namespace {

using test::CaseRun;
using test::Golden;

// Regression bound on one case's mean KL (nats); the measured values are in the README.
constexpr double kMaxMeanKl = 1e-2;

struct Totals {
  int cases = 0, same_ids = 0, image_cases = 0;
  double kl_sum = 0, kl_max = 0, vision_max = 0;
  ~Totals() {
    if (cases == 0) return;
    std::printf("[precision fast] %d goldens: greedy ids as HF %d/%d, mean KL %.3e (max %.3e), vision max error %.3e "
                "over %d image cases\n",
                cases, same_ids, cases, kl_sum / cases, kl_max, vision_max, image_cases);
  }
};
Totals g_totals;  // printed at exit

const Model& precision_model_for(const Golden& g) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[g.model_dir().string()];
  if (!m) m = Model::load(g.model_dir());
  return *m;
}

class PrecisionGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!precision_supported(KernelPath::Avx512, Precision::Fast))
      GTEST_SKIP() << "this CPU has no avx512 path with avx512_bf16";
  }
};

TEST_P(PrecisionGolden, CostAgainstExactFp32) {
  const Golden g = test::load_golden(GetParam());
  const Model& model = precision_model_for(g);
  ThreadPool exact_pool(2, KernelPath::Avx512), fast_pool(2, KernelPath::Avx512, Precision::Fast);
  ThreadPool fast_one(1, KernelPath::Avx512, Precision::Fast);
  const CaseRun exact = test::run_golden(model, g, exact_pool);
  const CaseRun fast = test::run_golden(model, g, fast_pool);
  const CaseRun fast1 = test::run_golden(model, g, fast_one);
  EXPECT_EQ(test::all_logits(fast1), test::all_logits(fast)) << "1 and 2 threads differ";

  const std::vector<int64_t>& ids_exact = exact.generation.ids;
  const std::vector<int64_t>& ids_fast = fast.generation.ids;
  const bool same_as_hf = ids_fast == g.ids("generated_ids");
  EXPECT_EQ(ids_exact, g.ids("generated_ids")) << "the exact run is the fp32 baseline";
  // Rows compared: the prefill, then each step while both runs have produced the same tokens (a
  // step's distribution is the next token's given the same prefix).
  size_t common = 0;
  while (common < ids_exact.size() && common < ids_fast.size() && ids_exact[common] == ids_fast[common]) ++common;
  const int64_t V = model.text().vocab();
  const size_t rows = std::min(common + 1, ids_exact.size());  // row i predicts token i
  std::vector<float> a = test::all_logits(exact), b = test::all_logits(fast);
  a.resize(std::min(a.size(), rows * size_t(V))), b.resize(a.size());
  double kl = 0, top1 = 0;
  test::agreement(a, b, V, &kl, &top1);
  EXPECT_LE(kl, kMaxMeanKl);

  double vision = 0;
  if (g.has_images()) {
    const auto& ve = exact.images.vision_last_hidden;
    ASSERT_EQ(ve.size(), fast.images.vision_last_hidden.size());
    vision = test::max_abs_diff(fast.images.vision_last_hidden.data(), ve.data(), int64_t(ve.size()));
    EXPECT_GT(vision, 0.0) << "the fast products did not run on the vision tower";
    ++g_totals.image_cases;
    g_totals.vision_max = std::max(g_totals.vision_max, vision);
  }
  ++g_totals.cases;
  g_totals.same_ids += same_as_hf;
  g_totals.kl_sum += kl;
  g_totals.kl_max = std::max(g_totals.kl_max, kl);
  std::printf("[precision fast] %-24s vision max err %.3e  KL %.3e over %zu rows  ids %s\n", GetParam().c_str(), vision,
              kl, a.size() / size_t(V), same_as_hf ? "same as HF" : "differ");
}

INSTANTIATE_TEST_SUITE_P(Goldens, PrecisionGolden, ::testing::ValuesIn(test::golden_cases()));

}  // namespace
}  // namespace smolvlm
