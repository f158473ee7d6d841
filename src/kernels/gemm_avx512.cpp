// AVX-512 kernels of linear(): an 8x32 micro kernel (16 zmm accumulators, fp32 FMAs: bf16
// dot-product instructions would round the activations to bf16 and break fp32 exactness), weight
// packing and the streaming GEMV shared with the AVX2 path (memory bound either way). The opt-in
// bf16 blocked products of Precision::Fast are in gemm_bf16_avx512.cpp.
#include <immintrin.h>

#include "kernels/gemm_avx512.h"
#include "kernels/gemm_kernels.h"

namespace smolvlm::gemm {
namespace {

// c[8][32] = (accumulate ? c : 0) + a[kc][8] · b[kc][32] (+ bias[32]), a and b packed; same
// summation order as the AVX2 kernel: the K block in registers in k order, then the old c added.
// The tile of y is read after the K loop: start fetching it before (from L3 or memory on big M).
inline void micro_8x32(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, bool accumulate,
                       const float* bias) {
  prefetch_tile(c, ldc);
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
    }
    a += kMr;
    b += kNr;
  }
  store_tile(acc, c, ldc, accumulate, bias);
}

// The 4-bit fast path: 16 codes (8 bytes) are broadcast to every lane and shifted so that lane i
// holds code perm(i) = 8 * (i & 1) + (i >> 1) in its low 4 bits; one permute then reads the group's
// 16-entry fp32 table (LUT4: the stored centroids; Q4: scale * q + min for q = 0..15, the exact
// values dequantize_row() gives). x is reordered by the same perm once per GEMV call, so each step
// is a broadcast, a shift, a permute and an FMA for 16 weights.
constexpr int64_t kNibbleScratch = 4 * 8192;  // M <= 4 rows of K <= 8192

// Whether a weight takes the fast path (the decision depends on the weight only: prepare() and dot()
// must agree). M <= 4 rows of x always fit the scratch.
inline bool nibble_fast(const WeightRef& w) {
  return (w.format == WeightFormat::Q4 || w.format == WeightFormat::Lut4) &&
         (w.quant.group_size % 16 == 0 || w.quant.group_size >= w.cols) && 4 * w.cols <= kNibbleScratch;
}

inline int perm16(int i) { return 8 * (i & 1) + (i >> 1); }

// Q8 rows of whole 64-value chunks: the decoding as one FMA per 16 values, no group tails.
inline bool q8_wide(const WeightRef& w) {
  return w.format == WeightFormat::Q8 && w.cols % 64 == 0 &&
         (w.quant.group_size % 64 == 0 || w.quant.group_size >= w.cols);
}

// The wide 4-bit path, for rows whose groups are whole 64-value chunks: a chunk's 32 bytes are
// zero-extended word by word into 16 lanes, lane i holding codes 4i..4i+3; shifting by 4s brings
// code 4i+s into the low 4 bits, the only bits a permute reads. So 64 weights cost one load and
// widening, three shifts, four permutes and four FMAs, and the group's table is built once per 64
// values or fewer times. x is reordered once per call: chunk slot 16s+i holds x[4i+s]. Measured in
// cache (one thread, 576 x 576): Q4 in groups of 64 from 19 to 30 Gweights/s, LUT4 from 30 to 39,
// with four rows per pass (dot4).
inline bool nibble_wide(const WeightRef& w) {
  return (w.format == WeightFormat::Q4 || w.format == WeightFormat::Lut4) && w.cols % 64 == 0 &&
         (w.quant.group_size % 64 == 0 || w.quant.group_size >= w.cols) && 4 * w.cols <= kNibbleScratch;
}

// The 16-entry table of one group.
template <WeightFormat FMT>
inline __m512 nibble_table(const QuantGroup& g) {
  if constexpr (FMT == WeightFormat::Lut4) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.lut)));
  } else {
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_fmadd_ps(_mm512_set1_ps(g.scale), iota, _mm512_set1_ps(g.offset));  // scale * q exact
  }
}

