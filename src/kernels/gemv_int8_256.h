// The integer decode products of kernels/gemv_int8.h on 256-bit registers, shared by the avx2 file
// (gemv_int8_avx2.cpp: vpmaddubsw and vpmaddwd) and the avx-vnni one (gemv_int8_avxvnni.cpp:
// vpdpbusd): the reference's 16 lanes as two 8-lane halves (lanes 0-7 from the first 32 bytes of a
// step, 8-15 from the last 32), each lane's int32 sum exact whichever instructions make it, then the
// same float epilogue lane for lane, so the bits are the scalar reference's.
// Included by those two files only, each compiling it for its own instruction set: everything here
// has internal linkage, so no copy built for one set stands in for the other's.
// A thread's rows are read as four streams side by side where the CPU reads them best so
// (row_streams; CpuFeatures::row_streams_256), else one after the other with requests about 9 KB
// ahead (int8_detail::RowRequests); a row's bits are the same either way.
//
// `Lanes` supplies the integer sums, eight int32 lanes from 32 bytes:
//   Lanes::q8(codes, xq, offsets): lane l sums codes 4l..4l+3 (each q + 128, 0..255; `codes` holds
//   the stored q) times their x codes; `offsets` points at the eight lanes' q8_lane_offsets (128 times
//   the sum of the lane's x codes), for a kernel that sums q times x;
//   Lanes::q4(bytes, x_even, x_odd): lane l sums bytes 4l..4l+3, each byte's low nibble times its x
//   code in x_even and its high nibble times the one in x_odd;
//   Lanes::lut4(bytes, table, x_even, x_odd): as q4, each nibble looked up in `table` (the 16 codes
//   of a LUT4 table, 0..kLut4Top, in each 128-bit half) first.
#pragma once

#include <immintrin.h>

#include "kernels/cpu.h"
#include "kernels/gemv_int8.h"

namespace smolvlm::gemm {
namespace {

// Lanes i and i + 8 (the two halves), then i and i + 4, i and i + 2, then the two left (gemv_int8.h).
[[gnu::always_inline]] inline float hsum16(__m256 lo, __m256 hi) {
  const __m256 a8 = _mm256_add_ps(lo, hi);
  const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
  const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
  return _mm_cvtss_f32(_mm_add_ss(a2, _mm_movehdup_ps(a2)));
}

// The 32 bytes at `i` of a row of `end` bytes, those at or past `end` read as zero.
[[gnu::always_inline]] inline __m256i load_codes(const void* row, int64_t i, int64_t end) {
  const char* p = static_cast<const char*>(row) + i;
  if (i + 32 <= end) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  alignas(32) char tail[32] = {};
  for (int64_t k = i; k < end; ++k) tail[k - i] = p[k - i];
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
}

// A request for the line at p (prefetcht0).
[[gnu::always_inline]] inline void request(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

[[gnu::always_inline]] inline __m256i load32(const int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

[[gnu::always_inline]] inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// int8_detail::lut4_codebook's codes, scale and offset, the 16 entries at once (F16C; vcvtps2dq rounds
// to nearest even, as nearbyint does), where every entry is finite; a table that is not is the scalar
// one's. Taken once per block of rows, it had cost about as much as the steps of a 576-wide row.
inline void lut4_codebook_256(const uint16_t* lut, int8_detail::Lut4Codes& out) {
  const __m256 v0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut)));
  const __m256 v1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut + 8)));
  const __m256 sign = _mm256_set1_ps(-0.f), inf = _mm256_set1_ps(__builtin_inff());
  const __m256 a0 = _mm256_andnot_ps(sign, v0), a1 = _mm256_andnot_ps(sign, v1);
  const __m256 finite = _mm256_and_ps(_mm256_cmp_ps(a0, inf, _CMP_LT_OQ), _mm256_cmp_ps(a1, inf, _CMP_LT_OQ));
  if (_mm256_movemask_ps(finite) != 0xFF) return int8_detail::lut4_codebook(lut, out);
  const __m256 min8 = _mm256_min_ps(v0, v1), max8 = _mm256_max_ps(v0, v1);
  __m128 lo4 = _mm_min_ps(_mm256_castps256_ps128(min8), _mm256_extractf128_ps(min8, 1));
  __m128 hi4 = _mm_max_ps(_mm256_castps256_ps128(max8), _mm256_extractf128_ps(max8, 1));
  lo4 = _mm_min_ps(lo4, _mm_movehl_ps(lo4, lo4));
  hi4 = _mm_max_ps(hi4, _mm_movehl_ps(hi4, hi4));
  const float lo = _mm_cvtss_f32(_mm_min_ss(lo4, _mm_movehdup_ps(lo4)));
  const float hi = _mm_cvtss_f32(_mm_max_ss(hi4, _mm_movehdup_ps(hi4)));
  const float range = hi - lo;
  const __m256 low = _mm256_set1_ps(lo), inv = _mm256_set1_ps(range > 0.f ? int8_detail::kLut4Top / range : 0.f);
  const __m256i r0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(v0, low), inv));
  const __m256i r1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(v1, low), inv));
  const __m128i h0 = _mm_packs_epi32(_mm256_castsi256_si128(r0), _mm256_extracti128_si256(r0, 1));
  const __m128i h1 = _mm_packs_epi32(_mm256_castsi256_si128(r1), _mm256_extracti128_si256(r1, 1));
  _mm_store_si128(reinterpret_cast<__m128i*>(out.codes), _mm_packus_epi16(h0, h1));
  out.scale = range / int8_detail::kLut4Top;
  out.offset = lo;
}

