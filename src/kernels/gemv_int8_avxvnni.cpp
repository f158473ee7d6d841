// The integer decode products of kernels/gemv_int8.h on AVX-VNNI (the 8-lane halves of
// gemv_int8_256.h; Alder Lake and later, Zen 5's VEX encoding): vpdpbusd multiplies 32 unsigned bytes
// by 32 signed ones and adds each four products into an int32 lane without saturating, which is the
// reference's lane exactly, for Q8 (codes q + 128 times x codes) in one instruction and for Q4 (the
// low nibbles times the even x codes, then the high ones times the odd) in two, and for LUT4 the same
// with each nibble first looked up (vpshufb) as its table code (unsigned). Only called where the CPU
// has avx_vnni (gemm_avx2.cpp checks).
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8_256.h"

namespace smolvlm::gemm {
namespace {

struct AvxVnniLanes {
  [[gnu::always_inline]] static __m256i q8(__m256i codes, __m256i xq, const int32_t*) {
    const __m256i flipped = _mm256_xor_si256(codes, _mm256_set1_epi8(static_cast<char>(0x80)));  // q + 128
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), flipped, xq);
  }
  [[gnu::always_inline]] static __m256i q4(__m256i bytes, __m256i x_even, __m256i x_odd) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    return sums(_mm256_and_si256(bytes, low), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low), x_even, x_odd);
  }
  [[gnu::always_inline]] static __m256i lut4(__m256i bytes, __m256i table, __m256i x_even, __m256i x_odd) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i even = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, low));
    const __m256i odd = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low));
    return sums(even, odd, x_even, x_odd);
  }

 private:
  // Lane l: even codes 4l..4l+3 (unsigned) times x_even's and odd ones times x_odd's.
  [[gnu::always_inline]] static __m256i sums(__m256i even, __m256i odd, __m256i x_even, __m256i x_odd) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), even, x_even), odd, x_odd);
  }
};

}  // namespace

void gemv_int8_avxvnni(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_int8_256<AvxVnniLanes>(x, w, bias, y, n0, n1);
}

}  // namespace smolvlm::gemm
