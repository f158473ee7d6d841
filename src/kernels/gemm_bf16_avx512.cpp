// The bf16 products of Precision::Fast on AVX-512 (avx512_bf16): bf16 operands, VDPBF16PS (each
// instruction: 16 lanes x one pair of products, added to the fp32 accumulator). Blocked products take
// the blocking of the fp32 kernels over bf16 pairs; decode products of BF16 weights read the weight
// rows as they are stored, x rounded to bf16 once per call. Decode of other formats keeps the fp32 and
// integer products of gemm_avx512.cpp.
#include <algorithm>

#include "kernels/cpu.h"
#include "kernels/gemm_avx512.h"
#include "kernels/gemm_kernels.h"

#include "core/dtype.h"

namespace smolvlm::gemm {
namespace {

inline uint32_t bf16_pair(float lo, float hi) {
  return uint32_t(f32_to_bf16(lo)) | uint32_t(f32_to_bf16(hi)) << 16;
}

// One row's kc values as ceil(kc/2) bf16 pairs (an odd tail paired with zero): 32 at a time with
// the vector conversion (round to nearest even, as f32_to_bf16), the tail scalar.
inline void bf16_pairs_of_row(const float* x, int64_t kc, uint32_t* out) {
  int64_t k = 0;
  for (; k + 32 <= kc; k += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k));
    _mm512_storeu_si512(out + k / 2, reinterpret_cast<const __m512i&>(v));
  }
  for (; k + 1 < kc; k += 2) out[k / 2] = bf16_pair(x[k], x[k + 1]);
  if (k < kc) out[k / 2] = bf16_pair(x[k], 0.f);
}

// One 8-row tile of x as dst[s*8 + r] = pair s of row r; rows >= `rows` are zero. 16 slots at a
// time: each row's 32 values converted by one instruction, the 8 rows (and 8 zero rows) transposed.
void pack_a_bf16(const float* x, int64_t ldx, int64_t rows, int64_t kc, float* dst) {
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  const int64_t slots = (kc + 1) / 2;
  int64_t s0 = 0;
  for (; 2 * s0 + 32 <= kc; s0 += 16) {
    __m512i r[16];
    for (int i = 0; i < 16; ++i) {
      if (i < rows) {
        const float* xi = x + i * ldx + 2 * s0;
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xi + 16), _mm512_loadu_ps(xi));
        r[i] = reinterpret_cast<const __m512i&>(v);
      } else {
        r[i] = _mm512_setzero_si512();
      }
    }
    transpose16x16(r);
    for (int i = 0; i < 16; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + (s0 + i) * kMr), _mm512_castsi512_si256(r[i]));
  }
  if (s0 == slots) return;
  uint32_t pairs[kKc / 2];
  for (int64_t r = 0; r < kMr; ++r) {
    if (r < rows) bf16_pairs_of_row(x + r * ldx + 2 * s0, kc - 2 * s0, pairs);
    for (int64_t s = s0; s < slots; ++s) d[s * kMr + r] = r < rows ? pairs[s - s0] : 0u;
  }
}

// One panel of 32 BF16 rows whose pairs are already the slots: dp[s*32 + j] = pair s of row j,
// 16 rows x 16 slots per transpose, the last slots (and an odd kc's lone value) one by one.
void pack_bf16_panel(const uint16_t* rows, int64_t ld, int64_t kc, uint32_t* dp) {
  const int64_t pairs = kc / 2, slots = (kc + 1) / 2;
  int64_t s0 = 0;
  for (; s0 + 16 <= pairs; s0 += 16)
    for (int64_t j0 = 0; j0 < kNr; j0 += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(rows + (j0 + i) * ld + 2 * s0);
      transpose16x16(r);
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(dp + (s0 + i) * kNr + j0, r[i]);
    }
  for (int64_t j = 0; j < kNr; ++j) {
    const uint16_t* row = rows + j * ld;
    for (int64_t s = s0; s < slots; ++s)
      dp[s * kNr + j] = uint32_t(row[2 * s]) | (2 * s + 1 < kc ? uint32_t(row[2 * s + 1]) << 16 : 0u);
  }
}

