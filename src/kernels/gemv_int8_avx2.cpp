// The integer decode products of kernels/gemv_int8.h on AVX2 (the 8-lane halves of gemv_int8_256.h):
//   Q8: a code q + 128 (0..255) times an x code overflows vpmaddubsw's int16 pair sums, so the stored
//       code q (-128..127) is multiplied instead, as |q| times x with q's sign (vpsignb; at most
//       2 * 128 * 127 a pair), vpmaddwd by ones makes the lanes, and the lane's 128 times its x codes'
//       sum (q8_lane_offsets) makes them the reference's.
//   Q4: a nibble (0..15) times an x code fits vpmaddubsw's int16 pair sums (at most 2 * 15 * 127), the
//       even and odd nibbles' pair sums add in int16 (at most 7620), and vpmaddwd by ones makes the
//       lanes.
//   LUT4: the same, each nibble first looked up (vpshufb) as its table code, unsigned 6-bit (four
//       products at most 4 * 63 * 127 = 32004, so the pair sums add in int16 too).
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
    return sums(_mm256_and_si256(bytes, low), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low), x_even, x_odd);
  }
  [[gnu::always_inline]] static __m256i lut4(__m256i bytes, __m256i table, __m256i x_even, __m256i x_odd) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i even = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, low));
    const __m256i odd = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low));
    return sums(even, odd, x_even, x_odd);
  }

 private:
  // Lane l: even codes 4l..4l+3 times x_even's and odd ones times x_odd's, codes of at most 63.
  static_assert(4 * int8_detail::kLut4Top * 127 <= 32767, "four products must add in int16");
  [[gnu::always_inline]] static __m256i sums(__m256i even, __m256i odd, __m256i x_even, __m256i x_odd) {
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(even, x_even), _mm256_maddubs_epi16(odd, x_odd));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
};

}  // namespace

void gemv_int8_avx2(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  gemv_int8_256<Avx2Lanes>(x, w, bias, y, n0, n1);
}

// round_int8_row_reference's bits, a block of 32 values in four registers: the largest magnitude exact
// in any order (max_ps returns its second operand where the first is NaN, so a NaN is ignored, as the
// reference's comparisons ignore it), each code from the separately rounded product and sum, the
// codes' sum exact. The reference's scalar loops had taken a twentieth of a SmolVLM-256M LUT4 token
// (each thread rounds every product's input: llama_team.cpp).
void round_int8_row_avx2(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums) {
  const __m256 shift = _mm256_set1_ps(12582912.f), sign = _mm256_set1_ps(-0.f);  // 1.5 * 2^23, as the reference
  const __m256i shift_bits = _mm256_set1_epi32(0x4B400000), low = _mm256_set1_epi32(-127),
                high = _mm256_set1_epi32(127), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  alignas(32) float part[32];  // a block past K's end: its values, zeros after them
  for (int64_t j = 0; j < k_pad / 32; ++j) {
    const int64_t k0 = 32 * j, n = K - k0 < 0 ? 0 : K - k0 < 32 ? K - k0 : 32;
    const float* at = n > 0 ? x + k0 : x;  // no pointer past x for blocks wholly past K
    if (n < 32) {
      for (int64_t i = 0; i < 32; ++i) part[i] = i < n ? at[i] : 0.f;
      at = part;
    }
    __m256 v[4], amax8 = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(at + 8 * i);
      amax8 = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax8);
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    const __m256 inv = _mm256_set1_ps(amax > 0.f ? 127.f / amax : 0.f);
    __m256i c[4];
    for (int i = 0; i < 4; ++i) {
      // The product rounded on its own (this file contracts a*b + c into one FMA; the empty asm
      // hands the sum a finished register instead).
      __m256 product = _mm256_mul_ps(v[i], inv);
      __asm__("" : "+x"(product));
      __m256 shifted = _mm256_add_ps(product, shift);
      shifted = _mm256_blendv_ps(shift, shifted, _mm256_cmp_ps(shifted, shifted, _CMP_EQ_OQ));  // NaN: 0
      c[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(_mm256_castps_si256(shifted), shift_bits), low), high);
    }
    // packs interleave the 128-bit halves: dwords (c0 0-3, c1 0-3, c2 0-3, c3 0-3, c0 4-7, ...).
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k0), _mm256_permutevar8x32_epi32(bytes, order));
    const __m256i t8 = _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
    __m128i t4 = _mm_add_epi32(_mm256_castsi256_si128(t8), _mm256_extracti128_si256(t8, 1));
    t4 = _mm_add_epi32(t4, _mm_shuffle_epi32(t4, 0x4E));
    t4 = _mm_add_epi32(t4, _mm_shuffle_epi32(t4, 0xB1));
    const float scale = amax / 127.f;
    scales[j] = scale;
    sums[j] = scale * static_cast<float>(_mm_cvtsi128_si32(t4));
  }
}

}  // namespace smolvlm::gemm
