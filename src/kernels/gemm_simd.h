// 256-bit (AVX2/FMA/F16C) building blocks shared by gemm_avx2.cpp and gemm_avx512.cpp: weight
// loads with conversion to fp32, weight packing, the streaming GEMV. Include only from files built
// with those instruction sets. Everything has internal linkage, so each ISA file gets its own copy
// and the linker can never substitute one instruction set's code for another's.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/gemm_kernels.h"
#include "kernels/vec_math_avx2.h"

namespace smolvlm::gemm {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// 8 consecutive weight elements starting at element `idx` of the weight, as fp32.
// bf16 -> f32 is exact (the bf16 bits are the high half of the f32); f16 -> f32 is exact (F16C).
template <WeightFormat FMT>
inline __m256 load8(const void* base, int64_t idx) {
  if constexpr (FMT == WeightFormat::BF16) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + idx));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else if constexpr (FMT == WeightFormat::F16) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + idx));
    return _mm256_cvtph_ps(h);
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(base) + idx);
  }
}

template <WeightFormat FMT>
inline float load1(const void* base, int64_t idx) {
  if constexpr (FMT == WeightFormat::BF16) {
    uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[idx]) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  } else if constexpr (FMT == WeightFormat::F16) {
    return _cvtsh_ss(static_cast<const uint16_t*>(base)[idx]);
  } else {
    return static_cast<const float*>(base)[idx];
  }
}

// Calls fn.template operator()<FMT>() for a dense weight format; anything else is refused (the
// quantized formats have their own dispatch, with_quant_format: this is the last line of defence
// against reading codes as fp32).
template <typename Fn>
inline void with_format(WeightFormat format, Fn&& fn) {
  switch (format) {
    case WeightFormat::F32: fn.template operator()<WeightFormat::F32>(); return;
    case WeightFormat::F16: fn.template operator()<WeightFormat::F16>(); return;
    case WeightFormat::BF16: fn.template operator()<WeightFormat::BF16>(); return;
    case WeightFormat::Q8:
    case WeightFormat::Q4:
    case WeightFormat::Lut4: break;
  }
  refuse_weight_format(format);
}

// Bytes of one weight element.
template <WeightFormat FMT>
constexpr int64_t weight_bytes() {
  static_assert(FMT == WeightFormat::F32 || FMT == WeightFormat::F16 || FMT == WeightFormat::BF16);
  return FMT == WeightFormat::F32 ? 4 : 2;
}

// In-place transpose of an 8x8 fp32 block held in r[0..7] (row i -> column i).
inline void transpose8x8(__m256 r[8]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Packs 8 weight rows [row0, row0+8) x [k0, k0+kc) into dst[k*stride + i] (i = row - row0).
// Rows at or past w.rows are written as zeros.
template <WeightFormat FMT>
inline void pack_rows8(const WeightRef& w, int64_t row0, int64_t k0, int64_t kc, float* dst, int64_t stride) {
  const int64_t K = w.cols;
  const int64_t valid = w.rows - row0;
  if (valid >= 8) {
    int64_t k = 0;
    constexpr int64_t kLine = 64 / weight_bytes<FMT>();  // elements per cache line
    const char* base = static_cast<const char*>(w.data);
    for (; k + 8 <= kc; k += 8) {
      // The next group's rows, same columns: the weight comes from memory in short strided runs
      // that the hardware prefetcher alone does not follow (measured: packing a BF16 weight from
      // DRAM about a third faster with this prefetch than without; two groups ahead gained less).
      if (k % kLine == 0)
        for (int i = 0; i < 8; ++i)
          _mm_prefetch(base + ((row0 + 8 + i) * K + k0 + k) * weight_bytes<FMT>(), _MM_HINT_T0);
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = load8<FMT>(w.data, (row0 + i) * K + k0 + k);
      transpose8x8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (k + i) * stride, r[i]);
    }
    for (; k < kc; ++k)
      for (int i = 0; i < 8; ++i) dst[k * stride + i] = load1<FMT>(w.data, (row0 + i) * K + k0 + k);
    return;
  }
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t i = 0; i < 8; ++i)
      dst[k * stride + i] = i < valid ? load1<FMT>(w.data, (row0 + i) * K + k0 + k) : 0.f;
}

// ---- Quantized weights (kernels/quant.h: the block layout and the exact dequantization) ----

// The parameters of one block, as fp32, and where its row's codes start.
struct QuantGroup {
  float scale = 0.f, offset = 0.f;  // Q8: scale, -zero_point; Q4: scale, min
  const uint16_t* lut = nullptr;    // Lut4: 16 fp16 entries
};

