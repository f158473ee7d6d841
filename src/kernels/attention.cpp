#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"

namespace smolvlm {

namespace {

// Query rows sharing one packed copy of a head's keys and values.
constexpr int64_t kQueryBlock = 32;

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

// x[j] = exp(x[j] - max) for j < n; returns the sum (HF's softmax numerator and denominator).
float exp_in_place(float* x, int64_t n, float max_value) {
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - max_value);
    sum += x[j];
  }
  return sum;
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


// Query rows one at a time against the keys/values where they lie (decode, short prompts).
void attend_rows_in_place(const AttentionArgs& a, const AttentionShape& s, int64_t h, int64_t i0, int64_t i1,
                          DotFn dot_fn, AxpyFn axpy_fn) {
  thread_local std::vector<float> scores;
  if (scores.size() < static_cast<size_t>(a.kv_rows)) scores.resize(static_cast<size_t>(a.kv_rows));
  const int64_t D = s.head_dim, kvh = h / (s.q_heads / s.kv_heads);
  for (int64_t i = i0; i < i1; ++i) {
    const float* q = a.q + i * a.q_stride + h * D;
    const int64_t n_keys = a.causal ? a.q_pos0 + i + 1 : a.kv_rows;
    float max_score = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) {
      const float sc = dot_fn(q, a.k + j * a.kv_stride + kvh * D, D) * a.scale;
      scores[j] = sc;
      max_score = std::max(max_score, sc);
    }
    const float inv = 1.0f / exp_in_place(scores.data(), n_keys, max_score);
    float* out = a.out + i * a.out_stride + h * D;
    std::fill_n(out, D, 0.f);
    for (int64_t j = 0; j < n_keys; ++j) axpy_fn(scores[j] * inv, a.v + j * a.kv_stride + kvh * D, out, D);
  }
}

// A block of query rows of one head as two small matrix products: the head's queries, keys and
// (transposed) values are packed contiguously, scores = Q·Kᵀ and out = P·V go through linear() on a
// single-thread pool (this already runs on a worker of the caller's pool).
void attend_block_packed(const AttentionArgs& a, const AttentionShape& s, int64_t h, int64_t i0, int64_t i1) {
  thread_local std::vector<float> q_packed, k_packed, v_transposed, scores, out_block;
  thread_local ThreadPool single(1);
  const int64_t D = s.head_dim, kvh = h / (s.q_heads / s.kv_heads), rows = i1 - i0;
  const int64_t n = a.causal ? a.q_pos0 + i1 : a.kv_rows;  // keys any row of the block may see
  auto grow = [](std::vector<float>& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
  };
  grow(q_packed, rows * D);
  grow(k_packed, n * D);
  grow(v_transposed, n * D);
  grow(scores, rows * n);
  grow(out_block, rows * D);
  for (int64_t i = i0; i < i1; ++i) std::copy_n(a.q + i * a.q_stride + h * D, D, q_packed.data() + (i - i0) * D);
  for (int64_t j = 0; j < n; ++j) {
    const float* k = a.k + j * a.kv_stride + kvh * D;
    const float* v = a.v + j * a.kv_stride + kvh * D;
    std::copy_n(k, D, k_packed.data() + j * D);
    for (int64_t d = 0; d < D; ++d) v_transposed[d * n + j] = v[d];
  }
  linear(q_packed.data(), rows, WeightRef{k_packed.data(), DType::F32, n, D}, nullptr, scores.data(), single);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores.data() + r * n;
    const int64_t n_keys = a.causal ? a.q_pos0 + i0 + r + 1 : n;
    float max_score = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) {
      row[j] *= a.scale;
      max_score = std::max(max_score, row[j]);
    }
    const float inv = 1.0f / exp_in_place(row, n_keys, max_score);
    for (int64_t j = 0; j < n_keys; ++j) row[j] *= inv;
    std::fill(row + n_keys, row + n, 0.f);  // the causal mask
  }
  linear(scores.data(), rows, WeightRef{v_transposed.data(), DType::F32, D, n}, nullptr, out_block.data(), single);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(out_block.data() + r * D, D, a.out + (i0 + r) * a.out_stride + h * D);
}

}  // namespace

void attention(const AttentionArgs& a, const AttentionShape& s, ThreadPool& pool) {
  check(a, s);
  const bool avx2 = active_kernel_path() != KernelPath::Scalar;
  const DotFn dot_fn = avx2 ? detail::dot_avx2 : dot_scalar;
  const AxpyFn axpy_fn = avx2 ? detail::axpy_avx2 : axpy_scalar;
  // Work items are (head, block of query rows); the blocking depends only on q_rows, so each output
  // element is computed the same way whatever the thread count.
  const int64_t block = a.q_rows >= kQueryBlock ? kQueryBlock : 1;
  const int64_t blocks = (a.q_rows + block - 1) / block;
  pool.parallel_for(s.q_heads * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t h = item % s.q_heads, i0 = (item / s.q_heads) * block;
      const int64_t i1 = std::min(a.q_rows, i0 + block);
      if (block == 1)
        attend_rows_in_place(a, s, h, i0, i1, dot_fn, axpy_fn);
      else
        attend_block_packed(a, s, h, i0, i1);
    }
  });
}

}  // namespace smolvlm
