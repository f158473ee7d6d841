// The Llama decoder (SmolLM2, the text model of Idefics3, HunYuan dense): token embeddings, pre-RMSNorm
// layers with rotate-half RoPE and grouped-query attention over an external KV cache, SiLU-gated MLP,
// final RMSNorm, lm_head (tied to the embeddings when the spec says so). HunYuan's variations are
// config flags (LlamaConfig::rope_alpha, qk_norm): the NTK-alpha RoPE base and a per-head RMSNorm of
// queries and keys after RoPE. Weights are bound by role from the
// architecture's spec (model/spec.h), never by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"
#include "model/kv_view.h"
#include "model/llama_config.h"
#include "model/spec.h"

namespace smolvlm {

class LlamaModel {
 public:
  // Binds the tensors of the `text` and `lm_head` components of the spec; `cfg` is the config they
  // were derived from (check_llama_supported() has accepted it).
  LlamaModel(const Checkpoint& ckpt, const LlamaConfig& cfg, const ComponentSpec& text, const ComponentSpec& lm_head);

  const LlamaConfig& config() const { return cfg_; }
  int64_t hidden() const { return cfg_.hidden_size; }
  int64_t vocab() const { return cfg_.vocab_size; }
  int64_t layers() const { return cfg_.num_hidden_layers; }
  int64_t kv_heads() const { return cfg_.num_key_value_heads; }
  int64_t head_dim() const { return cfg_.head_dim; }

  // Activation buffers for up to `max_rows` positions per forward call.
  struct Scratch {
    Scratch(const LlamaModel& m, int64_t max_rows);
    int64_t max_rows;
    std::vector<float> normed, q, attn, proj, gate, up;
    std::vector<int64_t> positions;
    std::vector<float> rope;  // rope_table of the rows' positions
    std::vector<float> k_new, v_new;  // decode_batch: each row's new key/value before it goes to its cache
  };

  // out[i, :] = embedding of ids[i]; Error(BadInput) for an id outside the vocabulary.
  void embed(const int64_t* ids, int64_t n, float* out) const;

  // Runs positions [pos0, pos0 + rows) whose input embeddings are in x [rows, hidden] (x is used as
  // the residual stream and overwritten), appending their keys/values to `kv` and attending over
  // positions [0, pos0 + rows). Writes the logits of the last row to logits_last [vocab].
  // The caller guarantees pos0 >= 0, pos0 + rows <= kv.capacity, rows <= scratch.max_rows.
  void forward(float* x, int64_t rows, int64_t pos0, const KvView& kv, Scratch& scratch, ThreadPool& pool,
               float* logits_last) const;

  // One decode step for each of `rows` independent sequences at once (llama_batch.cpp): row i of x is
  // the embedding of sequence i's next token, at positions[i] in its own cache kvs[i]. The weights
  // are read once for all rows; attention runs per sequence over its own cache. Writes logits
  // [rows, vocab]. Each row's result is what forward() gives that sequence alone (bitwise while rows
  // stay on the products' streaming path, see kernels/gemm.h). The caller guarantees every
  // positions[i] < kvs[i].capacity and rows <= scratch.max_rows.
  void decode_batch(float* x, int64_t rows, const int64_t* positions, const KvView* kvs, Scratch& scratch,
                    ThreadPool& pool, float* logits) const;

 private:
  static constexpr int64_t kMaxDecodeRows = 64;  // rows of one decode step (the callers' groups are far smaller)
  // A bias vector as the products take it: NULL when the layer has none.
  static const float* optional_bias(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }
  struct Layer {
    std::vector<float> input_norm, post_norm;
    std::vector<float> q_norm, k_norm;  // [head_dim], with cfg.qk_norm only
    WeightRef q, k, v, o, gate, up, down;
    std::vector<float> q_b, k_b, v_b, o_b, gate_b, up_b, down_b;  // empty unless attention_bias / mlp_bias
  };
  void attention_block(const Layer& l, int64_t layer_index, float* x, int64_t rows, int64_t pos0, const KvView& kv,
                       Scratch& s, ThreadPool& pool) const;
  void mlp_block(const Layer& l, float* x, int64_t rows, Scratch& s, ThreadPool& pool) const;
  // RoPE on `rows` rows of queries q [rows, q heads * D] and keys k [rows, kv heads * D] with the
  // rows' table s.rope, then (qk_norm) each head's RMSNorm: what every path does before attention.
  void position_qk(const Layer& l, float* q, float* k, int64_t rows, Scratch& s, ThreadPool& pool) const;
  void batch_attention_block(const Layer& l, int64_t layer_index, float* x, int64_t rows, const int64_t* positions,
                             const KvView* kvs, Scratch& s, ThreadPool& pool) const;
  // Layer layer_index's causal attention of `rows` queries q at positions [pos0, pos0 + rows) over
  // positions [0, pos0 + rows) of kv, into out.
  AttentionArgs attention_args(int64_t layer_index, int64_t rows, int64_t pos0, const KvView& kv, const float* q,
                               float* out) const;
  // One decode step of `rows` rows (forward() of one row, decode_batch) on a pool of several threads
  // (llama_team.cpp): the whole step in one pool call, its threads splitting every product, RoPE
  // and attention and meeting between them (kernels/team.h). s.rope holds the rows' table. Every
  // value has the bits of the step taken op by op. rows <= linear_row_exact_max(pool).
  void decode_team(float* x, int64_t rows, const int64_t* positions, const KvView* kvs, Scratch& s,
                   ThreadPool& pool, float* logits) const;
  // position_qk on heads [h0, h1) of one row's query heads then kv heads (q_row, k_row), with the
  // row's table rope_row.
  void position_heads(const Layer& l, float* q_row, float* k_row, int64_t h0, int64_t h1, const float* rope_row,
                      ThreadPool& pool) const;

  LlamaConfig cfg_;
  WeightRef embed_;  // [vocab, hidden], dense or quantized
  std::string embed_name_;
  std::vector<Layer> layers_;
  std::vector<float> final_norm_;
  WeightRef lm_head_;
  std::vector<float> inv_freq_;
};

}  // namespace smolvlm
