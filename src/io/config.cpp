#include "io/config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "io/file.h"

namespace smolvlm {

using nlohmann::json;

namespace {

// Config files are small; anything bigger than this is not a config.
constexpr size_t kMaxConfigFileBytes = size_t(16) << 20;
// Bounds that keep every tensor size and parameter sum far from int64 overflow.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxImageSize = 65536;
constexpr int64_t kMaxChannels = 64;

json parse_json_object(const std::string& text, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw bad_input(name + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw bad_input(name + ": expected a JSON object at the top level, got " + j.type_name());
  return j;
}

// Typed access to the keys of one JSON object; `where` names the file (and sub-object) in messages.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  const json* get(const char* key) const { return has(key) ? &obj_.at(key) : nullptr; }
  std::string where(const char* key) const { return where_ + ": key \"" + key + "\""; }

  int64_t integer(const char* key, int64_t fallback) const { return has(key) ? required_integer(key) : fallback; }
  int64_t required_integer(const char* key) const {
    const json* v = get(key);
    if (!v) throw bad_input(where(key) + " is missing (required)");
    return as_integer(*v, where(key));
  }
  int64_t size(const char* key, int64_t fallback) const { return has(key) ? required_size(key) : fallback; }
  int64_t required_size(const char* key) const {
    int64_t v = required_integer(key);
    if (v <= 0 || v > kMaxConfigDimension)
      throw bad_input(where(key) + " must be in 1.." + std::to_string(kMaxConfigDimension) + ", got " +
                      std::to_string(v));
    return v;
  }
  double number(const char* key, double fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_number()) throw bad_input(where(key) + " must be a number, got " + v->type_name());
    double d = v->get<double>();
    if (!std::isfinite(d)) throw bad_input(where(key) + " must be finite");
    return d;
  }
  double positive_number(const char* key, double fallback) const {
    double d = number(key, fallback);
    if (!(d > 0)) throw bad_input(where(key) + " must be positive, got " + std::to_string(d));
    return d;
  }
  bool boolean(const char* key, bool fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_boolean()) throw bad_input(where(key) + " must be true or false, got " + v->type_name());
    return v->get<bool>();
  }
  std::string string(const char* key, const std::string& fallback) const {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_string()) throw bad_input(where(key) + " must be a string, got " + v->type_name());
    return v->get<std::string>();
  }
  Fields object(const char* key) const {
    const json* v = get(key);
    if (!v) throw bad_input(where(key) + " is missing (required)");
    if (!v->is_object()) throw bad_input(where(key) + " must be an object, got " + v->type_name());
    return Fields(*v, where_ + ": " + key);
  }
  const std::string& location() const { return where_; }

  static int64_t as_integer(const json& v, const std::string& where) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw bad_input(where + " is out of range");
      return v.get<int64_t>();
    }
    throw bad_input(where + " must be an integer, got " + (v.is_number() ? std::string("a fraction") : v.type_name()));
  }

 private:
  const json& obj_;
  std::string where_;
};

void check(bool ok, const std::string& message) {
  if (!ok) throw bad_input(message);
}

// LlamaConfig.__init__ (transformers/models/llama/configuration_llama.py): defaults and derived values.
TextConfig parse_text_config(const Fields& f) {
  TextConfig t;
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
  if (f.has("rope_scaling")) {
    Fields rope = f.object("rope_scaling");
    // HF accepts the legacy key `type` for `rope_type`.
    t.rope_type = rope.has("rope_type") ? rope.string("rope_type", "") : rope.string("type", "");
    if (t.rope_type.empty()) throw bad_input(f.where("rope_scaling") + " has neither \"rope_type\" nor \"type\"");
    t.rope_factor = rope.positive_number("factor", 1.0);
  }
  check(t.head_dim > 0, f.where("head_dim") + ": hidden_size / num_attention_heads is 0 (hidden_size " +
                            std::to_string(t.hidden_size) + " < num_attention_heads " +
                            std::to_string(t.num_attention_heads) + ")");
  check(t.num_attention_heads % t.num_key_value_heads == 0,
        f.location() + ": num_attention_heads (" + std::to_string(t.num_attention_heads) +
            ") must be a multiple of num_key_value_heads (" + std::to_string(t.num_key_value_heads) + ")");
  check(t.head_dim % 2 == 0, f.where("head_dim") + " must be even for rotary embeddings, got " +
                                 std::to_string(t.head_dim));
  check(t.num_hidden_layers <= kMaxLayers, f.where("num_hidden_layers") + " is larger than " + std::to_string(kMaxLayers));
  check(t.num_attention_heads * t.head_dim <= kMaxConfigDimension,
        f.location() + ": num_attention_heads * head_dim is too large");
  return t;
}

