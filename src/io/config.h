// Model configuration as HF transformers reads it: one struct per HF config class, HF's defaults
// applied in exactly one place (config.cpp). See shared/reference/models/REAL_CONFIG_NOTES.md for
// which keys HF actually reads (e.g. Idefics3 ties lm_head only on the *top-level* flag).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace smolvlm {

enum class Architecture { Idefics3, Llama };
const char* architecture_name(Architecture a);  // "Idefics3ForConditionalGeneration", "LlamaForCausalLM"

// LlamaConfig (also Idefics3's text_config).
struct TextConfig {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;     // HF: defaults to num_attention_heads
  int64_t head_dim = 128;               // HF: hidden_size / num_attention_heads when absent
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::string rope_type = "default";    // from rope_scaling.{rope_type|type}; null -> "default"
  double rope_factor = 1.0;
  std::string hidden_act = "silu";
  bool attention_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;     // as written in this config (HF LlamaConfig default: false)
};

// Idefics3VisionConfig (SigLIP-style tower).
struct VisionConfig {
  int64_t hidden_size = 1152;
  int64_t intermediate_size = 3072;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 16;
  int64_t num_channels = 3;
  int64_t image_size = 224;
  int64_t patch_size = 32;
  double layer_norm_eps = 1e-6;
  std::string hidden_act = "gelu_pytorch_tanh";
};

// generation_config.json (falls back to config.json values when the file is absent).
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;   // `eos_token_id` may be an int or a list
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
};

// preprocessor_config.json of Idefics3ImageProcessor.
struct ImageProcessorConfig {
  bool do_convert_rgb = true;
  bool do_resize = true;
  int64_t longest_edge = 4 * 364;        // size.longest_edge
  int resample = 1;                      // PIL filter id (1 = LANCZOS)
  bool do_image_splitting = true;
  int64_t max_image_size = 364;          // max_image_size.longest_edge
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  float image_mean[3] = {0.5f, 0.5f, 0.5f};
  float image_std[3] = {0.5f, 0.5f, 0.5f};
  bool do_pad = true;
};

// processor_config.json of Idefics3Processor.
struct ProcessorConfig {
  int64_t image_seq_len = 169;
};

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::filesystem::path dir;             // folder the config was read from
  TextConfig text;
  VisionConfig vision;                   // Idefics3 only
  int64_t scale_factor = 2;              // Idefics3 top-level `scale_factor`
  int64_t image_token_id = 128257;       // Idefics3 top-level `image_token_id`
  bool tie_word_embeddings = false;      // the flag HF actually uses for this architecture
  GenerationConfig generation;
  std::optional<ImageProcessorConfig> image_processor;  // present when preprocessor_config.json exists
  std::optional<ProcessorConfig> processor;             // present when processor_config.json exists

  // Idefics3: `<image>` tokens one tile becomes, (image_size / patch_size)^2 / scale_factor^2.
  int64_t image_tokens_per_tile() const;
};

// Upper bound on any size read from a config (dimensions, layer counts, vocab): larger values are
// Error(BadInput), so that products of sizes never overflow int64.
inline constexpr int64_t kMaxConfigDimension = int64_t(1) << 24;

// Parses config.json (+ generation_config.json, preprocessor_config.json, processor_config.json when
// present) in `dir`. Unknown keys are ignored; missing required keys or wrong types are Error(BadInput)
// naming the file and key; unknown architectures are Error(Unsupported).
ModelConfig load_model_config(const std::filesystem::path& dir);
// The same from JSON text already in memory (fuzzing, tests); `name` is used in messages.
ModelConfig parse_model_config(const std::string& config_json, const std::string& name);
ImageProcessorConfig parse_image_processor_config(const std::string& json_text, const std::string& name);
ProcessorConfig parse_processor_config(const std::string& json_text, const std::string& name);
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& name);

}  // namespace smolvlm