// The table of the block of rows taken, converted by lut4_codebook_256.
using Lut4Codebook256 = int8_detail::Lut4CodebookOf<lut4_codebook_256>;

// Rows n[0 .. R) of a Q8 weight for row m of x, into out[0 .. R): each row's steps exactly as alone,
// x's codes loaded once for the R rows. With `ahead` (bytes; 0: none), each step requests the line
// `ahead` bytes past its own in each row (the rows' schedules: gemv_int8_256; an offset, not a pointer
// a row, so that a request is one instruction). The steps whose 64 codes lie in the row load them
// without the tail's test (the kernel alone, a 256 x 2048 weight in cache, one thread: avx-vnni
// 22.7-26.0 -> 9.6-9.8 us, avx2 25.9-35.2 -> 20.1-25.8 us; bench/RESULTS.md).
template <class Lanes, int R>
void q8_rows(const Int8Rows& x, int64_t m, const WeightRef& w, const int64_t* n, int64_t ahead, float* out) {
  const int64_t K = w.cols, full = K / 64;
  const int8_t* xq = x.codes + m * x.k_pad;
  const float* d = x.q8_lane_scales + m * (x.k_pad / 4);
  const int32_t* offsets = x.q8_lane_offsets + m * (x.k_pad / 4);
  const int8_t* row[R];
  __m256 lo[R], hi[R];
  for (int r = 0; r < R; ++r) {
    row[r] = static_cast<const int8_t*>(w.data) + n[r] * K;
    lo[r] = hi[r] = _mm256_setzero_ps();
  }
  auto half = [&](int64_t c, int h, __m256i codes, __m256i xc, __m256& acc) __attribute__((always_inline)) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Lanes::q8(codes, xc, offsets + 16 * c + 8 * h)),
                          _mm256_loadu_ps(d + 16 * c + 8 * h), acc);
  };
  int64_t c = 0;
  for (; c < full; ++c) {
    const __m256i x0 = load32(xq + 64 * c), x1 = load32(xq + 64 * c + 32);
    for (int r = 0; r < R; ++r) {
      if (ahead) request(row[r] + 64 * c + ahead);
      half(c, 0, load32(row[r] + 64 * c), x0, lo[r]);
      half(c, 1, load32(row[r] + 64 * c + 32), x1, hi[r]);
    }
  }
  // The steps (and halves) past K add nothing but +0 (zero codes): left out, the sums' bits the same
  // (an accumulator starting at +0 and adding finite products is never -0).
  for (; 64 * c < K; ++c)
    for (int r = 0; r < R; ++r) {
      if (ahead) request(row[r] + 64 * c + ahead);
      half(c, 0, load_codes(row[r], 64 * c, K), load32(xq + 64 * c), lo[r]);
      if (64 * c + 32 < K) half(c, 1, load_codes(row[r], 64 * c + 32, K), load32(xq + 64 * c + 32), hi[r]);
    }
  for (int r = 0; r < R; ++r) {
    const int64_t blk = int8_detail::first_block(w, n[r]);
    const float s = half_to_float(w.quant.scales[blk]);
    const int32_t z = w.quant.zero_points ? w.quant.zero_points[blk] : 0;
    const float centred = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(-static_cast<float>(128 + z)),
                                                     _mm_set_ss(x.row_sums[m]), _mm_set_ss(hsum16(lo[r], hi[r]))));
    out[r] = centred * s;
  }
}