inline QuantGroup quant_group(const WeightRef& w, int64_t block) {
  const QuantBlocks& b = w.quant;
  QuantGroup g;
  switch (w.format) {
    case WeightFormat::Q8:
      g.scale = _cvtsh_ss(b.scales[block]);
      g.offset = b.zero_points ? float(b.zero_points[block]) : 0.f;
      break;
    case WeightFormat::Q4:
      g.scale = _cvtsh_ss(b.scales[block]);
      g.offset = _cvtsh_ss(b.mins[block]);
      break;
    default: g.lut = b.lut + block * 16; break;
  }
  return g;
}

// Value k of a quantized row (codes of row n start at `row`), exactly as dequantize_row() computes it.
template <WeightFormat FMT>
inline float quant_value(const void* row, const QuantGroup& g, int64_t k) {
  if constexpr (FMT == WeightFormat::Q8) {
    return g.scale * (float(static_cast<const int8_t*>(row)[k]) - g.offset);
  } else if constexpr (FMT == WeightFormat::Q4) {
    return g.scale * float(code4(static_cast<const uint8_t*>(row), k)) + g.offset;
  } else {
    return _cvtsh_ss(g.lut[code4(static_cast<const uint8_t*>(row), k)]);
  }
}

// Q8 values as one FMA, scale * q + (-scale * zero_point): both products are exact in fp32 (an fp16
// scale times an integer of at most 8 bits), and so is their sum scale * (q - zero_point), which the
// FMA therefore returns unrounded: the very value quant_value() computes.
inline float q8_offset(const QuantGroup& g) { return -(g.scale * g.offset); }

template <WeightFormat FMT>
inline const void* quant_row(const WeightRef& w, int64_t n) {
  if constexpr (FMT == WeightFormat::Q8)
    return static_cast<const int8_t*>(w.data) + n * w.cols;
  else
    return static_cast<const uint8_t*>(w.data) + n * w.cols / 2;
}

template <WeightFormat FMT>
constexpr int64_t quant_row_bytes(int64_t cols) {
  return FMT == WeightFormat::Q8 ? cols : cols / 2;
}

// Requests into L2 the lines holding values [k, k + 32) of the weight row at `row`: prefetch_row
// spread over a product, one 32-value step at a time.
template <WeightFormat FMT>
inline void prefetch_step(const char* row, int64_t k) {
  for (int64_t b = 0; b < 32 * weight_bytes<FMT>(); b += 64) _mm_prefetch(row + k * weight_bytes<FMT>() + b, _MM_HINT_T1);
}

// x · (row of the weight starting at element `offset`), K elements, for R rows of x (ldx floats apart)
// into s[0, R). The row is read once, front to back: per x row, four 8-lane partial sums over
// 32-element steps, then 8-element steps into the first, a fixed reduction, then the scalar tail. The
// same operations for every row, R, M, range and thread; with R > 1 each weight vector is converted
// once for all R rows. With `ahead` (another weight row), each 32-value step also requests the same
// lines of that row (prefetch_step).
template <WeightFormat FMT, int R>
inline void dot_rows(const float* x, int64_t ldx, const void* w, int64_t offset, int64_t K, float* s,
                     const char* ahead = nullptr) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    if (ahead) prefetch_step<FMT>(ahead, k);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256 wv = load8<FMT>(w, offset + k + 8 * j);
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) acc[r][j] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * ldx + k + 8 * j), wv, acc[r][j]);
    }
  }
  for (; k + 8 <= K; k += 8) {
    const __m256 wv = load8<FMT>(w, offset + k);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * ldx + k), wv, acc[r][0]);
  }
  for (int r = 0; r < R; ++r)
    s[r] = vec::hsum8(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
  for (; k < K; ++k) {
    const float v = load1<FMT>(w, offset + k);
    for (int r = 0; r < R; ++r) s[r] += x[r * ldx + k] * v;
  }
}

template <WeightFormat FMT>
inline float dot_row(const float* x, const void* w, int64_t offset, int64_t K) {
  float s;
  dot_rows<FMT, 1>(x, 0, w, offset, K, &s);
  return s;
}

