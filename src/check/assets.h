// Where `smolvlm check` reads its data: the copy compiled into the binary, or a folder with the same
// layout as assets/check (tests use a modified copy to see the check fail).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace smolvlm {

class CheckAssets {
 public:
  explicit CheckAssets(std::optional<std::filesystem::path> dir) : dir_(std::move(dir)) {}
  std::string bytes(std::string_view name) const;          // Error(Internal/Io) when missing
  nlohmann::json json(std::string_view name) const;
  std::string gunzip(std::string_view name) const;          // a .gz asset, decompressed
  // Writes the tiny model (assets model/*, tokenizer decompressed) into `dir`.
  void extract_model(const std::filesystem::path& dir) const;

 private:
  std::optional<std::filesystem::path> dir_;
};

// A temporary folder removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace smolvlm
