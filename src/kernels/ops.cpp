#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu.h"

namespace smolvlm {

namespace {

// The vector loops of one instruction set (ops.h, detail): the AVX2 ones on the avx2 path, and on
// the avx512 path all but attention's row loops, the NEON ones on neon.
struct VectorOps {
  decltype(&detail::dot_rows_avx2) dot_rows;
  decltype(&detail::weighted_sum_rows_avx2) weighted_sum_rows;
  decltype(&detail::add_inplace_avx2) add_inplace;
  decltype(&detail::rms_norm_row_avx2) rms_norm_row;
  decltype(&detail::layer_norm_row_avx2) layer_norm_row;
  decltype(&detail::gelu_tanh_avx2) gelu_tanh;
  decltype(&detail::silu_mul_avx2) silu_mul;
  decltype(&detail::rope_rotate_head_avx2) rope_rotate_head;
  decltype(&detail::scale_max_avx2) scale_max;
  decltype(&detail::exp_sum_avx2) exp_sum;
  decltype(&detail::scale_avx2) scale;
};

#if SMOLVLM_HAVE_X86_KERNELS
constexpr VectorOps kAvx2Ops{detail::dot_rows_avx2,     detail::weighted_sum_rows_avx2, detail::add_inplace_avx2,
                             detail::rms_norm_row_avx2, detail::layer_norm_row_avx2,    detail::gelu_tanh_avx2,
                             detail::silu_mul_avx2,     detail::rope_rotate_head_avx2,  detail::scale_max_avx2,
                             detail::exp_sum_avx2,      detail::scale_avx2};
constexpr VectorOps kAvx512Ops{detail::dot_rows_avx512,   detail::weighted_sum_rows_avx512, detail::add_inplace_avx2,
                               detail::rms_norm_row_avx2, detail::layer_norm_row_avx2,      detail::gelu_tanh_avx2,
                               detail::silu_mul_avx2,     detail::rope_rotate_head_avx2,    detail::scale_max_avx2,
                               detail::exp_sum_avx2,      detail::scale_avx2};
#endif
#if SMOLVLM_HAVE_NEON_KERNELS
constexpr VectorOps kNeonOps{detail::dot_rows_neon,     detail::weighted_sum_rows_neon, detail::add_inplace_neon,
                             detail::rms_norm_row_neon, detail::layer_norm_row_neon,    detail::gelu_tanh_neon,
                             detail::silu_mul_neon,     detail::rope_rotate_head_neon,  detail::scale_max_neon,
                             detail::exp_sum_neon,      detail::scale_neon};
#endif

// The vector loops of a path; null for the scalar path (the reference loops) and for any path this
// build has no kernel files for (never active). Ops given a pool follow the pool's task path
// (kernels/thread_pool.h); the others run on the calling thread's.
const VectorOps* vector_ops(KernelPath path) {
  switch (path) {
#if SMOLVLM_HAVE_X86_KERNELS
    case KernelPath::Avx2: return &kAvx2Ops;
    case KernelPath::Avx512: return &kAvx512Ops;
#endif
#if SMOLVLM_HAVE_NEON_KERNELS
    case KernelPath::Neon: return &kNeonOps;
#endif
    default: return nullptr;
  }
}
const VectorOps* vector_ops() { return vector_ops(active_kernel_path()); }
const VectorOps* vector_ops(const ThreadPool& pool) { return vector_ops(pool.task_kernel_path()); }

void rms_norm_row(const float* x, int64_t dim, const float* weight, float eps, float* y) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < dim; ++i) sum_sq += double(x[i]) * double(x[i]);
  const float variance = static_cast<float>(sum_sq / double(dim));
  const float inv = 1.0f / std::sqrt(variance + eps);
  for (int64_t i = 0; i < dim; ++i) y[i] = weight[i] * (x[i] * inv);
}

void layer_norm_row(const float* x, int64_t dim, const float* weight, const float* bias, float eps, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < dim; ++i) sum += x[i];
  const double mean = sum / double(dim);
  double sum_sq = 0.0;
  for (int64_t i = 0; i < dim; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / double(dim) + double(eps)));
  const float mean_f = static_cast<float>(mean);
  for (int64_t i = 0; i < dim; ++i) y[i] = (x[i] - mean_f) * inv * weight[i] + bias[i];
}

}  // namespace

// Row-wise and element-wise ops split their work over the pool in pieces whose results do not
// depend on the split (each row or element is computed alone), so any thread count gives the same bits.
constexpr int64_t kElementGrain = 16 * 1024;  // elements per task of an element-wise op

int64_t row_grain(int64_t dim) { return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(dim, 1)); }

void layer_norm(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias, float eps,
                float* y, ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  pool.parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (v)
        v->layer_norm_row(x + r * dim, dim, weight, bias, eps, y + r * dim);
      else
        layer_norm_row(x + r * dim, dim, weight, bias, eps, y + r * dim);
    }
  });
}

