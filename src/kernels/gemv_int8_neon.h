// The integer decode products of kernels/gemv_int8.h on 128-bit NEON registers, shared by the Armv8.0
// file (gemv_int8_neon.cpp: widening multiplies and pairwise adds) and the dotprod one
// (gemv_int8_dotprod.cpp: sdot): the reference's 16 lanes as four 4-lane quarters (lanes 4j..4j+3
// from bytes 16j..16j+15 of a step), each lane's int32 sum exact whichever instructions make it, then
// the same float epilogue lane for lane, so the bits are the scalar reference's.
// Included by those two files only, each compiling it for its own instruction set: everything here
// has internal linkage, so no copy built for one set stands in for the other's.
//
// `Lanes` supplies the integer sums, four int32 lanes from 16 bytes:
//   Lanes::q8(codes, xq): lane l sums codes 4l..4l+3 (signed q) times their x codes;
//   Lanes::q4(bytes, x_even, x_odd): lane l sums bytes 4l..4l+3, each byte's low nibble times its x
//   code in x_even and its high nibble times the one in x_odd;
//   Lanes::lut4(bytes, table, x_even, x_odd): as q4, each nibble looked up in `table` (the 16 codes
//   of a LUT4 table, 0..kLut4Top) first.
// The reference's Q8 lane, sum (q + 128) x, is q8 plus the lane's q8_lane_offsets (128 times its x
// codes' sum, taken once per row of x), exact in int32.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/gemv_int8.h"

namespace smolvlm::gemm {
namespace {

// Lanes i and i + 8, then i and i + 4, i and i + 2, then the two left (gemv_int8.h).
inline float hsum16(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3) {
  const float32x4_t a4 = vaddq_f32(vaddq_f32(a0, a2), vaddq_f32(a1, a3));
  const float32x2_t a2l = vadd_f32(vget_low_f32(a4), vget_high_f32(a4));
  return vget_lane_f32(a2l, 0) + vget_lane_f32(a2l, 1);
}

// The 16 bytes at `i` of a row of `end` bytes, those at or past `end` read as zero.
inline int8x16_t load_codes(const void* row, int64_t i, int64_t end) {
  const int8_t* p = static_cast<const int8_t*>(row) + i;
  if (i + 16 <= end) return vld1q_s8(p);
  int8_t tail[16] = {};
  for (int64_t k = i; k < end; ++k) tail[k - i] = p[k - i];
  return vld1q_s8(tail);
}

inline float half_to_float(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// Row n of a Q8 weight for row m of x.
template <class Lanes>
float q8_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n, int64_t blk) {
  const int64_t K = w.cols;
  const int8_t* xq = x.codes + m * x.k_pad;
  const float* d = x.q8_lane_scales + m * (x.k_pad / 4);
  const int32_t* offsets = x.q8_lane_offsets + m * (x.k_pad / 4);
  const int8_t* row = static_cast<const int8_t*>(w.data) + n * K;
  float32x4_t acc[4] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
  for (int64_t c = 0; c < x.k_pad / 64; ++c)
    for (int j = 0; j < 4; ++j) {
      const int64_t k = 64 * c + 16 * j;
      const int8x16_t xc = vld1q_s8(xq + k);
      const int32x4_t isum = vaddq_s32(Lanes::q8(load_codes(row, k, K), xc), vld1q_s32(offsets + k / 4));
      acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(isum), vld1q_f32(d + 16 * c + 4 * j));
    }
  const float s = half_to_float(w.quant.scales[blk]);
  const int32_t z = w.quant.zero_points ? w.quant.zero_points[blk] : 0;
  const float sum = hsum16(acc[0], acc[1], acc[2], acc[3]);
  const float centred = __builtin_fmaf(-static_cast<float>(128 + z), x.row_sums[m], sum);
  return centred * s;
}

// Row n of a Q4 weight for row m of x.
template <class Lanes>
float q4_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n, int64_t blk) {
  const int64_t row_bytes = w.cols / 2, K = w.cols, G = w.quant.group_size;
  const int64_t groups = int8_detail::groups_per_row(w);
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * row_bytes;
  float32x4_t acc[4] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
  for (int64_t c = 0; c < x.k_pad / 128; ++c) {
    // Lanes 0-7 in the group of code 128c, 8-15 in that of code 128c + 64 (0 past K).
    const int64_t code = 128 * c;
    const float32x4_t s0 = vdupq_n_f32(half_to_float(w.quant.scales[blk + code / G]));
    const float32x4_t s1 = vdupq_n_f32(code + 64 < K ? half_to_float(w.quant.scales[blk + (code + 64) / G]) : 0.f);
    const int8_t* xc = xq + 128 * c;
    for (int j = 0; j < 4; ++j) {
      const uint8x16_t bytes = vreinterpretq_u8_s8(load_codes(row, 64 * c + 16 * j, row_bytes));
      const int32x4_t isum = Lanes::q4(bytes, vld1q_s8(xc + 16 * j), vld1q_s8(xc + 64 + 16 * j));
      const float32x4_t f = vmulq_f32(vcvtq_f32_s32(isum), vld1q_f32(d + 16 * c + 4 * j));
      acc[j] = vfmaq_f32(acc[j], f, j < 2 ? s0 : s1);
    }
  }
  // m_g * X_g into lane g % 16, in group order.
  float32x4_t min_acc[4] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
  for (int64_t g0 = 0; g0 < groups; g0 += 16) {
    float sums[16] = {}, mins[16] = {};
    for (int64_t i = 0; i < 16 && g0 + i < groups; ++i) {
      sums[i] = int8_detail::group_sum(x, m, w, g0 + i);
      mins[i] = half_to_float(w.quant.mins[blk + g0 + i]);
    }
    for (int j = 0; j < 4; ++j) min_acc[j] = vfmaq_f32(min_acc[j], vld1q_f32(mins + 4 * j), vld1q_f32(sums + 4 * j));
  }
  for (int j = 0; j < 4; ++j) acc[j] = vaddq_f32(acc[j], min_acc[j]);
  return hsum16(acc[0], acc[1], acc[2], acc[3]);
}

