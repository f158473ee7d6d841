// The integer decode products of kernels/gemv_int8.h on AVX-512 VNNI: vpdpbusd multiplies 64 weight
// codes (unsigned bytes) by 64 x codes (signed bytes) into 16 int32 lanes, 4 products each, exactly;
// the float epilogue is the one gemv_int8.h spells out, lane for lane, so the bits are the scalar
// reference's. Only called where the CPU has avx512_vnni (gemm.cpp checks).
#include <immintrin.h>

#include "kernels/cpu.h"
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

// One weight row a pass (except on the CPUs that read four streams best: row_streams): the rows then
// stream in one after the other. Four adjacent weight rows a pass, sharing the loads of x and running
// four FMA chains side by side, were 1.2x (q4) to 1.6x (q8) faster in cache on a 256 x 2048 weight but
// slower from memory (HY-MT's token: q8 47.5-59.5 against 38.8-42.6 ms, two threads;
// bench/RESULTS.md). Several rows of x (batched decode) share each step of the weight row instead: its
// codes are loaded and split once, its scales picked once, for up to kXRows rows of x, each with its
// own accumulator adding its steps in the reference's order, so every result has the bits it has
// alone.
constexpr int kXRows = 4;

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

// What every row of one weight shares, read once per call.
struct RowsOf {
  const WeightRef& w;
  int64_t groups;  // parameter sets per block row
  // The first parameter set of row n (int8_detail::first_block, without a division where every row
  // is its own block).
  int64_t first_block(int64_t n) const {
    return w.quant.block_rows == 1 ? n * groups : int8_detail::first_block(w, n);
  }
};

// Rows rows[0 .. R) of a Q8 weight for rows m0 .. m0 + X - 1 of x, into out[r * X + j]: each weight
// row's codes are loaded and flipped once a step for all X rows of x, and each row of x's codes and
// scales serve all R weight rows (batched decode, a 1.8 B model's token with 4 rows of x: sharing the
// loads of x across 4 weight rows, 73-74 ms, beat sharing a weight row's across the rows of x, 100-112
// ms). With `ahead` (rows side by side), each step requests R lines there; with kStreams (rows far
// apart), each row requests its own line kStreamBytesAhead on.
template <int R, int X, bool kStreams>
SMOLVLM_VNNI inline void q8_block(const Int8Rows& x, int64_t m0, const RowsOf& p, const int64_t* rows, float* out,
                                  const char* ahead) {
  const WeightRef& w = p.w;
  const int64_t K = w.cols, steps = x.k_pad / 64, whole = K / 64;
  const int8_t* xq[X];
  const float* d[X];
  for (int j = 0; j < X; ++j) xq[j] = x.codes + (m0 + j) * x.k_pad, d[j] = x.q8_lane_scales + (m0 + j) * (x.k_pad / 4);
  const int8_t* row[R];
  __m512 acc[R * X];
  for (int r = 0; r < R; ++r) row[r] = static_cast<const int8_t*>(w.data) + rows[r] * K;
#pragma GCC unroll 16
  for (int i = 0; i < R * X; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  auto step = [&](int64_t c, bool in_row) __attribute__((always_inline, target("avx512vnni"))) {
    if (ahead)
      for (int r = 0; r < R; ++r) _mm_prefetch(ahead + 64 * (R * c + r), _MM_HINT_T0);
    if constexpr (kStreams)
      for (int r = 0; r < R; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(row[r]) + 64 * c + kStreamBytesAhead, _MM_HINT_T0);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512i bytes = in_row ? _mm512_loadu_si512(row[r] + 64 * c) : load_codes(row[r], 64 * c, K);
      const __m512i codes = _mm512_xor_si512(bytes, flip);  // q + 128
#pragma GCC unroll 4
      for (int j = 0; j < X; ++j) {
        const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, _mm512_loadu_si512(xq[j] + 64 * c));
        acc[r * X + j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_loadu_ps(d[j] + 16 * c), acc[r * X + j]);
      }
    }
  };
  int64_t c = 0;
  for (; c < whole; ++c) step(c, true);
  for (; c < steps; ++c) step(c, false);
  for (int r = 0; r < R; ++r) {
    const int64_t blk = p.first_block(rows[r]);
    const float s = half_to_float(w.quant.scales[blk]);
    const int32_t z = w.quant.zero_points ? w.quant.zero_points[blk] : 0;
    for (int j = 0; j < X; ++j) {
      const float centred =
          _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(-static_cast<float>(128 + z)), _mm_set_ss(x.row_sums[m0 + j]),
                                     _mm_set_ss(hsum16(acc[r * X + j]))));
      out[r * X + j] = centred * s;
    }
  }
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
[[gnu::always_inline]] inline __m512 q4_min_terms(const Int8Rows& x, int64_t m, const RowsOf& p, int64_t blk) {
  const WeightRef& w = p.w;
  __m512 min_acc = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < p.groups; g0 += 16) {
    const int64_t count = p.groups - g0 < 16 ? p.groups - g0 : 16;
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

// One 128-code step c of a Q4 row for X rows of x: the step's bytes split into the even and odd
// codes, each row's integer sums scaled by its lane scales, then by the step's group scales s.
template <int X>
[[gnu::always_inline]] SMOLVLM_VNNI inline void q4_step(__m512i bytes, __m512 s, const int8_t* const* xq,
                                                        const float* const* d, int64_t c, __m512* acc) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i even = _mm512_and_si512(bytes, low), odd = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
  for (int j = 0; j < X; ++j) {
    __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), even, _mm512_loadu_si512(xq[j] + 128 * c));
    isum = _mm512_dpbusd_epi32(isum, odd, _mm512_loadu_si512(xq[j] + 128 * c + 64));
    const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_loadu_ps(d[j] + 16 * c));
    acc[j] = _mm512_fmadd_ps(f, s, acc[j]);
  }
}