// One panel of 32 quantized rows: 16 rows decoded at a time (decode_rows16, the values the exact
// path packs), rounded to pairs (bf16_pairs_of_row), then turned 16 x 16 slots at a time. Rounding
// the scalar-packed panel pair by pair took as long as the products of a 128-token prefill.
template <WeightFormat FMT>
void pack_quant_panel_bf16(const WeightRef& w, int64_t first, int64_t k0, int64_t kc, uint32_t* dp) {
  const int64_t slots = (kc + 1) / 2;
  alignas(64) float rows[16][kKc];
  alignas(64) uint32_t pairs[16][kKc / 2];
  for (int64_t h = 0; h < kNr; h += 16) {
    decode_rows16<FMT>(w, first + h, k0, kc, rows);
    for (int i = 0; i < 16; ++i) bf16_pairs_of_row(rows[i], kc, pairs[i]);
    turn_rows16(pairs, kKc / 2, slots, dp + h);
  }
}

// Weight rows as bf16 pairs in 32-wide panels: dst[p*slots*32 + s*32 + j] = pair s of row n0+p*32+j
// (columns k0..). BF16 weights are moved as they are stored (their pairs are already the slots);
// other formats are converted to fp32 as the exact path packs them, then rounded.
void pack_b_bf16(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  const int64_t slots = (kc + 1) / 2;
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  alignas(64) float panel[kKc * kNr];
  for (int64_t p = 0; p < panels; ++p) {
    uint32_t* dp = d + p * slots * kNr;
    const int64_t first = n0 + p * kNr;
    if (w.format == WeightFormat::BF16 && w.cols % 2 == 0 && first + kNr <= w.rows) {
      pack_bf16_panel(static_cast<const uint16_t*>(w.data) + first * w.cols + k0, w.cols, kc, dp);
      continue;
    }
    if (weight_format_is_quantized(w.format)) {
      with_quant_format(w.format, [&]<WeightFormat FMT>() { pack_quant_panel_bf16<FMT>(w, first, k0, kc, dp); });
      continue;
    }
    pack_b_panels<kNr>(w, first, 1, k0, kc, panel);  // panel[k*32 + j], rows past w.rows zero
    for (int64_t s = 0; s < slots; ++s)
      for (int64_t j = 0; j < kNr; ++j)
        dp[s * kNr + j] = bf16_pair(panel[2 * s * kNr + j], 2 * s + 1 < kc ? panel[(2 * s + 1) * kNr + j] : 0.f);
  }
}

// c[8][32] = (accumulate ? c : 0) + a · b (+ bias) over bf16 pairs: the K block in registers, one
// pair per step in k order, then the old c added, as micro_8x32.
inline void micro_8x32_bf16(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, bool accumulate,
                            const float* bias) {
  prefetch_tile(c, ldc);
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int64_t slots = (kc + 1) / 2;
#pragma GCC unroll 2
  for (int64_t s = 0; s < slots; ++s) {
    const __m512 b0f = _mm512_load_ps(b), b1f = _mm512_load_ps(b + 16);
    const __m512bh b0 = reinterpret_cast<const __m512bh&>(b0f), b1 = reinterpret_cast<const __m512bh&>(b1f);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 af = _mm512_set1_ps(a[i]);  // the pair's 32 bits in every lane
      const __m512bh av = reinterpret_cast<const __m512bh&>(af);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
    a += kMr;
    b += kNr;
  }
  store_tile(acc, c, ldc, accumulate, bias);
}

void macro_bf16(const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride, int64_t n_valid,
                int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias) {
  macro_kernel<kMr, kNr, decltype(&micro_8x32_bf16), 2>(micro_8x32_bf16, packed_a, mc, packed_b, b_panel_stride,
                                                         n_valid, kc, y, ldy, accumulate, bias);
}

