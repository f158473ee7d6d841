#include "model/registry.h"

#include <array>

#include "io/file.h"
#include "model/hunyuan_arch.h"
#include "model/idefics3_arch.h"
#include "model/llama_arch.h"

namespace smolvlm {

namespace {

// The one list of supported architectures.
constexpr std::array<const Architecture*, 3> kArchitectures = {&kIdefics3ForConditionalGeneration, &kLlamaForCausalLM,
                                                                &kHunYuanDenseV1ForCausalLM};

std::string known(const char* Architecture::*key) {
  std::string s;
  for (const Architecture* a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a->*key);
  return s;
}

const Architecture& find_architecture(const ConfigFields& f) {
  if (const nlohmann::json* a = f.get("architectures")) {
    if (!a->is_array()) throw bad_input(f.where("architectures") + " must be a list of strings");
    if (!a->empty()) {
      if (!a->at(0).is_string()) throw bad_input(f.where("architectures") + " must be a list of strings");
      const std::string name = a->at(0).get<std::string>();
      for (const Architecture* arch : kArchitectures)
        if (name == arch->name) return *arch;
      throw unsupported(f.location() + ": architecture \"" + name + "\" is not supported (supported: " +
                        known(&Architecture::name) + ")");
    }
  }
  if (!f.has("model_type"))
    throw bad_input(f.location() + ": neither \"architectures\" nor \"model_type\" names the model class");
  const std::string type = f.string("model_type", "");
  for (const Architecture* arch : kArchitectures)
    if (type == arch->model_type) return *arch;
  throw unsupported(f.location() + ": model_type \"" + type + "\" is not supported (supported: " +
                    known(&Architecture::model_type) + ")");
}

std::optional<std::string> read_if_present(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return read_file(path, kMaxConfigFileBytes);
}

}  // namespace

const char* ModelConfig::architecture_name() const { return architecture ? architecture->name : "(no architecture)"; }

const Idefics3Config* ModelConfig::image_text() const { return dynamic_cast<const Idefics3Config*>(model.get()); }

const LlamaConfig& ModelConfig::decoder() const {
  if (const Idefics3Config* c = image_text()) return c->text;
  return as<LlamaConfig>();
}

std::span<const Architecture* const> architectures() { return kArchitectures; }

ModelConfig parse_model_config(const std::string& config_json, const std::string& name) {
  const nlohmann::json j = parse_json_object(config_json, name);
  const ConfigFields top(j, name);
  ModelConfig cfg;
  cfg.architecture = &find_architecture(top);
  cfg.model = cfg.architecture->parse_config(top);
  cfg.generation = cfg.architecture->generation_fallback(top);
  return cfg;
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  const std::filesystem::path config_path = dir / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec))
    throw bad_input(dir.string() + ": no config.json in this folder (is it a model folder?)");
  ModelConfig cfg = parse_model_config(read_file(config_path, kMaxConfigFileBytes), config_path.string());
  cfg.dir = dir;
  const std::filesystem::path gen_path = dir / "generation_config.json";
  if (auto text = read_if_present(gen_path)) cfg.generation = parse_generation_config(*text, gen_path.string());
  const std::filesystem::path pre_path = dir / "preprocessor_config.json";
  if (auto text = read_if_present(pre_path)) cfg.image_processor = parse_image_processor_config(*text, pre_path.string());
  const std::filesystem::path proc_path = dir / "processor_config.json";
  if (auto text = read_if_present(proc_path)) {
    cfg.processor = parse_processor_config(*text, proc_path.string());
    if (cfg.architecture->check_processor) cfg.architecture->check_processor(cfg, *cfg.processor, proc_path.string());
  }
  return cfg;
}

ModelSpec model_spec(const ModelConfig& cfg) {
  if (!cfg.architecture) throw internal_error("model_spec: the config names no architecture");
  return cfg.architecture->spec(cfg);
}

std::unique_ptr<Checkpoint> open_checkpoint(const ModelConfig& cfg, FileResidency residency) {
  std::unique_ptr<Checkpoint> ckpt = Checkpoint::open(cfg.dir, residency);
  validate_checkpoint(model_spec(cfg), *ckpt);
  return ckpt;
}

}  // namespace smolvlm