// Up to eight fp16 scales from p (`valid` of them there; those past it read as 0) as floats. Where
// the eight before p + valid are the row's (`after_eight`: p is at least eight past its first), a short
// run is loaded ending at p + valid and moved down in registers: a copy through the stack, a 16-byte
// load of 2-byte stores, waits for the stores (a SmolVLM-256M q4 row of 576 has nine groups, the ninth
// alone: that wait was a fifth of the product's samples).
[[gnu::always_inline]] inline __m256 scales8(const uint16_t* p, int64_t valid, bool after_eight) {
  if (valid >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  if (after_eight) {
    const __m256 run = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + valid - 8)));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i from = _mm256_add_epi32(lane, _mm256_set1_epi32(static_cast<int>(8 - valid)));
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane));
    return _mm256_and_ps(_mm256_permutevar8x32_ps(run, from), keep);
  }
  alignas(16) uint16_t part[8] = {};
  for (int64_t i = 0; i < valid; ++i) part[i] = p[i];
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(part)));
}

// The min terms of a Q4 row whose parameters start at blk, for row m of x: m_g * X_g into lane g % 16
// of (lo, hi), in group order.
inline void q4_min_terms(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t blk, __m256& min_lo, __m256& min_hi) {
  const int64_t groups = int8_detail::groups_per_row(w);
  min_lo = min_hi = _mm256_setzero_ps();
  if (w.quant.group_size == 64) {
    // X_g is pair sum g: eight groups' mins converted and multiplied at once, the lanes past the
    // row's groups zero (fma(0, 0, acc) adds +0). The scalar form below had cost about half as much
    // as the steps of a 576-wide row.
    const float* pairs = x.pair_sums + m * (x.k_pad / 64);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t g0 = 0; g0 < groups; g0 += 16)
      for (int h = 0; h < 2; ++h) {
        const int64_t first = g0 + 8 * h, valid = groups - first < 8 ? groups - first : 8;
        if (valid <= 0) break;
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane);
        __m256& acc = h == 0 ? min_lo : min_hi;
        acc = _mm256_fmadd_ps(scales8(w.quant.mins + blk + first, valid, first >= 8), _mm256_maskload_ps(pairs + first, mask),
                              acc);
      }
    return;
  }
  for (int64_t g0 = 0; g0 < groups; g0 += 16) {
    alignas(32) float sums[16] = {}, mins[16] = {};
    for (int64_t i = 0; i < 16 && g0 + i < groups; ++i) {
      sums[i] = int8_detail::group_sum(x, m, w, g0 + i);
      mins[i] = half_to_float(w.quant.mins[blk + g0 + i]);
    }
    min_lo = _mm256_fmadd_ps(_mm256_load_ps(mins), _mm256_load_ps(sums), min_lo);
    min_hi = _mm256_fmadd_ps(_mm256_load_ps(mins + 8), _mm256_load_ps(sums + 8), min_hi);
  }
}