// Idefics3VisionConfig.__init__ defaults; the tower needs hidden divisible by heads (HF raises otherwise).
VisionConfig parse_vision_config(const Fields& f) {
  VisionConfig v;
  v.hidden_size = f.required_size("hidden_size");
  v.intermediate_size = f.required_size("intermediate_size");
  v.num_hidden_layers = f.required_size("num_hidden_layers");
  v.num_attention_heads = f.required_size("num_attention_heads");
  v.num_channels = f.size("num_channels", 3);
  v.image_size = f.required_size("image_size");
  v.patch_size = f.required_size("patch_size");
  v.layer_norm_eps = f.positive_number("layer_norm_eps", 1e-6);
  v.hidden_act = f.string("hidden_act", "gelu_pytorch_tanh");
  check(v.hidden_size % v.num_attention_heads == 0,
        f.location() + ": hidden_size (" + std::to_string(v.hidden_size) + ") must be divisible by num_attention_heads (" +
            std::to_string(v.num_attention_heads) + ")");
  check(v.image_size % v.patch_size == 0, f.location() + ": image_size (" + std::to_string(v.image_size) +
                                              ") must be a multiple of patch_size (" + std::to_string(v.patch_size) + ")");
  check(v.num_hidden_layers <= kMaxLayers, f.where("num_hidden_layers") + " is larger than " + std::to_string(kMaxLayers));
  check(v.image_size <= kMaxImageSize, f.where("image_size") + " is larger than " + std::to_string(kMaxImageSize));
  check(v.num_channels <= kMaxChannels, f.where("num_channels") + " is larger than " + std::to_string(kMaxChannels));
  return v;
}

Architecture detect_architecture(const Fields& f) {
  if (const json* a = f.get("architectures")) {
    if (!a->is_array()) throw bad_input(f.where("architectures") + " must be a list of strings");
    if (!a->empty()) {
      if (!a->at(0).is_string()) throw bad_input(f.where("architectures") + " must be a list of strings");
      std::string name = a->at(0).get<std::string>();
      if (name == "Idefics3ForConditionalGeneration") return Architecture::Idefics3;
      if (name == "LlamaForCausalLM") return Architecture::Llama;
      throw unsupported(f.location() + ": architecture \"" + name +
                        "\" is not supported (supported: Idefics3ForConditionalGeneration, LlamaForCausalLM)");
    }
  }
  if (!f.has("model_type"))
    throw bad_input(f.location() + ": neither \"architectures\" nor \"model_type\" names the model class");
  std::string type = f.string("model_type", "");
  if (type == "idefics3") return Architecture::Idefics3;
  if (type == "llama") return Architecture::Llama;
  throw unsupported(f.location() + ": model_type \"" + type + "\" is not supported (supported: idefics3, llama)");
}

std::vector<int64_t> token_id_list(const json& v, const std::string& where) {
  std::vector<int64_t> ids;
  if (v.is_null()) return ids;
  if (v.is_array()) {
    for (const json& e : v) ids.push_back(Fields::as_integer(e, where + " entry"));
  } else {
    ids.push_back(Fields::as_integer(v, where));
  }
  for (int64_t id : ids)
    if (id < 0) throw bad_input(where + " must not be negative, got " + std::to_string(id));
  return ids;
}

std::optional<int64_t> optional_token_id(const Fields& f, const char* key) {
  if (!f.has(key)) return std::nullopt;
  int64_t id = f.required_integer(key);
  if (id < 0) throw bad_input(f.where(key) + " must not be negative, got " + std::to_string(id));
  return id;
}

GenerationConfig generation_from(const Fields& f) {
  GenerationConfig g;
  if (const json* eos = f.get("eos_token_id")) g.eos_token_ids = token_id_list(*eos, f.where("eos_token_id"));
  g.bos_token_id = optional_token_id(f, "bos_token_id");
  g.pad_token_id = optional_token_id(f, "pad_token_id");
  return g;
}

// When generation_config.json is absent, HF derives it from config.json, taking a value from the
// text sub-config when the top level leaves it unset (GenerationConfig.from_model_config).
GenerationConfig generation_fallback(const json& config, const std::string& name, Architecture arch) {
  Fields top(config, name);
  GenerationConfig g = generation_from(top);
  if (arch == Architecture::Idefics3 && top.has("text_config")) {
    GenerationConfig text = generation_from(top.object("text_config"));
    if (!top.has("eos_token_id")) g.eos_token_ids = text.eos_token_ids;
    if (!g.bos_token_id) g.bos_token_id = text.bos_token_id;
    if (!g.pad_token_id) g.pad_token_id = text.pad_token_id;
  }
  return g;
}

void read_channel_triple(const Fields& f, const char* key, float out[3]) {
  const json* v = f.get(key);
  if (!v) return;
  std::string where = f.where(key);
  if (v->is_number()) {
    out[0] = out[1] = out[2] = v->get<float>();
  } else if (v->is_array() && v->size() == 3) {
    for (size_t i = 0; i < 3; ++i) {
      if (!(*v)[i].is_number()) throw bad_input(where + " entries must be numbers");
      out[i] = (*v)[i].get<float>();
    }
  } else {
    throw bad_input(where + " must be a number or a list of 3 numbers");
  }
  for (int i = 0; i < 3; ++i)
    if (!std::isfinite(out[i])) throw bad_input(where + " must be finite");
}

