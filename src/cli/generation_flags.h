// The flags `caption` and `generate` share: model, generation length, context, threads, kernels,
// sampling, stops, output form. Both commands add them with add_generation_flags and run their
// request with run_generation.
#pragma once

#include <CLI/CLI.hpp>
#include <smolvlm.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cli/messages.h"

namespace smolvlm::cli {

struct GenerationFlags {
  std::string model, dump, kernels, precision, weight_memory;
  int64_t max_new_tokens = 256, ctx = 0;
  int32_t top_k = 0;
  int threads = 0;
  bool json = false, verbose = false;
  float temperature = 0.f, top_p = 1.f, min_p = 0.f, repetition_penalty = 1.f;
  uint64_t seed = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_ids;
};

void add_generation_flags(CLI::App& sub, GenerationFlags& f, const std::string& dump_help);
// --precision exact|fast into `precision` (empty when not given: the library's default, exact).
void add_precision_flag(CLI::App& sub, std::string& precision);
// --weight-memory read|map into `weight_memory` (empty when not given: the library's default, read
// where the files fit in memory).
void add_weight_memory_flag(CLI::App& sub, std::string& weight_memory);

// The model named by --model, with the flags' threads, kernel path and precision.
api::Model load_model(const GenerationFlags& f);

// Puts the flags' generation length, sampling, stops, dump folder and streaming (stdout unless --json)
// into `req`; `stops` holds the stop strings' pointers the request refers to.
void apply_generation_flags(const GenerationFlags& f, smolvlm_request& req, std::vector<const char*>& stops);

// Loads the model named by --model, lets `fill` put the prompt into the request (it may keep what it
// points to alive in `chat`), runs it with the flags' options (streaming to stdout unless --json),
// prints the result as the flags ask and returns the exit code.
using FillPrompt = std::function<void(const api::Model&, smolvlm_request&, api::Chat& chat)>;
int run_generation(const GenerationFlags& f, const FillPrompt& fill);

// For --verbose: a line saying the model generated ids its tokenizer cannot print (kept in token_ids,
// decoded to nothing), or "" when it did not.
std::string unprintable_note(const smolvlm_result& r);

}  // namespace smolvlm::cli
