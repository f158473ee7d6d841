// linear(): every kernel path the CPU supports against the scalar reference and a double-precision
// product, for F32/F16/BF16 weights, odd shapes and the models' real shapes; bitwise invariance to the
// thread count; argument errors.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

namespace smolvlm {
namespace {

struct Shape {
  int64_t M, N, K;
};

// Odd shapes around the blocking (mr 6/8, nr 16/32, kc 256, gemv up to M=4 or 8) and a few real ones with a
// small M (the reference is slow under ASan).
const Shape kShapes[] = {
    {1, 1, 1},    {1, 7, 1},     {2, 3, 1},      {3, 5, 9},      {4, 33, 17},   {5, 40, 8},
    {6, 16, 256}, {7, 17, 33},   {8, 32, 256},   {9, 31, 257},   {13, 50, 300}, {25, 70, 513},
    {1, 37, 300}, {1, 576, 1536}, {3, 576, 1536}, {11, 1536, 576}, {8, 768, 768},   {1, 257, 576},
};

// A weight in a stored dtype, with its exact fp32 values.
struct TestWeight {
  std::vector<uint16_t> half;
  std::vector<float> f32;     // the stored data when dtype is F32
  std::vector<float> values;  // exact values of the stored elements
  WeightRef ref;
};

TestWeight make_weight(DType dt, int64_t N, int64_t K, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  TestWeight t;
  t.values.resize(size_t(N * K));
  if (dt == DType::F32) {
    t.f32.resize(t.values.size());
    for (size_t i = 0; i < t.values.size(); ++i) t.f32[i] = t.values[i] = dist(rng);
    t.ref = {t.f32.data(), dense_weight_format(dt), N, K};
  } else {
    t.half.resize(t.values.size());
    for (size_t i = 0; i < t.values.size(); ++i) {
      float v = dist(rng);
      t.half[i] = dt == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
      t.values[i] = dt == DType::BF16 ? bf16_to_f32(t.half[i]) : f16_to_f32(t.half[i]);
    }
    t.ref = {t.half.data(), dense_weight_format(dt), N, K};
  }
  return t;
}

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Exact-ish product in double, and the magnitude sum |x||w| (+|b|) that bounds fp32 rounding error.
void product_double(const std::vector<float>& x, const TestWeight& w, const float* bias, const Shape& s,
                    std::vector<double>& out, std::vector<double>& magnitude) {
  out.assign(size_t(s.M * s.N), 0.0);
  magnitude.assign(out.size(), 0.0);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        const double p = double(x[m * s.K + k]) * double(w.values[n * s.K + k]);
        acc += p;
        mag += std::fabs(p);
      }
      if (bias) {
        acc += bias[n];
        mag += std::fabs(bias[n]);
      }
      out[m * s.N + n] = acc;
      magnitude[m * s.N + n] = mag;
    }
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class LinearPathTest : public ::testing::TestWithParam<KernelPath> {
 protected:
  void SetUp() override {
    if (!kernel_path_supported(GetParam()))
      GTEST_SKIP() << "this CPU cannot run the " << kernel_path_name(GetParam()) << " kernel path";
    set_kernel_path(GetParam());
  }
  void TearDown() override { reset_kernel_path(); }
};

TEST_P(LinearPathTest, MatchesReferenceAndDoubleProduct) {
  ThreadPool pool(2);
  std::mt19937 rng(1234);
  const float eps = std::numeric_limits<float>::epsilon();
  for (const Shape& s : kShapes)
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) +
                     " dtype=" + dtype_name(dt) + (with_bias ? " bias" : " no bias"));
        TestWeight w = make_weight(dt, s.N, s.K, rng);
        std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
        std::vector<float> bias = random_vector(size_t(s.N), rng);
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> fast(size_t(s.M * s.N), NAN), ref(fast.size(), NAN);
        linear(x.data(), s.M, w.ref, b, fast.data(), pool);
        linear_reference(x.data(), s.M, w.ref, b, ref.data());
        std::vector<double> exact, magnitude;
        product_double(x, w, b, s, exact, magnitude);
        double worst = 0;
        for (size_t i = 0; i < fast.size(); ++i) {
          // Any order of fp32 summation of K products (+ bias) errs by at most (K+1)·eps·Σ|x·w|.
          const double bound = double(s.K + 2) * eps * magnitude[i] + 1e-30;
          ASSERT_LE(std::fabs(fast[i] - exact[i]), bound) << "element " << i;
          ASSERT_LE(std::fabs(ref[i] - exact[i]), bound) << "element " << i;
          ASSERT_LE(std::fabs(fast[i] - ref[i]), 2 * bound) << "element " << i;
          worst = std::max(worst, std::fabs(fast[i] - exact[i]) / (magnitude[i] + 1e-30));
        }
        // The real error is far below the worst-case bound: a broken kernel would show here first.
        EXPECT_LT(worst, 64 * eps);
      }
}

