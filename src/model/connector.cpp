#include "model/connector.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "model/weights.h"

namespace smolvlm {

Idefics3Connector::Idefics3Connector(const Checkpoint& ckpt, const Idefics3Config& c, const ComponentSpec& connector)
    : side_(c.vision.patches_per_side()),
      vision_hidden_(c.vision.hidden_size),
      scale_(c.scale_factor),
      text_hidden_(c.text.hidden_size) {
  // parse_idefics3_config checked that scale_factor divides the patch grid.
  const ExpectedTensor proj = connector.tensor(Role::Projection);
  if (proj.shape != std::vector<int64_t>{text_hidden_, shuffled_dim()})
    throw internal_error("the connector spec's projection does not map shuffled features to the text hidden size");
  proj_ = matrix(ckpt, proj);
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
