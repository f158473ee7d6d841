// Idefics3ForConditionalGeneration (SmolVLM): its weight spec and registry entry. A SigLIP-style
// vision tower, the pixel-shuffle connector and a Llama text model.
#pragma once

#include "model/idefics3_config.h"
#include "model/registry.h"
#include "model/spec.h"

namespace smolvlm {

// Idefics3VisionTransformer under model.vision_model.: embeddings (patch conv + position table),
// encoder layers, post_layernorm.
ComponentSpec idefics3_vision_spec(const Idefics3VisionConfig& v);

// Idefics3Connector: the bias-free modality projection of the pixel-shuffled features.
ComponentSpec idefics3_connector_spec(const Idefics3Config& c);

extern const Architecture kIdefics3ForConditionalGeneration;

}  // namespace smolvlm
