// `smolvlm info`: what a model folder holds (architecture, parameters per component, dtypes, sizes,
// key config values), after validating every file of it.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>

#include "cli/command.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "io/safetensors.h"
#include "model/registry.h"
#include "model/spec.h"

namespace smolvlm::cli {
namespace {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

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
  } else {
    j["weights"] = nullptr;
  }
  const nlohmann::ordered_json config_values = cfg.architecture->describe(cfg);
  for (const auto& [key, value] : config_values.items()) j[key] = value;
  j["eos_token_ids"] = cfg.generation.eos_token_ids;
  return j;
}

void print_text(const nlohmann::ordered_json& j) {
  auto count = [](const nlohmann::ordered_json& v) { return with_commas(v.get<int64_t>()); };
  std::cout << "model:        " << j["model_dir"].get<std::string>() << "\n"
            << "architecture: " << j["architecture"].get<std::string>() << "\n"
            << "parameters:   " << count(j["parameters"]["total"]) << "\n";
  for (const char* part : {"vision", "connector", "text", "lm_head"}) {
    if (!j["parameters"].contains(part)) continue;
    std::string label = std::string("  ") + part + ":";
    label.resize(14, ' ');
    std::cout << label << count(j["parameters"][part]);
    if (std::string(part) == "lm_head" && j["tie_word_embeddings"].get<bool>()) std::cout << " (tied to embed_tokens)";
    std::cout << "\n";
  }
  std::cout << "tensors:      " << j["tensor_count"].get<size_t>() << "\n";
  if (j.contains("files")) {
    std::string dtypes, files;
    for (const auto& d : j["dtypes"]) dtypes += (dtypes.empty() ? "" : ", ") + d.get<std::string>();
    for (const auto& f : j["files"]) files += (files.empty() ? "" : ", ") + f.get<std::string>();
    std::cout << "dtypes:       " << dtypes << "\n"
              << "files:        " << files << " (" << count(j["file_bytes"]) << " bytes)\n"
              << "identity:     " << j["identity"].get<std::string>() << "\n";
  } else {
    std::cout << "weights:      not read (--config-only)\n";
  }
  const auto& t = j["text_config"];
  std::cout << "text:         hidden " << t["hidden_size"] << ", layers " << t["num_hidden_layers"] << ", heads "
            << t["num_attention_heads"] << " (kv " << t["num_key_value_heads"] << ", head_dim " << t["head_dim"]
            << "), intermediate " << t["intermediate_size"] << ", vocab " << t["vocab_size"] << ", rope "
            << t["rope_type"].get<std::string>() << " theta " << t["rope_theta"] << ", rms_norm_eps "
            << t["rms_norm_eps"] << ", max positions " << t["max_position_embeddings"] << "\n";
  if (j.contains("vision_config")) {
    const auto& v = j["vision_config"];
    std::cout << "vision:       hidden " << v["hidden_size"] << ", layers " << v["num_hidden_layers"] << ", heads "
              << v["num_attention_heads"] << ", intermediate " << v["intermediate_size"] << ", image "
              << v["image_size"] << ", patch " << v["patch_size"] << "\n"
              << "connector:    scale_factor " << j["scale_factor"] << ", " << j["image_tokens_per_tile"]
              << " image tokens per tile, image_token_id " << j["image_token_id"] << "\n";
  }
  std::cout << "eos ids:      " << j["eos_token_ids"].dump() << "\n";
}

const Command kInfo{"info", "Describe a model folder: architecture, parameters, tensors, dtypes, config", [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto config_only = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + kDefaultModelId + ")");
  sub.add_flag("--json", *as_json, "print one JSON object");
  sub.add_flag("--config-only", *config_only, "read the configs only (parameter counts from config.json), not the weights");
  return [=]() {
    std::filesystem::path dir = resolve_model_dir(*model);
    const ModelConfig cfg = load_model_config(dir);
    std::unique_ptr<Checkpoint> ck;
    if (!*config_only) {
      if (!Checkpoint::has_weights(dir))
        throw bad_input(dir.string() + ": no weights: neither model.safetensors nor model.safetensors.index.json "
                        "exists (`smolvlm info --config-only` reads the configs alone)");
      ck = open_checkpoint(cfg);
    }
    nlohmann::ordered_json j = describe(cfg, ck.get());
    if (*as_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      print_text(j);
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
