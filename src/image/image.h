// Image files to RGB pixels exactly as HF `transformers.image_utils.load_image` produces them with
// Pillow 9.4: decode (libjpeg-turbo, libpng, libwebp, giflib, our BMP parser), apply the EXIF
// orientation (ImageOps.exif_transpose), then convert("RGB") with Pillow's per-mode rules (alpha
// dropped without compositing, palette lookup ignoring transparency, inverted-Adobe CMYK, 16-bit gray
// clamped, 16-bit colour truncated to the high byte). Every malformed input is an Error naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace smolvlm {

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3] row-major
};

struct DecodeLimits {
  // Pillow's DecompressionBombError threshold (2 x Image.MAX_IMAGE_PIXELS); checked on the declared
  // size before any pixel buffer is allocated.
  int64_t max_pixels = 178956970;
};

// = HF load_image(path). Errors: Io (cannot read), BadInput (corrupt, truncated, too large, not an
// image), Unsupported (a recognised format or variant we do not decode).
RgbImage load_image(const std::filesystem::path& path, const DecodeLimits& limits = {});
// The same for bytes in memory; `name` is used in error messages.
RgbImage load_image_from_memory(const uint8_t* data, size_t size, const std::string& name,
                                const DecodeLimits& limits = {});

// Writes an 8-bit RGB PNG (atomically: temporary file + rename). Throws Error(Io) on failure.
void save_png(const std::filesystem::path& path, const RgbImage& image);

// The container format recognised from the first bytes ("jpeg", "png", "webp", "gif", "bmp"), or an
// empty string when the bytes are not one we decode.
std::string sniff_image_format(const uint8_t* data, size_t size);

}  // namespace smolvlm
