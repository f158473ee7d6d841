// NEON kernels of linear() (Armv8.0 Advanced SIMD, the baseline of every aarch64 CPU): an 8x12 micro
// kernel (24 accumulators of 4 lanes, x packed in 8-row tiles, weight panels of 12 features packed
// as fp32: BF16 by a shift, F16 by the exact fcvtl conversion, quantized weights by the exact
// dequantization of kernels/quant.h) and a streaming GEMV for decode. The summation order follows
// gemm_kernels.h: each output element is a k-order FMA chain per K block, blocks added in order, so
// results do not depend on the thread count.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu.h"
#include "kernels/gemm_kernels.h"
#include "kernels/quant.h"
#include "kernels/vec_math_neon.h"

namespace smolvlm::gemm {
namespace {

constexpr int kMr = 8, kNr = 12, kKc = 256, kGemvMaxM = 4;

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// 4 consecutive weight elements starting at element `idx`, as fp32 (both conversions exact).
template <WeightFormat FMT>
inline float32x4_t load4(const void* base, int64_t idx) {
  if constexpr (FMT == WeightFormat::BF16) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const uint16_t*>(base) + idx), 16));
  } else if constexpr (FMT == WeightFormat::F16) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(base) + idx)));
  } else {
    return vld1q_f32(static_cast<const float*>(base) + idx);
  }
}

template <WeightFormat FMT>
inline float load1(const void* base, int64_t idx) {
  if constexpr (FMT == WeightFormat::BF16) {
    const uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[idx]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else if constexpr (FMT == WeightFormat::F16) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(static_cast<const uint16_t*>(base)[idx]))), 0);
  } else {
    return static_cast<const float*>(base)[idx];
  }
}

template <WeightFormat FMT>
constexpr int64_t weight_bytes() {
  return FMT == WeightFormat::F32 ? 4 : 2;
}

// Calls fn.template operator()<FMT>() for a dense weight format; quantized formats go to `quant`.
template <typename Fn, typename Quant>
inline void with_format(WeightFormat format, Fn&& fn, Quant&& quant) {
  switch (format) {
    case WeightFormat::F32: fn.template operator()<WeightFormat::F32>(); return;
    case WeightFormat::F16: fn.template operator()<WeightFormat::F16>(); return;
    case WeightFormat::BF16: fn.template operator()<WeightFormat::BF16>(); return;
    case WeightFormat::Q8:
    case WeightFormat::Q4:
    case WeightFormat::Lut4: quant(); return;
  }
  refuse_weight_format(format);
}

// In-place transpose of a 4x4 fp32 block (row i -> column i).
inline void transpose4x4(float32x4_t r[4]) {
  const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
  const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
  r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
  r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

// Packs 4 weight rows [row0, row0+4) x [k0, k0+kc) into dst[k*kNr + i] (i = row - row0); rows at or
// past w.rows are zeros.
template <WeightFormat FMT>
inline void pack_rows4(const WeightRef& w, int64_t row0, int64_t k0, int64_t kc, float* dst) {
  const int64_t K = w.cols, valid = w.rows - row0;
  if (valid >= 4) {
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
      float32x4_t r[4];
      for (int i = 0; i < 4; ++i) r[i] = load4<FMT>(w.data, (row0 + i) * K + k0 + k);
      transpose4x4(r);
      for (int i = 0; i < 4; ++i) vst1q_f32(dst + (k + i) * kNr, r[i]);
    }
    for (; k < kc; ++k)
      for (int i = 0; i < 4; ++i) dst[k * kNr + i] = load1<FMT>(w.data, (row0 + i) * K + k0 + k);
    return;
  }
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t i = 0; i < 4; ++i) dst[k * kNr + i] = i < valid ? load1<FMT>(w.data, (row0 + i) * K + k0 + k) : 0.f;
}

// ---- Quantized weights: the values of dequantize_row() (kernels/quant.h), group by group ----

