#include "text/prompt.h"

#include "core/error.h"
#include "io/config.h"
#include "io/file.h"

namespace smolvlm {

using OJson = nlohmann::ordered_json;

static OJson read_json_file(const std::filesystem::path& path) {
  std::string text = read_file(path, size_t(1) << 30);
  try {
    return OJson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(path.string() + ": not valid JSON: " + e.what());
  }
}

// A special token in tokenizer_config.json: a string or an AddedToken object {"content": ...}.
static std::optional<std::string> token_content(const OJson& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw bad_input(where + ": expected a string or {\"content\": ...}, got " + v.dump());
}

// transformers: the template of a chat_template value that may be a list of named templates.
static std::string pick_template(const OJson& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    for (auto& t : v)
      if (t.is_object() && t.contains("name") && t["name"] == "default" && t.contains("template") && t["template"].is_string())
        return t["template"].get<std::string>();
    throw bad_input(where + ": a list of chat templates without one named \"default\"");
  }
  throw bad_input(where + ": expected a string, got " + std::string(v.type_name()));
}

std::unique_ptr<TextAssets> TextAssets::load(const std::filesystem::path& model_dir, const char* documented_template) {
  std::unique_ptr<TextAssets> a(new TextAssets());
  a->dir_ = model_dir;
  auto tokenizer_path = model_dir / "tokenizer.json";
  if (!std::filesystem::exists(tokenizer_path))
    throw bad_input(model_dir.string() + ": no tokenizer.json in this folder (a HF model folder has one)");
  a->tokenizer_ = Tokenizer::from_file(tokenizer_path);

  std::optional<std::string> template_source;
  std::string template_name;
  auto config_path = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    OJson config = read_json_file(config_path);
    if (!config.is_object()) throw bad_input(config_path.string() + ": expected a JSON object");
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
      if (auto it = config.find(key); it != config.end())
        if (auto s = token_content(*it, config_path.string() + ": " + key)) a->special_tokens_[key] = *s;
    }
    if (auto it = config.find("additional_special_tokens"); it != config.end() && !it->is_null()) {
      if (!it->is_array()) throw bad_input(config_path.string() + ": additional_special_tokens: expected an array");
      OJson list = OJson::array();
      for (auto& t : *it)
        if (auto s = token_content(t, config_path.string() + ": additional_special_tokens")) list.push_back(*s);
      a->special_tokens_["additional_special_tokens"] = list;
    }
    if (auto it = config.find("clean_up_tokenization_spaces"); it != config.end() && !it->is_null()) {
      if (!it->is_boolean())
        throw bad_input(config_path.string() + ": clean_up_tokenization_spaces: expected true or false, got " +
                        it->dump());
      a->clean_up_tokenization_spaces_ = it->get<bool>();
    }
    if (auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
      template_source = pick_template(*it, config_path.string() + ": chat_template");
      template_name = config_path.string() + " chat_template";
    }
  }
  auto chat_path = model_dir / "chat_template.json";
  if (std::filesystem::exists(chat_path)) {
    OJson chat = read_json_file(chat_path);
    if (!chat.is_object() || !chat.contains("chat_template"))
      throw bad_input(chat_path.string() + ": expected an object with a \"chat_template\" field");
    template_source = pick_template(chat["chat_template"], chat_path.string() + ": chat_template");
    template_name = chat_path.string();
  }
  // transformers (>= 4.43) saves the template as chat_template.jinja; when present it is the one used.
  auto jinja_path = model_dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) {
    template_source = read_file(jinja_path, kMaxConfigFileBytes);
    template_name = jinja_path.string();
  }
  if (!template_source && documented_template) {
    template_source = documented_template;
    template_name = "the architecture's documented chat format";
  }
  if (template_source) a->chat_template_ = std::make_unique<ChatTemplate>(*template_source, template_name);

  auto processor_path = model_dir / "processor_config.json";
  if (std::filesystem::exists(processor_path))
    a->image_seq_len_ = parse_processor_config(read_file(processor_path), processor_path.string()).image_seq_len;
  return a;
}