// The hsum16s of two rows' accumulators at once, into out[0] and out[1]: the same additions in the
// same order, two rows to a register.
[[gnu::always_inline]] inline void hsum16_pair(__m256 lo0, __m256 hi0, __m256 lo1, __m256 hi1, float* out) {
  const __m256 a0 = _mm256_add_ps(lo0, hi0), a1 = _mm256_add_ps(lo1, hi1);
  const __m256 a4 = _mm256_add_ps(_mm256_permute2f128_ps(a0, a1, 0x20), _mm256_permute2f128_ps(a0, a1, 0x31));
  const __m256 s2 = _mm256_add_ps(a4, _mm256_shuffle_ps(a4, a4, 0xEE));  // lanes 0, 1: i and i + 2
  const __m256 s1 = _mm256_add_ps(s2, _mm256_movehdup_ps(s2));           // lane 0: the two left
  out[0] = _mm256_cvtss_f32(s1);
  out[1] = _mm_cvtss_f32(_mm256_extractf128_ps(s1, 1));
}

// Rows n[0 .. R) of a Q4 weight for row m of x, into out[0 .. R) (`ahead` as for q8_rows).
template <class Lanes, int R>
void q4_rows(const Int8Rows& x, int64_t m, const WeightRef& w, const int64_t* n, int64_t ahead, float* out) {
  const int64_t row_bytes = w.cols / 2, K = w.cols, G = w.quant.group_size;
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  const uint8_t* row[R];
  const uint16_t* scales[R];
  __m256 lo[R], hi[R];
  for (int r = 0; r < R; ++r) {
    row[r] = static_cast<const uint8_t*>(w.data) + n[r] * row_bytes;
    scales[r] = w.quant.scales + int8_detail::first_block(w, n[r]);
    lo[r] = hi[r] = _mm256_setzero_ps();
    if (ahead) int8_detail::request_q4_parameters(w, scales[r] - w.quant.scales, ahead);
  }
  // Step c's half h of row r: lanes 0-7 in the group of code 128c (scale s), 8-15 in that of code 128c + 64.
  auto half = [&](int64_t c, int h, __m256i bytes, __m256 s, __m256& acc) __attribute__((always_inline)) {
    const int8_t* xc = xq + 128 * c + 32 * h;
    const __m256i i = Lanes::q4(bytes, load32(xc), load32(xc + 64));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(i), _mm256_loadu_ps(d + 16 * c + 8 * h)), s, acc);
  };
  int64_t c = 0;
  // Groups of 64 (quantize's default), the steps whose 64 bytes lie in the row: groups 2c and 2c + 1,
  // no division for the group, no test for the tail (the kernel alone, as for q8_rows: avx-vnni
  // 23.9-24.3 -> 17.2-17.4 us, avx2 25.6-26.3 -> 18.2-18.7 us).
  // Each half of a step for all R rows before the other, its x codes and lane scales loaded once, and
  // each group scale converted broadcast (vpbroadcastw, vcvtph2ps): the step's registers then hold
  // every row's accumulators (the rows one after the other, with a scalar conversion and a broadcast
  // per half, had spilled three of the eight; with the requests one instruction each, the kernel
  // alone, one thread, 576 x 2048: 34.6-34.9 -> 32.9-33.4 us).
  const auto half64 = [&](int64_t c, int h) __attribute__((always_inline)) {
    const int8_t* xc = xq + 128 * c + 32 * h;
    const __m256i x_even = load32(xc), x_odd = load32(xc + 64);
    const __m256 dh = _mm256_loadu_ps(d + 16 * c + 8 * h);
    for (int r = 0; r < R; ++r) {
      const __m256i bytes = load32(reinterpret_cast<const int8_t*>(row[r]) + 64 * c + 32 * h);
      const __m256 s = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(scales[r][2 * c + h])));
      __m256& acc = h == 0 ? lo[r] : hi[r];
      acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(Lanes::q4(bytes, x_even, x_odd)), dh), s, acc);
    }
  };
  if (G == 64) {
    for (; c < row_bytes / 64; ++c) {
      if (ahead)
        for (int r = 0; r < R; ++r) request(row[r] + 64 * c + ahead);
      half64(c, 0);
      half64(c, 1);
    }
    // A row ending half a step on (SmolVLM-256M's 576 wide) ends as above, its accumulators kept in
    // registers (the step below, a row at a time, had kept them in memory).
    if (row_bytes - 64 * c == 32) {
      if (ahead)
        for (int r = 0; r < R; ++r) request(row[r] + 64 * c + ahead);
      half64(c, 0);
      c = x.k_pad / 128;
    }
  }
  for (; c < x.k_pad / 128; ++c) {
    const int64_t code = 128 * c;  // 0 past K
    for (int r = 0; r < R; ++r) {
      if (ahead) request(row[r] + 64 * c + ahead);
      half(c, 0, load_codes(row[r], 64 * c, row_bytes), _mm256_set1_ps(half_to_float(scales[r][code / G])), lo[r]);
      // The last half past the row adds +0 (as in q8_rows).
      if (64 * c + 32 < row_bytes)
        half(c, 1, load_codes(row[r], 64 * c + 32, row_bytes),
             _mm256_set1_ps(code + 64 < K ? half_to_float(scales[r][(code + 64) / G]) : 0.f), hi[r]);
    }
    if (64 * c + 32 >= row_bytes) break;
  }
  const int64_t groups = int8_detail::groups_per_row(w);
  constexpr int kMostPairVectors = 4;  // 8 groups a vector: rows of at most 32 groups
  if (G == 64 && groups <= 8 * kMostPairVectors) {
    // q4_min_terms for the R rows, the pair sums' vectors loaded once for them all (a row at a time
    // each row had loaded them again, vmaskmovps), two rows reduced together (hsum16_pair): the same
    // operations in the same order. Kept apart from q4_min_terms: that function taking the vectors as
    // an argument left the 576 x 576 product as slow as before (13.3-13.5 against 11.9 us).
    const float* pairs = x.pair_sums + m * (x.k_pad / 64);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int chunks = static_cast<int>((groups + 7) / 8);
    __m256 pair_vectors[kMostPairVectors];
    for (int i = 0; i < chunks; ++i) {
      const int64_t valid = groups - 8 * i < 8 ? groups - 8 * i : 8;
      pair_vectors[i] = _mm256_maskload_ps(pairs + 8 * i, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane));
    }
    const auto with_mins = [&](int r, __m256& sum_lo, __m256& sum_hi) __attribute__((always_inline)) {
      __m256 min_lo = _mm256_setzero_ps(), min_hi = _mm256_setzero_ps();
      for (int i = 0; i < chunks; ++i) {
        const int64_t first = 8 * i, valid = groups - first < 8 ? groups - first : 8;
        __m256& acc = i % 2 == 0 ? min_lo : min_hi;
        acc = _mm256_fmadd_ps(scales8(w.quant.mins + (scales[r] - w.quant.scales) + first, valid, first >= 8),
                              pair_vectors[i], acc);
      }
      sum_lo = _mm256_add_ps(lo[r], min_lo);
      sum_hi = _mm256_add_ps(hi[r], min_hi);
    };
    int r = 0;
    for (; r + 2 <= R; r += 2) {
      __m256 lo0, hi0, lo1, hi1;
      with_mins(r, lo0, hi0);
      with_mins(r + 1, lo1, hi1);
      hsum16_pair(lo0, hi0, lo1, hi1, out + r);
    }
    if (r < R) {
      __m256 lo0, hi0;
      with_mins(r, lo0, hi0);
      out[r] = hsum16(lo0, hi0);
    }
    return;
  }
  for (int r = 0; r < R; ++r) {
    __m256 min_lo, min_hi;
    q4_min_terms(x, m, w, scales[r] - w.quant.scales, min_lo, min_hi);
    out[r] = hsum16(_mm256_add_ps(lo[r], min_lo), _mm256_add_ps(hi[r], min_hi));
  }
}