// Decode with BF16 weights. Each (weight row, row of x) pair takes the same instructions wherever it
// falls (one of four streams or a row left over, alone or among other rows of x): one VDPBF16PS per
// 32 values into one 16-lane accumulator, a K not a multiple of 32 ending in a step whose missing
// values are zero on both sides, then sum16. So a row's result does not depend on the split over
// threads or on the other rows of a batched step. Against the fp32 products (gemv_far512) this is
// about a quarter of the arithmetic per weight (the weights not converted, two products an
// instruction): several rows of x a step then still read at memory speed, where the fp32 4-row
// product computes about as long as it reads (bench/RESULTS.md).

// Row m of x as bf16 pairs at pairs + m * stride (stride a multiple of 16 pairs, zero past K).
struct Bf16Rows {
  const uint32_t* pairs;
  int64_t stride;
};

Bf16Rows round_rows_bf16(const float* x, int64_t M, int64_t K) {
  thread_local AlignedBuffer buffer;
  const int64_t stride = ((K + 1) / 2 + 15) / 16 * 16;
  uint32_t* p = reinterpret_cast<uint32_t*>(buffer.get(static_cast<size_t>(M * stride)));
  for (int64_t m = 0; m < M; ++m) {
    uint32_t* row = p + m * stride;
    bf16_pairs_of_row(x + m * K, K, row);
    std::fill(row + (K + 1) / 2, row + stride, 0u);
  }
  return {p, stride};
}

// The 32 weights at p, those past `valid` zero. Two 256-bit loads: from memory, one 512-bit load a
// step read slower (SmolVLM-256M's BF16 one-row step, 4 alternated runs: 145-166 against 161-177
// tok/s, the fp32 products' 161-181 beside them).
[[gnu::always_inline]] inline __m512bh load_bf16x32(const uint16_t* p, __mmask32 valid) {
  if (valid != ~__mmask32(0)) {
    const __m512i v = _mm512_maskz_loadu_epi16(valid, p);
    return reinterpret_cast<const __m512bh&>(v);
  }
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)), 1);
  return reinterpret_cast<const __m512bh&>(v);
}

// Weight rows rows[0..S) with rows m0 .. m0 + X - 1 of x, into out[s * X + j]. With kRequest, each
// weight row requests its line `ahead` bytes on at every step.
template <int S, int X, bool kRequest>
[[gnu::always_inline]] inline void dot_rows_bf16(const Bf16Rows& x, int64_t m0, const WeightRef& w,
                                                 const int64_t* rows, float* out, int64_t ahead) {
  const int64_t K = w.cols;
  const uint16_t* row[S];
  const uint32_t* xr[X];
  __m512 acc[S][X];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) {
    row[s] = static_cast<const uint16_t*>(w.data) + rows[s] * K;
#pragma GCC unroll 4
    for (int j = 0; j < X; ++j) acc[s][j] = _mm512_setzero_ps();
  }
#pragma GCC unroll 4
  for (int j = 0; j < X; ++j) xr[j] = x.pairs + (m0 + j) * x.stride;
  for (int64_t k = 0; k < K; k += 32) {
    const __mmask32 valid = k + 32 <= K ? ~__mmask32(0) : ~__mmask32(0) >> (32 - (K - k));
    __m512bh wv[S];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      if constexpr (kRequest) _mm_prefetch(reinterpret_cast<const char*>(row[s] + k) + ahead, _MM_HINT_T0);
      wv[s] = load_bf16x32(row[s] + k, valid);
    }
