#include "model/hunyuan_arch.h"

#include <string>

#include "core/error.h"
#include "model/llama_arch.h"

namespace smolvlm {

namespace {

constexpr const char* kPrefix = "model.";

// The HY-MT model card's prompt format: <bos>{system}<sep>?<User>{user}<Assistant>{assistant}<eos>...,
// the assistant marker after every user turn (the card renders with add_generation_prompt=False), the
// system messages joined at the front. Used only for a folder without a chat template.
constexpr const char* kDocumentedChatTemplate =
    "{%- set ns = namespace(system='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + message['content'] -%}{%- endif -%}"
    "{%- endfor -%}"
    "<\uff5chy_begin\u2581of\u2581sentence\uff5c>{{ ns.system }}"
    "{%- if ns.system -%}<\uff5chy_place\u2581holder\u2581no\u25813\uff5c>{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}<\uff5chy_User\uff5c>{{ message['content'] }}<\uff5chy_Assistant\uff5c>"
    "{%- elif message['role'] == 'assistant' -%}{{ message['content'] }}<\uff5chy_place\u2581holder\u2581no\u25812\uff5c>"
    "{%- endif -%}"
    "{%- endfor -%}";

// Reads what parse_llama_config leaves at its Llama meaning: the rope_scaling of HunYuan's
// HunYuanDenseV1RotaryEmbedding. "dynamic" with alpha: the fixed base rope_theta * alpha^(d/(d-2)) at
// every position; "dynamic" without alpha: HF's dynamic NTK, which inside max_position_embeddings
// is the plain rope_theta RoPE.
void read_rope(LlamaConfig& c, const ConfigFields& f) {
  if (!f.has("rope_scaling")) return;
  const ConfigFields rope = f.object("rope_scaling");
  if (c.rope_type != "dynamic" && c.rope_type != "default")
    throw unsupported(f.where("rope_scaling") + " has type \"" + c.rope_type +
                      "\"; only \"default\" and \"dynamic\" (with or without \"alpha\") are implemented for "
                      "HunYuanDenseV1ForCausalLM");
  if (c.rope_type == "dynamic" && rope.has("alpha")) {
    c.rope_alpha = rope.number("alpha", 0.0);
    if (c.rope_alpha < 0) throw bad_input(rope.where("alpha") + " must be >= 0");
    require(c.rope_alpha == 0 || c.head_dim > 2, f.where("head_dim") + " must be > 2 for the NTK-alpha RoPE");
  }
  const double base = c.rope_base();
  require(base >= 1 && base <= 1e30, f.where("rope_scaling") + ": the RoPE base rope_theta * alpha^(d/(d-2)) is " +
                                         std::to_string(base) + ", outside [1, 1e30]");
}

std::shared_ptr<const ArchitectureConfig> parse_config(const ConfigFields& top) {
  return std::make_shared<LlamaConfig>(parse_hunyuan_dense_config(top));
}

ModelSpec make_spec(const ModelConfig& cfg) {
  const LlamaConfig& c = cfg.as<LlamaConfig>();
  ComponentSpec text = llama_decoder_spec(c, kPrefix);
  // HF registers query_layernorm / key_layernorm after o_proj in each self_attn.
  const std::string layer = std::string(kPrefix) + "layers.{layer}.self_attn.";
  auto after_o = text.layer.begin();
  while (after_o != text.layer.end() && after_o->role != Role::OProj) ++after_o;
  while (after_o != text.layer.end() && after_o->role == Role::OProj) ++after_o;
  text.layer.insert(after_o, {{layer + "query_layernorm.weight", Role::QNorm, Param::Weight, {c.head_dim}},
                              {layer + "key_layernorm.weight", Role::KNorm, Param::Weight, {c.head_dim}}});
  ComponentSpec head = lm_head_spec(c, c.tie_word_embeddings, text.tensor(Role::Embedding).name);
  return ModelSpec{kHunYuanDenseV1ForCausalLM.name, {std::move(text), std::move(head)}};
}

ModelComponents build_components(const ModelConfig& cfg, const ModelSpec& spec, const Checkpoint& ckpt) {
  const LlamaConfig& c = cfg.as<LlamaConfig>();
  ModelComponents m;
  m.text = std::make_unique<LlamaModel>(ckpt, c, spec.component(Component::Text), spec.component(Component::LmHead));
  return m;
}

nlohmann::ordered_json describe_config(const ModelConfig& cfg) {
  const LlamaConfig& c = cfg.as<LlamaConfig>();
  nlohmann::ordered_json t = describe_llama_config(c);
  t["rope_alpha"] = c.rope_alpha;
  t["rope_base"] = c.rope_base();
  t["qk_norm"] = "after rope";
  return {{"text_config", t}};
}

}  // namespace

LlamaConfig parse_hunyuan_dense_config(const ConfigFields& f) {
  LlamaConfig c = parse_llama_config(f);
  c.qk_norm = true;  // HF applies it unconditionally (use_qk_norm is not read)
  c.positions_bounded = true;
  read_rope(c, f);
  check_hunyuan_dense_supported(c, f);
  return c;
}

void check_hunyuan_dense_supported(const LlamaConfig& c, const ConfigFields& f) {
  if (c.hidden_act != "silu")
    throw unsupported(f.where("hidden_act") + " is \"" + c.hidden_act +
                      "\"; only \"silu\" is implemented for HunYuanDenseV1ForCausalLM");
  // A checkpoint trained with cross-layer attention shares K/V between layers; HF's dense class
  // (and this engine) computes every layer's own K/V, so such a model would run wrong.
  if (f.boolean("use_cla", false) && f.integer("cla_share_factor", 1) > 1)
    throw unsupported(f.where("use_cla") + " is true with cla_share_factor " +
                      std::to_string(f.integer("cla_share_factor", 1)) +
                      ": cross-layer attention is not implemented for HunYuanDenseV1ForCausalLM");
}

const Architecture kHunYuanDenseV1ForCausalLM{
    .name = "HunYuanDenseV1ForCausalLM",
    .model_type = "hunyuan_v1_dense",
    .parse_config = &parse_config,
    .generation_fallback = &generation_from,
    .spec = &make_spec,
    .build = &build_components,
    .describe = &describe_config,
    .check_processor = nullptr,
    .documented_chat_template = kDocumentedChatTemplate,
};

}  // namespace smolvlm
