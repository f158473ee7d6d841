// `smolvlm caption`: describe (or answer a question about) one or more images with a SmolVLM model.
// The text streams to stdout as it is generated; --json prints one object at the end instead.
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "check/check.h"
#include "cli/command.h"
#include "hub/hub_error.h"
#include "hub/model_ref.h"
#include "hub/pull.h"
#include "runtime/pipeline.h"

namespace smolvlm::cli {
namespace {

struct CaptionFlags {
  std::vector<std::string> images;
  std::string model, prompt = "Describe this image.", dump;
  int64_t max_new_tokens = 256, ctx = 0, top_k = 0;
  int threads = 0;
  bool no_split = false, json = false, verbose = false, check = false, pull = false;
  float temperature = 0.f, top_p = 1.f, min_p = 0.f, repetition_penalty = 1.f;
  uint64_t seed = 0;
};

const Command kCaption{"caption", "Describe images (or answer --prompt about them) with a SmolVLM model", [](CLI::App& sub) {
  auto f = std::make_shared<CaptionFlags>();
  sub.add_option("images", f->images, "image files (JPEG, PNG, WebP, GIF, BMP); they come before the text, in order")
      ->required();
  sub.add_option("--model", f->model, std::string("model folder or hub id (default ") + kDefaultModelId + ")");
  sub.add_option("--prompt", f->prompt, "the question or instruction")->capture_default_str();
  sub.add_option("--max-new-tokens", f->max_new_tokens, "stop after this many new tokens")->capture_default_str();
  sub.add_flag("--no-split", f->no_split, "do not split images into tiles (one squashed tile per image)");
  sub.add_option("--ctx", f->ctx, "KV cache capacity in tokens (default: prompt + max-new-tokens)");
  sub.add_option("--threads", f->threads, "worker threads (default: all cores)");
  sub.add_option("--temperature", f->temperature, "sample with this temperature (0: greedy)")->capture_default_str();
  sub.add_option("--top-k", f->top_k, "sample among the k most likely tokens (0: off)");
  sub.add_option("--top-p", f->top_p, "nucleus sampling mass (1: off)");
  sub.add_option("--min-p", f->min_p, "drop tokens below min-p times the top probability (0: off)");
  sub.add_option("--repetition-penalty", f->repetition_penalty, "HF repetition penalty (1: off)");
  sub.add_option("--seed", f->seed, "random seed for sampling");
  sub.add_flag("--json", f->json, "print {\"text\",\"token_ids\",\"prompt_tokens\",\"timings\"} instead of streaming");
  sub.add_option("--dump", f->dump, "write every stage (pixel_values, vision_last_hidden, ...) as .npy into this folder");
  sub.add_flag("--verbose", f->verbose, "print stage timings, tokens/s and the kernel path to stderr");
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
    const auto t0 = std::chrono::steady_clock::now();
    const auto dir = resolve_model_dir(f->model);
    auto model = Model::load(dir);
    auto assets = TextAssets::load(dir);
    const double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int threads = f->threads > 0 ? f->threads : default_thread_count();
    ThreadPool pool(threads);
    RequestOptions o;
    o.generation.max_new_tokens = f->max_new_tokens;
    o.generation.sampling = {f->temperature, f->top_k, f->top_p, f->min_p, f->repetition_penalty, f->seed};
    o.context = f->ctx;
    o.dump_dir = f->dump;
    TextSink sink;
    if (!f->json) sink = [](const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); std::fflush(stdout); };
    const std::vector<std::filesystem::path> paths(f->images.begin(), f->images.end());
    RequestResult r = run_image_request(*model, *assets, paths, f->prompt, !f->no_split, o, pool, sink);
    r.timings.load = load;
    if (f->json)
      std::cout << result_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      std::cout << "\n";
    if (f->verbose) std::cerr << timing_report(r, threads) << "\n";
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
