// Quantized models exact to themselves, over every model golden: for each scheme (q8, q4, lut4; the
// vision tower and connector quantized too, so the GEMM's dequantizing packing runs), the quantized
// model's prefill and step logits are within 1e-4 of the same model with its weights dequantized to
// fp32 run on the scalar reference path, the greedy ids identical, on every kernel path; bitwise
// identical for 1 and 2 threads. Accuracy against the unquantized model (top-1 agreement, mean KL of
// the next-token distributions) is printed, not asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "golden_run.h"
#include "golden_util.h"
#include "io/io_test_util.h"
#include "kernels/cpu.h"
#include "model/quantize.h"

namespace smolvlm {
namespace {

using test::CaseRun;
using test::Golden;

constexpr float kSelfTolerance = 1e-4f;

struct QuantizedPair {
  std::unique_ptr<Model> quantized, dequantized;
};

// The quantized and dequantized copies of a golden's model, made once per (model, scheme).
const QuantizedPair& models_for(const Golden& g, const std::string& scheme) {
  static test::ScratchDir scratch("quant_goldens");
  static std::map<std::string, QuantizedPair> cache;
  const std::string key = g.model_dir().filename().string() + "-" + scheme;
  QuantizedPair& p = cache[key];
  if (!p.quantized) {
    QuantizeOptions o;
    o.scheme = scheme;
    const auto config = nlohmann::json::parse(read_file(g.model_dir() / "config.json"));
    if (config.contains("vision_config")) o.keep = {{"model.vision_model.*", scheme}, {"model.connector.*", scheme}};
    o.threads = 2;
    quantize_checkpoint(g.model_dir(), scratch.path() / key, o);
    QuantizeOptions f32;
    f32.scheme = "f32";
    quantize_checkpoint(scratch.path() / key, scratch.path() / (key + "-f32"), f32);
    p.quantized = Model::load(scratch.path() / key);
    p.dequantized = Model::load(scratch.path() / (key + "-f32"));
  }
  return p;
}

const Model& original_for(const Golden& g) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[g.model_dir().string()];
  if (!m) m = Model::load(g.model_dir());
  return *m;
}

class QuantGolden : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(QuantGolden, ExactToItsDequantizedSelfOnEveryPath) {
  const auto& [scheme, name] = GetParam();
  const Golden g = test::load_golden(name);
  const QuantizedPair& m = models_for(g, scheme);
  CaseRun ref;
  {
    const ScopedKernelPath scalar(KernelPath::Scalar);
    ref = test::run_golden(*m.dequantized, g, 1);
  }
  const std::vector<float> want = test::all_logits(ref);
  float worst = 0;
  for (KernelPath path : supported_kernel_paths()) {
    const ScopedKernelPath scope(path);
    SCOPED_TRACE(kernel_path_name(path));
    const CaseRun two = test::run_golden(*m.quantized, g, 2);
    const std::vector<float> got = test::all_logits(two);
    ASSERT_EQ(got.size(), want.size());
    const float err = test::max_abs_diff(got.data(), want.data(), int64_t(got.size()));
    worst = std::max(worst, err);
    EXPECT_LE(err, kSelfTolerance);
    EXPECT_EQ(two.generation.ids, ref.generation.ids);
    if (g.has_images()) {
      EXPECT_LE(test::max_abs_diff(two.images.image_hidden_states.data(), ref.images.image_hidden_states.data(),
                                   int64_t(ref.images.image_hidden_states.size())),
                kSelfTolerance);
    }
    if (path == best_kernel_path()) {
      const CaseRun one = test::run_golden(*m.quantized, g, 1);
      EXPECT_EQ(test::all_logits(one), got) << "1 and 2 threads differ";
      EXPECT_EQ(one.generation.ids, two.generation.ids);
    }
  }
  // Accuracy against the unquantized model, on the quantized model's own greedy path: measured only.
  const CaseRun base = test::run_golden(original_for(g), g, 2);
  const int64_t V = original_for(g).text().vocab();
  const size_t rows = std::min(test::all_logits(base).size(), want.size()) / size_t(V);
  std::vector<float> a = test::all_logits(base), b = want;
  a.resize(rows * V), b.resize(rows * V);
  double kl = 0, top1 = 0;
  test::agreement(a, b, V, &kl, &top1);
  std::printf("[quant] %-5s %-24s self %.2e  vs base: top1 %.3f  KL %.3e  ids %s\n", scheme.c_str(), name.c_str(), worst,
              top1, kl, base.generation.ids == ref.generation.ids ? "same" : "differ");
}

// The integer decode products on the quantized goldens (kernels/gemv_int8.h: q8 and lut4 everywhere,
// q4 on the models whose hidden and intermediate sizes are multiples of 64). Each golden runs row by row:
// its prompt fed one position at a time, then its greedy steps, so every product of the text model
// streams (the decode path) and the fast pool's only change is the integer products; images are
// encoded exact. Against the same rows on the exact pool, over the rows both runs share (the prompt's
// last, then each step while their ids agree): every logit within kIntegerRelativeBound of the
// largest logit magnitude, and where every top-2 margin of the exact run exceeds twice that bound no
// argmax can move, so the greedy ids must be identical. The cases with smaller margins are named,
// measured and counted. 1 and 2 threads give the same bits.
// Measured (avx512, Zen 5): the error is 0.45-12% of the largest logit (worst: q8 on the tied model's
// raw unicode case), far above the trained model's (README: KL 1.1e-5): x's rounding compounds through
// the layers of random weights. No golden's margins exceed twice the bound, so none is held to its
// ids; 38 of 60 keep them (README). On the avx2 path of the same machine 37 (the same worst error: the
// integer products give the same bits, the exact run and the fp32 parts of the fast one differ by path).
// LUT4 also rounds its tables to 6-bit codes (up to half of each table's range over 63): 5.4-28.2% of
// the largest logit measured on the avx2 path of a Zen 3 (2.4-15.7% there when the tables were rounded
// to int8), bounded by kLut4RelativeBound.
constexpr float kIntegerRelativeBound = 0.15f, kLut4RelativeBound = 0.4f;

struct FastTotals {
  int cases = 0, same_ids = 0, held = 0;
  double worst = 0;
  ~FastTotals() {
    if (cases == 0) return;
    std::printf("[quant int8] %d goldens: greedy ids unchanged %d/%d, worst logit error %.3e of the largest logit; "
                "%d cases held to the ids by their margins\n",
                cases, same_ids, cases, worst, held);
  }
};
FastTotals g_fast_totals;  // printed at exit

// The path the integer products run on here: avx512 where the CPU has avx512_bf16 and avx512_vnni,
// else avx2 or neon (the same bits: Int8Gemv.*), so a CPU without AVX-512 runs the test too.
std::optional<KernelPath> integer_path() {
  if (precision_supported(KernelPath::Avx512, Precision::Fast) && cpu_features().avx512vnni) return KernelPath::Avx512;
  for (KernelPath p : {KernelPath::Avx2, KernelPath::Neon})
    if (precision_supported(p, Precision::Fast)) return p;
  return std::nullopt;
}

class QuantGoldenInt8 : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    if (!integer_path()) GTEST_SKIP() << "this CPU has no kernel path with integer decode products";
  }
};

