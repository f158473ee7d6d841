// `smolvlm caption`: describe (or answer a question about) one or more images with a SmolVLM model.
// The text streams to stdout as it is generated; --json prints one object at the end instead.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "check/check.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "hub/hub_error.h"
#include "hub/pull.h"

namespace smolvlm::cli {
namespace {

struct CaptionFlags : GenerationFlags {
  std::vector<std::string> images;
  std::string prompt = "Describe this image.";
  std::string messages;
  bool no_split = false, check = false, pull = false;
};

// `smolvlm check` first; false (after saying why) when it fails on this machine.
bool check_passes(bool verbose) {
  CheckOptions opt;
  // Tests point this at an altered copy of assets/check to see the refusal.
  if (const char* assets = std::getenv("SMOLVLM_CHECK_ASSETS"); assets && *assets) opt.assets_dir = assets;
  CheckReport rep = run_check(opt);
  if (!rep.passed()) {
    std::cerr << "smolvlm caption: the exactness check failed on this machine; not captioning:\n";
    for (const CheckRow& r : rep.rows)
      if (!r.pass()) std::cerr << "  " << r.stage << (r.path.empty() ? "" : " [" + r.path + "]") << ": " << r.detail << "\n";
    std::cerr << "Run `smolvlm check` for the full report.\n";
    return false;
  }
  if (verbose) std::cerr << "check passed in " << rep.seconds << " s\n";
  return true;
}

const Command kCaption{"caption", "Describe images (or answer --prompt about them) with a SmolVLM model", [](CLI::App& sub) {
  auto f = std::make_shared<CaptionFlags>();
  sub.add_option("images", f->images, "image files (JPEG, PNG, WebP, GIF, BMP); they come before the text, in order");
  sub.add_option("--prompt", f->prompt, "the question or instruction")->capture_default_str();
  sub.add_option("--messages", f->messages,
                 std::string("earlier turns of the conversation, before the images and the prompt: ") + messages_help());
  sub.add_flag("--no-split", f->no_split, "do not split images into tiles (one squashed tile per image)");
  add_generation_flags(sub, *f, "write every stage (pixel_values, vision_last_hidden, ...) as .npy into this folder");
  sub.add_flag("--check", f->check, "run `smolvlm check` first and refuse to caption if it fails");
  sub.add_flag("--pull", f->pull, "download the model into the HuggingFace cache first when it is not there");
  return [f, &sub]() {
    if (f->images.empty() && f->messages.empty())
      throw UsageError("give at least one image (or --messages)");
    if (f->check && !check_passes(f->verbose)) return 1;
    if (f->pull) {  // a local folder or a cached model is used as is; nothing is downloaded then
      hub::PullOptions po;
      po.on_event = hub::progress_printer(stderr, isatty(fileno(stderr)) != 0);
      try {
        hub::ensure_model(f->model.empty() ? std::string(smolvlm_default_model()) : f->model, po);
      } catch (const hub::PullError& e) {
        std::cerr << "smolvlm caption: " << e.what() << flag_hint(e.what()) << "\n";
        return hub::pull_exit_code(e.failure());
      }
    }
    const bool explicit_prompt = sub.count("--prompt") > 0;
    return run_generation(*f, [&](const api::Model&, smolvlm_request& req, api::Chat& chat) {
      if (!f->messages.empty()) add_messages_file(f->messages, chat);
      if (!f->images.empty() || explicit_prompt || f->messages.empty()) {
        chat.add(SMOLVLM_ROLE_USER);
        for (const auto& path : f->images) chat.image_file(path);
        chat.text(f->prompt);
      }
      chat.fill(req);
      if (f->no_split) req.split = 0;
    });
  };
}};

}  // namespace
}  // namespace smolvlm::cli
