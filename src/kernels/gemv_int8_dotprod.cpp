// The integer decode products of kernels/gemv_int8.h on NEON with the Armv8.2 dot product (the 4-lane
// quarters of gemv_int8_neon.h): sdot multiplies 16 signed codes by 16 x codes and adds each four
// products into an int32 lane, the reference's lane exactly (Q8's q + 128 as the x codes' sum times
// 128, q8_lane_offsets). Only called where the CPU has dotprod (gemm_neon.cpp checks).
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8_neon.h"

namespace smolvlm::gemm {
namespace {

struct DotprodLanes {
  static int32x4_t q8(int8x16_t codes, int8x16_t xq) { return vdotq_s32(vdupq_n_s32(0), codes, xq); }
  static int32x4_t q4(uint8x16_t bytes, int8x16_t x_even, int8x16_t x_odd) {
    const int8x16_t even = vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0x0F)));
    const int8x16_t odd = vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4));
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), even, x_even), odd, x_odd);
  }
  static int32x4_t lut4(uint8x16_t bytes, int8x16_t table, int8x16_t x_even, int8x16_t x_odd) {
    const int8x16_t even = vqtbl1q_s8(table, vandq_u8(bytes, vdupq_n_u8(0x0F)));
    const int8x16_t odd = vqtbl1q_s8(table, vshrq_n_u8(bytes, 4));
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), even, x_even), odd, x_odd);
  }
};

}  // namespace

void gemv_int8_dotprod(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_int8_128<DotprodLanes>(x, w, bias, y, n0, n1);
}

}  // namespace smolvlm::gemm
