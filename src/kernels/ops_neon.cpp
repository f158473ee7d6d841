// NEON versions of the inner loops in ops.cpp (Armv8.0 Advanced SIMD; called only when the active
// kernel path is neon). The same structure as ops_avx2.cpp on 4-lane vectors: each result is
// computed the same way whatever the thread split, tails through padded vectors where the op is
// element-wise.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "kernels/vec_math_neon.h"

namespace smolvlm::detail {

// R dot products q · k_r (D floats each), each summed the same way whatever R: four 4-lane
// accumulators over 16-float steps, then 4-float steps into the first, a fixed reduction, then the
// scalar tail. The R rows share each load of q.
template <int R>
inline void dot_block(const float* q, const float* k, int64_t stride, int64_t D, float* out) {
  float32x4_t acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = vdupq_n_f32(0.f);
  int64_t i = 0;
  for (; i + 16 <= D; i += 16) {
    const float32x4_t q0 = vld1q_f32(q + i), q1 = vld1q_f32(q + i + 4);
    const float32x4_t q2 = vld1q_f32(q + i + 8), q3 = vld1q_f32(q + i + 12);
    for (int r = 0; r < R; ++r) {
      const float* kr = k + r * stride + i;
      acc[r][0] = vfmaq_f32(acc[r][0], q0, vld1q_f32(kr));
      acc[r][1] = vfmaq_f32(acc[r][1], q1, vld1q_f32(kr + 4));
      acc[r][2] = vfmaq_f32(acc[r][2], q2, vld1q_f32(kr + 8));
      acc[r][3] = vfmaq_f32(acc[r][3], q3, vld1q_f32(kr + 12));
    }
  }
  for (; i + 4 <= D; i += 4) {
    const float32x4_t q0 = vld1q_f32(q + i);
    for (int r = 0; r < R; ++r) acc[r][0] = vfmaq_f32(acc[r][0], q0, vld1q_f32(k + r * stride + i));
  }
  for (int r = 0; r < R; ++r) {
    float s = vec::hsum4(vaddq_f32(vaddq_f32(acc[r][0], acc[r][1]), vaddq_f32(acc[r][2], acc[r][3])));
    for (int64_t t = i; t < D; ++t) s += q[t] * k[r * stride + t];
    out[r] = s;
  }
}

void dot_rows_neon(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) dot_block<4>(q, k + j * stride, stride, D, scores + j);
  for (; j < n; ++j) dot_block<1>(q, k + j * stride, stride, D, scores + j);
}

// out[d0 .. d0 + 4V) = Σ_j p[j]·v_j over all n rows, the V vectors held in registers; each element
// is one FMA per row in j order.
template <int V>
inline void weighted_sum_block(const float* p, const float* v, int64_t stride, int64_t n, float* out) {
  float32x4_t acc[V];
  for (int c = 0; c < V; ++c) acc[c] = vdupq_n_f32(0.f);
  for (int64_t j = 0; j < n; ++j) {
    const float32x4_t pj = vdupq_n_f32(p[j]);
    for (int c = 0; c < V; ++c) acc[c] = vfmaq_f32(acc[c], pj, vld1q_f32(v + j * stride + 4 * c));
  }
  for (int c = 0; c < V; ++c) vst1q_f32(out + 4 * c, acc[c]);
}

void weighted_sum_rows_neon(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out) {
  int64_t d = 0;
  for (; d + 64 <= D; d += 64) weighted_sum_block<16>(p, v + d, stride, n, out + d);
  for (; d + 4 <= D; d += 4) weighted_sum_block<1>(p, v + d, stride, n, out + d);
  for (; d < D; ++d) {
    float acc = 0.f;
    for (int64_t j = 0; j < n; ++j) acc += p[j] * v[j * stride + d];
    out[d] = acc;
  }
}

void add_inplace_neon(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] += x[i];
}

void rms_norm_row_neon(const float* x, int64_t dim, const float* weight, float eps, float* y) {
  float32x4_t acc0 = vdupq_n_f32(0.f), acc1 = acc0;
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
    acc0 = vfmaq_f32(acc0, a, a);
    acc1 = vfmaq_f32(acc1, b, b);
  }
  float sum_sq = vec::hsum4(vaddq_f32(acc0, acc1));
  for (; i < dim; ++i) sum_sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
  const float32x4_t vinv = vdupq_n_f32(inv);
  i = 0;
  for (; i + 4 <= dim; i += 4)
    vst1q_f32(y + i, vmulq_f32(vld1q_f32(weight + i), vmulq_f32(vld1q_f32(x + i), vinv)));
  for (; i < dim; ++i) y[i] = weight[i] * (x[i] * inv);
}

