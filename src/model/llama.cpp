#include "model/llama.h"

#include <cmath>

#include "core/error.h"
#include "kernels/ops.h"
#include "model/weights.h"

namespace smolvlm {

namespace {
constexpr int64_t kMinColumnsFinishedPerThread = 2048;  // mlp_block: silu on the product's threads from here
}  // namespace

LlamaModel::LlamaModel(const Checkpoint& ckpt, const LlamaConfig& cfg, const ComponentSpec& text,
                       const ComponentSpec& lm_head)
    : cfg_(cfg) {
  const ExpectedTensor embedding = text.tensor(Role::Embedding);
  embed_name_ = embedding.name;
  embed_ = matrix(ckpt, embedding);
  for (int64_t i = 0; i < text.layers; ++i) {
    auto weight = [&](Role r) { return matrix(ckpt, text.layer_tensor(i, r)); };
    auto bias = [&](Role r) { return optional_vector_f32(ckpt, text.layer_tensor(i, r, Param::Bias)); };
    Layer l;
    l.input_norm = vector_f32(ckpt, text.layer_tensor(i, Role::AttentionNorm));
    l.post_norm = vector_f32(ckpt, text.layer_tensor(i, Role::MlpNorm));
    if (cfg_.qk_norm) {
      l.q_norm = vector_f32(ckpt, text.layer_tensor(i, Role::QNorm));
      l.k_norm = vector_f32(ckpt, text.layer_tensor(i, Role::KNorm));
    }
    l.q = weight(Role::QProj);
    l.k = weight(Role::KProj);
    l.v = weight(Role::VProj);
    l.o = weight(Role::OProj);
    l.q_b = bias(Role::QProj);
    l.k_b = bias(Role::KProj);
    l.v_b = bias(Role::VProj);
    l.o_b = bias(Role::OProj);
    l.gate = weight(Role::GateProj);
    l.up = weight(Role::UpProj);
    l.down = weight(Role::DownProj);
    l.gate_b = bias(Role::GateProj);
    l.up_b = bias(Role::UpProj);
    l.down_b = bias(Role::DownProj);
    layers_.push_back(std::move(l));
  }
  final_norm_ = vector_f32(ckpt, text.tensor(Role::FinalNorm));
  const ExpectedTensor head = lm_head.tensor(Role::LmHead);
  lm_head_ = head.presence == Presence::Tied ? embed_ : matrix(ckpt, head);
  inv_freq_.resize(static_cast<size_t>(cfg_.head_dim / 2));
  rope_inv_freq(cfg_.rope_base(), cfg_.head_dim, inv_freq_.data());
}

LlamaModel::Scratch::Scratch(const LlamaModel& m, int64_t rows) : max_rows(rows) {
  const auto& c = m.cfg_;
  const size_t R = static_cast<size_t>(rows);
  const size_t H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  const size_t qd = static_cast<size_t>(c.num_attention_heads * c.head_dim);
  normed.resize(R * H);
  q.resize(R * qd);
  attn.resize(R * qd);
  proj.resize(R * H);
  gate.resize(R * I);
  up.resize(R * I);
  positions.resize(R);
  rope.resize(R * static_cast<size_t>(c.head_dim));
  const size_t kvd = static_cast<size_t>(c.num_key_value_heads * c.head_dim);
  k_new.resize(R * kvd);
  v_new.resize(R * kvd);
}

void LlamaModel::embed(const int64_t* ids, int64_t n, float* out) const { gather_rows_f32(embed_, embed_name_, ids, n, out); }

void LlamaModel::forward(float* x, int64_t rows, int64_t pos0, const KvView& kv, Scratch& s, ThreadPool& pool,
                         float* logits_last) const {
  if (rows <= 0 || rows > s.max_rows || pos0 < 0 || pos0 + rows > kv.capacity)
    throw internal_error("LlamaModel::forward: rows " + std::to_string(rows) + " at position " +
                         std::to_string(pos0) + " do not fit (scratch " + std::to_string(s.max_rows) +
                         " rows, capacity " + std::to_string(kv.capacity) + ")");
  for (int64_t i = 0; i < rows; ++i) s.positions[i] = pos0 + i;
  rope_table(s.positions.data(), rows, inv_freq_.data(), cfg_.head_dim, s.rope.data());
  if (rows == 1 && pool.size() > 1) return decode_team(x, 1, &pos0, &kv, s, pool, logits_last);
  for (size_t l = 0; l < layers_.size(); ++l) {
    attention_block(layers_[l], static_cast<int64_t>(l), x, rows, pos0, kv, s, pool);
    mlp_block(layers_[l], x, rows, s, pool);
  }
  const int64_t H = cfg_.hidden_size;
  float* last = s.normed.data();
  rms_norm(x + (rows - 1) * H, 1, H, final_norm_.data(), static_cast<float>(cfg_.rms_norm_eps), last, pool);
  linear(last, 1, lm_head_, nullptr, logits_last, pool);
}

void LlamaModel::attention_block(const Layer& l, int64_t layer_index, float* x, int64_t rows, int64_t pos0,
                                 const KvView& kv, Scratch& s, ThreadPool& pool) const {
  const int64_t H = cfg_.hidden_size, D = cfg_.head_dim;
  const int64_t qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads, kvd = kvh * D;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  rms_norm(x, rows, H, l.input_norm.data(), eps, s.normed.data(), pool);
  // New keys/values go straight into their cache rows.
  float* k_rows = kv.k + (layer_index * kv.capacity + pos0) * kvd;
  float* v_rows = kv.v + (layer_index * kv.capacity + pos0) * kvd;
  const LinearOutput qkv[] = {{l.q, optional_bias(l.q_b), s.q.data()},
                              {l.k, optional_bias(l.k_b), k_rows},
                              {l.v, optional_bias(l.v_b), v_rows}};
  linear_shared_input(s.normed.data(), rows, qkv, pool);
  position_qk(l, s.q.data(), k_rows, rows, s, pool);
  attention(attention_args(layer_index, rows, pos0, kv, s.q.data(), s.attn.data()), AttentionShape{qh, kvh, D}, pool);
  linear(s.attn.data(), rows, l.o, optional_bias(l.o_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

AttentionArgs LlamaModel::attention_args(int64_t layer_index, int64_t rows, int64_t pos0, const KvView& kv,
                                         const float* q, float* out) const {
  const int64_t D = cfg_.head_dim, qd = cfg_.num_attention_heads * D, kvd = cfg_.num_key_value_heads * D;
  AttentionArgs a;
  a.q = q;
  a.q_rows = rows;
  a.q_stride = qd;
  a.k = kv.k + layer_index * kv.capacity * kvd;
  a.v = kv.v + layer_index * kv.capacity * kvd;
  a.kv_rows = pos0 + rows;
  a.kv_stride = kvd;
  a.scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));  // HF: head_dim**-0.5
  a.causal = true;
  a.q_pos0 = pos0;
  a.out = out;
  a.out_stride = qd;
  return a;
}

void LlamaModel::position_qk(const Layer& l, float* q, float* k, int64_t rows, Scratch& s, ThreadPool& pool) const {
  const int64_t D = cfg_.head_dim, qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads;
  rope_rotate_half(q, rows, qh * D, qh, D, s.rope.data(), pool);
  rope_rotate_half(k, rows, kvh * D, kvh, D, s.rope.data(), pool);
  if (cfg_.qk_norm) {
    // Each head's rotated query / key is normalized in place (HF: after apply_rotary_pos_emb), so the
    // cache holds the normed keys.
    const float eps = static_cast<float>(cfg_.rms_norm_eps);
    rms_norm(q, rows * qh, D, l.q_norm.data(), eps, q, pool);
    rms_norm(k, rows * kvh, D, l.k_norm.data(), eps, k, pool);
  }
}

void LlamaModel::mlp_block(const Layer& l, float* x, int64_t rows, Scratch& s, ThreadPool& pool) const {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
  rms_norm(x, rows, H, l.post_norm.data(), static_cast<float>(cfg_.rms_norm_eps), s.normed.data(), pool);
  const LinearOutput gate_up[] = {{l.gate, optional_bias(l.gate_b), s.gate.data()},
                                  {l.up, optional_bias(l.up_b), s.up.data()}};
  // gate = silu(gate) * up. Where each thread's share of the columns is long, on each thread's columns
  // as soon as it has them; a thread then reads gate's and up's rows of its columns as two ranges
  // instead of one, which costs more than the element-wise pass saves on short shares (HY-MT, 3072
  // columns a thread on 2 threads: decode 4% faster in 2 of 3 alternated rounds, 1% slower in the
  // third; SmolVLM-256M, 768: 1-2% slower in 3 of 3).
  if (I / pool.size() >= kMinColumnsFinishedPerThread) {
    linear_shared_input(s.normed.data(), rows, gate_up, pool, [&](int64_t n0, int64_t n1) {
      if (n0 == 0 && n1 == I) return silu_mul(s.gate.data(), s.up.data(), rows * I, pool);
      for (int64_t m = 0; m < rows; ++m) silu_mul(s.gate.data() + m * I + n0, s.up.data() + m * I + n0, n1 - n0, pool);
    });
  } else {
    linear_shared_input(s.normed.data(), rows, gate_up, pool);
    silu_mul(s.gate.data(), s.up.data(), rows * I, pool);
  }
  linear(s.gate.data(), rows, l.down, optional_bias(l.down_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

}  // namespace smolvlm
