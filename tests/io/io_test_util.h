// Helpers of the io tests: scratch folders, hand-made safetensors images, model folder copies.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace smolvlm::test {

// A fresh folder under the system temp dir, removed with its contents at scope exit.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("smolvlm_io_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The bytes of a safetensors file: 8-byte little-endian length, `header` verbatim, `data_bytes` zeros.
inline std::string safetensors_image(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Copies a bundled model folder (symlinks resolved) into `dest`, without the tokenizer (large and
// not read by the io module).
inline void copy_model(const std::string& name, const std::filesystem::path& dest) {
  std::filesystem::create_directories(dest);
  for (const auto& e : std::filesystem::directory_iterator(data_dir() / "models" / name))
    if (e.path().filename() != "tokenizer.json")
      std::filesystem::copy_file(e.path(), dest / e.path().filename(),
                               std::filesystem::copy_options::overwrite_existing);
}

// Replaces the weights in `dir` by one model.safetensors holding the tensors of the `source` test model
// (single file or shards) after `edit`.
inline void rewrite_weights(const std::string& source, const std::filesystem::path& dir,
                     const std::function<void(std::vector<TensorToWrite>&)>& edit) {
  auto original = Checkpoint::open(data_dir() / "models" / source);
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, t] : original->tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.data, t.nbytes});
  edit(tensors);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.ends_with(".safetensors") || f == "model.safetensors.index.json") std::filesystem::remove(e.path());
  }
  write_safetensors(dir / "model.safetensors", tensors);
}

inline TensorToWrite* find_tensor(std::vector<TensorToWrite>& v, const std::string& name) {
  for (auto& t : v)
    if (t.name == name) return &t;
  ADD_FAILURE() << "no tensor " << name;
  return &v[0];
}

// Expects `f` to throw Error of `kind` whose message contains `fragment`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error thrown; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected fragment: " << fragment;
  }
}

}  // namespace smolvlm::test