std::string TextAssets::apply_chat_template(const OJson& messages, bool add_generation_prompt, const OJson& extra_variables) const {
  if (!chat_template_) throw bad_input(dir_.string() + ": the model has no chat template (tokenizer_config.json or chat_template.json)");
  if (!messages.is_array()) throw bad_input("chat messages: expected an array of {\"role\": ..., \"content\": ...}");
  OJson vars = special_tokens_;
  vars["messages"] = messages;
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["tools"] = nullptr;
  vars["documents"] = nullptr;
  if (extra_variables.is_object())
    for (auto it = extra_variables.begin(); it != extra_variables.end(); ++it) vars[it.key()] = it.value();
  return chat_template_->render(vars);
}

static std::string require_token(const TextAssets& assets, const std::string& token) {
  if (!assets.tokenizer().token_to_id(token))
    throw bad_input(assets.dir().string() + ": the tokenizer has no token \"" + token + "\" needed for image prompts");
  return token;
}

std::string expand_image_token(const TextAssets& assets, const ImageGrid& grid) {
  if (!assets.image_seq_len())
    throw bad_input(assets.dir().string() + ": no processor_config.json: this folder is not an image-text model");
  if (grid.rows < 0 || grid.cols < 0 || (grid.rows == 0) != (grid.cols == 0) || grid.rows > 64 || grid.cols > 64)
    throw bad_input("image grid " + std::to_string(grid.rows) + "x" + std::to_string(grid.cols) +
                    ": expected 0x0 (not split) or rows, cols in [1, 64]");
  const std::string fake = require_token(assets, "<fake_token_around_image>");
  const std::string global = require_token(assets, "<global-img>");
  const std::string image = require_token(assets, "<image>");
  std::string tiles;
  for (int64_t k = 0; k < *assets.image_seq_len(); ++k) tiles += image;
  if (grid.rows == 0) return fake + global + tiles + fake;
  std::string out;
  for (int64_t r = 1; r <= grid.rows; ++r) {
    for (int64_t c = 1; c <= grid.cols; ++c)
      out += fake + require_token(assets, "<row_" + std::to_string(r) + "_col_" + std::to_string(c) + ">") + tiles;
    out += "\n";
  }
  return out + "\n" + fake + global + tiles + fake;
}

BuiltPrompt build_vlm_prompt(const TextAssets& assets, const std::string& user_text, const std::vector<ImageGrid>& images) {
  OJson content = OJson::array();
  for (size_t i = 0; i < images.size(); ++i) content.push_back({{"type", "image"}});
  content.push_back({{"type", "text"}, {"text", user_text}});
  return build_vlm_chat_prompt(assets, OJson::array({{{"role", "user"}, {"content", content}}}), images);
}

BuiltPrompt build_vlm_chat_prompt(const TextAssets& assets, const OJson& messages, const std::vector<ImageGrid>& images) {
  if (!images.empty() && !assets.image_seq_len())
    throw bad_input(assets.dir().string() + ": no processor_config.json: this folder is not an image-text model");
  std::string chat = assets.apply_chat_template(messages, true);

  const std::string image = "<image>";
  std::vector<std::string> parts;
  size_t prev = 0;
  for (size_t p = chat.find(image); p != std::string::npos; p = chat.find(image, prev)) {
    parts.push_back(chat.substr(prev, p - prev));
    prev = p + image.size();
  }
  parts.push_back(chat.substr(prev));
  if (parts.size() - 1 != images.size())
    throw bad_input("the prompt holds " + std::to_string(parts.size() - 1) + " <image> tokens for " + std::to_string(images.size()) +
                    " images (the text itself must not contain \"<image>\")");
  BuiltPrompt out;
  out.text = parts[0];
  for (size_t i = 0; i < images.size(); ++i) out.text += expand_image_token(assets, images[i]) + parts[i + 1];
  out.input_ids = assets.tokenizer().encode(out.text, true);
  return out;
}

BuiltPrompt build_chat_prompt(const TextAssets& assets, const OJson& messages) {
  BuiltPrompt out;
  out.text = assets.apply_chat_template(messages, true);
  out.input_ids = assets.tokenizer().encode(out.text, false);
  return out;
}

BuiltPrompt build_chat_prompt(const TextAssets& assets, const nlohmann::json& messages) {
  return build_chat_prompt(assets, OJson::parse(messages.dump()));
}

}  // namespace smolvlm
