// `smolvlm_inspect_model`: a model folder validated and described as JSON (what `smolvlm info` prints).
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "io/safetensors.h"

using namespace smolvlm;

namespace {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::ordered_json text_config_json(const TextConfig& t) {
  return {{"vocab_size", t.vocab_size},
          {"hidden_size", t.hidden_size},
          {"intermediate_size", t.intermediate_size},
          {"num_hidden_layers", t.num_hidden_layers},
          {"num_attention_heads", t.num_attention_heads},
          {"num_key_value_heads", t.num_key_value_heads},
          {"head_dim", t.head_dim},
          {"max_position_embeddings", t.max_position_embeddings},
          {"rms_norm_eps", t.rms_norm_eps},
          {"rope_theta", t.rope_theta},
          {"rope_type", t.rope_type},
          {"hidden_act", t.hidden_act}};
}

nlohmann::ordered_json vision_config_json(const VisionConfig& v) {
  return {{"hidden_size", v.hidden_size},
          {"intermediate_size", v.intermediate_size},
          {"num_hidden_layers", v.num_hidden_layers},
          {"num_attention_heads", v.num_attention_heads},
          {"image_size", v.image_size},
          {"patch_size", v.patch_size},
          {"layer_norm_eps", v.layer_norm_eps},
          {"hidden_act", v.hidden_act}};
}

// Everything `info` reports, as JSON; the text form is printed from the same object.
nlohmann::ordered_json describe(const ModelConfig& cfg, const Checkpoint* ck) {
  nlohmann::ordered_json j;
  j["model_dir"] = cfg.dir.string();
  j["architecture"] = architecture_name(cfg.arch);
  std::vector<ExpectedTensor> table = expected_tensors(cfg);
  ParameterCounts p = count_parameters(table);
  nlohmann::ordered_json params = {{"total", p.total()}};
  if (cfg.arch == Architecture::Idefics3) {
    params["vision"] = p.vision;
    params["connector"] = p.connector;
  }
  params["text"] = p.text;
  params["lm_head"] = p.lm_head;
  j["parameters"] = params;
  j["tie_word_embeddings"] = cfg.tie_word_embeddings;
  j["tensor_count"] = table.size();
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
  j["text_config"] = text_config_json(cfg.text);
  if (cfg.arch == Architecture::Idefics3) {
    j["vision_config"] = vision_config_json(cfg.vision);
    j["scale_factor"] = cfg.scale_factor;
    j["image_token_id"] = cfg.image_token_id;
    j["image_tokens_per_tile"] = cfg.image_tokens_per_tile();
  }
  j["eos_token_ids"] = cfg.generation.eos_token_ids;
  return j;
}

}  // namespace

extern "C" smolvlm_status smolvlm_inspect_model(const char* ref, int config_only, char** json) {
  if (!json) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_inspect_model: the output pointer is NULL");
  return capi::guarded([&] {
    const std::filesystem::path dir = resolve_model_dir(ref ? ref : "");
    std::unique_ptr<Checkpoint> ck;
    ModelConfig cfg;
    if (config_only) {
      cfg = load_model_config(dir);
    } else {
      ck = Checkpoint::open(dir);
      cfg = ck->config();
    }
    *json = capi::copy_string(describe(cfg, ck.get()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  });
}