inline __m512 nibble_values(const uint8_t* codes, const __m512i shifts, const __m512 table) {
  int64_t u;
  __builtin_memcpy(&u, codes, 8);
  return _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi64(u), shifts), table);
}

// Into L1, as the quantized rows' bursts (gemv_quant_range); L2 measured the same.
constexpr auto kQuantRequestHint = _MM_HINT_T0;

// Step `step` of a product that reads kBytes of contiguous rows per 64-value step: requests the lines
// of the same bytes at `ahead` (a line covers two steps of one 4-bit row: every other step asks).
template <int kBytes>
[[gnu::always_inline]] inline void request_step(const char* ahead, int64_t step) {
  const char* at = ahead + step * kBytes;
  if constexpr (kBytes < 64) {
    if ((step * kBytes) % 64 == 0) _mm_prefetch(at, kQuantRequestHint);
  } else {
    for (int b = 0; b < kBytes; b += 64) _mm_prefetch(at + b, kQuantRequestHint);
  }
}

// x · (quantized row n), group by group: four 16-lane sums over 64-value steps, then 16-value steps,
// each group's scalar tail into one float; a fixed order for every row, range and thread.
struct QuantRow512 {
  static constexpr int64_t kScratchFloats = kNibbleScratch;

  // For the 4-bit fast path, x with every full 16-value chunk reordered by perm16 (tails as they are).
  template <WeightFormat FMT>
  static const float* prepare(const float* x, int64_t M, const WeightRef& w, float* scratch) {
    if (M > 4) return x;
    const int64_t K = w.cols;
    if (nibble_wide(w)) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; k += 64)
          for (int s = 0; s < 4; ++s)
            for (int i = 0; i < 16; ++i) scratch[m * K + k + 16 * s + i] = x[m * K + k + 4 * i + s];
      return scratch;
    }
    if (!nibble_fast(w)) return x;
    for (int64_t m = 0; m < M; ++m) {
      const float* xm = x + m * K;
      float* d = scratch + m * K;
      int64_t k = 0;
      for (; k + 16 <= K; k += 16)
        for (int i = 0; i < 16; ++i) d[k + i] = xm[k + perm16(i)];
      for (; k < K; ++k) d[k] = xm[k];
    }
    return scratch;
  }

  // With `ahead`, dot and dot4 request the rows' bytes at ahead as they go (gemv_quant_range).
  template <WeightFormat FMT>
  static bool spreads_requests(const WeightRef& w) {
    return FMT == WeightFormat::Q8 ? q8_wide(w) : nibble_wide(w);
  }

  template <WeightFormat FMT>
  static float dot(const float* x, const WeightRef& w, int64_t n, const char* ahead = nullptr) {
    if constexpr (FMT == WeightFormat::Q8) {
      if (q8_wide(w)) {
        float s;
        dot_q8<1>(x, w, n, &s, ahead);
        return s;
      }
    } else {
      if (nibble_wide(w)) {
        float s;
        dot_wide<FMT, 1>(x, w, n, &s, ahead);
        return s;
      }
      if (nibble_fast(w)) return dot_nibbles<FMT>(x, w, n);
    }
    return dot_decoded<FMT>(x, w, n);
  }

  template <WeightFormat FMT>
  static bool takes_four_rows(const WeightRef& w) {
    return FMT != WeightFormat::Q8 && nibble_wide(w);
  }
  // Four rows far apart, one row of x (gemv_quant_range's four streams): the 4-bit wide rows and Q8's.
  template <WeightFormat FMT>
  static bool takes_four_streams(const WeightRef& w) {
    return FMT == WeightFormat::Q8 ? q8_wide(w) : nibble_wide(w);
  }

  // R rows of Q8 over whole 64-value chunks (q8_wide): per row four 16-lane sums in k order, the
  // same for any R. Decode takes one row per pass, or where the CPU reads four streams best, four
  // rows far apart each requesting its lines ahead (HY-MT's Q8 linears, best step 40.6-44.9 -> 33.9-37.7
  // ms, 3 alternated rounds; without the requests they had measured slower than one stream): four
  // adjacent Q8 rows measured slower from memory than one sequential stream (the 4-bit rows are half
  // as long and gain from sharing x).
  // With MX > 1 (then R = 1), the MX rows of x at x, K floats apart: each value decoded once for all
  // of them (a batched decode step), out[m] for row m of x, summed exactly as alone.
  template <int R, int MX = 1>
  static void dot_q8(const float* x, const WeightRef& w, int64_t n, float* out, const char* ahead = nullptr) {
    int64_t rows[R];
    for (int r = 0; r < R; ++r) rows[r] = n + r;
    dot_q8_at<R, MX>(x, w, rows, out, ahead);
  }

  // dot_q8 of the weight rows rows[0..R), wherever they are (ahead: only for rows side by side;
  // stream_ahead: for rows far apart, each row's own line that many bytes on).
  template <int R, int MX = 1>
  static void dot_q8_at(const float* x, const WeightRef& w, const int64_t* rows, float* out,
                        const char* ahead = nullptr, int64_t stream_ahead = 0) {
    static_assert(R == 1 || MX == 1);
    const int64_t K = w.cols, G = min_i64(w.quant.group_size, K), groups = (K + G - 1) / G;
    const int8_t* row[R];
    int64_t first_block[R];
    __m512 acc[R * MX][4];
    for (int r = 0; r < R; ++r) {
      row[r] = static_cast<const int8_t*>(quant_row<WeightFormat::Q8>(w, rows[r]));
      first_block[r] = (rows[r] / w.quant.block_rows) * groups;
    }
    for (int i = 0; i < R * MX; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      __m512 scale[R], offset[R];
      for (int r = 0; r < R; ++r) {
        const QuantGroup q = quant_group(w, first_block[r] + g);
        scale[r] = _mm512_set1_ps(q.scale);
        offset[r] = _mm512_set1_ps(q8_offset(q));
      }
      const int64_t end = min_i64(K, (g + 1) * G);
      for (int64_t k = g * G; k < end; k += 64) {
        if (ahead) request_step<R * 64>(ahead, k / 64);
        if (stream_ahead)
          for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(row[r]) + k + stream_ahead, _MM_HINT_T0);
        for (int r = 0; r < R; ++r) {
          auto value = [&](int64_t at) {  // exact: see q8_offset
            const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[r] + at)));
            return _mm512_fmadd_ps(scale[r], _mm512_cvtepi32_ps(q), offset[r]);
          };
          const __m512 v[4] = {value(k), value(k + 16), value(k + 32), value(k + 48)};
          for (int m = 0; m < MX; ++m)
            for (int s = 0; s < 4; ++s)
              acc[r + m][s] = _mm512_fmadd_ps(_mm512_loadu_ps(x + m * K + k + 16 * s), v[s], acc[r + m][s]);
        }
      }
    }
    for (int i = 0; i < R * MX; ++i)
      out[i] = _mm512_reduce_add_ps(
          _mm512_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]), _mm512_add_ps(acc[i][2], acc[i][3])));
  }

  // R rows n..n+R-1 of the wide path over x reordered by prepare(): per row four 16-lane sums, one
  // per shift, in the same order whatever R, so a row's result does not depend on its neighbours.
  // With MX > 1 (then R = 1), the MX rows of x at x, K floats apart, as dot_q8.
  template <WeightFormat FMT, int R, int MX = 1>
  static void dot_wide(const float* x, const WeightRef& w, int64_t n, float* out, const char* ahead = nullptr) {
    int64_t rows[R];
    for (int r = 0; r < R; ++r) rows[r] = n + r;
    dot_wide_at<FMT, R, MX>(x, w, rows, out, ahead);
  }

  // dot_wide of the weight rows rows[0..R), wherever they are (ahead: only for rows side by side;
  // stream_ahead: for rows far apart, each row's own line that many bytes on, a request per line).
  template <WeightFormat FMT, int R, int MX = 1>
  static void dot_wide_at(const float* x, const WeightRef& w, const int64_t* rows, float* out,
                          const char* ahead = nullptr, int64_t stream_ahead = 0) {
    static_assert(R == 1 || MX == 1);
    const int64_t K = w.cols, G = min_i64(w.quant.group_size, K), groups = (K + G - 1) / G;
    const uint8_t* row[R];
    int64_t first_block[R];
    __m512 acc[R * MX][4];
    for (int r = 0; r < R; ++r) {
      row[r] = static_cast<const uint8_t*>(quant_row<FMT>(w, rows[r]));
      first_block[r] = (rows[r] / w.quant.block_rows) * groups;
    }
    for (int i = 0; i < R * MX; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      __m512 table[R];
      for (int r = 0; r < R; ++r) table[r] = nibble_table<FMT>(quant_group(w, first_block[r] + g));
      const int64_t end = min_i64(K, (g + 1) * G);
      for (int64_t k = g * G; k < end; k += 64) {
        if (ahead) request_step<R * 32>(ahead, k / 64);
        if (stream_ahead && k % 128 == 0)
          for (int r = 0; r < R; ++r)
            _mm_prefetch(reinterpret_cast<const char*>(row[r]) + k / 2 + stream_ahead, _MM_HINT_T0);
        const __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
        const __m512 x2 = _mm512_loadu_ps(x + k + 32), x3 = _mm512_loadu_ps(x + k + 48);
        for (int r = 0; r < R; ++r) {
          const __m512i c =
              _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + k / 2)));
          const __m512 v[4] = {_mm512_permutexvar_ps(c, table[r]), _mm512_permutexvar_ps(_mm512_srli_epi32(c, 4), table[r]),
                               _mm512_permutexvar_ps(_mm512_srli_epi32(c, 8), table[r]),
                               _mm512_permutexvar_ps(_mm512_srli_epi32(c, 12), table[r])};
          acc[r][0] = _mm512_fmadd_ps(x0, v[0], acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(x1, v[1], acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(x2, v[2], acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(x3, v[3], acc[r][3]);
          for (int m = 1; m < MX; ++m)
            for (int s = 0; s < 4; ++s)
              acc[m][s] = _mm512_fmadd_ps(_mm512_loadu_ps(x + m * K + k + 16 * s), v[s], acc[m][s]);
        }
      }
    }
    for (int i = 0; i < R * MX; ++i)
      out[i] = _mm512_reduce_add_ps(
          _mm512_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]), _mm512_add_ps(acc[i][2], acc[i][3])));
  }

  // The wide rows decode each value once for several rows of x (gemv_quant_range).
  template <WeightFormat FMT>
  static bool shares_values(const WeightRef& w) {
    return FMT == WeightFormat::Q8 ? q8_wide(w) : nibble_wide(w);
  }

  template <WeightFormat FMT>
  static void dot_x(const float* x, int64_t M, const WeightRef& w, int64_t n, float* out, const char* ahead = nullptr) {
    switch (M) {
      case 4: dot_x_rows<FMT, 4>(x, w, n, out, ahead); break;
      case 3: dot_x_rows<FMT, 3>(x, w, n, out, ahead); break;
      case 2: dot_x_rows<FMT, 2>(x, w, n, out, ahead); break;
      default: dot_x_rows<FMT, 1>(x, w, n, out, ahead); break;
    }
  }

  template <WeightFormat FMT, int MX>
  static void dot_x_rows(const float* x, const WeightRef& w, int64_t n, float* out, const char* ahead) {
    if constexpr (FMT == WeightFormat::Q8)
      dot_q8<1, MX>(x, w, n, out, ahead);
    else
      dot_wide<FMT, 1, MX>(x, w, n, out, ahead);
  }

  // Four weight rows anywhere (streams side by side), for the rows that take four a pass.
  template <WeightFormat FMT>
  static void dot4_at(const float* x, const WeightRef& w, const int64_t* rows, float* out) {
    if constexpr (FMT == WeightFormat::Q8)
      dot_q8_at<4>(x, w, rows, out, nullptr, kStreamBytesAhead);
    else
      dot_wide_at<FMT, 4>(x, w, rows, out, nullptr, kStreamBytesAhead);
  }

  template <WeightFormat FMT>
  static void dot4(const float* x, const WeightRef& w, int64_t n, float* out, const char* ahead = nullptr) {
    if constexpr (FMT == WeightFormat::Q8)
      for (int i = 0; i < 4; ++i) dot_q8<1>(x, w, n + i, out + i);  // not taken: see takes_four_rows
    else
      dot_wide<FMT, 4>(x, w, n, out, ahead);
  }

  // x already reordered by prepare(); group starts are multiples of 16 (or the row is one group).
  template <WeightFormat FMT>
  static float dot_nibbles(const float* x, const WeightRef& w, int64_t n) {
    const int64_t K = w.cols, G = w.quant.group_size, groups = (K + G - 1) / G;
    const int64_t first_block = (n / w.quant.block_rows) * groups;
    const uint8_t* row = static_cast<const uint8_t*>(quant_row<FMT>(w, n));
    const __m512i shifts = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    float tail = 0.f;
    for (int64_t g = 0; g < groups; ++g) {
      const QuantGroup q = quant_group(w, first_block + g);
      const __m512 table = nibble_table<FMT>(q);
      int64_t k = g * G;
      const int64_t end = min_i64(K, k + G);
      for (; k + 64 <= end; k += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), nibble_values(row + k / 2, shifts, table), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), nibble_values(row + k / 2 + 8, shifts, table), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 32), nibble_values(row + k / 2 + 16, shifts, table), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 48), nibble_values(row + k / 2 + 24, shifts, table), a3);
      }
      for (; k + 16 <= end; k += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), nibble_values(row + k / 2, shifts, table), a0);
      for (; k < end; ++k) tail += x[k] * quant_value<FMT>(row, q, k);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) + tail;
  }

  template <WeightFormat FMT>
  static float dot_decoded(const float* x, const WeightRef& w, int64_t n) {
    const int64_t K = w.cols, G = w.quant.group_size, groups = (K + G - 1) / G;
    const int64_t first_block = (n / w.quant.block_rows) * groups;
    const void* row = quant_row<FMT>(w, n);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    float tail = 0.f;
    for (int64_t g = 0; g < groups; ++g) {
      const QuantGroup q = quant_group(w, first_block + g);
      const QuantDecoder16<FMT> dec(q);
      int64_t k = g * G;
      const int64_t end = min_i64(K, k + G);
      for (; k + 64 <= end; k += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), dec.load(row, k), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), dec.load(row, k + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 32), dec.load(row, k + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 48), dec.load(row, k + 48), a3);
      }
      for (; k + 16 <= end; k += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), dec.load(row, k), a0);
      for (; k < end; ++k) tail += x[k] * quant_value<FMT>(row, q, k);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) + tail;
  }
};