// Row n of a Q4 weight for rows m0 .. m0 + X - 1 of x, into out[0 .. X).
template <int X>
SMOLVLM_VNNI inline void q4_row(const Int8Rows& x, int64_t m0, const RowsOf& p, int64_t n, float* out,
                                const char* ahead) {
  const WeightRef& w = p.w;
  const int64_t row_bytes = w.cols / 2, blk = p.first_block(n), steps = x.k_pad / 128;
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * row_bytes;
  const int8_t* xq[X];
  const float* d[X];
  __m512 acc[X];
  for (int j = 0; j < X; ++j) {
    xq[j] = x.nibble_codes + (m0 + j) * x.k_pad;
    d[j] = x.q4_lane_scales + (m0 + j) * (x.k_pad / 8);
    acc[j] = _mm512_setzero_ps();
  }
  int64_t c = 0;
  if (w.quant.group_size == 64) {
    // Groups of 64 (quantize's default): each step takes groups 2c and 2c + 1, picked from 16 scales
    // converted at once per 8 steps. Runs of 8 steps whose bytes lie in the row go straight through,
    // their picks constants, nothing masked (the kernel alone, a 256 x 2048 weight in cache, one
    // thread: 8.7-9.0 -> 6.1-6.4 us; a HY-MT token from memory did not change: bench/RESULTS.md).
    const __m512i pick_first = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    for (; 64 * (c + 8) <= row_bytes; c += 8) {
      const __m512 scales16 =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.quant.scales + blk + 2 * c)));
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        if (ahead) _mm_prefetch(ahead + 64 * (c + i), _MM_HINT_T0);
        const __m512 s = _mm512_permutexvar_ps(_mm512_add_epi32(pick_first, _mm512_set1_epi32(2 * i)), scales16);
        q4_step<X>(_mm512_loadu_si512(row + 64 * (c + i)), s, xq, d, c + i, acc);
      }
    }
    // The rest: 16 scales from step c (those past the row read as 0, as q4_step_scales gives).
    __m512 scales16 = _mm512_setzero_ps();
    for (; c < steps; ++c) {
      if (ahead) _mm_prefetch(ahead + 64 * c, _MM_HINT_T0);
      if (c % 8 == 0) {
        const int64_t count = p.groups - 2 * c < 16 ? p.groups - 2 * c : 16;
        const __mmask16 valid = static_cast<__mmask16>((1u << count) - 1);
        scales16 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, w.quant.scales + blk + 2 * c));
      }
      const __m512i pick = _mm512_add_epi32(pick_first, _mm512_set1_epi32(static_cast<int>(2 * (c % 8))));
      q4_step<X>(load_codes(row, 64 * c, row_bytes), _mm512_permutexvar_ps(pick, scales16), xq, d, c, acc);
    }
  }
  for (; c < steps; ++c) {
    if (ahead) _mm_prefetch(ahead + 64 * c, _MM_HINT_T0);
    q4_step<X>(load_codes(row, 64 * c, row_bytes), q4_step_scales(w, blk, c), xq, d, c, acc);
  }
  for (int j = 0; j < X; ++j) out[j] = hsum16(_mm512_add_ps(acc[j], q4_min_terms(x, m0 + j, p, blk)));
}

