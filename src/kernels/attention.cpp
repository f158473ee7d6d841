#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"

namespace smolvlm {

namespace {

// Query rows per work item: a whole number of 6-row tiles, small enough that the block's scores
// (rows x keys) stay in L2 between the two products and the softmax (48 measured a few percent
// faster than 128 for 1024 keys), and that a causal block computes few masked scores. The keys and
// values are packed once per kv head and thread, for all keys, not per block.
constexpr int64_t kQueryBlock = 48;
// Below this many query rows, rows attend one at a time where the keys lie (decode, short prompts).
constexpr int64_t kMinBlockRows = 16;

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
void attend_rows_in_place(const AttentionArgs& a, const AttentionShape& s, int64_t h, int64_t i0, int64_t i1) {
  thread_local std::vector<float> scores;
  if (scores.size() < static_cast<size_t>(a.kv_rows)) scores.resize(static_cast<size_t>(a.kv_rows));
  const int64_t D = s.head_dim, kvh = h / (s.q_heads / s.kv_heads);
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t n_keys = a.causal ? a.q_pos0 + i + 1 : a.kv_rows;
    dot_rows(a.q + i * a.q_stride + h * D, a.k + kvh * D, a.kv_stride, n_keys, D, scores.data());
    scaled_softmax(scores.data(), n_keys, a.scale);
    weighted_sum_rows(scores.data(), a.v + kvh * D, a.kv_stride, n_keys, D, a.out + i * a.out_stride + h * D);
  }
}

// Query heads per work item of rows attended one at a time: a kv head's whole group where that leaves
// an item for every thread, so that the group's keys and values come from memory once and stay in
// one thread's cache. Split by query head on 2 threads, the heads of a group ran on both and each
// thread fetched the same keys and values (a decode step finds them cold: the weights streamed
// through the cache since the last step): SmolVLM-256M's decode attention took 28-32k cycles a
// layer against 20-23k by group (bench/RESULTS.md).
int64_t heads_per_item(const AttentionShape& s, int64_t rows, int threads) {
  return s.kv_heads * rows >= threads ? s.q_heads / s.kv_heads : 1;
}

// Row i of query heads [h0, h0 + heads).
void attend_heads_row(const AttentionArgs& a, const AttentionShape& s, int64_t h0, int64_t heads, int64_t i) {
  for (int64_t h = h0; h < h0 + heads; ++h) attend_rows_in_place(a, s, h, i, i + 1);
}

// A kv head's keys and values packed as the right-hand sides of scores = Q·Kᵀ and out = P·V, all keys
// of the call, kept per thread: consecutive work items of a thread that read the same kv head reuse
// them, and a causal block reads the prefix of keys it may see.
struct PackedKv {
  uint64_t call = 0;  // the attention() call they were packed for (0: none)
  int64_t kv_head = -1;
  PackedWeight k, v_transposed;
};

std::atomic<uint64_t> g_attention_calls{0};

const PackedKv& packed_kv(const AttentionArgs& a, int64_t D, int64_t kvh, uint64_t call) {
  thread_local PackedKv p;
  if (p.call == call && p.kv_head == kvh) return p;
  p.k.pack(a.k + kvh * D, a.kv_rows, D, a.kv_stride);
  p.v_transposed.pack_transposed(a.v + kvh * D, D, a.kv_rows, a.kv_stride);
  p.call = call;
  p.kv_head = kvh;
  return p;
}

// Floats between rows of a block's scores: n rounded up to an odd number of 64-byte lines. With the
// rows 1024 keys = 4 KB apart, every row of a 16-key column of scores fell in the same L1 set, and the
// column's tiles evicted each other between the product that writes them and the softmax (SigLIP
// tile in attention_bench, 8 alternating rounds: 98 -> 107 GFLOP/s, medians).
int64_t score_row_stride(int64_t n) {
  const int64_t lines = (n + 15) / 16;
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

// A block of query rows of one head as two matrix products against the packed keys and values, read
// from and written to the caller's rows in place. Only the block's rows of the score matrix exist.
void attend_block_packed(const AttentionArgs& a, const AttentionShape& s, int64_t h, int64_t i0, int64_t i1,
                         uint64_t call) {
  thread_local std::vector<float> scores;
  const int64_t D = s.head_dim, kvh = h / (s.q_heads / s.kv_heads), rows = i1 - i0;
  const int64_t n = a.causal ? a.q_pos0 + i1 : a.kv_rows;  // keys any row of the block may see
  const int64_t ld = score_row_stride(n);
  if (scores.size() < static_cast<size_t>(rows * ld)) scores.resize(static_cast<size_t>(rows * ld));
  const PackedKv& kv = packed_kv(a, D, kvh, call);
  linear_packed(a.q + i0 * a.q_stride + h * D, rows, a.q_stride, kv.k, n, D, scores.data(), ld);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores.data() + r * ld;
    const int64_t n_keys = a.causal ? a.q_pos0 + i0 + r + 1 : n;
    scaled_softmax(row, n_keys, a.scale);
    std::fill(row + n_keys, row + n, 0.f);  // the causal mask
  }
  linear_packed(scores.data(), rows, ld, kv.v_transposed, D, n, a.out + i0 * a.out_stride + h * D, a.out_stride);
}

}  // namespace

