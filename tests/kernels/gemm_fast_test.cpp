// Precision::Fast (bf16 products on avx512_bf16): the blocked products' and BF16 weights' decode
// products' results against a double product of the bf16-rounded operands, the other formats' decode
// products left exact, bitwise invariance to the thread count and to the other rows of a batched
// decode step, and the refusal on pools whose path has no bf16 kernels.
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

// The double product of the bf16-rounded operands (+ bias) and the magnitude of its terms.
std::pair<double, double> bf16_product(const std::vector<float>& x, int64_t m, const Weight& w, int64_t n, int64_t K,
                                       const float* bias) {
  double acc = bias ? bias[n] : 0.0, magnitude = bias ? std::fabs(bias[n]) : 0.0;
  for (int64_t k = 0; k < K; ++k) {
    const double p = double(round_bf16(x[m * K + k])) * double(round_bf16(w.values[n * K + k]));
    acc += p;
    magnitude += std::fabs(p);
  }
  return {acc, magnitude};
}

// Runs y = x·wᵀ + bias on both pools, checks the fast result against bf16_product within fp32
// summation (at most K + 2 roundings of the running magnitude) and returns its largest distance from
// the exact result.
double checked_distance_from_exact(const Weight& w, const Shape& s, std::mt19937& rng, ThreadPool& fast,
                                   ThreadPool& exact) {
  const std::vector<float> x = random_vector(size_t(s.M * s.K), rng), bias = random_vector(size_t(s.N), rng);
  std::vector<float> y(size_t(s.M * s.N)), y_exact(y.size());
  linear(x.data(), s.M, w.ref, bias.data(), y.data(), fast);
  linear(x.data(), s.M, w.ref, bias.data(), y_exact.data(), exact);
  double max_vs_exact = 0;
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      const auto [want, magnitude] = bf16_product(x, m, w, n, s.K, bias.data());
      const float got = y[m * s.N + n];
      if (std::fabs(double(got) - want) > double(s.K + 2) * 0x1p-24 * magnitude + 1e-30) {
        ADD_FAILURE() << weight_format_name(w.ref.format) << " " << s.M << "x" << s.N << "x" << s.K << " at " << m
                      << "," << n << ": " << got << " against " << want;
        return 0;
      }
      max_vs_exact = std::max(max_vs_exact, std::fabs(double(got) - y_exact[m * s.N + n]));
    }
  return max_vs_exact;
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
      const double max_vs_exact = checked_distance_from_exact(make_weight(format, s.N, s.K, rng), s, rng, fast, exact);
      // The operands really were rounded: exact fp32 differs (random x is not bf16-representable).
      if (s.K > 1) {
        EXPECT_GT(max_vs_exact, 1e-4) << weight_format_name(format) << " K=" << s.K;
      }
    }
  }
}

// Decode's few-row products of BF16 weights round x to bf16 too (VDPBF16PS on the stored weights):
// within fp32 summation of the double product of the rounded operands, on K around the 32-value steps
// (a last step of 1 to 31 values, a single value) and ranges around the four streams a thread reads.
TEST_F(FastPrecisionTest, DecodeProductsOfBf16WeightsMatchTheDoubleProductOfBf16RoundedOperands) {
  std::mt19937 rng(12);
  ThreadPool fast(2, KernelPath::Avx512, Precision::Fast);
  ThreadPool exact(2, KernelPath::Avx512);
  const Shape shapes[] = {{1, 300, 576}, {4, 37, 577}, {3, 9, 1}, {5, 64, 31}, {8, 13, 33}, {2, 1, 1000}, {1, 70, 63}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K));
    const double max_vs_exact =
        checked_distance_from_exact(make_weight(WeightFormat::BF16, s.N, s.K, rng), s, rng, fast, exact);
    EXPECT_GT(max_vs_exact, 1e-5) << "x was not rounded to bf16";
  }
}

// A row of x gets the same bits alone and among the rows of a batched step (the server's decode group
// gives each sequence its own logits), on 1 to 4 threads, and through linear_shared_input; F32 and
// F16 weights keep the fp32 products, the exact pool's bits.
TEST_F(FastPrecisionTest, DecodeRowsOfBf16WeightsGetTheirBitsAloneAndOnAnyThreadCount) {
  std::mt19937 rng(14);
  constexpr int64_t M = 7, N = 203, K = 600;
  const Weight w = make_weight(WeightFormat::BF16, N, K, rng);
  const std::vector<float> x = random_vector(size_t(M * K), rng);
  std::vector<float> batched(size_t(M * N));
  ThreadPool p1(1, KernelPath::Avx512, Precision::Fast);
  linear(x.data(), M, w.ref, nullptr, batched.data(), p1);
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads, KernelPath::Avx512, Precision::Fast);
    std::vector<float> y(batched.size()), shared(batched.size());
    linear(x.data(), M, w.ref, nullptr, y.data(), pool);
    EXPECT_EQ(0, std::memcmp(y.data(), batched.data(), y.size() * sizeof(float))) << threads << " threads";
    const LinearOutput outs[] = {{w.ref, nullptr, shared.data()}};
    linear_shared_input(x.data(), M, outs, pool);
    EXPECT_EQ(0, std::memcmp(shared.data(), batched.data(), y.size() * sizeof(float))) << threads << " threads";
    for (int64_t m = 0; m < M; ++m) {
      std::vector<float> alone(static_cast<size_t>(N));
      linear(x.data() + m * K, 1, w.ref, nullptr, alone.data(), pool);
      EXPECT_EQ(0, std::memcmp(alone.data(), batched.data() + m * N, N * sizeof(float))) << "row " << m;
    }
  }
  ThreadPool fast(2, KernelPath::Avx512, Precision::Fast), exact(2, KernelPath::Avx512);
  for (WeightFormat format : {WeightFormat::F32, WeightFormat::F16}) {
    const Weight other = make_weight(format, 300, 576, rng);
    for (int64_t rows : {1, 3, 8}) {
      const std::vector<float> in = random_vector(size_t(rows * 576), rng);
      std::vector<float> a(size_t(rows * 300)), b(a.size());
      linear(in.data(), rows, other.ref, nullptr, a.data(), fast);
      linear(in.data(), rows, other.ref, nullptr, b.data(), exact);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << weight_format_name(format) << " M=" << rows;
    }
  }
  EXPECT_EQ(decode_product_name(w.ref, KernelPath::Avx512, Precision::Fast), "avx512-bf16 dot");
  EXPECT_EQ(decode_product_name(w.ref, KernelPath::Avx512, Precision::Exact), "avx512 fp32");
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
