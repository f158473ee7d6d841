// Fuzzes decoding (all formats, EXIF orientation) and Idefics3 preprocessing of what decodes.
// Errors are expected; crashes, leaks, hangs and undefined behaviour are bugs.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "image/idefics3.h"
#include "image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smolvlm::DecodeLimits limits;
  limits.max_pixels = 1 << 20;  // keeps each input cheap; the guard itself is under test too
  try {
    const smolvlm::RgbImage img = smolvlm::load_image_from_memory(data, size, "fuzz", limits);
    // A small processor config (like the tiny test models) so preprocessing stays fast.
    smolvlm::ImageProcessorConfig cfg;
    cfg.longest_edge = 64;
    cfg.max_image_size = 32;
    cfg.resample = static_cast<int>(size % 6);
    smolvlm::preprocess_idefics3(img, cfg, (size & 1) != 0);
  } catch (const smolvlm::Error&) {
  }
  return 0;
}
