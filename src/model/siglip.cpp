#include "model/siglip.h"

#include <cmath>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "model/weights.h"

namespace smolvlm {

SiglipVision::SiglipVision(const Checkpoint& ckpt, const Idefics3VisionConfig& c, const ComponentSpec& vision)
    : image_size_(c.image_size),
      patch_(c.patch_size),
      channels_(c.num_channels),
      hidden_(c.hidden_size),
      intermediate_(c.intermediate_size),
      heads_(c.num_attention_heads),
      eps_(static_cast<float>(c.layer_norm_eps)) {
  // The conv kernel [hidden, C, p, p] is, flattened, the [hidden, C·p·p] matrix of a linear layer.
  patch_w_ = matrix_view(bind_tensor(ckpt, vision.tensor(Role::PatchEmbedding)), hidden_, channels_ * patch_ * patch_);
  patch_b_ = vector_f32(ckpt, vision.tensor(Role::PatchEmbedding, Param::Bias));
  const TensorView& position = bind_tensor(ckpt, vision.tensor(Role::PositionEmbedding));
  if (position.dim(0) != num_patches())
    throw internal_error("the vision spec's position table does not have one row per patch");
  std::vector<int64_t> ids(static_cast<size_t>(num_patches()));
  for (int64_t i = 0; i < num_patches(); ++i) ids[i] = i;
  position_.resize(static_cast<size_t>(num_patches() * hidden_));
  gather_rows_f32(position, ids.data(), num_patches(), position_.data());

  for (int64_t i = 0; i < vision.layers; ++i) {
    auto weight = [&](Role r) { return matrix(ckpt, vision.layer_tensor(i, r)); };
    auto values = [&](Role r, Param p) { return vector_f32(ckpt, vision.layer_tensor(i, r, p)); };
    Layer l;
    l.ln1_w = values(Role::AttentionNorm, Param::Weight);
    l.ln1_b = values(Role::AttentionNorm, Param::Bias);
    l.ln2_w = values(Role::MlpNorm, Param::Weight);
    l.ln2_b = values(Role::MlpNorm, Param::Bias);
    l.q = weight(Role::QProj);
    l.k = weight(Role::KProj);
    l.v = weight(Role::VProj);
    l.o = weight(Role::OProj);
    l.q_b = values(Role::QProj, Param::Bias);
    l.k_b = values(Role::KProj, Param::Bias);
    l.v_b = values(Role::VProj, Param::Bias);
    l.o_b = values(Role::OProj, Param::Bias);
    l.fc1 = weight(Role::Fc1);
    l.fc2 = weight(Role::Fc2);
    l.fc1_b = values(Role::Fc1, Param::Bias);
    l.fc2_b = values(Role::Fc2, Param::Bias);
    layers_.push_back(std::move(l));
  }
  post_w_ = vector_f32(ckpt, vision.tensor(Role::FinalNorm));
  post_b_ = vector_f32(ckpt, vision.tensor(Role::FinalNorm, Param::Bias));
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
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t stage = 0; stage < tile_stages(); ++stage)
      run_tile_stage(stage, pixels + t * tile_floats, out + t * num_patches() * hidden_, s, pool);
}

void SiglipVision::run_tile_stage(int64_t stage, const float* pixels, float* h, Scratch& s, ThreadPool& pool) const {
  if (stage < 0 || stage >= tile_stages())
    throw internal_error("SiglipVision: stage " + std::to_string(stage) + " of " + std::to_string(tile_stages()));
  if (stage == 0) embed_patches(pixels, h, s, pool);
  else if (stage <= static_cast<int64_t>(layers_.size())) run_layer(layers_[static_cast<size_t>(stage - 1)], h, s, pool);
  else layer_norm(h, num_patches(), hidden_, post_w_.data(), post_b_.data(), eps_, h, pool);
}

void SiglipVision::embed_patches(const float* pixels, float* h, Scratch& s, ThreadPool& pool) const {
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
