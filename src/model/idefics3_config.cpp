#include "model/idefics3_config.h"

#include "core/error.h"

namespace smolvlm {

namespace {

// Bounds that keep every tensor size and parameter sum far from int64 overflow.
constexpr int64_t kMaxImageSize = 65536;
constexpr int64_t kMaxChannels = 64;

// Idefics3VisionConfig.__init__ defaults; the tower needs hidden divisible by heads (HF raises otherwise).
Idefics3VisionConfig parse_vision_config(const ConfigFields& f) {
  Idefics3VisionConfig v;
  v.hidden_size = f.required_size("hidden_size");
  v.intermediate_size = f.required_size("intermediate_size");
  v.num_hidden_layers = f.required_size("num_hidden_layers");
  v.num_attention_heads = f.required_size("num_attention_heads");
  v.num_channels = f.size("num_channels", 3);
  v.image_size = f.required_size("image_size");
  v.patch_size = f.required_size("patch_size");
  v.layer_norm_eps = f.positive_number("layer_norm_eps", 1e-6);
  v.hidden_act = f.string("hidden_act", "gelu_pytorch_tanh");
  require(v.hidden_size % v.num_attention_heads == 0,
          f.location() + ": hidden_size (" + std::to_string(v.hidden_size) +
              ") must be divisible by num_attention_heads (" + std::to_string(v.num_attention_heads) + ")");
  require(v.image_size % v.patch_size == 0, f.location() + ": image_size (" + std::to_string(v.image_size) +
                                                ") must be a multiple of patch_size (" + std::to_string(v.patch_size) + ")");
  require(v.num_hidden_layers <= kMaxConfigLayers,
          f.where("num_hidden_layers") + " is larger than " + std::to_string(kMaxConfigLayers));
  require(v.image_size <= kMaxImageSize, f.where("image_size") + " is larger than " + std::to_string(kMaxImageSize));
  require(v.num_channels <= kMaxChannels, f.where("num_channels") + " is larger than " + std::to_string(kMaxChannels));
  return v;
}

}  // namespace

int64_t Idefics3Config::image_tokens_per_tile() const {
  int64_t grid = vision.patches_per_side();
  return grid * grid / (scale_factor * scale_factor);
}

Idefics3Config parse_idefics3_config(const ConfigFields& top) {
  Idefics3Config c;
  c.text = parse_llama_config(top.object("text_config"));
  c.vision = parse_vision_config(top.object("vision_config"));
  c.scale_factor = top.size("scale_factor", 2);
  c.image_token_id = top.integer("image_token_id", 128257);
  c.tie_word_embeddings = top.boolean("tie_word_embeddings", false);
  int64_t grid = c.vision.patches_per_side();
  require(grid % c.scale_factor == 0, top.where("scale_factor") + " (" + std::to_string(c.scale_factor) +
                                          ") must divide the patch grid side image_size / patch_size (" +
                                          std::to_string(grid) + ")");
  require(c.image_token_id >= 0 && c.image_token_id < c.text.vocab_size,
          top.where("image_token_id") + " (" + std::to_string(c.image_token_id) +
              ") must be a token id below text_config.vocab_size (" + std::to_string(c.text.vocab_size) + ")");
  return c;
}

GenerationConfig idefics3_generation_fallback(const ConfigFields& top) {
  GenerationConfig g = generation_from(top);
  if (top.has("text_config")) {
    GenerationConfig text = generation_from(top.object("text_config"));
    if (!top.has("eos_token_id")) g.eos_token_ids = text.eos_token_ids;
    if (!g.bos_token_id) g.bos_token_id = text.bos_token_id;
    if (!g.pad_token_id) g.pad_token_id = text.pad_token_id;
  }
  return g;
}

void check_idefics3_supported(const Idefics3Config& c, const std::string& where) {
  check_llama_supported(c.text, where + ": text_config");
  if (c.vision.hidden_act != "gelu_pytorch_tanh")
    throw unsupported(where + ": vision_config: key \"hidden_act\" is \"" + c.vision.hidden_act +
                      "\"; only \"gelu_pytorch_tanh\" is implemented");
  if (c.vision.num_channels != 3)
    throw unsupported(where + ": vision_config: key \"num_channels\" is " + std::to_string(c.vision.num_channels) +
                      "; only 3 is implemented");
}

nlohmann::ordered_json describe_idefics3_config(const Idefics3Config& c) {
  const Idefics3VisionConfig& v = c.vision;
  return {{"text_config", describe_llama_config(c.text)},
          {"vision_config",
           {{"hidden_size", v.hidden_size},
            {"intermediate_size", v.intermediate_size},
            {"num_hidden_layers", v.num_hidden_layers},
            {"num_attention_heads", v.num_attention_heads},
            {"image_size", v.image_size},
            {"patch_size", v.patch_size},
            {"layer_norm_eps", v.layer_norm_eps},
            {"hidden_act", v.hidden_act}}},
          {"scale_factor", c.scale_factor},
          {"image_token_id", c.image_token_id},
          {"image_tokens_per_tile", c.image_tokens_per_tile()}};
}

}  // namespace smolvlm
