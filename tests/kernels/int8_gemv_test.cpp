// The integer decode products (kernels/gemv_int8.h, Precision::Fast): x rounded to int8 within half a
// step of each block, every kernel path and thread count giving the scalar reference's bits, the
// result within the bound the rounding of x sets around the exact product of the dequantized weight,
// and the layouts it takes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8.h"
#include "kernels/quant.h"

namespace smolvlm {
namespace {

std::vector<float> uniform(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

bool has_int8_kernels() { return precision_supported(KernelPath::Avx512, Precision::Fast) && cpu_features().avx512vnni; }

TEST(Int8Rows, CodesAreWithinHalfAStepOfX) {
  std::mt19937 rng(3);
  constexpr int64_t M = 3, K = 200;  // a short last block, padding to 256
  std::vector<float> x = uniform(size_t(M * K), rng, -2.f, 2.f);
  for (int64_t k = 64; k < 96; ++k) x[size_t(k)] = 0.f;  // a zero block of row 0
  Int8RowsBuffer buffer;
  const Int8Rows r = buffer.quantize(x.data(), M, K);
  ASSERT_EQ(r.k_pad, 256);
  for (int64_t m = 0; m < M; ++m) {
    float row_sum = 0.f;
    for (int64_t j = 0; j < r.k_pad / 32; ++j) {
      const float d = r.block_scales[m * 8 + j];
      int32_t sum = 0;
      for (int64_t i = 0; i < 32; ++i) {
        const int64_t k = j * 32 + i;
        const int8_t q = r.codes[m * r.k_pad + k];
        EXPECT_GE(q, -127);
        sum += q;
        if (k >= K) {
          EXPECT_EQ(q, 0) << "padding";
          continue;
        }
        EXPECT_LE(std::fabs(q * d - x[size_t(m * K + k)]), d * 0.5f * (1 + 1e-5f)) << m << " " << k;
      }
      EXPECT_EQ(r.block_sums[m * 8 + j], d * float(sum));
      row_sum += r.block_sums[m * 8 + j];
      if (m == 0 && j == 2) {
        EXPECT_EQ(d, 0.f) << "a zero block";
      }
    }
    EXPECT_EQ(r.row_sums[m], row_sum);
    // The nibble order: each 128 as the evens of its halves, then the odds.
    for (int64_t c = 0; c < r.k_pad; c += 128)
      for (int64_t i = 0; i < 32; ++i) {
        EXPECT_EQ(r.nibble_codes[m * r.k_pad + c + i], r.codes[m * r.k_pad + c + 2 * i]);
        EXPECT_EQ(r.nibble_codes[m * r.k_pad + c + 96 + i], r.codes[m * r.k_pad + c + 64 + 2 * i + 1]);
      }
  }
}

TEST(Int8Gemv, TakesTheLayoutsItHasProductsFor) {
  const auto takes = [](WeightFormat f, int64_t group) {
    return int8_gemv_takes(WeightRef(nullptr, f, 8, 256, QuantBlocks{group, 1}));
  };
  EXPECT_TRUE(takes(WeightFormat::Q8, 256));
  EXPECT_FALSE(takes(WeightFormat::Q8, 64)) << "one group per row only";
  EXPECT_TRUE(takes(WeightFormat::Q4, 64));
  EXPECT_TRUE(takes(WeightFormat::Q4, 128));
  EXPECT_FALSE(takes(WeightFormat::Q4, 32));
  EXPECT_FALSE(takes(WeightFormat::Lut4, 256));
  EXPECT_FALSE(takes(WeightFormat::BF16, 256));
}

struct Int8Case {
  WeightFormat format;
  int64_t group, block_rows;  // group 0: the whole row
  int64_t M, N, K;
};
// Whole steps and tails (K = 100, 200, 2112: not multiples of 128); several row blocks; 1 to 9 rows
// of x (one weight row a pass for one, four for more, with the rows left over one by one: N = 9, 37);
// M = 9 is past the streaming products (gemv_max_m: 8 on avx512), so only the kernels themselves take it.
const Int8Case kCases[] = {
    {WeightFormat::Q8, 0, 1, 9, 9, 100},     {WeightFormat::Q4, 64, 1, 9, 9, 200},  {WeightFormat::Q4, 64, 1, 9, 13, 2112},
    {WeightFormat::Q8, 0, 1, 1, 37, 64},     {WeightFormat::Q8, 0, 1, 2, 40, 100},  {WeightFormat::Q8, 0, 1, 4, 96, 576},
    {WeightFormat::Q8, 0, 1, 1, 70, 2112},   {WeightFormat::Q8, 0, 1, 8, 33, 1536}, {WeightFormat::Q4, 64, 1, 1, 37, 64},
    {WeightFormat::Q4, 64, 1, 3, 40, 200},   {WeightFormat::Q4, 64, 1, 1, 96, 576}, {WeightFormat::Q4, 128, 1, 2, 50, 2112},
    {WeightFormat::Q4, 64, 3, 4, 41, 1536},  {WeightFormat::Q4, 192, 1, 8, 20, 1088},
};

std::string name(const Int8Case& c) {
  return std::string(weight_format_name(c.format)) + " group " + std::to_string(c.group) + " rows " +
         std::to_string(c.block_rows) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" +
         std::to_string(c.K);
}

// The integer products each path has on this CPU: the kernel itself and the most rows of x linear()
// streams there (more take the blocked fp32 products).
struct Int8Path {
  KernelPath path;
  void (*kernel)(const Int8Rows&, const WeightRef&, const float*, float*, int64_t, int64_t);
  int64_t max_rows;
};
std::vector<Int8Path> int8_paths() {
  std::vector<Int8Path> v;
#if SMOLVLM_HAVE_X86_KERNELS
  if (kernel_path_supported(KernelPath::Avx2))
    v.push_back({KernelPath::Avx2, gemm::gemv_int8_avx2, gemm::gemm_kernels_avx2().gemv_max_m});
  if (has_int8_kernels())
    v.push_back({KernelPath::Avx512, gemm::gemv_int8_avx512, gemm::gemm_kernels_avx512_bf16().gemv_max_m});
#endif
  return v;
}

TEST(Int8Gemv, EveryPathAndThreadCountGivesTheReferenceBits) {
  const std::vector<Int8Path> paths = int8_paths();
  if (paths.empty()) GTEST_SKIP() << "this CPU has no kernel path with integer products";
  std::mt19937 rng(11);
  for (const Int8Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const std::vector<float> w = uniform(size_t(c.N * c.K), rng, -0.1f, 0.1f);
    const std::vector<float> x = uniform(size_t(c.M * c.K), rng, -1.f, 1.f);
    const std::vector<float> bias = uniform(size_t(c.N), rng, -1.f, 1.f);
    const QuantizedMatrix q = quantize_matrix(w.data(), c.N, c.K, c.format, c.group ? c.group : c.K, c.block_rows);
    ASSERT_TRUE(int8_gemv_takes(q.ref()));
    Int8RowsBuffer buffer;
    const Int8Rows xq = buffer.quantize(x.data(), c.M, c.K);
    std::vector<float> want(size_t(c.M * c.N));
    gemv_int8_reference(xq, q.ref(), bias.data(), want.data(), 0, c.N);
    for (const Int8Path& p : paths) {
      SCOPED_TRACE(kernel_path_name(p.path));
      // The kernel alone, over two ranges (where a range starts changes no row).
      std::vector<float> direct(want.size());
      p.kernel(xq, q.ref(), bias.data(), direct.data(), 0, c.N / 3);
      p.kernel(xq, q.ref(), bias.data(), direct.data(), c.N / 3, c.N);
      EXPECT_EQ(direct, want);
      if (c.M > p.max_rows) continue;
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads, p.path, Precision::Fast);
        std::vector<float> y(want.size()), shared(want.size());
        linear(x.data(), c.M, q.ref(), bias.data(), y.data(), pool);
        EXPECT_EQ(y, want) << threads << " threads";
        const LinearOutput outs[] = {{q.ref(), bias.data(), shared.data()}};
        linear_shared_input(x.data(), c.M, outs, pool);
        EXPECT_EQ(shared, want) << threads << " threads, shared input";
      }
    }
  }
}

// The only error besides float rounding is x's: |x - d q| <= d / 2 per value, so the product is
// within sum_k |w_k| d(k) / 2 of the exact one (and the epilogue's float rounding on top).
TEST(Int8Gemv, ReferenceIsWithinTheRoundingOfXOfTheExactProduct) {
  std::mt19937 rng(5);
  for (const Int8Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const std::vector<float> w = uniform(size_t(c.N * c.K), rng, -0.1f, 0.1f);
    const std::vector<float> x = uniform(size_t(c.M * c.K), rng, -1.f, 1.f);
    const QuantizedMatrix q = quantize_matrix(w.data(), c.N, c.K, c.format, c.group ? c.group : c.K, c.block_rows);
    const std::vector<float> deq = dequantize_matrix(q.ref());
    Int8RowsBuffer buffer;
    const Int8Rows xq = buffer.quantize(x.data(), c.M, c.K);
    std::vector<float> got(size_t(c.M * c.N));
    gemv_int8_reference(xq, q.ref(), nullptr, got.data(), 0, c.N);
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double exact = 0, bound = 0, terms = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double wk = deq[size_t(n * c.K + k)], xk = x[size_t(m * c.K + k)];
          exact += wk * xk;
          bound += std::fabs(wk) * xq.block_scales[m * (xq.k_pad / 32) + k / 32] / 2;
          terms += std::fabs(wk) * (std::fabs(xk) + 1);
        }
        EXPECT_LE(std::fabs(got[size_t(m * c.N + n)] - exact), bound * 1.001 + 1e-5 * terms) << m << " " << n;
      }
  }
}

}  // namespace
}  // namespace smolvlm
