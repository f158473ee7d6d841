#include "model/llama_config.h"

#include <cmath>

#include "core/error.h"

namespace smolvlm {

LlamaConfig parse_llama_config(const ConfigFields& f) {
  LlamaConfig t;
  t.vocab_size = f.required_size("vocab_size");
  t.hidden_size = f.required_size("hidden_size");
  t.intermediate_size = f.required_size("intermediate_size");
  t.num_hidden_layers = f.required_size("num_hidden_layers");
  t.num_attention_heads = f.required_size("num_attention_heads");
  t.num_key_value_heads = f.size("num_key_value_heads", t.num_attention_heads);
  t.head_dim = f.size("head_dim", t.hidden_size / t.num_attention_heads);
  t.max_position_embeddings = f.size("max_position_embeddings", 2048);
  t.rms_norm_eps = f.positive_number("rms_norm_eps", 1e-6);
  t.rope_theta = f.positive_number("rope_theta", 10000.0);
  t.hidden_act = f.string("hidden_act", "silu");
  t.attention_bias = f.boolean("attention_bias", false);
  t.mlp_bias = f.boolean("mlp_bias", false);
  t.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  t.rope_type = "default";
  if (f.has("rope_scaling")) {
    ConfigFields rope = f.object("rope_scaling");
    // HF accepts the legacy key `type` for `rope_type`.
    t.rope_type = rope.has("rope_type") ? rope.string("rope_type", "") : rope.string("type", "");
    if (t.rope_type.empty()) throw bad_input(f.where("rope_scaling") + " has neither \"rope_type\" nor \"type\"");
    t.rope_factor = rope.positive_number("factor", 1.0);
  }
  require(t.head_dim > 0, f.where("head_dim") + ": hidden_size / num_attention_heads is 0 (hidden_size " +
                              std::to_string(t.hidden_size) + " < num_attention_heads " +
                              std::to_string(t.num_attention_heads) + ")");
  require(t.num_attention_heads % t.num_key_value_heads == 0,
          f.location() + ": num_attention_heads (" + std::to_string(t.num_attention_heads) +
              ") must be a multiple of num_key_value_heads (" + std::to_string(t.num_key_value_heads) + ")");
  require(t.head_dim % 2 == 0, f.where("head_dim") + " must be even for rotary embeddings, got " +
                                   std::to_string(t.head_dim));
  require(t.num_hidden_layers <= kMaxConfigLayers,
          f.where("num_hidden_layers") + " is larger than " + std::to_string(kMaxConfigLayers));
  require(t.num_attention_heads * t.head_dim <= kMaxConfigDimension,
          f.location() + ": num_attention_heads * head_dim is too large");
  return t;
}

double LlamaConfig::rope_base() const {
  if (rope_alpha <= 0) return rope_theta;
  const double d = static_cast<double>(head_dim);
  return rope_theta * std::pow(rope_alpha, d / (d - 2.0));
}

void check_llama_supported(const LlamaConfig& c, const std::string& where) {
  if (c.rope_type != "default")
    throw unsupported(where + ": key \"rope_scaling\" has rope_type \"" + c.rope_type +
                      "\"; only the \"default\" RoPE is implemented for Llama");
  if (c.hidden_act != "silu")
    throw unsupported(where + ": key \"hidden_act\" is \"" + c.hidden_act + "\"; only \"silu\" is implemented for Llama");
}

void check_context_fits(const LlamaConfig& c, int64_t context) {
  if (c.positions_bounded && context > c.max_position_embeddings)
    throw bad_input("a context of " + std::to_string(context) + " positions is past the model's max_position_embeddings (" +
                    std::to_string(c.max_position_embeddings) +
                    "): its RoPE past that limit (HF's dynamic NTK without alpha) is not implemented");
}

nlohmann::ordered_json describe_llama_config(const LlamaConfig& t) {
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

}  // namespace smolvlm
