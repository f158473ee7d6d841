// SHA-256 of byte ranges and files (the reference data identifies arrays and files by it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace smolvlm {

// Lower-case hex digest of `size` bytes at `data`.
std::string sha256_hex(const void* data, size_t size);
// Digest of a whole file, read in chunks (never loads the file at once). Throws Error(Io).
std::string sha256_file_hex(const std::filesystem::path& path);

// Incremental hashing for data that arrives in pieces (downloads, tiles).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  std::string final_hex();  // the object is finished afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace smolvlm
