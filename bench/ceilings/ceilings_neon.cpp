#include <arm_neon.h>

#include "ceilings/ceilings.h"

namespace smolvlm::ceilings_detail {

namespace {
// > FMA latency (4 cycles) x FMA pipes (up to 4 on Apple M-series and Neoverse V cores), so the pipes
// stay full.
constexpr int kChains = 16;
}

float fma_loop_neon(long iterations) {
  float32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_f32(0.001f * float(i));
  const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = vfmaq_f32(b, acc[i], a);
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < kChains; ++i) s = vaddq_f32(s, acc[i]);
  return vgetq_lane_f32(s, 0);
}

double fma_flops_per_iteration_neon() { return kChains * 4 * 2; }

}  // namespace smolvlm::ceilings_detail