// 16 consecutive dense weight elements starting at element idx, as fp32 (exact conversions).
template <WeightFormat FMT>
inline __m512 load16(const void* base, int64_t idx) {
  if constexpr (FMT == WeightFormat::F32) {
    return _mm512_loadu_ps(static_cast<const float*>(base) + idx);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + idx));
    if constexpr (FMT == WeightFormat::BF16)
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
      return _mm512_cvtph_ps(h);
  }
}

// dot_row with 16-lane sums: two over 32-element steps, then one 16-element step into the first,
// the two added, a fixed reduction (sum16), the scalar tail. This is the arithmetic of every row
// product of the streaming path, for one row of x or several (dot_block512), so a batched decode step
// gives each sequence exactly its logits alone. (Several weight rows per pass for one row of x was
// 1.5x faster in cache but about 1.5x slower from memory on a busy machine: one sequential stream
// per thread is what single-sequence decode needs.)
template <WeightFormat FMT>
float dot_row512(const float* x, const void* w, int64_t offset, int64_t K) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0;
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), load16<FMT>(w, offset + k), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), load16<FMT>(w, offset + k + 16), a1);
  }
  if (k + 16 <= K) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), load16<FMT>(w, offset + k), a0);
    k += 16;
  }
  float s = sum16(_mm512_add_ps(a0, a1));
  for (; k < K; ++k) s += x[k] * load1<FMT>(w, offset + k);
  return s;
}