// The codes of a LUT4 row's block (int8_detail::lut4_codebook's, here 16 at once; a table with a
// non-finite entry is the scalar one's) in each 128-bit lane for vpshufb, with their scale and
// offset: converted once per block of rows a pass takes one after the other.
struct Lut4Table {
  int64_t first_row = 0, end_row = 0;  // the rows [first_row, end_row) of the block taken
  __m512i codes = _mm512_setzero_si512();
  float scale = 0.f, offset = 0.f;
  void take(const RowsOf& p, int64_t n) {
    // A row of the block taken divides nothing: the divisions (n / block_rows) of a pass of four rows
    // took 2-4% of the 256M model's 576 x 576 product in cache (bench/RESULTS.md).
    if (n >= first_row && n < end_row) return;
    const int64_t block_rows = p.w.quant.block_rows;
    first_row = n / block_rows * block_rows, end_row = first_row + block_rows;
    const uint16_t* lut = p.w.quant.lut + 16 * p.first_block(n);
    const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lut)));
    const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    __m128i t;
    if (finite == 0xFFFF) {
      const float lo = _mm512_reduce_min_ps(v), range = _mm512_reduce_max_ps(v) - lo;
      const __m512 inv = _mm512_set1_ps(range > 0.f ? int8_detail::kLut4Top / range : 0.f);
      // Each code round((v - lo) * inv), ties to even (the default rounding), 0..kLut4Top.
      t = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(v, _mm512_set1_ps(lo)), inv)));
      scale = range / int8_detail::kLut4Top;
      offset = lo;
    } else {
      int8_detail::Lut4Codes scalar;
      int8_detail::lut4_codebook(lut, scalar);
      t = _mm_load_si128(reinterpret_cast<const __m128i*>(scalar.codes));
      scale = scalar.scale;
      offset = scalar.offset;
    }
    codes = _mm512_broadcast_i32x4(t);
  }
};

// One 128-code step c of a LUT4 row (64 bytes) for X rows of x: each nibble looked up as its code
// (unsigned, vpdpbusd's first operand), multiplied by the x codes: the lane's sum of t times x,
// exactly; then scaled by the lane scales.
template <int X>
[[gnu::always_inline]] SMOLVLM_VNNI inline void lut4_step(__m512i bytes, __m512i table, const int8_t* const* xq,
                                                          const float* const* d, int64_t c, __m512* acc) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i even = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes, low));
  const __m512i odd = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low));
  for (int j = 0; j < X; ++j) {
    __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), even, _mm512_loadu_si512(xq[j] + 128 * c));
    isum = _mm512_dpbusd_epi32(isum, odd, _mm512_loadu_si512(xq[j] + 128 * c + 64));
    acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_loadu_ps(d[j] + 16 * c), acc[j]);
  }
}

// A LUT4 row's result for row m of x from its lanes: fma(offset, X, hsum(acc) * scale).
SMOLVLM_VNNI inline float lut4_result(__m512 acc, const Lut4Table& table, const Int8Rows& x, int64_t m) {
  return std::fma(table.offset, x.row_sums[m], hsum16(acc) * table.scale);
}

// Row n of a LUT4 weight for rows m0 .. m0 + X - 1 of x, into out[0 .. X).
template <int X>
SMOLVLM_VNNI inline void lut4_row(const Int8Rows& x, int64_t m0, const RowsOf& p, int64_t n, float* out,
                                  const char* ahead, Lut4Table& table) {
  const int64_t row_bytes = p.w.cols / 2, steps = x.k_pad / 128, whole = row_bytes / 64;
  const uint8_t* row = static_cast<const uint8_t*>(p.w.data) + n * row_bytes;
  table.take(p, n);
  const int8_t* xq[X];
  const float* d[X];
  __m512 acc[X];
  for (int j = 0; j < X; ++j) {
    xq[j] = x.nibble_codes + (m0 + j) * x.k_pad;
    d[j] = x.q4_lane_scales + (m0 + j) * (x.k_pad / 8);
    acc[j] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < steps; ++c) {
    if (ahead) _mm_prefetch(ahead + 64 * c, _MM_HINT_T0);
    const __m512i bytes = c < whole ? _mm512_loadu_si512(row + 64 * c) : load_codes(row, 64 * c, row_bytes);
    lut4_step<X>(bytes, table.codes, xq, d, c, acc);
  }
  for (int j = 0; j < X; ++j) out[j] = lut4_result(acc[j], table, x, m0 + j);
}

