#include "model/model_folder.h"

#include <unistd.h>

#include <random>
#include <string>

#include "core/error.h"
#include "io/file.h"

namespace smolvlm {

namespace {

constexpr const char* kCompanionFiles[] = {
    "generation_config.json", "preprocessor_config.json", "processor_config.json", "chat_template.json",
    "chat_template.jinja",    "tokenizer.json",           "tokenizer_config.json", "special_tokens_map.json",
    "added_tokens.json",      "vocab.json",               "merges.txt"};

bool folder_is_empty(const std::filesystem::path& dir) {
  return std::filesystem::directory_iterator(dir) == std::filesystem::directory_iterator();
}

std::filesystem::path sibling_name(const std::filesystem::path& out, const std::string& what) {
  std::random_device rd;
  return out.parent_path() / ("." + out.filename().string() + "." + what + "-" + std::to_string(::getpid()) + "-" +
                              std::to_string(rd()));
}

void rename_or_throw(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec) throw io_error(from.string() + ": cannot rename to " + to.string() + ": " + ec.message());
}

}  // namespace

StagedModelFolder::StagedModelFolder(const std::filesystem::path& out_dir, bool force, const char* what) : what_(what) {
  std::error_code ec;
  out_ = std::filesystem::absolute(out_dir).lexically_normal();
  if (out_.filename().empty()) out_ = out_.parent_path();
  if (std::filesystem::exists(out_, ec)) {
    if (!std::filesystem::is_directory(out_, ec)) throw bad_input(out_.string() + ": exists and is not a folder");
    if (!folder_is_empty(out_) && !force)
      throw bad_input(out_.string() + ": folder exists and is not empty (replacing it must be asked for)");
  }
  std::filesystem::create_directories(out_.parent_path(), ec);
  if (ec) throw io_error(out_.parent_path().string() + ": cannot create: " + ec.message());
  tmp_ = sibling_name(out_, what_ + "-tmp");
  if (!std::filesystem::create_directory(tmp_, ec))
    throw io_error(tmp_.string() + ": cannot create the temporary folder: " + ec.message());
}

StagedModelFolder::~StagedModelFolder() {
  std::error_code ec;
  if (!committed_) std::filesystem::remove_all(tmp_, ec);
}

size_t StagedModelFolder::copy_companion_files(const std::filesystem::path& source_dir) {
  size_t copied = 0;
  std::error_code ec;
  for (const char* name : kCompanionFiles) {
    const std::filesystem::path from = source_dir / name;
    if (!std::filesystem::is_regular_file(from, ec)) continue;  // follows symlinks
    write_file_atomic(tmp_ / name, read_file(from));
    ++copied;
  }
  return copied;
}

void StagedModelFolder::commit() {
  std::error_code ec;
  if (std::filesystem::exists(out_, ec)) {
    const std::filesystem::path old = sibling_name(out_, what_ + "-old");
    rename_or_throw(out_, old);
    try {
      rename_or_throw(tmp_, out_);
    } catch (...) {
      std::filesystem::rename(old, out_, ec);  // put the previous folder back
      throw;
    }
    committed_ = true;
    std::filesystem::remove_all(old, ec);
  } else {
    rename_or_throw(tmp_, out_);
    committed_ = true;
  }
}

}  // namespace smolvlm