void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y,
              ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  pool.parallel_for(rows, row_grain(dim), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (v)
        v->rms_norm_row(x + r * dim, dim, weight, eps, y + r * dim);
      else
        rms_norm_row(x + r * dim, dim, weight, eps, y + r * dim);
    }
  });
}

void gelu_tanh(float* x, int64_t n, ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  pool.parallel_for(n, kElementGrain, [&](int64_t i0, int64_t i1) {
    if (v) return v->gelu_tanh(x + i0, i1 - i0);
    gelu_tanh_reference(x + i0, i1 - i0);
  });
}

void silu_mul(float* gate, const float* up, int64_t n, ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  pool.parallel_for(n, kElementGrain, [&](int64_t i0, int64_t i1) {
    if (v) return v->silu_mul(gate + i0, up + i0, i1 - i0);
    silu_mul_reference(gate + i0, up + i0, i1 - i0);
  });
}

void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  pool.parallel_for(n, kElementGrain, [&](int64_t i0, int64_t i1) {
    if (v) return v->add_inplace(y + i0, x + i0, i1 - i0);
    add_inplace_reference(y + i0, x + i0, i1 - i0);
  });
}

void rope_inv_freq(double theta, int64_t head_dim, float* inv_freq) {
  // torch: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), every step in float32.
  const float base = static_cast<float>(theta);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = 1.0f / std::pow(base, exponent);
  }
}

void rope_table(const int64_t* positions, int64_t rows, const float* inv_freq, int64_t head_dim, float* table) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float pos = static_cast<float>(positions[r]);
    float* t = table + r * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      t[i] = std::cos(angle);
      t[half + i] = std::sin(angle);
    }
  }
}

void rope_rotate_half(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                      const float* table, ThreadPool& pool) {
  const VectorOps* v = vector_ops(pool);
  const int64_t half = head_dim / 2;
  pool.parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
    if (!v)
      return rope_rotate_half_reference(x + r0 * row_stride, r1 - r0, row_stride, heads, head_dim,
                                        table + r0 * head_dim);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t h = 0; h < heads; ++h)
        v->rope_rotate_head(x + r * row_stride + h * head_dim, half, table + r * head_dim, table + r * head_dim + half);
  });
}

void softmax(float* x, int64_t n) {
  float max_v = x[0];
  for (int64_t i = 1; i < n; ++i) max_v = std::max(max_v, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_v);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

void dot_rows(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  if (const VectorOps* v = vector_ops()) return v->dot_rows(q, k, stride, n, D, scores);
  dot_rows_reference(q, k, stride, n, D, scores);
}

void scaled_softmax(float* x, int64_t n, float scale) {
  if (const VectorOps* v = vector_ops()) {
    const float max_value = v->scale_max(x, n, scale);
    return v->scale(x, n, 1.0f / v->exp_sum(x, n, max_value));
  }
  scaled_softmax_reference(x, n, scale);
}

void weighted_sum_rows(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out) {
  if (const VectorOps* ops = vector_ops()) return ops->weighted_sum_rows(p, v, stride, n, D, out);
  weighted_sum_rows_reference(p, v, stride, n, D, out);
}

// The references: plain loops in the order and precision of HF's fp32 arithmetic. The scalar path
// runs these same loops.

void layer_norm_reference(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias,
                          float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) layer_norm_row(x + r * dim, dim, weight, bias, eps, y + r * dim);
}

void rms_norm_reference(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) rms_norm_row(x + r * dim, dim, weight, eps, y + r * dim);
}

void gelu_tanh_reference(float* x, int64_t n) {
  const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);  // √(2/π)
  const float kappa = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float inner = beta * (v + kappa * v * v * v);
    x[i] = 0.5f * v * (1.0f + std::tanh(inner));
  }
}

void silu_mul_reference(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_inplace_reference(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void rope_rotate_half_reference(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                                const float* table) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* cos_r = table + r * head_dim;
    const float* sin_r = cos_r + half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + h * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        // q·cos + rotate_half(q)·sin with rotate_half(q) = (-q2, q1)
        v[i] = a * cos_r[i] - b * sin_r[i];
        v[i + half] = b * cos_r[i] + a * sin_r[i];
      }
    }
  }
}

void dot_rows_reference(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  for (int64_t j = 0; j < n; ++j) {
    float acc = 0.f;
    for (int64_t d = 0; d < D; ++d) acc += q[d] * k[j * stride + d];
    scores[j] = acc;
  }
}

void scaled_softmax_reference(float* x, int64_t n, float scale) {
  float max_value = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    x[j] *= scale;
    max_value = std::max(max_value, x[j]);
  }
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - max_value);
    sum += x[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) x[j] *= inv;
}

void weighted_sum_rows_reference(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out) {
  std::fill_n(out, D, 0.f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < D; ++d) out[d] += p[j] * v[j * stride + d];
}

}  // namespace smolvlm
