#include "cli/generation_flags.h"

#include "cli/batch.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace smolvlm::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int print_piece(const char* piece, size_t size, void*) {
  std::fwrite(piece, 1, size, stdout);
  std::fflush(stdout);
  return 1;
}

std::string timing_report(const smolvlm_result& r, double load_s, const smolvlm_model_info& info) {
  const auto& t = r.timings;
  const size_t decoded = r.n_tokens == 0 ? 0 : r.n_tokens - 1;  // the first comes from the prefill
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "load %.3f s, preprocess %.3f s, vision %.3f s, prefill %.3f s (%lld tokens, %.1f tok/s), "
                "decode %.3f s (%zu tokens, %.2f tok/s); kernels %s, precision %s (decode products: %s), %d threads, "
                "weights %s; finish: %s",
                load_s, t.preprocess_s, t.vision_s, t.prefill_s, static_cast<long long>(r.prompt_tokens),
                t.prefill_s > 0 ? r.prompt_tokens / t.prefill_s : 0.0, t.decode_s, decoded,
                t.decode_s > 0 ? decoded / t.decode_s : 0.0, r.kernel_path, info.precision,
                info.decode_products ? info.decode_products : "", info.threads,
                info.weight_memory ? info.weight_memory : "", smolvlm_finish_reason_name(r.finish_reason));
  return buf;
}

}  // namespace

void add_precision_flag(CLI::App& sub, std::string& precision) {
  sub.add_option("--precision", precision,
                 "arithmetic of the products: exact (fp32, as HF; the default) or fast: on the avx512 kernels with "
                 "avx512_bf16, vision, prefill and the decode of BF16 weights on bf16 operands (measured 1.4-2x faster; "
                 "several sequences' decode steps too); on those with "
                 "avx512_vnni and on the avx2 and neon kernels, decode with q8/q4/lut4 weights on int8 products (x rounded to "
                 "int8 in blocks of 32, lut4 tables to 6-bit codes). `info` and --verbose name what decode runs; the accuracy cost of each is in "
                 "the README")
      ->check(CLI::IsMember({"exact", "fast"}));
}

void add_weight_memory_flag(CLI::App& sub, std::string& weight_memory) {
  sub.add_option("--weight-memory", weight_memory,
                 "where the weights live: read (the files read whole into memory at load, advised for huge pages) or "
                 "map (the files mapped: a load at once, pages shared with other processes; decode measured slower on "
                 "a VM whose kernel samples the page cache, see the README); default: read where the files take at "
                 "most 3/4 of the memory available, else map")
      ->check(CLI::IsMember({"read", "map"}));
}

void add_generation_flags(CLI::App& sub, GenerationFlags& f, const std::string& dump_help) {
  sub.add_option("--model", f.model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
  sub.add_option("--max-new-tokens", f.max_new_tokens, "stop after this many new tokens")->capture_default_str();
  sub.add_option("--ctx", f.ctx, "KV cache capacity in tokens (default: prompt + max-new-tokens)");
  sub.add_option("--threads", f.threads, "worker threads (default: all cores)");
  sub.add_option("--kernels", f.kernels, std::string("kernel path: ") + smolvlm_supported_kernel_paths() +
                                             " on this CPU (default: the best; also SMOLVLM_KERNELS)");
  add_precision_flag(sub, f.precision);
  add_weight_memory_flag(sub, f.weight_memory);
  sub.add_option("--temperature", f.temperature, "sample with this temperature (0: greedy)")->capture_default_str();
  sub.add_option("--top-k", f.top_k, "sample among the k most likely tokens (0: off)");
  sub.add_option("--top-p", f.top_p, "nucleus sampling mass (1: off)");
  sub.add_option("--min-p", f.min_p, "drop tokens below min-p times the top probability (0: off)");
  sub.add_option("--repetition-penalty", f.repetition_penalty, "HF repetition penalty (1: off)");
  sub.add_option("--seed", f.seed, "random seed for sampling");
  // One value per flag, so that a positional argument after them is never taken for another stop.
  sub.add_option("--stop", f.stop, "stop where the text contains this string (repeatable; not printed)")
      ->allow_extra_args(false);
  sub.add_option("--stop-id", f.stop_ids, "stop after this token id, besides the model's eos ids (repeatable)")
      ->allow_extra_args(false);
  sub.add_flag("--json", f.json,
               "print {\"text\",\"token_ids\",\"prompt_tokens\",\"stopped_on_eos\",\"finish_reason\",\"timings\"} "
               "instead of streaming");
  sub.add_option("--dump", f.dump, dump_help);
  sub.add_flag("--verbose", f.verbose, "print stage timings, tokens/s, the kernel path and the finish reason to stderr");
}

api::Model load_model(const GenerationFlags& f) {
  smolvlm_model_options mo;
  smolvlm_model_options_init(&mo);
  mo.threads = f.threads;
  if (!f.kernels.empty()) mo.kernel_path = f.kernels.c_str();
  if (!f.precision.empty()) mo.precision = f.precision.c_str();
  if (!f.weight_memory.empty()) mo.weight_memory = f.weight_memory.c_str();
  return api::Model::load(f.model, &mo);
}

void apply_generation_flags(const GenerationFlags& f, smolvlm_request& req, std::vector<const char*>& stops) {
  req.max_new_tokens = f.max_new_tokens;
  req.sampling = {f.temperature, f.top_k, f.top_p, f.min_p, f.repetition_penalty, f.seed};
  stops.clear();
  for (const auto& s : f.stop) stops.push_back(s.c_str());
  req.stop = stops.data();
  req.n_stop = stops.size();
  req.stop_ids = f.stop_ids.data();
  req.n_stop_ids = f.stop_ids.size();
  if (!f.dump.empty()) req.dump_dir = f.dump.c_str();
  if (!f.json) req.on_piece = print_piece;
}

int run_generation(const GenerationFlags& f, const FillPrompt& fill) {
  const auto t0 = std::chrono::steady_clock::now();
  const api::Model model = load_model(f);
  const double model_load = seconds_since(t0);

  smolvlm_request req;
  smolvlm_request_init(&req);
  std::vector<const char*> stops;
  apply_generation_flags(f, req, stops);
  req.context = f.ctx;
  api::Chat chat;
  fill(model, req, chat);
  const api::Result r = model.generate(req);
  const double load = model_load + r.raw().timings.load_s;  // the tokenizer load nothing overlapped
  if (f.json)
    std::cout << result_json(r.raw(), load).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else
    std::cout << "\n";
  if (f.verbose) std::cerr << timing_report(r.raw(), load, model.info()) << "\n" << unprintable_note(r.raw());
  return 0;
}

std::string unprintable_note(const smolvlm_result& r) {
  if (r.unprintable_tokens <= 0) return "";
  return "note: the model generated " + std::to_string(r.unprintable_tokens) +
         " id(s) its tokenizer cannot print (its embedding is padded past the tokenizer): they are kept in "
         "token_ids and add no text, as in HF transformers\n";
}

}  // namespace smolvlm::cli
