#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "image/decoders.h"
#include "image/image.h"

namespace smolvlm {
namespace image_detail {

void check_declared_size(int64_t width, int64_t height, const DecodeLimits& limits, const std::string& name) {
  if (width <= 0 || height <= 0)
    throw bad_input(name + ": image declares an empty size " + std::to_string(width) + "x" + std::to_string(height));
  if (width > limits.max_pixels || height > limits.max_pixels || width > limits.max_pixels / height)
    throw bad_input(name + ": image size " + std::to_string(width) + "x" + std::to_string(height) +
                    " exceeds the limit of " + std::to_string(limits.max_pixels) +
                    " pixels (decompression bomb guard)");
}

namespace {

struct ExifReader {
  const uint8_t* p;
  size_t n;
  bool little;
  bool ok(size_t off, size_t len) const { return off <= n && len <= n - off; }
  uint32_t u16(size_t off) const {
    return little ? p[off] | (p[off + 1] << 8) : (p[off] << 8) | p[off + 1];
  }
  uint32_t u32(size_t off) const {
    return little ? p[off] | (p[off + 1] << 8) | (p[off + 2] << 16) | (static_cast<uint32_t>(p[off + 3]) << 24)
                  : (static_cast<uint32_t>(p[off]) << 24) | (p[off + 1] << 16) | (p[off + 2] << 8) | p[off + 3];
  }
};

}  // namespace

int exif_orientation(const uint8_t* data, size_t size) {
  if (size >= 6 && std::memcmp(data, "Exif\0\0", 6) == 0) {
    data += 6;
    size -= 6;
  }
  if (size < 8) return 0;
  ExifReader r{data, size, false};
  if (data[0] == 'I' && data[1] == 'I') r.little = true;
  else if (!(data[0] == 'M' && data[1] == 'M')) return 0;
  const size_t ifd = r.u32(4);
  if (!r.ok(ifd, 2)) return 0;
  const uint32_t entries = r.u16(ifd);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + static_cast<size_t>(i) * 12;
    if (!r.ok(e, 12)) return 0;
    if (r.u16(e) != 0x0112) continue;
    const uint32_t type = r.u16(e + 2), count = r.u32(e + 4);
    if (count != 1) return 1;  // Pillow yields a tuple then, which maps to no transform
    // The value fits in the entry for SHORT, LONG and BYTE.
    if (type == 3) return static_cast<int>(r.u16(e + 8));
    if (type == 4) return static_cast<int>(std::min<uint32_t>(r.u32(e + 8), 1000));
    if (type == 1) return data[e + 8];
    return 1;
  }
  return 0;
}

RgbImage apply_orientation(RgbImage in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int64_t W = in.width, H = in.height;
  const bool swap = orientation >= 5;
  RgbImage out;
  out.width = swap ? H : W;
  out.height = swap ? W : H;
  out.pixels.resize(in.pixels.size());
  for (int64_t y = 0; y < out.height; ++y) {
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sx = 0, sy = 0;  // source pixel of out[y][x]
      switch (orientation) {
        case 2: sx = W - 1 - x; sy = y; break;
        case 3: sx = W - 1 - x; sy = H - 1 - y; break;
        case 4: sx = x; sy = H - 1 - y; break;
        case 5: sx = y; sy = x; break;
        case 6: sx = y; sy = H - 1 - x; break;
        case 7: sx = W - 1 - y; sy = H - 1 - x; break;
        case 8: sx = W - 1 - y; sy = x; break;
      }
      std::memcpy(&out.pixels[(y * out.width + x) * 3], &in.pixels[(sy * W + sx) * 3], 3);
    }
  }
  return out;
}

}  // namespace image_detail

std::string sniff_image_format(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "jpeg";
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "png";
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "webp";
  if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0)) return "gif";
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "bmp";
  return "";
}

namespace {

// Formats Pillow may know but we do not decode: named so the error says what the file is.
const char* known_unsupported_format(const uint8_t* d, size_t n) {
  if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
  if (n >= 4 && std::memcmp(d, "\0\0\1\0", 4) == 0) return "ICO";
  if (n >= 4 && std::memcmp(d, "8BPS", 4) == 0) return "PSD";
  if (n >= 12 && std::memcmp(d + 4, "ftyp", 4) == 0) return "HEIF/AVIF (ISO media)";
  if (n >= 12 && std::memcmp(d, "\0\0\0\x0cjP  ", 8) == 0) return "JPEG 2000";
  if (n >= 4 && std::memcmp(d, "\xff\x4f\xff\x51", 4) == 0) return "JPEG 2000 codestream";
  if (n >= 4 && std::memcmp(d, "qoif", 4) == 0) return "QOI";
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return "PNM";
  if (n >= 4 && std::memcmp(d, "\x76\x2f\x31\x01", 4) == 0) return "OpenEXR";
  if (n >= 8 && std::memcmp(d, "\x8aMNG\r\n\x1a\n", 8) == 0) return "MNG";
  if (n >= 5 && std::memcmp(d, "<?xml", 5) == 0) return "SVG/XML";
  if (n >= 4 && std::memcmp(d, "<svg", 4) == 0) return "SVG";
  return nullptr;
}

}  // namespace

RgbImage load_image_from_memory(const uint8_t* data, size_t size, const std::string& name,
                                const DecodeLimits& limits) {
  using namespace image_detail;
  if (size == 0) throw bad_input(name + ": empty file (0 bytes), not an image");
  if (limits.max_pixels < 1) throw bad_input(name + ": decode limit max_pixels must be positive");
  const std::string format = sniff_image_format(data, size);
  Decoded d;
  if (format == "jpeg") d = decode_jpeg(data, size, name, limits);
  else if (format == "png") d = decode_png(data, size, name, limits);
  else if (format == "webp") d = decode_webp(data, size, name, limits);
  else if (format == "gif") d = decode_gif(data, size, name, limits);
  else if (format == "bmp") d = decode_bmp(data, size, name, limits);
  else if (const char* other = known_unsupported_format(data, size))
    throw unsupported(name + ": " + other + " images are not supported (supported: JPEG, PNG, WebP, GIF, BMP)");
  else
    throw bad_input(name + ": cannot identify image file (not JPEG, PNG, WebP, GIF or BMP)");
  return apply_orientation(std::move(d.rgb), d.orientation);
}

std::vector<uint8_t> image_detail::read_image_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw io_error(path.string() + ": cannot open image file");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw io_error(path.string() + ": is a directory, not an image file");
  std::vector<uint8_t> bytes;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > 0) {  // one read of the known size (a pipe or special file falls back to streaming)
    bytes.resize(static_cast<size_t>(size));
    f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(f.gcount()));
  }
  if (f.good() && f.peek() != std::char_traits<char>::eof())
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (f.bad()) throw io_error(path.string() + ": read error");
  return bytes;
}

RgbImage load_image(const std::filesystem::path& path, const DecodeLimits& limits) {
  const std::vector<uint8_t> bytes = image_detail::read_image_file(path);
  return load_image_from_memory(bytes.data(), bytes.size(), path.string(), limits);
}

}  // namespace smolvlm
