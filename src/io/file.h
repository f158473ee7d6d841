// Files: read-only memory maps, whole small files, atomic writes (temp file + rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace smolvlm {

// A read-only memory map of a whole file. Move-only; unmaps on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::filesystem::path& path);  // throws Error(Io)
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file; refuses files larger than `max_bytes`. Throws Error(Io / BadInput).
std::string read_file(const std::filesystem::path& path, size_t max_bytes = size_t(256) << 20);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a crash
// never leaves a partial file under the final name.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace smolvlm
