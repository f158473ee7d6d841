// Precision::Fast (bf16 blocked products on avx512_bf16): its results against a double product of
// the bf16-rounded operands, the streaming products left exact, bitwise invariance to the thread
// count, and the refusal on pools whose path has no bf16 kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {
namespace fast_precision {  // test binaries are unity builds: names apart from gemm_test's

struct Shape {
  int64_t M, N, K;
};

// Around the blocking (mr 8, nr 32, kc 256 = 128 pairs, odd K blocks, partial tiles) and real shapes;
// every M is past the streaming limit (8), so the blocked products run.
const Shape kShapes[] = {{9, 31, 257}, {13, 50, 300}, {25, 70, 513}, {16, 64, 1}, {11, 1536, 576}, {40, 96, 768}};

float round_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

struct Weight {
  std::vector<float> f32;
  std::vector<uint16_t> half;
  std::vector<float> values;  // the stored values as fp32
  WeightRef ref;
};

Weight make_weight(WeightFormat format, int64_t N, int64_t K, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Weight w;
  w.values.resize(size_t(N * K));
  if (format == WeightFormat::F32) {
    for (float& v : w.values) v = dist(rng);
    w.f32 = w.values;
    w.ref = {w.f32.data(), format, N, K};
    return w;
  }
  w.half.resize(w.values.size());
  for (size_t i = 0; i < w.values.size(); ++i) {
    const float v = dist(rng);
    w.half[i] = format == WeightFormat::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
    w.values[i] = format == WeightFormat::BF16 ? bf16_to_f32(w.half[i]) : f16_to_f32(w.half[i]);
  }
  w.ref = {w.half.data(), format, N, K};
  return w;
}

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

class FastPrecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!precision_supported(KernelPath::Avx512, Precision::Fast))
      GTEST_SKIP() << "this CPU has no avx512 path with avx512_bf16";
  }
};

TEST_F(FastPrecisionTest, MatchesTheDoubleProductOfBf16RoundedOperands) {
  std::mt19937 rng(11);
  ThreadPool fast(2, KernelPath::Avx512, Precision::Fast);
  ThreadPool exact(2, KernelPath::Avx512);
  for (WeightFormat format : {WeightFormat::BF16, WeightFormat::F32, WeightFormat::F16}) {
    for (const Shape& s : kShapes) {
      const Weight w = make_weight(format, s.N, s.K, rng);
      const std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
      const std::vector<float> bias = random_vector(size_t(s.N), rng);
      std::vector<float> y(size_t(s.M * s.N)), y_exact(y.size());
      linear(x.data(), s.M, w.ref, bias.data(), y.data(), fast);
      linear(x.data(), s.M, w.ref, bias.data(), y_exact.data(), exact);
      double max_vs_exact = 0;
      for (int64_t m = 0; m < s.M; ++m)
        for (int64_t n = 0; n < s.N; ++n) {
          double acc = bias[n], magnitude = std::fabs(bias[n]);
          for (int64_t k = 0; k < s.K; ++k) {
            const double p = double(round_bf16(x[m * s.K + k])) * double(round_bf16(w.values[n * s.K + k]));
            acc += p;
            magnitude += std::fabs(p);
          }
          const float got = y[m * s.N + n];
          // fp32 sums of exact bf16 products: at most K + 2 roundings of the running magnitude.
          ASSERT_NEAR(got, acc, double(s.K + 2) * 0x1p-24 * magnitude + 1e-30)
              << weight_format_name(format) << " " << s.M << "x" << s.N << "x" << s.K << " at " << m << "," << n;
          max_vs_exact = std::max(max_vs_exact, std::fabs(double(got) - y_exact[m * s.N + n]));
        }
      // The operands really were rounded: exact fp32 differs (random x is not bf16-representable).
      if (s.K > 1) {
        EXPECT_GT(max_vs_exact, 1e-4) << weight_format_name(format) << " K=" << s.K;
      }
    }
  }
}

