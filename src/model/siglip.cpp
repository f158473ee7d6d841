#include "model/siglip.h"

#include <cmath>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/weights.h"

namespace smolvlm {

namespace {
const std::string kPrefix = "model.vision_model.";
}

SiglipVision::SiglipVision(const Checkpoint& ckpt) {
  const VisionConfig& c = ckpt.config().vision;
  image_size_ = c.image_size;
  patch_ = c.patch_size;
  channels_ = c.num_channels;
  hidden_ = c.hidden_size;
  intermediate_ = c.intermediate_size;
  heads_ = c.num_attention_heads;
  eps_ = static_cast<float>(c.layer_norm_eps);
  const std::string cfg = (ckpt.config().dir / "config.json").string();
  if (patch_ <= 0 || image_size_ <= 0 || image_size_ % patch_ != 0)
    throw bad_input(cfg + ": vision_config.image_size " + std::to_string(image_size_) +
                    " is not a multiple of patch_size " + std::to_string(patch_));
  if (heads_ <= 0 || hidden_ % heads_ != 0)
    throw bad_input(cfg + ": vision_config.hidden_size " + std::to_string(hidden_) +
                    " is not a multiple of num_attention_heads " + std::to_string(heads_));
  if (c.hidden_act != "gelu_pytorch_tanh")
    throw unsupported(cfg + ": vision_config.hidden_act " + c.hidden_act + " (only gelu_pytorch_tanh)");
  if (channels_ != 3) throw unsupported(cfg + ": vision_config.num_channels must be 3");

  const int64_t patch_len = channels_ * patch_ * patch_;
  const TensorView& conv =
      expect_tensor(ckpt, kPrefix + "embeddings.patch_embedding.weight", {hidden_, channels_, patch_, patch_});
  // The conv kernel [hidden, C, p, p] is, flattened, the [hidden, C·p·p] matrix of a linear layer.
  patch_w_ = WeightRef{conv.data, dense_weight_format(conv.dtype), hidden_, patch_len};
  patch_b_ = vector_f32(ckpt, kPrefix + "embeddings.patch_embedding.bias", hidden_);
  const TensorView& position =
      expect_tensor(ckpt, kPrefix + "embeddings.position_embedding.weight", {num_patches(), hidden_});
  std::vector<int64_t> ids(static_cast<size_t>(num_patches()));
  for (int64_t i = 0; i < num_patches(); ++i) ids[i] = i;
  position_.resize(static_cast<size_t>(num_patches() * hidden_));
  gather_rows_f32(position, ids.data(), num_patches(), position_.data());

  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = kPrefix + "encoder.layers." + std::to_string(i) + ".";
    Layer l;
    l.ln1_w = vector_f32(ckpt, p + "layer_norm1.weight", hidden_);
    l.ln1_b = vector_f32(ckpt, p + "layer_norm1.bias", hidden_);
    l.ln2_w = vector_f32(ckpt, p + "layer_norm2.weight", hidden_);
    l.ln2_b = vector_f32(ckpt, p + "layer_norm2.bias", hidden_);
    l.q = matrix(ckpt, p + "self_attn.q_proj.weight", hidden_, hidden_);
    l.k = matrix(ckpt, p + "self_attn.k_proj.weight", hidden_, hidden_);
    l.v = matrix(ckpt, p + "self_attn.v_proj.weight", hidden_, hidden_);
    l.o = matrix(ckpt, p + "self_attn.out_proj.weight", hidden_, hidden_);
    l.q_b = vector_f32(ckpt, p + "self_attn.q_proj.bias", hidden_);
    l.k_b = vector_f32(ckpt, p + "self_attn.k_proj.bias", hidden_);
    l.v_b = vector_f32(ckpt, p + "self_attn.v_proj.bias", hidden_);
    l.o_b = vector_f32(ckpt, p + "self_attn.out_proj.bias", hidden_);
    l.fc1 = matrix(ckpt, p + "mlp.fc1.weight", intermediate_, hidden_);
    l.fc2 = matrix(ckpt, p + "mlp.fc2.weight", hidden_, intermediate_);
    l.fc1_b = vector_f32(ckpt, p + "mlp.fc1.bias", intermediate_);
    l.fc2_b = vector_f32(ckpt, p + "mlp.fc2.bias", hidden_);
    layers_.push_back(std::move(l));
  }
  post_w_ = vector_f32(ckpt, kPrefix + "post_layernorm.weight", hidden_);
  post_b_ = vector_f32(ckpt, kPrefix + "post_layernorm.bias", hidden_);
}