// The smallest top-1 minus top-2 logit of the first `rows` rows of [rows, V] logits.
float smallest_margin(const std::vector<float>& logits, int64_t V, size_t rows) {
  float smallest = INFINITY;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * size_t(V);
    float first = -INFINITY, second = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      if (row[v] > first) {
        second = first;
        first = row[v];
      } else if (row[v] > second) {
        second = row[v];
      }
    }
    smallest = std::min(smallest, first - second);
  }
  return smallest;
}

TEST_P(QuantGoldenInt8, GreedyIdsKeptWhereTheMarginsExceedTheErrorBound) {
  const auto& [scheme, name] = GetParam();
  const Golden g = test::load_golden(name);
  const Model& model = *models_for(g, scheme).quantized;
  const KernelPath path = *integer_path();
  ThreadPool exact_pool(2, path), fast_pool(2, path, Precision::Fast), fast_one(1, path, Precision::Fast);
  const test::GoldenFeed feed{/*row_by_row=*/true, /*vision_pool=*/&exact_pool};
  const CaseRun exact = test::run_golden(model, g, exact_pool, feed);
  const CaseRun fast = test::run_golden(model, g, fast_pool, feed);
  EXPECT_EQ(test::all_logits(test::run_golden(model, g, fast_one, feed)), test::all_logits(fast))
      << "1 and 2 threads differ";
  const std::vector<int64_t>& a = exact.generation.ids;
  const std::vector<int64_t>& b = fast.generation.ids;
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  const int64_t V = model.text().vocab();
  const size_t rows = std::min(common + 1, a.size());  // row i predicts token i
  const std::vector<float> want = test::all_logits(exact), got = test::all_logits(fast);
  ASSERT_GE(want.size(), a.size() * size_t(V));
  ASSERT_GE(got.size(), rows * size_t(V));
  EXPECT_NE(got, want) << "the integer products did not run";
  const float err = test::max_abs_diff(got.data(), want.data(), int64_t(rows * size_t(V)));
  float scale = 0;
  for (size_t i = 0; i < rows * size_t(V); ++i) scale = std::max(scale, std::fabs(want[i]));
  const float bound = (scheme == "lut4" ? kLut4RelativeBound : kIntegerRelativeBound) * scale;
  EXPECT_LE(err, bound);
  const float margin = smallest_margin(want, V, a.size());
  const bool held = margin > 2 * bound;
  if (held) {
    EXPECT_EQ(b, a) << "every margin exceeds twice the bound, yet an id moved";
  }
  ++g_fast_totals.cases;
  g_fast_totals.same_ids += a == b;
  g_fast_totals.held += held;
  g_fast_totals.worst = std::max<double>(g_fast_totals.worst, err / scale);
  std::printf("[quant int8] %-4s %-24s logit error %.3e of %.1f (%.2e)  smallest margin %.3e (%s)  ids %s\n",
              scheme.c_str(), name.c_str(), err, scale, err / scale, margin, held ? "held to the ids" : "measured only",
              a == b ? "same" : "differ");
}

INSTANTIATE_TEST_SUITE_P(Goldens, QuantGoldenInt8,
                         ::testing::Combine(::testing::Values("q8", "q4", "lut4"), ::testing::ValuesIn(test::golden_cases())),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

INSTANTIATE_TEST_SUITE_P(Goldens, QuantGolden,
                         ::testing::Combine(::testing::Values("q8", "q4", "lut4"),
                                            ::testing::ValuesIn(test::golden_cases())),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace smolvlm
