#include "kernels/gemv_int8.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/dtype.h"

namespace smolvlm {

namespace {

constexpr int kLanes = 16;

// Lanes i and i + 8, then i and i + 4, i and i + 2, then the two left (the AVX-512 kernels' order).
float hsum16(const float (&v)[kLanes]) {
  float s8[8], s4[4], s2[2];
  for (int i = 0; i < 8; ++i) s8[i] = v[i] + v[i + 8];
  for (int i = 0; i < 4; ++i) s4[i] = s8[i] + s8[i + 4];
  for (int i = 0; i < 2; ++i) s2[i] = s4[i] + s4[i + 2];
  return s2[0] + s2[1];
}

// Codes of one block of 32 (n values of x, zeros past them), in straight-line loops over the whole
// block that vectorize. Each code is round(x / d) to the nearest integer, ties to even (the default
// rounding mode), as nearbyint gives, without a conversion per value: x * (127 / amax) + 1.5 * 2^23
// lies in [2^23, 2^24), where a float's last bit is the units digit, so the sum rounds the product and
// its bits less those of 1.5 * 2^23 are the integer.
void quantize_block(const float* x, int64_t n, int8_t* q, float& scale, float& sum) {
  constexpr float kShift = 12582912.f;  // 1.5 * 2^23
  constexpr int32_t kShiftBits = 0x4B400000;
  float v[Int8Rows::kBlock];
  for (int64_t i = 0; i < Int8Rows::kBlock; ++i) v[i] = i < n ? x[i] : 0.f;
  // The largest magnitude (exact in any order) as eight partial maxima: no chain of 32 comparisons.
  float part[8] = {};
  for (int64_t i = 0; i < Int8Rows::kBlock; ++i) {
    const float a = std::fabs(v[i]);
    part[i % 8] = part[i % 8] < a ? a : part[i % 8];
  }
  float amax = 0.f;
  for (const float a : part) amax = amax < a ? a : amax;
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  int32_t codes[Int8Rows::kBlock];
  for (int64_t i = 0; i < Int8Rows::kBlock; ++i) {
    float shifted = v[i] * inv + kShift;  // two roundings: -ffp-contract=off where FMA is the baseline
    shifted = shifted == shifted ? shifted : kShift;  // a NaN (never in a model) as 0
    int32_t c = std::bit_cast<int32_t>(shifted) - kShiftBits;
    c = c < -127 ? -127 : c;
    codes[i] = c > 127 ? 127 : c;
  }
  int32_t total = 0;
  for (int64_t i = 0; i < Int8Rows::kBlock; ++i) {
    q[i] = static_cast<int8_t>(codes[i]);
    total += codes[i];
  }
  scale = amax / 127.f;
  sum = scale * static_cast<float>(total);
}

float reference_q8_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n) {
  const int64_t K = w.cols, blk = int8_detail::first_block(w, n);
  const float s = f16_to_f32(w.quant.scales[blk]);
  const int32_t z = w.quant.zero_points ? w.quant.zero_points[blk] : 0;
  const int8_t* row = static_cast<const int8_t*>(w.data) + n * K;
  const int8_t* xq = x.codes + m * x.k_pad;
  const float* d = x.q8_lane_scales + m * (x.k_pad / 4);
  float acc[kLanes] = {};
  for (int64_t c = 0; c < x.k_pad / 64; ++c)
    for (int l = 0; l < kLanes; ++l) {
      int32_t isum = 0;
      for (int b = 0; b < 4; ++b) {
        const int64_t k = 64 * c + 4 * l + b;
        const uint8_t code = static_cast<uint8_t>((k < K ? row[k] : 0) ^ 0x80);  // q + 128
        isum += int32_t(code) * xq[k];
      }
      acc[l] = std::fma(static_cast<float>(isum), d[16 * c + l], acc[l]);
    }
  // One fused step, as the vector kernels spell it (a compiler may fuse a separate multiply and
  // subtraction in one file and not in another).
  const float centred = std::fma(-static_cast<float>(128 + z), x.row_sums[m], hsum16(acc));
  return centred * s;
}

float reference_q4_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n) {
  const int64_t K = w.cols, G = w.quant.group_size, groups = int8_detail::groups_per_row(w);
  const int64_t blk = int8_detail::first_block(w, n);
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * (K / 2);
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  float acc[kLanes] = {}, min_acc[kLanes] = {};
  for (int64_t c = 0; c < x.k_pad / 128; ++c)
    for (int l = 0; l < kLanes; ++l) {
      int32_t isum = 0;
      for (int b = 0; b < 4; ++b) {
        const int64_t i = 64 * c + 4 * l + b;  // byte of the row: codes 2i (low nibble) and 2i + 1
        const uint8_t byte = i < K / 2 ? row[i] : 0;
        isum += int32_t(byte & 15) * xq[128 * c + 4 * l + b] + int32_t(byte >> 4) * xq[128 * c + 64 + 4 * l + b];
      }
      const int64_t first_code = 128 * c + 64 * (l / 8);
      const float s = first_code < K ? f16_to_f32(w.quant.scales[blk + first_code / G]) : 0.f;
      const float f = static_cast<float>(isum) * d[16 * c + l];
      acc[l] = std::fma(f, s, acc[l]);
    }
  for (int64_t g = 0; g < groups; ++g)
    min_acc[g % kLanes] =
        std::fma(f16_to_f32(w.quant.mins[blk + g]), int8_detail::group_sum(x, m, w, g), min_acc[g % kLanes]);
  for (int l = 0; l < kLanes; ++l) acc[l] += min_acc[l];
  return hsum16(acc);
}