// Requests every cache line of weight row n into L2, not L1: on the AVX-512 machine a 256M decode
// step's linears took 7.2 ms (1 row of x) and 9.7 ms (4 rows) with the rows requested into L2,
// against 12.0 and 18.6 ms into L1 (2 threads, best of 40 steps; on its AVX2 path 8.7-9.0 ms either
// way at 1 row and 11.2 against 14.6 ms at 4). With L1 requests the profile showed the time on the
// loads of the weights, as if the arithmetic no longer overlapped the reads. The quantized rows
// measured no better into L2 and keep L1 (gemv_quant_range).
template <WeightFormat FMT>
inline void prefetch_row(const WeightRef& w, int64_t n) {
  const char* row = static_cast<const char*>(w.data) + n * w.cols * weight_bytes<FMT>();
  for (int64_t b = 0; b < w.cols * weight_bytes<FMT>(); b += 64) _mm_prefetch(row + b, _MM_HINT_T1);
}

// Rows [n0, n1) of y for M rows of x. Decode is bound by how fast the weights stream in: the rows a
// thread reads are contiguous, so reading each row front to back makes the range one sequential
// stream (interleaving several rows measured slower). Rows of x after the first reuse the weight row
// from L1.
using DenseDot = float (*)(const float* x, const void* w, int64_t offset, int64_t K);

// Four dense rows at `rows` of w for one row of x, side by side a 32-value step at a time, each row
// with dot_rows' own arithmetic (its four accumulators, the 8-value steps, the reduction and the
// tail), so each result has the bits dot_row gives it. Each step requests the line kStreamBytesAhead
// past its own in each row.
template <WeightFormat FMT>
inline void dot_rows_four_streams(const float* x, const WeightRef& w, const int64_t* rows, float* s) {
  const int64_t K = w.cols;
  const char* base = static_cast<const char*>(w.data);
  __m256 acc[4][4];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    for (int r = 0; r < 4; ++r)
      _mm_prefetch(base + (rows[r] * K + k) * weight_bytes<FMT>() + kStreamBytesAhead, _MM_HINT_T0);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256 xv = _mm256_loadu_ps(x + k + 8 * j);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) acc[r][j] = _mm256_fmadd_ps(xv, load8<FMT>(w.data, rows[r] * K + k + 8 * j), acc[r][j]);
    }
  }
  for (; k + 8 <= K; k += 8)
    for (int r = 0; r < 4; ++r)
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), load8<FMT>(w.data, rows[r] * K + k), acc[r][0]);
  for (int r = 0; r < 4; ++r) {
    s[r] = vec::hsum8(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
    for (int64_t t = k; t < K; ++t) s[r] += x[t] * load1<FMT>(w.data, rows[r] * K + t);
  }
}

// x as 64-byte aligned rows: every weight row reads all of x again, and a vector load that crosses a
// cache line costs two (a 576 x 576 BF16 product in L1 ran 1.8x slower with x 16 bytes off). Copies
// only when x is not aligned already; the values, and so the results, are the same.
inline const float* aligned_input(const float* x, int64_t floats) {
  if ((reinterpret_cast<uintptr_t>(x) & 63) == 0) return x;
  thread_local AlignedBuffer copy;
  float* p = copy.get(static_cast<size_t>(floats));
  std::copy_n(x, floats, p);
  return p;
}

template <WeightFormat FMT, DenseDot Dot = dot_row<FMT>>
void gemv_range(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  x = aligned_input(x, M * K);
  // One row of x where the CPU reads several streams best (CpuFeatures::row_streams_256): each pass
  // takes the next row of each quarter of the range, four streams side by side.
  if constexpr (Dot == dot_row<FMT>) {
    if (M == 1 && read_four_streams(cpu_features().row_streams_256())) {
      const int64_t part = (n1 - n0) / 4;
      for (int64_t i = 0; i < part; ++i) {
        const int64_t rows[4] = {n0 + i, n0 + part + i, n0 + 2 * part + i, n0 + 3 * part + i};
        float s[4];
        dot_rows_four_streams<FMT>(x, w, rows, s);
        for (int j = 0; j < 4; ++j) y[rows[j]] = bias ? s[j] + bias[rows[j]] : s[j];
      }
      for (int64_t n = n0 + 4 * part; n < n1; ++n) {
        const float s = dot_row<FMT>(x, w.data, n * K, K);
        y[n] = bias ? s + bias[n] : s;
      }
      return;
    }
  }
  // Rows are requested about 9 KB ahead of the one being read: one stream per thread is limited by
  // how many lines the hardware prefetcher keeps in flight, and decode measured 7-10 % faster with
  // this (alternating runs; 4 and 8 rows of 576 BF16 both helped).
  // Where the CPU's own prefetchers do better alone (CpuFeatures::dense_row_requests), none.
  const bool requests = cpu_features().dense_row_requests();
  const int64_t ahead = std::max<int64_t>(1, (9216 + K * weight_bytes<FMT>() - 1) / (K * weight_bytes<FMT>()));
  if (requests)
    for (int64_t n = n0; n < std::min(n1, n0 + ahead); ++n) prefetch_row<FMT>(w, n);
  // With pairs of rows of x the requests for row n + ahead go out a line at each 32-value step of the
  // first pair's product instead of in one burst (as gemv_rows512; K a whole number of steps).
  const bool spread = Dot == dot_row<FMT> && M >= 2 && K % 32 == 0;
  const char* base = static_cast<const char*>(w.data);
  for (int64_t n = n0; n < n1; ++n) {
    const bool request = requests && n + ahead < n1;
    const char* pf = spread && request ? base + (n + ahead) * K * weight_bytes<FMT>() : nullptr;
    if (!spread && request) prefetch_row<FMT>(w, n + ahead);
    int64_t m = 0;
    if constexpr (Dot == dot_row<FMT>) {
      // Rows of x in pairs: each weight vector is converted once per pair instead of once per row.
      for (; m + 2 <= M; m += 2) {
        float s[2];
        dot_rows<FMT, 2>(x + m * K, K, w.data, n * K, K, s, m == 0 ? pf : nullptr);
        for (int r = 0; r < 2; ++r) y[(m + r) * N + n] = bias ? s[r] + bias[n] : s[r];
      }
    }
    for (; m < M; ++m) {
      const float s = Dot(x + m * K, w.data, n * K, K);
      y[m * N + n] = bias ? s + bias[n] : s;
    }
  }
}

