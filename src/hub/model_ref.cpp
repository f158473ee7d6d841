#include "hub/model_ref.h"

#include "core/error.h"

namespace smolvlm {

std::filesystem::path resolve_model_dir(const std::string& ref_in) {
  std::string ref = ref_in.empty() ? kDefaultModelId : ref_in;
  std::error_code ec;
  if (std::filesystem::is_directory(ref, ec)) return ref;
  if (std::filesystem::exists(ref, ec)) throw bad_input(ref + ": --model must be a folder, not a file");
  throw bad_input(ref + ": no such model folder (hub ids are resolved in the HuggingFace cache once downloads are supported)");
}

}  // namespace smolvlm
