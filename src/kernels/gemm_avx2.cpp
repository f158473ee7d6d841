// AVX2/FMA kernels of linear(): a 6x16 micro kernel (12 accumulators, x packed in 6-row tiles and broadcast,
// weight panels packed as fp32 by F16C / bf16 shifts) and the shared streaming GEMV.
#include <immintrin.h>

#include "kernels/cpu.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemm_simd.h"

namespace smolvlm::gemm {
namespace {

constexpr int kMr = 6, kNr = 16, kKc = 256;

// c[6][16] = (accumulate ? c : 0) + a[kc][6] · b[kc][16] (+ bias[16]), a and b packed. The K sum
// runs in registers in k order; the old value of c is added after it.
inline void micro_6x16(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, bool accumulate,
                       const float* bias) {
  // The tile of y is read after the K loop: start fetching it now (from L3 or memory on big M).
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNr - 1), _MM_HINT_T0);
  }
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
    a += kMr;
    b += kNr;
  }
  __m256 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  const __m256 bias0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  const __m256 bias1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    __m256 v0 = acc[i][0], v1 = acc[i][1];
    if (accumulate) {
      v0 = _mm256_add_ps(_mm256_loadu_ps(ci), v0);
      v1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), v1);
    }
    if (bias) {
      v0 = _mm256_add_ps(v0, bias0);
      v1 = _mm256_add_ps(v1, bias1);
    }
    _mm256_storeu_ps(ci, v0);
    _mm256_storeu_ps(ci + 8, v1);
  }
}

GemmKernels make_kernels() {
  GemmKernels k = KernelSet<kMr, kNr, kKc, micro_6x16>::table("avx2");
  const bool vnni = cpu_features().avxvnni;
  k.gemv_int8 = vnni ? gemv_int8_avxvnni : gemv_int8_avx2;
  k.int8_name = vnni ? "avx-vnni int8" : "avx2 int8";
  k.round_int8_row = round_int8_row_avx2;
  return k;
}

const GemmKernels kKernels = make_kernels();

}  // namespace

const GemmKernels& gemm_kernels_avx2() { return kKernels; }

}  // namespace smolvlm::gemm
