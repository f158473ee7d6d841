// `smolvlm synth`: a random-weight checkpoint in HF layout for a config (tests and benchmarks at real
// sizes without downloading weights).
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <string>

#include "cli/command.h"
#include "model/synth.h"

namespace smolvlm::cli {
namespace {

const Command kSynth{"synth", "Write a random-weight checkpoint with exactly the tensors HF creates for a config",
                     [](CLI::App& sub) {
  auto config = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto seed = std::make_shared<uint64_t>(0);
  auto dtype = std::make_shared<std::string>("bf16");
  auto force = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  sub.add_option("--config", *config, "model folder or config.json to take the architecture (and tokenizer files) from")
      ->required();
  sub.add_option("--out", *out, "output folder (created; must not exist or be empty unless --force)")->required();
  sub.add_option("--seed", *seed, "random seed (default 0)");
  sub.add_option("--dtype", *dtype, "weight dtype: bf16 (default), f16 or f32")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  sub.add_flag("--force", *force, "replace a non-empty output folder");
  sub.add_flag("--json", *as_json, "print a JSON summary");
  return [=]() {
    static const std::map<std::string, DType> kDtypes = {{"bf16", DType::BF16}, {"f16", DType::F16}, {"f32", DType::F32}};
    SynthOptions options;
    options.seed = *seed;
    options.dtype = kDtypes.at(*dtype);
    options.force = *force;
    SynthResult r = synth_checkpoint(*config, *out, options);
    if (*as_json) {
      nlohmann::ordered_json j = {{"out", *out},           {"tensors", r.tensors},          {"parameters", r.parameters},
                                  {"dtype", dtype_name(options.dtype)}, {"weight_bytes", r.weight_bytes},
                                  {"copied_files", r.copied_files}, {"seed", *seed}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "wrote " << *out << ": " << r.tensors << " tensors, " << r.parameters << " parameters ("
                << dtype_name(options.dtype) << ", " << r.weight_bytes << " bytes), " << r.copied_files
                << " files copied\n";
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
