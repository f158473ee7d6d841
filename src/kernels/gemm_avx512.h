// AVX-512 building blocks shared by the fp32 products (gemm_avx512.cpp) and the bf16 products of
// Precision::Fast (gemm_bf16_avx512.cpp): the blocking, the micro kernels' tile store, the decoding of
// quantized values and the packing of quantized weights. Internal linkage, as gemm_simd.h: include
// only from files built with AVX-512.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/gemm_simd.h"

// GCC 12 reports the intrinsics' own "undefined" pass-through operands (in _mm512_reduce_add_ps, in
// arrays of vectors as in the four-row products) as uninitialized; they are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace smolvlm::gemm {
namespace {

constexpr int kMr = 8, kNr = 32, kKc = 256;

// The micro kernels' tile of y is read after their K loop: start fetching it before (from L3 or
// memory on big M).
[[gnu::always_inline]] inline void prefetch_tile(const float* c, int64_t ldc) {
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNr - 1), _MM_HINT_T0);
  }
}

// c = (accumulate ? c : 0) + acc (+ bias): the old c added after the K block's sum, then the bias.
[[gnu::always_inline]] inline void store_tile(const __m512 (&acc)[kMr][2], float* c, int64_t ldc, bool accumulate, const float* bias) {
  const __m512 bias0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (accumulate) {
      v0 = _mm512_add_ps(_mm512_loadu_ps(ci), v0);
      v1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), v1);
    }
    if (bias) {
      v0 = _mm512_add_ps(v0, bias0);
      v1 = _mm512_add_ps(v1, bias1);
    }
    _mm512_storeu_ps(ci, v0);
    _mm512_storeu_ps(ci + 16, v1);
  }
}

// The sum of v's 16 lanes as a tree: lanes i and i+8, then i and i+4, i and i+2, i and i+1. Spelled
// out (not _mm512_reduce_add_ps, whose order is the compiler's) so that sum4 below, which reduces four
// vectors at once in fewer instructions, gives each of them exactly this result.
inline float sum16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// sum16 of v0..v3 into out[0..3], the same pairs of lanes added in the same order.
inline void sum4(__m512 v0, __m512 v1, __m512 v2, __m512 v3, float* out) {
  // [v0.lo8 | v1.lo8] + [v0.hi8 | v1.hi8]: lanes i and i+8 of both.
  const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xee));
  const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x44), _mm512_shuffle_f32x4(v2, v3, 0xee));
  // 128-bit chunks [v0a v0b v1a v1b] and [v2a v2b v3a v3b]: a + b of each vector (lanes i and i+4).
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xdd));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, 0x4e));  // lanes i and i+2
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, 0xb1));  // lanes i and i+1
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s1);
  out[0] = lanes[0], out[1] = lanes[4], out[2] = lanes[8], out[3] = lanes[12];
}

// 16 consecutive 4-bit codes from 8 bytes (low nibble first) as int32 lanes.
inline __m512i codes4x16(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
}

// The 512-bit decoding of 16 quantized values; a LUT4 table is one register, read by one permute.
template <WeightFormat FMT>
struct QuantDecoder16 {
  __m512 scale, offset, lut;
  explicit QuantDecoder16(const QuantGroup& g) {
    if constexpr (FMT == WeightFormat::Lut4) {
      lut = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.lut)));
    } else {
      scale = _mm512_set1_ps(g.scale);
      offset = _mm512_set1_ps(FMT == WeightFormat::Q8 ? q8_offset(g) : g.offset);
    }
  }
  __m512 load(const void* row, int64_t k) const {
    if constexpr (FMT == WeightFormat::Q8) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(row) + k)));
      return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(q), offset);  // exact: see q8_offset
    } else if constexpr (FMT == WeightFormat::Q4) {
      return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(codes4x16(static_cast<const uint8_t*>(row) + k / 2)), offset);
    } else {
      return _mm512_permutexvar_ps(codes4x16(static_cast<const uint8_t*>(row) + k / 2), lut);
    }
  }
};

// r[i] = column i of the 16 x 16 matrix of 32-bit values whose row i was r[i]: pairs of rows
// interleaved by 32 and 64 bits within each 128-bit lane, then the lanes gathered by two shuffles.
inline void transpose16x16(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // u[4i + c], lane L: rows 4i..4i+3 of column 4L + c
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44), w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
  }
}

// Columns [0, count) of 16 rows of 32-bit values (row i at rows + i * ld, 64-byte aligned) into a
// panel, dst[c * kNr + i]: 16 columns at a time by one transpose, the last ones one by one.
inline void turn_rows16(const void* rows, int64_t ld, int64_t count, void* dst) {
  const char* src = static_cast<const char*>(rows);
  char* out = static_cast<char*>(dst);
  int64_t c = 0;
  for (; c + 16 <= count; c += 16) {
    __m512i r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(src + 4 * (i * ld + c));
    transpose16x16(r);
    for (int j = 0; j < 16; ++j) _mm512_storeu_si512(out + 4 * (c + j) * kNr, r[j]);
  }
  for (; c < count; ++c)
    for (int i = 0; i < 16; ++i) std::memcpy(out + 4 * (c * kNr + i), src + 4 * (i * ld + c), 4);
}

// Values [k0, k0 + kc) of 16 weight rows from `first` into rows[i][0..kc), 16 at a time as
// QuantDecoder16 gives them (the values dequantize_row() computes), each group's tail one by one (a
// 4-bit group starts on an even column: quant.h refuses odd groups); rows past the weight are zero.
template <WeightFormat FMT>
void decode_rows16(const WeightRef& w, int64_t first, int64_t k0, int64_t kc, float (*rows)[kKc]) {
  const int64_t G = w.quant.group_size, groups = (w.cols + G - 1) / G;
  for (int64_t i = 0; i < 16; ++i) {
    const int64_t n = first + i;
    float* out = rows[i];
    if (n >= w.rows) {
      std::fill(out, out + kc, 0.f);
      continue;
    }
    const void* row = quant_row<FMT>(w, n);
    const int64_t first_block = (n / w.quant.block_rows) * groups;
    for (int64_t k = k0; k < k0 + kc;) {
      const int64_t g = k / G, end = std::min(k0 + kc, (g + 1) * G);
      const QuantGroup q = quant_group(w, first_block + g);
      const QuantDecoder16<FMT> decoder(q);
      for (; k + 16 <= end; k += 16) _mm512_storeu_ps(out + (k - k0), decoder.load(row, k));
      for (; k < end; ++k) out[k - k0] = quant_value<FMT>(row, q, k);
    }
  }
}

}  // namespace
}  // namespace smolvlm::gemm
