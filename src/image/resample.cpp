#include "image/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "image/buffers.h"
#include "image/resample_rows.h"
#include "kernels/cpu.h"

namespace smolvlm {
namespace {

using resample_detail::clip8;
using resample_detail::kPrecisionBits;

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  // Pillow writes the window constants as float literals (0.54f, 0.46f); their float values matter.
  return std::sin(x) / x * (static_cast<double>(0.54f) + static_cast<double>(0.46f) * std::cos(x));
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double lanczos_filter(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0; }

struct FilterDef {
  double (*fn)(double);
  double support;
};

FilterDef filter_def(ResampleFilter f) {
  switch (f) {
    case ResampleFilter::Box: return {box_filter, 0.5};
    case ResampleFilter::Bilinear: return {bilinear_filter, 1.0};
    case ResampleFilter::Hamming: return {hamming_filter, 1.0};
    case ResampleFilter::Bicubic: return {bicubic_filter, 2.0};
    case ResampleFilter::Lanczos: return {lanczos_filter, 3.0};
    case ResampleFilter::Nearest: break;
  }
  throw internal_error("resample: nearest is not a convolution filter");
}

// Fixed-point weights of one axis: output i reads inputs [first[i], first[i] + count[i]) with
// weights coeffs[i * taps + j].
struct AxisCoeffs {
  int taps = 0;
  std::vector<int32_t> first, count, coeffs;
};

AxisCoeffs axis_coeffs(int64_t in_size, int64_t out_size, const FilterDef& filter) {
  // Pillow computes on float box coordinates (0, in_size); sizes are exact in float.
  const double scale = static_cast<double>(static_cast<float>(in_size)) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = filter.support * filterscale;
  AxisCoeffs ax;
  ax.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  ax.first.resize(out_size);
  ax.count.resize(out_size);
  ax.coeffs.assign(static_cast<size_t>(out_size) * ax.taps, 0);
  std::vector<double> w(ax.taps);
  const double ss = 1.0 / filterscale;
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    int64_t lo = static_cast<int64_t>(center - support + 0.5);
    if (lo < 0) lo = 0;
    int64_t hi = static_cast<int64_t>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int64_t n = std::max<int64_t>(hi - lo, 0);
    if (n > ax.taps) throw internal_error("resample: tap count exceeds the kernel size");
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      w[j] = filter.fn((static_cast<double>(j + lo) - center + 0.5) * ss);
      sum += w[j];
    }
    int32_t* k = &ax.coeffs[static_cast<size_t>(i) * ax.taps];
    for (int64_t j = 0; j < n; ++j) {
      const double v = sum != 0.0 ? w[j] / sum : w[j];
      k[j] = static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    ax.first[i] = static_cast<int32_t>(lo);
    ax.count[i] = static_cast<int32_t>(n);
  }
  return ax;
}

// Rows [row0, row0 + rows) of `in`, resampled along x into `out` (rows x out_w x C).
template <int C>
void horizontal_pass(const uint8_t* in, int64_t in_w, int64_t row0, int64_t rows, const AxisCoeffs& ax,
                     int64_t out_w, uint8_t* out, int channels_runtime) {
  const int ch = C > 0 ? C : channels_runtime;
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* src = in + (row0 + y) * in_w * ch;
    uint8_t* dst = out + y * out_w * ch;
    for (int64_t x = 0; x < out_w; ++x) {
      const int32_t* k = &ax.coeffs[static_cast<size_t>(x) * ax.taps];
      const uint8_t* s = src + static_cast<int64_t>(ax.first[x]) * ch;
      const int n = ax.count[x];
      if constexpr (C == 3) {
        int32_t a0 = 1 << (kPrecisionBits - 1), a1 = a0, a2 = a0;
        for (int j = 0; j < n; ++j) {
          a0 += s[j * 3 + 0] * k[j];
          a1 += s[j * 3 + 1] * k[j];
          a2 += s[j * 3 + 2] * k[j];
        }
        dst[x * 3 + 0] = clip8(a0);
        dst[x * 3 + 1] = clip8(a1);
        dst[x * 3 + 2] = clip8(a2);
      } else if constexpr (C == 1) {
        int32_t a = 1 << (kPrecisionBits - 1);
        for (int j = 0; j < n; ++j) a += s[j] * k[j];
        dst[x] = clip8(a);
      } else {
        for (int c = 0; c < ch; ++c) {
          int32_t a = 1 << (kPrecisionBits - 1);
          for (int j = 0; j < n; ++j) a += s[j * ch + c] * k[j];
          dst[x * ch + c] = clip8(a);
        }
      }
    }
  }
}

