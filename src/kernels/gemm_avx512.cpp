// AVX-512 kernels of linear(): an 8x32 micro kernel (16 zmm accumulators, fp32 FMAs only: bf16
// dot-product instructions would round the activations to bf16 and break fp32 exactness), weight
// packing and the streaming GEMV shared with the AVX2 path (memory bound either way).
#include <immintrin.h>

#include "kernels/gemm_kernels.h"
#include "kernels/gemm_simd.h"

namespace smolvlm::gemm {
namespace {

constexpr int kMr = 8, kNr = 32, kKc = 256;

// c[8][32] = (accumulate ? c : 0) + a[kc][8] · b[kc][32] (+ bias[32]), a and b packed; same
// summation order as the AVX2 kernel: the K block in registers in k order, then the old c added.
inline void micro_8x32(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, bool accumulate,
                       const float* bias) {
  // The tile of y is read after the K loop: start fetching it now (from L3 or memory on big M).
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNr - 1), _MM_HINT_T0);
  }
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
      offset = _mm512_set1_ps(g.offset);
    }
  }
  __m512 load(const void* row, int64_t k) const {
    if constexpr (FMT == WeightFormat::Q8) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(row) + k)));
      return _mm512_mul_ps(scale, _mm512_sub_ps(_mm512_cvtepi32_ps(q), offset));
    } else if constexpr (FMT == WeightFormat::Q4) {
      return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(codes4x16(static_cast<const uint8_t*>(row) + k / 2)), offset);
    } else {
      return _mm512_permutexvar_ps(codes4x16(static_cast<const uint8_t*>(row) + k / 2), lut);
    }
  }
};

// x · (quantized row n), group by group: four 16-lane sums over 64-value steps, then 16-value steps,
// each group's scalar tail into one float; a fixed order for every row, range and thread.
struct QuantRow512 {
  template <WeightFormat FMT>
  static float dot(const float* x, const WeightRef& w, int64_t n) {
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

const GemmKernels kKernels = KernelSet<kMr, kNr, kKc, micro_8x32, QuantRow512>::table("avx512");

}  // namespace

const GemmKernels& gemm_kernels_avx512() { return kKernels; }

}  // namespace smolvlm::gemm
