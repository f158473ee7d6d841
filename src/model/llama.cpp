#include "model/llama.h"

#include <cmath>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/weights.h"

namespace smolvlm {

namespace {

const float* bias_or_null(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }

void check_text_config(const TextConfig& c, const std::string& cfg) {
  auto positive = [&](int64_t v, const char* key) {
    if (v <= 0) throw bad_input(cfg + ": " + key + " must be positive, got " + std::to_string(v));
  };
  positive(c.hidden_size, "hidden_size");
  positive(c.intermediate_size, "intermediate_size");
  positive(c.num_hidden_layers, "num_hidden_layers");
  positive(c.num_attention_heads, "num_attention_heads");
  positive(c.num_key_value_heads, "num_key_value_heads");
  positive(c.head_dim, "head_dim");
  positive(c.vocab_size, "vocab_size");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw bad_input(cfg + ": num_attention_heads " + std::to_string(c.num_attention_heads) +
                    " is not a multiple of num_key_value_heads " + std::to_string(c.num_key_value_heads));
  if (c.head_dim % 2 != 0) throw bad_input(cfg + ": head_dim " + std::to_string(c.head_dim) + " must be even for RoPE");
  if (c.rope_type != "default")
    throw unsupported(cfg + ": rope_scaling type \"" + c.rope_type + "\" (only the default RoPE is implemented)");
  if (c.hidden_act != "silu") throw unsupported(cfg + ": hidden_act " + c.hidden_act + " (only silu)");
}

}  // namespace

LlamaModel::LlamaModel(const Checkpoint& ckpt, const std::string& prefix) : cfg_(ckpt.config().text) {
  check_text_config(cfg_, (ckpt.config().dir / "config.json").string());
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size, D = cfg_.head_dim;
  const int64_t qd = cfg_.num_attention_heads * D, kvd = cfg_.num_key_value_heads * D;
  embed_ = &expect_tensor(ckpt, prefix + "embed_tokens.weight", {cfg_.vocab_size, H});
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    Layer l;
    l.input_norm = vector_f32(ckpt, p + "input_layernorm.weight", H);
    l.post_norm = vector_f32(ckpt, p + "post_attention_layernorm.weight", H);
    l.q = matrix(ckpt, p + "self_attn.q_proj.weight", qd, H);
    l.k = matrix(ckpt, p + "self_attn.k_proj.weight", kvd, H);
    l.v = matrix(ckpt, p + "self_attn.v_proj.weight", kvd, H);
    l.o = matrix(ckpt, p + "self_attn.o_proj.weight", H, qd);
    if (cfg_.attention_bias) {
      l.q_b = vector_f32(ckpt, p + "self_attn.q_proj.bias", qd);
      l.k_b = vector_f32(ckpt, p + "self_attn.k_proj.bias", kvd);
      l.v_b = vector_f32(ckpt, p + "self_attn.v_proj.bias", kvd);
      l.o_b = vector_f32(ckpt, p + "self_attn.o_proj.bias", H);
    }
    l.gate = matrix(ckpt, p + "mlp.gate_proj.weight", I, H);
    l.up = matrix(ckpt, p + "mlp.up_proj.weight", I, H);
    l.down = matrix(ckpt, p + "mlp.down_proj.weight", H, I);
    if (cfg_.mlp_bias) {
      l.gate_b = vector_f32(ckpt, p + "mlp.gate_proj.bias", I);
      l.up_b = vector_f32(ckpt, p + "mlp.up_proj.bias", I);
      l.down_b = vector_f32(ckpt, p + "mlp.down_proj.bias", H);
    }
    layers_.push_back(std::move(l));
  }
  final_norm_ = vector_f32(ckpt, prefix + "norm.weight", H);
  // HF ties lm_head to the input embeddings per the flag its architecture reads (ModelConfig).
  if (ckpt.config().tie_word_embeddings)
    lm_head_ = WeightRef{embed_->data, dense_weight_format(embed_->dtype), cfg_.vocab_size, H};
  else
    lm_head_ = matrix(ckpt, "lm_head.weight", cfg_.vocab_size, H);
  inv_freq_.resize(static_cast<size_t>(D / 2));
  rope_inv_freq(cfg_.rope_theta, D, inv_freq_.data());
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
}

void LlamaModel::embed(const int64_t* ids, int64_t n, float* out) const { gather_rows_f32(*embed_, ids, n, out); }

void LlamaModel::forward(float* x, int64_t rows, int64_t pos0, const KvStore& kv, Scratch& s, ThreadPool& pool,
                         float* logits_last) const {
  if (rows <= 0 || rows > s.max_rows || pos0 < 0 || pos0 + rows > kv.capacity)
    throw internal_error("LlamaModel::forward: rows " + std::to_string(rows) + " at position " +
                         std::to_string(pos0) + " do not fit (scratch " + std::to_string(s.max_rows) +
                         " rows, capacity " + std::to_string(kv.capacity) + ")");
  for (int64_t i = 0; i < rows; ++i) s.positions[i] = pos0 + i;
  rope_table(s.positions.data(), rows, inv_freq_.data(), cfg_.head_dim, s.rope.data());
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
                                 const KvStore& kv, Scratch& s, ThreadPool& pool) const {
  const int64_t H = cfg_.hidden_size, D = cfg_.head_dim;
  const int64_t qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads;
  const int64_t qd = qh * D, kvd = kvh * D;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  rms_norm(x, rows, H, l.input_norm.data(), eps, s.normed.data(), pool);
  // New keys/values go straight into their cache rows.
  float* k_rows = kv.k + (layer_index * kv.capacity + pos0) * kvd;
  float* v_rows = kv.v + (layer_index * kv.capacity + pos0) * kvd;
  const LinearOutput qkv[] = {{l.q, bias_or_null(l.q_b), s.q.data()},
                              {l.k, bias_or_null(l.k_b), k_rows},
                              {l.v, bias_or_null(l.v_b), v_rows}};
  linear_shared_input(s.normed.data(), rows, qkv, pool);
  rope_rotate_half(s.q.data(), rows, qd, qh, D, s.rope.data(), pool);
  rope_rotate_half(k_rows, rows, kvd, kvh, D, s.rope.data(), pool);

  AttentionArgs a;
  a.q = s.q.data();
  a.q_rows = rows;
  a.q_stride = qd;
  a.k = kv.k + layer_index * kv.capacity * kvd;
  a.v = kv.v + layer_index * kv.capacity * kvd;
  a.kv_rows = pos0 + rows;
  a.kv_stride = kvd;
  a.scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));  // HF: head_dim**-0.5
  a.causal = true;
  a.q_pos0 = pos0;
  a.out = s.attn.data();
  a.out_stride = qd;
  attention(a, AttentionShape{qh, kvh, D}, pool);
  linear(s.attn.data(), rows, l.o, bias_or_null(l.o_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

void LlamaModel::mlp_block(const Layer& l, float* x, int64_t rows, Scratch& s, ThreadPool& pool) const {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
  rms_norm(x, rows, H, l.post_norm.data(), static_cast<float>(cfg_.rms_norm_eps), s.normed.data(), pool);
  const LinearOutput gate_up[] = {{l.gate, bias_or_null(l.gate_b), s.gate.data()},
                                  {l.up, bias_or_null(l.up_b), s.up.data()}};
  linear_shared_input(s.normed.data(), rows, gate_up, pool);
  silu_mul(s.gate.data(), s.up.data(), rows * I, pool);
  linear(s.gate.data(), rows, l.down, bias_or_null(l.down_b), s.proj.data(), pool);
  add_inplace(x, s.proj.data(), rows * H, pool);
}

}  // namespace smolvlm