constexpr int kGemvMaxM = 4;

// 8 consecutive 4-bit codes from 4 bytes (low nibble first) as int32 lanes.
inline __m256i codes4x8(const uint8_t* p) {
  uint32_t u;
  __builtin_memcpy(&u, p, 4);
  const __m128i b = _mm_cvtsi32_si128(int(u)), mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  return _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
}

// 32 consecutive 4-bit codes from 16 bytes, one code per byte: codes 0-15 in `first`, 16-31 in `second`.
inline void split_codes32(const uint8_t* p, __m128i& first, __m128i& second) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  first = _mm_unpacklo_epi8(lo, hi);
  second = _mm_unpackhi_epi8(lo, hi);
}

// The 256-bit decoding of 8 quantized values: one group's parameters broadcast once.
template <WeightFormat FMT>
struct QuantDecoder8 {
  __m256 scale, offset, lut_lo, lut_hi;
  __m128i lut_low_bytes, lut_high_bytes;  // Lut4: byte 0 / byte 1 of the 16 fp16 entries, for pshufb
  explicit QuantDecoder8(const QuantGroup& g) {
    if constexpr (FMT == WeightFormat::Lut4) {
      const __m128i e0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.lut));
      const __m128i e1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.lut + 8));
      lut_lo = _mm256_cvtph_ps(e0);
      lut_hi = _mm256_cvtph_ps(e1);
      const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
      const __m128i odd = _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, -1, -1, -1, -1, -1, -1, -1, -1);
      lut_low_bytes = _mm_unpacklo_epi64(_mm_shuffle_epi8(e0, even), _mm_shuffle_epi8(e1, even));
      lut_high_bytes = _mm_unpacklo_epi64(_mm_shuffle_epi8(e0, odd), _mm_shuffle_epi8(e1, odd));
    } else {
      scale = _mm256_set1_ps(g.scale);
      offset = _mm256_set1_ps(FMT == WeightFormat::Q8 ? q8_offset(g) : g.offset);
    }
  }
  // Values [k, k + 8) of the row (k even for the 4-bit formats).
  __m256 load(const void* row, int64_t k) const {
    if constexpr (FMT == WeightFormat::Q8) {
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(row) + k)));
      return _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(q), offset);  // q8_offset: the same exact value
    } else {
      return value(codes4x8(static_cast<const uint8_t*>(row) + k / 2));
    }
  }
  // Values [k, k + 32) of the row (k even for the 4-bit formats), the same exact values as load(). The
  // 4-bit formats split one 16-byte load: Q4 widens the codes to int32 lanes; Lut4 looks the fp16
  // entries up 16 codes at a time (pshufb on the entries' two bytes) and converts them.
  void load32(const void* row, int64_t k, __m256 v[4]) const {
    if constexpr (FMT == WeightFormat::Q8) {
      for (int i = 0; i < 4; ++i) v[i] = load(row, k + 8 * i);
    } else {
      __m128i first, second;
      split_codes32(static_cast<const uint8_t*>(row) + k / 2, first, second);
      if constexpr (FMT == WeightFormat::Q4) {
        v[0] = value(_mm256_cvtepu8_epi32(first));
        v[1] = value(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(first, first)));
        v[2] = value(_mm256_cvtepu8_epi32(second));
        v[3] = value(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(second, second)));
      } else {
        lut16(first, v[0], v[1]);
        lut16(second, v[2], v[3]);
      }
    }
  }
  void lut16(__m128i codes, __m256& v0, __m256& v1) const {
    const __m128i low = _mm_shuffle_epi8(lut_low_bytes, codes), high = _mm_shuffle_epi8(lut_high_bytes, codes);
    v0 = _mm256_cvtph_ps(_mm_unpacklo_epi8(low, high));
    v1 = _mm256_cvtph_ps(_mm_unpackhi_epi8(low, high));
  }
  // The values of 8 4-bit codes (Q4, Lut4).
  __m256 value(__m256i q) const {
    if constexpr (FMT == WeightFormat::Q4) {
      return _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(q), offset);  // scale * q is exact: one rounding
    } else {
      const __m256 lo = _mm256_permutevar8x32_ps(lut_lo, q), hi = _mm256_permutevar8x32_ps(lut_hi, q);
      return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(q, 28)));  // bit 3 selects
    }
  }
};

