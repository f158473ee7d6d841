// The integer decode products (kernels/gemv_int8.h, Precision::Fast): x rounded to int8 within half a
// step of each block, every kernel path and thread count giving the scalar reference's bits, the
// result within the bound the rounding of x sets around the exact product of the dequantized weight,
// and the layouts it takes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
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
    // Each Q8 lane's offset: 128 times the sum of its four codes.
    for (int64_t j = 0; j < r.k_pad / 4; ++j) {
      const int8_t* q = r.codes + m * r.k_pad + 4 * j;
      EXPECT_EQ(r.q8_lane_offsets[m * r.k_pad / 4 + j], 128 * (q[0] + q[1] + q[2] + q[3])) << m << " " << j;
    }
  }
}

// Each code is x * (127 / amax) rounded to the nearest integer, ties to even, as nearbyint gives.
TEST(Int8Rows, CodesRoundToNearestTiesToEven) {
  std::mt19937 rng(4);
  std::vector<float> x = uniform(96, rng, -3.f, 3.f);
  x[0] = 127.f;  // block 0: amax 127, so each code is x rounded
  const float ties[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 3.49f, -3.51f};
  for (size_t i = 0; i < std::size(ties); ++i) x[1 + i] = ties[i];
  Int8RowsBuffer buffer;
  const Int8Rows r = buffer.quantize(x.data(), 1, 96);
  const int8_t want_ties[] = {0, 2, 2, 0, -2, -2, 126, -126, 3, -4};
  for (size_t i = 0; i < std::size(ties); ++i) EXPECT_EQ(r.codes[1 + i], want_ties[i]) << ties[i];
  for (int64_t j = 0; j < 3; ++j) {
    float amax = 0.f;
    for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[size_t(32 * j + i)]));
    const float inv = 127.f / amax;
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_EQ(r.codes[32 * j + i], static_cast<int8_t>(std::nearbyint(x[size_t(32 * j + i)] * inv))) << j << " " << i;
  }
}