SiglipVision::Scratch::Scratch(const SiglipVision& m) {
  const size_t P = static_cast<size_t>(m.num_patches()), H = static_cast<size_t>(m.hidden_);
  patches.resize(P * static_cast<size_t>(m.channels_ * m.patch_ * m.patch_));
  normed.resize(P * H);
  q.resize(P * H);
  k.resize(P * H);
  v.resize(P * H);
  attn.resize(P * H);
  mlp.resize(P * static_cast<size_t>(m.intermediate_));
  proj.resize(P * H);
}

void SiglipVision::forward(const float* pixels, int64_t tiles, float* out, Scratch& s, ThreadPool& pool) const {
  const int64_t tile_floats = channels_ * image_size_ * image_size_;
  for (int64_t t = 0; t < tiles; ++t) encode_tile(pixels + t * tile_floats, out + t * num_patches() * hidden_, s, pool);
}

void SiglipVision::encode_tile(const float* pixels, float* h, Scratch& s, ThreadPool& pool) const {
  const int64_t side = patches_per_side(), P = num_patches(), S = image_size_;
  // Flatten each patch in the conv weight's (channel, row, column) order.
  float* dst = s.patches.data();
  for (int64_t py = 0; py < side; ++py)
    for (int64_t px = 0; px < side; ++px)
      for (int64_t c = 0; c < channels_; ++c)
        for (int64_t ky = 0; ky < patch_; ++ky) {
          const float* src = pixels + (c * S + py * patch_ + ky) * S + px * patch_;
          for (int64_t kx = 0; kx < patch_; ++kx) *dst++ = src[kx];
        }
  linear(s.patches.data(), P, patch_w_, patch_b_.data(), h, pool);
  // Full tile: position ids are 0..P-1, so the whole table is added in order.
  add_inplace(h, position_.data(), P * hidden_, pool);

  for (const Layer& layer : layers_) run_layer(layer, h, s, pool);
  layer_norm(h, P, hidden_, post_w_.data(), post_b_.data(), eps_, h, pool);
}

void SiglipVision::run_layer(const Layer& l, float* h, Scratch& s, ThreadPool& pool) const {
  const int64_t P = num_patches(), H = hidden_, D = hidden_ / heads_;
  layer_norm(h, P, H, l.ln1_w.data(), l.ln1_b.data(), eps_, s.normed.data(), pool);
  const LinearOutput qkv[] = {{l.q, l.q_b.data(), s.q.data()}, {l.k, l.k_b.data(), s.k.data()},
                              {l.v, l.v_b.data(), s.v.data()}};
  linear_shared_input(s.normed.data(), P, qkv, pool);
  AttentionArgs a;
  a.q = s.q.data();
  a.q_rows = P;
  a.q_stride = H;
  a.k = s.k.data();
  a.v = s.v.data();
  a.kv_rows = P;
  a.kv_stride = H;
  a.scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));  // HF: head_dim**-0.5
  a.causal = false;
  a.out = s.attn.data();
  a.out_stride = H;
  attention(a, AttentionShape{heads_, heads_, D}, pool);
  linear(s.attn.data(), P, l.o, l.o_b.data(), s.proj.data(), pool);
  add_inplace(h, s.proj.data(), P * H, pool);

  layer_norm(h, P, H, l.ln2_w.data(), l.ln2_b.data(), eps_, s.normed.data(), pool);
  linear(s.normed.data(), P, l.fc1, l.fc1_b.data(), s.mlp.data(), pool);
  gelu_tanh(s.mlp.data(), P * intermediate_, pool);
  linear(s.mlp.data(), P, l.fc2, l.fc2_b.data(), s.proj.data(), pool);
  add_inplace(h, s.proj.data(), P * H, pool);
}

}  // namespace smolvlm