// Values [k0, k0 + count) of row n, group by group: 8 at a time as QuantDecoder8 gives them, each
// group's tail one by one (a 4-bit group starts on an even column: quant.h refuses odd groups).
template <WeightFormat FMT>
inline void dequantize_segment(const WeightRef& w, int64_t n, int64_t k0, int64_t count, float* out) {
  const int64_t G = w.quant.group_size, groups = (w.cols + G - 1) / G;
  const int64_t first_block = (n / w.quant.block_rows) * groups;
  const void* row = quant_row<FMT>(w, n);
  for (int64_t k = k0; k < k0 + count;) {
    const int64_t g = k / G, end = min_i64(k0 + count, (g + 1) * G);
    const QuantGroup q = quant_group(w, first_block + g);
    const QuantDecoder8<FMT> decoder(q);
    for (; k + 8 <= end; k += 8) _mm256_storeu_ps(out + (k - k0), decoder.load(row, k));
    for (; k < end; ++k) out[k - k0] = quant_value<FMT>(row, q, k);
  }
}

// The longest K block a kernel set packs (its KC).
constexpr int64_t kMaxPackKc = 256;

// Quantized weights are packed by dequantizing each row's K block, 8 rows at a time turned into the
// panel: the prefill and vision products then run the dense micro kernels on exact fp32 values.
// (Value by value, the packing took about as long as the products of a 128-token prefill.)
template <int NR, WeightFormat FMT>
void pack_b_quant(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  alignas(32) float rows[8][kMaxPackKc];
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t g = 0; g < NR; g += 8) {
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t n = n0 + p * NR + g + i;
        if (n < w.rows)
          dequantize_segment<FMT>(w, n, k0, kc, rows[i]);
        else
          std::fill(rows[i], rows[i] + kc, 0.f);
      }
      float* d = dst + p * kc * NR + g;
      int64_t k = 0;
      for (; k + 8 <= kc; k += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(rows[i] + k);
        transpose8x8(r);
        for (int i = 0; i < 8; ++i) _mm256_storeu_ps(d + (k + i) * NR, r[i]);
      }
      for (; k < kc; ++k)
        for (int i = 0; i < 8; ++i) d[k * NR + i] = rows[i][k];
    }
}

template <int NR>
void pack_b_panels(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  static_assert(NR % 8 == 0);
  if (weight_format_is_quantized(w.format)) {
    with_quant_format(w.format, [&]<WeightFormat FMT>() { pack_b_quant<NR, FMT>(w, n0, panels, k0, kc, dst); });
    return;
  }
  with_format(w.format, [&]<WeightFormat FMT>() {
    for (int64_t p = 0; p < panels; ++p)
      for (int g = 0; g < NR / 8; ++g)
        pack_rows8<FMT>(w, n0 + p * NR + g * 8, k0, kc, dst + p * kc * NR + g * 8, NR);
  });
}

