// Decode products with quantized weights on integer dot products (Precision::Fast). Each row of x is
// rounded to int8 once per product, in blocks of 32 along K (block j: scale d_j = max|x| / 127, codes
// round(x / d_j)); the weight codes are multiplied by those integers exactly (int32 sums, VNNI's
// vpdpbusd on x86), and a fixed float epilogue applies the scales. So the result differs from the
// exact product only by the rounding of x (about 1/254 of each block's largest value), and every
// kernel path and thread count gives the bits of the scalar reference here.
//
// The epilogue, per weight row and row of x, as 16 lanes (the AVX-512 register; the reference spells
// it out): Q8 (one group per row, value = s * (q - z)) takes 64 codes a step, lane l summing codes
// 4l..4l+3 of the step (as uint8 q + 128 times the x code); lanes 0-7 are x block 2c, 8-15 block
// 2c + 1. acc[l] = fma(isum[l], d[block of l], acc[l]); y = fma(-(128 + z), X, hsum(acc)) * s, where X
// = the row's sum (row_sums). Q4 (value = s * q + m, groups of a multiple
// of 64) takes 128 codes a step: lane l sums codes 8l..8l+7 of the step, lanes 0-3 x block 4c, 4-7
// block 4c + 1, ..., lanes 0-7 in the group of code 128c, 8-15 in that of code 128c + 64;
// acc[l] = fma(isum[l] * d[block of l], s[group of l], acc[l]); the min terms m_g * X_g (X_g: the
// group's pair_sums added in order) go to lane g % 16 of a second accumulator, in group order; y =
// hsum(acc + min acc), lane by lane. LUT4 (value = the fp16 entry of the row's table, one table per
// row block, a whole row wide) multiplies by the table rounded to unsigned 6-bit codes instead
// (lut4_codebook: entry_i ~ offset + scale * t_i, t_i in 0..63), in Q4's lanes: lane l sums
// t[nibble] times the x code of each of the step's codes 8l..8l+7; acc[l] = fma(isum[l], d[block of
// l], acc[l]); y = fma(offset, X, hsum(acc) * scale). hsum(v) adds lanes i and i + 8, then i and
// i + 4, i and i + 2, then the two left.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemm.h"

namespace smolvlm {

// Rows of x rounded to int8 (quantize_rows_int8). Codes past K are zero.
struct Int8Rows {
  static constexpr int64_t kBlock = 32;   // x values per scale
  static constexpr int64_t kPadTo = 128;  // k_pad: K rounded up to this (the Q4 step)
  int64_t M = 0, K = 0, k_pad = 0;
  const int8_t* codes = nullptr;         // [M][k_pad] in K order (Q8 rows)
  const int8_t* nibble_codes = nullptr;  // [M][k_pad], each 128 as the even codes of its first 64, of
                                         // its last 64, then the odd ones of each (packed 4-bit rows)
  const float* block_scales = nullptr;   // [M][k_pad / 32]: d_j
  const float* block_sums = nullptr;     // [M][k_pad / 32]: d_j * (sum of block j's codes)
  const float* pair_sums = nullptr;      // [M][k_pad / 64]: block_sums 2i + 2i + 1
  const float* row_sums = nullptr;       // [M]: block_sums added in order
  const float* q8_lane_scales = nullptr;  // [M][k_pad / 4]: per 64 codes, the scale of each Q8 lane
  const int32_t* q8_lane_offsets = nullptr;  // [M][k_pad / 4]: 128 times the sum of each Q8 lane's x codes
  const float* q4_lane_scales = nullptr;  // [M][k_pad / 8]: per 128 codes, the scale of each Q4 lane
};

// One row of x rounded as described above: codes q[0 .. k_pad) (zero past K), and per block of 32
// its scale d_j and d_j times its codes' sum. The reference below; a kernel path may bring its own,
// which must give these bits.
using RoundInt8Row = void (*)(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums);
void round_int8_row_reference(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums);

// Owns the arrays of an Int8Rows and keeps them between products: one 64-byte aligned block, each
// array and each row of x in it starting a cache line, so the kernels' 64-byte loads of x never
// straddle two lines.
class Int8RowsBuffer {
 public:
  // x [M, K] (rows K floats apart), finite values, rounded as described above, each row by `round`.
  Int8Rows quantize(const float* x, int64_t M, int64_t K, RoundInt8Row round = round_int8_row_reference);

