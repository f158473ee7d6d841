#include "runtime/vision_input.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace smolvlm {

ImageFeatures encode_images(const Model& model, const float* pixel_values, int64_t tiles, ThreadPool& pool,
                            bool keep_vision_hidden, const ChunkRunner& run_chunk) {
  auto run = [&](const std::function<void()>& work) { run_chunk ? run_chunk(work) : work(); };
  const SiglipVision& vision = model.vision();
  const Idefics3Connector& connector = model.connector();
  ImageFeatures f;
  f.tiles = tiles;
  if (tiles <= 0) return f;
  const int64_t tile_floats = 3 * vision.image_size() * vision.image_size();
  const int64_t hidden_floats = vision.num_patches() * vision.hidden();
  SiglipVision::Scratch scratch(vision);
  std::vector<float> shuffled;
  // One tile at a time through both stages keeps the buffers at one tile's size.
  std::vector<float> tile_hidden(static_cast<size_t>(hidden_floats));
  if (keep_vision_hidden) f.vision_last_hidden.resize(static_cast<size_t>(tiles * hidden_floats));
  f.image_hidden_states.resize(static_cast<size_t>(tiles * connector.tokens_per_tile() * connector.out_dim()));
  for (int64_t t = 0; t < tiles; ++t) {
    float* hidden = keep_vision_hidden ? f.vision_last_hidden.data() + t * hidden_floats : tile_hidden.data();
    for (int64_t stage = 0; stage < vision.tile_stages(); ++stage)
      run([&] { vision.run_tile_stage(stage, pixel_values + t * tile_floats, hidden, scratch, pool); });
    run([&] {
      connector.forward(hidden, 1, f.image_hidden_states.data() + t * connector.tokens_per_tile() * connector.out_dim(),
                        shuffled, pool);
    });
  }
  return f;
}

std::vector<float> prompt_embeddings(const Model& model, std::span<const int64_t> ids, const ImageFeatures& features) {
  const int64_t H = model.text().hidden();
  const int64_t image_token = model.config().as<Idefics3Config>().image_token_id;
  const int64_t n_image_tokens = std::count(ids.begin(), ids.end(), image_token);
  const int64_t n_feature_rows = features.image_hidden_states.empty()
                                     ? 0
                                     : static_cast<int64_t>(features.image_hidden_states.size()) / H;
  if (n_image_tokens != n_feature_rows)
    throw bad_input("the prompt has " + std::to_string(n_image_tokens) + " <image> tokens (id " +
                    std::to_string(image_token) + ") but the images give " + std::to_string(n_feature_rows) +
                    " feature rows (" + std::to_string(features.tiles) + " tiles)");
  std::vector<float> x(ids.size() * static_cast<size_t>(H));
  model.text().embed(ids.data(), static_cast<int64_t>(ids.size()), x.data());
  int64_t next = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == image_token)
      std::memcpy(x.data() + i * H, features.image_hidden_states.data() + (next++) * H, H * sizeof(float));
  return x;
}

}  // namespace smolvlm
