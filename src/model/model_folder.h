// Writing a model folder atomically (synth, quantize): everything goes into a temporary sibling
// folder that is renamed into place at the end, so an interrupted run leaves no folder that looks
// like a model, and a forced replacement swaps the old folder out only once the new one is complete.
#pragma once

#include <filesystem>

namespace smolvlm {

class StagedModelFolder {
 public:
  // Checks `out_dir` (absent, an empty folder, or any folder when `force`) and creates the
  // temporary folder next to it; `what` names the tool in the temporary folder's name.
  StagedModelFolder(const std::filesystem::path& out_dir, bool force, const char* what);
  ~StagedModelFolder();  // removes the temporary folder unless committed
  StagedModelFolder(const StagedModelFolder&) = delete;
  StagedModelFolder& operator=(const StagedModelFolder&) = delete;

  const std::filesystem::path& path() const { return tmp_; }  // where to write
  const std::filesystem::path& out_dir() const { return out_; }
  // Copies the files of a model folder besides config.json and the weights (tokenizer, processor,
  // chat template, generation config) that `source_dir` has; returns how many.
  size_t copy_companion_files(const std::filesystem::path& source_dir);
  // Renames the temporary folder to out_dir (replacing an existing one).
  void commit();

 private:
  std::filesystem::path out_, tmp_;
  std::string what_;
  bool committed_ = false;
};

}  // namespace smolvlm
