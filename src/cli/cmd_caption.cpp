// `smolvlm caption`: describe (or answer a question about) one or more images with a SmolVLM model.
// The text streams to stdout as it is generated; --json prints one object at the end instead.
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "check/check.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "hub/hub_error.h"
#include "hub/model_ref.h"
#include "hub/pull.h"
#include "runtime/pipeline.h"

namespace smolvlm::cli {
namespace {

struct CaptionFlags : GenerationFlags {
  std::vector<std::string> images;
  std::string prompt = "Describe this image.";
  bool no_split = false, check = false, pull = false;
};

const Command kCaption{"caption", "Describe images (or answer --prompt about them) with a SmolVLM model", [](CLI::App& sub) {
  auto f = std::make_shared<CaptionFlags>();
  sub.add_option("images", f->images, "image files (JPEG, PNG, WebP, GIF, BMP); they come before the text, in order")
      ->required();
  sub.add_option("--prompt", f->prompt, "the question or instruction")->capture_default_str();
  sub.add_flag("--no-split", f->no_split, "do not split images into tiles (one squashed tile per image)");
  add_generation_flags(sub, *f, "write every stage (pixel_values, vision_last_hidden, ...) as .npy into this folder");
  sub.add_flag("--check", f->check, "run `smolvlm check` first and refuse to caption if it fails");
  sub.add_flag("--pull", f->pull, "download the model into the HuggingFace cache first when it is not there");
  return [f]() {
    if (f->check) {
      CheckOptions opt;
      // Tests point this at an altered copy of assets/check to see the refusal.
      if (const char* assets = std::getenv("SMOLVLM_CHECK_ASSETS"); assets && *assets) opt.assets_dir = assets;
      CheckReport rep = run_check(opt);
      if (!rep.passed()) {
        std::cerr << "smolvlm caption: the exactness check failed on this machine; not captioning:\n";
        for (const CheckRow& r : rep.rows)
          if (!r.pass()) std::cerr << "  " << r.stage << (r.path.empty() ? "" : " [" + r.path + "]") << ": " << r.detail << "\n";
        std::cerr << "Run `smolvlm check` for the full report.\n";
        return 1;
      }
      if (f->verbose) std::cerr << "check passed in " << rep.seconds << " s\n";
    }
    if (f->pull) {  // a local folder or a cached model is used as is; nothing is downloaded then
      hub::PullOptions po;
      po.on_event = hub::progress_printer(stderr, isatty(fileno(stderr)) != 0);
      try {
        hub::ensure_model(f->model.empty() ? std::string(kDefaultModelId) : f->model, po);
      } catch (const hub::PullError& e) {
        std::cerr << "smolvlm caption: " << e.what() << "\n";
        return hub::pull_exit_code(e.failure());
      }
    }
    const std::vector<std::filesystem::path> paths(f->images.begin(), f->images.end());
    return run_generation(*f, [&](const Model& model, PendingTextAssets& assets, const RequestOptions& o,
                                  ThreadPool& pool, const TextSink& sink) {
      const PreparedImages images = prepare_images(model, paths, !f->no_split, pool);  // while the tokenizer loads
      return run_image_request(model, assets.get(), images, f->prompt, o, pool, sink);
    });
  };
}};

}  // namespace
}  // namespace smolvlm::cli