// x · (quantized row n), group by group: four 8-lane sums over 32-value steps, then 8-value steps,
// the scalar tail of each group into one float. The same order for every row, range and thread.
struct QuantRow256 {
  static constexpr int64_t kScratchFloats = 1;
  template <WeightFormat FMT>
  static const float* prepare(const float* x, int64_t, const WeightRef&, float*) {
    return x;
  }
  template <WeightFormat FMT>
  static bool takes_four_rows(const WeightRef&) {
    return false;
  }
  template <WeightFormat FMT>
  static bool takes_four_streams(const WeightRef&) {
    return false;
  }
  template <WeightFormat FMT>
  static bool spreads_requests(const WeightRef&) {
    return false;
  }
  template <WeightFormat FMT>
  static void dot4(const float* x, const WeightRef& w, int64_t n, float* out, const char* = nullptr) {
    for (int i = 0; i < 4; ++i) out[i] = dot<FMT>(x, w, n + i);
  }
  template <WeightFormat FMT>
  static void dot4_at(const float* x, const WeightRef& w, const int64_t* rows, float* out) {
    for (int i = 0; i < 4; ++i) out[i] = dot<FMT>(x, w, rows[i]);
  }
  template <WeightFormat FMT>
  static float dot(const float* x, const WeightRef& w, int64_t n, const char* = nullptr) {
    float s;
    dot_rows_of_x<FMT, 1>(x, w, n, &s);
    return s;
  }
  // Row n with the M (1..4) rows of x at x, K floats apart, into out[0..M): each step's weights are
  // decoded once for all the rows of x (a batched decode step), each row summed exactly as alone.
  template <WeightFormat FMT>
  static void dot_x(const float* x, int64_t M, const WeightRef& w, int64_t n, float* out, const char* = nullptr) {
    switch (M) {
      case 4: dot_rows_of_x<FMT, 4>(x, w, n, out); break;
      case 3: dot_rows_of_x<FMT, 3>(x, w, n, out); break;
      case 2: dot_rows_of_x<FMT, 2>(x, w, n, out); break;
      default: dot_rows_of_x<FMT, 1>(x, w, n, out); break;
    }
  }
  template <WeightFormat FMT>
  static bool shares_values(const WeightRef&) {
    return true;
  }

 private:
  template <WeightFormat FMT, int MX>
  static void dot_rows_of_x(const float* x, const WeightRef& w, int64_t n, float* out) {
    const int64_t K = w.cols, G = w.quant.group_size, groups = (K + G - 1) / G;
    const int64_t first_block = (n / w.quant.block_rows) * groups;
    const void* row = quant_row<FMT>(w, n);
    __m256 a[MX][4];
    float tail[MX];
    for (int m = 0; m < MX; ++m) {
      a[m][0] = a[m][1] = a[m][2] = a[m][3] = _mm256_setzero_ps();
      tail[m] = 0.f;
    }
    for (int64_t g = 0; g < groups; ++g) {
      const QuantGroup q = quant_group(w, first_block + g);
      const QuantDecoder8<FMT> dec(q);
      int64_t k = g * G;
      const int64_t end = min_i64(K, k + G);
      for (; k + 32 <= end; k += 32) {
        __m256 v[4];
        dec.load32(row, k, v);
        for (int m = 0; m < MX; ++m) {
          const float* xm = x + m * K;
          a[m][0] = _mm256_fmadd_ps(_mm256_loadu_ps(xm + k), v[0], a[m][0]);
          a[m][1] = _mm256_fmadd_ps(_mm256_loadu_ps(xm + k + 8), v[1], a[m][1]);
          a[m][2] = _mm256_fmadd_ps(_mm256_loadu_ps(xm + k + 16), v[2], a[m][2]);
          a[m][3] = _mm256_fmadd_ps(_mm256_loadu_ps(xm + k + 24), v[3], a[m][3]);
        }
      }
      for (; k + 8 <= end; k += 8) {
        const __m256 v = dec.load(row, k);
        for (int m = 0; m < MX; ++m) a[m][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + m * K + k), v, a[m][0]);
      }
      for (; k < end; ++k) {
        const float v = quant_value<FMT>(row, q, k);
        for (int m = 0; m < MX; ++m) tail[m] += x[m * K + k] * v;
      }
    }
    for (int m = 0; m < MX; ++m)
      out[m] = vec::hsum8(_mm256_add_ps(_mm256_add_ps(a[m][0], a[m][1]), _mm256_add_ps(a[m][2], a[m][3]))) + tail[m];
  }
};