void attention(const AttentionArgs& a, const AttentionShape& s, ThreadPool& pool) {
  check(a, s);
  // Each (query head, row) is computed the same way whatever the thread count and the grouping of
  // the work items.
  if (a.q_rows < kMinBlockRows) {  // items (heads, row), rows one at a time
    const int64_t heads = heads_per_item(s, a.q_rows, pool.size()), items = s.q_heads / heads;
    pool.parallel_for(items * a.q_rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item)
        attend_heads_row(a, s, (item / a.q_rows) * heads, heads, item % a.q_rows);
    });
    return;
  }
  // Work items are (head, block of query rows), ordered kv head, block, query head of the group, so
  // consecutive items of a thread share packed keys/values.
  const int64_t block = std::min(a.q_rows, kQueryBlock);
  const int64_t blocks = (a.q_rows + block - 1) / block;
  const int64_t group = s.q_heads / s.kv_heads;
  const uint64_t call = ++g_attention_calls;
  pool.parallel_for(s.q_heads * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kvh = item / (blocks * group), rest = item % (blocks * group);
      const int64_t h = kvh * group + rest % group, i0 = (rest / group) * block;
      attend_block_packed(a, s, h, i0, std::min(a.q_rows, i0 + block), call);
    }
  });
}

void attention_single_rows(std::span<const AttentionArgs> args, const AttentionShape& s, ThreadPool& pool) {
  for (const AttentionArgs& a : args) {
    check(a, s);
    if (a.q_rows != 1) throw bad_input("attention_single_rows: a query of " + std::to_string(a.q_rows) + " rows");
  }
  // Items (query, heads); one row takes attention()'s single-row path.
  const int64_t queries = static_cast<int64_t>(args.size());
  const int64_t heads = heads_per_item(s, queries, pool.size()), items = s.q_heads / heads;
  pool.parallel_for(queries * items, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item)
      attend_heads_row(args[static_cast<size_t>(item / items)], s, (item % items) * heads, heads, 0);
  });
}

void attention_single_rows_part(std::span<const AttentionArgs> args, const AttentionShape& s, int part, int parts) {
  if (parts < 1 || part < 0 || part >= parts)
    throw bad_input("attention_single_rows_part: part " + std::to_string(part) + " of " + std::to_string(parts));
  for (const AttentionArgs& a : args) {
    check(a, s);
    if (a.q_rows != 1) throw bad_input("attention_single_rows_part: a query of " + std::to_string(a.q_rows) + " rows");
  }
  // Items are (query, head), each part a contiguous range of them: the heads of a kv group stay
  // together on a thread but where a part ends, and the parts differ by a head at most. By kv group
  // (heads_per_item), SmolVLM-256M's 3 groups over 2 threads gave one thread twice the other's heads
  // (its LUT4 `fast` decode steps 0.5-2.5% longer, bench/RESULTS.md).
  const int64_t all = static_cast<int64_t>(args.size()) * s.q_heads;
  for (int64_t item = all * part / parts; item < all * (part + 1) / parts; ++item)
    attend_heads_row(args[static_cast<size_t>(item / s.q_heads)], s, item % s.q_heads, 1, 0);
}

void attention_reference(const AttentionArgs& a, const AttentionShape& s) {
  check(a, s);
  const int64_t D = s.head_dim, group = s.q_heads / s.kv_heads;
  std::vector<float> scores(static_cast<size_t>(a.kv_rows));
  for (int64_t i = 0; i < a.q_rows; ++i)
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const int64_t kvh = h / group, n_keys = a.causal ? a.q_pos0 + i + 1 : a.kv_rows;
      dot_rows_reference(a.q + i * a.q_stride + h * D, a.k + kvh * D, a.kv_stride, n_keys, D, scores.data());
      scaled_softmax_reference(scores.data(), n_keys, a.scale);
      weighted_sum_rows_reference(scores.data(), a.v + kvh * D, a.kv_stride, n_keys, D,
                                  a.out + i * a.out_stride + h * D);
    }
}

}  // namespace smolvlm
