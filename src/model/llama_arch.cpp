#include "model/llama_arch.h"

namespace smolvlm {

namespace {

constexpr const char* kPrefix = "model.";

// A linear layer's weight and its bias, stored only when `bias`.
void add_linear(std::vector<TensorRule>& rules, const std::string& module, Role role, int64_t out_features,
                int64_t in_features, bool bias) {
  rules.push_back({module + ".weight", role, Param::Weight, {out_features, in_features}});
  rules.push_back({module + ".bias", role, Param::Bias, {out_features}, bias ? Presence::Required : Presence::Absent});
}

std::shared_ptr<const ArchitectureConfig> parse_config(const ConfigFields& top) {
  return std::make_shared<LlamaConfig>(parse_llama_config(top));
}

ModelSpec make_spec(const ModelConfig& cfg) {
  const LlamaConfig& c = cfg.as<LlamaConfig>();
  ComponentSpec text = llama_decoder_spec(c, kPrefix);
  ComponentSpec head = lm_head_spec(c, c.tie_word_embeddings, text.tensor(Role::Embedding).name);
  return ModelSpec{kLlamaForCausalLM.name, {std::move(text), std::move(head)}};
}

ModelComponents build_components(const ModelConfig& cfg, const ModelSpec& spec, const Checkpoint& ckpt) {
  const LlamaConfig& c = cfg.as<LlamaConfig>();
  check_llama_supported(c, cfg.config_path());
  ModelComponents m;
  m.text = std::make_unique<LlamaModel>(ckpt, c, spec.component(Component::Text), spec.component(Component::LmHead));
  return m;
}

nlohmann::ordered_json describe_config(const ModelConfig& cfg) {
  return {{"text_config", describe_llama_config(cfg.as<LlamaConfig>())}};
}

}  // namespace

ComponentSpec llama_decoder_spec(const LlamaConfig& c, const std::string& prefix) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q_dim = c.num_attention_heads * c.head_dim, kv_dim = c.num_key_value_heads * c.head_dim;
  ComponentSpec s{Component::Text};
  s.head = {{prefix + "embed_tokens.weight", Role::Embedding, Param::Weight, {c.vocab_size, H}}};
  s.layers = c.num_hidden_layers;
  const std::string layer = prefix + "layers.{layer}.";
  add_linear(s.layer, layer + "self_attn.q_proj", Role::QProj, q_dim, H, c.attention_bias);
  add_linear(s.layer, layer + "self_attn.k_proj", Role::KProj, kv_dim, H, c.attention_bias);
  add_linear(s.layer, layer + "self_attn.v_proj", Role::VProj, kv_dim, H, c.attention_bias);
  add_linear(s.layer, layer + "self_attn.o_proj", Role::OProj, H, q_dim, c.attention_bias);
  add_linear(s.layer, layer + "mlp.gate_proj", Role::GateProj, I, H, c.mlp_bias);
  add_linear(s.layer, layer + "mlp.up_proj", Role::UpProj, I, H, c.mlp_bias);
  add_linear(s.layer, layer + "mlp.down_proj", Role::DownProj, H, I, c.mlp_bias);
  s.layer.push_back({layer + "input_layernorm.weight", Role::AttentionNorm, Param::Weight, {H}});
  s.layer.push_back({layer + "post_attention_layernorm.weight", Role::MlpNorm, Param::Weight, {H}});
  s.tail = {{prefix + "norm.weight", Role::FinalNorm, Param::Weight, {H}}};
  return s;
}

ComponentSpec lm_head_spec(const LlamaConfig& c, bool tied, const std::string& embedding_name) {
  ComponentSpec s{Component::LmHead};
  s.head = {{"lm_head.weight", Role::LmHead, Param::Weight, {c.vocab_size, c.hidden_size},
             tied ? Presence::Tied : Presence::Required, tied ? embedding_name : ""}};
  return s;
}

const Architecture kLlamaForCausalLM{
    .name = "LlamaForCausalLM",
    .model_type = "llama",
    .parse_config = &parse_config,
    .generation_fallback = &generation_from,
    .spec = &make_spec,
    .build = &build_components,
    .describe = &describe_config,
    .check_processor = nullptr,
};

}  // namespace smolvlm
