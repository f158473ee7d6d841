// Decoding, resampling and tiling against hashes of the reference's outputs.
#include <cstdio>  // jpeglib.h needs FILE

#include <gif_lib.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include <exception>

#include "check/stages.h"
#include "core/error.h"
#include "core/sha256.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "image/resample.h"
#include "io/config.h"

namespace smolvlm {

CheckRow make_row(const std::string& stage, bool hashed, const std::string& path, double bound) {
  CheckRow row;
  row.stage = stage;
  row.hashed = hashed;
  row.path = path;
  row.bound = bound;
  return row;
}

void record_failure(CheckRow& row, const std::string& what) {
  ++row.failed;
  if (!row.detail.empty()) row.detail += "; ";
  row.detail += what;
}

std::string decoder_library_versions() {
  char buf[256];
  int webp = WebPGetDecoderVersion();
  std::snprintf(buf, sizeof buf, "libjpeg-turbo %d.%d.%d, libpng %s, libwebp %d.%d.%d, giflib %d.%d.%d",
                LIBJPEG_TURBO_VERSION_NUMBER / 1000000, LIBJPEG_TURBO_VERSION_NUMBER / 1000 % 1000,
                LIBJPEG_TURBO_VERSION_NUMBER % 1000, png_get_libpng_ver(nullptr), webp >> 16, (webp >> 8) & 255,
                webp & 255, GIFLIB_MAJOR, GIFLIB_MINOR, GIFLIB_RELEASE);
  return buf;
}

namespace {

RgbImage decode_asset(const CheckAssets& assets, const std::string& name) {
  std::string bytes = assets.bytes(name);
  return load_image_from_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

const char* library_of(const std::string& format) {
  if (format == "JPEG") return "libjpeg-turbo";
  if (format == "PNG") return "libpng";
  if (format == "WEBP") return "libwebp";
  if (format == "GIF") return "giflib";
  return "the built-in decoder";
}

}  // namespace

void check_decoding(const CheckAssets& assets, CheckReport& report) {
  CheckRow row = make_row("decode", true);
  const nlohmann::json expected = assets.json("images/expected.json");
  for (const auto& c : expected.at("decode")) {
    std::string file = c.at("file");
    ++row.cases;
    try {
      RgbImage img = decode_asset(assets, "images/" + file);
      std::string got = sha256_hex(img.pixels.data(), img.pixels.size());
      if (img.width != c.at("width") || img.height != c.at("height") || got != c.at("rgb_sha256"))
        record_failure(row, file + " (" + std::string(c.at("format")) + " " + std::string(c.at("mode")) +
                                "): decoded pixels differ from the reference; decoder: " +
                                library_of(c.at("format")) + " (" + report.libraries + ")");
    } catch (const std::exception& e) {
      record_failure(row, file + ": " + e.what());
    }
  }
  if (row.pass()) row.detail = report.libraries;
  report.rows.push_back(row);
}

void check_resampling(const CheckAssets& assets, CheckReport& report) {
  CheckRow row = make_row("resample", true);
  const nlohmann::json vectors = assets.json("resample/vectors.json");
  for (const auto& c : vectors) {
    std::string label = std::string(c.at("filter")) + " " + std::string(c.at("mode")) + " " +
                        c.at("src_wh").dump() + "->" + c.at("dst_wh").dump();
    ++row.cases;
    try {
      RgbImage rgb = decode_asset(assets, "resample/" + std::string(c.at("src")));
      U8Image src{rgb.width, rgb.height, 3, std::move(rgb.pixels)};
      if (c.at("mode") == "L") {  // the PNG is gray; load_image made it RGB with R = G = B
        std::vector<uint8_t> gray(static_cast<size_t>(src.width * src.height));
        for (size_t i = 0; i < gray.size(); ++i) gray[i] = src.pixels[3 * i];
        src.pixels = std::move(gray);
        src.channels = 1;
      }
      if (sha256_hex(src.pixels.data(), src.pixels.size()) != c.at("src_sha256")) {
        record_failure(row, label + ": source pixels differ");
        continue;
      }
      U8Image out = resize_u8(src, c.at("dst_wh")[0], c.at("dst_wh")[1],
                              resample_filter_from_pil(c.at("filter_id").get<int64_t>()));
      if (sha256_hex(out.pixels.data(), out.pixels.size()) != c.at("out_sha256"))
        record_failure(row, label + ": output differs from Pillow");
    } catch (const std::exception& e) {
      record_failure(row, label + ": " + e.what());
    }
  }
  report.rows.push_back(row);
}

void check_tiling(const CheckAssets& assets, CheckReport& report) {
  CheckRow row = make_row("tiling", true);
  ImageProcessorConfig cfg =
      parse_image_processor_config(assets.bytes("real_preprocessor_config.json"), "real_preprocessor_config.json");
  const nlohmann::json expected = assets.json("images/expected.json");
  for (const auto& c : expected.at("tiling")) {
    std::string label = std::string(c.at("file")) + (c.at("split").get<bool>() ? " split" : " no-split");
    ++row.cases;
    try {
      RgbImage img = decode_asset(assets, "images/" + std::string(c.at("file")));
      PreprocessedImage p = preprocess_idefics3(img, cfg, c.at("split").get<bool>());
      if (p.rows != c.at("rows") || p.cols != c.at("cols") || p.num_tiles != c.at("num_tiles"))
        record_failure(row, label + ": grid " + std::to_string(p.rows) + "x" + std::to_string(p.cols) +
                                ", expected " + c.at("rows").dump() + "x" + c.at("cols").dump());
      else if (sha256_hex(p.tiles_u8.data(), p.tiles_u8.size()) != c.at("tiles_u8_sha256"))
        record_failure(row, label + ": tiles differ from the reference");
      else if (sha256_hex(p.pixel_values.data(), p.pixel_values.size() * sizeof(float)) !=
               c.at("pixel_values_sha256"))
        record_failure(row, label + ": pixel_values differ from the reference");
    } catch (const std::exception& e) {
      record_failure(row, label + ": " + e.what());
    }
  }
  report.rows.push_back(row);
}

}  // namespace smolvlm
