// The Idefics3 vision tower (SigLIP-style): 16×16-style patch embedding with bias (a GEMM over
// flattened patches), learned position embeddings, pre-LayerNorm encoder layers (MHA with biases,
// gelu_pytorch_tanh MLP), post-LayerNorm. Tiles are independent: attention never crosses tiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"
#include "model/idefics3_config.h"
#include "model/spec.h"

namespace smolvlm {

class SiglipVision {
 public:
  // Binds the tensors of the spec's vision component; `c` is the config they were derived from
  // (check_idefics3_supported() has accepted it).
  SiglipVision(const Checkpoint& ckpt, const Idefics3VisionConfig& c, const ComponentSpec& vision);

  int64_t image_size() const { return image_size_; }
  int64_t patch_size() const { return patch_; }
  int64_t patches_per_side() const { return image_size_ / patch_; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t hidden() const { return hidden_; }

  // Buffers for one tile, allocated once and reused for every tile and call.
  struct Scratch {
    explicit Scratch(const SiglipVision& v);
    std::vector<float> patches, normed, q, k, v, attn, mlp, proj;
  };

  // pixels: [tiles, 3, S, S] (full tiles, every patch valid); out: [tiles, num_patches, hidden].
  void forward(const float* pixels, int64_t tiles, float* out, Scratch& scratch, ThreadPool& pool) const;

  // One tile as a sequence of stages (patch embedding, each encoder layer, the post-LayerNorm), run in
  // order 0..tile_stages()-1 into the same `h` [num_patches, hidden]: a caller can run other work
  // between two stages (a server's decode steps) without changing the result.
  int64_t tile_stages() const { return static_cast<int64_t>(layers_.size()) + 2; }
  void run_tile_stage(int64_t stage, const float* pixels, float* h, Scratch& s, ThreadPool& pool) const;

 private:
  struct Layer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
    WeightRef q, k, v, o, fc1, fc2;
    std::vector<float> q_b, k_b, v_b, o_b, fc1_b, fc2_b;
  };
  void embed_patches(const float* pixels, float* h, Scratch& s, ThreadPool& pool) const;
  void run_layer(const Layer& layer, float* h, Scratch& s, ThreadPool& pool) const;

  int64_t image_size_, patch_, channels_, hidden_, intermediate_, heads_;
  float eps_;
  WeightRef patch_w_;
  std::vector<float> patch_b_;
  std::vector<float> position_;  // [num_patches, hidden], fp32 (small)
  std::vector<Layer> layers_;
  std::vector<float> post_w_, post_b_;
};

}  // namespace smolvlm