std::optional<std::string> read_if_present(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return read_file(path, kMaxConfigFileBytes);
}

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::Idefics3: return "Idefics3ForConditionalGeneration";
    case Architecture::Llama: return "LlamaForCausalLM";
  }
  return "?";
}

int64_t ModelConfig::image_tokens_per_tile() const {
  int64_t grid = vision.image_size / vision.patch_size;
  return grid * grid / (scale_factor * scale_factor);
}

ModelConfig parse_model_config(const std::string& config_json, const std::string& name) {
  json j = parse_json_object(config_json, name);
  Fields top(j, name);
  ModelConfig cfg;
  cfg.arch = detect_architecture(top);
  if (cfg.arch == Architecture::Llama) {
    cfg.text = parse_text_config(top);
    cfg.tie_word_embeddings = cfg.text.tie_word_embeddings;
  } else {
    cfg.text = parse_text_config(top.object("text_config"));
    cfg.vision = parse_vision_config(top.object("vision_config"));
    cfg.scale_factor = top.size("scale_factor", 2);
    cfg.image_token_id = top.integer("image_token_id", 128257);
    // Idefics3ForConditionalGeneration ties lm_head on the top-level flag only.
    cfg.tie_word_embeddings = top.boolean("tie_word_embeddings", false);
    int64_t grid = cfg.vision.image_size / cfg.vision.patch_size;
    check(grid % cfg.scale_factor == 0, top.where("scale_factor") + " (" + std::to_string(cfg.scale_factor) +
                                            ") must divide the patch grid side image_size / patch_size (" +
                                            std::to_string(grid) + ")");
    check(cfg.image_token_id >= 0 && cfg.image_token_id < cfg.text.vocab_size,
          top.where("image_token_id") + " (" + std::to_string(cfg.image_token_id) +
              ") must be a token id below text_config.vocab_size (" + std::to_string(cfg.text.vocab_size) + ")");
  }
  cfg.generation = generation_fallback(j, name, cfg.arch);
  return cfg;
}

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  return generation_from(Fields(j, name));
}

ImageProcessorConfig parse_image_processor_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  Fields f(j, name);
  ImageProcessorConfig c;
  c.do_convert_rgb = f.boolean("do_convert_rgb", c.do_convert_rgb);
  c.do_resize = f.boolean("do_resize", c.do_resize);
  if (f.has("size")) c.longest_edge = f.object("size").required_size("longest_edge");
  c.resample = static_cast<int>(f.integer("resample", c.resample));
  check(c.resample >= 0 && c.resample <= 5, f.where("resample") + " must be a PIL filter id 0..5, got " +
                                                std::to_string(c.resample));
  c.do_image_splitting = f.boolean("do_image_splitting", c.do_image_splitting);
  if (f.has("max_image_size")) c.max_image_size = f.object("max_image_size").required_size("longest_edge");
  c.do_rescale = f.boolean("do_rescale", c.do_rescale);
  c.rescale_factor = f.number("rescale_factor", c.rescale_factor);
  c.do_normalize = f.boolean("do_normalize", c.do_normalize);
  read_channel_triple(f, "image_mean", c.image_mean);
  read_channel_triple(f, "image_std", c.image_std);
  for (float s : c.image_std) check(s != 0.0f, f.where("image_std") + " must not contain 0");
  c.do_pad = f.boolean("do_pad", c.do_pad);
  return c;
}

ProcessorConfig parse_processor_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  Fields f(j, name);
  ProcessorConfig c;
  c.image_seq_len = f.size("image_seq_len", c.image_seq_len);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  std::filesystem::path config_path = dir / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec))
    throw bad_input(dir.string() + ": no config.json in this folder (is it a model folder?)");
  ModelConfig cfg = parse_model_config(read_file(config_path, kMaxConfigFileBytes), config_path.string());
  cfg.dir = dir;
  std::filesystem::path gen_path = dir / "generation_config.json";
  if (auto text = read_if_present(gen_path)) cfg.generation = parse_generation_config(*text, gen_path.string());
  std::filesystem::path pre_path = dir / "preprocessor_config.json";
  if (auto text = read_if_present(pre_path)) cfg.image_processor = parse_image_processor_config(*text, pre_path.string());
  std::filesystem::path proc_path = dir / "processor_config.json";
  if (auto text = read_if_present(proc_path)) {
    cfg.processor = parse_processor_config(*text, proc_path.string());
    if (cfg.arch == Architecture::Idefics3 && cfg.processor->image_seq_len != cfg.image_tokens_per_tile())
      throw bad_input(proc_path.string() + ": image_seq_len " + std::to_string(cfg.processor->image_seq_len) +
                      " does not match config.json, which gives (image_size / patch_size)^2 / scale_factor^2 = " +
                      std::to_string(cfg.image_tokens_per_tile()) + " image tokens per tile");
  }
  return cfg;
}

}  // namespace smolvlm
