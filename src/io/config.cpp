#include "io/config.h"

#include <cmath>

#include "core/error.h"

namespace smolvlm {

using nlohmann::json;

namespace {

std::vector<int64_t> token_id_list(const json& v, const std::string& where) {
  std::vector<int64_t> ids;
  if (v.is_null()) return ids;
  if (v.is_array()) {
    for (const json& e : v) ids.push_back(ConfigFields::as_integer(e, where + " entry"));
  } else {
    ids.push_back(ConfigFields::as_integer(v, where));
  }
  for (int64_t id : ids)
    if (id < 0) throw bad_input(where + " must not be negative, got " + std::to_string(id));
  return ids;
}

std::optional<int64_t> optional_token_id(const ConfigFields& f, const char* key) {
  if (!f.has(key)) return std::nullopt;
  int64_t id = f.required_integer(key);
  if (id < 0) throw bad_input(f.where(key) + " must not be negative, got " + std::to_string(id));
  return id;
}

void read_channel_triple(const ConfigFields& f, const char* key, float out[3]) {
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

}  // namespace

GenerationConfig generation_from(const ConfigFields& f) {
  GenerationConfig g;
  if (const json* eos = f.get("eos_token_id")) g.eos_token_ids = token_id_list(*eos, f.where("eos_token_id"));
  g.bos_token_id = optional_token_id(f, "bos_token_id");
  g.pad_token_id = optional_token_id(f, "pad_token_id");
  g.temperature = f.number("temperature", g.temperature);
  if (g.temperature < 0) throw bad_input(f.where("temperature") + " must be >= 0");
  g.top_k = f.integer("top_k", g.top_k);
  if (g.top_k < 0) throw bad_input(f.where("top_k") + " must be >= 0");
  g.top_p = f.positive_number("top_p", g.top_p);
  if (g.top_p > 1) throw bad_input(f.where("top_p") + " must be in (0, 1]");
  g.repetition_penalty = f.positive_number("repetition_penalty", g.repetition_penalty);
  return g;
}

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  return generation_from(ConfigFields(j, name));
}

ImageProcessorConfig parse_image_processor_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  ConfigFields f(j, name);
  ImageProcessorConfig c;
  c.do_convert_rgb = f.boolean("do_convert_rgb", c.do_convert_rgb);
  c.do_resize = f.boolean("do_resize", c.do_resize);
  if (f.has("size")) c.longest_edge = f.object("size").required_size("longest_edge");
  c.resample = static_cast<int>(f.integer("resample", c.resample));
  require(c.resample >= 0 && c.resample <= 5, f.where("resample") + " must be a PIL filter id 0..5, got " +
                                                  std::to_string(c.resample));
  c.do_image_splitting = f.boolean("do_image_splitting", c.do_image_splitting);
  if (f.has("max_image_size")) c.max_image_size = f.object("max_image_size").required_size("longest_edge");
  c.do_rescale = f.boolean("do_rescale", c.do_rescale);
  c.rescale_factor = f.number("rescale_factor", c.rescale_factor);
  c.do_normalize = f.boolean("do_normalize", c.do_normalize);
  read_channel_triple(f, "image_mean", c.image_mean);
  read_channel_triple(f, "image_std", c.image_std);
  for (float s : c.image_std) require(s != 0.0f, f.where("image_std") + " must not contain 0");
  c.do_pad = f.boolean("do_pad", c.do_pad);
  return c;
}

ProcessorConfig parse_processor_config(const std::string& json_text, const std::string& name) {
  json j = parse_json_object(json_text, name);
  ConfigFields f(j, name);
  ProcessorConfig c;
  c.image_seq_len = f.size("image_seq_len", c.image_seq_len);
  return c;
}

}  // namespace smolvlm