// Row n of a LUT4 weight for row m of x, its table in `codebook`.
template <class Lanes>
float lut4_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n, const int8_detail::Lut4Codebook& codebook) {
  const int64_t row_bytes = w.cols / 2;
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * row_bytes;
  const int8x16_t table = vreinterpretq_s8_u8(vld1q_u8(codebook.codes));
  float32x4_t acc[4] = {vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f), vdupq_n_f32(0.f)};
  for (int64_t c = 0; c < x.k_pad / 128; ++c) {
    const int8_t* xc = xq + 128 * c;
    for (int j = 0; j < 4; ++j) {
      const uint8x16_t bytes = vreinterpretq_u8_s8(load_codes(row, 64 * c + 16 * j, row_bytes));
      const int32x4_t isum = Lanes::lut4(bytes, table, vld1q_s8(xc + 16 * j), vld1q_s8(xc + 64 + 16 * j));
      acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(isum), vld1q_f32(d + 16 * c + 4 * j));
    }
  }
  return std::fma(codebook.offset, x.row_sums[m], hsum16(acc[0], acc[1], acc[2], acc[3]) * codebook.scale);
}

// Rows [n0, n1) of y for every row of x (the signature of GemmKernels::gemv_int8).
template <class Lanes>
void gemv_int8_128(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  int8_detail::Lut4Codebook codebook;
  if (w.format == WeightFormat::Q8)
    int8_detail::for_each_output(x, w, bias, y, n0, n1,
                                 [&](int64_t m, int64_t n, int64_t blk) { return q8_row<Lanes>(x, m, w, n, blk); });
  else if (w.format == WeightFormat::Q4)
    int8_detail::for_each_output(x, w, bias, y, n0, n1,
                                 [&](int64_t m, int64_t n, int64_t blk) { return q4_row<Lanes>(x, m, w, n, blk); });
  else
    int8_detail::for_each_output(x, w, bias, y, n0, n1, [&](int64_t m, int64_t n, int64_t blk) {
      codebook.take(w, blk);
      return lut4_row<Lanes>(x, m, w, n, codebook);
    });
}

}  // namespace
}  // namespace smolvlm::gemm