// dot_row512 of the weight rows rows[0..NR) (side by side, or far apart: gemv_far512) with R rows of x
// (K floats apart) into out[r * NR + j]: each weight vector is converted once for all R rows and each
// x vector loaded once for all NR weight rows, so a batched decode step costs little more arithmetic
// than one row. Every (row of x, weight row) gets exactly dot_row512's operations. With `ahead` (for
// rows side by side: the first of NR rows a distance on), each 32-value step also requests the same
// 64 bytes of the NR rows there into L2 (gemv_rows512); with `stream_ahead` (rows far apart), each
// row's step requests its own line that many bytes on (kStreamBytesAhead).
template <WeightFormat FMT, int NR, int R>
[[gnu::always_inline]] inline void dot_block512(const float* x, const WeightRef& w, const int64_t* rows,
                                                float* out, const char* ahead = nullptr, int64_t stream_ahead = 0) {
  const int64_t K = w.cols;
  __m512 a[NR][R][2];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a[j][r][0] = a[j][r][1] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512 w0[NR], w1[NR];
    if (ahead)
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) prefetch_step<FMT>(ahead + j * K * weight_bytes<FMT>(), k);
    if (stream_ahead)
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j)
        _mm_prefetch(static_cast<const char*>(w.data) + (rows[j] * K + k) * weight_bytes<FMT>() + stream_ahead,
                     _MM_HINT_T0);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      w0[j] = load16<FMT>(w.data, rows[j] * K + k);
      w1[j] = load16<FMT>(w.data, rows[j] * K + k + 16);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 x0 = _mm512_loadu_ps(x + r * K + k), x1 = _mm512_loadu_ps(x + r * K + k + 16);
      // Kept in registers for the NR weight rows: GCC otherwise loads x again as the memory operand of
      // each FMA, and the loads, not the FMAs, set the pace (`decode_gemv_bench bf16 1 300 --in-cache
      // 4`, one thread: 33.5-34.1 us per 576 x 576 product before, 28.2-28.9 after; the values and
      // so the bits are the same).
      if constexpr (NR > 1) asm("" : "+v"(x0), "+v"(x1));
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        a[j][r][0] = _mm512_fmadd_ps(x0, w0[j], a[j][r][0]);
        a[j][r][1] = _mm512_fmadd_ps(x1, w1[j], a[j][r][1]);
      }
    }
  }
  const bool half = k + 16 <= K;
  if (half) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512 w0 = load16<FMT>(w.data, rows[j] * K + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) a[j][r][0] = _mm512_fmadd_ps(_mm512_loadu_ps(x + r * K + k), w0, a[j][r][0]);
    }
    k += 16;
  }
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    __m512 t[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) t[r] = _mm512_add_ps(a[j][r][0], a[j][r][1]);
    float sums[4];
    sum4(t[0], t[1], t[2], t[3], sums);
    for (int r = 0; r < R; ++r) {
      float s = sums[r];
      for (int64_t i = k; i < K; ++i) s += x[r * K + i] * load1<FMT>(w.data, rows[j] * K + i);
      out[r * NR + j] = s;
    }
  }
}

