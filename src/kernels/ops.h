// Element-wise and row-wise kernels of the models (norms, activations, RoPE, softmax, argmax), fp32.
// Each has a plain scalar version and, where the work is large enough to matter, an AVX2 and a NEON version;
// the one used follows the pool's task path (ThreadPool::task_kernel_path()) for ops given a pool,
// else the calling thread's active_kernel_path() (kernels/cpu.h). Every function processes whole
// rows itself, so results never depend on how callers split rows across threads.
#pragma once

#include <cstdint>

#include "kernels/thread_pool.h"

namespace smolvlm {

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias  (torch.nn.LayerNorm, biased variance).
// x and y may alias.
void layer_norm(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias, float eps,
                float* y, ThreadPool& pool);

// y[r, :] = x[r, :] / sqrt(mean(x²) + eps) * weight  (HF LlamaRMSNorm in fp32). x and y may alias.
void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y,
              ThreadPool& pool);

// In place: x = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (torch gelu, approximate="tanh").
void gelu_tanh(float* x, int64_t n, ThreadPool& pool);

// In place: gate = silu(gate) · up  (the SwiGLU product of Llama's MLP).
void silu_mul(float* gate, const float* up, int64_t n, ThreadPool& pool);

// y[i] += x[i]  (residual connections).
void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool);

// The angles of HF's "default" rotary embedding for `rows` positions, computed once per forward pass
// (as HF's rotary_emb) and shared by every layer, queries and keys: with half = head_dim / 2 and
// angle = positions[r] · inv_freq[i] (fp32), table[r * head_dim + i] = cos(angle) and
// table[r * head_dim + half + i] = sin(angle) for i < half.
void rope_table(const int64_t* positions, int64_t rows, const float* inv_freq, int64_t head_dim, float* table);

// Rotary embedding in the rotate-half layout: for each of `rows` rows, each of `heads` heads of
// `head_dim` values, pairs (i, i + head_dim/2) are rotated by the row's angles in `table`
// (rope_table). `row_stride` is the distance between rows in floats.
void rope_rotate_half(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                      const float* table, ThreadPool& pool);

// HF's inv_freq = 1 / theta^(arange(0, head_dim, 2) / head_dim), computed in float32 as torch does.
void rope_inv_freq(double theta, int64_t head_dim, float* inv_freq /* [head_dim/2] */);

// In place, numerically stable: x = exp(x - max) / sum.
void softmax(float* x, int64_t n);

// Index of the largest value; the first one on ties (torch.argmax). n >= 1.
int64_t argmax(const float* x, int64_t n);

// One query row of attention where the keys and values lie (rows `stride` floats apart, D each):
// scores[j] = q · k_j for j < n, and out = Σ_j p[j]·v_j summed in j order.
void dot_rows(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum_rows(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out);
// In place: x[j] = softmax(scale · x)[j] for j < n, as HF's attention (scores · scale, fp32 softmax).
void scaled_softmax(float* x, int64_t n, float scale);

// The references the optimized ops are tested against (tests/kernels/ops_table_test.cpp): plain
// scalar loops on the calling thread, the arithmetic the scalar path runs. rope_table,
// rope_inv_freq, softmax and argmax have one implementation for every path and are their own.
void layer_norm_reference(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias,
                          float eps, float* y);
void rms_norm_reference(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y);
void gelu_tanh_reference(float* x, int64_t n);
void silu_mul_reference(float* gate, const float* up, int64_t n);
void add_inplace_reference(float* y, const float* x, int64_t n);
void rope_rotate_half_reference(float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                                const float* table);
void dot_rows_reference(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum_rows_reference(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out);
void scaled_softmax_reference(float* x, int64_t n, float scale);

namespace detail {
// The AVX2 versions (ops_avx2.cpp), called only when the active path allows them.
void dot_rows_avx2(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum_rows_avx2(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out);
void add_inplace_avx2(float* y, const float* x, int64_t n);
void rms_norm_row_avx2(const float* x, int64_t dim, const float* weight, float eps, float* y);
void layer_norm_row_avx2(const float* x, int64_t dim, const float* weight, const float* bias, float eps, float* y);
void gelu_tanh_avx2(float* x, int64_t n);
void silu_mul_avx2(float* gate, const float* up, int64_t n);
// One head of rope_rotate_half_reference: v[i], v[i + half] rotated by cos[i], sin[i] for i < half, in
// its arithmetic (each product rounded, then the sum: never fused).
void rope_rotate_head_avx2(float* v, int64_t half, const float* cos, const float* sin);
// x[j] *= scale for j < n; returns max_j x[j].
float scale_max_avx2(float* x, int64_t n, float scale);
// x[j] = exp(x[j] - max_value) for j < n; returns the sum.
float exp_sum_avx2(float* x, int64_t n, float max_value);
void scale_avx2(float* x, int64_t n, float scale);
// The AVX-512 versions of attention's row loops (ops_avx512.cpp), called only on the avx512 path.
void dot_rows_avx512(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum_rows_avx512(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out);
// The NEON versions (ops_neon.cpp, aarch64 builds), the same contracts.
void dot_rows_neon(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum_rows_neon(const float* p, const float* v, int64_t stride, int64_t n, int64_t D, float* out);
void add_inplace_neon(float* y, const float* x, int64_t n);
void rms_norm_row_neon(const float* x, int64_t dim, const float* weight, float eps, float* y);
void layer_norm_row_neon(const float* x, int64_t dim, const float* weight, const float* bias, float eps, float* y);
void gelu_tanh_neon(float* x, int64_t n);
void silu_mul_neon(float* gate, const float* up, int64_t n);
void rope_rotate_head_neon(float* v, int64_t half, const float* cos, const float* sin);
float scale_max_neon(float* x, int64_t n, float scale);
float exp_sum_neon(float* x, int64_t n, float max_value);
void scale_neon(float* x, int64_t n, float scale);
}  // namespace detail

}  // namespace smolvlm
