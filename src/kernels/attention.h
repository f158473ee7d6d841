// Scaled dot-product attention as HF's eager path computes it (scores = q·kᵀ·scale, causal mask,
// fp32 softmax, weighted sum of values), with grouped-query heads. Work items are (head, block of up
// to 48 query rows), each computed by one thread, so a thread holds at most a block's rows of scores
// (and one head's packed K/V), never an [L, L] matrix, and the result does not depend on the thread
// count (the blocking depends only on the number of query rows).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/thread_pool.h"

namespace smolvlm {

struct AttentionShape {
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // q_heads is a multiple; query head h reads kv head h / (q_heads / kv_heads)
  int64_t head_dim = 0;
};

struct AttentionArgs {
  const float* q = nullptr;  // [q_rows, q_heads * head_dim], rows q_stride floats apart
  int64_t q_rows = 0;
  int64_t q_stride = 0;
  const float* k = nullptr;  // [kv_rows, kv_heads * head_dim], rows kv_stride floats apart
  const float* v = nullptr;  // same layout as k
  int64_t kv_rows = 0;
  int64_t kv_stride = 0;
  float scale = 1.0f;
  // Causal: query row i sits at position q_pos0 + i and sees keys 0 ..= q_pos0 + i (which must be
  // < kv_rows). Not causal: every query sees all kv_rows keys.
  bool causal = false;
  int64_t q_pos0 = 0;
  float* out = nullptr;      // [q_rows, q_heads * head_dim], rows out_stride floats apart
  int64_t out_stride = 0;
};

void attention(const AttentionArgs& args, const AttentionShape& shape, ThreadPool& pool);

// attention() for several independent single-row queries (a batched decode step: each sequence's row
// over its own cache) in one split over the pool: each gives exactly what attention() gives it alone.
// Every args[i].q_rows must be 1.
void attention_single_rows(std::span<const AttentionArgs> args, const AttentionShape& shape, ThreadPool& pool);

// Part `part` of `parts` of attention_single_rows(args, shape, pool) for a pool of `parts` threads, on
// the calling thread (a thread of a team, kernels/team.h): its items split in order. The parts
// together write attention_single_rows' bits.
void attention_single_rows_part(std::span<const AttentionArgs> args, const AttentionShape& shape, int part, int parts);

// The reference attention() is tested against: for each query row and head, in plain loops on the
// calling thread, scores = q·k_j (fp32, d order), softmax(scores·scale) over the keys the row sees,
// out = Σ_j p_j·v_j in j order (ops.h's *_reference functions).
void attention_reference(const AttentionArgs& args, const AttentionShape& shape);

}  // namespace smolvlm