TEST_F(FastPrecisionTest, StreamingProductsStayExact) {
  // Decode's few-row products take the fp32 GEMV in both precisions: the same bits.
  std::mt19937 rng(12);
  ThreadPool fast(2, KernelPath::Avx512, Precision::Fast);
  ThreadPool exact(2, KernelPath::Avx512);
  const Weight w = make_weight(WeightFormat::BF16, 300, 576, rng);
  for (int64_t M : {1, 3, 8}) {
    const std::vector<float> x = random_vector(size_t(M * 576), rng);
    std::vector<float> a(size_t(M * 300)), b(a.size());
    linear(x.data(), M, w.ref, nullptr, a.data(), fast);
    linear(x.data(), M, w.ref, nullptr, b.data(), exact);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "M=" << M;
  }
}

TEST_F(FastPrecisionTest, BitwiseIdenticalForAnyThreadCountAndSharedInput) {
  std::mt19937 rng(13);
  const Shape s{50, 200, 600};
  const Weight w1 = make_weight(WeightFormat::BF16, s.N, s.K, rng), w2 = make_weight(WeightFormat::F32, 70, s.K, rng);
  const std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
  std::vector<float> one(size_t(s.M * s.N)), two(one.size()), shared1(one.size()), shared2(size_t(s.M * 70)),
      alone2(shared2.size());
  ThreadPool p1(1, KernelPath::Avx512, Precision::Fast), p2(2, KernelPath::Avx512, Precision::Fast);
  linear(x.data(), s.M, w1.ref, nullptr, one.data(), p1);
  linear(x.data(), s.M, w1.ref, nullptr, two.data(), p2);
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
  linear(x.data(), s.M, w2.ref, nullptr, alone2.data(), p2);
  const LinearOutput outs[] = {{w1.ref, nullptr, shared1.data()}, {w2.ref, nullptr, shared2.data()}};
  linear_shared_input(x.data(), s.M, outs, p2);
  EXPECT_EQ(0, std::memcmp(one.data(), shared1.data(), one.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(alone2.data(), shared2.data(), alone2.size() * sizeof(float)));
}

TEST(FastPrecision, RefusedWherePathHasNoFastProducts) {
  EXPECT_THROW(ThreadPool(2, std::nullopt, Precision::Fast), Error);
  EXPECT_THROW(ThreadPool(2, KernelPath::Scalar, Precision::Fast), Error);
  for (KernelPath path : {KernelPath::Avx2, KernelPath::Neon}) {
    if (!kernel_path_supported(path)) continue;
    SCOPED_TRACE(kernel_path_name(path));
    // The avx2 and neon paths' fast products are their integer decode products only: their blocked
    // products (more rows of x than they stream) stay fp32, the bits of the exact pool.
    ThreadPool fast(2, path, Precision::Fast), exact(2, path);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    constexpr int64_t M = 33, N = 40, K = 70;
    std::vector<float> x(size_t(M * K)), w(size_t(N * K)), a(size_t(M * N)), b(size_t(M * N));
    for (float& v : x) v = dist(rng);
    for (float& v : w) v = dist(rng);
    const WeightRef ref(w.data(), WeightFormat::F32, N, K);
    linear(x.data(), M, ref, nullptr, a.data(), fast);
    linear(x.data(), M, ref, nullptr, b.data(), exact);
    EXPECT_EQ(a, b);
  }
  if (kernel_path_supported(KernelPath::Avx512) && !cpu_features().avx512bf16) {
    EXPECT_THROW(ThreadPool(2, KernelPath::Avx512, Precision::Fast), Error);
  }
  EXPECT_FALSE(precision_supported(KernelPath::Scalar, Precision::Fast));
  EXPECT_TRUE(precision_supported(KernelPath::Scalar, Precision::Exact));
  try {
    ThreadPool pool(1, KernelPath::Scalar, Precision::Fast);
    FAIL() << "precision fast was accepted on the scalar path";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("avx512_bf16"), std::string::npos) << e.what();
  }
}

}  // namespace fast_precision
}  // namespace
}  // namespace smolvlm
