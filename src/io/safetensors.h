// safetensors files and checkpoints (one file or shards + index), memory-mapped, validated in full
// before any tensor is handed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "io/file.h"
#include "io/quantization.h"

namespace smolvlm {

// A tensor inside a mapped file: no copy, valid while its Checkpoint / SafetensorsFile lives.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // file name it lives in (for messages)

  int64_t numel() const;
  int64_t dim(size_t i) const { return shape.at(i); }
};

// The safetensors spelling of a dtype ("F32", "BF16", ...); Error(Unsupported) for anything else.
DType parse_safetensors_dtype(const std::string& name, const std::string& where);

// Largest JSON header accepted (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// One .safetensors file: header parsed and validated (length, JSON, dtypes, shapes, offsets in
// bounds, sizes, no overlap, no duplicates, __metadata__ string map). Throws Error naming the file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path, FileResidency residency = FileResidency::Mapped);
  // Validation of an in-memory image of a file (fuzzing, tests); `data` must outlive the object.
  SafetensorsFile(const uint8_t* data, size_t size, const std::string& name);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t file_bytes() const { return size_; }

 private:
  void parse(const uint8_t* data, size_t size, const std::string& name);
  MappedFile map_;
  size_t size_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes a safetensors file atomically (header + data), tensors in the given order.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;
  size_t nbytes;
};
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// The same for tensors too big to hold at once: `fill(i, out, nbytes)` writes tensor i's bytes into
// `out` just before they are streamed to the file. Tensor data are laid out by decreasing element
// size so that every tensor is aligned to its element size (the header is padded to 8 bytes).
// `flush_to_disk` false skips the fsync (the file still appears atomically, but may not survive a
// power loss): for scratch output such as synthetic checkpoints.
struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};
using TensorFill = std::function<void(size_t index, uint8_t* out, size_t nbytes)>;
void write_safetensors_streaming(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                                 const TensorFill& fill,
                                 const std::map<std::string, std::string>& metadata = {{"format", "pt"}},
                                 bool flush_to_disk = true);

// The weights of a model folder: every tensor of model.safetensors, or of every shard named by
// model.safetensors.index.json (the index and the shards checked against each other). Knows the
// file formats only: which tensors a model needs is checked by the model (model/spec.h).
class Checkpoint {
 public:
  // The files' bytes mapped or read into memory as `residency` says (io/file.h).
  static std::unique_ptr<Checkpoint> open(const std::filesystem::path& dir,
                                          FileResidency residency = FileResidency::Mapped);
  // Whether `dir` has weights to open: model.safetensors or model.safetensors.index.json.
  static bool has_weights(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  // The file that lists the tensors (model.safetensors or the index), for messages.
  const std::string& source() const { return source_; }
  const TensorView& tensor(std::string_view name) const;  // Error(BadInput) naming the tensor if absent
  const TensorView* find(std::string_view name) const;     // nullptr if absent
  const std::map<std::string, TensorView, std::less<>>& tensors() const { return tensors_; }
  size_t file_bytes() const;                               // sum over shards
  const std::vector<std::string>& files() const { return files_; }
  // Stable identity of (config, tensor table): KV caches remember it to refuse other models.
  uint64_t identity() const { return identity_; }
  // config.json's quantization_config (io/quantization.h): empty for an unquantized model.
  const QuantizationConfig& quantization() const { return quantization_; }
  FileResidency residency() const { return residency_; }

 private:
  Checkpoint() = default;
  std::filesystem::path dir_;
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::vector<std::string> files_;
  std::map<std::string, TensorView, std::less<>> tensors_;
  uint64_t identity_ = 0;
  QuantizationConfig quantization_;
  FileResidency residency_ = FileResidency::Mapped;
};

}  // namespace smolvlm