// Row n of y for rows m0 .. m0 + X - 1 of x.
template <int X>
SMOLVLM_VNNI inline void row_for_x_rows(const Int8Rows& x, const RowsOf& p, const float* bias, float* y, int64_t n,
                                        int64_t m0, const char* ahead, Lut4Table& table) {
  float r[X];
  switch (p.w.format) {
    case WeightFormat::Q8: q8_block<1, X, false>(x, m0, p, &n, r, ahead); break;
    case WeightFormat::Q4: q4_row<X>(x, m0, p, n, r, ahead); break;
    default: lut4_row<X>(x, m0, p, n, r, ahead, table); break;
  }
  for (int j = 0; j < X; ++j) y[(m0 + j) * p.w.rows + n] = bias ? r[j] + bias[n] : r[j];
}

// Row n of y for every row of x, kXRows at a time; `ahead` requested with the first.
SMOLVLM_VNNI inline void row_for_every_x_row(const Int8Rows& x, const RowsOf& p, const float* bias, float* y,
                                             int64_t n, const char* ahead, Lut4Table& table) {
  int64_t m = 0;
  for (; m + kXRows <= x.M; m += kXRows, ahead = nullptr) row_for_x_rows<kXRows>(x, p, bias, y, n, m, ahead, table);
  switch (x.M - m) {
    case 3: row_for_x_rows<3>(x, p, bias, y, n, m, ahead, table); break;
    case 2: row_for_x_rows<2>(x, p, bias, y, n, m, ahead, table); break;
    case 1: row_for_x_rows<1>(x, p, bias, y, n, m, ahead, table); break;
    default: break;
  }
}

// Rows rows[0..R) of a 4-bit weight (LUT4, or Q4 in groups of 64) for rows m0 .. m0 + X - 1 of x,
// side by side, into out[r * X + j]: each (row, row of x) pair's steps, scales and sums exactly as
// q4_row<1> / lut4_row<1> take them (q4_step, lut4_step). A step's weight bytes are split (and looked
// up) once for the X rows of x. With `request`, for weight rows far apart
// (CpuFeatures::decode_row_streams), each row requests its lines kStreamBytesAhead on (kernels/cpu.h).
template <int R, int X, WeightFormat F, bool kRequest>
SMOLVLM_VNNI inline void nibble_block(const Int8Rows& x, int64_t m0, const RowsOf& p, const int64_t* rows, float* out,
                                      Lut4Table* tables) {
  static_assert(F == WeightFormat::Q4 || F == WeightFormat::Lut4);
  const WeightRef& w = p.w;
  const int64_t row_bytes = w.cols / 2, steps = x.k_pad / 128, whole = row_bytes / 64;
  const int8_t* xq[X];
  const float* d[X];
  for (int j = 0; j < X; ++j)
    xq[j] = x.nibble_codes + (m0 + j) * x.k_pad, d[j] = x.q4_lane_scales + (m0 + j) * (x.k_pad / 8);
  const uint8_t* row[R];
  int64_t blk[R];
  __m512 acc[R * X], scales16[R];
  __m512i table[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    row[r] = static_cast<const uint8_t*>(w.data) + rows[r] * row_bytes;
    if constexpr (F == WeightFormat::Q4) blk[r] = p.first_block(rows[r]);
    scales16[r] = _mm512_setzero_ps();
    if constexpr (F == WeightFormat::Lut4) {
      tables[r].take(p, rows[r]);
      table[r] = tables[r].codes;
    }
  }
  if constexpr (kRequest && F == WeightFormat::Q4)
    for (int r = 0; r < R; ++r) int8_detail::request_q4_parameters(w, blk[r], kStreamBytesAhead);
#pragma GCC unroll 16
  for (int i = 0; i < R * X; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i pick_first = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  auto step = [&](int64_t c, bool in_row) __attribute__((always_inline, target("avx512vnni"))) {
    if constexpr (F == WeightFormat::Q4) {
      if (c % 8 == 0) {
        const int64_t count = p.groups - 2 * c < 16 ? p.groups - 2 * c : 16;
        const __mmask16 valid = static_cast<__mmask16>((1u << count) - 1);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
          scales16[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, w.quant.scales + blk[r] + 2 * c));
      }
    }
    const __m512i pick = _mm512_add_epi32(pick_first, _mm512_set1_epi32(static_cast<int>(2 * (c % 8))));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      if constexpr (kRequest)
        _mm_prefetch(reinterpret_cast<const char*>(row[r]) + 64 * c + kStreamBytesAhead, _MM_HINT_T0);
      const __m512i bytes = in_row ? _mm512_loadu_si512(row[r] + 64 * c) : load_codes(row[r], 64 * c, row_bytes);
      if constexpr (F == WeightFormat::Lut4)
        lut4_step<X>(bytes, table[r], xq, d, c, &acc[r * X]);
      else
        q4_step<X>(bytes, _mm512_permutexvar_ps(pick, scales16[r]), xq, d, c, &acc[r * X]);
    }
  };
  int64_t c = 0;
  for (; c < whole; ++c) step(c, true);
  for (; c < steps; ++c) step(c, false);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < X; ++j) {
      if constexpr (F == WeightFormat::Lut4)
        out[r * X + j] = lut4_result(acc[r * X + j], tables[r], x, m0 + j);
      else
        out[r * X + j] = hsum16(_mm512_add_ps(acc[r * X + j], q4_min_terms(x, m0 + j, p, blk[r])));
    }
}