TEST_P(LinearPathTest, BitwiseIdenticalForAnyThreadCount) {
  std::mt19937 rng(99);
  ThreadPool p1(1), p2(2), p3(3);
  for (const Shape& s : {Shape{1, 300, 520}, Shape{3, 97, 64}, Shape{100, 40, 300}, Shape{61, 333, 700},
                         Shape{200, 20, 260}})
    for (DType dt : {DType::F32, DType::BF16}) {
      SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
      TestWeight w = make_weight(dt, s.N, s.K, rng);
      std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
      std::vector<float> bias = random_vector(size_t(s.N), rng);
      std::vector<float> y1(size_t(s.M * s.N)), y2(y1.size()), y3(y1.size());
      linear(x.data(), s.M, w.ref, bias.data(), y1.data(), p1);
      linear(x.data(), s.M, w.ref, bias.data(), y2.data(), p2);
      linear(x.data(), s.M, w.ref, bias.data(), y3.data(), p3);
      EXPECT_TRUE(bitwise_equal(y1, y2));
      EXPECT_TRUE(bitwise_equal(y1, y3));
    }
}

TEST_P(LinearPathTest, OneRowGivesTheSameBitsInOneStreamOrFour) {
  // A one-row product reads each thread's rows as one stream or as four side by side, as the CPU
  // prefers (read_four_streams): forced each way, on 1, 2 and 3 threads (rows falling in a stream or
  // left over), every row has the same bits, for every dense format and K with and without tails.
  struct Restore {
    ~Restore() { force_row_streams(RowStreams::AsCpuPrefers); }
  } restore;
  std::mt19937 rng(21);
  ThreadPool p1(1), p2(2), p3(3);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t K : {1, 15, 16, 33, 64, 65, 300, 576})
      for (int64_t N : {3, 4, 37, 301}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
        TestWeight w = make_weight(dt, N, K, rng);
        const std::vector<float> x = random_vector(size_t(K), rng), bias = random_vector(size_t(N), rng);
        std::vector<float> want(static_cast<size_t>(N));
        force_row_streams(RowStreams::One);
        linear(x.data(), 1, w.ref, bias.data(), want.data(), p1);
        for (RowStreams streams : {RowStreams::One, RowStreams::Four})
          for (ThreadPool* pool : {&p1, &p2, &p3}) {
            force_row_streams(streams);
            std::vector<float> got(size_t(N), NAN);
            linear(x.data(), 1, w.ref, bias.data(), got.data(), *pool);
            EXPECT_TRUE(bitwise_equal(want, got)) << (streams == RowStreams::Four ? "four" : "one") << " stream(s), "
                                                  << pool->size() << " threads";
          }
      }
}

