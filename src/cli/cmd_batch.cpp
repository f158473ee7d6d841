// `smolvlm batch`: run a JSONL file of caption/chat jobs through one model, one result line per job
// (see cli/batch.h for both line formats). Resumable (--resume) and shardable (--shard I/N).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

#include "cli/batch.h"
#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

struct BatchFlags {
  std::string input, output, shard = "0/1", model, kernels, precision, weight_memory;
  bool resume = false, no_split = false, progress = false, no_progress = false;
  int threads = 0;
  JobDefaults defaults;
};

void parse_shard(const std::string& text, BatchOptions& o) {
  long long i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lld/%lld%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n)
    throw UsageError("--shard " + text + ": expected I/N with 0 <= I < N, e.g. 0/3");
  o.shard_index = i;
  o.shard_count = n;
}

const Command kBatch{
    "batch", "Run a JSONL file of caption/chat jobs, one result line per job (resumable, shardable)",
    [](CLI::App& sub) {
      auto f = std::make_shared<BatchFlags>();
      sub.add_option("--input", f->input,
                     "jobs, one JSON object a line: {\"id\", \"images\": [paths], \"prompt\" | \"messages\", options "
                     "named as in the API: max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, seed, "
                     "split, stop, stop_ids}")
          ->required();
      sub.add_option("--output", f->output,
                     "results, appended one line per job: {\"id\", \"text\", \"token_ids\", \"prompt_tokens\", \"stopped_on_eos\", "
                     "\"finish_reason\", \"timings\"} or {\"id\", \"error\": {\"code\", \"message\"}} ({\"line\": N, ...} "
                     "for a line without a readable id)")
          ->required();
      sub.add_option("--shard", f->shard,
                     "run only shard I of N (by a hash of each id; N processes with I = 0..N-1 cover the input once)")
          ->capture_default_str();
      sub.add_flag("--resume", f->resume, "skip the ids already in --output (after a crash or a kill)");
      sub.add_option("--model", f->model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
      sub.add_option("--threads", f->threads, "worker threads (default: all cores)");
      sub.add_option("--kernels", f->kernels, std::string("kernel path: ") + smolvlm_supported_kernel_paths() +
                                                  " on this CPU (default: the best; also SMOLVLM_KERNELS)");
      add_precision_flag(sub, f->precision);
      add_weight_memory_flag(sub, f->weight_memory);
      sub.add_option("--prompt", f->defaults.prompt, "the prompt of a job that gives images and no prompt")
          ->capture_default_str();
      sub.add_option("--max-new-tokens", f->defaults.max_new_tokens, "default max_new_tokens of a job")
          ->capture_default_str();
      sub.add_flag("--no-split", f->no_split, "default split false: one squashed tile per image");
      sub.add_option("--temperature", f->defaults.sampling.temperature, "default temperature (0: greedy)");
      sub.add_option("--top-k", f->defaults.sampling.top_k, "default top_k (0: off)");
      sub.add_option("--top-p", f->defaults.sampling.top_p, "default top_p (1: off)");
      sub.add_option("--min-p", f->defaults.sampling.min_p, "default min_p (0: off)");
      sub.add_option("--repetition-penalty", f->defaults.sampling.repetition_penalty, "default repetition_penalty (1: off)");
      sub.add_option("--seed", f->defaults.sampling.seed, "default seed");
      sub.add_flag("--progress", f->progress, "draw the progress bar even when stderr is not a terminal");
      sub.add_flag("--no-progress", f->no_progress, "no progress bar");
      return [f]() {
        BatchOptions o;
        o.input = f->input;
        o.output = f->output;
        o.resume = f->resume;
        o.defaults = f->defaults;
        if (f->no_split) o.defaults.split = 0;
        parse_shard(f->shard, o);
        if (!f->no_progress && (f->progress || isatty(fileno(stderr)))) o.on_progress = progress_bar(stderr);
        smolvlm_model_options mo;
        smolvlm_model_options_init(&mo);
        mo.threads = f->threads;
        if (!f->kernels.empty()) mo.kernel_path = f->kernels.c_str();
        if (!f->precision.empty()) mo.precision = f->precision.c_str();
        if (!f->weight_memory.empty()) mo.weight_memory = f->weight_memory.c_str();
        const api::Model model = api::Model::load(f->model, &mo);
        const BatchSummary s = run_batch(model, o);
        std::fprintf(stderr,
                     "smolvlm batch: shard %lld/%lld: %lld of %lld lines, %lld already done, %lld written (%lld errors) "
                     "in %.2f s, %.2f items/s\n",
                     static_cast<long long>(o.shard_index), static_cast<long long>(o.shard_count),
                     static_cast<long long>(s.in_shard), static_cast<long long>(s.lines),
                     static_cast<long long>(s.skipped), static_cast<long long>(s.done), static_cast<long long>(s.errors),
                     s.seconds, s.seconds > 0 ? s.done / s.seconds : 0.0);
        return 0;
      };
    }};

}  // namespace
}  // namespace smolvlm::cli