// Rows m0 .. m0 + X - 1 of x for the four rows of a pass, into y.
template <int X, WeightFormat F>
SMOLVLM_VNNI inline void four_rows(const Int8Rows& x, int64_t m0, const RowsOf& p, const int64_t* rows,
                                   const float* bias, float* y, Lut4Table* tables) {
  float r[4 * X];
  if constexpr (F == WeightFormat::Q8) {
    if (m0 == 0)
      q8_block<4, X, true>(x, m0, p, rows, r, nullptr);
    else
      q8_block<4, X, false>(x, m0, p, rows, r, nullptr);
  } else {
    if (m0 == 0)
      nibble_block<4, X, F, true>(x, m0, p, rows, r, tables);
    else
      nibble_block<4, X, F, false>(x, m0, p, rows, r, tables);
  }
  // Unrolled: as loops, GCC made these stores to rows far apart scatters (vscatterqps), which AMD
  // cores run slowly: the 256M model's 576 x 576 LUT4 product in cache took 12% longer with them.
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < X; ++j) y[(m0 + j) * p.w.rows + rows[i]] = bias ? r[i * X + j] + bias[rows[i]] : r[i * X + j];
}

// Every row of x over rows [n0, n1) as four streams: each pass takes the next row of each quarter of
// the range (the rows left over one by one), for up to kXRows rows of x at a time; the first rows of
// x make the streams' requests, the others find the pass's rows in cache.
template <WeightFormat F>
SMOLVLM_VNNI void row_streams(const Int8Rows& x, const RowsOf& p, const float* bias, float* y, int64_t n0,
                              int64_t n1) {
  Lut4Table tables[4];
  const int64_t part = (n1 - n0) / 4;
  for (int64_t i = 0; i < part; ++i) {
    const int64_t rows[4] = {n0 + i, n0 + part + i, n0 + 2 * part + i, n0 + 3 * part + i};
    int64_t m = 0;
    for (; m + kXRows <= x.M; m += kXRows) four_rows<kXRows, F>(x, m, p, rows, bias, y, tables);
    switch (x.M - m) {
      case 3: four_rows<3, F>(x, m, p, rows, bias, y, tables); break;
      case 2: four_rows<2, F>(x, m, p, rows, bias, y, tables); break;
      case 1: four_rows<1, F>(x, m, p, rows, bias, y, tables); break;
      default: break;
    }
  }
  for (int64_t n = n0 + 4 * part; n < n1; ++n) row_for_every_x_row(x, p, bias, y, n, nullptr, tables[0]);
}

}  // namespace

