// The flags `caption` and `generate` share: generation length, context, threads, sampling, output
// form. Both commands add them with add_generation_flags and run the request the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "hub/model_ref.h"
#include "runtime/pipeline.h"

namespace smolvlm::cli {

struct GenerationFlags {
  std::string model, dump;
  int64_t max_new_tokens = 256, ctx = 0, top_k = 0;
  int threads = 0;
  bool json = false, verbose = false;
  float temperature = 0.f, top_p = 1.f, min_p = 0.f, repetition_penalty = 1.f;
  uint64_t seed = 0;
};

inline void add_generation_flags(CLI::App& sub, GenerationFlags& f, const std::string& dump_help) {
  sub.add_option("--model", f.model, std::string("model folder or hub id (default ") + kDefaultModelId + ")");
  sub.add_option("--max-new-tokens", f.max_new_tokens, "stop after this many new tokens")->capture_default_str();
  sub.add_option("--ctx", f.ctx, "KV cache capacity in tokens (default: prompt + max-new-tokens)");
  sub.add_option("--threads", f.threads, "worker threads (default: all cores)");
  sub.add_option("--temperature", f.temperature, "sample with this temperature (0: greedy)")->capture_default_str();
  sub.add_option("--top-k", f.top_k, "sample among the k most likely tokens (0: off)");
  sub.add_option("--top-p", f.top_p, "nucleus sampling mass (1: off)");
  sub.add_option("--min-p", f.min_p, "drop tokens below min-p times the top probability (0: off)");
  sub.add_option("--repetition-penalty", f.repetition_penalty, "HF repetition penalty (1: off)");
  sub.add_option("--seed", f.seed, "random seed for sampling");
  sub.add_flag("--json", f.json, "print {\"text\",\"token_ids\",\"prompt_tokens\",\"timings\"} instead of streaming");
  sub.add_option("--dump", f.dump, dump_help);
  sub.add_flag("--verbose", f.verbose, "print stage timings, tokens/s and the kernel path to stderr");
}

// The model folder's tokenizer and templates, loading on a second thread from construction while the
// caller loads the model and decodes images (with one thread asked for, on first use instead).
// get() waits for them and rethrows a loading error; wait_seconds() is how long callers waited.
class PendingTextAssets {
 public:
  PendingTextAssets(const std::filesystem::path& dir, int threads)
      : future_(std::async(threads > 1 ? std::launch::async : std::launch::deferred,
                           [dir] { return TextAssets::load(dir); })) {}
  const TextAssets& get() {
    if (!assets_) {
      const auto t0 = std::chrono::steady_clock::now();
      assets_ = future_.get();
      waited_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return *assets_;
  }
  double wait_seconds() const { return waited_; }

 private:
  std::future<std::unique_ptr<TextAssets>> future_;
  std::unique_ptr<TextAssets> assets_;
  double waited_ = 0;
};

// Loads the model named by --model (and its text assets, see PendingTextAssets), runs `request`
// (which streams through the sink it is given unless --json), prints the result as the flags ask and
// returns the exit code.
using RunRequest = std::function<RequestResult(const Model&, PendingTextAssets&, const RequestOptions&, ThreadPool&,
                                               const TextSink&)>;
inline int run_generation(const GenerationFlags& f, const RunRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto dir = resolve_model_dir(f.model);
  const int threads = f.threads > 0 ? f.threads : default_thread_count();
  PendingTextAssets assets(dir, threads);
  auto model = Model::load(dir);
  const double model_load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ThreadPool pool(threads);
  RequestOptions o;
  o.generation.max_new_tokens = f.max_new_tokens;
  o.generation.sampling = {f.temperature, f.top_k, f.top_p, f.min_p, f.repetition_penalty, f.seed};
  o.context = f.ctx;
  o.dump_dir = f.dump;
  TextSink sink;
  if (!f.json) sink = [](const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); std::fflush(stdout); };
  RequestResult r = request(*model, assets, o, pool, sink);
  r.timings.load = model_load + assets.wait_seconds();  // the part of the tokenizer load nothing overlapped
  if (f.json)
    std::cout << result_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else
    std::cout << "\n";
  if (f.verbose) std::cerr << timing_report(r, threads) << "\n";
  return 0;
}

}  // namespace smolvlm::cli