TEST_P(LinearPathTest, RowResultDoesNotDependOnItsPositionInTheBatch) {
  // A row's result depends only on the row, the weight and M's path (GEMV or blocked), not on where
  // the row sits: the last, partial row tile is computed exactly like a full one.
  std::mt19937 rng(5);
  ThreadPool pool(2);
  const Shape s{29, 45, 300};
  TestWeight w = make_weight(DType::BF16, s.N, s.K, rng);
  std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
  std::vector<float> y(size_t(s.M * s.N)), y_shifted(y.size());
  linear(x.data(), s.M, w.ref, nullptr, y.data(), pool);
  // Rotate rows by one: every row changes tile and position.
  std::vector<float> x_rot(x.size());
  for (int64_t m = 0; m < s.M; ++m)
    std::memcpy(&x_rot[((m + 1) % s.M) * s.K], &x[m * s.K], size_t(s.K) * sizeof(float));
  linear(x_rot.data(), s.M, w.ref, nullptr, y_shifted.data(), pool);
  for (int64_t m = 0; m < s.M; ++m)
    EXPECT_EQ(0, std::memcmp(&y[m * s.N], &y_shifted[((m + 1) % s.M) * s.N], size_t(s.N) * sizeof(float)))
        << "row " << m;
}

TEST_P(LinearPathTest, StreamingRowsGiveEachRowTheBitsItGetsAlone) {
  // Up to linear_row_exact_max() rows, every row of x is computed exactly as when it is the only row
  // (a batched decode step must not change any sequence's logits), for every dense format, K with and
  // without tails, and x at an address that is not 64-byte aligned.
  std::mt19937 rng(9);
  ThreadPool pool(2);
  const int64_t max_m = std::min<int64_t>(linear_row_exact_max(), 9);
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t K : {1, 15, 16, 63, 64, 65, 300, 576}) {
      const int64_t N = 37;
      TestWeight w = make_weight(dt, N, K, rng);
      const std::vector<float> bias = random_vector(size_t(N), rng);
      std::vector<float> x = random_vector(size_t(max_m * K + 1), rng);
      for (int64_t M = 1; M <= max_m; ++M) {
        std::vector<float> y(size_t(M * N));
        linear(x.data() + 1, M, w.ref, bias.data(), y.data(), pool);
        for (int64_t m = 0; m < M; ++m) {
          std::vector<float> alone(static_cast<size_t>(N));
          linear(x.data() + 1 + m * K, 1, w.ref, bias.data(), alone.data(), pool);
          EXPECT_EQ(0, std::memcmp(alone.data(), &y[size_t(m * N)], size_t(N) * sizeof(float)))
              << dtype_name(dt) << " K " << K << " M " << M << " row " << m;
        }
      }
    }
}

TEST_P(LinearPathTest, EmptyKGivesBias) {
  ThreadPool pool(2);
  const float bias[3] = {1.5f, -2.f, 0.25f};
  float y[6] = {};
  const float x_dummy = 0;
  const float w_dummy = 0;
  linear(&x_dummy, 2, WeightRef{&w_dummy, WeightFormat::F32, 3, 0}, bias, y, pool);
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 3; ++n) EXPECT_EQ(y[m * 3 + n], bias[n]);
  linear(&x_dummy, 2, WeightRef{&w_dummy, WeightFormat::F32, 3, 0}, nullptr, y, pool);
  for (float v : y) EXPECT_EQ(v, 0.f);
}

TEST_P(LinearPathTest, SharedInputGivesTheBitsOfSeparateCalls) {
  // q/k/v and gate/up shapes (different N, one K), for decode (M=1), a few rows and a prefill block.
  std::mt19937 rng(77);
  for (int64_t M : {1, 3, 4, 5, 40})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " threads=" + std::to_string(threads));
      ThreadPool pool(threads);
      const int64_t K = 96;
      TestWeight q = make_weight(DType::BF16, 96, K, rng), k = make_weight(DType::BF16, 32, K, rng),
                 v = make_weight(DType::F32, 33, K, rng);
      const std::vector<float> x = random_vector(size_t(M * K), rng), bias = random_vector(96, rng);
      std::vector<float> yq(size_t(M * 96)), yk(size_t(M * 32)), yv(size_t(M * 33));
      const LinearOutput outs[] = {{q.ref, bias.data(), yq.data()}, {k.ref, nullptr, yk.data()},
                                   {v.ref, bias.data(), yv.data()}};
      linear_shared_input(x.data(), M, outs, pool);
      std::vector<float> eq(yq.size()), ek(yk.size()), ev(yv.size());
      linear(x.data(), M, q.ref, bias.data(), eq.data(), pool);
      linear(x.data(), M, k.ref, nullptr, ek.data(), pool);
      linear(x.data(), M, v.ref, bias.data(), ev.data(), pool);
      EXPECT_TRUE(bitwise_equal(yq, eq));
      EXPECT_TRUE(bitwise_equal(yk, ek));
      EXPECT_TRUE(bitwise_equal(yv, ev));
    }
}

