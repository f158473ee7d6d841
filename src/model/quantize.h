// `smolvlm quantize`: a model folder rewritten with quantized linear weights (layout and config:
// io/quantization.h), every other file copied. Written atomically (model/model_folder.h), and
// deterministic: the same input and options give the same bytes, whatever the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace smolvlm {

struct QuantizeOptions {
  std::string scheme = "q8";  // q8, q4, lut4; or f32: every weight dequantized to fp32 (the reference
                              // a quantized model is tested against)
  // q8 / q4: columns per group (q8 default: one group per row, q4 default 64); lut4: output rows
  // sharing one 16-entry table (default 16). 0: the default.
  int64_t group_size = 0;
  // PATTERN=FORMAT overrides, first match wins; PATTERN matches whole tensor names with * and ?;
  // FORMAT is q8, q4, lut4 (applied to the linear weights and the token embedding among the matches;
  // the others keep their stored dtype), bf16, f16, f32 or "source" (stored as in the input). A pattern that matches no
  // tensor is an error.
  std::vector<std::pair<std::string, std::string>> keep;
  bool force = false;  // replace a non-empty output folder
  int threads = 0;     // 0: hardware threads
  // Called after each tensor is converted (from the worker threads, serialized).
  std::function<void(size_t done, size_t total, const std::string& tensor)> progress;
};

struct QuantizedTensorReport {
  std::string name;
  std::string format;      // q8, q4, lut4, or the dense dtype
  int64_t group_size = 0;  // quantized only
  int64_t block_rows = 0;
  double max_abs_error = 0;  // quantized only: vs the input's values
  double rms_error = 0;
};

struct QuantizeResult {
  std::string scheme;
  size_t tensors = 0;         // spec entries written
  size_t quantized = 0;       // of them quantized
  uint64_t source_bytes = 0;  // input weight files
  uint64_t weight_bytes = 0;  // model.safetensors written
  double seconds = 0;
  std::vector<QuantizedTensorReport> report;  // every tensor, in spec order
};

// The default format of each tensor under a scheme (the mixed precision `quantize` applies without
// per-tensor overrides): the text decoder's linear layers take the scheme; the lm_head q8 (the 4-bit
// schemes too: it is the one matrix that feeds the logits directly), and so the token embedding of a
// tied model, which is that lm_head; an untied model's embedding, norms, biases, the vision tower and
// the connector stay as stored (an embedding is read one row per token, and vision is compute-bound:
// quantizing them saves memory, not time).
QuantizeResult quantize_checkpoint(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                                   const QuantizeOptions& options);

// Whether `name` matches the glob `pattern` (* any run, ? one character), whole string.
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace smolvlm