// gemv_range for quantized weights, with Row::dot<FMT> the ISA's row product.
template <typename Row, WeightFormat FMT>
void gemv_quant_range(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
                      int64_t n1) {
  const int64_t K = w.cols, N = w.rows, row_bytes = quant_row_bytes<FMT>(K);
  const int64_t ahead = std::max<int64_t>(1, (9216 + row_bytes - 1) / row_bytes);
  auto prefetch = [&](int64_t n) {
    const char* r = static_cast<const char*>(quant_row<FMT>(w, n));
    for (int64_t b = 0; b < row_bytes; b += 64) _mm_prefetch(r + b, _MM_HINT_T0);
  };
  // Where the row product can (Row::spreads_requests), the codes of the rows `ahead` on are requested
  // a line or two at each 64-value step of the product instead of in one burst before it, as the
  // dense rows are (gemv_rows512).
  const bool spread = Row::template spreads_requests<FMT>(w);
  // The row product may want x in its own order (Row::prepare: read by every row of the range). Where
  // it reads x as it is (Q8, the 4-bit rows prepare() leaves alone), x as 64-byte aligned rows: its
  // vector loads then never straddle two cache lines.
  alignas(64) float scratch[Row::kScratchFloats];
  const float* xr = Row::template prepare<FMT>(x, M, w, scratch);
  if (xr == x) xr = aligned_input(x, M * K);
  for (int64_t n = n0; n < std::min(n1, n0 + ahead); ++n) prefetch(n);
  // Several rows of x (a batched decode step): where the row product can, one weight row a pass,
  // its values decoded once for all of them, each row of x summed exactly as alone.
  if (M > 1 && Row::template shares_values<FMT>(w)) {
    for (int64_t n = n0; n < n1; ++n) {
      const char* pf = spread && n + 1 + ahead <= n1 ? static_cast<const char*>(quant_row<FMT>(w, n + ahead)) : nullptr;
      if (!pf && n + ahead < n1) prefetch(n + ahead);
      float s[kGemvMaxM] = {};
      Row::template dot_x<FMT>(xr, M, w, n, s, pf);
      for (int64_t m = 0; m < M; ++m) y[m * N + n] = bias ? s[m] + bias[n] : s[m];
    }
    return;
  }
  // Where the row product can, it takes four rows per pass (sharing the loads of x); each row gets
  // exactly the arithmetic it gets alone, so where the range starts never changes a result.
  const bool four = Row::template takes_four_rows<FMT>(w);
  // One row of x where the CPU reads several streams best (CpuFeatures::decode_row_streams): each
  // pass takes the next row of each quarter of the range, four streams side by side instead of four
  // rows side by side (HY-MT's lut4 linears, 5 alternated rounds, median step 29.6-35.9 -> 22.9-29.9
  // ms; bench/RESULTS.md), each requesting its lines kStreamBytesAhead on (Row::dot4_at).
  if (M == 1 && Row::template takes_four_streams<FMT>(w) && cpu_features().decode_row_streams()) {
    const int64_t part = (n1 - n0) / 4;
    for (int64_t i = 0; i < part; ++i) {
      const int64_t rows[4] = {n0 + i, n0 + part + i, n0 + 2 * part + i, n0 + 3 * part + i};
      float s[4];
      Row::template dot4_at<FMT>(xr, w, rows, s);
      for (int j = 0; j < 4; ++j) y[rows[j]] = bias ? s[j] + bias[rows[j]] : s[j];
    }
    for (int64_t n = n0 + 4 * part; n < n1; ++n) {
      const float s = Row::template dot<FMT>(xr, w, n);
      y[n] = bias ? s + bias[n] : s;
    }
    return;
  }
  for (int64_t n = n0; n < n1;) {
    const int64_t rows = four && n + 4 <= n1 ? 4 : 1;
    const char* pf = spread && n + rows + ahead <= n1 ? static_cast<const char*>(quant_row<FMT>(w, n + ahead)) : nullptr;
    if (!pf)
      for (int64_t i = 0; i < rows; ++i)
        if (n + i + ahead < n1) prefetch(n + i + ahead);
    for (int64_t m = 0; m < M; ++m) {
      float s[4];
      if (rows == 4)
        Row::template dot4<FMT>(xr + m * K, w, n, s, m == 0 ? pf : nullptr);
      else
        s[0] = Row::template dot<FMT>(xr + m * K, w, n, m == 0 ? pf : nullptr);
      for (int64_t i = 0; i < rows; ++i) y[m * N + n + i] = bias ? s[i] + bias[n + i] : s[i];
    }
    n += rows;
  }
}

// The gemv entry point of both ISA kernel sets: M in [1, kGemvMaxM].
template <typename QuantRow>
inline void gemv_small_m(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
                         int64_t n1) {
  if (weight_format_is_quantized(w.format)) {
    with_quant_format(w.format, [&]<WeightFormat FMT>() { gemv_quant_range<QuantRow, FMT>(x, M, w, bias, y, n0, n1); });
    return;
  }
  with_format(w.format, [&]<WeightFormat FMT>() { gemv_range<FMT>(x, M, w, bias, y, n0, n1); });
}

