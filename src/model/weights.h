// Binding the tensors of a spec (model/spec.h) out of a Checkpoint: matrices stay in the mapped file
// in their stored dtype (the GEMM converts on the fly); only small vectors (norm scales, biases) are
// copied to fp32. Every helper checks the tensor against its spec entry: present, the entry's shape,
// a float dtype (F32/F16/BF16); Error naming the tensor otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "model/spec.h"

namespace smolvlm {

// The stored tensor of a Required entry.
const TensorView& bind_tensor(const Checkpoint& ckpt, const ExpectedTensor& entry);

// A 2-D entry as the [rows, cols] matrix linear() uses in place: dense, or its quantized blocks when
// config.json's quantization_config quantizes it (model/quantized_weights.h).
WeightRef matrix(const Checkpoint& ckpt, const ExpectedTensor& entry);

// A tensor's values read as a [rows, cols] matrix (rows·cols must be its element count): a
// convolution kernel as the matrix of a linear layer, embeddings as a tied lm_head.
WeightRef matrix_view(const TensorView& t, int64_t rows, int64_t cols);

// A 1-D entry upcast to fp32.
std::vector<float> vector_f32(const Checkpoint& ckpt, const ExpectedTensor& entry);
// The same when the entry may be Absent: empty then.
std::vector<float> optional_vector_f32(const Checkpoint& ckpt, const ExpectedTensor& entry);

// out[i, :] = fp32 copy of row rows[i] of a [N, cols] float tensor; every row id must be in [0, N)
// (Error(BadInput) naming `name` otherwise).
void gather_rows_f32(const TensorView& table, const int64_t* rows, int64_t n, float* out);
// The same for a matrix of any weight format: quantized rows are dequantized exactly.
void gather_rows_f32(const WeightRef& table, const std::string& name, const int64_t* rows, int64_t n, float* out);

}  // namespace smolvlm
