// GIF through giflib: the first frame, placed on the logical screen as Pillow 9.4 does (the screen
// grows to hold the frame; pixels outside it take the transparent index when there is one, else 0),
// palette lookup with transparency ignored.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <gif_lib.h>

#include "core/error.h"
#include "image/decoders.h"

namespace smolvlm::image_detail {
namespace {

struct GifSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int read_gif(GifFileType* gif, GifByteType* out, int n) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t avail = src->size - src->pos;
  const size_t take = std::min(avail, static_cast<size_t>(std::max(n, 0)));
  std::memcpy(out, src->data + src->pos, take);
  src->pos += take;
  return static_cast<int>(take);
}

struct GifCloser {
  void operator()(GifFileType* g) const {
    int err = 0;
    DGifCloseFile(g, &err);
  }
};

std::string gif_error(int code) {
  const char* s = GifErrorString(code);
  return s ? s : "unknown giflib error";
}

}  // namespace

Decoded decode_gif(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  GifSource src{data, size, 0};
  int err = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&src, read_gif, &err));
  if (!gif) throw bad_input(name + ": corrupt GIF header: " + gif_error(err));
  int64_t screen_w = gif->SWidth, screen_h = gif->SHeight;
  check_declared_size(screen_w, screen_h, limits, name);

  int transparency = -1;
  GifRecordType type;
  do {
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR)
      throw bad_input(name + ": truncated or corrupt GIF: " + gif_error(gif->Error));
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR)
        throw bad_input(name + ": corrupt GIF extension: " + gif_error(gif->Error));
      if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4) transparency = (ext[1] & 1) ? ext[4] : -1;
      while (ext) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR)
          throw bad_input(name + ": corrupt GIF extension: " + gif_error(gif->Error));
      }
    } else if (type == TERMINATE_RECORD_TYPE) {
      throw bad_input(name + ": GIF contains no image");
    }
  } while (type != IMAGE_DESC_RECORD_TYPE);

  if (DGifGetImageDesc(gif.get()) == GIF_ERROR) {
    // giflib fills the frame rectangle before reading further: apply the size guard first, as
    // Pillow does while opening.
    if (gif->Image.Width > 0 && gif->Image.Height > 0)
      check_declared_size(std::max<int64_t>(screen_w, int64_t{gif->Image.Left} + gif->Image.Width),
                          std::max<int64_t>(screen_h, int64_t{gif->Image.Top} + gif->Image.Height), limits, name);
    throw bad_input(name + ": corrupt GIF image descriptor: " + gif_error(gif->Error));
  }
  const GifImageDesc& desc = gif->Image;
  const int64_t fx = desc.Left, fy = desc.Top, fw = desc.Width, fh = desc.Height;
  if (fw <= 0 || fh <= 0) throw bad_input(name + ": GIF frame has an empty size");
  const int64_t w = std::max(screen_w, fx + fw), h = std::max(screen_h, fy + fh);
  check_declared_size(w, h, limits, name);

  // Colours: the frame's local table, else the global one; without either Pillow opens mode L
  // (index = grey level), which the grey ramp below reproduces.
  uint8_t palette[256][3];
  for (int i = 0; i < 256; ++i) palette[i][0] = palette[i][1] = palette[i][2] = static_cast<uint8_t>(i);
  const ColorMapObject* cmap = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
  if (cmap) {
    for (int i = 0; i < cmap->ColorCount && i < 256; ++i) {
      palette[i][0] = cmap->Colors[i].Red;
      palette[i][1] = cmap->Colors[i].Green;
      palette[i][2] = cmap->Colors[i].Blue;
    }
  }

  std::vector<uint8_t> frame(static_cast<size_t>(fw * fh));
  auto read_row = [&](int64_t row) {
    if (DGifGetLine(gif.get(), frame.data() + row * fw, static_cast<int>(fw)) == GIF_ERROR)
      throw bad_input(name + ": truncated or corrupt GIF image data: " + gif_error(gif->Error));
  };
  if (desc.Interlace) {
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass)
      for (int64_t row = start[pass]; row < fh; row += step[pass]) read_row(row);
  } else {
    for (int64_t row = 0; row < fh; ++row) read_row(row);
  }

  Decoded out;
  out.rgb.width = w;
  out.rgb.height = h;
  out.rgb.pixels.resize(static_cast<size_t>(w * h * 3));
  const uint8_t fill = static_cast<uint8_t>(transparency >= 0 ? transparency : 0);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const bool inside = x >= fx && x < fx + fw && y >= fy && y < fy + fh;
      const uint8_t idx = inside ? frame[(y - fy) * fw + (x - fx)] : fill;
      std::memcpy(&out.rgb.pixels[(y * w + x) * 3], palette[idx], 3);
    }
  }
  return out;
}

}  // namespace smolvlm::image_detail
