// The `quantization_config` object of a quantized model's config.json (the key HF uses for quantized
// checkpoints), in this project's format (`quant_method` "smolvlm"): which modules are quantized,
// how, and the tensors that hold them. For a module M (an nn.Linear whose weight HF names M.weight,
// [N, K]) with `block_rows` R and `group_size` G, the checkpoint stores, instead of M.weight:
//   q8:   M.qweight I8 [N, K]            M.scales F16 [ceil(N/R), ceil(K/G)]   M.zeros I8 (same shape)
//   q4:   M.qweight U8 [N, K/2]          M.scales F16 [ceil(N/R), ceil(K/G)]   M.mins F16 (same shape)
//   lut4: M.qweight U8 [N, K/2]          M.lut F16 [ceil(N/R), ceil(K/G), 16]
// 4-bit codes are two per byte, column 2j in the low nibble of byte j, 2j+1 in the high one. Values:
// q8 scale * (q - zero), q4 scale * q + min, lut4 lut[q] of the value's block; a row's last group
// is short when G does not divide K (and the last block of rows when R does not divide N).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smolvlm {

enum class QuantScheme { Q8, Q4, Lut4 };
const char* quant_scheme_name(QuantScheme s);  // "q8", "q4", "lut4"
// "q8" / "q4" / "lut4"; Error(BadInput) naming `where` otherwise.
QuantScheme parse_quant_scheme(const std::string& name, const std::string& where);

inline constexpr const char* kQuantMethod = "smolvlm";
inline constexpr int kQuantFormatVersion = 1;

struct QuantizedModule {
  QuantScheme scheme = QuantScheme::Q8;
  int64_t group_size = 0;  // columns per block
  int64_t block_rows = 1;  // rows per block
};

struct QuantizationConfig {
  std::string scheme;                             // the default scheme it was made with (informational)
  std::map<std::string, QuantizedModule> modules;  // by module name (M of M.qweight)
  nlohmann::ordered_json extra;                    // everything else of the object, kept when rewritten
  bool empty() const { return modules.empty(); }
  const QuantizedModule* find(const std::string& module) const;
};

// The module's stored tensor names: M.qweight then the scheme's parameters (scales/zeros, scales/mins, lut).
std::vector<std::string> quantized_tensor_names(const std::string& module, QuantScheme scheme);
// M for "M.weight"; "" when the name does not end in ".weight".
std::string module_of_weight(const std::string& weight_name);

// Reads config["quantization_config"] (empty when absent). Error(Unsupported) for another
// quant_method (gptq, awq, bitsandbytes, ...) or a newer format_version; Error(BadInput) naming
// `where` and the module for anything malformed.
QuantizationConfig parse_quantization_config(const nlohmann::json& config, const std::string& where);
// The object written into config.json.
nlohmann::ordered_json quantization_config_json(const QuantizationConfig& q);

}  // namespace smolvlm
