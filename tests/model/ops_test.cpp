// The model kernels against plain double-precision formulas, on every kernel path the CPU runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "model/connector.h"

namespace smolvlm {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class OpsOnPath : public ::testing::TestWithParam<KernelPath> {
 protected:
  void SetUp() override {
    saved_ = active_kernel_path();
    set_kernel_path(GetParam());
  }
  void TearDown() override { set_kernel_path(saved_); }
  KernelPath saved_ = KernelPath::Scalar;
};

void check_attention(int64_t q_rows, int64_t q_pos0, bool causal, float scale = 0.3f, double tolerance = 1e-5) {
  const int64_t qh = 4, kvh = 2, D = 12, kv_rows = q_rows + q_pos0;
  const auto q = random_vector(q_rows * qh * D, 1), k = random_vector(kv_rows * kvh * D, 2),
             v = random_vector(kv_rows * kvh * D, 3);
  std::vector<float> out(q_rows * qh * D);
  AttentionArgs a{q.data(), q_rows, qh * D, k.data(), v.data(), kv_rows, kvh * D, scale, causal, q_pos0, out.data(), qh * D};
  ThreadPool pool(2);
  attention(a, AttentionShape{qh, kvh, D}, pool);
  double max_err = 0;
  for (int64_t i = 0; i < q_rows; ++i)
    for (int64_t h = 0; h < qh; ++h) {
      const int64_t g = h / (qh / kvh), n = causal ? q_pos0 + i + 1 : kv_rows;
      std::vector<double> p(n);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(q[(i * qh + h) * D + d]) * k[(j * kvh + g) * D + d];
        p[j] = s * double(scale);
        mx = std::max(mx, p[j]);
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < D; ++d) {
        double o = 0;
        for (int64_t j = 0; j < n; ++j) o += p[j] / sum * v[(j * kvh + g) * D + d];
        max_err = std::max(max_err, std::fabs(o - out[(i * qh + h) * D + d]));
      }
    }
  EXPECT_LT(max_err, tolerance) << q_rows << " query rows at " << q_pos0 << (causal ? ", causal" : "") << ", scale "
                           << scale;
}

TEST_P(OpsOnPath, AttentionMatchesTheFormula) {
  check_attention(3, 6, true);    // row by row (decode, short prompts)
  check_attention(1, 0, true);
  check_attention(45, 7, true);   // packed blocks of rows
  check_attention(40, 0, false);  // vision: every query sees every key
  check_attention(300, 5, true);  // several 48-row blocks, the last one partial
  check_attention(260, 0, false);
  // Scores spread over hundreds: the softmax exponentials reach their underflow to 0. The fp32 scores
  // themselves carry ~1e-7 relative error, which a scale of 40 turns into ~2e-5 on the outputs.
  check_attention(60, 0, false, 40.f, 1e-4);
  check_attention(50, 3, true, 40.f, 1e-4);
}

TEST_P(OpsOnPath, AttentionDoesNotDependOnTheThreadCount) {
  for (bool causal : {false, true}) {
    const int64_t qh = 6, kvh = 2, D = 16, q_rows = 150, q_pos0 = causal ? 9 : 0, kv_rows = q_rows + q_pos0;
    const auto q = random_vector(q_rows * qh * D, 14), k = random_vector(kv_rows * kvh * D, 15),
               v = random_vector(kv_rows * kvh * D, 16);
    auto run = [&](int threads) {
      std::vector<float> out(q_rows * qh * D);
      AttentionArgs a{q.data(), q_rows, qh * D, k.data(), v.data(), kv_rows, kvh * D, 0.25f, causal, q_pos0,
                      out.data(), qh * D};
      ThreadPool pool(threads);
      attention(a, AttentionShape{qh, kvh, D}, pool);
      return out;
    };
    const std::vector<float> one = run(1);
    EXPECT_EQ(one, run(2)) << (causal ? "causal" : "all keys");
    EXPECT_EQ(one, run(3)) << (causal ? "causal" : "all keys");
  }
}

TEST_P(OpsOnPath, NormsMatchTheFormulas) {
  const int64_t rows = 3, dim = 37;
  const auto x = random_vector(rows * dim, 4), w = random_vector(dim, 5), b = random_vector(dim, 6);
  std::vector<float> ln(rows * dim), rms(rows * dim);
  ThreadPool pool(2);
  layer_norm(x.data(), rows, dim, w.data(), b.data(), 1e-6f, ln.data(), pool);
  rms_norm(x.data(), rows, dim, w.data(), 1e-5f, rms.data(), pool);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0, sq = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[r * dim + i] / double(dim);
    for (int64_t i = 0; i < dim; ++i) {
      var += std::pow(x[r * dim + i] - mean, 2) / double(dim);
      sq += std::pow(double(x[r * dim + i]), 2) / double(dim);
    }
    for (int64_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(ln[r * dim + i], (x[r * dim + i] - mean) / std::sqrt(var + 1e-6) * w[i] + b[i], 1e-5);
      EXPECT_NEAR(rms[r * dim + i], x[r * dim + i] / std::sqrt(sq + 1e-5) * w[i], 1e-5);
    }
  }
}

