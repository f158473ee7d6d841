// The architectures the engine runs, keyed by HF's `architectures[0]` / `model_type`: each brings its
// config parser, its weight spec (model/spec.h), the constructor of its components and what `info`
// reports. Loading a model folder starts here; nothing else switches on the architecture.
//
// A new Llama-like architecture adds its config class (model/<name>_config.{h,cpp}), its spec and
// Architecture entry (model/<name>_arch.{h,cpp}, reusing llama_decoder_spec / lm_head_spec), what
// its math adds to the components, its tests, and one line in registry.cpp's list.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/error.h"
#include "io/config.h"
#include "io/json_fields.h"
#include "io/safetensors.h"
#include "model/architecture_config.h"
#include "model/connector.h"
#include "model/idefics3_config.h"
#include "model/llama_config.h"
#include "model/llama.h"
#include "model/siglip.h"
#include "model/spec.h"

namespace smolvlm {

struct Architecture;

// Everything read from a model folder's configs.
struct ModelConfig {
  const Architecture* architecture = nullptr;
  std::filesystem::path dir;                           // folder the config was read from
  std::shared_ptr<const ArchitectureConfig> model;     // config.json, parsed by the architecture
  GenerationConfig generation;
  std::optional<ImageProcessorConfig> image_processor;  // present when preprocessor_config.json exists
  std::optional<ProcessorConfig> processor;             // present when processor_config.json exists

  const char* architecture_name() const;
  std::string config_path() const { return (dir / "config.json").string(); }
  // The decoder's config (the whole config of a text model, text_config of an image-text one).
  const LlamaConfig& decoder() const;
  // The image-text config; nullptr for a text-only architecture.
  const Idefics3Config* image_text() const;

  // config.json as its architecture's config class; Error(Internal) for another class.
  template <class T>
  const T& as() const {
    const T* c = dynamic_cast<const T*>(model.get());
    if (!c) throw internal_error(std::string(architecture_name()) + " config read as another architecture's");
    return *c;
  }
};

// The parts of a loaded model, bound to the checkpoint's mapped weights.
struct ModelComponents {
  std::unique_ptr<LlamaModel> text;
  std::unique_ptr<SiglipVision> vision;         // image-text models only
  std::unique_ptr<Idefics3Connector> connector;  // with vision
};

// One supported architecture. Entries are constant data; registry.cpp lists them.
struct Architecture {
  const char* name;        // HF architectures[0], e.g. "LlamaForCausalLM"
  const char* model_type;  // HF model_type, e.g. "llama"
  // config.json -> the architecture's config class; Error(BadInput) naming the key.
  std::shared_ptr<const ArchitectureConfig> (*parse_config)(const ConfigFields& top);
  // The generation values HF derives from config.json when generation_config.json is absent.
  GenerationConfig (*generation_fallback)(const ConfigFields& top);
  // Every tensor HF creates for the config.
  ModelSpec (*spec)(const ModelConfig& cfg);
  // Binds the components to a checkpoint validated against `spec`; Error(Unsupported) naming the
  // key for config values the math does not implement.
  ModelComponents (*build)(const ModelConfig& cfg, const ModelSpec& spec, const Checkpoint& ckpt);
  // The config values `info` reports ("text_config", ...), in order.
  nlohmann::ordered_json (*describe)(const ModelConfig& cfg);
  // Consistency of processor_config.json with config.json; null when there is nothing to check.
  void (*check_processor)(const ModelConfig& cfg, const ProcessorConfig& processor, const std::string& where);
  // The chat format the model's documentation gives, as a chat template, for folders that carry no
  // template of their own; null when the architecture has no documented format.
  const char* documented_chat_template = nullptr;
};

// The supported architectures, in the order messages list them.
std::span<const Architecture* const> architectures();

// Parses config.json (+ generation_config.json, preprocessor_config.json, processor_config.json when
// present) in `dir`. Unknown keys are ignored; missing required keys or wrong types are Error(BadInput)
// naming the file and key; unknown architectures are Error(Unsupported) listing the known ones.
ModelConfig load_model_config(const std::filesystem::path& dir);
// config.json alone from JSON text already in memory (fuzzing, tests); `name` is used in messages.
ModelConfig parse_model_config(const std::string& config_json, const std::string& name);

// The tensors HF creates for the config.
ModelSpec model_spec(const ModelConfig& cfg);

// The weights of cfg.dir, validated against the spec (every tensor present with its shape and a
// float dtype, nothing unexpected), mapped or read into memory as `residency` says.
std::unique_ptr<Checkpoint> open_checkpoint(const ModelConfig& cfg, FileResidency residency = FileResidency::Mapped);

}  // namespace smolvlm
