// The Idefics3 connector: pixel shuffle (space-to-depth by `scale_factor`, HF's exact index order)
// followed by the bias-free modality projection to the text hidden size.
#pragma once

#include <cstdint>
#include <vector>

#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"
#include "model/idefics3_config.h"
#include "model/spec.h"

namespace smolvlm {

class Idefics3Connector {
 public:
  // Binds the projection of the spec's connector component.
  Idefics3Connector(const Checkpoint& ckpt, const Idefics3Config& c, const ComponentSpec& connector);

  int64_t tokens_per_tile() const { return (side_ / scale_) * (side_ / scale_); }
  int64_t shuffled_dim() const { return vision_hidden_ * scale_ * scale_; }
  int64_t out_dim() const { return text_hidden_; }

  // vision: [tiles, side², vision_hidden]; out: [tiles, tokens_per_tile, text_hidden].
  // `shuffled` is resized once to one tile's shuffled features and reused.
  void forward(const float* vision, int64_t tiles, float* out, std::vector<float>& shuffled, ThreadPool& pool) const;

  // HF Idefics3Connector.pixel_shuffle for one tile: in [side², E] -> out [(side/s)², E·s²].
  static void pixel_shuffle(const float* in, int64_t side, int64_t embed, int64_t scale, float* out);

 private:
  int64_t side_, vision_hidden_, scale_, text_hidden_;
  WeightRef proj_;
};

}  // namespace smolvlm
