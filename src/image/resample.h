// Pillow-exact 8-bit resampling (Image.resize of Pillow 9.4 with box = whole image, no reducing_gap).
// Convolution filters are separable: per axis the weights are computed once in double precision,
// turned into 22-bit fixed point, applied horizontally first into a uint8 intermediate (only the rows
// the vertical pass reads), then vertically. An axis whose size does not change is not resampled; when
// neither changes the result is a copy. Channels are independent and stay interleaved.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace smolvlm {

// Values are Pillow's filter constants (what `resample` holds in preprocessor_config.json).
enum class ResampleFilter : int { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

// Maps a PIL resample id (0..5) to the filter; throws Error(BadInput) for anything else.
ResampleFilter resample_filter_from_pil(int64_t pil_id);
const char* resample_filter_name(ResampleFilter filter);  // "nearest", "lanczos", ...

// An 8-bit image with `channels` interleaved samples per pixel, row-major [height, width, channels].
struct U8Image {
  int64_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

// Resizes like Pillow's Image.resize on mode L (1 channel) or RGB (3 channels); other channel
// counts are resized channel by channel with the same arithmetic. Sizes must be >= 1: Error(BadInput).
U8Image resize_u8(const U8Image& in, int64_t out_width, int64_t out_height, ResampleFilter filter);
// The same for pixels held elsewhere ([height, width, channels] row-major; not copied).
U8Image resize_u8(const uint8_t* pixels, int64_t width, int64_t height, int channels, int64_t out_width,
                  int64_t out_height, ResampleFilter filter);

// resize_u8 of an image whose rows are still arriving (a decoder filling `pixels` top to bottom, the
// whole buffer allocated): `wait(n)` is called before input rows [0, n) are read and returns once they
// are in place (it may throw to abandon the resize). Runs on the calling thread only; same bytes.
U8Image resize_u8_streaming(const uint8_t* pixels, int64_t width, int64_t height, int channels, int64_t out_width,
                            int64_t out_height, ResampleFilter filter, const std::function<void(int64_t)>& wait);

// Threads a resize started on the calling thread may use: its rows are split between them (the bytes
// never depend on the split). The default is the machine's hardware threads, at most 4; n <= 0
// restores the default. The setting belongs to the calling thread, so requests running on different
// threads never change each other's.
void set_resize_threads(int n);
int resize_threads();

// The calling thread's resize threads set to n for a scope, the previous setting restored after.
class ScopedResizeThreads {
 public:
  explicit ScopedResizeThreads(int n);
  ~ScopedResizeThreads();
  ScopedResizeThreads(const ScopedResizeThreads&) = delete;
  ScopedResizeThreads& operator=(const ScopedResizeThreads&) = delete;

 private:
  int previous_;
};

}  // namespace smolvlm