TEST_P(LinearPathTest, SharesOfSharedInputGiveItsBits) {
  // Each thread's share of a team (rows of q/k/v one after the other, or columns of gate/up), taken
  // one after the other on this thread, for decode and a few rows; any split of the rows, empty
  // shares included. Shares past the outputs' rows and more rows of x than stream are refused.
  std::mt19937 rng(79);
  ThreadPool pool(1);
  const int64_t K = 96;
  TestWeight q = make_weight(DType::BF16, 96, K, rng), k = make_weight(DType::F16, 32, K, rng),
             v = make_weight(DType::F32, 33, K, rng), up = make_weight(DType::F32, 96, K, rng);
  const std::vector<float> bias = random_vector(96, rng);
  for (int64_t M : {1, 3}) {
    const std::vector<float> x = random_vector(size_t(M * K), rng);
    std::vector<float> yq(size_t(M * 96)), yk(size_t(M * 32)), yv(size_t(M * 33)), yu(size_t(M * 96));
    const LinearOutput outs[] = {{q.ref, bias.data(), yq.data()}, {k.ref, nullptr, yk.data()},
                                 {v.ref, bias.data(), yv.data()}};
    const LinearOutput gate_up[] = {{q.ref, nullptr, yq.data()}, {up.ref, bias.data(), yu.data()}};
    linear_shared_input(x.data(), M, outs, pool);
    const std::vector<float> eq = yq, ek = yk, ev = yv;
    linear_shared_input(x.data(), M, gate_up, pool);
    const std::vector<float> gq = yq, gu = yu;
    for (int parts : {1, 2, 3, 7, 200}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " parts=" + std::to_string(parts));
      for (std::vector<float>* y : {&yq, &yk, &yv, &yu}) std::fill(y->begin(), y->end(), NAN);
      for (int t = 0; t < parts; ++t) linear_shared_input_share(x.data(), M, outs, pool, 161 * t / parts, 161 * (t + 1) / parts);
      EXPECT_TRUE(bitwise_equal(yq, eq));
      EXPECT_TRUE(bitwise_equal(yk, ek));
      EXPECT_TRUE(bitwise_equal(yv, ev));
      for (int t = 0; t < parts; ++t)
        linear_shared_input_share(x.data(), M, gate_up, pool, 96 * t / parts, 96 * (t + 1) / parts, /*columns=*/true);
      EXPECT_TRUE(bitwise_equal(yq, gq));
      EXPECT_TRUE(bitwise_equal(yu, gu));
    }
    EXPECT_THROW(linear_shared_input_share(x.data(), M, outs, pool, 100, 162), Error);
    EXPECT_THROW(linear_shared_input_share(x.data(), M, outs, pool, 5, 4), Error);
    EXPECT_THROW(linear_shared_input_share(x.data(), M, outs, pool, 0, 96, /*columns=*/true), Error);
  }
  if (linear_row_exact_max() < 1000) {
    const std::vector<float> x = random_vector(size_t(1000 * K), rng);
    std::vector<float> y(size_t(1000 * 96));
    const LinearOutput one[] = {{q.ref, nullptr, y.data()}};
    EXPECT_THROW(linear_shared_input_share(x.data(), 1000, one, pool, 0, 96), Error);
  }
}