// The longest row (bytes) whose steps lut4_rows takes one half at a time (lanes 0-7 of every step,
// then 8-15), the second half reading the lines the first brought in: one half's accumulators, tables
// and x codes then fit the 16 registers where both halves' spilled with four rows (SmolVLM-256M LUT4
// `fast` decode steps 3-4 % shorter). A longer row's halves go together: its second pass would make
// no requests (HY-MT's LUT4 decode steps were 1-4 % longer with every row one half at a time). Q4's
// steps, fewer registers, gained nothing this way.
constexpr int64_t kOneHalfAtATimeBytes = 768;

// Rows n[0 .. R) of a LUT4 weight (row r's table in books[r]) for row m of x, into out[0 .. R): each
// row's steps exactly as alone, the x codes and lane scales loaded once for the R rows (a 576-wide row
// is 4.5 steps, and what a row costs besides its steps weighed as much). `ahead` as for q8_rows.
template <class Lanes, int R>
void lut4_rows(const Int8Rows& x, int64_t m, const WeightRef& w, const int64_t* n, const Lut4Codebook256* const* books,
               int64_t ahead, float* out) {
  const int64_t row_bytes = w.cols / 2, whole = row_bytes / 64;
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  const int8_t* row[R];
  __m256i table[R];
  __m256 lo[R], hi[R];
  for (int r = 0; r < R; ++r) {
    row[r] = static_cast<const int8_t*>(w.data) + n[r] * row_bytes;
    table[r] = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(books[r]->codes)));
    lo[r] = hi[r] = _mm256_setzero_ps();
  }
  // Half h of step c for the R rows, each row's 32 bytes from load(r, byte).
  auto half = [&](int64_t c, int h, __m256* acc, auto load) __attribute__((always_inline)) {
    const int8_t* xc = xq + 128 * c + 32 * h;
    const __m256i x_even = load32(xc), x_odd = load32(xc + 64);
    const __m256 dh = _mm256_loadu_ps(d + 16 * c + 8 * h);
    for (int r = 0; r < R; ++r) {
      const __m256i i = Lanes::lut4(load(r, 64 * c + 32 * h), table[r], x_even, x_odd);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), dh, acc[r]);
    }
  };
  const auto whole_codes = [&](int r, int64_t i) { return load32(row[r] + i); };
  const auto codes_to_end = [&](int r, int64_t i) { return load_codes(row[r], i, row_bytes); };
  // Halves [h0, h1] of every step of the row, each sum adding its steps in order. The steps whose 64
  // bytes lie in the row go without the tail's test (as in q8_rows: the test in every step had kept a
  // stack copy of the tail live and spilled the accumulators); a half past the row's end adds +0 (as
  // in q8_rows) and is left out.
  const auto pass = [&](int h0, int h1) __attribute__((always_inline)) {
    for (int64_t c = 0; c < whole; ++c) {
      if (h0 == 0 && ahead)
        for (int r = 0; r < R; ++r) request(row[r] + 64 * c + ahead);
      for (int h = h0; h <= h1; ++h) half(c, h, h == 0 ? lo : hi, whole_codes);
    }
    if (64 * whole + 32 * h0 >= row_bytes) return;
    if (h0 == 0 && ahead)
      for (int r = 0; r < R; ++r) request(row[r] + 64 * whole + ahead);
    for (int h = h0; h <= h1; ++h) {
      const int64_t at = 64 * whole + 32 * h;
      if (at + 32 <= row_bytes)
        half(whole, h, h == 0 ? lo : hi, whole_codes);
      else if (at < row_bytes)
        half(whole, h, h == 0 ? lo : hi, codes_to_end);
    }
  };
  // A short row one half at a time (kOneHalfAtATimeBytes; a 576-wide row's product 8 % shorter, the
  // kernel alone in cache, one thread).
  if (row_bytes <= kOneHalfAtATimeBytes) {
    pass(0, 0);
    pass(1, 1);
  } else {
    pass(0, 1);
  }
  int r = 0;
  for (; r + 2 <= R; r += 2) hsum16_pair(lo[r], hi[r], lo[r + 1], hi[r + 1], out + r);
  if (r < R) out[r] = hsum16(lo[r], hi[r]);
  for (r = 0; r < R; ++r) out[r] = std::fma(books[r]->offset, x.row_sums[m], out[r] * books[r]->scale);
}

