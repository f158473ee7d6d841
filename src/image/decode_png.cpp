// PNG through libpng, with Pillow's checks and mode rules. Pillow verifies the CRC of every chunk
// before the first IDAT (a bad one makes the file unidentifiable) and none after, so we check those
// CRCs ourselves and let libpng use the data quietly. Metadata (eXIf, text chunks with EXIF or XMP)
// is read from the whole chunk list, as Pillow's getexif() loads the image first.
#include <csetjmp>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include <png.h>
#include <zlib.h>

#include "core/error.h"
#include "image/decoders.h"

namespace smolvlm::image_detail {
namespace {

uint32_t be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}

struct PngChunk {
  std::string type;
  const uint8_t* data;
  size_t size;
};

// What the chunk walk learns before libpng runs.
struct PngScan {
  uint32_t width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  uint64_t idat_bytes = 0;
  std::vector<uint8_t> exif;         // eXIf payload (or a tEXt "exif" value)
  std::string raw_profile_exif;      // "Raw profile type exif" text
  std::string xmp;                   // "XML:com.adobe.xmp" text
};

bool inflate_all(const uint8_t* data, size_t size, std::string& out, size_t max_out) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return false;
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > max_out) rc = Z_MEM_ERROR;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END;
}

// Text chunk value for the keys we care about (Pillow keeps the last one of a key).
void read_text_chunk(const PngChunk& c, PngScan& scan) {
  constexpr size_t kMaxText = 1 << 20;  // Pillow's MAX_TEXT_CHUNK
  const uint8_t* end = c.data + c.size;
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(c.data, 0, c.size));
  if (!nul) return;
  const std::string key(reinterpret_cast<const char*>(c.data), nul - c.data);
  const bool wanted = key == "Raw profile type exif" || key == "XML:com.adobe.xmp" || key == "exif";
  if (!wanted) return;
  std::string value;
  const uint8_t* p = nul + 1;
  if (c.type == "tEXt") {
    value.assign(reinterpret_cast<const char*>(p), end - p);
  } else if (c.type == "zTXt") {
    if (p >= end || *p != 0) return;
    if (!inflate_all(p + 1, end - p - 1, value, kMaxText)) return;
  } else {  // iTXt: flag, method, language\0, translated keyword\0, text
    if (end - p < 2) return;
    const bool compressed = p[0] != 0;
    p += 2;
    for (int i = 0; i < 2; ++i) {
      const uint8_t* z = static_cast<const uint8_t*>(std::memchr(p, 0, end - p));
      if (!z) return;
      p = z + 1;
    }
    if (compressed) {
      if (!inflate_all(p, end - p, value, kMaxText)) return;
    } else {
      value.assign(reinterpret_cast<const char*>(p), end - p);
    }
  }
  if (key == "exif" && c.type == "tEXt") scan.exif.assign(value.begin(), value.end());
  else if (key == "Raw profile type exif") scan.raw_profile_exif = value;
  else if (key == "XML:com.adobe.xmp") scan.xmp = value;
}

PngScan scan_chunks(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  PngScan scan;
  size_t pos = 8;
  bool seen_idat = false;
  bool first = true;
  while (pos + 12 <= size) {
    const uint32_t len = be32(data + pos);
    if (len > 0x7fffffffu || len > size - pos - 12) {
      if (!seen_idat) throw bad_input(name + ": truncated PNG (chunk at byte " + std::to_string(pos) + " runs past the end)");
      break;  // a cut after the image data surfaces in libpng as a read error if it matters
    }
    PngChunk c{std::string(reinterpret_cast<const char*>(data + pos + 4), 4), data + pos + 8, len};
    if (c.type == "IDAT") seen_idat = true;
    if (!seen_idat) {
      const uint32_t stored = be32(data + pos + 8 + len);
      const uint32_t actual = static_cast<uint32_t>(crc32(crc32(0, data + pos + 4, 4), c.data, len));
      if (stored != actual) throw bad_input(name + ": broken PNG: bad CRC in chunk " + c.type);
    }
    if (first) {
      if (c.type != "IHDR" || len < 13) throw bad_input(name + ": PNG does not start with an IHDR chunk");
      scan.width = be32(c.data);
      scan.height = be32(c.data + 4);
      scan.bit_depth = c.data[8];
      scan.color_type = c.data[9];
      scan.interlace = c.data[12];
      check_declared_size(scan.width, scan.height, limits, name);
      first = false;
    }
    if (c.type == "IDAT") scan.idat_bytes += len;
    else if (c.type == "eXIf") scan.exif.assign(c.data, c.data + len);
    else if (c.type == "tEXt" || c.type == "zTXt" || c.type == "iTXt") read_text_chunk(c, scan);
    else if (c.type == "IEND") break;
    pos += 12 + static_cast<size_t>(len);
  }
  if (first) throw bad_input(name + ": truncated PNG (no complete IHDR chunk)");
  return scan;
}

