// `smolvlm_inspect_model`: a model folder validated and described as JSON (what `smolvlm info` prints).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "io/safetensors.h"
#include "model/quantized_weights.h"
#include "model/registry.h"
#include "model/spec.h"

using namespace smolvlm;

namespace {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Everything `info` reports, as JSON; the text form is printed from the same object.
nlohmann::ordered_json describe(const ModelConfig& cfg, const Checkpoint* ck) {
  nlohmann::ordered_json j;
  j["model_dir"] = cfg.dir.string();
  j["architecture"] = cfg.architecture_name();
  const ModelSpec spec = model_spec(cfg);
  const ParameterCounts p = count_parameters(spec);
  nlohmann::ordered_json params = {{"total", p.total()}};
  for (const ParameterCount& c : p.components) params[component_name(c.component)] = c.parameters;
  j["parameters"] = params;
  const std::vector<ExpectedTensor> table = all_tensors(spec);
  j["tie_word_embeddings"] =
      std::any_of(table.begin(), table.end(), [](const ExpectedTensor& t) { return t.presence == Presence::Tied; });
  j["tensor_count"] = expected_tensors(spec).size();
  if (ck) {
    std::set<std::string> dtypes;
    for (const auto& [name, t] : ck->tensors()) dtypes.insert(dtype_name(t.dtype));
    j["dtypes"] = dtypes;
    j["files"] = ck->files();
    j["file_bytes"] = ck->file_bytes();
    j["identity"] = hex64(ck->identity());
    // Stored bits per parameter of each component: 16 for BF16; quantized modules count their codes
    // and block parameters (a tied lm_head stores nothing of its own).
    std::map<Component, int64_t> bytes;
    for (const ExpectedTensor& t : table)
      if (t.presence == Presence::Required)
        for (const std::string& name : stored_names(*ck, t))
          if (const TensorView* v = ck->find(name)) bytes[t.component] += int64_t(v->nbytes);
    nlohmann::ordered_json bits;
    for (const ParameterCount& c : p.components)
      if (c.parameters > 0) bits[component_name(c.component)] = 8.0 * double(bytes[c.component]) / double(c.parameters);
    j["bits_per_weight"] = bits;
    if (!ck->quantization().empty()) {
      std::map<std::string, int64_t> by_scheme;
      for (const auto& [name, m] : ck->quantization().modules) ++by_scheme[quant_scheme_name(m.scheme)];
      j["quantization"] = {{"scheme", ck->quantization().scheme}, {"modules", by_scheme}};
    }
    // What decode runs on this CPU's best kernel path, under each precision it has.
    const KernelPath path = best_kernel_path();
    nlohmann::ordered_json products = {{"kernel_path", kernel_path_name(path)}};
    for (const Precision precision : {Precision::Exact, Precision::Fast})
      if (precision_supported(path, precision))
        products[precision_name(precision)] = capi::decode_products(cfg, *ck, path, precision);
    j["decode_products"] = products;
  } else {
    j["weights"] = nullptr;
  }
  const nlohmann::ordered_json config_values = cfg.architecture->describe(cfg);
  for (const auto& [key, value] : config_values.items()) j[key] = value;
  j["eos_token_ids"] = cfg.generation.eos_token_ids;
  return j;
}

}  // namespace

extern "C" smolvlm_status smolvlm_inspect_model(const char* ref, int config_only, char** json) {
  if (!json) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_inspect_model: the output pointer is NULL");
  return capi::guarded([&] {
    const std::filesystem::path dir = resolve_model_dir(ref ? ref : "");
    const ModelConfig cfg = load_model_config(dir);
    std::unique_ptr<Checkpoint> ck;
    if (!config_only) ck = open_checkpoint(cfg);
    *json = capi::copy_string(describe(cfg, ck.get()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  });
}