// Weight rows n..n+NR-1 for the R rows of x at x (the rows m0.. of y).
template <WeightFormat FMT, int NR>
inline void gemv_block512(const float* x, int64_t R, const WeightRef& w, const float* bias, float* y, int64_t n,
                          const char* ahead) {
  float s[4 * NR];
  int64_t rows[NR];
  for (int j = 0; j < NR; ++j) rows[j] = n + j;
  switch (R) {
    case 4: dot_block512<FMT, NR, 4>(x, w, rows, s, ahead); break;
    case 3: dot_block512<FMT, NR, 3>(x, w, rows, s, ahead); break;
    case 2: dot_block512<FMT, NR, 2>(x, w, rows, s, ahead); break;
    default: dot_block512<FMT, NR, 1>(x, w, rows, s, ahead); break;
  }
  for (int64_t r = 0; r < R; ++r)
    for (int j = 0; j < NR; ++j) y[r * w.rows + n + j] = bias ? s[r * NR + j] + bias[n + j] : s[r * NR + j];
}

// gemv_range for several rows of x, up to four rows of x at a time (more rows of x in further passes
// over the same weight rows, from L1). Up to four rows of x of up to 8192 values in all (32 KB) take
// one weight row a pass, so the rows stream in one after the other: two side by side, which shares
// the loads of x, read memory slower (a 4-row 256M step 12.1-13.5 against 8.8-10.3 ms, 2 rows
// 9.8-11.4 against 6.0-8.9: BM_BatchedStep, 2 threads, alternated; a plain read of 4 KB rows two at
// a time ran 25% below one stream). With more rows of x, or x past L1, the loads of x count more and
// two weight rows a pass stay as fast or faster (8 rows 14.9-17.7 against 17.5-23.1 ms; HY-MT's
// linears with 4 rows, K 2048 and 6144, best step 108-134 against 124-131 ms).
template <WeightFormat FMT>
void gemv_rows512(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  x = aligned_input(x, M * K);
  const int64_t ahead = std::max<int64_t>(2, (9216 + K * weight_bytes<FMT>() - 1) / (K * weight_bytes<FMT>()));
  for (int64_t n = n0; n < std::min(n1, n0 + ahead); ++n) prefetch_row<FMT>(w, n);
  // The requests for the rows `ahead` on go out a line per weight row at each 32-value step of the
  // pass's product (dot_block512), not as one burst of whole rows before it: with the burst the
  // profile of a 4-row step had a fifth of its time on the requests, the core waiting for free
  // miss buffers instead of computing. A 4-row 256M step (BM_BatchedStep/4, 2 threads, alternated
  // runs on the AVX-512 machine) went from 16.1-18.8 to 14.0-14.7 ms; without any requests it took
  // twice as long. Rows whose K is not a whole number of steps keep the burst (their tail lines
  // would not be requested).
  const bool spread_rows = K % 32 == 0;
  const int64_t pair = M > 4 || M * K > 8192 ? 2 : 1;
  const char* base = static_cast<const char*>(w.data);
  for (int64_t n = n0; n < n1;) {
    const int64_t rows = n + pair <= n1 ? pair : 1;
    const bool spread = spread_rows && n + rows - 1 + ahead < n1;
    if (!spread)
      for (int64_t i = 0; i < rows; ++i)
        if (n + i + ahead < n1) prefetch_row<FMT>(w, n + i + ahead);
    for (int64_t m = 0; m < M; m += 4) {
      const int64_t R = std::min<int64_t>(4, M - m);
      const char* pf = spread && m == 0 ? base + (n + ahead) * K * weight_bytes<FMT>() : nullptr;
      if (rows == 2) gemv_block512<FMT, 2>(x + m * K, R, w, bias, y + m * N, n, pf);
      else gemv_block512<FMT, 1>(x + m * K, R, w, bias, y + m * N, n, pf);
    }
    n += rows;
  }
}

