// A loaded model: its configs, the checkpoint (its weight files mapped or read into memory, io/file.h)
// validated against the architecture's spec, and the components the architecture binds to it, which
// read the weights where the checkpoint holds them (only small fp32 vectors are copied).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "io/safetensors.h"
#include "model/connector.h"
#include "model/llama.h"
#include "model/registry.h"
#include "model/siglip.h"
#include "runtime/vision_cache.h"

namespace smolvlm {

// Where weight files of `bytes` in all should live, `available` bytes of memory being free
// (available_memory_bytes; nullopt: unknown): mapped when asked; read into memory when asked, an
// Error(Unsupported) naming `what` when they do not fit; not asked: read where they take at most
// three quarters of the memory (or where it is unknown), else mapped, which pages them in and out as
// memory allows instead of failing.
FileResidency weight_residency(std::optional<FileResidency> asked, uint64_t bytes, std::optional<uint64_t> available,
                               const std::string& what);

class Model {
 public:
  static std::unique_ptr<Model> load(const std::filesystem::path& dir,
                                     FileResidency residency = FileResidency::Read);
  // `checkpoint` must have passed open_checkpoint(config)'s validation.
  Model(ModelConfig config, std::unique_ptr<Checkpoint> checkpoint);

  const Checkpoint& checkpoint() const { return *checkpoint_; }
  const ModelConfig& config() const { return config_; }
  uint64_t identity() const { return checkpoint_->identity(); }
  const LlamaModel& text() const { return *components_.text; }

  bool has_vision() const { return components_.vision != nullptr; }
  // Error(Unsupported) for a text-only model.
  const SiglipVision& vision() const;
  const Idefics3Connector& connector() const;
  // Vision outputs of recent requests (runtime/vision_cache.h), shared by every session of the model.
  VisionCache& vision_cache() const { return vision_cache_; }

 private:
  ModelConfig config_;
  std::unique_ptr<Checkpoint> checkpoint_;
  ModelComponents components_;
  mutable VisionCache vision_cache_;
};

}  // namespace smolvlm
