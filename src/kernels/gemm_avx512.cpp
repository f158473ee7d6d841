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

const GemmKernels kKernels = KernelSet<kMr, kNr, kKc, micro_8x32>::table("avx512");

}  // namespace

const GemmKernels& gemm_kernels_avx512() { return kKernels; }

}  // namespace smolvlm::gemm
