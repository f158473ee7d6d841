#include "image/idefics3.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"
#include "image/buffers.h"
#include "image/decoders.h"
#include "image/resample_rows.h"
#include "kernels/cpu.h"

namespace smolvlm {
namespace {

constexpr int64_t kMaxImageSizeClamp = 4096;  // HF's MAX_IMAGE_SIZE upper bound for the first resize

inline int mul_div255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

// Pixels held elsewhere: the decoded image, or one of the intermediate images.
struct View {
  const uint8_t* p = nullptr;
  int64_t w = 0, h = 0;
  int ch = 0;
};

View view_of(const U8Image& im) { return {im.pixels.data(), im.width, im.height, im.channels}; }

U8Image copy_of(const View& v) {
  return U8Image{v.w, v.h, v.ch, std::vector<uint8_t>(v.p, v.p + v.w * v.h * v.ch)};
}

// Pillow resizes RGBA through premultiplied RGBa and back.
U8Image resize_rgba(const View& in, int64_t w, int64_t h, ResampleFilter filter) {
  if (filter == ResampleFilter::Nearest) return resize_u8(in.p, in.w, in.h, in.ch, w, h, filter);
  U8Image pre = copy_of(in);
  for (size_t i = 0; i < pre.pixels.size(); i += 4) {
    const int a = pre.pixels[i + 3];
    for (int c = 0; c < 3; ++c) pre.pixels[i + c] = static_cast<uint8_t>(mul_div255(pre.pixels[i + c], a));
  }
  U8Image out = resize_u8(pre, w, h, filter);
  for (size_t i = 0; i < out.pixels.size(); i += 4) {
    const int a = out.pixels[i + 3];
    if (a == 0 || a == 255) continue;
    for (int c = 0; c < 3; ++c) out.pixels[i + c] = static_cast<uint8_t>(std::min(255, 255 * out.pixels[i + c] / a));
  }
  return out;
}

// HF's `resize`: a PIL image of the array's mode (L, RGB or RGBA) resized with Pillow. Returns false
// (and leaves `out` alone) when the size does not change: the pixels are then the input's.
bool hf_resize(const View& in, int64_t h, int64_t w, ResampleFilter filter, U8Image& out) {
  if (h < 1 || w < 1)
    throw bad_input("image preprocessing: computed an empty target size " + std::to_string(w) + "x" + std::to_string(h));
  // HF opens an array whose last axis is 1 as mode P, which Pillow resizes with NEAREST and whose
  // RGB conversion depends on a default palette; only reachable through the channels-first quirk.
  if (in.w == 1 && in.ch != 3 && in.w != w)
    throw unsupported("image preprocessing: a 1-pixel-wide intermediate in HF's channels-first layout is not supported");
  if (w == in.w && h == in.h) return false;
  out = in.ch == 4 ? resize_rgba(in, w, h, filter) : resize_u8(in.p, in.w, in.h, in.ch, w, h, filter);
  return true;
}

// HF's convert_to_rgb (composite over opaque white) of a w x h region (rows `stride` bytes apart),
// written as 3 planes of w x h (channels-first).
void region_to_rgb_chw(const uint8_t* p, int64_t stride, int64_t w, int64_t h, int ch, uint8_t* out) {
  const int64_t n = w * h;
  uint8_t* r_plane = out;
  uint8_t* g_plane = out + n;
  uint8_t* b_plane = out + 2 * n;
  const KernelPath path = active_kernel_path();
  [[maybe_unused]] const bool avx2 = path == KernelPath::Avx2 || path == KernelPath::Avx512;
  for (int64_t y = 0; y < h; ++y, p += stride) {
    const int64_t o = y * w;
#if SMOLVLM_HAVE_X86_KERNELS
    if (ch == 3 && avx2) {
      resample_detail::rgb_to_planes_avx2(p, w, r_plane + o, g_plane + o, b_plane + o);
      continue;
    }
#endif
    if (ch == 3) {
      for (int64_t x = 0; x < w; ++x) {
        r_plane[o + x] = p[3 * x];
        g_plane[o + x] = p[3 * x + 1];
        b_plane[o + x] = p[3 * x + 2];
      }
    } else if (ch == 1) {
      std::memcpy(r_plane + o, p, static_cast<size_t>(w));
      std::memcpy(g_plane + o, p, static_cast<size_t>(w));
      std::memcpy(b_plane + o, p, static_cast<size_t>(w));
    } else {  // RGBA over white, Pillow's alpha_composite arithmetic
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t* s = p + 4 * x;
        const uint32_t a = s[3];
        uint8_t rgb[3];
        if (a == 0) {
          rgb[0] = rgb[1] = rgb[2] = 255;
        } else {
          constexpr uint32_t kBits = 7;
          const uint32_t blend = 255 * (255 - a);
          const uint32_t outa255 = a * 255 + blend;
          const uint32_t coef1 = a * 255 * 255 * (1u << kBits) / outa255;
          const uint32_t coef2 = 255 * (1u << kBits) - coef1;
          for (int c = 0; c < 3; ++c) {
            const uint32_t tmp = s[c] * coef1 + 255 * coef2 + (0x80u << kBits);
            rgb[c] = static_cast<uint8_t>(((((tmp >> 8) + tmp) >> 8)) >> kBits);
          }
        }
        r_plane[o + x] = rgb[0];
        g_plane[o + x] = rgb[1];
        b_plane[o + x] = rgb[2];
      }
    }
  }
}

// The [H, W, 3] array as HF sees it: channels-last normally; for heights 1, 3 or 4 HF infers
// channels-first, i.e. an image of H channels, W rows and 3 columns.
U8Image hf_input_array(const RgbImage& img, bool& quirk) {
  quirk = img.height == 1 || img.height == 3 || img.height == 4;
  if (!quirk) return U8Image{img.width, img.height, 3, img.pixels};
  const int64_t C = img.height, H = img.width, W = 3;
  U8Image out{W, H, static_cast<int>(C), std::vector<uint8_t>(img.pixels.size())};
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) out.pixels[(y * W + x) * C + c] = img.pixels[(c * H + y) * W + x];
  return out;
}

