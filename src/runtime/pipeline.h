// Whole requests as the CLI runs them: images + prompt (or a text prompt) -> streamed generated text,
// with per-stage timings and, on request, every intermediate array under the golden names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/thread_pool.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "text/prompt.h"

namespace smolvlm {

struct StageTimings {
  double load = 0, preprocess = 0, vision = 0, prefill = 0, decode = 0;  // seconds
};

struct RequestOptions {
  GenerationOptions generation;      // eos_token_ids empty -> the model's generation_config eos ids
  int64_t context = 0;               // KV capacity; 0 -> prompt + max_new_tokens, within default_context()
  std::filesystem::path dump_dir;    // empty: no dump
};

struct RequestResult {
  std::string text;                  // decoded new tokens (special tokens skipped)
  std::vector<int64_t> token_ids;    // new tokens, eos included when hit
  int64_t prompt_tokens = 0;
  bool stopped_on_eos = false;
  StageTimings timings;
};

// Called with each newly printable piece of text as tokens are generated.
using TextSink = std::function<void(const std::string&)>;

// The images of a request, decoded and preprocessed as HF's Idefics3 processor does, in order.
struct PreparedImages {
  std::vector<float> pixel_values;  // [tiles, 3, S, S], S = the vision tower's image_size
  std::vector<ImageGrid> grids;     // one per image
  int64_t tiles = 0;
  double seconds = 0;               // decode + preprocess
};

// Decodes and preprocesses `images` for `model`'s vision tower. `split`: do_image_splitting
// (overrides the preprocessor config). Needs no tokenizer, so it can run while one loads.
PreparedImages prepare_images(const Model& model, const std::vector<std::filesystem::path>& images, bool split,
                              ThreadPool& pool);

// One user turn with images (images first, then `prompt`), as HF's Idefics3 processor builds it.
RequestResult run_image_request(const Model& model, const TextAssets& assets, const PreparedImages& images,
                                const std::string& prompt, const RequestOptions& options, ThreadPool& pool,
                                const TextSink& sink = {});

// A text prompt: with `chat`, rendered with the model's chat template as one user message;
// otherwise tokenized as is (add_special_tokens=true, as HF's tokenizer(text)).
RequestResult run_text_request(const Model& model, const TextAssets& assets, const std::string& prompt, bool chat,
                               const RequestOptions& options, ThreadPool& pool, const TextSink& sink = {});

// The number of threads used when none is asked for: every core.
int default_thread_count();

// {"text", "token_ids", "prompt_tokens", "stopped_on_eos", "timings": {load_s, ..., kernel_path}} (--json).
nlohmann::ordered_json result_json(const RequestResult& r);

// One line of stage timings, tokens/s, kernel path and thread count (--verbose).
std::string timing_report(const RequestResult& r, int threads);

}  // namespace smolvlm
