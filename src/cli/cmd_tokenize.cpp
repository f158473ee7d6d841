// `smolvlm tokenize`: text -> token ids and vocabulary strings, exactly as HF tokenizers encodes.
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"

namespace smolvlm::cli {

// The tokenizer.json of a --model value (folder or hub id); only that file is read.
inline api::Tokenizer tokenizer_of(const std::string& model) {
  char* dir = nullptr;
  api::check(smolvlm_resolve_model(model.c_str(), &dir));
  return api::Tokenizer::load(api::take_string(dir));
}

namespace {

const Command kTokenize{"tokenize", "Encode TEXT with the model's tokenizer.json; prints {\"ids\":[...],\"tokens\":[...]}",
                        [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto text = std::make_shared<std::string>();
  auto add_special = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + smolvlm_default_model() + "); only tokenizer.json is read");
  sub.add_flag("--add-special-tokens", *add_special, "add the post-processor's special tokens (e.g. a BOS), as HF add_special_tokens=True");
  sub.add_option("text", *text, "the text to encode")->required();
  return [=]() {
    const api::Tokenizer tok = tokenizer_of(*model);
    const std::vector<int32_t> ids = tok.tokenize(*text, *add_special);
    std::vector<std::string> tokens;
    for (int32_t id : ids) tokens.push_back(tok.token_string(id));
    nlohmann::ordered_json out;
    out["ids"] = ids;
    out["tokens"] = tokens;
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  };
}};

const Command kDetokenize{"detokenize", "Decode token IDS with the model's tokenizer.json; prints {\"text\":...}",
                          [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto ids = std::make_shared<std::vector<int32_t>>();
  auto skip_special = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + smolvlm_default_model() + "); only tokenizer.json is read");
  sub.add_flag("--skip-special-tokens", *skip_special, "drop special tokens, as HF skip_special_tokens=True");
  sub.add_option("ids", *ids, "token ids (one the tokenizer lacks decodes to nothing, as in HF, and is named on "
                              "stderr; a negative id is an error)")->required();
  return [=]() {
    const api::Tokenizer tok = tokenizer_of(*model);
    nlohmann::ordered_json out;
    out["text"] = tok.detokenize(*ids, *skip_special);
    std::string lacking;
    for (int32_t id : *ids)
      if (!tok.has_token(id)) lacking += " " + std::to_string(id);
    if (!lacking.empty()) std::cerr << "note: not in the tokenizer, decoded to nothing:" << lacking << "\n";
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
