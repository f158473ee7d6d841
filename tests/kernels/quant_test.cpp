// Quantized weights (Q8, Q4, LUT4): quantization error bounds and determinism, and linear() on every
// kernel path (GEMV, blocked GEMM with dequantizing packing, shared input) against the reference on
// the exactly dequantized fp32 matrix; bitwise invariance to the thread count; malformed blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/quant.h"

namespace smolvlm {
namespace {

struct QuantCase {
  WeightFormat format;
  int64_t group, block_rows;
};

// Per-row and grouped Q8, Q4 with full and short last groups, LUT4 per row block (short last block).
const QuantCase kQuantCases[] = {{WeightFormat::Q8, 0, 1},    {WeightFormat::Q8, 64, 1},  {WeightFormat::Q8, 24, 1},
                       {WeightFormat::Q4, 64, 1},   {WeightFormat::Q4, 32, 1},  {WeightFormat::Q4, 18, 1},
                       {WeightFormat::Lut4, 0, 16}, {WeightFormat::Lut4, 0, 1}, {WeightFormat::Lut4, 64, 5}};

struct QuantShape {
  int64_t M, N, K;
};
// Decode (M <= 4) and blocked shapes; K = 40 and 172 are short of a group of 64; 576 = 9 x 64.
const QuantShape kQuantShapes[] = {{1, 7, 16},   {1, 33, 40},  {3, 40, 172}, {1, 576, 576}, {4, 96, 1536},
                         {5, 37, 64},  {8, 64, 40},  {13, 50, 300}, {25, 70, 576}};

std::vector<float> uniform_values(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

std::string case_name(const QuantCase& c, const QuantShape& s) {
  return std::string(weight_format_name(c.format)) + " group " + std::to_string(c.group) + " rows " +
         std::to_string(c.block_rows) + " M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
         " K=" + std::to_string(s.K);
}

TEST(Quant, LinearOnEveryPathMatchesTheDequantizedReference) {
  std::mt19937 rng(7);
  ThreadPool one(1), two(2);
  for (const QuantShape& s : kQuantShapes)
    for (const QuantCase& c : kQuantCases) {
      if (c.format != WeightFormat::Q8 && s.K % 2) continue;
      SCOPED_TRACE(case_name(c, s));
      const std::vector<float> w = uniform_values(size_t(s.N * s.K), rng, -0.1f, 0.1f);
      const std::vector<float> x = uniform_values(size_t(s.M * s.K), rng);
      const std::vector<float> bias = uniform_values(size_t(s.N), rng);
      const int64_t group = c.group ? c.group : s.K;
      const QuantizedMatrix q = quantize_matrix(w.data(), s.N, s.K, c.format, group, c.block_rows);
      const std::vector<float> deq = dequantize_matrix(q.ref());
      const WeightRef dense{deq.data(), WeightFormat::F32, s.N, s.K};
      std::vector<float> want(size_t(s.M * s.N)), got(want.size());
      linear_reference(x.data(), s.M, dense, bias.data(), want.data());
      // The reference on the quantized weight reads the same values in the same order: bitwise equal.
      linear_reference(x.data(), s.M, q.ref(), bias.data(), got.data());
      EXPECT_EQ(got, want);
      for (KernelPath p : supported_kernel_paths()) {
        const ScopedKernelPath scope(p);
        SCOPED_TRACE(kernel_path_name(p));
        std::vector<float> y1(want.size()), y2(want.size()), y3(want.size());
        linear(x.data(), s.M, q.ref(), bias.data(), y1.data(), one);
        linear(x.data(), s.M, q.ref(), bias.data(), y2.data(), two);
        EXPECT_EQ(y1, y2) << "thread counts differ";
        const LinearOutput outs[] = {{q.ref(), bias.data(), y3.data()}};
        linear_shared_input(x.data(), s.M, outs, two);
        EXPECT_EQ(y3, y2) << "shared input differs";
        double worst = 0;
        for (int64_t m = 0; m < s.M; ++m)
          for (int64_t n = 0; n < s.N; ++n) {
            double scale = 1.0;  // the sum of |terms| bounds the rounding of any order
            for (int64_t k = 0; k < s.K; ++k) scale += std::fabs(x[m * s.K + k] * deq[n * s.K + k]);
            worst = std::max(worst, std::fabs(double(y1[m * s.N + n]) - want[m * s.N + n]) / scale);
          }
        EXPECT_LT(worst, 1e-6);
      }
    }
}

// The blocked products pack a quantized weight by decoding it (16 values at a time on avx512, group
// tails one by one): the products then run on the very values of the dequantized fp32 matrix, so
// they give its bits, in either precision.
TEST(Quant, BlockedProductsGiveTheBitsOfTheDequantizedMatrix) {
  std::mt19937 rng(17);
  // M past the streaming products' rows (8); K across the 256-column blocks with short tails, groups
  // that straddle them (18, 24) or are odd (9, Q8 only: 4-bit groups are even); N past whole panels.
  const QuantCase cases[] = {{WeightFormat::Q8, 0, 1},  {WeightFormat::Q8, 24, 1}, {WeightFormat::Q8, 9, 1},
                             {WeightFormat::Q4, 64, 1}, {WeightFormat::Q4, 18, 1}, {WeightFormat::Q4, 0, 1},
                             {WeightFormat::Lut4, 0, 16}, {WeightFormat::Lut4, 64, 5}};
  const QuantShape shapes[] = {{9, 37, 40}, {13, 70, 300}, {25, 33, 602}};
  for (KernelPath path : supported_kernel_paths())
    for (Precision precision : {Precision::Exact, Precision::Fast}) {
      if (!precision_supported(path, precision)) continue;
      ThreadPool pool(2, path, precision);
      SCOPED_TRACE(std::string(kernel_path_name(path)) + (precision == Precision::Fast ? " fast" : " exact"));
      for (const QuantShape& s : shapes)
        for (const QuantCase& c : cases) {
          SCOPED_TRACE(case_name(c, s));
          const std::vector<float> w = uniform_values(size_t(s.N * s.K), rng, -0.1f, 0.1f);
          const std::vector<float> x = uniform_values(size_t(s.M * s.K), rng);
          const QuantizedMatrix q = quantize_matrix(w.data(), s.N, s.K, c.format, c.group ? c.group : s.K, c.block_rows);
          const std::vector<float> deq = dequantize_matrix(q.ref());
          const WeightRef dense{deq.data(), WeightFormat::F32, s.N, s.K};
          std::vector<float> want(size_t(s.M * s.N)), got(want.size());
          linear(x.data(), s.M, dense, nullptr, want.data(), pool);
          linear(x.data(), s.M, q.ref(), nullptr, got.data(), pool);
          EXPECT_EQ(got, want);
        }
    }
}

// A batched decode step decodes each quantized weight value once for all its rows of x: every row
// must still get exactly the bits it gets alone (a sequence's logits never depend on its batch), on
// every path, for the wide rows (K a multiple of 64) and the rest, with x not 64-byte aligned.
TEST(Quant, StreamingRowsGiveEachRowTheBitsItGetsAlone) {
  std::mt19937 rng(23);
  for (KernelPath path : supported_kernel_paths()) {
    const ScopedKernelPath scope(path);
    const int64_t max_m = std::min<int64_t>(linear_row_exact_max(), 9);
    ThreadPool pool(2, path);
    SCOPED_TRACE(kernel_path_name(path));
    for (int64_t K : {40, 64, 172, 576})
      for (const QuantCase& c : kQuantCases) {
        const QuantShape s{max_m, 37, K};
        SCOPED_TRACE(case_name(c, s));
        const std::vector<float> w = uniform_values(size_t(s.N * K), rng, -0.1f, 0.1f);
        const std::vector<float> x = uniform_values(size_t(max_m * K + 1), rng);
        const std::vector<float> bias = uniform_values(size_t(s.N), rng);
        const QuantizedMatrix q = quantize_matrix(w.data(), s.N, K, c.format, c.group ? c.group : K, c.block_rows);
        for (int64_t M = 2; M <= max_m; ++M) {
          std::vector<float> y(size_t(M * s.N));
          linear(x.data() + 1, M, q.ref(), bias.data(), y.data(), pool);
          for (int64_t m = 0; m < M; ++m) {
            std::vector<float> alone(size_t(s.N));
            linear(x.data() + 1 + m * K, 1, q.ref(), bias.data(), alone.data(), pool);
            EXPECT_EQ(0, std::memcmp(alone.data(), &y[size_t(m * s.N)], size_t(s.N) * sizeof(float)))
                << "M " << M << " row " << m;
          }
        }
      }
  }
}

TEST(Quant, ErrorIsBoundedByTheBlockStep) {
  std::mt19937 rng(3);
  const int64_t N = 20, K = 172;
  const std::vector<float> w = uniform_values(size_t(N * K), rng, -0.05f, 0.05f);
  for (const QuantCase& c : kQuantCases) {
    SCOPED_TRACE(std::string(weight_format_name(c.format)) + " group " + std::to_string(c.group));
    const int64_t group = c.group ? c.group : K;
    const QuantizedMatrix q = quantize_matrix(w.data(), N, K, c.format, group, c.block_rows);
    const std::vector<float> deq = dequantize_matrix(q.ref());
    double worst = 0;
    for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(double(deq[i]) - w[i]));
    // Range 0.1: 8-bit steps 0.1/255 (half a step plus fp16 rounding of the parameters), 4-bit
    // 0.1/15 (half a step for Q4; k-means tables place no centroid at the extremes).
    EXPECT_LT(worst, c.format == WeightFormat::Q8 ? 0.1 / 255 : 0.1 / 15) << worst;
    EXPECT_GT(worst, 0.0);
    // Deterministic: the same input gives the same codes and parameters.
    const QuantizedMatrix again = quantize_matrix(w.data(), N, K, c.format, group, c.block_rows);
    EXPECT_EQ(again.codes, q.codes);
    EXPECT_EQ(again.scales, q.scales);
    EXPECT_EQ(again.zeros, q.zeros);
    EXPECT_EQ(again.mins, q.mins);
    EXPECT_EQ(again.lut, q.lut);
  }
}

TEST(Quant, ZeroAndConstantBlocks) {
  // A zero block decodes to exact zeros; a constant one to its value (exactly for the 4-bit
  // formats, whose min or table entry is that fp16 value; within a step for Q8).
  std::vector<float> w(64, 0.f);
  for (int64_t k = 32; k < 64; ++k) w[size_t(k)] = 0.25f;
  for (WeightFormat f : {WeightFormat::Q8, WeightFormat::Q4, WeightFormat::Lut4}) {
    const QuantizedMatrix q = quantize_matrix(w.data(), 2, 32, f, 32, 1);
    const std::vector<float> d = dequantize_matrix(q.ref());
    for (size_t i = 0; i < 32; ++i) EXPECT_EQ(d[i], 0.f) << weight_format_name(f);
    for (size_t i = 32; i < 64; ++i)
      if (f == WeightFormat::Q8)
        EXPECT_NEAR(d[i], 0.25f, 0.25 / 255) << weight_format_name(f);
      else
        EXPECT_EQ(d[i], 0.25f) << weight_format_name(f);
  }
}

TEST(Quant, RefusesMalformedBlocksAndInputs) {
  ThreadPool pool(1);
  float x[16] = {}, y[16] = {};
  const uint8_t codes[64] = {};
  const uint16_t params[16] = {};
  auto kind = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  WeightRef w{codes, WeightFormat::Q4, 2, 8, QuantBlocks{0, 1, params, nullptr, params, nullptr}};
  EXPECT_EQ(kind([&] { linear(x, 1, w, nullptr, y, pool); }), ErrorKind::BadInput);  // group 0
  w.quant.group_size = 3;
  EXPECT_EQ(kind([&] { linear(x, 1, w, nullptr, y, pool); }), ErrorKind::BadInput);  // odd group for 4 bits
  w.quant.group_size = 8;
  w.quant.mins = nullptr;
  EXPECT_EQ(kind([&] { linear(x, 1, w, nullptr, y, pool); }), ErrorKind::BadInput);  // no mins
  w.format = WeightFormat::Lut4;
  EXPECT_EQ(kind([&] { linear(x, 1, w, nullptr, y, pool); }), ErrorKind::BadInput);  // no table
  const float odd[3 * 5] = {};
  EXPECT_EQ(kind([&] { quantize_matrix(odd, 3, 5, WeightFormat::Q4, 4, 1); }), ErrorKind::BadInput);
  const float nan[4] = {0.f, NAN, 0.f, 0.f};
  EXPECT_EQ(kind([&] { quantize_matrix(nan, 1, 4, WeightFormat::Q8, 4, 1); }), ErrorKind::BadInput);
}

}  // namespace
}  // namespace smolvlm