#pragma GCC unroll 4
    for (int j = 0; j < X; ++j) {
      const __m512i xi = _mm512_load_si512(xr[j] + k / 2);
      const __m512bh xv = reinterpret_cast<const __m512bh&>(xi);
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) acc[s][j] = _mm512_dpbf16_ps(acc[s][j], xv, wv[s]);
    }
  }
  if constexpr (S * X % 4 == 0) {
    const __m512* a = &acc[0][0];
#pragma GCC unroll 4
    for (int i = 0; i < S * X; i += 4) sum4(a[i], a[i + 1], a[i + 2], a[i + 3], out + i);
  } else {
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
      for (int j = 0; j < X; ++j) out[s * X + j] = sum16(acc[s][j]);
  }
}

// Weight rows rows[0..S) for every row of x, up to four rows of x at a time; the first four make the
// requests (with ahead > 0), the others find the rows in cache.
template <int S>
void rows_for_every_x_row(const Bf16Rows& x, int64_t M, const WeightRef& w, const float* bias, float* y,
                          const int64_t* rows, int64_t ahead) {
  for (int64_t m = 0; m < M; m += 4) {
    float r[4 * S];
    const int64_t X = std::min<int64_t>(4, M - m);
    const bool request = m == 0 && ahead > 0;
    const auto run = [&]<int XR>() {
      if (request) dot_rows_bf16<S, XR, true>(x, m, w, rows, r, ahead);
      else dot_rows_bf16<S, XR, false>(x, m, w, rows, r, 0);
    };
    switch (X) {
      case 4: run.template operator()<4>(); break;
      case 3: run.template operator()<3>(); break;
      case 2: run.template operator()<2>(); break;
      default: run.template operator()<1>(); break;
    }
    for (int s = 0; s < S; ++s)
      for (int64_t j = 0; j < X; ++j)
        y[(m + j) * w.rows + rows[s]] = bias ? r[s * X + j] + bias[rows[s]] : r[s * X + j];
  }
}

// Rows [n0, n1) of y (GemmKernels::gemv); weights of other formats take the fp32 products. Where the
// CPU reads four streams best (CpuFeatures::decode_row_streams), as gemv_far512: the range in four
// parts, a pass taking the next row of each, each requesting its line kStreamBytesAhead on; elsewhere
// one row after the other, each requesting 9 KB on (as gemv_range).
void gemv_bf16_dot(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
                   int64_t n1) {
  if (w.format != WeightFormat::BF16 || M <= 0 || n1 <= n0 || w.cols <= 0)
    return gemm_kernels_avx512().gemv(x, M, w, bias, y, n0, n1);
  const Bf16Rows xb = round_rows_bf16(x, M, w.cols);
  const bool streams = cpu_features().decode_row_streams();
  const int64_t part = streams ? (n1 - n0) / 4 : 0;
  for (int64_t i = 0; i < part; ++i) {
    const int64_t rows[4] = {n0 + i, n0 + part + i, n0 + 2 * part + i, n0 + 3 * part + i};
    rows_for_every_x_row<4>(xb, M, w, bias, y, rows, kStreamBytesAhead);
  }
  for (int64_t n = n0 + 4 * part; n < n1; ++n) rows_for_every_x_row<1>(xb, M, w, bias, y, &n, streams ? 0 : 9216);
}

GemmKernels make_bf16_kernels() {
  GemmKernels k = gemm_kernels_avx512();
  k.name = "avx512-bf16";
  k.pack_a = pack_a_bf16;
  k.pack_b = pack_b_bf16;
  k.macro = macro_bf16;
  k.kpack = 2;
  k.gemv = gemv_bf16_dot;
  k.bf16_gemv_name = "avx512-bf16 dot";
  k.gemv_int8 = gemv_int8_avx512;
  k.int8_needs_vnni = true;
  k.int8_name = "avx512-vnni int8";
  k.round_int8_row = round_int8_row_avx512;
  return k;
}
}  // namespace

const GemmKernels& gemm_kernels_avx512_bf16() {
  static const GemmKernels kernels = make_bf16_kernels();
  return kernels;
}

}  // namespace smolvlm::gemm