TEST(Int8Rows, EveryPathsRoundingGivesTheReferenceBits) {
  // Each path's rounding of x (its own where it has one: GemmKernels::round_int8_row) gives the
  // reference's codes, scales and sums bit for bit: K with short last blocks and whole blocks past K
  // (k_pad), ties, a block of zeros, one of tiny values, huge ones, and the values the reference
  // turns to code 0 (a NaN, an infinity's block).
  std::mt19937 rng(12);
  for (const gemm::Int8Product& path : gemm::int8_products()) {
    for (int64_t K : {1, 15, 16, 17, 31, 32, 33, 100, 128, 576, 1000}) {
      const int64_t k_pad = (K + 127) / 128 * 128, blocks = k_pad / 32;
      std::vector<float> x = uniform(size_t(K), rng, -3.f, 3.f);
      if (K > 12) {
        x[0] = 127.f;  // block 0: each code is x rounded, ties included
        const float ties[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 3.49f, -3.51f};
        for (size_t i = 0; i < std::size(ties); ++i) x[1 + i] = ties[i];
      }
      if (K >= 576) {
        for (int64_t i = 32; i < 64; ++i) x[size_t(i)] = 0.f;
        for (int64_t i = 64; i < 96; ++i) x[size_t(i)] *= 1e-30f;
        for (int64_t i = 96; i < 128; ++i) x[size_t(i)] *= 1e30f;
        x[130] = std::nanf("");  // in the first half of its block
        x[150] = std::nanf("");  // in the second
        x[170] = std::numeric_limits<float>::infinity();
        // Block 6 (amax 3, so 127 / 3 is inexact): values whose product with it rounds to a half
        // that the exact product is not at, where one fused rounding would give another code.
        x[192] = 3.f;
        const float inv = 127.f / 3.f;
        int64_t at = 193;
        for (int k = 0; k < 127 && at < 224; ++k)
          for (float v = (k + 0.5f) / inv, i = 0; i < 64 && at < 224; ++i, v = std::nextafter(v, 4.f))
            if (std::nearbyint(v * inv) != std::nearbyint(double(v) * double(inv))) x[size_t(at++)] = v;
        EXPECT_GT(at, 200) << "values that tell one rounding from two";
      }
      std::vector<int8_t> q_ref(size_t(k_pad), 1), q(size_t(k_pad), 2);
      const size_t n = static_cast<size_t>(blocks);
      std::vector<float> s_ref(n), sums_ref(n), s(n), sums(n);
      round_int8_row_reference(x.data(), K, k_pad, q_ref.data(), s_ref.data(), sums_ref.data());
      path.round(x.data(), K, k_pad, q.data(), s.data(), sums.data());
      EXPECT_EQ(q_ref, q) << path.name << " K " << K;
      EXPECT_EQ(0, std::memcmp(s_ref.data(), s.data(), s.size() * sizeof(float))) << path.name << " K " << K;
      EXPECT_EQ(0, std::memcmp(sums_ref.data(), sums.data(), sums.size() * sizeof(float))) << path.name << " K " << K;
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
  EXPECT_TRUE(takes(WeightFormat::Lut4, 256)) << "one table a whole row wide (quantize's)";
  EXPECT_FALSE(takes(WeightFormat::Lut4, 128));
  EXPECT_FALSE(takes(WeightFormat::BF16, 256));
}

// A LUT4 table rounds to codes round((v - lo) * (kLut4Top / (hi - lo))), ties to even: 0 at its
// smallest entry lo, kLut4Top at its largest hi, with scale (hi - lo) / kLut4Top and offset lo.
TEST(Int8Gemv, Lut4TableRoundsToCodesFromItsSmallestToItsLargestEntry) {
  constexpr int top = int8_detail::kLut4Top;
  const float values[16] = {-0.5f, 0.25f, 0.f, 1.f / 254, 3.f / 254, -3.f / 254, 0.1f, -0.1f,
                            0.49f, -0.49f, 0.2f, -0.2f, 0.3f, -0.3f, 0.4f, -0.45f};
  uint16_t lut[16];
  for (int i = 0; i < 16; ++i) lut[i] = f32_to_f16(values[i]);
  const float lo = f16_to_f32(lut[0]), hi = f16_to_f32(lut[8]);
  int8_detail::Lut4Codes t;
  int8_detail::lut4_codebook(lut, t);
  EXPECT_EQ(t.offset, lo);
  EXPECT_EQ(t.scale, (hi - lo) / top);
  EXPECT_EQ(t.codes[0], 0);
  EXPECT_EQ(t.codes[8], top);
  for (int i = 0; i < 16; ++i) {
    const float v = f16_to_f32(lut[i]);
    EXPECT_EQ(t.codes[i], static_cast<uint8_t>(std::nearbyint((v - lo) * (top / (hi - lo))))) << i;
    EXPECT_LE(std::fabs(t.offset + t.codes[i] * t.scale - v), t.scale * 0.5f * (1 + 1e-5f)) << i;
  }
  // Equal entries: codes 0, scale 0, the entry as the offset.
  uint16_t same[16];
  for (uint16_t& e : same) e = f32_to_f16(-0.25f);
  int8_detail::lut4_codebook(same, t);
  EXPECT_EQ(t.scale, 0.f);
  EXPECT_EQ(t.offset, -0.25f);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(t.codes[i], 0) << i;
  // A non-finite entry takes code 0 and is left out of the range.
  lut[3] = 0x7C00;  // +inf
  lut[5] = 0x7E00;  // NaN
  int8_detail::lut4_codebook(lut, t);
  EXPECT_EQ(t.offset, lo);
  EXPECT_EQ(t.scale, (hi - lo) / top);
  EXPECT_EQ(t.codes[3], 0);
  EXPECT_EQ(t.codes[5], 0);
  EXPECT_EQ(t.codes[8], top);
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
    // LUT4, one table per block of rows: one row of x over several blocks (the avx512 path's four
    // streams where the CPU reads them, each quarter starting mid-block), batched rows, tails.
    {WeightFormat::Lut4, 0, 16, 1, 37, 64},  {WeightFormat::Lut4, 0, 16, 9, 9, 200}, {WeightFormat::Lut4, 0, 4, 3, 40, 2112},
    {WeightFormat::Lut4, 0, 16, 1, 96, 576}, {WeightFormat::Lut4, 0, 16, 4, 70, 1536}, {WeightFormat::Lut4, 0, 16, 1, 131, 2048},
    {WeightFormat::Lut4, 0, 5, 8, 21, 1088},
    // A last step whose first half ends short, in a row taken one half at a time (84 bytes) and in one
    // taken with both together (788 bytes; the 256-bit kernels' kOneHalfAtATimeBytes is 768).
    {WeightFormat::Lut4, 0, 16, 2, 19, 168}, {WeightFormat::Lut4, 0, 16, 1, 37, 1576},
};

std::string name(const Int8Case& c) {
  return std::string(weight_format_name(c.format)) + " group " + std::to_string(c.group) + " rows " +
         std::to_string(c.block_rows) + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" +
         std::to_string(c.K);
}

// The integer products this CPU can run, each kernel by itself (gemm::int8_products), the path whose
// pools use it (through linear()) where its table takes it, and the most rows of x linear() streams
// there (more take the blocked fp32 products).
struct Int8Kernel {
  const char* name;
  gemm::GemvInt8 kernel;
  std::optional<KernelPath> pool_path;
  int64_t max_rows = 0;
};
std::vector<Int8Kernel> int8_kernels() {
  std::vector<Int8Kernel> v;
  for (const gemm::Int8Product& p : gemm::int8_products())
    v.push_back({p.name, p.run, p.taken ? std::optional(p.path) : std::nullopt, p.max_rows});
  return v;
}

// A path's table takes the best product the CPU has for it (avx-vnni over avx2, dotprod over plain
// neon: the last listed), and a path that runs Precision::Fast takes one.
TEST(Int8Gemv, EachPathTakesItsBestProduct) {
  const std::vector<gemm::Int8Product> products = gemm::int8_products();
  for (KernelPath path : kAllKernelPaths) {
    const gemm::Int8Product* last = nullptr;
    int taken = 0;
    for (const gemm::Int8Product& p : products) {
      if (p.path != path) continue;
      last = &p;
      taken += p.taken;
    }
    if (!last) continue;
    SCOPED_TRACE(kernel_path_name(path));
    EXPECT_EQ(taken, precision_supported(path, Precision::Fast) ? 1 : 0);
    if (taken) {
      EXPECT_TRUE(last->taken) << last->name << " is the best this CPU has";
    }
  }
}

// The table of each path names the kernel it took.
TEST(Int8Gemv, EachPathNamesTheIntegerProductsItTakes) {
  const WeightRef q8(nullptr, WeightFormat::Q8, 8, 256, QuantBlocks{256, 1});
  for (const Int8Kernel& k : int8_kernels()) {
    if (!k.pool_path) continue;
    EXPECT_EQ(decode_product_name(q8, *k.pool_path, Precision::Fast), std::string(k.name) + " int8");
    EXPECT_EQ(decode_product_name(q8, *k.pool_path, Precision::Exact),
              std::string(kernel_path_name(*k.pool_path)) + " fp32");
  }
}

// Each kernel with each way of reading a thread's rows (one stream, four side by side: the CPU picks
// one, so both are forced here).
struct ForcedRowStreams {
  explicit ForcedRowStreams(RowStreams s) { force_row_streams(s); }
  ~ForcedRowStreams() { force_row_streams(RowStreams::AsCpuPrefers); }
};
std::vector<std::pair<Int8Kernel, RowStreams>> kernel_schedules(const std::vector<Int8Kernel>& kernels) {
  std::vector<std::pair<Int8Kernel, RowStreams>> v;
  for (const Int8Kernel& k : kernels)
    for (RowStreams s : {RowStreams::One, RowStreams::Four}) v.push_back({k, s});
  return v;
}

TEST(Int8Gemv, EveryPathAndThreadCountGivesTheReferenceBits) {
  const std::vector<Int8Kernel> kernels = int8_kernels();
  if (kernels.empty()) GTEST_SKIP() << "this CPU has no kernel path with integer products";
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
    for (const auto& [k, streams] : kernel_schedules(kernels)) {
      SCOPED_TRACE(std::string(k.name) + (streams == RowStreams::Four ? ", four streams" : ", one stream"));
      const ForcedRowStreams forced(streams);
      // The kernel alone, over two ranges (where a range starts changes no row).
      std::vector<float> direct(want.size());
      k.kernel(xq, q.ref(), bias.data(), direct.data(), 0, c.N / 3);
      k.kernel(xq, q.ref(), bias.data(), direct.data(), c.N / 3, c.N);
      EXPECT_EQ(direct, want);
      if (!k.pool_path || c.M > k.max_rows) continue;
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads, *k.pool_path, Precision::Fast);
        std::vector<float> y(want.size()), shared(want.size());
        linear(x.data(), c.M, q.ref(), bias.data(), y.data(), pool);
        EXPECT_EQ(y, want) << threads << " threads";
        const LinearOutput outs[] = {{q.ref(), bias.data(), shared.data()}};
        linear_shared_input(x.data(), c.M, outs, pool);
        EXPECT_EQ(shared, want) << threads << " threads, shared input";
        // Each thread's share of a team of that many threads, one after the other on this thread.
        std::vector<float> shares(want.size());
        const LinearOutput share_outs[] = {{q.ref(), bias.data(), shares.data()}};
        for (int t = 0; t < threads; ++t)
          linear_shared_input_share(x.data(), c.M, share_outs, pool, c.N * t / threads, c.N * (t + 1) / threads);
        EXPECT_EQ(shares, want) << threads << " shares";
      }
    }
  }
}

// The only error besides float rounding is x's: |x - d q| <= d / 2 per value, so the product is
// within sum_k |w_k| d(k) / 2 of the exact one (and the epilogue's float rounding on top). LUT4 adds
// its table's: |w - (offset + s t)| <= s / 2, times |x| + d / 2 per value.
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
        int8_detail::Lut4Codes table;
        if (c.format == WeightFormat::Lut4) int8_detail::lut4_codebook(q.lut.data() + 16 * (n / c.block_rows), table);
        const float table_scale = table.scale;
        double exact = 0, bound = 0, terms = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double wk = deq[size_t(n * c.K + k)], xk = x[size_t(m * c.K + k)];
          const double d = xq.block_scales[m * (xq.k_pad / 32) + k / 32];
          exact += wk * xk;
          bound += std::fabs(wk) * d / 2 + (std::fabs(xk) + d / 2) * table_scale / 2;
          terms += (std::fabs(wk) + table_scale + std::fabs(table.offset)) * (std::fabs(xk) + 1);
        }
        EXPECT_LE(std::fabs(got[size_t(m * c.N + n)] - exact), bound * 1.001 + 1e-5 * terms) << m << " " << n;
      }
  }
}

}  // namespace
}  // namespace smolvlm