TEST_P(LinearPathTest, SharedInputFinishesEachColumnRangeOnceItIsWritten) {
  // gate/up shapes (one N): rows_done sees every column range once, each after every output's
  // columns in it hold their final bits for every row of x; outputs of different N are refused.
  std::mt19937 rng(78);
  for (int64_t M : {1, 3, 5, 40})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " threads=" + std::to_string(threads));
      ThreadPool pool(threads);
      const int64_t K = 96, N = 70;
      TestWeight gate = make_weight(DType::BF16, N, K, rng), up = make_weight(DType::F32, N, K, rng);
      const std::vector<float> x = random_vector(size_t(M * K), rng);
      std::vector<float> eg(size_t(M * N)), eu(size_t(M * N));
      linear(x.data(), M, gate.ref, nullptr, eg.data(), pool);
      linear(x.data(), M, up.ref, nullptr, eu.data(), pool);
      std::vector<float> yg(eg.size(), -1.f), yu(eu.size(), -1.f);
      std::vector<std::atomic<int>> seen(static_cast<size_t>(N));
      std::atomic<int> unfinished{0};
      const LinearOutput outs[] = {{gate.ref, nullptr, yg.data()}, {up.ref, nullptr, yu.data()}};
      linear_shared_input(x.data(), M, outs, pool, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
          seen[size_t(n)].fetch_add(1);
          for (int64_t m = 0; m < M; ++m) {
            const size_t i = size_t(m * N + n);
            if (std::memcmp(&yg[i], &eg[i], sizeof(float)) != 0 || std::memcmp(&yu[i], &eu[i], sizeof(float)) != 0)
              unfinished.fetch_add(1);
          }
        }
      });
      for (int64_t n = 0; n < N; ++n) EXPECT_EQ(seen[size_t(n)].load(), 1) << "column " << n;
      EXPECT_EQ(unfinished.load(), 0);
      EXPECT_TRUE(bitwise_equal(yg, eg));
      EXPECT_TRUE(bitwise_equal(yu, eu));
      TestWeight other = make_weight(DType::F32, N + 1, K, rng);
      std::vector<float> yo(size_t(M * (N + 1)));
      const LinearOutput uneven[] = {{gate.ref, nullptr, yg.data()}, {other.ref, nullptr, yo.data()}};
      EXPECT_THROW(linear_shared_input(x.data(), M, uneven, pool, [](int64_t, int64_t) {}), Error);
    }
}

TEST_P(LinearPathTest, PackedWeightGivesTheBitsOfLinear) {
  // Keys (w = K, row-major with a stride) and values (w = Vᵀ, read transposed), on strided x and y,
  // against linear() on the same fp32 weight; shapes around mr/nr/kc, with more rows than the GEMV path.
  // A leading block of the packed weight (a causal block's keys: fewer rows of K, fewer columns of Vᵀ,
  // ending inside a K block) must give the bits of linear() on that block alone.
  std::mt19937 rng(91);
  ThreadPool pool(1);
  const Shape shapes[] = {{9, 1, 1}, {11, 17, 64}, {16, 64, 257}, {128, 200, 64}, {30, 64, 600}};
  for (const Shape& s : shapes)
    for (bool leading : {false, true}) {
      const int64_t N = leading ? (s.N + 1) / 2 : s.N, K = leading ? s.K - s.K / 3 : s.K;
      SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(N) + " of " + std::to_string(s.N) +
                   " K=" + std::to_string(K) + " of " + std::to_string(s.K));
      const int64_t ldw = s.K + 3, ldt = s.N + 5, ldx = K + 2, ldy = N + 7;
      const std::vector<float> w_strided = random_vector(size_t(s.N * ldw), rng);
      std::vector<float> w(size_t(N * K)), w_t(size_t(s.K * ldt), 0.f);
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t k = 0; k < s.K; ++k) {
          w_t[k * ldt + n] = w_strided[n * ldw + k];
          if (n < N && k < K) w[n * K + k] = w_strided[n * ldw + k];
        }
      const std::vector<float> x_strided = random_vector(size_t(s.M * ldx), rng);
      std::vector<float> x(size_t(s.M * K));
      for (int64_t m = 0; m < s.M; ++m)
        for (int64_t k = 0; k < K; ++k) x[m * K + k] = x_strided[m * ldx + k];
      std::vector<float> expected(size_t(s.M * N));
      linear(x.data(), s.M, WeightRef{w.data(), WeightFormat::F32, N, K}, nullptr, expected.data(), pool);

      PackedWeight rows, cols;
      rows.pack(w_strided.data(), s.N, s.K, ldw);
      cols.pack_transposed(w_t.data(), s.N, s.K, ldt);
      EXPECT_EQ(rows.rows(), s.N);
      EXPECT_EQ(rows.cols(), s.K);
      for (const PackedWeight* pw : {&rows, &cols}) {
        std::vector<float> y_strided(size_t(s.M * ldy), -7.f);
        linear_packed(x_strided.data(), s.M, ldx, *pw, N, K, y_strided.data(), ldy);
        std::vector<float> y(expected.size());
        for (int64_t m = 0; m < s.M; ++m)
          for (int64_t n = 0; n < ldy; ++n) {
            if (n < N)
              y[m * N + n] = y_strided[m * ldy + n];
            else
              ASSERT_EQ(y_strided[m * ldy + n], -7.f) << "wrote past the row at m=" << m << " n=" << n;
          }
        EXPECT_TRUE(bitwise_equal(y, expected));
      }
    }
}

