// LlamaModel::decode_batch: several sequences' decode steps in one pass over the weights. Decode is
// bound by reading the weights; with the rows of all sequences in one product each weight row is
// read once for all of them. Only attention differs per sequence: each row attends over its own
// cache, exactly as forward() does for a single row.
#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/llama.h"

namespace smolvlm {

void LlamaModel::decode_batch(float* x, int64_t rows, const int64_t* positions, const KvView* kvs, Scratch& s,
                              ThreadPool& pool, float* logits) const {
  if (rows <= 0 || rows > s.max_rows)
    throw internal_error("LlamaModel::decode_batch: " + std::to_string(rows) + " rows (scratch " +
                         std::to_string(s.max_rows) + ")");
  for (int64_t i = 0; i < rows; ++i) {
    if (positions[i] < 0 || positions[i] >= kvs[i].capacity)
      throw internal_error("LlamaModel::decode_batch: position " + std::to_string(positions[i]) +
                           " does not fit a cache of " + std::to_string(kvs[i].capacity));
    s.positions[i] = positions[i];
  }
  rope_table(s.positions.data(), rows, inv_freq_.data(), cfg_.head_dim, s.rope.data());
  if (pool.size() > 1 && rows <= linear_row_exact_max(pool)) return decode_team(x, rows, positions, kvs, s, pool, logits);
  for (size_t l = 0; l < layers_.size(); ++l) {
    batch_attention_block(layers_[l], static_cast<int64_t>(l), x, rows, positions, kvs, s, pool);
    mlp_block(layers_[l], x, rows, s, pool);
  }
  const int64_t H = cfg_.hidden_size;
  rms_norm(x, rows, H, final_norm_.data(), static_cast<float>(cfg_.rms_norm_eps), s.normed.data(), pool);
  linear(s.normed.data(), rows, lm_head_, nullptr, logits, pool);
}

void LlamaModel::batch_attention_block(const Layer& l, int64_t layer_index, float* x, int64_t rows,
                                       const int64_t* positions, const KvView* kvs, Scratch& s,
                                       ThreadPool& pool) const {
  const int64_t H = cfg_.hidden_size, D = cfg_.head_dim;
  const int64_t qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads;
  const int64_t qd = qh * D, kvd = kvh * D;
  rms_norm(x, rows, H, l.input_norm.data(), static_cast<float>(cfg_.rms_norm_eps), s.normed.data(), pool);
  const LinearOutput qkv[] = {{l.q, optional_bias(l.q_b), s.q.data()},
                              {l.k, optional_bias(l.k_b), s.k_new.data()},
                              {l.v, optional_bias(l.v_b), s.v_new.data()}};
  linear_shared_input(s.normed.data(), rows, qkv, pool);
  position_qk(l, s.q.data(), s.k_new.data(), rows, s, pool);
  AttentionArgs args[kMaxDecodeRows];
  if (rows > kMaxDecodeRows)
    throw internal_error("LlamaModel::decode_batch: " + std::to_string(rows) + " rows in one step");
  for (int64_t i = 0; i < rows; ++i) {
    const KvView& kv = kvs[i];
    const size_t bytes = static_cast<size_t>(kvd) * sizeof(float);
    std::memcpy(kv.k + (layer_index * kv.capacity + positions[i]) * kvd, s.k_new.data() + i * kvd, bytes);
    std::memcpy(kv.v + (layer_index * kv.capacity + positions[i]) * kvd, s.v_new.data() + i * kvd, bytes);
    args[i] = attention_args(layer_index, 1, positions[i], kv, s.q.data() + i * qd, s.attn.data() + i * qd);
  }
  attention_single_rows({args, static_cast<size_t>(rows)}, AttentionShape{qh, kvh, D}, pool);
  linear(s.attn.data(), rows, l.o, optional_bias(l.o_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

}  // namespace smolvlm
