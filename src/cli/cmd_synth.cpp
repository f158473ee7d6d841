// `smolvlm synth`: a random-weight checkpoint in HF layout for a config (tests and benchmarks at real
// sizes without downloading weights).
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <iostream>
#include <string>

#include "cli/command.h"

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
    smolvlm_synth_options o;
    smolvlm_synth_options_init(&o);
    o.seed = *seed;
    o.dtype = dtype->c_str();
    o.force = *force ? 1 : 0;
    char* summary = nullptr;
    api::check(smolvlm_synth(config->c_str(), out->c_str(), &o, &summary));
    const auto j = nlohmann::ordered_json::parse(api::take_string(summary));
    if (*as_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "wrote " << *out << ": " << j["tensors"] << " tensors, " << j["parameters"] << " parameters ("
                << j["dtype"].get<std::string>() << ", " << j["weight_bytes"] << " bytes), " << j["copied_files"]
                << " files copied\n";
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
