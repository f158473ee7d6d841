// A loaded model: the checkpoint (mapped weights + configs) and the components bound to it. Loading
// checks every tensor the components use; nothing is copied except small fp32 vectors.
#pragma once

#include <filesystem>
#include <memory>

#include "io/safetensors.h"
#include "model/connector.h"
#include "model/llama.h"
#include "model/siglip.h"

namespace smolvlm {

class Model {
 public:
  static std::unique_ptr<Model> load(const std::filesystem::path& dir);
  explicit Model(std::unique_ptr<Checkpoint> checkpoint);

  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const ModelConfig& config() const { return checkpoint_->config(); }
  uint64_t identity() const { return checkpoint_->identity(); }
  const LlamaModel& text() const { return *text_; }

  bool has_vision() const { return vision_ != nullptr; }
  // Error(Unsupported) for a text-only model.
  const SiglipVision& vision() const;
  const Idefics3Connector& connector() const;

 private:
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<LlamaModel> text_;
  std::unique_ptr<SiglipVision> vision_;
  std::unique_ptr<Idefics3Connector> connector_;
};

}  // namespace smolvlm
