// `smolvlm detokenize`: token ids -> text, exactly as HF tokenizers decodes.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "hub/model_ref.h"
#include "text/tokenizer.h"

namespace smolvlm::cli {
namespace {

const Command kDetokenize{"detokenize", "Decode token IDS with the model's tokenizer.json; prints {\"text\":...}",
                          [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto ids = std::make_shared<std::vector<int32_t>>();
  auto skip_special = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + kDefaultModelId + "); only tokenizer.json is read");
  sub.add_flag("--skip-special-tokens", *skip_special, "drop special tokens, as HF skip_special_tokens=True");
  sub.add_option("ids", *ids, "token ids (an id outside the vocabulary is an error)")->required();
  return [=]() {
    auto tok = Tokenizer::from_file(resolve_model_dir(*model) / "tokenizer.json");
    nlohmann::ordered_json out;
    out["text"] = tok->decode(*ids, *skip_special);
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
