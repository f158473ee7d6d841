#include "kernels/attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"

namespace smolvlm {

namespace {

using DotFn = float (*)(const float*, const float*, int64_t);
using AxpyFn = void (*)(float, const float*, float*, int64_t);

float dot_scalar(const float* a, const float* b, int64_t n) {
  float acc = 0.f;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

void axpy_scalar(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void check(const AttentionArgs& a, const AttentionShape& s) {
  const bool ok = s.q_heads > 0 && s.kv_heads > 0 && s.head_dim > 0 && s.q_heads % s.kv_heads == 0 &&
                  a.q_rows >= 0 && a.kv_rows > 0 && a.q_stride >= s.q_heads * s.head_dim &&
                  a.kv_stride >= s.kv_heads * s.head_dim && a.out_stride >= s.q_heads * s.head_dim &&
                  (!a.causal || (a.q_pos0 >= 0 && a.q_pos0 + a.q_rows <= a.kv_rows));
  if (!ok)
    throw internal_error("attention: inconsistent shape (q_heads " + std::to_string(s.q_heads) + ", kv_heads " +
                         std::to_string(s.kv_heads) + ", q_rows " + std::to_string(a.q_rows) + ", kv_rows " +
                         std::to_string(a.kv_rows) + ", q_pos0 " + std::to_string(a.q_pos0) + ")");
}

}  // namespace

void attention(const AttentionArgs& a, const AttentionShape& s, ThreadPool& pool) {
  check(a, s);
  const bool avx2 = active_kernel_path() != KernelPath::Scalar;
  const DotFn dot_fn = avx2 ? detail::dot_avx2 : dot_scalar;
  const AxpyFn axpy_fn = avx2 ? detail::axpy_avx2 : axpy_scalar;
  const int64_t D = s.head_dim, group = s.q_heads / s.kv_heads;
  const int64_t items = s.q_heads * a.q_rows;
  pool.parallel_for(items, 4, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores;
    if (scores.size() < static_cast<size_t>(a.kv_rows)) scores.resize(static_cast<size_t>(a.kv_rows));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t h = item % s.q_heads, i = item / s.q_heads;
      const int64_t kvh = h / group;
      const float* q = a.q + i * a.q_stride + h * D;
      const int64_t n_keys = a.causal ? a.q_pos0 + i + 1 : a.kv_rows;
      float max_score = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        const float sc = dot_fn(q, a.k + j * a.kv_stride + kvh * D, D) * a.scale;
        scores[j] = sc;
        max_score = std::max(max_score, sc);
      }
      float sum = 0.f;
      for (int64_t j = 0; j < n_keys; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
      float* out = a.out + i * a.out_stride + h * D;
      for (int64_t d = 0; d < D; ++d) out[d] = 0.f;
      for (int64_t j = 0; j < n_keys; ++j) axpy_fn(scores[j] * inv, a.v + j * a.kv_stride + kvh * D, out, D);
    }
  });
}

}  // namespace smolvlm
