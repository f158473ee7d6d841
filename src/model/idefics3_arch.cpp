#include "model/idefics3_arch.h"

#include "model/llama_arch.h"

namespace smolvlm {

namespace {

constexpr const char* kVisionPrefix = "model.vision_model.";
constexpr const char* kTextPrefix = "model.text_model.";

// A linear layer with its bias (every linear layer of the tower has one).
void add_linear(std::vector<TensorRule>& rules, const std::string& module, Role role, int64_t out_features,
                int64_t in_features) {
  rules.push_back({module + ".weight", role, Param::Weight, {out_features, in_features}});
  rules.push_back({module + ".bias", role, Param::Bias, {out_features}});
}

void add_layer_norm(std::vector<TensorRule>& rules, const std::string& module, Role role, int64_t n) {
  rules.push_back({module + ".weight", role, Param::Weight, {n}});
  rules.push_back({module + ".bias", role, Param::Bias, {n}});
}

std::shared_ptr<const ArchitectureConfig> parse_config(const ConfigFields& top) {
  return std::make_shared<Idefics3Config>(parse_idefics3_config(top));
}

ModelSpec make_spec(const ModelConfig& cfg) {
  const Idefics3Config& c = cfg.as<Idefics3Config>();
  ComponentSpec text = llama_decoder_spec(c.text, kTextPrefix);
  // Idefics3ForConditionalGeneration ties lm_head on the top-level flag only.
  ComponentSpec head = lm_head_spec(c.text, c.tie_word_embeddings, text.tensor(Role::Embedding).name);
  return ModelSpec{kIdefics3ForConditionalGeneration.name,
                   {idefics3_vision_spec(c.vision), idefics3_connector_spec(c), std::move(text), std::move(head)}};
}

ModelComponents build_components(const ModelConfig& cfg, const ModelSpec& spec, const Checkpoint& ckpt) {
  const Idefics3Config& c = cfg.as<Idefics3Config>();
  check_idefics3_supported(c, cfg.config_path());
  ModelComponents m;
  m.text = std::make_unique<LlamaModel>(ckpt, c.text, spec.component(Component::Text), spec.component(Component::LmHead));
  m.vision = std::make_unique<SiglipVision>(ckpt, c.vision, spec.component(Component::Vision));
  m.connector = std::make_unique<Idefics3Connector>(ckpt, c, spec.component(Component::Connector));
  return m;
}

nlohmann::ordered_json describe_config(const ModelConfig& cfg) { return describe_idefics3_config(cfg.as<Idefics3Config>()); }

void check_processor(const ModelConfig& cfg, const ProcessorConfig& processor, const std::string& where) {
  const int64_t per_tile = cfg.as<Idefics3Config>().image_tokens_per_tile();
  if (processor.image_seq_len != per_tile)
    throw bad_input(where + ": image_seq_len " + std::to_string(processor.image_seq_len) +
                    " does not match config.json, which gives (image_size / patch_size)^2 / scale_factor^2 = " +
                    std::to_string(per_tile) + " image tokens per tile");
}

}  // namespace

ComponentSpec idefics3_vision_spec(const Idefics3VisionConfig& v) {
  const int64_t H = v.hidden_size, grid = v.patches_per_side();
  const std::string p = kVisionPrefix;
  ComponentSpec s{Component::Vision};
  s.head = {{p + "embeddings.patch_embedding.weight", Role::PatchEmbedding, Param::Weight,
             {H, v.num_channels, v.patch_size, v.patch_size}},
            {p + "embeddings.patch_embedding.bias", Role::PatchEmbedding, Param::Bias, {H}},
            {p + "embeddings.position_embedding.weight", Role::PositionEmbedding, Param::Weight, {grid * grid, H}}};
  s.layers = v.num_hidden_layers;
  const std::string layer = p + "encoder.layers.{layer}.";
  add_linear(s.layer, layer + "self_attn.k_proj", Role::KProj, H, H);
  add_linear(s.layer, layer + "self_attn.v_proj", Role::VProj, H, H);
  add_linear(s.layer, layer + "self_attn.q_proj", Role::QProj, H, H);
  add_linear(s.layer, layer + "self_attn.out_proj", Role::OProj, H, H);
  add_layer_norm(s.layer, layer + "layer_norm1", Role::AttentionNorm, H);
  add_linear(s.layer, layer + "mlp.fc1", Role::Fc1, v.intermediate_size, H);
  add_linear(s.layer, layer + "mlp.fc2", Role::Fc2, H, v.intermediate_size);
  add_layer_norm(s.layer, layer + "layer_norm2", Role::MlpNorm, H);
  add_layer_norm(s.tail, p + "post_layernorm", Role::FinalNorm, H);
  return s;
}

ComponentSpec idefics3_connector_spec(const Idefics3Config& c) {
  const int64_t s2 = c.scale_factor * c.scale_factor;
  ComponentSpec s{Component::Connector};
  s.head = {{"model.connector.modality_projection.proj.weight", Role::Projection, Param::Weight,
             {c.text.hidden_size, c.vision.hidden_size * s2}}};
  return s;
}

const Architecture kIdefics3ForConditionalGeneration{
    .name = "Idefics3ForConditionalGeneration",
    .model_type = "idefics3",
    .parse_config = &parse_config,
    .generation_fallback = &idefics3_generation_fallback,
    .spec = &make_spec,
    .build = &build_components,
    .describe = &describe_config,
    .check_processor = &check_processor,
};

}  // namespace smolvlm
