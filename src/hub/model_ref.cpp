#include "hub/model_ref.h"

#include "core/error.h"
#include "hub/cache.h"

namespace smolvlm {

std::filesystem::path resolve_model_dir(const std::string& ref_in) {
  std::string ref = ref_in.empty() ? kDefaultModelId : ref_in;
  std::error_code ec;
  if (std::filesystem::is_directory(ref, ec)) return ref;
  if (std::filesystem::exists(ref, ec)) throw bad_input(ref + ": a model is a folder (or a hub id), not a file");
  std::optional<hub::HubId> id = hub::parse_hub_id(ref);
  if (!id)
    throw bad_input(ref + ": no such model folder, and not a hub id (org/name or org/name@revision)");
  std::filesystem::path root = hub::cache_dir();
  if (std::optional<std::filesystem::path> snapshot = hub::find_cached_model(root, *id)) return *snapshot;
  throw bad_input(hub::not_in_cache_message(root, *id));
}

}  // namespace smolvlm
