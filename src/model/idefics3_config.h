// Idefics3Config as HF transformers reads it (transformers/models/idefics3/configuration_idefics3.py):
// the top-level config of Idefics3ForConditionalGeneration (SmolVLM) with its vision tower config and
// its Llama text config. Defaults live in parse_idefics3_config only.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "io/config.h"
#include "io/json_fields.h"
#include "model/architecture_config.h"
#include "model/llama_config.h"

namespace smolvlm {

// Idefics3VisionConfig (SigLIP-style tower).
struct Idefics3VisionConfig {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_channels = 0;
  int64_t image_size = 0;
  int64_t patch_size = 0;
  double layer_norm_eps = 0;
  std::string hidden_act;

  int64_t patches_per_side() const { return image_size / patch_size; }
};

struct Idefics3Config : ArchitectureConfig {
  LlamaConfig text;              // text_config
  Idefics3VisionConfig vision;   // vision_config
  int64_t scale_factor = 0;      // pixel-shuffle factor of the connector
  int64_t image_token_id = 0;
  bool tie_word_embeddings = false;  // the top-level flag: the only one HF reads for this class

  // `<image>` tokens one tile becomes, (image_size / patch_size)^2 / scale_factor^2.
  int64_t image_tokens_per_tile() const;
};

// Error(BadInput) naming the file, sub-object and key.
Idefics3Config parse_idefics3_config(const ConfigFields& top);

// GenerationConfig.from_model_config: a value the top level leaves unset comes from text_config.
GenerationConfig idefics3_generation_fallback(const ConfigFields& top);

// Error(Unsupported) naming the key and value for what the vision tower does not implement.
void check_idefics3_supported(const Idefics3Config& c, const std::string& where);

// The values `info` reports: text_config, vision_config, connector values.
nlohmann::ordered_json describe_idefics3_config(const Idefics3Config& c);

}  // namespace smolvlm