TEST(Linear, PackedWeightIsBoundToItsKernelPath) {
  const std::vector<float> w(64, 1.f), x(64, 1.f);
  std::vector<float> y(64);
  PackedWeight pw;
  std::optional<ScopedKernelPath> scope(std::in_place, KernelPath::Scalar);
  pw.pack(w.data(), 8, 8, 8);
  EXPECT_THROW(linear_packed(x.data(), 8, 4, pw, 8, 8, y.data(), 8), Error);  // ldx < K
  EXPECT_THROW(linear_packed(x.data(), 8, 8, pw, 9, 8, y.data(), 9), Error);  // more rows than packed
  EXPECT_THROW(linear_packed(x.data(), 8, 9, pw, 8, 9, y.data(), 8), Error);  // more columns than packed
  EXPECT_THROW(pw.pack(w.data(), 8, 8, 4), Error);                       // ld < cols
  for (KernelPath p : supported_kernel_paths()) {
    scope.reset();
    scope.emplace(p);
    if (p == KernelPath::Scalar) {
      linear_packed(x.data(), 8, 8, pw, 8, 8, y.data(), 8);
      EXPECT_EQ(y[0], 8.f);
    } else {
      try {
        linear_packed(x.data(), 8, 8, pw, 8, 8, y.data(), 8);
        ADD_FAILURE() << "a scalar-packed weight ran on " << kernel_path_name(p);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("another kernel path"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(Linear, SharedInputRefusesWeightsOfDifferentWidths) {
  ThreadPool pool(1);
  const float x[8] = {}, w[16] = {};
  float y1[2], y2[2];
  const LinearOutput outs[] = {{WeightRef{w, WeightFormat::F32, 2, 4}, nullptr, y1}, {WeightRef{w, WeightFormat::F32, 2, 3}, nullptr, y2}};
  EXPECT_THROW(linear_shared_input(x, 1, outs, pool), Error);
}

INSTANTIATE_TEST_SUITE_P(Paths, LinearPathTest,
                         ::testing::ValuesIn(kAllKernelPaths),
                         [](const ::testing::TestParamInfo<KernelPath>& info) {
                           return std::string(kernel_path_name(info.param));
                         });

TEST(Linear, PathsAgreeWithinRounding) {
  // The fast paths sum in a different order from the reference, never by more than rounding.
  std::mt19937 rng(7);
  ThreadPool pool(2);
  const Shape s{37, 70, 777};
  TestWeight w = make_weight(DType::BF16, s.N, s.K, rng);
  std::vector<float> x = random_vector(size_t(s.M * s.K), rng);
  std::vector<float> ref(size_t(s.M * s.N));
  linear_reference(x.data(), s.M, w.ref, nullptr, ref.data());
  for (KernelPath p : supported_kernel_paths()) {
    const ScopedKernelPath scope(p);  // ends with the iteration, also when ASSERT_NEAR returns early
    std::vector<float> y(ref.size());
    linear(x.data(), s.M, w.ref, nullptr, y.data(), pool);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-4f) << kernel_path_name(p);
  }
}

TEST(Linear, RejectsBadArguments) {
  ThreadPool pool(1);
  float x[4] = {}, y[4] = {};
  int32_t wi[4] = {};
  try {
    linear(x, 1, WeightRef{wi, dense_weight_format(DType::I32), 2, 2}, nullptr, y, pool);
    FAIL() << "I32 weight accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("I32"), std::string::npos) << e.what();
  }
  float w[4] = {};
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  EXPECT_EQ(kind_of([&] { linear(x, -1, WeightRef{w, WeightFormat::F32, 2, 2}, nullptr, y, pool); }), ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { linear(x, 1, WeightRef{w, WeightFormat::F32, -2, 2}, nullptr, y, pool); }), ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { linear(x, 1, WeightRef{nullptr, WeightFormat::F32, 2, 2}, nullptr, y, pool); }),
            ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { linear(nullptr, 1, WeightRef{w, WeightFormat::F32, 2, 2}, nullptr, y, pool); }),
            ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { linear(x, 1, WeightRef{w, WeightFormat::F32, 2, 2}, nullptr, nullptr, pool); }),
            ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { linear_reference(x, 1, WeightRef{wi, dense_weight_format(DType::I32), 2, 2}, nullptr, y); }),
            ErrorKind::Unsupported);
}