// Rows of x over [n0, n1) read as S streams side by side: the range in S parts, a pass taking the
// next row of each part (the rows left over by the split one by one at the end), for every row of x
// (a batched decode step: the 256M model's products with 4 rows of x, best step 5.9-7.1 -> 5.2-5.5
// ms against one stream, gemv_rows512; 1 row 3.8-4.1 ms). On the CPUs whose
// own prefetchers beat software requests here (CpuFeatures::decode_row_streams: AMD family 0x1A),
// four streams read faster than one: a plain read of memory 58-63 against 55 GB/s a pass, HY-MT's
// BF16 linears (decode_gemv_bench bf16 2 15 --shape=hymt, 2 threads, 5 alternated rounds) best step
// 64-94 against 79-97 ms, median 68-111 against 83-105, the whole model's decode 9.4-12.2 against
// 7.6-8.3 tok/s (3 rounds; llama.cpp bf16 10.3-10.8 beside them). Each stream requests its lines
// kStreamBytesAhead on. Each row gets dot_row512's bits (dot_block512).
template <WeightFormat FMT, int S>
void gemv_far512(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  x = aligned_input(x, M * K);
  const int64_t part = (n1 - n0) / S;
  for (int64_t i = 0; i < part; ++i) {
    int64_t rows[S];
    for (int j = 0; j < S; ++j) rows[j] = n0 + j * part + i;
    // Two rows of x at a time (S x 2 pairs of accumulators fill the registers); the first two make
    // the streams' requests, the others find the pass's rows in cache.
    for (int64_t m = 0; m < M; m += 2) {
      float s[2 * S];
      const int64_t stream_ahead = m == 0 ? kStreamBytesAhead : 0;
      if (m + 2 <= M)
        dot_block512<FMT, S, 2>(x + m * K, w, rows, s, nullptr, stream_ahead);
      else
        dot_block512<FMT, S, 1>(x + m * K, w, rows, s, nullptr, stream_ahead);
      for (int64_t r = 0; r < std::min<int64_t>(2, M - m); ++r)
        for (int j = 0; j < S; ++j) y[(m + r) * N + rows[j]] = bias ? s[r * S + j] + bias[rows[j]] : s[r * S + j];
    }
  }
  for (int64_t n = n0 + S * part; n < n1; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const float s = dot_row512<FMT>(x + m * K, w.data, n * K, K);
      y[m * N + n] = bias ? s + bias[n] : s;
    }
}

