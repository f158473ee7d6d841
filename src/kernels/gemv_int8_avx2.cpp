// The integer decode products of kernels/gemv_int8.h on AVX2 (the 8-lane halves of gemv_int8_256.h):
//   Q8: a code q + 128 (0..255) times an x code overflows vpmaddubsw's int16 pair sums, so the stored
//       code q (-128..127) is multiplied instead, as |q| times x with q's sign (vpsignb; at most
//       2 * 128 * 127 a pair), vpmaddwd by ones makes the lanes, and the lane's 128 times its x codes'
//       sum (q8_lane_offsets) makes them the reference's.
//   Q4: a nibble (0..15) times an x code fits vpmaddubsw's pair sums (at most 2 * 15 * 127), the even
//       and odd nibbles' pair sums add in int16 (at most 7620), and vpmaddwd by ones makes the lanes.
//   LUT4: the looked-up codes t and the x codes are both signed (|t|, |x| <= 127), so vpmaddubsw takes
//       |x| (once per step, for every row the step reads) and t with x's sign (vpsignb): one sign a
//       code instead of an abs and a sign (the kernel alone, 576 x 2048, one thread: 42.7-43.2 ->
//       38.3-39.5 us). Pair sums at most 2 * 127 * 127, each made into lanes by vpmaddwd before they add.
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8_256.h"

namespace smolvlm::gemm {
namespace {

struct Avx2Lanes {
  [[gnu::always_inline]] static __m256i q8(__m256i codes, __m256i xq, const int32_t* offsets) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(codes), _mm256_sign_epi8(xq, codes));
    return _mm256_add_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets)));
  }
  [[gnu::always_inline]] static __m256i q4(__m256i bytes, __m256i x_even, __m256i x_odd) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i even = _mm256_and_si256(bytes, low), odd = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(even, x_even), _mm256_maddubs_epi16(odd, x_odd));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
  [[gnu::always_inline]] static __m256i lut4(__m256i bytes, __m256i table, __m256i x_even, __m256i x_odd,
                                             __m256i abs_even, __m256i abs_odd) {
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const __m256i even = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, low));
    const __m256i odd = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low));
    const __m256i pe = _mm256_maddubs_epi16(abs_even, _mm256_sign_epi8(even, x_even));
    const __m256i po = _mm256_maddubs_epi16(abs_odd, _mm256_sign_epi8(odd, x_odd));
    return _mm256_add_epi32(_mm256_madd_epi16(pe, ones), _mm256_madd_epi16(po, ones));
  }
};

}  // namespace

void gemv_int8_avx2(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_int8_256<Avx2Lanes>(x, w, bias, y, n0, n1);
}

}  // namespace smolvlm::gemm
