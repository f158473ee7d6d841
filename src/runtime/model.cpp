#include "runtime/model.h"

#include "core/error.h"

namespace smolvlm {

FileResidency weight_residency(std::optional<FileResidency> asked, uint64_t bytes, std::optional<uint64_t> available,
                               const std::string& what) {
  if (asked == FileResidency::Mapped) return FileResidency::Mapped;
  if (!available) return FileResidency::Read;
  if (!asked) return bytes <= *available / 4 * 3 ? FileResidency::Read : FileResidency::Mapped;
  if (bytes > *available)
    throw unsupported(what + ": its weight files take " + std::to_string(bytes) + " bytes, more than the " +
                      std::to_string(*available) + " bytes of memory available to read them into");
  return FileResidency::Read;
}

std::unique_ptr<Model> Model::load(const std::filesystem::path& dir, FileResidency residency) {
  ModelConfig config = load_model_config(dir);
  std::unique_ptr<Checkpoint> checkpoint = open_checkpoint(config, residency);
  return std::make_unique<Model>(std::move(config), std::move(checkpoint));
}

Model::Model(ModelConfig config, std::unique_ptr<Checkpoint> checkpoint)
    : config_(std::move(config)), checkpoint_(std::move(checkpoint)) {
  components_ = config_.architecture->build(config_, model_spec(config_), *checkpoint_);
}

const SiglipVision& Model::vision() const {
  if (!components_.vision)
    throw unsupported(config_.dir.string() + ": " + config_.architecture_name() +
                      " has no vision tower (text-only model)");
  return *components_.vision;
}

const Idefics3Connector& Model::connector() const {
  vision();
  return *components_.connector;
}

}  // namespace smolvlm
