// `smolvlm preprocess`: one image through HF load_image + Idefics3ImageProcessor, written as the
// float32 pixel_values the vision encoder takes (and optionally the uint8 tiles / one PNG per tile).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "io/config.h"
#include "io/npy.h"

namespace smolvlm::cli {
namespace {

struct PreprocessFlags {
  std::string image, model, out, tiles_out, dump_tiles;
  bool no_split = false, as_json = false;
};

ImageProcessorConfig read_processor_config(const std::filesystem::path& dir) {
  const auto path = dir / "preprocessor_config.json";
  std::ifstream f(path);
  if (!f) throw io_error(path.string() + ": cannot open (the model folder needs preprocessor_config.json)");
  std::stringstream text;
  text << f.rdbuf();
  return parse_image_processor_config(text.str(), path.string());
}

// Tile i of [N, 3, S, S] as an RGB image.
RgbImage tile_rgb(const PreprocessedImage& p, int64_t i) {
  const int64_t s = p.tile_size, plane = s * s;
  RgbImage img{s, s, std::vector<uint8_t>(static_cast<size_t>(plane * 3))};
  const uint8_t* t = p.tiles_u8.data() + i * 3 * plane;
  for (int64_t k = 0; k < plane; ++k)
    for (int c = 0; c < 3; ++c) img.pixels[k * 3 + c] = t[c * plane + k];
  return img;
}

int run(const PreprocessFlags& f) {
  const auto model_dir = resolve_model_dir(f.model);
  const ImageProcessorConfig cfg = read_processor_config(model_dir);
  const RgbImage image = load_image(f.image);
  const PreprocessedImage p = preprocess_idefics3(image, cfg, f.no_split ? std::optional<bool>(false) : std::nullopt);
  const std::vector<int64_t> shape = {p.num_tiles, 3, p.tile_size, p.tile_size};
  write_npy(f.out, "f4", shape, p.pixel_values.data(), p.pixel_values.size() * sizeof(float));
  if (!f.tiles_out.empty()) write_npy(f.tiles_out, "u1", shape, p.tiles_u8.data(), p.tiles_u8.size());
  if (!f.dump_tiles.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.dump_tiles, ec);
    if (ec) throw io_error(f.dump_tiles + ": cannot create folder: " + ec.message());
    for (int64_t i = 0; i < p.num_tiles; ++i) {
      // Row-major crops first, the global (or only) image last.
      std::string name = i == p.num_tiles - 1 ? "global" : "tile_r" + std::to_string(i / p.cols + 1) + "_c" +
                                                              std::to_string(i % p.cols + 1);
      save_png(std::filesystem::path(f.dump_tiles) / (name + ".png"), tile_rgb(p, i));
    }
  }
  nlohmann::ordered_json j = {{"rows", p.rows},     {"cols", p.cols},           {"tiles", p.num_tiles},
                              {"width", image.width}, {"height", image.height}, {"tile_size", p.tile_size}};
  if (f.as_json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << f.image << ": " << image.width << "x" << image.height << " -> " << p.num_tiles << " tile(s) of "
              << p.tile_size << "x" << p.tile_size;
    if (p.rows > 0) std::cout << " (" << p.rows << " rows x " << p.cols << " cols + global image)";
    std::cout << "\nwrote " << f.out << " float32 [" << p.num_tiles << ", 3, " << p.tile_size << ", " << p.tile_size
              << "]\n";
  }
  return 0;
}

const Command kPreprocess{
    "preprocess", "Decode an image and preprocess it exactly like HF Idefics3 (pixel_values as .npy)",
    [](CLI::App& sub) {
      auto f = std::make_shared<PreprocessFlags>();
      sub.add_option("image", f->image, "image file (JPEG, PNG, WebP, GIF, BMP)")->required();
      sub.add_option("--model", f->model,
                     std::string("model folder (only preprocessor_config.json is read) or hub id (default ") +
                         kDefaultModelId + ")");
      sub.add_flag("--no-split", f->no_split, "do not split into tiles: one squashed max_image_size tile");
      sub.add_option("--out", f->out, "output .npy: float32 pixel_values [N, 3, S, S]")->required();
      sub.add_option("--tiles-out", f->tiles_out, "also write the uint8 tiles [N, 3, S, S] before rescale/normalize");
      sub.add_option("--dump-tiles", f->dump_tiles, "folder to write each tile as PNG (tile_rR_cC.png, global.png)");
      sub.add_flag("--json", f->as_json, "print {rows, cols, tiles, width, height, tile_size} as one JSON object");
      return [f]() { return run(*f); };
    }};

}  // namespace
}  // namespace smolvlm::cli
