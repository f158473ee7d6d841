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

// Replaces the weights in `dir` by one model.safetensors holding the tensors of the bundled model
// `source` after `edit`.
inline void rewrite_model_weights(const std::string& source, const std::filesystem::path& dir,
                                  const std::function<void(std::vector<TensorToWrite>&)>& edit) {
  auto original = Checkpoint::open(data_dir() / "models" / source);
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, t] : original->tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.data, t.nbytes});
  edit(tensors);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.ends_with(".safetensors") || f == "model.safetensors.index.json") std::filesystem::remove(e.path());
  }
  write_safetensors(dir / "model.safetensors", tensors);
}

inline TensorToWrite* tensor_named(std::vector<TensorToWrite>& v, const std::string& name) {
  for (auto& t : v)
    if (t.name == name) return &t;
  ADD_FAILURE() << "no tensor " << name;
  return &v[0];
}

}  // namespace smolvlm::test