void gemv512(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  if (weight_format_is_quantized(w.format)) {
    // The quantized row products take up to kGemvMaxM rows of x; more go in groups of that many
    // (the weight rows of a task are read again from cache).
    for (int64_t m = 0; m < M; m += kGemvMaxM)
      gemv_small_m<QuantRow512>(x + m * w.cols, std::min<int64_t>(kGemvMaxM, M - m), w, bias, y + m * w.rows, n0, n1);
    return;
  }
  with_format(w.format, [&]<WeightFormat FMT>() {
    if (cpu_features().decode_row_streams())
      gemv_far512<FMT, 4>(x, M, w, bias, y, n0, n1);
    else if (M == 1)
      gemv_range<FMT, dot_row512<FMT>>(x, M, w, bias, y, n0, n1);
    else
      gemv_rows512<FMT>(x, M, w, bias, y, n0, n1);
  });
}

// Quantized weights into the fp32 panels (dst[p*kc*32 + k*32 + j] = value k of row n0+p*32+j):
// 16 rows decoded at a time (decode_rows16), then turned 16 x 16 at a time. The scalar packing
// (pack_b_panels) writes the same values; it took as long as the bf16 products of a 128-token prefill.
template <WeightFormat FMT>
void pack_b_quant512(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  alignas(64) float rows[16][kKc];
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t h = 0; h < kNr; h += 16) {
      decode_rows16<FMT>(w, n0 + p * kNr + h, k0, kc, rows);
      turn_rows16(rows, kKc, kc, dst + p * kc * kNr + h);
    }
}

void pack_b512(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  if (weight_format_is_quantized(w.format)) {
    with_quant_format(w.format, [&]<WeightFormat FMT>() { pack_b_quant512<FMT>(w, n0, panels, k0, kc, dst); });
    return;
  }
  pack_b_panels<kNr>(w, n0, panels, k0, kc, dst);
}

GemmKernels make_kernels() {
  GemmKernels k = KernelSet<kMr, kNr, kKc, micro_8x32, QuantRow512>::table("avx512");
  k.pack_b = pack_b512;
  k.gemv = gemv512;
  // Up to 8 rows (a batched decode step of 8 sequences) stream the weights once, each row exactly as
  // alone (gemv_rows512: two weight rows with up to four rows of x per pass).
  k.gemv_max_m = 8;
  return k;
}


}  // namespace

const GemmKernels& gemm_kernels_avx512() {
  static const GemmKernels kernels = make_kernels();
  return kernels;
}

}  // namespace smolvlm::gemm