// One group's parameters as fp32, converted once for its values.
struct QuantParams {
  float scale = 0.f, offset = 0.f;  // Q8: scale, zero point; Q4: scale, min
  float lut[16] = {};               // Lut4
};

QuantParams quant_params(const WeightRef& w, int64_t block) {
  const QuantBlocks& b = w.quant;
  QuantParams q;
  if (w.format == WeightFormat::Lut4) {
    for (int i = 0; i < 16; ++i) q.lut[i] = f16_to_f32(b.lut[block * 16 + i]);
  } else {
    q.scale = f16_to_f32(b.scales[block]);
    q.offset = w.format == WeightFormat::Q4 ? f16_to_f32(b.mins[block]) : b.zero_points ? float(b.zero_points[block]) : 0.f;
  }
  return q;
}

// Value k of a row, exactly as dequantize_row(): Q8 scale * (q - z) (q - z exact), Q4 scale * q + min
// (the product exact: an fp16 scale times 4 bits), Lut4 the stored entry.
template <WeightFormat FMT>
inline float quant_value(const void* row, const QuantParams& q, int64_t k) {
  if constexpr (FMT == WeightFormat::Q8) {
    return q.scale * (float(static_cast<const int8_t*>(row)[k]) - q.offset);
  } else if constexpr (FMT == WeightFormat::Q4) {
    return q.scale * float(code4(static_cast<const uint8_t*>(row), k)) + q.offset;
  } else {
    return q.lut[code4(static_cast<const uint8_t*>(row), k)];
  }
}

// Values [k, k + 16) of a row (k even for the 4-bit formats) into out, the values of quant_value().
template <WeightFormat FMT>
inline void quant_values16(const void* row, const QuantParams& q, int64_t k, float* out) {
  if constexpr (FMT == WeightFormat::Q8) {
    const int8x16_t c = vld1q_s8(static_cast<const int8_t*>(row) + k);
    const int16x8_t z = vdupq_n_s16(int16_t(q.offset));
    const int16x8_t lo = vsubq_s16(vmovl_s8(vget_low_s8(c)), z), hi = vsubq_s16(vmovl_s8(vget_high_s8(c)), z);
    const int16x8_t h[2] = {lo, hi};
    for (int i = 0; i < 2; ++i) {
      vst1q_f32(out + 8 * i, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(h[i]))), q.scale));
      vst1q_f32(out + 8 * i + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(h[i]))), q.scale));
    }
  } else {
    const uint8x8_t b = vld1_u8(static_cast<const uint8_t*>(row) + k / 2);
    const uint8x16_t c = vcombine_u8(vzip1_u8(vand_u8(b, vdup_n_u8(0x0f)), vshr_n_u8(b, 4)),
                                     vzip2_u8(vand_u8(b, vdup_n_u8(0x0f)), vshr_n_u8(b, 4)));
    if constexpr (FMT == WeightFormat::Q4) {
      const uint16x8_t h[2] = {vmovl_u8(vget_low_u8(c)), vmovl_u8(vget_high_u8(c))};
      const float32x4_t scale = vdupq_n_f32(q.scale), offset = vdupq_n_f32(q.offset);
      for (int i = 0; i < 2; ++i) {  // one rounding of the exact product plus the min, fused or not
        vst1q_f32(out + 8 * i, vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_low_u16(h[i]))), scale));
        vst1q_f32(out + 8 * i + 4, vfmaq_f32(offset, vcvtq_f32_u32(vmovl_u16(vget_high_u16(h[i]))), scale));
      }
    } else {
      uint8_t codes[16];
      vst1q_u8(codes, c);
      for (int i = 0; i < 16; ++i) out[i] = q.lut[codes[i]];
    }
  }
}