 private:
  AlignedBuffer storage_;
};

// Whether the integer product takes this weight: Q8 with one group per row, Q4 with groups of a
// multiple of 64 values, LUT4 with one table a whole row wide (quantize's). Others keep the fp32
// product.
bool int8_gemv_takes(const WeightRef& w);

// y[m * w.rows + n] for rows n in [n0, n1) and every row m of x (+ bias[n] when non-null): the scalar
// reference of the epilogue above. int8_gemv_takes(w) must hold and x.K == w.cols.
void gemv_int8_reference(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);

namespace int8_detail {
// The pieces the vector kernels share with the reference, so both read the parameters alike. Each
// kernel file compiles them for its own instruction set, so they have internal linkage: an
// out-of-line copy one file emits (as unoptimized and sanitizer builds do) must never be the one the
// linker hands another file, which may run on a CPU without that file's instructions.
namespace {

inline int64_t groups_per_row(const WeightRef& w) { return (w.cols + w.quant.group_size - 1) / w.quant.group_size; }
inline int64_t first_block(const WeightRef& w, int64_t n) { return (n / w.quant.block_rows) * groups_per_row(w); }

// The largest code of a LUT4 table: 6 bits, so that four products of a code and an x code (|x| <=
// 127) add in int16 (at most 32004), which spares the 256-bit kernels a widening per 32 codes and,
// being unsigned, a sign per code (SmolVLM-256M LUT4 `fast` decode steps 7-8 % shorter on AVX2 than
// with int8 codes of the table; bench/RESULTS.md). Its cost on a trained model is in the README.
constexpr int kLut4Top = 63;

// A LUT4 table as codes: entry i ~ offset + scale * codes[i].
struct Lut4Codes {
  alignas(16) uint8_t codes[16] = {};
  float scale = 0.f, offset = 0.f;
};

// The LUT4 table lut[0..16) (fp16) as codes t_i = round((lut[i] - lo) * (kLut4Top / (hi - lo))), ties
// to even, lo and hi the smallest and largest entries: scale (hi - lo) / kLut4Top, offset lo (a table
// of equal entries: codes 0, scale 0). A non-finite entry (never in a model) is left out of lo and hi
// and takes code 0, never UB. Every kernel's rows take their table from here or its bits, so all read
// the same integers.
inline void lut4_codebook(const uint16_t* lut, Lut4Codes& out) {
  float v[16], lo = 0.f, hi = 0.f;
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    v[i] = f16_to_f32(lut[i]);
    if (!std::isfinite(v[i])) continue;
    lo = any && lo < v[i] ? lo : v[i];
    hi = any && hi > v[i] ? hi : v[i];
    any = true;
  }
  const float range = hi - lo, inv = range > 0.f ? kLut4Top / range : 0.f;
  for (int i = 0; i < 16; ++i) {
    const float r = std::nearbyint((v[i] - lo) * inv);
    out.codes[i] = r >= 0.f && r <= kLut4Top ? static_cast<uint8_t>(r) : 0;
  }
  out.scale = range / kLut4Top;
  out.offset = lo;
}

// A LUT4 weight's table as codes, converted once for the rows of one block taken in turn by `Convert`
// (lut4_codebook, or a kernel file's own with its bits).
template <void (*Convert)(const uint16_t*, Lut4Codes&)>
struct Lut4CodebookOf : Lut4Codes {
  int64_t block = -1;
  void take(const WeightRef& w, int64_t blk) {
    if (blk == block) return;
    block = blk;
    Convert(w.quant.lut + 16 * blk, *this);
  }
};
using Lut4Codebook = Lut4CodebookOf<lut4_codebook>;

// X_g of group g of a Q4 row (group size a multiple of 64) for row m of x.
inline float group_sum(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t g) {
  const int64_t per_group = w.quant.group_size / 64, pairs = x.k_pad / 64;
  const float* p = x.pair_sums + m * pairs;
  float s = 0.f;
  for (int64_t i = g * per_group; i < (g + 1) * per_group && i < pairs; ++i) s += p[i];
  return s;
}

// Rows [n0, n1) of y for every row of x (+ bias[n] when non-null), each from row(m, n, blk) where blk
// is the row's first parameter set: the loop of the kernels that take one weight row and one row of x
// at a time.
template <class Row>
inline void for_each_output(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0,
                            int64_t n1, Row row) {
  const int64_t groups = groups_per_row(w);
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t blk = w.quant.block_rows == 1 ? n * groups : first_block(w, n);
    for (int64_t m = 0; m < x.M; ++m) {
      const float r = row(m, n, blk);
      y[m * w.rows + n] = bias ? r + bias[n] : r;
    }
  }
}

// A Q4 row's fp16 scales and mins are two more streams beside its codes', 2 bytes each per 64 codes:
// where a pass requests its codes `code_bytes_ahead` on, it requests the parameters of the row as far
// on (the next row at least). Measured with the four streams of row_streams; the 256-bit one-stream
// passes, whose RowRequests asks for the range's first 16 KB of parameters at once, request the rest
// this way too. Left to the prefetchers, the 256M model's Q4 products from memory on Zen 5 took 1.5-2x
// their LUT4 ones, 1.4x in cache (bench/RESULTS.md). blk is the row's first parameter set.
inline void request_q4_parameters(const WeightRef& w, int64_t blk, int64_t code_bytes_ahead) {
  const int64_t rows_ahead = code_bytes_ahead / (w.cols / 2);
  const int64_t at = blk + (rows_ahead > 1 ? rows_ahead : 1) * groups_per_row(w);
  __builtin_prefetch(w.quant.scales + at, 0, 3);
  __builtin_prefetch(w.quant.mins + at, 0, 3);
}

// The weight rows the x86 integer products request ahead of them over rows [n0, n1): the row about
// 9 KB on, a line each 64-byte step where rows are whole lines (ahead() says where), else the whole
// row before its pass (SmolVLM-256M's q4: 288-byte rows); the first rows in one burst when built.
// One stream per thread is limited by the lines the hardware keeps in flight (bench/RESULTS.md: the
// avx512 q8 token 56 -> 49 ms, the avx2 path's HY-MT decode 1.3-1.9x with the requests). Q4's fp16
// scales and mins, two more arrays, are requested for the range's first rows when built (up to 16 KB
// of each; all of a SmolVLM-256M range): each call's first rows had waited on them, a fifth of the
// 256M q4 products' samples on those two loads.
class RowRequests {
 public:
  RowRequests(const WeightRef& w, int64_t n0, int64_t n1)
      : base_(static_cast<const char*>(w.data)),
        row_bytes_(w.format == WeightFormat::Q8 ? w.cols : w.cols / 2),
        ahead_rows_((kBytesAhead + row_bytes_ - 1) / row_bytes_),
        n1_(n1) {
    for (int64_t n = n0; n < n1 && n < n0 + ahead_rows_; ++n) request_row(n);
    if (w.format == WeightFormat::Q4 && w.quant.block_rows == 1 && n0 < n1) {
      const int64_t first = n0 * groups_per_row(w), count = (n1 - n0) * groups_per_row(w);
      const int64_t bytes = count * 2 < kParameterBytes ? count * 2 : kParameterBytes;
      request_bytes(w.quant.scales + first, bytes);
      request_bytes(w.quant.mins + first, bytes);
    }
  }
  // For a pass over rows [n, n + rows): the row whose lines the pass requests a step at a time, or
  // null (none left to request, or rows that are not whole lines, requested whole here instead).
  const char* ahead(int64_t n, int64_t rows = 1) const {
    if (n + ahead_rows_ + rows > n1_) return nullptr;
    if (row_bytes_ % 64 == 0) return base_ + (n + ahead_rows_) * row_bytes_;
    for (int64_t i = 0; i < rows; ++i) request_row(n + ahead_rows_ + i);
    return nullptr;
  }
  // ahead(n, rows) as bytes past row n's own (the same for each row of the pass), 0 for null.
  int64_t ahead_bytes(int64_t n, int64_t rows = 1) const {
    const char* p = ahead(n, rows);
    return p ? p - (base_ + n * row_bytes_) : 0;
  }

 private:
  static constexpr int64_t kBytesAhead = 9216, kParameterBytes = 16384;
  void request_row(int64_t n) const {
    for (int64_t b = n * row_bytes_; b < (n + 1) * row_bytes_; b += 64) __builtin_prefetch(base_ + b, 0, 3);
  }
  // The lines of [p, p + bytes), the last partial one included.
  static void request_bytes(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (int64_t b = 0; b < bytes + 63; b += 64) __builtin_prefetch(c + b, 0, 3);
  }
  const char* base_;
  int64_t row_bytes_, ahead_rows_, n1_;
};

}  // namespace
}  // namespace int8_detail

}  // namespace smolvlm