float reference_lut4_row(const Int8Rows& x, int64_t m, const WeightRef& w, int64_t n) {
  const int64_t K = w.cols;
  int8_detail::Lut4Codes table;
  int8_detail::lut4_codebook(w.quant.lut + 16 * int8_detail::first_block(w, n), table);
  const uint8_t* t = table.codes;
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + n * (K / 2);
  const int8_t* xq = x.nibble_codes + m * x.k_pad;
  const float* d = x.q4_lane_scales + m * (x.k_pad / 8);
  float acc[kLanes] = {};
  for (int64_t c = 0; c < x.k_pad / 128; ++c)
    for (int l = 0; l < kLanes; ++l) {
      int32_t isum = 0;
      for (int b = 0; b < 4; ++b) {
        const int64_t i = 64 * c + 4 * l + b;  // byte of the row: codes 2i (low nibble) and 2i + 1
        const uint8_t byte = i < K / 2 ? row[i] : 0;
        isum += int32_t(t[byte & 15]) * xq[128 * c + 4 * l + b] + int32_t(t[byte >> 4]) * xq[128 * c + 64 + 4 * l + b];
      }
      acc[l] = std::fma(static_cast<float>(isum), d[16 * c + l], acc[l]);
    }
  return std::fma(table.offset, x.row_sums[m], hsum16(acc) * table.scale);
}

}  // namespace

void round_int8_row_reference(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums) {
  for (int64_t j = 0; j < k_pad / Int8Rows::kBlock; ++j) {
    const int64_t k0 = j * Int8Rows::kBlock, n = std::clamp<int64_t>(K - k0, 0, Int8Rows::kBlock);
    quantize_block(n > 0 ? x + k0 : x, n, q + k0, scales[j], sums[j]);
  }
}

