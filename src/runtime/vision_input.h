// The image side of an Idefics3 prompt: tiles -> vision tower -> connector -> image features, and
// the merge of those features into the prompt embeddings at the <image> tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/thread_pool.h"
#include "runtime/model.h"

namespace smolvlm {

struct ImageFeatures {
  int64_t tiles = 0;
  std::vector<float> vision_last_hidden;   // [tiles, num_patches, vision_hidden] (kept only on request)
  std::vector<float> image_hidden_states;  // [tiles, tokens_per_tile, text_hidden]
};

// Runs one bounded piece of work; empty: run it at once. A session in a decode group passes
// Session::between_steps, so the other sequences keep decoding while an image is encoded.
using ChunkRunner = std::function<void(const std::function<void()>&)>;

// pixel_values: [tiles, 3, S, S] with S = vision image_size, every tile full (all patches valid).
// Each tower stage of each tile (and each tile's connector) is one chunk for `run_chunk`.
ImageFeatures encode_images(const Model& model, const float* pixel_values, int64_t tiles, ThreadPool& pool,
                            bool keep_vision_hidden = false, const ChunkRunner& run_chunk = {});

// Embeddings [ids.size(), text_hidden] of a prompt: token embeddings, with the rows of the
// image_token_id tokens replaced, in order, by the rows of `features` (tiles row-major, each image's
// global tile last, images in prompt order). Error(BadInput) when the counts differ.
std::vector<float> prompt_embeddings(const Model& model, std::span<const int64_t> ids, const ImageFeatures& features);

}  // namespace smolvlm
