// Files: whole files read-only (mapped, or read into memory), whole small files, atomic writes (temp file + rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace smolvlm {

// Where a file's bytes live while it is open.
enum class FileResidency {
  // Mapped from the page cache: opens at once, shares its pages with every process that maps the
  // file, and reads the disk on first touch.
  Mapped,
  // Read once into memory of this process (advised for huge pages where the kernel has them, then
  // made read-only): the open reads the whole file. On a Linux VM whose kernel samples the page cache
  // (DAMON), reading a mapped file every few milliseconds stalled for 60-100 ms after each sample, every
  // 0.5 s; this memory does not (bench/RESULTS.md).
  Read,
};

// The bytes of a whole file, read-only: mapped, or read into memory (FileResidency). Move-only;
// releases them on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  // Throws Error(Io) naming the file: missing, unreadable, not a regular file, or shorter than it
  // said while being read.
  explicit MappedFile(const std::filesystem::path& path, FileResidency residency = FileResidency::Mapped);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  FileResidency residency() const { return residency_; }

 private:
  void release() noexcept;
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  FileResidency residency_ = FileResidency::Mapped;
};

// Bytes of memory this process could still get without swapping: the kernel's MemAvailable, within
// what the cgroup's memory.max leaves (its page cache counted as free); nullopt where neither can be
// read.
std::optional<uint64_t> available_memory_bytes();

// Reads a whole (small) file; refuses files larger than `max_bytes`. Throws Error(Io / BadInput).
std::string read_file(const std::filesystem::path& path, size_t max_bytes = size_t(256) << 20);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a crash
// never leaves a partial file under the final name.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace smolvlm