// Pillow's getexif() for PNG: eXIf first, then the ImageMagick hex dump, then XMP tiff:Orientation.
int png_orientation(const PngScan& scan) {
  int orientation = 0;
  bool have_exif = false;
  if (!scan.exif.empty()) {
    have_exif = true;
    orientation = exif_orientation(scan.exif.data(), scan.exif.size());
  } else if (!scan.raw_profile_exif.empty()) {
    // Hex digits after the first three lines ("", "exif", length).
    size_t lines = 0, i = 0;
    for (; i < scan.raw_profile_exif.size() && lines < 3; ++i)
      if (scan.raw_profile_exif[i] == '\n') ++lines;
    std::vector<uint8_t> bytes;
    int nibble = -1;
    for (; i < scan.raw_profile_exif.size(); ++i) {
      const char ch = scan.raw_profile_exif[i];
      int v = -1;
      if (ch >= '0' && ch <= '9') v = ch - '0';
      else if (ch >= 'a' && ch <= 'f') v = ch - 'a' + 10;
      else if (ch >= 'A' && ch <= 'F') v = ch - 'A' + 10;
      if (v < 0) continue;
      if (nibble < 0) nibble = v;
      else {
        bytes.push_back(static_cast<uint8_t>(nibble * 16 + v));
        nibble = -1;
      }
    }
    have_exif = true;
    orientation = exif_orientation(bytes.data(), bytes.size());
  }
  // Pillow consults XMP only when the EXIF orientation tag is missing.
  if (have_exif && orientation != 0) return orientation;
  if (!scan.xmp.empty()) {
    static const std::regex re("tiff:Orientation(=\"|>)([0-9])");
    std::smatch m;
    if (std::regex_search(scan.xmp, m, re)) return m[2].str()[0] - '0';
  }
  return 1;
}

