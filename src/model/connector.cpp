#include "model/connector.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "model/weights.h"

namespace smolvlm {

Idefics3Connector::Idefics3Connector(const Checkpoint& ckpt, int64_t patches_per_side, int64_t vision_hidden)
    : side_(patches_per_side),
      vision_hidden_(vision_hidden),
      scale_(ckpt.config().scale_factor),
      text_hidden_(ckpt.config().text.hidden_size) {
  if (scale_ <= 0 || side_ % scale_ != 0)
    throw bad_input((ckpt.config().dir / "config.json").string() + ": scale_factor " + std::to_string(scale_) +
                    " does not divide the " + std::to_string(side_) + " patches per side of a tile");
  proj_ = matrix(ckpt, "model.connector.modality_projection.proj.weight", text_hidden_, shuffled_dim());
}

void Idefics3Connector::pixel_shuffle(const float* in, int64_t side, int64_t embed, int64_t s, float* out) {
  // HF: view [h, w/s, E·s] -> permute -> reshape [w/s, h/s, E·s²] -> permute -> [h/s·w/s, E·s²].
  // Output token (hb, wb), feature (hs·s + ws)·E + e reads input patch (hb·s + hs, wb·s + ws), feature e.
  const int64_t out_side = side / s;
  for (int64_t hb = 0; hb < out_side; ++hb)
    for (int64_t wb = 0; wb < out_side; ++wb) {
      float* dst = out + (hb * out_side + wb) * embed * s * s;
      for (int64_t hs = 0; hs < s; ++hs)
        for (int64_t ws = 0; ws < s; ++ws) {
          const float* src = in + ((hb * s + hs) * side + (wb * s + ws)) * embed;
          std::memcpy(dst + (hs * s + ws) * embed, src, static_cast<size_t>(embed) * sizeof(float));
        }
    }
}

void Idefics3Connector::forward(const float* vision, int64_t tiles, float* out, std::vector<float>& shuffled,
                                ThreadPool& pool) const {
  const int64_t tokens = tokens_per_tile();
  shuffled.resize(static_cast<size_t>(tokens * shuffled_dim()));
  for (int64_t t = 0; t < tiles; ++t) {
    pixel_shuffle(vision + t * side_ * side_ * vision_hidden_, side_, vision_hidden_, scale_, shuffled.data());
    linear(shuffled.data(), tokens, proj_, nullptr, out + t * tokens * text_hidden_, pool);
  }
}

}  // namespace smolvlm