// Values [k0, k0 + count) of row n: each group's parameters converted once, 16 values at a time,
// the group's tail one by one (a 4-bit group starts on an even column: quant.h refuses odd groups).
// The reference (dequantize_row) finds the block and converts its fp16 parameters per value.
template <WeightFormat FMT>
void dequantize_segment(const WeightRef& w, int64_t n, int64_t k0, int64_t count, float* out) {
  const int64_t G = w.quant.group_size, groups = (w.cols + G - 1) / G;
  const int64_t first_block = (n / w.quant.block_rows) * groups;
  const void* row = FMT == WeightFormat::Q8 ? static_cast<const void*>(static_cast<const int8_t*>(w.data) + n * w.cols)
                                            : static_cast<const void*>(static_cast<const uint8_t*>(w.data) + n * w.cols / 2);
  for (int64_t k = k0; k < k0 + count;) {
    const int64_t g = k / G, end = min_i64(k0 + count, (g + 1) * G);
    const QuantParams q = quant_params(w, first_block + g);
    for (; k + 16 <= end; k += 16) quant_values16<FMT>(row, q, k, out + (k - k0));
    for (; k < end; ++k) out[k - k0] = quant_value<FMT>(row, q, k);
  }
}

// Quantized weights: 4 rows' K blocks dequantized (dequantize_segment), then turned 4 x 4 at a time
// into the panel.
template <WeightFormat FMT>
void pack_b_quant(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  float rows[4][kKc];
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t g = 0; g < kNr; g += 4) {
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t n = n0 + p * kNr + g + i;
        if (n < w.rows)
          dequantize_segment<FMT>(w, n, k0, kc, rows[i]);
        else
          std::memset(rows[i], 0, sizeof(float) * size_t(kc));
      }
      float* d = dst + p * kc * kNr + g;
      int64_t k = 0;
      for (; k + 4 <= kc; k += 4) {
        float32x4_t r[4];
        for (int i = 0; i < 4; ++i) r[i] = vld1q_f32(rows[i] + k);
        transpose4x4(r);
        for (int i = 0; i < 4; ++i) vst1q_f32(d + (k + i) * kNr, r[i]);
      }
      for (; k < kc; ++k)
        for (int i = 0; i < 4; ++i) d[k * kNr + i] = rows[i][k];
    }
}

void pack_b(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  with_format(
      w.format,
      [&]<WeightFormat FMT>() {
        for (int64_t p = 0; p < panels; ++p)
          for (int g = 0; g < kNr / 4; ++g) pack_rows4<FMT>(w, n0 + p * kNr + g * 4, k0, kc, dst + p * kc * kNr + g * 4);
      },
      [&] { with_quant_format(w.format, [&]<WeightFormat FMT>() { pack_b_quant<FMT>(w, n0, panels, k0, kc, dst); }); });
}

// One 8-row tile of x as dst[k*8 + r], zero rows past `rows`.
void pack_a(const float* x, int64_t ldx, int64_t rows, int64_t kc, float* dst) {
  int64_t k = 0;
  for (; k + 4 <= kc; k += 4)
    for (int h = 0; h < 2; ++h) {
      float32x4_t r[4];
      for (int i = 0; i < 4; ++i) {
        const int64_t row = h * 4 + i;
        r[i] = row < rows ? vld1q_f32(x + row * ldx + k) : vdupq_n_f32(0.f);
      }
      transpose4x4(r);
      for (int j = 0; j < 4; ++j) vst1q_f32(dst + (k + j) * kMr + h * 4, r[j]);
    }
  for (; k < kc; ++k)
    for (int i = 0; i < kMr; ++i) dst[k * kMr + i] = i < rows ? x[i * ldx + k] : 0.f;
}