void validate_config(const ImageProcessorConfig& cfg) {
  if (cfg.max_image_size < 1 || cfg.max_image_size > 16384)
    throw bad_input("preprocessor config: max_image_size.longest_edge must be in 1..16384, got " +
                    std::to_string(cfg.max_image_size));
  if (cfg.do_resize && (cfg.longest_edge < 1 || cfg.longest_edge > 65536))
    throw bad_input("preprocessor config: size.longest_edge must be in 1..65536, got " + std::to_string(cfg.longest_edge));
  if (cfg.do_rescale && !std::isfinite(cfg.rescale_factor))
    throw bad_input("preprocessor config: rescale_factor must be finite");
  for (int c = 0; c < 3; ++c)
    if (cfg.do_normalize && cfg.image_std[c] == 0.0f)
      throw bad_input("preprocessor config: image_std must not be 0");
}

PreprocessedImage finish_preprocess(View current, bool quirk, const ImageProcessorConfig& cfg, bool split,
                                    ResampleFilter filter, Idefics3Trace* trace);

}  // namespace

std::pair<int64_t, int64_t> idefics3_longest_edge_size(int64_t height, int64_t width, int64_t longest_edge) {
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  int64_t h = height, w = width;
  if (w >= h) {
    w = longest_edge;
    h = static_cast<int64_t>(static_cast<double>(w) / aspect);
    if (h % 2 != 0) h += 1;
  } else {
    h = longest_edge;
    w = static_cast<int64_t>(static_cast<double>(h) * aspect);
    if (w % 2 != 0) w += 1;
  }
  h = std::max<int64_t>(h, 1);
  w = std::max<int64_t>(w, 1);
  // HF then scales down below MAX_IMAGE_SIZE (never triggers for longest_edge <= 4096).
  const double aspect2 = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h && w > kMaxImageSizeClamp) {
    w = kMaxImageSizeClamp;
    h = static_cast<int64_t>(static_cast<double>(w) / aspect2);
  } else if (h > w && h > kMaxImageSizeClamp) {
    h = kMaxImageSizeClamp;
    w = static_cast<int64_t>(static_cast<double>(h) * aspect2);
  }
  return {std::max<int64_t>(h, 1), std::max<int64_t>(w, 1)};
}

std::pair<int64_t, int64_t> idefics3_vision_encoder_size(int64_t height, int64_t width, int64_t m) {
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  auto ceil_mult = [m](double v) { return static_cast<int64_t>(std::ceil(v / static_cast<double>(m))) * m; };
  int64_t h = height, w = width;
  if (w >= h) {
    w = ceil_mult(static_cast<double>(w));
    h = static_cast<int64_t>(static_cast<double>(w) / aspect);
    h = ceil_mult(static_cast<double>(h));
  } else {
    h = ceil_mult(static_cast<double>(h));
    w = static_cast<int64_t>(static_cast<double>(h) * aspect);
    w = ceil_mult(static_cast<double>(w));
  }
  return {h, w};
}

