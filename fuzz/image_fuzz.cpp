// Fuzzes decoding (all formats, EXIF orientation, RLE BMP) and Idefics3 preprocessing of what decodes,
// and checks that load_and_preprocess_idefics3 (the resize overlapped with JPEG decoding, on a second
// thread) agrees with preprocess_idefics3(load_image(...)): the same tensors or both an error.
// Errors are expected; crashes, leaks, hangs, undefined behaviour and disagreements are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "image/resample.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smolvlm::DecodeLimits limits;
  limits.max_pixels = 1 << 20;  // keeps each input cheap; the guard itself is under test too
  // A small processor config (like the tiny test models) so preprocessing stays fast.
  smolvlm::ImageProcessorConfig cfg;
  cfg.longest_edge = 64;
  cfg.max_image_size = 32;
  cfg.resample = static_cast<int>(size % 6);
  const bool split = (size & 1) != 0;
  smolvlm::set_resize_threads(2);
  bool ok = false;
  smolvlm::PreprocessedImage plain;
  try {
    const smolvlm::RgbImage img = smolvlm::load_image_from_memory(data, size, "fuzz", limits);
    plain = smolvlm::preprocess_idefics3(img, cfg, split);
    ok = true;
  } catch (const smolvlm::Error&) {
  }
  try {
    const smolvlm::PreprocessedImage overlapped =
        smolvlm::load_and_preprocess_idefics3(data, size, "fuzz", cfg, split, limits);
    if (!ok || overlapped.tiles_u8 != plain.tiles_u8 || overlapped.pixel_values != plain.pixel_values) std::abort();
  } catch (const smolvlm::Error&) {
    if (ok) std::abort();
  }
  return 0;
}
