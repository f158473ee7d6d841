// Test helper for the differential test against Pillow (tests/image/pil_diff.py): reads a manifest
// of cases, one per line, and prints one line per case with the sha256 of our output:
//   resize <raw file> <w> <h> <channels> <out_w> <out_h> <PIL filter id>   (raw = [h, w, channels] u8)
//   decode <image file>                                                    (hash of load_image's RGB)
//   preprocess <image file> <longest_edge> <max_image_size> <split 0|1>    (hash of tiles_u8)
// Errors print "error <message>" for that case; the helper itself exits 0 unless the manifest is bad.
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "image/resample.h"

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw smolvlm::io_error(path + ": cannot open");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string run_case(const std::string& line) {
  std::istringstream in(line);
  std::string op;
  in >> op;
  if (op == "resize") {
    std::string path;
    int64_t w, h, ow, oh;
    int c, filter;
    in >> path >> w >> h >> c >> ow >> oh >> filter;
    smolvlm::U8Image img{w, h, c, read_all(path)};
    const auto out = smolvlm::resize_u8(img, ow, oh, smolvlm::resample_filter_from_pil(filter));
    return smolvlm::sha256_hex(out.pixels.data(), out.pixels.size());
  }
  if (op == "decode") {
    std::string path;
    in >> path;
    const auto img = smolvlm::load_image(path);
    return smolvlm::sha256_hex(img.pixels.data(), img.pixels.size()) + " " + std::to_string(img.width) + "x" +
           std::to_string(img.height);
  }
  if (op == "preprocess") {
    std::string path;
    int split;
    smolvlm::ImageProcessorConfig cfg;
    in >> path >> cfg.longest_edge >> cfg.max_image_size >> split;
    const auto p = smolvlm::preprocess_idefics3(smolvlm::load_image(path), cfg, split != 0);
    return smolvlm::sha256_hex(p.tiles_u8.data(), p.tiles_u8.size());
  }
  throw smolvlm::bad_input("unknown manifest operation '" + op + "'");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: image_diff_helper MANIFEST\n";
    return 2;
  }
  std::ifstream manifest(argv[1]);
  if (!manifest) {
    std::cerr << argv[1] << ": cannot open\n";
    return 2;
  }
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty()) continue;
    try {
      std::cout << run_case(line) << "\n";
    } catch (const smolvlm::Error& e) {
      std::cout << "error " << e.what() << "\n";
    }
  }
  return 0;
}