// The AVX2 kernels run on both x86 vector paths (avx2, avx512); the path is the kernels' run-time
// choice (SMOLVLM_KERNELS / set_kernel_path), so tests can force each one. Other builds resample with
// the portable loops (the same integers, so the same bytes).
bool use_avx2() {
  const KernelPath p = active_kernel_path();
  return SMOLVLM_HAVE_X86_KERNELS && (p == KernelPath::Avx2 || p == KernelPath::Avx512);
}

thread_local int t_resize_threads = 0;  // 0: the default

// Calls fn(begin, end) over contiguous parts of [0, n), concurrently when there is enough work
// (`bytes_per_item` output bytes each); the calling thread runs the first part.
template <class F>
void parallel_rows(int64_t n, int64_t bytes_per_item, F&& fn) {
  constexpr int64_t kMinBytesPerPart = 128 * 1024;
  const int64_t parts = std::min<int64_t>(resize_threads(), std::max<int64_t>(1, n * bytes_per_item / kMinBytesPerPart));
  if (parts <= 1 || n < 2) return fn(int64_t{0}, n);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  const KernelPath path = active_kernel_path();  // the helper threads compute as the calling one
  auto part = [&](int64_t i) {
    try {
      const ScopedKernelPath scope(path);
      fn(n * i / parts, n * (i + 1) / parts);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  for (int64_t i = 1; i < parts; ++i) threads.emplace_back(part, i);
  part(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Pillow's NEAREST: an affine map sampled at pixel centres, positions accumulated in double.
std::vector<int64_t> nearest_index(int64_t in_size, int64_t out_size) {
  const double step = static_cast<double>(static_cast<float>(in_size)) / static_cast<double>(out_size);
  std::vector<int64_t> idx(out_size);
  double pos = step * 0.5;
  for (int64_t i = 0; i < out_size; ++i) {
    int64_t v = pos < 0.0 ? -1 : static_cast<int64_t>(pos);
    idx[i] = std::clamp<int64_t>(v, 0, in_size - 1);
    pos += step;
  }
  return idx;
}

U8Image resize_nearest(const uint8_t* in, int64_t in_w, int64_t in_h, int ch, int64_t out_w, int64_t out_h) {
  const auto xi = nearest_index(in_w, out_w);
  const auto yi = nearest_index(in_h, out_h);
  U8Image out{out_w, out_h, ch, std::vector<uint8_t>(static_cast<size_t>(out_w * out_h * ch))};
  for (int64_t y = 0; y < out_h; ++y) {
    const uint8_t* src = in + yi[y] * in_w * ch;
    uint8_t* dst = out.pixels.data() + y * out_w * ch;
    for (int64_t x = 0; x < out_w; ++x) std::memcpy(dst + x * ch, src + xi[x] * ch, ch);
  }
  return out;
}

// The horizontal pass of one resize, prepared once: the coefficients in the AVX2 kernel's layout
// when that kernel applies (3 or 4 channels on a vector path).
class HorizontalPass {
 public:
  HorizontalPass(const AxisCoeffs& ax, int ch, int64_t in_w, int64_t out_w, bool avx2)
      : ax_(ax), ch_(ch), in_w_(in_w), out_w_(out_w) {
    if (!avx2 || (ch != 3 && ch != 4)) return;
    int max_count = 1;
    for (int64_t x = 0; x < out_w; ++x) max_count = std::max(max_count, ax.count[x]);
    for (int32_t c : ax.coeffs)
      if (c < -(1 << 30) || c >= (1 << 30)) return;  // hi would not fit int16 (never for Pillow's filters)
    const int groups = (max_count + 3) / 4;
    coeffs16_.assign(static_cast<size_t>(out_w) * groups * 32, 0);
    int64_t read_end = 0;
    for (int64_t x = 0; x < out_w; ++x) {
      int16_t* v = &coeffs16_[static_cast<size_t>(x) * groups * 32];
      for (int j = 0; j < ax.count[x]; ++j) {
        const int32_t c = ax.coeffs[static_cast<size_t>(x) * ax.taps + j];
        // Tap j: group j / 4, lane (j % 4) / 2, slot j % 2 of each (tap, tap + 1) int16 pair.
        int16_t* g = v + (j / 4) * 32 + ((j % 4) / 2) * 8 + (j % 2);
        for (int m = 0; m < 4; ++m) {
          g[2 * m] = static_cast<int16_t>(c >> 15);          // hi
          g[16 + 2 * m] = static_cast<int16_t>(c & 0x7FFF);  // lo, in [0, 2^15)
        }
      }
      read_end = std::max<int64_t>(read_end, (static_cast<int64_t>(ax.first[x]) + 4 * (groups - 1)) * ch + 16);
    }
    k_.channels = ch;
    k_.groups = groups;
    k_.out_w = out_w;
    k_.read_end = read_end;
    k_.first = ax.first.data();
    k_.coeffs = coeffs16_.data();
  }

  // Whole input rows past the last one used that the vector kernel reads (with zero weights).
  int64_t lookahead_rows() const {
    const int64_t row_bytes = in_w_ * ch_;
    return k_.channels == 0 ? 0 : std::max<int64_t>(0, (k_.read_end - row_bytes + row_bytes - 1) / row_bytes);
  }

  // Rows [row0, row0 + rows) of `in` (in_h rows in all) into `out` (rows x out_w x ch).
  void run(const uint8_t* in, [[maybe_unused]] int64_t in_h, int64_t row0, int64_t rows, uint8_t* out) const {
    if (k_.channels == 0) {
      if (ch_ == 3) return horizontal_pass<3>(in, in_w_, row0, rows, ax_, out_w_, out, ch_);
      if (ch_ == 1) return horizontal_pass<1>(in, in_w_, row0, rows, ax_, out_w_, out, ch_);
      return horizontal_pass<0>(in, in_w_, row0, rows, ax_, out_w_, out, ch_);
    }
#if SMOLVLM_HAVE_X86_KERNELS  // k_ is set up only on the x86 vector paths
    // The kernel reads k_.read_end bytes from each row start: rows too near the end of the buffer go
    // through a zero-padded copy.
    const int64_t row_bytes = in_w_ * ch_, total = in_h * row_bytes;
    const int64_t safe_rows = total >= k_.read_end ? (total - k_.read_end) / row_bytes + 1 : 0;
    const int64_t direct = std::clamp<int64_t>(safe_rows - row0, 0, rows);
    resample_detail::horizontal_rows_avx2(k_, in + row0 * row_bytes, row_bytes, direct, out);
    if (direct == rows) return;
    std::vector<uint8_t> padded(static_cast<size_t>(std::max(k_.read_end, row_bytes)), 0);
    for (int64_t y = direct; y < rows; ++y) {
      std::memcpy(padded.data(), in + (row0 + y) * row_bytes, static_cast<size_t>(row_bytes));
      resample_detail::horizontal_rows_avx2(k_, padded.data(), row_bytes, 1, out + y * out_w_ * ch_);
    }
#endif
  }

 private:
  const AxisCoeffs& ax_;
  int ch_;
  int64_t in_w_, out_w_;
  std::vector<int16_t> coeffs16_;
  resample_detail::HorizontalAvx2 k_;
};

// A convolution resize computed by bands of output rows: the horizontal pass runs on just the input
// rows a band reads, kept in a small strip buffer that slides down the image, then the vertical pass
// runs on the strip. Bands are independent (threads take different ones), and a band can first wait
// for input rows that are still being written (a decoder filling the image top to bottom).
class Resizer {
 public:
  Resizer(int64_t in_w, int64_t in_h, int ch, int64_t out_w, int64_t out_h, ResampleFilter filter)
      : in_w_(in_w), in_h_(in_h), ch_(ch), out_w_(out_w), avx2_(use_avx2()) {
    const FilterDef def = filter_def(filter);
    need_h_ = out_w != in_w;
    need_v_ = out_h != in_h;
    if (need_h_) {
      horiz_ = axis_coeffs(in_w, out_w, def);
      hpass_ = std::make_unique<HorizontalPass>(horiz_, ch, in_w, out_w, avx2_);
    }
    if (need_v_) vert_ = axis_coeffs(in_h, out_h, def);
  }

  // How many input rows from the top output rows [0, y_end) depend on (Pillow's windows only move down).
  int64_t input_rows_for(int64_t y_end) const {
    if (y_end <= 0) return 0;
    int64_t n = need_v_ ? static_cast<int64_t>(vert_.first[y_end - 1]) + vert_.count[y_end - 1] : y_end;
    if (need_h_) n += hpass_->lookahead_rows();  // rows the vector kernel reads past (times zero)
    return std::min(n, in_h_);
  }

  // Output rows [y0, y1) into `out` (the whole output image). `wait`, when set, is called with a row
  // count before those input rows are read.
  void run(const uint8_t* in, int64_t y0, int64_t y1, uint8_t* out, const std::function<void(int64_t)>* wait) const {
    constexpr int64_t kBand = 16;
    const int64_t out_row = out_w_ * ch_, in_row = in_w_ * ch_;
#if SMOLVLM_HAVE_X86_KERNELS
    auto* vfn = avx2_ ? resample_detail::convolve_rows_avx2 : resample_detail::convolve_rows;
#else
    auto* vfn = resample_detail::convolve_rows;
#endif
    std::vector<uint8_t> strip;
    int64_t s0 = 0, s1 = 0;  // horizontal rows [s0, s1) held in `strip`
    for (int64_t y = y0; y < y1; y += kBand) {
      const int64_t e = std::min(y + kBand, y1);
      if (wait) (*wait)(input_rows_for(e));
      if (!need_v_) {
        hpass_->run(in, in_h_, y, e - y, out + y * out_row);
        continue;
      }
      const int32_t* first = vert_.first.data() + y;
      const int32_t* count = vert_.count.data() + y;
      const int32_t* coeffs = vert_.coeffs.data() + y * vert_.taps;
      if (!need_h_) {
        vfn(in, in_row, first, count, coeffs, vert_.taps, 0, e - y, out + y * out_row);
        continue;
      }
      const int64_t need0 = vert_.first[y];
      const int64_t need1 = static_cast<int64_t>(vert_.first[e - 1]) + vert_.count[e - 1];
      const size_t bytes = static_cast<size_t>((need1 - need0) * out_row);
      if (strip.size() < bytes) strip.resize(bytes);
      int64_t from = need0;  // rows the previous band already resampled move to the front
      if (need0 < s1 && need0 >= s0) {
        std::memmove(strip.data(), strip.data() + (need0 - s0) * out_row, static_cast<size_t>((s1 - need0) * out_row));
        from = s1;
      }
      if (need1 > from) hpass_->run(in, in_h_, from, need1 - from, strip.data() + (from - need0) * out_row);
      s0 = need0;
      s1 = std::max(need1, from);
      vfn(strip.data(), out_row, first, count, coeffs, vert_.taps, need0, e - y, out + y * out_row);
    }
  }

 private:
  int64_t in_w_, in_h_;
  int ch_;
  int64_t out_w_;
  bool avx2_;
  bool need_h_ = false, need_v_ = false;
  AxisCoeffs horiz_, vert_;
  std::unique_ptr<HorizontalPass> hpass_;
};

}  // namespace

void set_resize_threads(int n) { t_resize_threads = std::max(n, 0); }

ScopedResizeThreads::ScopedResizeThreads(int n) : previous_(t_resize_threads) { set_resize_threads(n); }

ScopedResizeThreads::~ScopedResizeThreads() { t_resize_threads = previous_; }

int resize_threads() {
  if (t_resize_threads > 0) return t_resize_threads;
  static const int hw = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  return hw;
}

ResampleFilter resample_filter_from_pil(int64_t pil_id) {
  if (pil_id < 0 || pil_id > 5)
    throw bad_input("resample: unknown PIL resample filter id " + std::to_string(pil_id) + " (expected 0..5)");
  return static_cast<ResampleFilter>(pil_id);
}

const char* resample_filter_name(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::Nearest: return "nearest";
    case ResampleFilter::Lanczos: return "lanczos";
    case ResampleFilter::Bilinear: return "bilinear";
    case ResampleFilter::Bicubic: return "bicubic";
    case ResampleFilter::Box: return "box";
    case ResampleFilter::Hamming: return "hamming";
  }
  return "unknown";
}

U8Image resize_u8(const U8Image& in, int64_t out_w, int64_t out_h, ResampleFilter filter) {
  if (static_cast<int64_t>(in.pixels.size()) != in.width * in.height * in.channels)
    throw internal_error("resize: pixel buffer does not match the image size");
  return resize_u8(in.pixels.data(), in.width, in.height, in.channels, out_w, out_h, filter);
}

U8Image resize_u8(const uint8_t* pixels, int64_t in_w, int64_t in_h, int ch, int64_t out_w, int64_t out_h,
                  ResampleFilter filter) {
  if (in_w < 1 || in_h < 1 || ch < 1)
    throw bad_input("resize: empty input image (" + std::to_string(in_w) + "x" + std::to_string(in_h) + ")");
  if (out_w < 1 || out_h < 1 || out_w > (1 << 24) || out_h > (1 << 24))
    throw bad_input("resize: invalid target size " + std::to_string(out_w) + "x" + std::to_string(out_h));
  if (out_w == in_w && out_h == in_h)
    return U8Image{in_w, in_h, ch, std::vector<uint8_t>(pixels, pixels + in_w * in_h * ch)};
  if (filter == ResampleFilter::Nearest) return resize_nearest(pixels, in_w, in_h, ch, out_w, out_h);
  const Resizer resizer(in_w, in_h, ch, out_w, out_h, filter);
  U8Image out{out_w, out_h, ch, {}};
  image_detail::resize_pixels(out.pixels, static_cast<size_t>(out_w * out_h * ch));
  parallel_rows(out_h, std::max(in_w, out_w) * ch, [&](int64_t y0, int64_t y1) {
    resizer.run(pixels, y0, y1, out.pixels.data(), nullptr);
  });
  return out;
}

U8Image resize_u8_streaming(const uint8_t* pixels, int64_t in_w, int64_t in_h, int ch, int64_t out_w, int64_t out_h,
                            ResampleFilter filter, const std::function<void(int64_t)>& wait) {
  if (in_w < 1 || in_h < 1 || ch < 1 || out_w < 1 || out_h < 1 || out_w > (1 << 24) || out_h > (1 << 24) ||
      (out_w == in_w && out_h == in_h) || filter == ResampleFilter::Nearest) {
    if (in_h > 0) wait(in_h);
    return resize_u8(pixels, in_w, in_h, ch, out_w, out_h, filter);
  }
  const Resizer resizer(in_w, in_h, ch, out_w, out_h, filter);
  U8Image out{out_w, out_h, ch, {}};
  image_detail::resize_pixels(out.pixels, static_cast<size_t>(out_w * out_h * ch));
  resizer.run(pixels, 0, out_h, out.pixels.data(), &wait);
  return out;
}

}  // namespace smolvlm
