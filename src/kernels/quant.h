// Quantized weights (WeightFormat Q8 / Q4 / Lut4): the block arithmetic every kernel shares, the
// exact dequantization of one value, and quantization of an fp32 matrix (at quantize time).
//
// Dequantization is exact in fp32 by construction, so every kernel path computes with the very same
// weight values as the fp32 matrix dequantize_matrix() returns:
//   Q8:   scale * (q - zero_point): an fp16 scale (11 significant bits) times an integer of at most
//         9 bits is exact in fp32;
//   Q4:   scale * q + min: scale * q is exact (11 + 4 bits), so the one addition rounds once, fused
//         or not;
//   Lut4: a table entry, an fp16 value (exact in fp32).
// A block's last group along K may be short (cols not a multiple of group_size), as may its last
// block of rows (rows not a multiple of block_rows).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemm.h"

namespace smolvlm {

// ceil(cols / group_size): parameter sets per block row.
inline int64_t quant_groups_per_row(const WeightRef& w) {
  return (w.cols + w.quant.group_size - 1) / w.quant.group_size;
}
// ceil(rows / block_rows) * groups per row: the parameter sets (LUT4: tables) of the weight.
int64_t quant_block_count(const WeightRef& w);

// Error(BadInput) unless a quantized weight of this shape can have these blocks: positive group size
// and block rows; the 4-bit formats need an even group size and an even column count.
void check_quant_shape(WeightFormat format, int64_t rows, int64_t cols, int64_t group_size, int64_t block_rows);
// Error(BadInput) unless w's QuantBlocks fit its format and shape: positive group size (even for
// the 4-bit formats, whose cols must be even), positive block_rows, the parameter arrays the format
// needs present. Dense formats pass.
void check_quant_blocks(const WeightRef& w);

// Values [k0, k0 + count) of row n of a quantized weight, exactly (see above).
void dequantize_row(const WeightRef& w, int64_t n, int64_t k0, int64_t count, float* out);

// The whole matrix as fp32 (tests and `smolvlm quantize`'s error report).
std::vector<float> dequantize_matrix(const WeightRef& w);

// A quantized matrix that owns its arrays (the output of quantize_matrix()).
struct QuantizedMatrix {
  WeightFormat format = WeightFormat::Q8;
  int64_t rows = 0, cols = 0;
  int64_t group_size = 0, block_rows = 1;
  std::vector<uint8_t> codes;     // Q8: rows*cols int8; Q4/Lut4: rows*cols/2 packed nibbles
  std::vector<uint16_t> scales;   // Q8, Q4: fp16 per block
  std::vector<int8_t> zeros;      // Q8: per block
  std::vector<uint16_t> mins;     // Q4: fp16 per block
  std::vector<uint16_t> lut;      // Lut4: 16 fp16 per block
  WeightRef ref() const;          // a view for linear()
};

// Quantizes w [rows, cols] (fp32, row-major). Q8: asymmetric, per block min/max over 255 steps;
// Q4: asymmetric, min and (max - min) / 15; Lut4: 1-D k-means (Lloyd, 16 centroids initialised at
// the block's quantiles, at most `lut_iterations` rounds), centroids rounded to fp16 and every value
// coded to its nearest rounded centroid. Deterministic: the same input gives the same bytes on every
// machine (plain fp32 arithmetic in a fixed order). Error(BadInput) on non-finite values or a shape
// the format cannot hold (4-bit: odd cols).
QuantizedMatrix quantize_matrix(const float* w, int64_t rows, int64_t cols, WeightFormat format, int64_t group_size,
                                int64_t block_rows, int lut_iterations = 12);

}  // namespace smolvlm
