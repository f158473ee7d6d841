#include "runtime/model.h"

#include "core/error.h"

namespace smolvlm {

std::unique_ptr<Model> Model::load(const std::filesystem::path& dir) {
  return std::make_unique<Model>(Checkpoint::open(dir));
}

Model::Model(std::unique_ptr<Checkpoint> checkpoint) : checkpoint_(std::move(checkpoint)) {
  const ModelConfig& cfg = checkpoint_->config();
  if (cfg.arch == Architecture::Idefics3) {
    text_ = std::make_unique<LlamaModel>(*checkpoint_, "model.text_model.");
    vision_ = std::make_unique<SiglipVision>(*checkpoint_);
    connector_ = std::make_unique<Idefics3Connector>(*checkpoint_, vision_->patches_per_side(), vision_->hidden());
  } else {
    text_ = std::make_unique<LlamaModel>(*checkpoint_, "model.");
  }
}

const SiglipVision& Model::vision() const {
  if (!vision_)
    throw unsupported(config().dir.string() + ": " + architecture_name(config().arch) +
                      " has no vision tower (text-only model)");
  return *vision_;
}

const Idefics3Connector& Model::connector() const {
  vision();
  return *connector_;
}

}  // namespace smolvlm