PreprocessedImage preprocess_idefics3(const RgbImage& image, const ImageProcessorConfig& cfg,
                                      std::optional<bool> do_split, Idefics3Trace* trace) {
  if (image.width < 1 || image.height < 1 ||
      static_cast<int64_t>(image.pixels.size()) != image.width * image.height * 3)
    throw bad_input("image preprocessing: invalid RGB image " + std::to_string(image.width) + "x" +
                    std::to_string(image.height));
  validate_config(cfg);
  const ResampleFilter filter = resample_filter_from_pil(cfg.resample);
  const bool split = do_split.value_or(cfg.do_image_splitting);

  // `current` views the image at each stage; `quirk_array`, `resized` (and later `encoder`, `global`)
  // own the intermediates (the decoded pixels are not copied when HF's layout is the usual one).
  bool quirk = false;
  U8Image quirk_array, resized;
  View current{image.pixels.data(), image.width, image.height, 3};
  if (image.height == 1 || image.height == 3 || image.height == 4) {
    quirk_array = hf_input_array(image, quirk);
    current = view_of(quirk_array);
  }
  if (cfg.do_resize) {
    const auto [h, w] = idefics3_longest_edge_size(current.h, current.w, cfg.longest_edge);
    if (hf_resize(current, h, w, filter, resized)) current = view_of(resized);
  }
  return finish_preprocess(current, quirk, cfg, split, filter, trace);
}

namespace {

// What follows the longest-edge resize: HF's split into tiles plus the global image (or the squashed
// image alone), channels-first u8 tiles and normalized pixel_values.
PreprocessedImage finish_preprocess(View current, bool quirk, const ImageProcessorConfig& cfg, bool split,
                                    ResampleFilter filter, Idefics3Trace* trace) {
  const int64_t M = cfg.max_image_size;
  U8Image encoder, global;
  if (trace) {
    trace->channels_first_quirk = quirk;
    trace->resized = copy_of(current);
  }

  PreprocessedImage out;
  out.tile_size = M;
  const size_t plane = static_cast<size_t>(M * M);
  View global_view = current;
  if (split) {
    const auto [h2, w2] = idefics3_vision_encoder_size(current.h, current.w, M);
    if (hf_resize(current, h2, w2, filter, encoder)) current = view_of(encoder);
    if (trace) trace->vision_encoder = copy_of(current);
    global_view = current;
    if (current.h > M || current.w > M) {
      out.rows = (current.h + M - 1) / M;
      out.cols = (current.w + M - 1) / M;
      const int64_t th = (current.h + out.rows - 1) / out.rows, tw = (current.w + out.cols - 1) / out.cols;
      // The vision-encoder size is a multiple of M, so every crop is M x M.
      if (th != M || tw != M || out.rows * th != current.h || out.cols * tw != current.w)
        throw internal_error("image preprocessing: tile is not max_image_size square");
      out.num_tiles = out.rows * out.cols + 1;
      image_detail::resize_pixels(out.tiles_u8, static_cast<size_t>(out.num_tiles) * 3 * plane);
      const int64_t stride = current.w * current.ch;
      for (int64_t r = 0; r < out.rows; ++r)
        for (int64_t c = 0; c < out.cols; ++c)
          region_to_rgb_chw(current.p + (r * th * current.w + c * tw) * current.ch, stride, M, M, current.ch,
                            &out.tiles_u8[static_cast<size_t>(r * out.cols + c) * 3 * plane]);
      if (hf_resize(current, M, M, filter, global)) global_view = view_of(global);
    }
  }
  if (!split && hf_resize(current, M, M, filter, global)) global_view = view_of(global);
  if (out.num_tiles == 0) {
    out.num_tiles = 1;
    out.tiles_u8.resize(3 * plane);
  }
  if (trace) trace->global = copy_of(global_view);
  if (global_view.w != M || global_view.h != M)
    throw internal_error("image preprocessing: tile is not max_image_size square");
  region_to_rgb_chw(global_view.p, global_view.w * global_view.ch, M, M, global_view.ch,
                    &out.tiles_u8[static_cast<size_t>(out.num_tiles - 1) * 3 * plane]);

  // rescale: float32(double(v) * factor); normalize: (x - mean) / std in float32. A function of
  // (value, channel), so one table per channel.
  float lut[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = cfg.do_rescale ? static_cast<float>(static_cast<double>(v) * cfg.rescale_factor) : static_cast<float>(v);
      if (cfg.do_normalize) x = (x - cfg.image_mean[c]) / cfg.image_std[c];
      lut[c][v] = x;
    }
  }
  image_detail::resize_pixels(out.pixel_values, out.tiles_u8.size());
  for (size_t p = 0; p < out.tiles_u8.size() / plane; ++p) {
    const float* t = lut[p % 3];
    const uint8_t* src = &out.tiles_u8[p * plane];
    float* dst = &out.pixel_values[p * plane];
    for (size_t i = 0; i < plane; ++i) dst[i] = t[src[i]];
  }
  return out;
}