SMOLVLM_VNNI void gemv_int8_avx512(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0,
                                   int64_t n1) {
  const RowsOf p{w, int8_detail::groups_per_row(w)};
  Lut4Table table;
  // Where the CPU reads several streams best (CpuFeatures::decode_row_streams): as the fp32 4-bit
  // rows, each pass takes the next row of each quarter of the range, each stream with its own
  // requests ahead (HY-MT's q8 linears, one row of x, best step 43-44 -> 35-40 ms against one stream
  // with its requests, 3 alternated rounds; bench/RESULTS.md), the rows of x up to kXRows at a time
  // (the 256M model's LUT4 products alone in cache, one thread, 4 rows of x: 17.5-18.2 -> 9.6-10.6 us
  // a 576 x 576 weight; 2 rows 12.3-12.5 -> 5.1-5.9).
  const bool nibbles = w.format == WeightFormat::Lut4 || (w.format == WeightFormat::Q4 && w.quant.group_size == 64);
  if ((nibbles || w.format == WeightFormat::Q8) && read_four_streams(cpu_features().decode_row_streams())) {
    switch (w.format) {
      case WeightFormat::Lut4: row_streams<WeightFormat::Lut4>(x, p, bias, y, n0, n1); break;
      case WeightFormat::Q4: row_streams<WeightFormat::Q4>(x, p, bias, y, n0, n1); break;
      default: row_streams<WeightFormat::Q8>(x, p, bias, y, n0, n1); break;
    }
    return;
  }
  const int8_detail::RowRequests requests(w, n0, n1);
  int64_t n = n0;
  if (w.format == WeightFormat::Q8 && x.M > 1)
    for (; n + kXRows <= n1; n += kXRows) {
      const char* ahead = requests.ahead(n, kXRows);
      const int64_t rows[kXRows] = {n, n + 1, n + 2, n + 3};
      for (int64_t m = 0; m < x.M; ++m) {
        float r[kXRows];
        q8_block<kXRows, 1, false>(x, m, p, rows, r, m == 0 ? ahead : nullptr);
        for (int i = 0; i < kXRows; ++i) y[m * w.rows + n + i] = bias ? r[i] + bias[n + i] : r[i];
      }
    }
  // The requests go out with the first rows of x: a row of the weight ahead a pass.
  for (; n < n1; ++n) row_for_every_x_row(x, p, bias, y, n, requests.ahead(n), table);
}

// round_int8_row_reference's bits, a block of 32 values in two registers: the largest magnitude
// exact in any order (a NaN ignored, as the reference's comparisons ignore it), each code from the
// separately rounded product and sum (rounding intrinsics: never fused), the codes' sum exact.
void round_int8_row_avx512(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums) {
  const __m512 shift = _mm512_set1_ps(12582912.f);  // 1.5 * 2^23, as quantize_block
  const __m512i shift_bits = _mm512_set1_epi32(0x4B400000), low = _mm512_set1_epi32(-127),
                high = _mm512_set1_epi32(127);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  auto codes = [&](__m512 v, __m512 inv) __attribute__((always_inline)) {
    __m512 shifted = _mm512_add_round_ps(_mm512_mul_round_ps(v, inv, kRound), shift, kRound);
    shifted = _mm512_mask_mov_ps(shift, _mm512_cmp_ps_mask(shifted, shifted, _CMP_EQ_OQ), shifted);
    const __m512i c = _mm512_sub_epi32(_mm512_castps_si512(shifted), shift_bits);
    return _mm512_min_epi32(_mm512_max_epi32(c, low), high);
  };
  for (int64_t j = 0; j < k_pad / 32; ++j) {
    const int64_t k0 = 32 * j, n = K - k0 < 0 ? 0 : K - k0 < 32 ? K - k0 : 32;
    const __mmask16 first = n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1);
    const __mmask16 second = n >= 32 ? 0xFFFF : n > 16 ? static_cast<__mmask16>((1u << (n - 16)) - 1) : 0;
    // Masked loads read nothing where their mask is clear; the addresses stay within x all the same.
    const float* at = n > 0 ? x + k0 : x;
    const __m512 v0 = _mm512_maskz_loadu_ps(first, at), v1 = _mm512_maskz_loadu_ps(second, n > 16 ? at + 16 : at);
    // max(a, b) gives b where a is NaN.
    const __m512 a = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(a);
    const __m512 inv = _mm512_set1_ps(amax > 0.f ? 127.f / amax : 0.f);
    const __m512i c0 = codes(v0, inv), c1 = codes(v1, inv);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0), _mm512_cvtepi32_epi8(c0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k0 + 16), _mm512_cvtepi32_epi8(c1));
    const float scale = amax / 127.f;
    scales[j] = scale;
    sums[j] = scale * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1)));
  }
}

}  // namespace smolvlm::gemm