struct ReadState {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

void read_fn(png_structp png, png_bytep out, png_size_t n) {
  auto* st = static_cast<ReadState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos) png_error(png, "image file is truncated");
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

void error_fn(png_structp png, png_const_charp msg) {
  auto* msg_out = static_cast<std::string*>(png_get_error_ptr(png));
  *msg_out = msg;
  png_longjmp(png, 1);
}

void warning_fn(png_structp, png_const_charp) {}

struct PngJob {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string message;
  ReadState src{};
  std::vector<uint8_t> raw;  // undecoded samples: 1 byte per sample below 8 bits, 2 (big-endian) at 16
  std::vector<png_bytep> rows;  // here, not in run_png: a longjmp out of libpng skips run_png's destructors
  ~PngJob() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

// Returns false on a libpng error (message in job->message). Rows land in job->raw.
bool run_png(PngJob* job, const PngScan& scan, size_t row_bytes) {
  if (setjmp(png_jmpbuf(job->png))) return false;
  png_set_read_fn(job->png, &job->src, read_fn);
  png_set_crc_action(job->png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
  png_set_benign_errors(job->png, 1);
  png_set_user_limits(job->png, 0x7fffffff, 0x7fffffff);
  png_read_info(job->png, job->info);
  if (scan.bit_depth < 8) png_set_packing(job->png);
  const int passes = png_set_interlace_handling(job->png);
  png_read_update_info(job->png, job->info);
  if (png_get_rowbytes(job->png, job->info) != row_bytes) png_error(job->png, "unexpected row size");
  if (passes > 1) {
    job->raw.resize(row_bytes * scan.height);
    job->rows.resize(scan.height);
    for (uint32_t y = 0; y < scan.height; ++y) job->rows[y] = job->raw.data() + y * row_bytes;
    png_read_image(job->png, job->rows.data());
  } else {
    for (uint32_t y = 0; y < scan.height; ++y) {
      job->raw.resize((y + 1) * row_bytes);  // grows with the data actually present
      png_read_row(job->png, job->raw.data() + y * row_bytes, nullptr);
    }
  }
  return true;
}

}  // namespace

Decoded decode_png(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  const PngScan scan = scan_chunks(data, size, name, limits);
  const int ct = scan.color_type, bd = scan.bit_depth;
  int channels = 0;
  switch (ct) {
    case 0: channels = 1; break;
    case 2: channels = 3; break;
    case 3: channels = 1; break;
    case 4: channels = 2; break;
    case 6: channels = 4; break;
    default: throw bad_input(name + ": PNG has invalid colour type " + std::to_string(ct));
  }
  const bool depth_ok = (ct == 0 && (bd == 1 || bd == 2 || bd == 4 || bd == 8 || bd == 16)) ||
                        (ct == 3 && (bd == 1 || bd == 2 || bd == 4 || bd == 8)) ||
                        ((ct == 2 || ct == 4 || ct == 6) && (bd == 8 || bd == 16));
  if (!depth_ok)
    throw bad_input(name + ": PNG colour type " + std::to_string(ct) + " cannot have bit depth " + std::to_string(bd));
  const int sample_bytes = bd == 16 ? 2 : 1;
  const size_t row_bytes = static_cast<size_t>(scan.width) * channels * sample_bytes;
  // Deflate cannot expand more than ~1032:1; far less compressed data than that means a truncated or
  // forged file, refused before allocating the declared size.
  const uint64_t filtered_bytes = static_cast<uint64_t>(scan.height) * (1 + (static_cast<uint64_t>(scan.width) * channels * bd + 7) / 8);
  if (scan.idat_bytes * 1100 + 1024 < filtered_bytes)
    throw bad_input(name + ": truncated PNG (" + std::to_string(scan.idat_bytes) + " bytes of image data for a " +
                    std::to_string(scan.width) + "x" + std::to_string(scan.height) + " image)");

  PngJob job;
  job.src = {data, size, 0};
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job.message, error_fn, warning_fn);
  if (!job.png) throw internal_error("libpng: cannot create read struct");
  job.info = png_create_info_struct(job.png);
  if (!job.info) throw internal_error("libpng: cannot create info struct");
  if (!run_png(&job, scan, row_bytes)) {
    if (job.message.find("truncated") != std::string::npos)
      throw bad_input(name + ": truncated PNG (image file is truncated)");
    throw bad_input(name + ": corrupt PNG: " + job.message);
  }

  // Palette (PLTE) for colour type 3; entries past its end read as Pillow's default grey ramp.
  uint8_t palette[256][3];
  for (int i = 0; i < 256; ++i) palette[i][0] = palette[i][1] = palette[i][2] = static_cast<uint8_t>(i);
  if (ct == 3) {
    png_colorp plte = nullptr;
    int n = 0;
    if (png_get_PLTE(job.png, job.info, &plte, &n) == PNG_INFO_PLTE) {
      for (int i = 0; i < n && i < 256; ++i) {
        palette[i][0] = plte[i].red;
        palette[i][1] = plte[i].green;
        palette[i][2] = plte[i].blue;
      }
    }
  }

  Decoded out;
  out.rgb.width = scan.width;
  out.rgb.height = scan.height;
  out.rgb.pixels.resize(static_cast<size_t>(scan.width) * scan.height * 3);
  const int gray_scale = bd == 1 ? 255 : bd == 2 ? 85 : bd == 4 ? 17 : 1;
  const size_t n = static_cast<size_t>(scan.width) * scan.height;
  const uint8_t* src = job.raw.data();
  uint8_t* dst = out.rgb.pixels.data();
  const int stride = channels * sample_bytes;
  for (size_t i = 0; i < n; ++i, src += stride, dst += 3) {
    switch (ct) {
      case 0: {
        // 16-bit gray opens as mode I and is clamped, not scaled.
        const int v = bd == 16 ? std::min((src[0] << 8) | src[1], 255) : src[0] * gray_scale;
        dst[0] = dst[1] = dst[2] = static_cast<uint8_t>(v);
        break;
      }
      case 3: std::memcpy(dst, palette[src[0]], 3); break;
      case 4: dst[0] = dst[1] = dst[2] = src[0]; break;  // alpha dropped; 16-bit keeps the high byte
      default:  // RGB / RGBA: alpha dropped; 16-bit keeps the high byte
        dst[0] = src[0];
        dst[1] = src[sample_bytes];
        dst[2] = src[2 * sample_bytes];
    }
  }
  out.orientation = png_orientation(scan);
  return out;
}

}  // namespace smolvlm::image_detail