// Rows a decoder has finished, for a resize running on another thread.
class RowGate {
 public:
  struct Abandoned {};
  void publish(int64_t rows) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = rows;
    }
    cv_.notify_one();
  }
  void abandon() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandoned_ = true;
    }
    cv_.notify_one();
  }
  void wait(int64_t rows) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_ >= rows || abandoned_; });
    if (ready_ < rows) throw Abandoned{};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t ready_ = 0;
  bool abandoned_ = false;
};

}  // namespace

PreprocessedImage load_and_preprocess_idefics3(const uint8_t* data, size_t size, const std::string& name,
                                               const ImageProcessorConfig& cfg, std::optional<bool> do_split,
                                               const DecodeLimits& limits) {
  // Anything but a JPEG, or no second thread: the two steps one after the other.
  if (!cfg.do_resize || resize_threads() < 2 || limits.max_pixels < 1 || sniff_image_format(data, size) != "jpeg")
    return preprocess_idefics3(load_image_from_memory(data, size, name, limits), cfg, do_split);
  validate_config(cfg);
  const ResampleFilter filter = resample_filter_from_pil(cfg.resample);
  const bool split = do_split.value_or(cfg.do_image_splitting);

  // The longest-edge resize starts on a second thread as soon as the size is known and follows the
  // decoder down the image, unless the image needs EXIF rotation first or is HF's channels-first case.
  RowGate gate;
  std::vector<uint8_t> pixels;  // the decoded image; outlives the worker on every path
  std::thread worker;
  U8Image resized;
  std::exception_ptr worker_error;
  bool overlapped = false;
  image_detail::JpegRowSink sink;
  sink.pixels = &pixels;
  sink.on_start = [&](const uint8_t* base, int64_t w, int64_t h, int orientation) {
    if ((orientation >= 2 && orientation <= 8) || h == 1 || h == 3 || h == 4) return;
    const auto [th, tw] = idefics3_longest_edge_size(h, w, cfg.longest_edge);
    if (th == h && tw == w) return;
    overlapped = true;
    worker = std::thread([&, base, w, h, th = th, tw = tw, path = active_kernel_path()] {
      try {
        const ScopedKernelPath scope(path);  // the resize computes as the decoding thread would
        resized = resize_u8_streaming(base, w, h, 3, tw, th, filter, [&](int64_t rows) { gate.wait(rows); });
      } catch (...) {
        worker_error = std::current_exception();
      }
    });
  };
  sink.on_rows = [&](int64_t rows) { gate.publish(rows); };
  image_detail::Decoded decoded;
  try {
    decoded = image_detail::decode_jpeg(data, size, name, limits, &sink);
  } catch (...) {
    gate.abandon();
    if (worker.joinable()) worker.join();
    throw;
  }
  if (worker.joinable()) worker.join();
  decoded.rgb.pixels = std::move(pixels);
  if (!overlapped)
    return preprocess_idefics3(image_detail::apply_orientation(std::move(decoded.rgb), decoded.orientation), cfg,
                               do_split);
  if (worker_error) std::rethrow_exception(worker_error);
  return finish_preprocess(view_of(resized), false, cfg, split, filter, nullptr);
}

PreprocessedImage load_and_preprocess_idefics3(const std::filesystem::path& path, const ImageProcessorConfig& cfg,
                                               std::optional<bool> do_split, const DecodeLimits& limits) {
  const std::vector<uint8_t> bytes = image_detail::read_image_file(path);
  return load_and_preprocess_idefics3(bytes.data(), bytes.size(), path.string(), cfg, do_split, limits);
}

}  // namespace smolvlm
