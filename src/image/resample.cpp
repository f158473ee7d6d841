#include "image/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "image/resample_rows.h"

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

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Resamples along y: output row y mixes input rows first[y] - row_offset ... of `in`.
void vertical_pass(const uint8_t* in, int64_t row_bytes, const AxisCoeffs& ax, int64_t row_offset, int64_t out_h,
                   uint8_t* out) {
  auto* fn = cpu_has_avx2() ? resample_detail::convolve_rows_avx2 : resample_detail::convolve_rows;
  fn(in, row_bytes, ax.first.data(), ax.count.data(), ax.coeffs.data(), ax.taps, row_offset, out_h, out);
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

U8Image resize_nearest(const U8Image& in, int64_t out_w, int64_t out_h) {
  const auto xi = nearest_index(in.width, out_w);
  const auto yi = nearest_index(in.height, out_h);
  const int ch = in.channels;
  U8Image out{out_w, out_h, ch, std::vector<uint8_t>(static_cast<size_t>(out_w * out_h * ch))};
  for (int64_t y = 0; y < out_h; ++y) {
    const uint8_t* src = in.pixels.data() + yi[y] * in.width * ch;
    uint8_t* dst = out.pixels.data() + y * out_w * ch;
    for (int64_t x = 0; x < out_w; ++x) std::memcpy(dst + x * ch, src + xi[x] * ch, ch);
  }
  return out;
}

void run_horizontal(const uint8_t* in, int64_t in_w, int ch, int64_t row0, int64_t rows, const AxisCoeffs& ax,
                    int64_t out_w, uint8_t* out) {
  if (ch == 3) return horizontal_pass<3>(in, in_w, row0, rows, ax, out_w, out, ch);
  if (ch == 1) return horizontal_pass<1>(in, in_w, row0, rows, ax, out_w, out, ch);
  horizontal_pass<0>(in, in_w, row0, rows, ax, out_w, out, ch);
}

}  // namespace

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
  if (in.width < 1 || in.height < 1 || in.channels < 1)
    throw bad_input("resize: empty input image (" + std::to_string(in.width) + "x" + std::to_string(in.height) + ")");
  if (static_cast<int64_t>(in.pixels.size()) != in.width * in.height * in.channels)
    throw internal_error("resize: pixel buffer does not match the image size");
  if (out_w < 1 || out_h < 1 || out_w > (1 << 24) || out_h > (1 << 24))
    throw bad_input("resize: invalid target size " + std::to_string(out_w) + "x" + std::to_string(out_h));
  if (out_w == in.width && out_h == in.height) return in;
  if (filter == ResampleFilter::Nearest) return resize_nearest(in, out_w, out_h);

  const FilterDef def = filter_def(filter);
  const int ch = in.channels;
  const bool need_h = out_w != in.width;
  const bool need_v = out_h != in.height;
  U8Image out{out_w, out_h, ch, std::vector<uint8_t>(static_cast<size_t>(out_w * out_h * ch))};
  if (!need_v) {
    run_horizontal(in.pixels.data(), in.width, ch, 0, in.height, axis_coeffs(in.width, out_w, def), out_w,
                   out.pixels.data());
    return out;
  }
  const AxisCoeffs vert = axis_coeffs(in.height, out_h, def);
  if (!need_h) {
    vertical_pass(in.pixels.data(), in.width * ch, vert, 0, out_h, out.pixels.data());
    return out;
  }
  // Only the input rows the vertical pass reads go through the horizontal pass.
  const int64_t row_first = vert.first[0];
  const int64_t row_last = static_cast<int64_t>(vert.first[out_h - 1]) + vert.count[out_h - 1];
  std::vector<uint8_t> tmp(static_cast<size_t>((row_last - row_first) * out_w * ch));
  run_horizontal(in.pixels.data(), in.width, ch, row_first, row_last - row_first, axis_coeffs(in.width, out_w, def),
                 out_w, tmp.data());
  vertical_pass(tmp.data(), out_w * ch, vert, row_first, out_h, out.pixels.data());
  return out;
}

}  // namespace smolvlm
