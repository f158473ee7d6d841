// `smolvlm preprocess`: one image through HF load_image + Idefics3ImageProcessor, written as the
// float32 pixel_values the vision encoder takes (and optionally the uint8 tiles / one PNG per tile).
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "cli/command.h"

namespace smolvlm::cli {
namespace {

struct PreprocessFlags {
  std::string image, model, out, tiles_out, dump_tiles;
  bool no_split = false, as_json = false;
};

// Tile i of [N, 3, S, S] as interleaved RGB.
std::vector<uint8_t> tile_rgb(const smolvlm_pixels& p, int64_t i) {
  const int64_t s = p.tile_size, plane = s * s;
  std::vector<uint8_t> rgb(static_cast<size_t>(plane * 3));
  const uint8_t* t = p.tiles_u8 + i * 3 * plane;
  for (int64_t k = 0; k < plane; ++k)
    for (int c = 0; c < 3; ++c) rgb[k * 3 + c] = t[c * plane + k];
  return rgb;
}

int run(const PreprocessFlags& f) {
  smolvlm_image image{};
  image.kind = SMOLVLM_IMAGE_PATH;
  image.path = f.image.c_str();
  smolvlm_pixels p{};
  api::check(smolvlm_preprocess_image(f.model.c_str(), &image, f.no_split ? 0 : -1, &p));
  const std::unique_ptr<smolvlm_pixels, void (*)(smolvlm_pixels*)> owned(&p, smolvlm_pixels_free);
  const int64_t shape[4] = {p.tiles, 3, p.tile_size, p.tile_size};
  const size_t n = static_cast<size_t>(p.tiles * 3 * p.tile_size * p.tile_size);
  api::check(smolvlm_write_npy(f.out.c_str(), "f4", shape, 4, p.pixel_values, n * sizeof(float)));
  if (!f.tiles_out.empty()) api::check(smolvlm_write_npy(f.tiles_out.c_str(), "u1", shape, 4, p.tiles_u8, n));
  if (!f.dump_tiles.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.dump_tiles, ec);
    if (ec) throw api::Error(SMOLVLM_ERR_IO, f.dump_tiles + ": cannot create folder: " + ec.message());
    for (int64_t i = 0; i < p.tiles; ++i) {
      // Row-major crops first, the global (or only) image last.
      std::string name = i == p.tiles - 1 ? "global" : "tile_r" + std::to_string(i / p.cols + 1) + "_c" +
                                                          std::to_string(i % p.cols + 1);
      const std::string path = (std::filesystem::path(f.dump_tiles) / (name + ".png")).string();
      api::check(smolvlm_write_png(path.c_str(), tile_rgb(p, i).data(), p.tile_size, p.tile_size));
    }
  }
  nlohmann::ordered_json j = {{"rows", p.rows},     {"cols", p.cols},           {"tiles", p.tiles},
                              {"width", p.width}, {"height", p.height}, {"tile_size", p.tile_size}};
  if (f.as_json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << f.image << ": " << p.width << "x" << p.height << " -> " << p.tiles << " tile(s) of "
              << p.tile_size << "x" << p.tile_size;
    if (p.rows > 0) std::cout << " (" << p.rows << " rows x " << p.cols << " cols + global image)";
    std::cout << "\nwrote " << f.out << " float32 [" << p.tiles << ", 3, " << p.tile_size << ", " << p.tile_size
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
                         smolvlm_default_model() + ")");
      sub.add_flag("--no-split", f->no_split, "do not split into tiles: one squashed max_image_size tile");
      sub.add_option("--out", f->out, "output .npy: float32 pixel_values [N, 3, S, S]")->required();
      sub.add_option("--tiles-out", f->tiles_out, "also write the uint8 tiles [N, 3, S, S] before rescale/normalize");
      sub.add_option("--dump-tiles", f->dump_tiles, "folder to write each tile as PNG (tile_rR_cC.png, global.png)");
      sub.add_flag("--json", f->as_json, "print {rows, cols, tiles, width, height, tile_size} as one JSON object");
      return [f]() { return run(*f); };
    }};

}  // namespace
}  // namespace smolvlm::cli
