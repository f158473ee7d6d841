// AVX-512 versions of attention's row loops (ops.h, detail; compiled with -mavx512f; called only when
// the active kernel path is avx512). The other vector ops run their AVX2 versions on this path.
#include <immintrin.h>

#include <algorithm>

#include "kernels/ops.h"

// GCC 12 reports the "undefined" pass-through operand of the unpack intrinsics as uninitialized; it
// is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace smolvlm::detail {

namespace {

// Lanes of the 16-float column at c of a row of D floats that lie inside the row.
inline __mmask16 column_mask(int64_t c, int64_t D) {
  const int64_t left = D - c;
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

// Lane i of the result = the sum of the 16 lanes of a[i]: pairs of lanes added within each 128-bit
// lane (unpack by 32, then by 64 bits), then the four 128-bit lanes (two shuffles by 128 bits). The
// order of the additions for a[i] depends on nothing else, so a key's score is the same whatever keys
// share its block. 45 instructions for 16 sums, against about 8 per sum one at a time.
inline __m512 sum_lanes16(const __m512 (&a)[16]) {
  __m512 b[8], c[4];
  for (int i = 0; i < 8; ++i)
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {
    const __m512d lo = _mm512_castps_pd(b[2 * i]), hi = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi)), _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi)));
  }
  // Even and odd 128-bit lanes of (x, y): x0 x2 y0 y2 and x1 x3 y1 y3.
  const auto pair_lanes = [](__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xDD));
  };
  return pair_lanes(pair_lanes(c[0], c[1]), pair_lanes(c[2], c[3]));
}

// Scores of `count` <= 16 keys from k (rows `stride` apart): each key's 16-lane accumulator takes one
// FMA per 16-float column in column order (the last column masked), then sum_lanes16. Absent keys
// keep zero accumulators and are not stored.
[[gnu::always_inline]] inline void dot_block16(const float* q, const float* k, int64_t stride, int64_t D, int count, float* scores) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t c = 0; c < D; c += 16) {
    const __mmask16 m = column_mask(c, D);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + c);
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r)
      if (r < count) acc[r] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k + r * stride + c), acc[r]);
  }
  const __m512 s = sum_lanes16(acc);
  if (count == 16) _mm512_storeu_ps(scores, s);
  else _mm512_mask_storeu_ps(scores, __mmask16((1u << count) - 1), s);
}

// out[c .. c + 16C) (the last column masked to D) = Σ_j p[j]·v_j in j order. With C <= 4 columns
// the even and odd j go to two sets of accumulators, added at the end, so that at least 8 FMA chains
// run side by side.
template <int C>
inline void weighted_sum_columns(const float* p, const float* v, int64_t stride, int64_t n, int64_t c0, int64_t D,
                                 float* out) {
  constexpr int kSets = C <= 4 ? 2 : 1;
  __mmask16 m[C];
  __m512 acc[kSets][C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    m[c] = column_mask(c0 + 16 * c, D);
    for (int s = 0; s < kSets; ++s) acc[s][c] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + kSets <= n; j += kSets) {
#pragma GCC unroll 2
    for (int s = 0; s < kSets; ++s) {
      const __m512 pj = _mm512_set1_ps(p[j + s]);
      const float* row = v + (j + s) * stride + c0;
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[s][c] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[c], row + 16 * c), acc[s][c]);
    }
  }
  if (j < n) {  // an odd n with two sets: the last row goes to the even set
    const __m512 pj = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c)
      acc[0][c] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[c], v + j * stride + c0 + 16 * c), acc[0][c]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const __m512 sum = kSets == 2 ? _mm512_add_ps(acc[0][c], acc[kSets - 1][c]) : acc[0][c];
    _mm512_mask_storeu_ps(out + c0 + 16 * c, m[c], sum);
  }
}

}  // namespace

void dot_rows_avx512(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) dot_block16(q, k + j * stride, stride, D, 16, scores + j);
  if (j < n) dot_block16(q, k + j * stride, stride, D, static_cast<int>(n - j), scores + j);
}

void weighted_sum_rows_avx512(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out) {
  // Up to 8 columns (128 floats) per pass over the rows.
  for (int64_t c0 = 0; c0 < D; c0 += 128) {
    switch ((std::min<int64_t>(128, D - c0) + 15) / 16) {
      case 8: weighted_sum_columns<8>(p, v, stride, n, c0, D, out); break;
      case 7: weighted_sum_columns<7>(p, v, stride, n, c0, D, out); break;
      case 6: weighted_sum_columns<6>(p, v, stride, n, c0, D, out); break;
      case 5: weighted_sum_columns<5>(p, v, stride, n, c0, D, out); break;
      case 4: weighted_sum_columns<4>(p, v, stride, n, c0, D, out); break;
      case 3: weighted_sum_columns<3>(p, v, stride, n, c0, D, out); break;
      case 2: weighted_sum_columns<2>(p, v, stride, n, c0, D, out); break;
      default: weighted_sum_columns<1>(p, v, stride, n, c0, D, out); break;
    }
  }
}

}  // namespace smolvlm::detail
