// WebP through libwebp's animation decoder (as Pillow 9.4 decodes every WebP): first frame, RGBA
// canvas, alpha dropped; EXIF from the demuxer's EXIF chunk.
#include <memory>

#include <webp/decode.h>
#include <webp/demux.h>

#include "core/error.h"
#include "image/decoders.h"

namespace smolvlm::image_detail {

Decoded decode_webp(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  WebPData webp{data, size};
  std::unique_ptr<WebPDemuxer, void (*)(WebPDemuxer*)> demux(WebPDemux(&webp), WebPDemuxDelete);
  if (!demux) throw bad_input(name + ": corrupt or truncated WebP (cannot parse the RIFF container)");
  const int64_t w = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH);
  const int64_t h = WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT);
  check_declared_size(w, h, limits, name);

  Decoded out;
  WebPChunkIterator chunk;
  if (WebPDemuxGetChunk(demux.get(), "EXIF", 1, &chunk)) {
    out.orientation = exif_orientation(chunk.chunk.bytes, chunk.chunk.size);
    WebPDemuxReleaseChunkIterator(&chunk);
  }

  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) throw internal_error("libwebp: version mismatch");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  std::unique_ptr<WebPAnimDecoder, void (*)(WebPAnimDecoder*)> dec(WebPAnimDecoderNew(&webp, &options),
                                                                   WebPAnimDecoderDelete);
  if (!dec) throw bad_input(name + ": corrupt WebP (decoder refused the file)");
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) || !rgba)
    throw bad_input(name + ": corrupt or truncated WebP (cannot decode the first frame)");
  out.rgb.width = w;
  out.rgb.height = h;
  out.rgb.pixels.resize(static_cast<size_t>(w * h * 3));
  for (int64_t i = 0; i < w * h; ++i) {
    out.rgb.pixels[i * 3 + 0] = rgba[i * 4 + 0];
    out.rgb.pixels[i * 3 + 1] = rgba[i * 4 + 1];
    out.rgb.pixels[i * 3 + 2] = rgba[i * 4 + 2];
  }
  return out;
}

}  // namespace smolvlm::image_detail