// The Unsupported error's message of f(), or "" when f() does not throw one.
template <typename F>
std::string unsupported_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported) return e.what();
  }
  return "";
}

TEST(Linear, RefusesUnknownWeightFormats) {
  // An unknown format value must not be read as fp32: every path and entry point refuses it by name.
  // (The quantized formats' kernels are tested in quant_test.cpp.)
  ThreadPool pool(2);
  float x[64] = {}, y[64] = {};
  for (KernelPath p : supported_kernel_paths()) {
    const ScopedKernelPath scope(p);
    for (int64_t M : {1, 8}) {  // the GEMV and the blocked path
      SCOPED_TRACE(std::string(kernel_path_name(p)) + " M=" + std::to_string(M));
      const WeightRef unknown{x, static_cast<WeightFormat>(77), 8, 8};
      EXPECT_NE(unsupported_message([&] { linear(x, M, unknown, nullptr, y, pool); }).find("unknown weight format 77"),
                std::string::npos);
      EXPECT_NE(unsupported_message([&] { linear_reference(x, M, unknown, nullptr, y); }).find("unknown weight format 77"),
                std::string::npos);
    }
  }
  EXPECT_STREQ(weight_format_name(WeightFormat::Lut4), "LUT4");
  EXPECT_TRUE(weight_format_is_quantized(WeightFormat::Q4));
  EXPECT_FALSE(weight_format_is_quantized(WeightFormat::BF16));
  EXPECT_EQ(dense_weight_format(DType::BF16), WeightFormat::BF16);
  EXPECT_NE(unsupported_message([] { dense_weight_format(DType::I8); }).find("I8"), std::string::npos);
}

