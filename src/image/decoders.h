// Per-format decoders used by load_image (internal to the image module). Each returns the stored
// pixels already converted to RGB with Pillow's rule for the mode the file opens in, plus the EXIF
// orientation Pillow would apply (1 when none); the caller applies the orientation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "image/image.h"

namespace smolvlm::image_detail {

struct Decoded {
  RgbImage rgb;
  int orientation = 1;  // EXIF tag 0x0112 value; only 2..8 change the image
};

// Throws Error(BadInput) when width x height exceeds the limit or either side is not positive.
void check_declared_size(int64_t width, int64_t height, const DecodeLimits& limits, const std::string& name);

// Rows of a JPEG as they are decoded, for work that overlaps decoding. The RGB rows go to `pixels`
// (owned by the caller, so that it outlives whatever reads it even when decoding fails; resized in full
// before the first row, so it never moves; Decoded::rgb.pixels then stays empty). on_start gets the
// size and the EXIF orientation before the first row; on_rows(n) says rows [0, n) are final (called
// every few rows and once at the end). A decode that then fails still throws from decode_jpeg.
struct JpegRowSink {
  std::vector<uint8_t>* pixels = nullptr;
  std::function<void(const uint8_t* pixels, int64_t width, int64_t height, int orientation)> on_start;
  std::function<void(int64_t rows)> on_rows;
};

Decoded decode_jpeg(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits,
                    const JpegRowSink* sink = nullptr);
Decoded decode_png(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits);
Decoded decode_webp(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits);
Decoded decode_gif(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits);
Decoded decode_bmp(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits);

// The bytes of an image file. Throws Error(Io) when it cannot be read.
std::vector<uint8_t> read_image_file(const std::filesystem::path& path);

// Orientation (tag 0x0112) from a TIFF-structured EXIF block, with or without the "Exif\0\0"
// prefix; 0 when the tag is absent or the block unreadable.
int exif_orientation(const uint8_t* data, size_t size);
// Applies ImageOps.exif_transpose's transform for orientation 2..8; other values change nothing.
RgbImage apply_orientation(RgbImage image, int orientation);

// Pillow's CMYK -> RGB for one pixel of Pillow-convention (non-inverted) CMYK.
inline void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb) {
  const int nk = 255 - cmyk[3];
  for (int i = 0; i < 3; ++i) {
    const int u = cmyk[i] * nk + 128;
    const int t = ((u >> 8) + u) >> 8;
    rgb[i] = static_cast<uint8_t>(nk - t);
  }
}

}  // namespace smolvlm::image_detail
