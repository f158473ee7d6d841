// The base of the parsed config.json of an architecture: one subclass per HF config class
// (LlamaConfig, Idefics3Config, ...), read through ModelConfig::as<T>().
#pragma once

namespace smolvlm {

struct ArchitectureConfig {
  virtual ~ArchitectureConfig() = default;
};

}  // namespace smolvlm
