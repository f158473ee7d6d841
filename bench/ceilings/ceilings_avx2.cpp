#include <immintrin.h>

#include "ceilings/ceilings.h"

namespace smolvlm::ceilings_detail {

namespace {
constexpr int kChains = 12;  // > FMA latency x FMA ports on current cores, so the ports stay full
}

float fma_loop_avx2(long iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * float(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);
}

double fma_flops_per_iteration_avx2() { return kChains * 8 * 2; }

}  // namespace smolvlm::ceilings_detail
