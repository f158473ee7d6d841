// `smolvlm prompt`: the prompt string and input ids HF's Idefics3Processor builds for one user turn
// (images first, then the text), or the chat prompt of a text-only model.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "io/config.h"
#include "io/file.h"
#include "text/prompt.h"

namespace smolvlm::cli {
namespace {

const Command kPrompt{"prompt", "Build the model input for a prompt (+ images): the templated, image-expanded text and its ids",
                      [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto images = std::make_shared<std::vector<std::string>>();
  auto prompt = std::make_shared<std::string>();
  auto no_split = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + kDefaultModelId + ")");
  sub.add_option("--image", *images, "an image file (repeatable; the images come before the text, in this order)");
  sub.add_option("--prompt", *prompt, "the user's text")->required();
  sub.add_flag("--no-split", *no_split, "do not split images into tiles (do_image_splitting=False)");
  sub.add_flag("--json", *as_json, "print {\"text\":...,\"input_ids\":[...]}");
  return [=]() {
    auto dir = resolve_model_dir(*model);
    auto assets = TextAssets::load(dir);
    BuiltPrompt built;
    if (assets->image_seq_len()) {
      std::vector<ImageGrid> grids;
      if (!images->empty()) {
        auto pre_path = dir / "preprocessor_config.json";
        ImageProcessorConfig config = parse_image_processor_config(read_file(pre_path), pre_path.string());
        std::optional<bool> split = *no_split ? std::optional<bool>(false) : std::nullopt;
        for (auto& path : *images) {
          PreprocessedImage p = preprocess_idefics3(load_image(path), config, split);
          grids.push_back({p.rows, p.cols});
        }
      }
      built = build_vlm_prompt(*assets, *prompt, grids);
    } else {
      if (!images->empty()) throw bad_input(dir.string() + ": not an image-text model (no processor_config.json); --image cannot be used");
      built = build_chat_prompt(*assets, nlohmann::ordered_json::array({{{"role", "user"}, {"content", *prompt}}}));
    }
    if (*as_json) {
      nlohmann::ordered_json out;
      out["text"] = built.text;
      out["input_ids"] = built.input_ids;
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << built.text << "\n[" << built.input_ids.size() << " ids]";
      for (int32_t id : built.input_ids) std::cout << ' ' << id;
      std::cout << "\n";
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
