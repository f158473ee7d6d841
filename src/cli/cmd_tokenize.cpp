// `smolvlm tokenize`: text -> token ids and vocabulary strings, exactly as HF tokenizers encodes.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "hub/model_ref.h"
#include "text/tokenizer.h"

namespace smolvlm::cli {
namespace {

const Command kTokenize{"tokenize", "Encode TEXT with the model's tokenizer.json; prints {\"ids\":[...],\"tokens\":[...]}",
                        [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto text = std::make_shared<std::string>();
  auto add_special = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + kDefaultModelId + "); only tokenizer.json is read");
  sub.add_flag("--add-special-tokens", *add_special, "add the post-processor's special tokens (e.g. a BOS), as HF add_special_tokens=True");
  sub.add_option("text", *text, "the text to encode")->required();
  return [=]() {
    auto tok = Tokenizer::from_file(resolve_model_dir(*model) / "tokenizer.json");
    std::vector<std::string> tokens;
    auto ids = tok->encode_with_tokens(*text, *add_special, &tokens);
    nlohmann::ordered_json out;
    out["ids"] = ids;
    out["tokens"] = tokens;
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
