// The integer decode products of kernels/gemv_int8.h on AVX-512 VNNI: vpdpbusd multiplies 64 weight
// codes (unsigned bytes) by 64 x codes (signed bytes) into 16 int32 lanes, 4 products each, exactly;
// the float epilogue is the one gemv_int8.h spells out, lane for lane, so the bits are the scalar
// reference's. Only called where the CPU has avx512_vnni (gemm.cpp checks).
#include <immintrin.h>

#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8.h"

#define SMOLVLM_VNNI __attribute__((target("avx512vnni")))

// GCC 12 reports the intrinsics' own "undefined" pass-through operands as uninitialized; they are
// never read (as in gemm_avx512.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace smolvlm::gemm {
namespace {

// One weight row at a time: four side by side (sharing the loads of x, hiding the FMA latency)
// measured 1.3x faster in cache but 1.8x slower from memory (a 256M decode token's linears on one
// thread: 18.4 against 10.5 ms for q8), with or without software requests of the rows ahead (slower
// for one row too); the hardware prefetchers' single stream is kept (bench/RESULTS.md).

// Lanes i and i + 8, then i and i + 4, i and i + 2, then the two left (gemv_int8.h).
[[gnu::always_inline]] inline float hsum16(__m512 v) {
  const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
  const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
  return _mm_cvtss_f32(_mm_add_ss(a2, _mm_movehdup_ps(a2)));
}

// The 64 bytes at p, those at or past `end` bytes from p's row start (i) read as zero.
[[gnu::always_inline]] inline __m512i load_codes(const void* row, int64_t i, int64_t end) {
  const char* p = static_cast<const char*>(row) + i;
  if (i + 64 <= end) return _mm512_loadu_si512(p);
  const __mmask64 valid = i < end ? (~__mmask64(0)) >> (64 - (end - i)) : 0;
  return _mm512_maskz_loadu_epi8(valid, p);
}

[[gnu::always_inline]] inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Row n of a Q8 weight for row m of x.
SMOLVLM_VNNI inline float q8_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n) {
  const int64_t K = w.cols, blk = int8_detail::first_block(w, n);
  const int8_t* xq = x.codes + m * x.k_pad;
  const float* d = x.q8_lane_scales + m * (x.k_pad / 4);
  const int8_t* row = static_cast<const int8_t*>(w.data) + n * K;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < x.k_pad / 64; ++c) {
    const __m512i codes = _mm512_xor_si512(load_codes(row, 64 * c, K), flip);  // q + 128
    const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, _mm512_loadu_si512(xq + 64 * c));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_loadu_ps(d + 16 * c), acc);
  }
  const float s = half_to_float(w.quant.scales[blk]);
  const int32_t z = w.quant.zero_points ? w.quant.zero_points[blk] : 0;
  const float centred = _mm_cvtss_f32(
      _mm_fmadd_ss(_mm_set_ss(-static_cast<float>(128 + z)), _mm_set_ss(x.row_sums[m]), _mm_set_ss(hsum16(acc))));
  return centred * s;
}

// The 16 lane scales of a Q4 step from the row's group scales: lanes 0-7 the group of code 128c,
// 8-15 that of code 128c + 64 (0 past K).
[[gnu::always_inline]] inline __m512 q4_step_scales(const WeightRef& w, int64_t blk, int64_t c) {
  const int64_t code = 128 * c, G = w.quant.group_size;
  const float s0 = half_to_float(w.quant.scales[blk + code / G]);
  const float s1 = code + 64 < w.cols ? half_to_float(w.quant.scales[blk + (code + 64) / G]) : 0.f;
  return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

// m_g * X_g of every group of a Q4 row, lane g % 16 (groups of 64: X_g is the pair sum itself).
[[gnu::always_inline]] inline __m512 q4_min_terms(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t blk) {
  const int64_t groups = int8_detail::groups_per_row(w);
  __m512 min_acc = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < groups; g0 += 16) {
    const int64_t count = groups - g0 < 16 ? groups - g0 : 16;
    const __mmask16 valid = static_cast<__mmask16>((1u << count) - 1);
    __m512 sums;
    if (w.quant.group_size == 64) {
      sums = _mm512_maskz_loadu_ps(valid, x.pair_sums + m * (x.k_pad / 64) + g0);
    } else {
      alignas(64) float s[16];
      for (int64_t i = 0; i < 16; ++i) s[i] = i < count ? int8_detail::group_sum(x, m, w, g0 + i) : 0.f;
      sums = _mm512_load_ps(s);
    }
    const __m512 mins = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, w.quant.mins + blk + g0));
    min_acc = _mm512_fmadd_ps(mins, sums, min_acc);
  }
  return min_acc;
}

// Row n of a Q4 weight for row m of x.
SMOLVLM_VNNI inline float q4_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n) {
  const int64_t row_bytes = w.cols / 2, blk = int8_detail::first_block(w, n);
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * row_bytes;
  const __m512i low = _mm512_set1_epi8(0x0F);
  // Groups of 64 (quantize's default): each step takes groups 2c and 2c + 1, picked from 16 scales
  // converted at once per 8 steps (those past the row read as 0, as q4_step_scales gives).
  const bool g64 = w.quant.group_size == 64;
  const int64_t groups = int8_detail::groups_per_row(w);
  const __m512i pick_first = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 scales16 = _mm512_setzero_ps();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < x.k_pad / 128; ++c) {
    if (g64 && c % 8 == 0) {
      const int64_t count = groups - 2 * c < 16 ? groups - 2 * c : 16;
      const __mmask16 valid = static_cast<__mmask16>((1u << count) - 1);
      scales16 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, w.quant.scales + blk + 2 * c));
    }
    const __m512i bytes = load_codes(row, 64 * c, row_bytes);
    const __m512i even = _mm512_and_si512(bytes, low), odd = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
    __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), even, _mm512_loadu_si512(xq + 128 * c));
    isum = _mm512_dpbusd_epi32(isum, odd, _mm512_loadu_si512(xq + 128 * c + 64));
    const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_loadu_ps(d + 16 * c));
    const __m512i pick = _mm512_add_epi32(pick_first, _mm512_set1_epi32(static_cast<int>(2 * (c % 8))));
    const __m512 s = g64 ? _mm512_permutexvar_ps(pick, scales16) : q4_step_scales(w, blk, c);
    acc = _mm512_fmadd_ps(f, s, acc);
  }
  return hsum16(_mm512_add_ps(acc, q4_min_terms(x, m, w, blk)));
}

}  // namespace

SMOLVLM_VNNI void gemv_int8_avx512(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0,
                                   int64_t n1) {
  const bool q8 = w.format == WeightFormat::Q8;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < x.M; ++m) {
      const float r = q8 ? q8_row(x, m, w, n) : q4_row(x, m, w, n);
      y[m * w.rows + n] = bias ? r + bias[n] : r;
    }
}

}  // namespace smolvlm::gemm
