// Helpers of the model-level config, spec and synth tests.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "io/file.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "model/registry.h"

namespace smolvlm::test {

// A model folder's weights as the engine opens them: configs read, checkpoint validated against
// the architecture's spec.
inline std::unique_ptr<Checkpoint> open_validated(const std::filesystem::path& dir) {
  return open_checkpoint(load_model_config(dir));
}

inline std::string model_config_text(const char* name) { return read_file(model_dir(name) / "config.json"); }

// config.json of a bundled model with one edit applied.
inline std::string edited_config(const char* model, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(model_config_text(model));
  edit(j);
  return j.dump();
}

}  // namespace smolvlm::test
