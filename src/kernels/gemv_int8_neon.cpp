// The integer decode products of kernels/gemv_int8.h on Armv8.0 NEON (the 4-lane quarters of
// gemv_int8_neon.h), for CPUs without sdot: smull/smlal multiply 8 codes by 8 x codes into int16 (a
// Q8 product is at most 128 * 127, the two nibble products of a Q4 byte at most 2 * 15 * 127), and two
// pairwise widening adds make the reference's lanes of four.
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8_neon.h"

namespace smolvlm::gemm {
namespace {

// Lanes of four from two int16x8 of products (0-7, 8-15).
inline int32x4_t lanes_of_four(int16x8_t lo, int16x8_t hi) { return vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)); }

struct NeonLanes {
  static int32x4_t q8(int8x16_t codes, int8x16_t xq) {
    return lanes_of_four(vmull_s8(vget_low_s8(codes), vget_low_s8(xq)), vmull_high_s8(codes, xq));
  }
  static int32x4_t q4(uint8x16_t bytes, int8x16_t x_even, int8x16_t x_odd) {
    const int8x16_t even = vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0x0F)));
    const int8x16_t odd = vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4));
    const int16x8_t lo =
        vmlal_s8(vmull_s8(vget_low_s8(even), vget_low_s8(x_even)), vget_low_s8(odd), vget_low_s8(x_odd));
    const int16x8_t hi = vmlal_high_s8(vmull_high_s8(even, x_even), odd, x_odd);
    return lanes_of_four(lo, hi);
  }
  // Looked-up codes 0..63: a byte's two products at most 2 * 63 * 127 in int16.
  static int32x4_t lut4(uint8x16_t bytes, int8x16_t table, int8x16_t x_even, int8x16_t x_odd) {
    const int8x16_t even = vqtbl1q_s8(table, vandq_u8(bytes, vdupq_n_u8(0x0F)));
    const int8x16_t odd = vqtbl1q_s8(table, vshrq_n_u8(bytes, 4));
    const int16x8_t lo =
        vmlal_s8(vmull_s8(vget_low_s8(even), vget_low_s8(x_even)), vget_low_s8(odd), vget_low_s8(x_odd));
    const int16x8_t hi = vmlal_high_s8(vmull_high_s8(even, x_even), odd, x_odd);
    return lanes_of_four(lo, hi);
  }
};

}  // namespace

void gemv_int8_neon(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_int8_128<NeonLanes>(x, w, bias, y, n0, n1);
}

}  // namespace smolvlm::gemm