Int8Rows Int8RowsBuffer::quantize(const float* x, int64_t M, int64_t K, RoundInt8Row round) {
  Int8Rows r;
  r.M = M, r.K = K;
  r.k_pad = (K + Int8Rows::kPadTo - 1) / Int8Rows::kPadTo * Int8Rows::kPadTo;
  const int64_t blocks = r.k_pad / Int8Rows::kBlock;
  // The arrays, each a whole number of cache lines (rows of codes k_pad bytes, of lane scales k_pad / 4
  // and k_pad / 8 floats: multiples of 64 bytes). Every element below is written (codes past K as zero).
  const auto lines = [](int64_t floats) { return (floats + 15) / 16 * 16; };
  const int64_t code_floats = lines(M * r.k_pad / 4), block_floats = lines(M * blocks);
  const int64_t pair_floats = lines(M * blocks / 2), row_floats = lines(M);
  const int64_t q8_floats = lines(M * r.k_pad / 4), q4_floats = lines(M * r.k_pad / 8);
  float* at = storage_.get(
      size_t(2 * code_floats + 2 * block_floats + pair_floats + row_floats + 2 * q8_floats + q4_floats));
  const auto take = [&at](int64_t floats) {
    float* p = at;
    at += floats;
    return p;
  };
  int8_t* const codes = reinterpret_cast<int8_t*>(take(code_floats));
  int8_t* const nibble_codes = reinterpret_cast<int8_t*>(take(code_floats));
  float* const block_scales = take(block_floats);
  float* const block_sums = take(block_floats);
  float* const pair_sums = take(pair_floats);
  float* const row_sums = take(row_floats);
  float* const q8_lane_scales = take(q8_floats);
  float* const q4_lane_scales = take(q4_floats);
  int32_t* const q8_lane_offsets = reinterpret_cast<int32_t*>(take(q8_floats));
  for (int64_t m = 0; m < M; ++m) {
    int8_t* q = codes + m * r.k_pad;
    float* scale = block_scales + m * blocks;
    round(x + m * K, K, r.k_pad, q, scale, block_sums + m * blocks);
    const float* sums = block_sums + m * blocks;
    for (int64_t i = 0; i < blocks / 2; ++i) pair_sums[m * blocks / 2 + i] = sums[2 * i] + sums[2 * i + 1];
    float row = 0.f;
    for (int64_t j = 0; j < blocks; ++j) row += sums[j];
    row_sums[m] = row;
    int8_t* nib = nibble_codes + m * r.k_pad;
    for (int64_t c = 0; c < r.k_pad; c += 128)
      for (int64_t i = 0; i < 32; ++i) {
        nib[c + i] = q[c + 2 * i];
        nib[c + 32 + i] = q[c + 64 + 2 * i];
        nib[c + 64 + i] = q[c + 2 * i + 1];
        nib[c + 96 + i] = q[c + 64 + 2 * i + 1];
      }
    float* d8 = q8_lane_scales + m * (r.k_pad / 4);
    for (int64_t c = 0; c < r.k_pad / 64; ++c)
      for (int l = 0; l < kLanes; ++l) d8[16 * c + l] = scale[2 * c + l / 8];
    int32_t* offsets = q8_lane_offsets + m * (r.k_pad / 4);
    for (int64_t j = 0; j < r.k_pad / 4; ++j) offsets[j] = 128 * (q[4 * j] + q[4 * j + 1] + q[4 * j + 2] + q[4 * j + 3]);
    float* d4 = q4_lane_scales + m * (r.k_pad / 8);
    for (int64_t c = 0; c < r.k_pad / 128; ++c)
      for (int l = 0; l < kLanes; ++l) d4[16 * c + l] = scale[4 * c + l / 4];
  }
  r.codes = codes;
  r.nibble_codes = nibble_codes;
  r.block_scales = block_scales;
  r.block_sums = block_sums;
  r.pair_sums = pair_sums;
  r.row_sums = row_sums;
  r.q8_lane_scales = q8_lane_scales;
  r.q4_lane_scales = q4_lane_scales;
  r.q8_lane_offsets = q8_lane_offsets;
  return r;
}

bool int8_gemv_takes(const WeightRef& w) {
  if (w.cols <= 0 || w.quant.group_size <= 0) return false;
  if (w.format == WeightFormat::Q8) return w.quant.group_size >= w.cols;
  if (w.format == WeightFormat::Q4) return w.quant.group_size % 64 == 0;
  if (w.format == WeightFormat::Lut4) return w.quant.group_size >= w.cols;
  return false;
}


void gemv_int8_reference(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
  int8_detail::for_each_output(x, w, bias, y, n0, n1, [&](int64_t m, int64_t n, int64_t) {
    switch (w.format) {
      case WeightFormat::Q8: return reference_q8_row(x, m, w, n);
      case WeightFormat::Q4: return reference_q4_row(x, m, w, n);
      default: return reference_lut4_row(x, m, w, n);
    }
  });
}

}  // namespace smolvlm