TEST(Linear, FaultInjectionBreaksEveryProductOnEveryPath) {
  // The hook behind `smolvlm check`'s broken-kernel test: while on, every product (GEMV, blocked,
  // shared input, packed) is off by a little on every path; once off, the bits are back.
  std::mt19937 rng(21);
  ThreadPool pool(2);
  const int64_t N = 40, K = 64;
  TestWeight w = make_weight(DType::F32, N, K, rng);
  const std::vector<float> x = random_vector(size_t(20 * K), rng);
  PackedWeight packed;
  for (KernelPath p : supported_kernel_paths()) {
    const ScopedKernelPath scope(p);
    packed.pack(w.values.data(), N, K, K);
    auto products = [&] {
      std::vector<float> out;
      for (int64_t M : {1, 20}) {
        std::vector<float> y(size_t(M * N)), y2(y.size()), y3(y.size());
        linear(x.data(), M, w.ref, nullptr, y.data(), pool);
        const LinearOutput outs[] = {{w.ref, nullptr, y2.data()}};
        linear_shared_input(x.data(), M, outs, pool);
        linear_packed(x.data(), M, K, packed, N, K, y3.data(), N);
        out.insert(out.end(), y.begin(), y.end());
        out.insert(out.end(), y2.begin(), y2.end());
        out.insert(out.end(), y3.begin(), y3.end());
      }
      return out;
    };
    const std::vector<float> good = products();
    set_kernel_fault_injection(true);
    const std::vector<float> bad = products();
    set_kernel_fault_injection(false);
    EXPECT_TRUE(bitwise_equal(products(), good)) << kernel_path_name(p);
    // Each of the six products is wrong in its first element.
    const size_t sizes[] = {size_t(N), size_t(N), size_t(N), size_t(20 * N), size_t(20 * N), size_t(20 * N)};
    size_t at = 0;
    for (size_t part = 0; part < 6; ++part) {
      EXPECT_NEAR(bad[at] - good[at], 1e-3f, 1e-4f) << kernel_path_name(p) << " product " << part;
      at += sizes[part];
    }
  }
}

// Undoes set_kernel_path() when the test ends, however it ends.
struct ProcessPathReset {
  ~ProcessPathReset() { reset_kernel_path(); }
};

// The greedy schedule the pool runs: chunks taken in order, each by the thread free first.
int64_t finish_time(int64_t n, int64_t chunks, int64_t threads) {
  std::vector<int64_t> free_at(size_t(threads), 0);
  for (int64_t i = 0; i < chunks; ++i) *std::min_element(free_at.begin(), free_at.end()) += n * (i + 1) / chunks - n * i / chunks;
  return *std::max_element(free_at.begin(), free_at.end());
}

TEST(BalancedChunks, ThreadsFinishTogetherWithAsManyChunksAsAllowed) {
  EXPECT_EQ(balanced_chunks(18, 2, 8), 7);   // 18 panels: both threads end after 9, not after 8 and 10 as with 8
  EXPECT_EQ(finish_time(18, 7, 2), 9);
  EXPECT_EQ(finish_time(18, 8, 2), 10);
  EXPECT_EQ(balanced_chunks(24, 2, 8), 8);   // 8 x 3
  EXPECT_EQ(balanced_chunks(6, 2, 8), 6);    // one panel each
  EXPECT_EQ(balanced_chunks(1, 2, 8), 1);
  EXPECT_EQ(balanced_chunks(100, 1, 1), 1);  // one thread: one chunk
  EXPECT_EQ(balanced_chunks(0, 2, 8), 1);
  for (int64_t threads : {1, 2, 3, 4, 8})
    for (int64_t n = 1; n <= 200; ++n) {
      const int64_t most = threads * 4, c = balanced_chunks(n, threads, most);
      ASSERT_GE(c, 1);
      ASSERT_LE(c, std::min(n, most));
      for (int64_t other = 1; other <= std::min(n, most); ++other) {
        ASSERT_LE(finish_time(n, c, threads), finish_time(n, other, threads)) << n << " on " << threads;
        if (other > c) {
          ASSERT_LT(finish_time(n, c, threads), finish_time(n, other, threads)) << n << " on " << threads;
        }
      }
    }
}

TEST(KernelPathSelection, UnsupportedPathIsRefused) {
  const ProcessPathReset reset;
  for (KernelPath p : kAllKernelPaths) {
    if (kernel_path_supported(p)) {
      set_kernel_path(p);
      EXPECT_EQ(active_kernel_path(), p);
    } else {
      try {
        set_kernel_path(p);
        FAIL() << kernel_path_name(p) << " accepted on a CPU without it";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
      }
    }
  }
  reset_kernel_path();
  EXPECT_EQ(active_kernel_path(), best_kernel_path());
}

}  // namespace
}  // namespace smolvlm
