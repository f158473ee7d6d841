#include "kernels/quant.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "kernels/gemm_kernels.h"

namespace smolvlm {

namespace {

int64_t block_of(const WeightRef& w, int64_t n, int64_t k) {
  return (n / w.quant.block_rows) * quant_groups_per_row(w) + k / w.quant.group_size;
}

// The largest finite fp16, so that a rounded parameter never becomes infinite.
constexpr float kF16Max = 65504.f;

uint16_t to_f16(float v) { return f32_to_f16(std::clamp(v, -kF16Max, kF16Max)); }

void check_finite(const float* w, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(w[i])) throw bad_input("quantize: the matrix holds a non-finite value at element " + std::to_string(i));
}

// One Q8 / Q4 block: rows [r0, r1) x columns [c0, c1) of w (leading dimension cols).
struct BlockRange {
  int64_t r0, r1, c0, c1;
};

void min_max(const float* w, int64_t cols, const BlockRange& b, float& lo, float& hi) {
  lo = w[b.r0 * cols + b.c0], hi = lo;
  for (int64_t r = b.r0; r < b.r1; ++r)
    for (int64_t c = b.c0; c < b.c1; ++c) lo = std::min(lo, w[r * cols + c]), hi = std::max(hi, w[r * cols + c]);
}

void quantize_q8_block(const float* w, int64_t cols, const BlockRange& b, QuantizedMatrix& q, int64_t block) {
  float lo, hi;
  min_max(w, cols, b, lo, hi);
  // 255 steps span [lo, hi] widened to hold 0, so that the zero point fits in int8.
  lo = std::min(lo, 0.f), hi = std::max(hi, 0.f);
  uint16_t s16 = to_f16((hi - lo) / 255.f);
  float s = f16_to_f32(s16);
  if (!(s > 0.f)) s16 = f32_to_f16(1.f), s = 1.f;  // an all-zero block (or one below fp16's range)
  const float z = std::clamp(std::nearbyint(-128.f - lo / s), -128.f, 127.f);
  q.scales[block] = s16;
  q.zeros[block] = static_cast<int8_t>(z);
  for (int64_t r = b.r0; r < b.r1; ++r)
    for (int64_t c = b.c0; c < b.c1; ++c)
      q.codes[r * cols + c] = static_cast<uint8_t>(static_cast<int8_t>(
          std::clamp(std::nearbyint(w[r * cols + c] / s) + z, -128.f, 127.f)));
}

void set_nibble(QuantizedMatrix& q, int64_t r, int64_t c, int code) {
  uint8_t& byte = q.codes[(r * q.cols + c) >> 1];
  byte = (c & 1) ? uint8_t((byte & 0x0f) | (code << 4)) : uint8_t((byte & 0xf0) | code);
}

void quantize_q4_block(const float* w, int64_t cols, const BlockRange& b, QuantizedMatrix& q, int64_t block) {
  float lo, hi;
  min_max(w, cols, b, lo, hi);
  const uint16_t m16 = to_f16(lo);
  const float m = f16_to_f32(m16);
  uint16_t s16 = to_f16((hi - m) / 15.f);
  float s = f16_to_f32(s16);
  if (!(s > 0.f)) s16 = 0, s = 0.f;  // a constant block: every code 0 decodes to min
  q.scales[block] = s16;
  q.mins[block] = m16;
  for (int64_t r = b.r0; r < b.r1; ++r)
    for (int64_t c = b.c0; c < b.c1; ++c) {
      const float code = s > 0.f ? std::clamp(std::nearbyint((w[r * cols + c] - m) / s), 0.f, 15.f) : 0.f;
      set_nibble(q, r, c, static_cast<int>(code));
    }
}

// The nearest of 16 sorted centroids (ties to the lower one).
int nearest(const float* centroids, float v) {
  int best = 0;
  float best_d = std::fabs(v - centroids[0]);
  for (int i = 1; i < 16; ++i) {
    const float d = std::fabs(v - centroids[i]);
    if (d < best_d) best = i, best_d = d;
  }
  return best;
}

void quantize_lut4_block(const float* w, int64_t cols, const BlockRange& b, QuantizedMatrix& q, int64_t block,
                         int iterations) {
  std::vector<float> v;
  v.reserve(size_t((b.r1 - b.r0) * (b.c1 - b.c0)));
  for (int64_t r = b.r0; r < b.r1; ++r)
    for (int64_t c = b.c0; c < b.c1; ++c) v.push_back(w[r * cols + c]);
  std::sort(v.begin(), v.end());
  const int64_t n = int64_t(v.size());
  // Prefix sums in double: a centroid is the mean of a contiguous run of the sorted values.
  std::vector<double> prefix(size_t(n + 1), 0.0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + v[i];
  double c[16];
  for (int i = 0; i < 16; ++i) c[i] = v[std::min<int64_t>(n - 1, (2 * i + 1) * n / 32)];
  for (int it = 0; it < iterations; ++it) {
    // Cluster i holds the sorted values between the midpoints to its neighbours.
    int64_t start = 0;
    bool moved = false;
    for (int i = 0; i < 16; ++i) {
      int64_t end = n;
      if (i < 15) {
        const double mid = 0.5 * (c[i] + c[i + 1]);
        end = std::upper_bound(v.begin() + start, v.end(), mid, [](double m, float x) { return m < x; }) - v.begin();
      }
      if (end > start) {
        const double mean = (prefix[end] - prefix[start]) / double(end - start);
        moved |= mean != c[i];
        c[i] = mean;
      }
      start = end;
    }
    std::sort(c, c + 16);
    if (!moved) break;
  }
  float table[16];
  for (int i = 0; i < 16; ++i) {
    q.lut[block * 16 + i] = to_f16(float(c[i]));
    table[i] = f16_to_f32(q.lut[block * 16 + i]);
  }
  std::sort(table, table + 16);  // rounding keeps the order; sorting makes `nearest` valid regardless
  for (int i = 0; i < 16; ++i) q.lut[block * 16 + i] = f32_to_f16(table[i]);
  for (int64_t r = b.r0; r < b.r1; ++r)
    for (int64_t col = b.c0; col < b.c1; ++col) set_nibble(q, r, col, nearest(table, w[r * cols + col]));
}

}  // namespace

int64_t quant_block_count(const WeightRef& w) {
  return (w.rows + w.quant.block_rows - 1) / w.quant.block_rows * quant_groups_per_row(w);
}

void check_quant_shape(WeightFormat format, int64_t rows, int64_t cols, int64_t group_size, int64_t block_rows) {
  const std::string what = std::string(weight_format_name(format)) + " weight [" + std::to_string(rows) + ", " +
                           std::to_string(cols) + "]";
  if (group_size <= 0 || block_rows <= 0)
    throw bad_input(what + ": group size " + std::to_string(group_size) + " and block rows " +
                    std::to_string(block_rows) + " must be positive");
  if (format != WeightFormat::Q8 && (group_size % 2 != 0 || cols % 2 != 0))
    throw bad_input(what + ": 4-bit codes need an even group size and column count (group " +
                    std::to_string(group_size) + ")");
}

void check_quant_blocks(const WeightRef& w) {
  if (!weight_format_is_quantized(w.format)) return;
  const QuantBlocks& b = w.quant;
  check_quant_shape(w.format, w.rows, w.cols, b.group_size, b.block_rows);
  const bool params = w.format == WeightFormat::Q8   ? b.scales != nullptr
                      : w.format == WeightFormat::Q4 ? b.scales && b.mins
                                                     : b.lut != nullptr;
  if (!params && w.rows > 0 && w.cols > 0)
    throw bad_input(std::string(weight_format_name(w.format)) + " weight: block parameters missing");
}

void dequantize_row(const WeightRef& w, int64_t n, int64_t k0, int64_t count, float* out) {
  const QuantBlocks& b = w.quant;
  switch (w.format) {
    case WeightFormat::Q8: {
      const int8_t* row = static_cast<const int8_t*>(w.data) + n * w.cols;
      for (int64_t k = k0; k < k0 + count; ++k) {
        const int64_t blk = block_of(w, n, k);
        const int z = b.zero_points ? b.zero_points[blk] : 0;
        out[k - k0] = f16_to_f32(b.scales[blk]) * float(int(row[k]) - z);
      }
      return;
    }
    case WeightFormat::Q4: {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * w.cols / 2;
      for (int64_t k = k0; k < k0 + count; ++k) {
        const int64_t blk = block_of(w, n, k);
        out[k - k0] = f16_to_f32(b.scales[blk]) * float(gemm::code4(row, k)) + f16_to_f32(b.mins[blk]);
      }
      return;
    }
    case WeightFormat::Lut4: {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * w.cols / 2;
      for (int64_t k = k0; k < k0 + count; ++k)
        out[k - k0] = f16_to_f32(b.lut[block_of(w, n, k) * 16 + gemm::code4(row, k)]);
      return;
    }
    default: throw internal_error("dequantize_row: not a quantized format");
  }
}

std::vector<float> dequantize_matrix(const WeightRef& w) {
  check_quant_blocks(w);
  std::vector<float> out(size_t(w.rows * w.cols));
  for (int64_t n = 0; n < w.rows; ++n) dequantize_row(w, n, 0, w.cols, out.data() + n * w.cols);
  return out;
}

WeightRef QuantizedMatrix::ref() const {
  QuantBlocks b;
  b.group_size = group_size;
  b.block_rows = block_rows;
  if (format == WeightFormat::Q8) b.scales = scales.data(), b.zero_points = zeros.data();
  if (format == WeightFormat::Q4) b.scales = scales.data(), b.mins = mins.data();
  if (format == WeightFormat::Lut4) b.lut = lut.data();
  return WeightRef(codes.data(), format, rows, cols, b);
}

QuantizedMatrix quantize_matrix(const float* w, int64_t rows, int64_t cols, WeightFormat format, int64_t group_size,
                                int64_t block_rows, int lut_iterations) {
  if (!weight_format_is_quantized(format)) throw bad_input("quantize: not a quantized format");
  QuantizedMatrix q;
  q.format = format, q.rows = rows, q.cols = cols, q.group_size = group_size, q.block_rows = block_rows;
  check_quant_shape(format, rows, cols, group_size, block_rows);
  WeightRef shape(nullptr, format, rows, cols, QuantBlocks{group_size, block_rows});
  if (rows <= 0 || cols <= 0) throw bad_input("quantize: empty matrix");
  check_finite(w, rows * cols);
  const int64_t blocks = quant_block_count(shape), groups = quant_groups_per_row(shape);
  q.codes.assign(size_t(format == WeightFormat::Q8 ? rows * cols : rows * cols / 2), 0);
  if (format == WeightFormat::Q8) q.scales.resize(size_t(blocks)), q.zeros.resize(size_t(blocks));
  if (format == WeightFormat::Q4) q.scales.resize(size_t(blocks)), q.mins.resize(size_t(blocks));
  if (format == WeightFormat::Lut4) q.lut.resize(size_t(blocks * 16));
  for (int64_t rb = 0; rb * block_rows < rows; ++rb)
    for (int64_t g = 0; g < groups; ++g) {
      const BlockRange b{rb * block_rows, std::min(rows, (rb + 1) * block_rows), g * group_size,
                         std::min(cols, (g + 1) * group_size)};
      const int64_t block = rb * groups + g;
      if (format == WeightFormat::Q8) quantize_q8_block(w, cols, b, q, block);
      if (format == WeightFormat::Q4) quantize_q4_block(w, cols, b, q, block);
      if (format == WeightFormat::Lut4) quantize_lut4_block(w, cols, b, q, block, lut_iterations);
    }
  return q;
}

}  // namespace smolvlm