TEST(Ops, RopeRotatesPairsHalfAHeadApart) {
  const int64_t D = 8, heads = 2;
  std::vector<float> inv(D / 2);
  rope_inv_freq(10000.0, D, inv.data());
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[1], 1.0 / std::pow(10000.0, 2.0 / 8), 1e-7);
  auto x = random_vector(heads * D, 7);
  const auto orig = x;
  // Several rows (positions 5, 0, 1234), so the table's row stride and the pool split are exercised.
  const std::vector<int64_t> pos = {5, 0, 1234};
  const int64_t rows = 3, stride = heads * D + 3;
  std::vector<float> table(rows * D), xs(rows * stride);
  for (int64_t r = 0; r < rows; ++r) std::copy(x.begin(), x.end(), xs.begin() + r * stride);
  rope_table(pos.data(), rows, inv.data(), D, table.data());
  ThreadPool pool(2);
  rope_rotate_half(xs.data(), rows, stride, heads, D, table.data(), pool);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < D / 2; ++i) {
        const double a = orig[h * D + i], b = orig[h * D + i + D / 2], t = pos[r] * double(inv[i]);
        const float* got = xs.data() + r * stride + h * D;
        EXPECT_NEAR(got[i], a * std::cos(t) - b * std::sin(t), 1e-4) << "row " << r;
        EXPECT_NEAR(got[i + D / 2], b * std::cos(t) + a * std::sin(t), 1e-4) << "row " << r;
      }
}

// Inputs over the whole range the activations meet (and past it, where exp under/overflows).
std::vector<float> activation_inputs() {
  std::vector<float> x = {0.f, -0.f, 1e-6f, -1e-6f, 1e-3f, -88.f, 88.f, -100.f, 100.f, -1e4f, 1e4f};
  for (int i = -2000; i <= 2000; ++i) x.push_back(static_cast<float>(i) * 0.01f);  // [-20, 20]
  const auto r = random_vector(997, 8);  // an odd count exercises the vector tail
  for (float v : r) x.push_back(v * 4.f);
  return x;
}

TEST_P(OpsOnPath, ActivationsMatchTheFormulas) {
  ThreadPool pool(2);
  const std::vector<float> in = activation_inputs();
  const std::vector<float> up = random_vector(in.size(), 9);
  std::vector<float> gelu = in, silu = in;
  gelu_tanh(gelu.data(), static_cast<int64_t>(gelu.size()), pool);
  silu_mul(silu.data(), up.data(), static_cast<int64_t>(silu.size()), pool);
  for (size_t i = 0; i < in.size(); ++i) {
    const double v = in[i];
    const double want_gelu = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    const double want_silu = v / (1 + std::exp(-v)) * up[i];
    EXPECT_NEAR(gelu[i], want_gelu, 2e-6 * std::max(1.0, std::fabs(want_gelu))) << "gelu(" << v << ")";
    EXPECT_NEAR(silu[i], want_silu, 2e-6 * std::max(1.0, std::fabs(want_silu))) << "silu(" << v << ")";
  }
}

TEST_P(OpsOnPath, ElementwiseOpsDoNotDependOnTheThreadCount) {
  const auto x = random_vector(100'003, 10), up = random_vector(100'003, 11);
  auto run = [&](int threads) {
    ThreadPool pool(threads);
    std::vector<float> g = x, s = x, a = x;
    gelu_tanh(g.data(), static_cast<int64_t>(g.size()), pool);
    silu_mul(s.data(), up.data(), static_cast<int64_t>(s.size()), pool);
    add_inplace(a.data(), up.data(), static_cast<int64_t>(a.size()), pool);
    g.insert(g.end(), s.begin(), s.end());
    g.insert(g.end(), a.begin(), a.end());
    return g;
  };
  EXPECT_EQ(run(1), run(2));
  EXPECT_EQ(run(1), run(3));
}

INSTANTIATE_TEST_SUITE_P(Paths, OpsOnPath, ::testing::ValuesIn(supported_kernel_paths()),
                         [](const auto& info) { return std::string(kernel_path_name(info.param)); });

TEST(Ops, SoftmaxArgmax) {
  std::vector<float> s = {1.f, 3.f, 3.f, -2.f};
  EXPECT_EQ(argmax(s.data(), 4), 1);  // first of the ties, like torch
  softmax(s.data(), 4);
  EXPECT_NEAR(s[0] + s[1] + s[2] + s[3], 1.0, 1e-6);
  EXPECT_FLOAT_EQ(s[1], s[2]);
}

TEST(Connector, PixelShuffleFollowsHFIndexOrder) {
  // 4x4 patches of 1 feature holding their own index, scale 2: token (0,0) gathers patches 0, 1, 4, 5.
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i) in[i] = float(i);
  Idefics3Connector::pixel_shuffle(in.data(), 4, 1, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15}));
}

}  // namespace
}  // namespace smolvlm