// Rows [n0, n1) of a LUT4 weight for every row of x, two rows of one block at a time where they are.
template <class Lanes>
void lut4_gemv(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1,
               const int8_detail::RowRequests& requests) {
  Lut4Codebook256 codebook;
  const Lut4Codebook256* books[2] = {&codebook, &codebook};
  const int64_t block_rows = w.quant.block_rows;
  for (int64_t n = n0; n < n1;) {
    const int64_t blk = n / block_rows;
    const int R = n + 1 < n1 && (n + 1) / block_rows == blk ? 2 : 1;
    codebook.take(w, blk);
    const int64_t rows[2] = {n, n + 1};
    const int64_t ahead = requests.ahead_bytes(n, R);
    for (int64_t m = 0; m < x.M; ++m) {
      float r[2];
      const int64_t a = m == 0 ? ahead : 0;
      if (R == 2)
        lut4_rows<Lanes, 2>(x, m, w, rows, books, a, r);
      else
        lut4_rows<Lanes, 1>(x, m, w, rows, books, a, r);
      for (int i = 0; i < R; ++i) y[m * w.rows + n + i] = bias ? r[i] + bias[n + i] : r[i];
    }
    n += R;
  }
}

// Rows `rows[0 .. R)` of y for every row of x through `rows_of` (q8_rows, q4_rows or lut4_rows
// bound to its tables); the first row of x makes the requests in `ahead`.
template <int R, class RowsOf>
void rows_for_every_x_row(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, const int64_t* rows,
                          int64_t ahead, RowsOf rows_of) {
  for (int64_t m = 0; m < x.M; ++m) {
    float r[R];
    rows_of.template operator()<R>(m, rows, m == 0 ? ahead : 0, r);
    for (int i = 0; i < R; ++i) y[m * w.rows + rows[i]] = bias ? r[i] + bias[rows[i]] : r[i];
  }
}

