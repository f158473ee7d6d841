// LlamaModel::decode_batch: several sequences' decode steps in one pass over the weights. Decode is
// bound by reading the weights; with the rows of all sequences in one product each weight row is
// read once for all of them. Only attention differs per sequence: each row attends over its own
// cache, exactly as forward() does for a single row.
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/llama.h"

namespace smolvlm {

namespace {
constexpr int64_t kMaxBatchAttention = 64;  // rows of one step (the callers' groups are far smaller)
}  // namespace

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
  AttentionArgs args[kMaxBatchAttention];
  if (rows > kMaxBatchAttention)
    throw internal_error("LlamaModel::decode_batch: " + std::to_string(rows) + " rows in one step");
  for (int64_t i = 0; i < rows; ++i) {
    const KvView& kv = kvs[i];
    const size_t bytes = static_cast<size_t>(kvd) * sizeof(float);
    std::memcpy(kv.k + (layer_index * kv.capacity + positions[i]) * kvd, s.k_new.data() + i * kvd, bytes);
    std::memcpy(kv.v + (layer_index * kv.capacity + positions[i]) * kvd, s.v_new.data() + i * kvd, bytes);
    AttentionArgs a;
    a.q = s.q.data() + i * qd;
    a.q_rows = 1;
    a.q_stride = qd;
    a.k = kv.k + layer_index * kv.capacity * kvd;
    a.v = kv.v + layer_index * kv.capacity * kvd;
    a.kv_rows = positions[i] + 1;
    a.kv_stride = kvd;
    a.scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));  // HF: head_dim**-0.5
    a.causal = true;
    a.q_pos0 = positions[i];
    a.out = s.attn.data() + i * qd;
    a.out_stride = qd;
    args[i] = a;
  }
  attention_single_rows({args, static_cast<size_t>(rows)}, AttentionShape{qh, kvh, D}, pool);
  linear(s.attn.data(), rows, l.o, optional_bias(l.o_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

}  // namespace smolvlm
