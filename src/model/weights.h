// Reading weights out of a Checkpoint: matrices stay in the mapped file in their stored dtype (the
// GEMM converts on the fly); only small vectors (norm scales, biases) are copied to fp32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/gemm.h"

namespace smolvlm {

// The tensor `name`, checked to have exactly `shape` and a float dtype (F32/F16/BF16); Error(BadInput)
// naming the tensor and both shapes otherwise.
const TensorView& expect_tensor(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape);

// A [rows, cols] matrix used in place by linear().
WeightRef matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols);

// A vector of `n` values upcast to fp32.
std::vector<float> vector_f32(const Checkpoint& ckpt, const std::string& name, int64_t n);

// out[i, :] = fp32 copy of row rows[i] of a [N, cols] float tensor; every row id must be in [0, N).
void gather_rows_f32(const TensorView& table, const int64_t* rows, int64_t n, float* out);

// The shape as "[a, b, c]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace smolvlm
