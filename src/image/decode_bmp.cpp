// BMP: our own parser for the layouts Pillow 9.4 reads (OS/2 v1 and Windows v3/v4/v5 headers;
// 1/4/8-bit palette, 16/24/32-bit, bit fields only in the layouts Pillow accepts; RLE8 and RLE4 as
// Pillow's BmpRleDecoder reads them, quirks included).
#include <algorithm>
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

// Pillow 9.4's BmpRleDecoder, step for step: palette indices are appended to one flat buffer in file
// row order (bottom-up unless the height is negative) until it holds width x height of them. Its quirks
// are kept because they decide the pixels: a run never crosses the row end (it is cut short), but an
// absolute run does (and shifts what follows); RLE4 absolute runs of odd length keep count/2 bytes,
// i.e. lose their last pixel; the word alignment after an absolute run is of the file offset; a delta
// escape skips two bytes and then reads (right, up) from the next two. Running out of data, or an
// end-of-bitmap before the buffer is full, is Pillow's "not enough image data" error.
std::vector<uint8_t> decode_rle_indices(const uint8_t* data, size_t size, size_t pos, int64_t width, int64_t height,
                                        bool rle4, const std::string& name) {
  const size_t total = static_cast<size_t>(width * height);
  auto fail = [&](const std::string& why) -> void {
    throw bad_input(name + ": corrupt RLE BMP (" + why + "; not enough image data for " + std::to_string(width) +
                    "x" + std::to_string(height) + " pixels)");
  };
  std::vector<uint8_t> idx;
  idx.reserve(std::min<size_t>(total, size_t{1} << 20));
  // Appends stop at `total`: Pillow ignores whatever lies beyond, and the loop ends there.
  auto append = [&](size_t n, uint8_t v) { idx.insert(idx.end(), std::min(n, total - idx.size()), v); };
  int64_t x = 0;
  while (idx.size() < total) {
    if (pos >= size || size - pos < 2) fail("the data ends before the image is complete");
    const uint32_t n = data[pos], b = data[pos + 1];
    pos += 2;
    if (n != 0) {  // encoded run
      const int64_t count = x + n > width ? std::max<int64_t>(0, width - x) : n;
      if (rle4) {
        for (int64_t i = 0; i < count && idx.size() < total; ++i) idx.push_back(static_cast<uint8_t>(i % 2 == 0 ? b >> 4 : b & 15));
      } else {
        append(static_cast<size_t>(count), static_cast<uint8_t>(b));
      }
      x += count;
    } else if (b == 0) {  // end of line: pad to a row boundary
      append((static_cast<size_t>(width) - idx.size() % static_cast<size_t>(width)) % static_cast<size_t>(width), 0);
      x = 0;
    } else if (b == 1) {  // end of bitmap
      fail("end of bitmap before the last pixel");
    } else if (b == 2) {  // delta
      if (size - pos < 4) fail("the data ends inside a delta escape");
      const size_t right = data[pos + 2], up = data[pos + 3];
      pos += 4;
      append(right + up * static_cast<size_t>(width), 0);
      x = static_cast<int64_t>(idx.size() % static_cast<size_t>(width));
    } else {  // absolute run of b pixels
      const size_t want = rle4 ? b / 2 : b;
      const size_t got = std::min(want, size - pos);
      for (size_t i = 0; i < got && idx.size() < total; ++i) {
        if (rle4) {
          idx.push_back(static_cast<uint8_t>(data[pos + i] >> 4));
          if (idx.size() < total) idx.push_back(static_cast<uint8_t>(data[pos + i] & 15));
        } else {
          idx.push_back(data[pos + i]);
        }
      }
      pos += got;
      if (got < want) {
        if (idx.size() < total) fail("the data ends inside an absolute run");
        break;
      }
      x += b;
      if (pos % 2 != 0) ++pos;
    }
  }
  return idx;
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
      if (bits != 1 && bits != 4 && bits != 8)  // Pillow: "unknown raw mode for given image mode"
        throw unsupported(name + ": RLE-compressed BMP with " + std::to_string(bits) +
                          "-bit pixels cannot be decoded (Pillow cannot either)");
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
  if (compression == 1 || compression == 2) {
    // Pillow opens a two-colour black-and-white palette as mode "1", which its RLE decoder cannot fill.
    if (colors == 2 && palette[0][0] == 0 && palette[0][1] == 0 && palette[0][2] == 0 && palette[1][0] == 255 &&
        palette[1][1] == 255 && palette[1][2] == 255)
      throw unsupported(name + ": RLE-compressed BMP with a black-and-white palette cannot be decoded "
                        "(Pillow cannot either: its mode \"1\" has no RLE raw mode)");
    const std::vector<uint8_t> idx = decode_rle_indices(data, size, data_start, width, height, compression == 2, name);
    Decoded out;
    out.rgb.width = width;
    out.rgb.height = height;
    out.rgb.pixels.resize(static_cast<size_t>(width * height * 3));
    for (int64_t r = 0; r < height; ++r) {
      const uint8_t* src = &idx[static_cast<size_t>(r * width)];
      uint8_t* dst = &out.rgb.pixels[static_cast<size_t>((top_down ? r : height - 1 - r) * width * 3)];
      for (int64_t x = 0; x < width; ++x) std::memcpy(dst + x * 3, palette[src[x]], 3);
    }
    return out;
  }
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
