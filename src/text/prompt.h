// Everything text-side a model folder provides (tokenizer, chat template, special tokens, the image
// token count), and the prompt assembly of HF's Idefics3Processor / apply_chat_template.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace smolvlm {

class TextAssets {
 public:
  // Reads tokenizer.json (required), tokenizer_config.json (special tokens, chat_template),
  // chat_template.json (a processor's template: preferred when present), chat_template.jinja (the file
  // newer transformers save; preferred over both) and processor_config.json
  // (image_seq_len) from `model_dir`. Throws Error naming the file on a missing or malformed file.
  // `documented_template`, when not null, is the chat template used if the folder has none (the
  // format the model's documentation gives).
  static std::unique_ptr<TextAssets> load(const std::filesystem::path& model_dir,
                                          const char* documented_template = nullptr);

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // nullptr when the folder has no chat template.
  const ChatTemplate* chat_template() const { return chat_template_.get(); }
  // The special-token variables a template sees (bos_token, eos_token, ..., additional_special_tokens).
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  // tokenizer_config.json "clean_up_tokenization_spaces" (false when absent or null): transformers'
  // decode then applies clean_up_tokenization to the text.
  bool clean_up_tokenization_spaces() const { return clean_up_tokenization_spaces_; }
  // <image> tokens per image tile (processor_config.json); nullopt for a folder without one.
  std::optional<int64_t> image_seq_len() const { return image_seq_len_; }
  const std::filesystem::path& dir() const { return dir_; }

  // apply_chat_template(messages, add_generation_prompt, tokenize=False, **extra_variables).
  // Throws Error(BadInput) when the folder has no chat template.
  std::string apply_chat_template(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                  const nlohmann::ordered_json& extra_variables = nlohmann::ordered_json::object()) const;

 private:
  TextAssets() = default;
  std::filesystem::path dir_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
  std::optional<int64_t> image_seq_len_;
  bool clean_up_tokenization_spaces_ = false;
};

struct ImageGrid {
  int64_t rows = 0, cols = 0;  // 0, 0 = not split
};

struct BuiltPrompt {
  std::string text;
  std::vector<int32_t> input_ids;
};

// The text that replaces one `<image>` for an image cut into rows x cols tiles (0 x 0: not split).
std::string expand_image_token(const TextAssets& assets, const ImageGrid& grid);

// Chat messages of an image-text model (content as lists of parts, {"type": "image"} where an image
// goes) rendered with add_generation_prompt; each `<image>` expanded for the next image's grid, in
// order; encoded with add_special_tokens=true. Exactly HF's Idefics3Processor on
// apply_chat_template's output.
BuiltPrompt build_vlm_chat_prompt(const TextAssets& assets, const nlohmann::ordered_json& messages,
                                  const std::vector<ImageGrid>& images);

// One user turn of build_vlm_chat_prompt: the images first, then `user_text`.
BuiltPrompt build_vlm_prompt(const TextAssets& assets, const std::string& user_text, const std::vector<ImageGrid>& images);

// Text-only chat (`messages` as in HF: [{"role":..,"content":..}], content a string or a list of parts)
// rendered with the model's template, add_generation_prompt=true, encoded with add_special_tokens=false.
BuiltPrompt build_chat_prompt(const TextAssets& assets, const nlohmann::json& messages);
BuiltPrompt build_chat_prompt(const TextAssets& assets, const nlohmann::ordered_json& messages);

}  // namespace smolvlm
