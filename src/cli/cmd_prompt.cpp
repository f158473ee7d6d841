// `smolvlm prompt`: the prompt string and input ids HF's Idefics3Processor builds for one user turn
// (images first, then the text), or the chat prompt of a text-only model.
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

struct PromptFlags {
  std::string model, prompt, messages;
  std::vector<std::string> images;
  bool no_split = false, as_json = false;
};

const Command kPrompt{"prompt", "Build the model input for a prompt (+ images): the templated, image-expanded text and its ids",
                      [](CLI::App& sub) {
  auto f = std::make_shared<PromptFlags>();
  sub.add_option("--model", f->model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
  sub.add_option("--image", f->images, "an image file (repeatable; the images come before the text, in this order)");
  sub.add_option("--prompt", f->prompt, "the user's text")->required();
  sub.add_option("--messages", f->messages, std::string("earlier turns, before the images and the prompt: ") + messages_help());
  sub.add_flag("--no-split", f->no_split, "do not split images into tiles (do_image_splitting=False)");
  sub.add_flag("--json", f->as_json, "print {\"text\":...,\"input_ids\":[...]}");
  return [f]() {
    smolvlm_model_options mo;
    smolvlm_model_options_init(&mo);
    mo.threads = 1;
    mo.load_weights = 0;  // the configs and the tokenizer are all a prompt needs
    const api::Model model = api::Model::load(f->model, &mo);
    api::Chat chat;
    if (!f->messages.empty()) add_messages_file(f->messages, chat);
    chat.add(SMOLVLM_ROLE_USER);
    for (const auto& path : f->images) chat.image_file(path);
    chat.text(f->prompt);
    smolvlm_request req;
    smolvlm_request_init(&req);
    chat.fill(req);
    if (f->no_split) req.split = 0;
    char* text = nullptr;
    int32_t* ids = nullptr;
    size_t n = 0;
    api::check(smolvlm_render_prompt(model.get(), &req, &text, &ids, &n));
    const std::string rendered = api::take_string(text);
    const std::vector<int32_t> input_ids = api::take_ids(ids, n);
    if (f->as_json) {
      nlohmann::ordered_json out;
      out["text"] = rendered;
      out["input_ids"] = input_ids;
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << rendered << "\n[" << input_ids.size() << " ids]";
      for (int32_t id : input_ids) std::cout << ' ' << id;
      std::cout << "\n";
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
