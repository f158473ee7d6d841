// Idefics3ImageProcessor (HF transformers) for one image: resize to the longest edge, split into
// max_image_size tiles plus a squashed global image (or squash only), rescale and normalize. Every
// step reproduces HF + Pillow bit for bit, including HF's channel-layout quirk for images 1, 3 or 4
// pixels tall (HF reads such an [H, W, 3] array as channels-first: H channels, W rows, 3 columns).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "image/image.h"
#include "image/resample.h"
#include "io/config.h"

namespace smolvlm {

struct PreprocessedImage {
  int64_t rows = 0, cols = 0;       // 0, 0 when not split
  int64_t num_tiles = 0;            // rows*cols + 1 when split, else 1
  int64_t tile_size = 0;            // max_image_size
  std::vector<uint8_t> tiles_u8;    // [N, 3, S, S] (channels-first, as the reference hashes them)
  std::vector<float> pixel_values;  // [N, 3, S, S]
};

// Intermediate images, for tests and tile dumps: each as HF holds it (channels = 3 normally;
// 1, 3 or 4 for the channels-first quirk, where width is 3 and height is the original width).
struct Idefics3Trace {
  bool channels_first_quirk = false;
  U8Image resized;         // after the longest-edge resize (or the input when do_resize is false)
  U8Image vision_encoder;  // split path: after resize_for_vision_encoder
  U8Image global;          // the last tile before RGB conversion (global image or the squashed square)
};

// `do_split` overrides config.do_image_splitting when set. Throws Error(BadInput) for an empty
// image or a config whose sizes cannot work.
PreprocessedImage preprocess_idefics3(const RgbImage& image, const ImageProcessorConfig& config,
                                      std::optional<bool> do_split = std::nullopt, Idefics3Trace* trace = nullptr);

// preprocess_idefics3(load_image(...)), the same result; for a JPEG the longest-edge resize runs on a
// second thread while the image is still being decoded (when resize_threads() >= 2, the image needs no
// EXIF rotation and HF reads it channels-last). Errors as load_image and preprocess_idefics3.
PreprocessedImage load_and_preprocess_idefics3(const std::filesystem::path& path, const ImageProcessorConfig& config,
                                               std::optional<bool> do_split = std::nullopt,
                                               const DecodeLimits& limits = {});
PreprocessedImage load_and_preprocess_idefics3(const uint8_t* data, size_t size, const std::string& name,
                                               const ImageProcessorConfig& config,
                                               std::optional<bool> do_split = std::nullopt,
                                               const DecodeLimits& limits = {});

// HF's size rules (exposed for tests). Sizes are (height, width).
std::pair<int64_t, int64_t> idefics3_longest_edge_size(int64_t height, int64_t width, int64_t longest_edge);
std::pair<int64_t, int64_t> idefics3_vision_encoder_size(int64_t height, int64_t width, int64_t max_image_size);

}  // namespace smolvlm