// c[8][12] = (accumulate ? c : 0) + a[kc][8] · b[kc][12] (+ bias[12]), a and b packed. The K sum
// runs in registers in k order; the old value of c is added after it.
void micro_8x12(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, bool accumulate,
                const float* bias) {
  float32x4_t acc[kMr][3];
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = acc[i][2] = vdupq_n_f32(0.f);
  for (int64_t k = 0; k < kc; ++k) {
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
#define SMOLVLM_NEON_ROW(i, av, lane)                    \
  acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, av, lane); \
  acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, av, lane); \
  acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, av, lane);
    SMOLVLM_NEON_ROW(0, a0, 0)
    SMOLVLM_NEON_ROW(1, a0, 1)
    SMOLVLM_NEON_ROW(2, a0, 2)
    SMOLVLM_NEON_ROW(3, a0, 3)
    SMOLVLM_NEON_ROW(4, a1, 0)
    SMOLVLM_NEON_ROW(5, a1, 1)
    SMOLVLM_NEON_ROW(6, a1, 2)
    SMOLVLM_NEON_ROW(7, a1, 3)
#undef SMOLVLM_NEON_ROW
    a += kMr;
    b += kNr;
  }
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    for (int j = 0; j < 3; ++j) {
      float32x4_t v = acc[i][j];
      if (accumulate) v = vaddq_f32(vld1q_f32(ci + 4 * j), v);
      if (bias) v = vaddq_f32(v, vld1q_f32(bias + 4 * j));
      vst1q_f32(ci + 4 * j, v);
    }
  }
}

// One tile of any shape: full tiles go straight to y; partial ones run the same micro kernel on a
// padded copy, so every element sees the same arithmetic.
void tile(const float* a, const float* b, int64_t kc, float* y, int64_t ldy, int64_t mv, int64_t nv, bool accumulate,
          const float* bias) {
  if (mv == kMr && nv == kNr) return micro_8x12(a, b, kc, y, ldy, accumulate, bias);
  alignas(64) float c[kMr * kNr];
  alignas(64) float bias_pad[kNr];
  for (int i = 0; i < kMr; ++i)
    for (int j = 0; j < kNr; ++j) c[i * kNr + j] = (accumulate && i < mv && j < nv) ? y[i * ldy + j] : 0.f;
  if (bias)
    for (int j = 0; j < kNr; ++j) bias_pad[j] = j < nv ? bias[j] : 0.f;
  micro_8x12(a, b, kc, c, kNr, accumulate, bias ? bias_pad : nullptr);
  for (int64_t i = 0; i < mv; ++i)
    for (int64_t j = 0; j < nv; ++j) y[i * ldy + j] = c[i * kNr + j];
}

// Panels outer (one packed weight panel stays in L1), 8-row tiles of packed x inner.
void macro(const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride, int64_t n_valid,
           int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias) {
  const int64_t panels = (n_valid + kNr - 1) / kNr;
  for (int64_t p = 0; p < panels; ++p) {
    const float* b = packed_b + p * b_panel_stride;
    const int64_t nv = min_i64(kNr, n_valid - p * kNr);
    const float* bias_p = bias ? bias + p * kNr : nullptr;
    for (int64_t i = 0; i < mc; i += kMr)
      tile(packed_a + i * kc, b, kc, y + p * kNr + i * ldy, ldy, min_i64(kMr, mc - i), nv, accumulate, bias_p);
  }
}

// x · w[0..K) with the row read once, front to back: four 4-lane partial sums over 16-element steps,
// then 4-element steps into the first, a fixed reduction, then the scalar tail. The same operations
// for every row, M, range and thread.
struct DotState {
  float32x4_t a0, a1, a2, a3;
  float tail;
};

template <WeightFormat FMT>
inline void dot_accumulate(DotState& s, const float* x, const void* w, int64_t offset, int64_t K) {
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    s.a0 = vfmaq_f32(s.a0, vld1q_f32(x + k), load4<FMT>(w, offset + k));
    s.a1 = vfmaq_f32(s.a1, vld1q_f32(x + k + 4), load4<FMT>(w, offset + k + 4));
    s.a2 = vfmaq_f32(s.a2, vld1q_f32(x + k + 8), load4<FMT>(w, offset + k + 8));
    s.a3 = vfmaq_f32(s.a3, vld1q_f32(x + k + 12), load4<FMT>(w, offset + k + 12));
  }
  for (; k + 4 <= K; k += 4) s.a0 = vfmaq_f32(s.a0, vld1q_f32(x + k), load4<FMT>(w, offset + k));
  for (; k < K; ++k) s.tail += x[k] * load1<FMT>(w, offset + k);
}

