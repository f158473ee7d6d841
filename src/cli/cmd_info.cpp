// `smolvlm info`: what a model folder holds (architecture, parameters per component, dtypes, sizes,
// key config values), after validating every file of it.
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "cli/command.h"

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
    std::string bits;
    for (const auto& [part, b] : j["bits_per_weight"].items()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2f", bits.empty() ? "" : ", ", part.c_str(), b.get<double>());
      bits += buf;
    }
    std::cout << "bits/weight:  " << bits << "\n";
    if (j.contains("quantization")) {
      std::string modules;
      for (const auto& [scheme, n] : j["quantization"]["modules"].items())
        modules += (modules.empty() ? "" : ", ") + std::to_string(n.get<int64_t>()) + " " + scheme;
      std::cout << "quantized:    " << modules << " modules (scheme " << j["quantization"]["scheme"].get<std::string>()
                << ")\n";
    }
    const auto& products = j["decode_products"];
    std::cout << "decode:       " << products["kernel_path"].get<std::string>() << " path: exact "
              << products["exact"].get<std::string>();
    if (products.contains("fast")) std::cout << "; fast " << products["fast"].get<std::string>();
    std::cout << "\n";
  } else {
    std::cout << "weights:      not read (--config-only)\n";
  }
  const auto& t = j["text_config"];
  std::cout << "text:         hidden " << t["hidden_size"] << ", layers " << t["num_hidden_layers"] << ", heads "
            << t["num_attention_heads"] << " (kv " << t["num_key_value_heads"] << ", head_dim " << t["head_dim"]
            << "), intermediate " << t["intermediate_size"] << ", vocab " << t["vocab_size"] << ", rope "
            << t["rope_type"].get<std::string>() << " theta " << t["rope_theta"] << ", rms_norm_eps "
            << t["rms_norm_eps"] << ", max positions " << t["max_position_embeddings"] << "\n";
  if (t.contains("rope_alpha"))
    std::cout << "              rope alpha " << t["rope_alpha"] << " (base " << t["rope_base"] << "), q/k norm "
              << t["qk_norm"].get<std::string>() << "\n";
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
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
  sub.add_flag("--json", *as_json, "print one JSON object");
  sub.add_flag("--config-only", *config_only, "read the configs only (parameter counts from config.json), not the weights");
  return [=]() {
    char* json = nullptr;
    api::check(smolvlm_inspect_model(model->c_str(), *config_only ? 1 : 0, &json));
    const auto j = nlohmann::ordered_json::parse(api::take_string(json));
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
