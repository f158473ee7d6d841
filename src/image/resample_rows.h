// The inner loop of Pillow-exact resampling, shared by the portable and the AVX2 build of it
// (internal to the image module). Integer arithmetic: the result does not depend on the ISA.
#pragma once

#include <algorithm>
#include <cstdint>

namespace smolvlm::resample_detail {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

inline uint8_t clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// Output row y (row_bytes bytes) = clip8(2^21 + sum_j coeffs[y * taps + j] * in row (first[y] - row_offset + j)).
inline void convolve_rows(const uint8_t* in, int64_t row_bytes, const int32_t* first, const int32_t* count,
                          const int32_t* coeffs, int taps, int64_t row_offset, int64_t out_rows, uint8_t* out) {
  constexpr int64_t kChunk = 2048;  // accumulators stay in L1
  alignas(64) int32_t acc[kChunk];
  for (int64_t y = 0; y < out_rows; ++y) {
    const int32_t* k = coeffs + y * taps;
    const int n = count[y];
    const uint8_t* rows = in + (first[y] - row_offset) * row_bytes;
    uint8_t* dst = out + y * row_bytes;
    for (int64_t x0 = 0; x0 < row_bytes; x0 += kChunk) {
      const int64_t len = std::min(kChunk, row_bytes - x0);
      for (int64_t i = 0; i < len; ++i) acc[i] = 1 << (kPrecisionBits - 1);
      for (int j = 0; j < n; ++j) {
        const uint8_t* s = rows + j * row_bytes + x0;
        const int32_t kj = k[j];
        for (int64_t i = 0; i < len; ++i) acc[i] += s[i] * kj;
      }
      for (int64_t i = 0; i < len; ++i) dst[x0 + i] = clip8(acc[i]);
    }
  }
}

}  // namespace

// Vertical pass with AVX2: the same arithmetic as convolve_rows (int32 products and sums), 32 output
// bytes at a time held in registers across all taps. Call only when the CPU has AVX2.
void convolve_rows_avx2(const uint8_t* in, int64_t row_bytes, const int32_t* first, const int32_t* count,
                        const int32_t* coeffs, int taps, int64_t row_offset, int64_t out_rows, uint8_t* out);

// Horizontal pass with AVX2 for 3 or 4 interleaved channels. Pillow's sum of u8 * int32 coefficient
// is formed exactly with 16-bit multiply-adds: each coefficient c is split into hi * 2^15 + lo with
// lo in [0, 2^15), both 16-bit, and the two sums recombine as (sum_hi << 15) + sum_lo in wrapping
// int32, which is Pillow's int32 sum bit for bit. Taps are taken four at a time (two per 128-bit lane).
struct HorizontalAvx2 {
  int channels = 0;               // 3 or 4
  int groups = 0;                 // groups of four taps per output pixel
  int64_t out_w = 0;
  int64_t read_end = 0;           // bytes past a row's start the kernel reads (> the row itself)
  const int32_t* first = nullptr; // first input pixel of each output pixel
  const int16_t* coeffs = nullptr;  // [out_w][groups][hi: 16 x int16, lo: 16 x int16]
};

// Rows [0, rows) of `in` (row stride in_row_bytes) resampled along x into `out` (stride out_w * channels).
// The caller makes sure in + (rows - 1) * in_row_bytes + h.read_end is readable.
void horizontal_rows_avx2(const HorizontalAvx2& h, const uint8_t* in, int64_t in_row_bytes, int64_t rows,
                          uint8_t* out);

// Splits n RGB pixels into three planes (SSSE3 byte shuffles in the AVX2 build); call only when the CPU
// has AVX2.
void rgb_to_planes_avx2(const uint8_t* rgb, int64_t n, uint8_t* r, uint8_t* g, uint8_t* b);

}  // namespace smolvlm::resample_detail
