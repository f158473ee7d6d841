// LlamaConfig as HF transformers reads it (transformers/models/llama/configuration_llama.py): the
// config of LlamaForCausalLM and the text_config of Idefics3. Defaults live in parse_llama_config only.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "io/json_fields.h"
#include "model/architecture_config.h"

namespace smolvlm {

struct LlamaConfig : ArchitectureConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0;
  double rope_theta = 0;
  std::string rope_type;    // from rope_scaling.{rope_type|type}; "default" when rope_scaling is null
  double rope_factor = 1.0;
  std::string hidden_act;
  bool attention_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;  // as written in this (sub-)config; HF LlamaConfig default false
  // Variations of the decoder math that other Llama-like architectures set (Llama leaves them off):
  double rope_alpha = 0;     // > 0: NTK-alpha RoPE, base = rope_theta * alpha^(head_dim / (head_dim - 2))
  bool qk_norm = false;      // per-head RMSNorm of queries and keys after RoPE (weights [head_dim])
  bool positions_bounded = false;  // positions past max_position_embeddings are refused

  // The RoPE base the decoder uses: rope_theta, or its NTK-alpha value.
  double rope_base() const;
};

// LlamaConfig.__init__: defaults, derived values (num_key_value_heads, head_dim) and the checks that
// keep every tensor size in range. Error(BadInput) naming `f`'s location and the key.
LlamaConfig parse_llama_config(const ConfigFields& f);

// Error(Unsupported) naming the key and value when the config asks for what LlamaModel does not
// implement (RoPE other than "default", an activation other than silu). `where` names the config.
void check_llama_supported(const LlamaConfig& c, const std::string& where);

// Error(BadInput) when a context of `context` positions reaches past max_position_embeddings on a
// decoder with positions_bounded (its RoPE past that limit is not implemented).
void check_context_fits(const LlamaConfig& c, int64_t context);

// The values `info` reports.
nlohmann::ordered_json describe_llama_config(const LlamaConfig& c);

}  // namespace smolvlm
