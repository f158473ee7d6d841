// `smolvlm quantize`: a model folder with 8- or 4-bit linear weights (or every weight dequantized to
// fp32), written atomically, with progress on stderr.
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace smolvlm::cli {
namespace {

void print_progress(void* quiet, size_t done, size_t total, const char* tensor) {
  if (*static_cast<bool*>(quiet)) return;
  std::fprintf(stderr, "\r[%zu/%zu] %-70.70s", done, total, tensor);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

const Command kQuantize{"quantize", "Write a copy of a model with quantized weights (q8, q4, lut4)", [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto scheme = std::make_shared<std::string>("q8");
  auto group = std::make_shared<int64_t>(0);
  auto keep = std::make_shared<std::vector<std::string>>();
  auto threads = std::make_shared<int>(0);
  auto force = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  sub.add_option("--model", *model, "model folder or hub id to quantize")->required();
  sub.add_option("--out", *out, "output folder (created; must not exist or be empty unless --force)")->required();
  sub.add_option("--scheme", *scheme,
                 "q8 (int8, asymmetric per output row; default), q4 (4-bit affine, groups of 64 along K), lut4 "
                 "(4-bit, 16 fp16 k-means centroids per 16 output rows), or f32 (every weight dequantized to fp32)")
      ->check(CLI::IsMember({"q8", "q4", "lut4", "f32"}));
  sub.add_option("--group", *group,
                 "q8/q4: columns per group (q8 default: the whole row; q4 default 64; a short last group is kept); "
                 "lut4: output rows per table (default 16)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--keep", *keep,
                 "PATTERN=FORMAT: tensors whose name matches PATTERN (* and ?) are stored as FORMAT (q8, q4, lut4, "
                 "bf16, f16, f32, or source = as in the input); first match wins; repeatable");
  sub.add_option("--threads", *threads, "threads (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_flag("--force", *force, "replace a non-empty output folder");
  sub.add_flag("--quiet", *quiet, "no progress on stderr");
  sub.add_flag("--json", *as_json, "print a JSON summary with every tensor's format and error");
  return [=]() {
    smolvlm_quantize_options o;
    smolvlm_quantize_options_init(&o);
    o.scheme = scheme->c_str();
    o.group_size = *group;
    std::vector<const char*> rules;
    for (const std::string& k : *keep) rules.push_back(k.c_str());
    o.overrides = rules.data();
    o.n_overrides = rules.size();
    o.force = *force ? 1 : 0;
    o.threads = *threads;
    o.progress = print_progress;
    o.progress_user = quiet.get();
    char* summary = nullptr;
    api::check(smolvlm_quantize(model->c_str(), out->c_str(), &o, &summary));
    const auto j = nlohmann::ordered_json::parse(api::take_string(summary));
    if (*as_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("wrote %s: %s, %zu of %zu tensors quantized, %llu bytes (from %llu) in %.1f s\n", out->c_str(),
                  j["scheme"].get<std::string>().c_str(), j["quantized"].get<size_t>(), j["tensors"].get<size_t>(),
                  j["weight_bytes"].get<unsigned long long>(), j["source_bytes"].get<unsigned long long>(),
                  j["seconds"].get<double>());
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
