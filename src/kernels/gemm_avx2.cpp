// AVX2/FMA kernels of linear(): a 6x16 micro kernel (12 accumulators, x broadcast from its rows,
// weight panels packed as fp32 by F16C / bf16 shifts) and the shared streaming GEMV.
#include <immintrin.h>

#include "kernels/gemm_kernels.h"
#include "kernels/gemm_simd.h"

namespace smolvlm::gemm {
namespace {

constexpr int kMr = 6, kNr = 16, kKc = 256;

// c[6][16] = (accumulate ? c : 0) + a[6][kc] · b[kc][16] (+ bias[16]). The K sum runs in registers
// in k order; the old value of c is added after it.
inline void micro_6x16(const float* a, int64_t lda, const float* b, int64_t kc, float* c, int64_t ldc,
                       bool accumulate, const float* bias) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* a0 = a;
  const float* a3 = a + 3 * lda;
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a0 + lda + k);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a0 + 2 * lda + k);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a3 + lda + k);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a3 + 2 * lda + k);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
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

void pack_b(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst) {
  pack_b_panels<kNr>(w, n0, panels, k0, kc, dst);
}

void macro(const float* x, int64_t ldx, int64_t mc, const float* packed, int64_t n_valid, int64_t kc, float* y,
           int64_t ldy, bool accumulate, const float* bias) {
  macro_kernel<kMr, kNr, kKc>(micro_6x16, x, ldx, mc, packed, n_valid, kc, y, ldy, accumulate, bias);
}

void gemv(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_small_m(x, M, w, bias, y, n0, n1);
}

const GemmKernels kKernels{"avx2", kMr, kNr, kKc, kGemvMaxM, pack_b, macro, gemv};

}  // namespace

const GemmKernels& gemm_kernels_avx2() { return kKernels; }

}  // namespace smolvlm::gemm
