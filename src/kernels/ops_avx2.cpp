// AVX2/FMA versions of the inner loops in ops.cpp (compiled with -mavx2 -mfma; called only when the
// active kernel path is avx2 or better).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"
#include "kernels/vec_math_avx2.h"

namespace smolvlm::detail {

// R dot products q · k_r (D floats each), each summed the same way whatever R: two 8-lane
// accumulators over 16-float steps, one 8-float step, a fixed reduction, then the scalar tail. The
// R rows share each load of q.
template <int R>
inline void dot_block(const float* q, const float* k, int64_t stride, int64_t D, float* out) {
  __m256 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= D; i += 16) {
    const __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k + r * stride + i), acc0[r]);
      acc1[r] = _mm256_fmadd_ps(q1, _mm256_loadu_ps(k + r * stride + i + 8), acc1[r]);
    }
  }
  for (; i + 8 <= D; i += 8) {
    const __m256 q0 = _mm256_loadu_ps(q + i);
    for (int r = 0; r < R; ++r) acc0[r] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k + r * stride + i), acc0[r]);
  }
  for (int r = 0; r < R; ++r) {
    float acc = vec::hsum8(_mm256_add_ps(acc0[r], acc1[r]));
    for (int64_t t = i; t < D; ++t) acc += q[t] * k[r * stride + t];
    out[r] = acc;
  }
}

void dot_rows_avx2(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) dot_block<4>(q, k + j * stride, stride, D, scores + j);
  for (; j < n; ++j) dot_block<1>(q, k + j * stride, stride, D, scores + j);
}

// out[d0 .. d0 + 8V) = Σ_j p[j]·v_j over all n rows, the V vectors held in registers; each element
// is one FMA per row in j order.
template <int V>
inline void weighted_sum_block(const float* p, const float* v, int64_t stride, int64_t n, float* out) {
  __m256 acc[V];
  for (int c = 0; c < V; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    const __m256 pj = _mm256_set1_ps(p[j]);
    for (int c = 0; c < V; ++c) acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + j * stride + 8 * c), acc[c]);
  }
  for (int c = 0; c < V; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

void weighted_sum_rows_avx2(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out) {
  int64_t d = 0;
  for (; d + 64 <= D; d += 64) weighted_sum_block<8>(p, v + d, stride, n, out + d);
  for (; d + 8 <= D; d += 8) weighted_sum_block<1>(p, v + d, stride, n, out + d);
  for (; d < D; ++d) {
    float acc = 0.f;
    for (int64_t j = 0; j < n; ++j) acc += p[j] * v[j * stride + d];
    out[d] = acc;
  }
}

void add_inplace_avx2(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] += x[i];
}

void rms_norm_row_avx2(const float* x, int64_t dim, const float* weight, float eps, float* y) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float sum_sq = vec::hsum8(acc);
  for (; i < dim; ++i) sum_sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 8 <= dim; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(weight + i), _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv)));
  for (; i < dim; ++i) y[i] = weight[i] * (x[i] * inv);
}

void layer_norm_row_avx2(const float* x, int64_t dim, const float* weight, const float* bias, float eps, float* y) {
  const int64_t d8 = dim & ~int64_t(7);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < d8; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  float sum = vec::hsum8(acc);
  for (int64_t i = d8; i < dim; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(dim);
  // Variance from the centred values (two passes), as torch does.
  const __m256 vmean = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < d8; i += 8) {
    const __m256 c = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    acc = _mm256_fmadd_ps(c, c, acc);
  }
  float sum_sq = vec::hsum8(acc);
  for (int64_t i = d8; i < dim; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int64_t i = 0; i < d8; i += 8) {
    const __m256 c = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmean), vinv);
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(c, _mm256_loadu_ps(weight + i), _mm256_loadu_ps(bias + i)));
  }
  for (int64_t i = d8; i < dim; ++i) y[i] = (x[i] - mean) * inv * weight[i] + bias[i];
}

void gelu_tanh_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, vec::gelu_tanh8(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through a padded vector, so every element sees the same arithmetic
    float buf[8] = {};
    for (int64_t j = i; j < n; ++j) buf[j - i] = x[j];
    _mm256_storeu_ps(buf, vec::gelu_tanh8(_mm256_loadu_ps(buf)));
    for (int64_t j = i; j < n; ++j) x[j] = buf[j - i];
  }
}

void silu_mul_avx2(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(vec::silu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  if (i < n) {
    float g[8] = {}, u[8] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    _mm256_storeu_ps(g, _mm256_mul_ps(vec::silu8(_mm256_loadu_ps(g)), _mm256_loadu_ps(u)));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

namespace {

// A product the compiler may not fuse into a following add (this file is built with FMA and
// contraction on; the reference rounds the product first).
inline __m256 rounded_product(__m256 a, __m256 b) {
  __m256 p = _mm256_mul_ps(a, b);
  asm("" : "+x"(p));
  return p;
}

// Lanes [0, n) of 8 (n < 8 in the last piece of a row).
inline __m256i first_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace

void rope_rotate_head_avx2(float* v, int64_t half, const float* cos, const float* sin) {
  for (int64_t i = 0; i < half; i += 8) {
    const __m256i m = first_lanes(std::min<int64_t>(8, half - i));
    const __m256 a = _mm256_maskload_ps(v + i, m), b = _mm256_maskload_ps(v + i + half, m);
    const __m256 c = _mm256_maskload_ps(cos + i, m), s = _mm256_maskload_ps(sin + i, m);
    _mm256_maskstore_ps(v + i, m, _mm256_sub_ps(rounded_product(a, c), rounded_product(b, s)));
    _mm256_maskstore_ps(v + i + half, m, _mm256_add_ps(rounded_product(b, c), rounded_product(a, s)));
  }
}

float scale_max_avx2(float* x, int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  __m256 m = _mm256_set1_ps(-__builtin_inff());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
    _mm256_storeu_ps(x + i, v);
    m = _mm256_max_ps(m, v);
  }
  float max_value = vec::hmax8(m);
  for (; i < n; ++i) {
    x[i] *= scale;
    max_value = std::max(max_value, x[i]);
  }
  return max_value;
}

float exp_sum_avx2(float* x, int64_t n, float max_value) {
  const __m256 mv = _mm256_set1_ps(max_value);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = vec::exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  if (i < n) {
    float buf[8];
    for (int j = 0; j < 8; ++j) buf[j] = i + j < n ? x[i + j] : -__builtin_inff();
    const __m256 e = vec::exp8_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(buf), mv));
    _mm256_storeu_ps(buf, e);
    acc = _mm256_add_ps(acc, e);
    for (int64_t j = i; j < n; ++j) x[j] = buf[j - i];
  }
  return vec::hsum8(acc);
}

void scale_avx2(float* x, int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
  for (; i < n; ++i) x[i] *= scale;
}

}  // namespace smolvlm::detail
