#include "io/quantization.h"

#include "core/error.h"
#include "io/json_fields.h"

namespace smolvlm {

const char* quant_scheme_name(QuantScheme s) {
  switch (s) {
    case QuantScheme::Q8: return "q8";
    case QuantScheme::Q4: return "q4";
    case QuantScheme::Lut4: return "lut4";
  }
  return "?";
}

QuantScheme parse_quant_scheme(const std::string& name, const std::string& where) {
  if (name == "q8") return QuantScheme::Q8;
  if (name == "q4") return QuantScheme::Q4;
  if (name == "lut4") return QuantScheme::Lut4;
  throw bad_input(where + ": unknown quantization scheme \"" + name + "\" (expected q8, q4 or lut4)");
}

const QuantizedModule* QuantizationConfig::find(const std::string& module) const {
  auto it = modules.find(module);
  return it == modules.end() ? nullptr : &it->second;
}

std::vector<std::string> quantized_tensor_names(const std::string& module, QuantScheme scheme) {
  switch (scheme) {
    case QuantScheme::Q8: return {module + ".qweight", module + ".scales", module + ".zeros"};
    case QuantScheme::Q4: return {module + ".qweight", module + ".scales", module + ".mins"};
    case QuantScheme::Lut4: return {module + ".qweight", module + ".lut"};
  }
  return {};
}

std::string module_of_weight(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() <= suffix.size() || weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix))
    return "";
  return weight_name.substr(0, weight_name.size() - suffix.size());
}

QuantizationConfig parse_quantization_config(const nlohmann::json& config, const std::string& where_file) {
  QuantizationConfig q;
  if (!config.is_object() || !config.contains("quantization_config") || config["quantization_config"].is_null()) return q;
  const nlohmann::json& obj = config["quantization_config"];
  const std::string where = where_file + ": quantization_config";
  require(obj.is_object(), where + " is not an object");
  const ConfigFields f(obj, where);
  const std::string method = f.string("quant_method", "");
  if (method != kQuantMethod)
    throw unsupported(where + ": quant_method \"" + method + "\" is not supported (only \"" + kQuantMethod +
                      "\", written by `smolvlm quantize`)");
  const int64_t version = f.integer("format_version", kQuantFormatVersion);
  if (version != kQuantFormatVersion)
    throw unsupported(where + ": format_version " + std::to_string(version) + " is not supported (expected " +
                      std::to_string(kQuantFormatVersion) + ")");
  q.scheme = f.string("scheme", "");
  require(obj.contains("modules") && obj["modules"].is_object(), where + ": \"modules\" must be an object");
  for (const auto& [name, m] : obj["modules"].items()) {
    const std::string mwhere = where + ".modules[\"" + name + "\"]";
    require(m.is_object(), mwhere + " is not an object");
    const ConfigFields mf(m, mwhere);
    QuantizedModule mod;
    mod.scheme = parse_quant_scheme(mf.string("scheme", ""), mwhere);
    mod.group_size = mf.required_size("group_size");
    mod.block_rows = mf.size("block_rows", 1);
    q.modules.emplace(name, mod);
  }
  for (const auto& [key, value] : obj.items())
    if (key != "modules" && key != "quant_method" && key != "format_version" && key != "scheme") q.extra[key] = value;
  return q;
}

nlohmann::ordered_json quantization_config_json(const QuantizationConfig& q) {
  nlohmann::ordered_json j;
  j["quant_method"] = kQuantMethod;
  j["format_version"] = kQuantFormatVersion;
  j["scheme"] = q.scheme;
  for (const auto& [key, value] : q.extra.items()) j[key] = value;
  nlohmann::ordered_json modules = nlohmann::ordered_json::object();
  for (const auto& [name, m] : q.modules)
    modules[name] = {{"scheme", quant_scheme_name(m.scheme)}, {"group_size", m.group_size}, {"block_rows", m.block_rows}};
  j["modules"] = modules;
  return j;
}

}  // namespace smolvlm