inline DotState dot_start() {
  const float32x4_t z = vdupq_n_f32(0.f);
  return {z, z, z, z, 0.f};
}

inline float dot_finish(const DotState& s) {
  return vec::hsum4(vaddq_f32(vaddq_f32(s.a0, s.a1), vaddq_f32(s.a2, s.a3))) + s.tail;
}

// Requests every cache line of `bytes` bytes at p.
inline void prefetch_bytes(const void* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + b);
}

// Rows [n0, n1) of y for M rows of x, each weight row read front to back (one sequential stream per
// thread), requested about 9 KB ahead; rows of x after the first reuse the weight row from L1.
template <WeightFormat FMT>
void gemv_dense(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows, row_bytes = K * weight_bytes<FMT>();
  const int64_t ahead = (9216 + row_bytes - 1) / row_bytes;
  const char* base = static_cast<const char*>(w.data);
  for (int64_t n = n0; n < min_i64(n1, n0 + ahead); ++n) prefetch_bytes(base + n * row_bytes, row_bytes);
  for (int64_t n = n0; n < n1; ++n) {
    if (n + ahead < n1) prefetch_bytes(base + (n + ahead) * row_bytes, row_bytes);
    for (int64_t m = 0; m < M; ++m) {
      DotState s = dot_start();
      dot_accumulate<FMT>(s, x + m * K, w.data, n * K, K);
      const float v = dot_finish(s);
      y[m * N + n] = bias ? v + bias[n] : v;
    }
  }
}

// Quantized weights: each row dequantized exactly (dequantize_segment) in fixed chunks into fp32, then
// the same dot as the dense rows; the chunking depends on K only, so every row, range and thread
// sums in the same order.
void gemv_quant(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  constexpr int64_t kChunk = 1024;
  float row[kChunk];
  const int64_t K = w.cols, N = w.rows;
  for (int64_t n = n0; n < n1; ++n) {
    DotState s[kGemvMaxM];
    for (int64_t m = 0; m < M; ++m) s[m] = dot_start();
    for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
      const int64_t len = min_i64(kChunk, K - k0);
      with_quant_format(w.format, [&]<WeightFormat FMT>() { dequantize_segment<FMT>(w, n, k0, len, row); });
      for (int64_t m = 0; m < M; ++m) dot_accumulate<WeightFormat::F32>(s[m], x + m * K + k0, row, 0, len);
    }
    for (int64_t m = 0; m < M; ++m) {
      const float v = dot_finish(s[m]);
      y[m * N + n] = bias ? v + bias[n] : v;
    }
  }
}

void gemv(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  with_format(
      w.format, [&]<WeightFormat FMT>() { gemv_dense<FMT>(x, M, w, bias, y, n0, n1); },
      [&] { gemv_quant(x, M, w, bias, y, n0, n1); });
}

GemmKernels make_kernels() {
  GemmKernels k{"neon", kMr, kNr, kKc, kGemvMaxM, pack_b, pack_a, macro, gemv};
  const bool dotprod = cpu_features().dotprod;
  k.gemv_int8 = dotprod ? gemv_int8_dotprod : gemv_int8_neon;
  k.int8_name = dotprod ? "neon-dotprod int8" : "neon int8";
  return k;
}

const GemmKernels kKernels = make_kernels();

}  // namespace

const GemmKernels& gemm_kernels_neon() { return kKernels; }

}  // namespace smolvlm::gemm
