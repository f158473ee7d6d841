// Quantized matrices of a checkpoint (layout: io/quantization.h) bound as WeightRefs, validated
// against the architecture's spec entry: the tensors the scheme needs, with their dtypes and the
// shapes the entry's [N, K], group size and block rows imply; finite parameters; config and
// tensors agreeing. Error(BadInput) naming the file, the tensor and the rule otherwise.
#pragma once

#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "model/spec.h"

namespace smolvlm {

WeightFormat weight_format_of(QuantScheme s);

// The quantization_config entry for the spec entry's module, or nullptr when it is stored dense.
const QuantizedModule* quantized_module(const Checkpoint& ckpt, const ExpectedTensor& entry);

// Whether a spec entry may be stored quantized: a Linear weight (2-D, read as a matrix) or the token
// embedding (rows dequantized per token; a tied lm_head reads it as its matrix). Patch and position
// embeddings, convolutions and vectors are read otherwise and stay dense.
bool quantizable(const ExpectedTensor& entry);

// The entry's quantized tensors as a WeightRef, after every check above.
WeightRef quantized_matrix(const Checkpoint& ckpt, const ExpectedTensor& entry, const QuantizedModule& module);

// The stored tensor names of an entry: its own name when dense, the scheme's tensors when quantized.
std::vector<std::string> stored_names(const Checkpoint& ckpt, const ExpectedTensor& entry);

// Every quantization_config module names a quantizable stored entry of the spec; Error(BadInput)
// naming the module otherwise.
void check_quantized_modules(const Checkpoint& ckpt, const std::vector<ExpectedTensor>& table);

}  // namespace smolvlm
