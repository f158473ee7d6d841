// Quantized models exact to themselves, over every model golden: for each scheme (q8, q4, lut4; the
// vision tower and connector quantized too, so the GEMM's dequantizing packing runs), the quantized
// model's prefill and step logits are within 1e-4 of the same model with its weights dequantized to
// fp32 run on the scalar reference path, the greedy ids identical, on every kernel path; bitwise
// identical for 1 and 2 threads. Accuracy against the unquantized model (top-1 agreement, mean KL of
// the next-token distributions) is printed, not asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

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

INSTANTIATE_TEST_SUITE_P(Goldens, QuantGolden,
                         ::testing::Combine(::testing::Values("q8", "q4", "lut4"),
                                            ::testing::ValuesIn(test::golden_cases())),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace smolvlm
