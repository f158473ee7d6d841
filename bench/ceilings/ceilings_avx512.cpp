#include <immintrin.h>

#include "ceilings/ceilings.h"

namespace smolvlm::ceilings_detail {

namespace {
constexpr int kChains = 16;

// A value that depends on every chain, so the loops cannot be removed.
float sum_of(const __m512 (&acc)[kChains]) {
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}
}  // namespace

float fma_loop_avx512(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  return sum_of(acc);
}

double fma_flops_per_iteration_avx512() { return kChains * 16 * 2; }

// VDPBF16PS: per lane two bf16 products added to the fp32 accumulator (4 flops).
float bf16_dot_loop_avx512(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(1e-7f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  return sum_of(acc);
}

double bf16_dot_flops_per_iteration_avx512() { return kChains * 16 * 4; }

}  // namespace smolvlm::ceilings_detail