// Stores lanes [0, MR) of v at dst (MR = 6 or 8): never writes past the tile.
template <int MR>
inline void store_lanes(float* dst, __m256 v) {
  if constexpr (MR == 8) {
    _mm256_storeu_ps(dst, v);
  } else {
    static_assert(MR == 6);
    _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    _mm_storel_pi(reinterpret_cast<__m64*>(dst + 4), _mm256_extractf128_ps(v, 1));
  }
}

// One MR-row tile of x as dst[k*MR + r], zero rows past `rows`: 8x8 transposes, scalar K tail.
template <int MR>
void pack_a_tile(const float* x, int64_t ldx, int64_t rows, int64_t kc, float* dst) {
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = i < rows && i < MR ? _mm256_loadu_ps(x + i * ldx + k) : _mm256_setzero_ps();
    transpose8x8(r);
    for (int j = 0; j < 8; ++j) store_lanes<MR>(dst + (k + j) * MR, r[j]);
  }
  for (; k < kc; ++k)
    for (int i = 0; i < MR; ++i) dst[k * MR + i] = i < rows ? x[i * ldx + k] : 0.f;
}

// One MR x NR output tile of any shape: full tiles go straight to y; partial ones run the same micro
// kernel on a padded copy, so every element sees the same arithmetic.
template <int MR, int NR, typename Micro>
inline void tile(Micro micro, const float* a, const float* b, int64_t kc, float* y, int64_t ldy, int64_t mv,
                 int64_t nv, bool accumulate, const float* bias) {
  if (mv == MR && nv == NR) {
    micro(a, b, kc, y, ldy, accumulate, bias);
    return;
  }
  alignas(64) float c[MR * NR];
  alignas(64) float bias_pad[NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * NR + j] = (accumulate && i < mv && j < nv) ? y[i * ldy + j] : 0.f;
  if (bias)
    for (int j = 0; j < NR; ++j) bias_pad[j] = j < nv ? bias[j] : 0.f;
  micro(a, b, kc, c, NR, accumulate, bias ? bias_pad : nullptr);
  for (int64_t i = 0; i < mv; ++i)
    for (int64_t j = 0; j < nv; ++j) y[i * ldy + j] = c[i * NR + j];
}

// Panels outer (one packed weight panel stays in L1), MR-row tiles of packed x inner (from L2).
// KPACK: K values per packed slot (GemmKernels::kpack); a row tile of packed x is MR slots per slot index.
template <int MR, int NR, typename Micro, int KPACK = 1>
void macro_kernel(Micro micro, const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride,
                  int64_t n_valid, int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias) {
  const int64_t panels = (n_valid + NR - 1) / NR, a_slots = (kc + KPACK - 1) / KPACK;
  for (int64_t p = 0; p < panels; ++p) {
    const float* b = packed_b + p * b_panel_stride;
    const int64_t nv = min_i64(NR, n_valid - p * NR);
    const float* bias_p = bias ? bias + p * NR : nullptr;
    float* yp = y + p * NR;
    for (int64_t i = 0; i < mc; i += MR)
      tile<MR, NR>(micro, packed_a + i * a_slots, b, kc, yp + i * ldy, ldy, min_i64(MR, mc - i), nv, accumulate,
                   bias_p);
  }
}

// The GemmKernels table of one ISA, around its MR x NR micro kernel.
template <int MR, int NR, int KC, auto Micro, typename QuantRow = QuantRow256>
struct KernelSet {
  static_assert(KC <= kMaxPackKc);
  static void pack_b(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
    pack_b_panels<NR>(w, n0, panels, k0, kc, dst);
  }
  static void pack_a(const float* x, int64_t ldx, int64_t rows, int64_t kc, float* dst) {
    pack_a_tile<MR>(x, ldx, rows, kc, dst);
  }
  static void macro(const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride,
                    int64_t n_valid, int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias) {
    macro_kernel<MR, NR>(Micro, packed_a, mc, packed_b, b_panel_stride, n_valid, kc, y, ldy, accumulate, bias);
  }
  static GemmKernels table(const char* name) {
    return GemmKernels{name, MR, NR, KC, kGemvMaxM, pack_b, pack_a, macro, gemv_small_m<QuantRow>};
  }
};

}  // namespace
}  // namespace smolvlm::gemm
