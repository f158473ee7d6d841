// BMP: our own parser for the layouts Pillow 9.4 reads (OS/2 v1 and Windows v3/v4/v5 headers;
// 1/4/8-bit palette, 16/24/32-bit, bit fields only in the layouts Pillow accepts). RLE is refused.
#include <cstring>
#include <vector>

#include "core/error.h"
#include "image/decoders.h"

namespace smolvlm::image_detail {
namespace {

uint32_t le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t le32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// How one pixel of 16/24/32 bits becomes RGB.
enum class Layout { Palette, Bgr15, Bgr16, Bytes };

struct PixelFormat {
  Layout layout = Layout::Bytes;
  int r = 2, g = 1, b = 0;  // byte positions within the pixel for Layout::Bytes
};

int byte_of_mask(uint32_t mask) {
  for (int i = 0; i < 4; ++i)
    if (mask == (0xFFu << (8 * i))) return i;
  return -1;
}

// Pillow's accepted bit-field masks (anything else: "Unsupported BMP bitfields layout").
bool bitfield_format(int bits, uint32_t r, uint32_t g, uint32_t b, uint32_t a, PixelFormat& fmt) {
  if (bits == 32) {
    const bool ok = (r == 0xFF0000 && g == 0xFF00 && b == 0xFF && (a == 0 || a == 0xFF000000)) ||
                    (r == 0xFF000000 && g == 0xFF0000 && b == 0xFF00 && (a == 0 || a == 0xFF)) ||
                    (r == 0xFF && g == 0xFF00 && b == 0xFF0000 && a == 0xFF000000) ||
                    (r == 0 && g == 0 && b == 0 && a == 0);
    if (!ok) return false;
    if (r == 0) return true;  // all-zero masks read as BGRA
    fmt.r = byte_of_mask(r);
    fmt.g = byte_of_mask(g);
    fmt.b = byte_of_mask(b);
    return true;
  }
  if (bits == 24) return r == 0xFF0000 && g == 0xFF00 && b == 0xFF;
  if (bits == 16) {
    if (r == 0xF800 && g == 0x7E0 && b == 0x1F) fmt.layout = Layout::Bgr16;
    else if (r == 0x7C00 && g == 0x3E0 && b == 0x1F) fmt.layout = Layout::Bgr15;
    else return false;
    return true;
  }
  return false;
}

}  // namespace

Decoded decode_bmp(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  auto need = [&](size_t end, const char* what) {
    if (end > size) throw bad_input(name + ": truncated BMP (file ends inside the " + std::string(what) + ")");
  };
  need(18, "file header");
  uint32_t offset = le32(data + 10);
  const uint32_t header_size = le32(data + 14);
  if (header_size != 12 && header_size != 40 && header_size != 64 && header_size != 108 && header_size != 124)
    throw unsupported(name + ": unsupported BMP header type (" + std::to_string(header_size) + " bytes)");
  need(14 + static_cast<size_t>(header_size), "info header");
  const uint8_t* h = data + 18;  // header without its size field
  size_t pos = 14 + header_size;
  int64_t width = 0, height = 0;
  int bits = 0;
  uint32_t compression = 0, colors = 0, palette_entry = 4;
  bool top_down = false;
  PixelFormat fmt;
  if (header_size == 12) {
    width = le16(h);
    height = le16(h + 2);
    bits = static_cast<int>(le16(h + 6));
    palette_entry = 3;
  } else {
    width = le32(h);
    top_down = h[7] == 0xFF;
    height = top_down ? (int64_t{1} << 32) - le32(h + 4) : le32(h + 4);
    bits = static_cast<int>(le16(h + 10));
    compression = le32(h + 12);
    colors = le32(h + 28);
    if (compression == 3) {
      uint32_t r, g, b, a = 0;
      if (header_size - 4 >= 52) {
        r = le32(h + 36), g = le32(h + 40), b = le32(h + 44), a = le32(h + 48);
      } else {
        need(pos + 12, "bit-field masks");
        r = le32(data + pos), g = le32(data + pos + 4), b = le32(data + pos + 8);
        pos += 12;
      }
      if (!bitfield_format(bits, r, g, b, a, fmt))
        throw unsupported(name + ": unsupported BMP bitfields layout (" + std::to_string(bits) + "-bit)");
    } else if (compression == 1 || compression == 2) {
      throw unsupported(name + ": RLE-compressed BMP is not supported");
    } else if (compression != 0) {
      throw unsupported(name + ": unsupported BMP compression (" + std::to_string(compression) + ")");
    }
  }
  check_declared_size(width, height, limits, name);
  if (colors == 0) colors = bits < 32 ? (1u << bits) : 0;
  if (offset == 14 + header_size && bits <= 8) offset += 4 * colors;
  if (bits == 1 || bits == 4 || bits == 8) fmt.layout = Layout::Palette;
  else if (bits == 16 && compression == 0) fmt.layout = Layout::Bgr15;
  else if (bits != 16 && bits != 24 && bits != 32)
    throw unsupported(name + ": unsupported BMP pixel depth (" + std::to_string(bits) + ")");

  // Palette (B, G, R[, X]); entries past its end read as Pillow's default grey ramp.
  uint8_t palette[256][3];
  for (int i = 0; i < 256; ++i) palette[i][0] = palette[i][1] = palette[i][2] = static_cast<uint8_t>(i);
  if (fmt.layout == Layout::Palette) {
    if (colors == 0 || colors > 65536) throw bad_input(name + ": unsupported BMP palette size (" + std::to_string(colors) + ")");
    need(pos + static_cast<size_t>(palette_entry) * colors, "palette");
    for (uint32_t i = 0; i < colors && i < 256; ++i) {
      const uint8_t* e = data + pos + i * palette_entry;
      palette[i][0] = e[2];
      palette[i][1] = e[1];
      palette[i][2] = e[0];
    }
    pos += static_cast<size_t>(palette_entry) * colors;
  }
  const size_t data_start = offset ? offset : pos;
  const uint64_t stride = ((static_cast<uint64_t>(width) * bits + 31) >> 3) & ~uint64_t{3};
  if (data_start > size || (size - data_start) / stride < static_cast<uint64_t>(height))
    throw bad_input(name + ": truncated BMP (image file is truncated: " + std::to_string(height) + " rows of " +
                    std::to_string(stride) + " bytes declared)");

  Decoded out;
  out.rgb.width = width;
  out.rgb.height = height;
  out.rgb.pixels.resize(static_cast<size_t>(width * height * 3));
  const int bytes_pp = bits / 8;
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = data + data_start + (top_down ? y : height - 1 - y) * stride;
    uint8_t* dst = &out.rgb.pixels[static_cast<size_t>(y * width * 3)];
    for (int64_t x = 0; x < width; ++x, dst += 3) {
      switch (fmt.layout) {
        case Layout::Palette: {
          const int64_t bit = x * bits;
          const int idx = (row[bit >> 3] >> (8 - bits - (bit & 7))) & ((1 << bits) - 1);
          std::memcpy(dst, palette[idx], 3);
          break;
        }
        case Layout::Bgr15: {
          const uint32_t v = le16(row + x * 2);
          dst[0] = static_cast<uint8_t>(((v >> 10) & 31) * 255 / 31);
          dst[1] = static_cast<uint8_t>(((v >> 5) & 31) * 255 / 31);
          dst[2] = static_cast<uint8_t>((v & 31) * 255 / 31);
          break;
        }
        case Layout::Bgr16: {
          const uint32_t v = le16(row + x * 2);
          dst[0] = static_cast<uint8_t>(((v >> 11) & 31) * 255 / 31);
          dst[1] = static_cast<uint8_t>(((v >> 5) & 63) * 255 / 63);
          dst[2] = static_cast<uint8_t>((v & 31) * 255 / 31);
          break;
        }
        case Layout::Bytes: {
          const uint8_t* p = row + x * bytes_pp;
          dst[0] = p[fmt.r];
          dst[1] = p[fmt.g];
          dst[2] = p[fmt.b];
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace smolvlm::image_detail
