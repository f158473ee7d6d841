// A model reference: a local folder, or a hub id `org/name[@revision]` looked up in the
// HuggingFace cache. Every front end resolves its model reference through resolve_model_dir().
#pragma once

#include <filesystem>
#include <string>

namespace smolvlm {

// The model used when none is named.
inline constexpr const char* kDefaultModelId = "HuggingFaceTB/SmolVLM-256M-Instruct";

// Returns the folder holding the model's files. `ref` empty means kDefaultModelId. A hub id resolves
// to its snapshot folder in the HuggingFace cache (see hub/cache.h); this never uses the network.
// Throws Error(BadInput) with the exact `smolvlm pull` command when the cache does not have it.
std::filesystem::path resolve_model_dir(const std::string& ref);

}  // namespace smolvlm