void layer_norm_row_neon(const float* x, int64_t dim, const float* weight, const float* bias, float eps, float* y) {
  const int64_t d4 = dim & ~int64_t(3);
  float32x4_t acc = vdupq_n_f32(0.f);
  for (int64_t i = 0; i < d4; i += 4) acc = vaddq_f32(acc, vld1q_f32(x + i));
  float sum = vec::hsum4(acc);
  for (int64_t i = d4; i < dim; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(dim);
  // Variance from the centred values (two passes), as torch does.
  const float32x4_t vmean = vdupq_n_f32(mean);
  acc = vdupq_n_f32(0.f);
  for (int64_t i = 0; i < d4; i += 4) {
    const float32x4_t c = vsubq_f32(vld1q_f32(x + i), vmean);
    acc = vfmaq_f32(acc, c, c);
  }
  float sum_sq = vec::hsum4(acc);
  for (int64_t i = d4; i < dim; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
  const float32x4_t vinv = vdupq_n_f32(inv);
  for (int64_t i = 0; i < d4; i += 4) {
    const float32x4_t c = vmulq_f32(vsubq_f32(vld1q_f32(x + i), vmean), vinv);
    vst1q_f32(y + i, vfmaq_f32(vld1q_f32(bias + i), c, vld1q_f32(weight + i)));
  }
  for (int64_t i = d4; i < dim; ++i) y[i] = (x[i] - mean) * inv * weight[i] + bias[i];
}

void gelu_tanh_neon(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vec::gelu_tanh4(vld1q_f32(x + i)));
  if (i < n) {  // the tail through a padded vector, so every element sees the same arithmetic
    float buf[4] = {};
    for (int64_t j = i; j < n; ++j) buf[j - i] = x[j];
    vst1q_f32(buf, vec::gelu_tanh4(vld1q_f32(buf)));
    for (int64_t j = i; j < n; ++j) x[j] = buf[j - i];
  }
}

void silu_mul_neon(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(gate + i, vmulq_f32(vec::silu4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  if (i < n) {
    float g[4] = {}, u[4] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    vst1q_f32(g, vmulq_f32(vec::silu4(vld1q_f32(g)), vld1q_f32(u)));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

void rope_rotate_head_neon(float* v, int64_t half, const float* cos, const float* sin) {
  int64_t i = 0;
  for (; i + 4 <= half; i += 4) {
    const float32x4_t a = vld1q_f32(v + i), b = vld1q_f32(v + i + half);
    const float32x4_t c = vld1q_f32(cos + i), s = vld1q_f32(sin + i);
    vst1q_f32(v + i, vsubq_f32(vmulq_f32(a, c), vmulq_f32(b, s)));
    vst1q_f32(v + i + half, vaddq_f32(vmulq_f32(b, c), vmulq_f32(a, s)));
  }
  for (; i < half; ++i) {  // aarch64 builds do not contract (CMakeLists.txt): rounded as the reference
    const float a = v[i], b = v[i + half];
    v[i] = a * cos[i] - b * sin[i];
    v[i + half] = b * cos[i] + a * sin[i];
  }
}

float scale_max_neon(float* x, int64_t n, float scale) {
  const float32x4_t s = vdupq_n_f32(scale);
  float32x4_t m = vdupq_n_f32(-__builtin_inff());
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vmulq_f32(vld1q_f32(x + i), s);
    vst1q_f32(x + i, v);
    m = vmaxq_f32(m, v);
  }
  float max_value = vec::hmax4(m);
  for (; i < n; ++i) {
    x[i] *= scale;
    max_value = std::max(max_value, x[i]);
  }
  return max_value;
}

float exp_sum_neon(float* x, int64_t n, float max_value) {
  const float32x4_t mv = vdupq_n_f32(max_value);
  float32x4_t acc = vdupq_n_f32(0.f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = vec::exp4_nonpositive(vsubq_f32(vld1q_f32(x + i), mv));
    vst1q_f32(x + i, e);
    acc = vaddq_f32(acc, e);
  }
  if (i < n) {
    float buf[4];
    for (int j = 0; j < 4; ++j) buf[j] = i + j < n ? x[i + j] : -__builtin_inff();
    const float32x4_t e = vec::exp4_nonpositive(vsubq_f32(vld1q_f32(buf), mv));
    vst1q_f32(buf, e);
    acc = vaddq_f32(acc, e);
    for (int64_t j = i; j < n; ++j) x[j] = buf[j - i];
  }
  return vec::hsum4(acc);
}

void scale_neon(float* x, int64_t n, float scale) {
  const float32x4_t s = vdupq_n_f32(scale);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), s));
  for (; i < n; ++i) x[i] *= scale;
}

}  // namespace smolvlm::detail
