// exp, tanh and friends on 4 floats (NEON, Armv8.0: every aarch64 CPU). The same polynomial and
// range reduction as vec_math_avx2.h, so the NEON path's values sit as close to std::exp as the AVX2
// path's: exp4 within 2 ulp, tanh4 / silu / gelu within a few 1e-7 absolute of the scalar versions.
#pragma once

#include <arm_neon.h>

namespace smolvlm::vec {
namespace {

inline float32x4_t splat(float v) { return vdupq_n_f32(v); }

// e^r for x = n·ln2 + r with |r| <= ln2/2 (n = the rounded x·log2 e, returned in *n): a degree-6
// polynomial. x must lie in [-87.3365, 88.7228].
inline float32x4_t exp_reduced(float32x4_t x, float32x4_t* n_out) {
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, splat(1.44269504088896341f)));
  // ln2 split in a part with few mantissa bits (exact n·ln2_hi) and the rest: r = x - n·ln2.
  float32x4_t r = vfmsq_f32(x, n, splat(0.693359375f));
  r = vfmsq_f32(r, n, splat(-2.12194440e-4f));
  float32x4_t p = splat(1.9875691500e-4f);
  p = vfmaq_f32(splat(1.3981999507e-3f), p, r);
  p = vfmaq_f32(splat(8.3334519073e-3f), p, r);
  p = vfmaq_f32(splat(4.1665795894e-2f), p, r);
  p = vfmaq_f32(splat(1.6666665459e-1f), p, r);
  p = vfmaq_f32(splat(5.0000001201e-1f), p, r);
  *n_out = n;
  return vfmaq_f32(vaddq_f32(r, splat(1.0f)), p, vmulq_f32(r, r));
}

// 2^n for integral n in [-126, 127] as a float.
inline float32x4_t pow2(int32x4_t n) {
  return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23));
}

// e^x: inputs below -87.3 give 0 (as std::exp underflows to denormals and then 0), above 88.7 give +inf.
inline float32x4_t exp4(float32x4_t x) {
  const float32x4_t hi = splat(88.7228f), lo = splat(-87.3365f);
  const uint32x4_t too_small = vcltq_f32(x, lo);
  const uint32x4_t too_big = vcgtq_f32(x, hi);
  float32x4_t n;
  const float32x4_t p = exp_reduced(vmaxq_f32(vminq_f32(x, hi), lo), &n);
  // 2^n for n in [-126, 128]: two factors keep n = 128 (x near the top) and n = -126 representable.
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t half = vshrq_n_s32(ni, 1);
  float32x4_t y = vmulq_f32(vmulq_f32(p, pow2(half)), pow2(vsubq_s32(ni, half)));
  y = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), too_small));
  return vbslq_f32(too_big, splat(__builtin_inff()), y);
}

// e^x for x <= 0 (softmax's x - max), the same values as exp4 there: with no overflow side, n lies
// in [-126, 0] and 2^n is one normal float.
inline float32x4_t exp4_nonpositive(float32x4_t x) {
  const float32x4_t lo = splat(-87.3365f);
  const uint32x4_t too_small = vcltq_f32(x, lo);
  float32x4_t n;
  const float32x4_t p = exp_reduced(vmaxq_f32(x, lo), &n);
  const float32x4_t y = vmulq_f32(p, pow2(vcvtq_s32_f32(n)));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), too_small));
}

// tanh(x) = sign(x)·(1 - 2/(e^{2|x|} + 1)). From |x| = 9.01 on, tanh rounds to exactly ±1 in float
// (as std::tanh returns), which the formula alone would miss by an ulp.
inline float32x4_t tanh4(float32x4_t x) {
  const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
  const float32x4_t ax = vabsq_f32(x);
  const uint32x4_t saturated = vcgeq_f32(ax, splat(9.01f));
  const float32x4_t e = exp4(vminq_f32(vaddq_f32(ax, ax), splat(20.0f)));
  float32x4_t t = vsubq_f32(splat(1.0f), vdivq_f32(splat(2.0f), vaddq_f32(e, splat(1.0f))));
  t = vbslq_f32(saturated, splat(1.0f), t);
  return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(t), sign));
}

// The tanh form of GELU, as torch's gelu(approximate="tanh").
inline float32x4_t gelu_tanh4(float32x4_t v) {
  const float32x4_t v3 = vmulq_f32(vmulq_f32(v, v), v);
  const float32x4_t inner = vmulq_f32(splat(0.7978845608028654f), vfmaq_f32(v, splat(0.044715f), v3));
  const float32x4_t half_v = vmulq_f32(splat(0.5f), v);
  return vfmaq_f32(half_v, half_v, tanh4(inner));
}

// silu(g) = g / (1 + e^-g)
inline float32x4_t silu4(float32x4_t g) { return vdivq_f32(g, vaddq_f32(splat(1.0f), exp4(vnegq_f32(g)))); }

// Horizontal sum and max in a fixed order (pairwise), the same for every call.
inline float hsum4(float32x4_t v) { return vaddvq_f32(v); }
inline float hmax4(float32x4_t v) { return vmaxvq_f32(v); }

}  // namespace
}  // namespace smolvlm::vec
