// exp, tanh and friends on 8 floats (AVX2/FMA). Include only from files built with those
// instruction sets. exp8 is within 2 ulp of std::exp over the float range; the functions built on it
// (tanh8, silu, gelu) are within a few 1e-7 absolute of their scalar counterparts, far inside the
// 1e-4 logit tolerance the model tests hold every kernel path to.
#pragma once

#include <immintrin.h>

namespace smolvlm::vec {
namespace {

// e^r for x = n·ln2 + r with |r| <= ln2/2 (n = the rounded x·log2 e, returned in *n): a degree-6
// polynomial. x must lie in [-87.3365, 88.7228].
inline __m256 exp_reduced(__m256 x, __m256* n_out) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 split in a part with few mantissa bits (exact n·ln2_hi) and the rest.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  *n_out = n;
  return _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
}

// e^x: inputs below -87.3 give 0 (as std::exp underflows to denormals and then 0), above 88.7 give +inf.
inline __m256 exp8(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.7228f), lo = _mm256_set1_ps(-87.3365f);
  const __m256 too_small = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 too_big = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  __m256 n;
  const __m256 p = exp_reduced(_mm256_max_ps(_mm256_min_ps(x, hi), lo), &n);
  // 2^n for n in [-126, 128]: two factors keep n = 128 (x near the top) and n = -126 representable.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_andnot_ps(too_small, y);
  return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), too_big);
}

// e^x for x <= 0 (softmax's x - max), the same values as exp8 there: with no overflow side, n lies
// in [-126, 0] and 2^n is one normal float.
inline __m256 exp8_nonpositive(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3365f);
  const __m256 too_small = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  __m256 n;
  const __m256 p = exp_reduced(_mm256_max_ps(x, lo), &n);
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(too_small, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

// tanh(x) = sign(x)·(1 - 2/(e^{2|x|} + 1)). From |x| = 9.01 on, tanh rounds to exactly ±1 in float
// (as std::tanh returns), which the formula alone would miss by an ulp.
inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 saturated = _mm256_cmp_ps(ax, _mm256_set1_ps(9.01f), _CMP_GE_OQ);
  const __m256 e = exp8(_mm256_min_ps(_mm256_add_ps(ax, ax), _mm256_set1_ps(20.0f)));
  __m256 t = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                           _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  t = _mm256_blendv_ps(t, _mm256_set1_ps(1.0f), saturated);
  return _mm256_or_ps(t, sign);
}

// The tanh form of GELU, as torch's gelu(approximate="tanh").
inline __m256 gelu_tanh8(__m256 v) {
  const __m256 beta = _mm256_set1_ps(0.7978845608028654f), kappa = _mm256_set1_ps(0.044715f);
  const __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
  const __m256 inner = _mm256_mul_ps(beta, _mm256_fmadd_ps(kappa, v3, v));
  const __m256 half_v = _mm256_mul_ps(_mm256_set1_ps(0.5f), v);
  return _mm256_fmadd_ps(half_v, tanh8(inner), half_v);
}

// silu(g) = g / (1 + e^-g)
inline __m256 silu8(__m256 g) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace smolvlm::vec