// Every row of x over rows [n0, n1) as four streams: each pass takes the next row of each quarter of
// the range (the rows left over one by one), each stream requesting its lines kStreamBytesAhead on.
template <class Lanes>
void row_streams(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t part = (n1 - n0) / 4;
  Lut4Codebook256 books[4];
  const Lut4Codebook256* book_of[4] = {&books[0], &books[1], &books[2], &books[3]};
  auto rows_of = [&]<int R>(int64_t m, const int64_t* rows, int64_t ahead, float* out) {
    if (w.format == WeightFormat::Q8) {
      q8_rows<Lanes, R>(x, m, w, rows, ahead, out);
    } else if (w.format == WeightFormat::Q4) {
      q4_rows<Lanes, R>(x, m, w, rows, ahead, out);
    } else {
      if (m == 0)
        for (int r = 0; r < R; ++r) books[r].take(w, rows[r] / w.quant.block_rows);
      lut4_rows<Lanes, R>(x, m, w, rows, book_of, ahead, out);
    }
  };
  for (int64_t i = 0; i < part; ++i) {
    const int64_t rows[4] = {n0 + i, n0 + part + i, n0 + 2 * part + i, n0 + 3 * part + i};
    rows_for_every_x_row<4>(x, w, bias, y, rows, kStreamBytesAhead, rows_of);
  }
  for (int64_t n = n0 + 4 * part; n < n1; ++n) rows_for_every_x_row<1>(x, w, bias, y, &n, 0, rows_of);
}

// Rows [n0, n1) of y for every row of x (the signature of GemmKernels::gemv_int8); the first row of
// x through a weight row requests the row ahead (int8_detail::RowRequests).
template <class Lanes>
void gemv_int8_256(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  if (read_four_streams(cpu_features().row_streams_256())) return row_streams<Lanes>(x, w, bias, y, n0, n1);
  const int8_detail::RowRequests requests(w, n0, n1);
  if (w.format == WeightFormat::Lut4) return lut4_gemv<Lanes>(x, w, bias, y, n0, n1, requests);
  for (int64_t n = n0; n < n1; ++n) {
    rows_for_every_x_row<1>(x, w, bias, y, &n, requests.ahead_bytes(n),
                            [&]<int R>(int64_t m, const int64_t* rows, int64_t a, float* out) {
                              if (w.format == WeightFormat::Q8)
                                q8_rows<Lanes, R>(x, m, w, rows, a, out);
                              else
                                q4_rows<Lanes, R>(x, m, w, rows, a, out);
                            });
  }
}

}  // namespace
}  // namespace smolvlm::gemm
