#include "model/synth.h"

#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/json_fields.h"
#include "io/safetensors.h"
#include "model/registry.h"

namespace smolvlm {

namespace {

// Files of a model folder besides the weights that a synthetic copy keeps.
constexpr const char* kCompanionFiles[] = {
    "generation_config.json", "preprocessor_config.json", "processor_config.json", "chat_template.json",
    "chat_template.jinja",    "tokenizer.json",           "tokenizer_config.json", "special_tokens_map.json",
    "added_tokens.json",      "vocab.json",               "merges.txt"};

constexpr float kSigma = 0.02f;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t name_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;  // FNV-1a, seeded
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool is_norm(Role r) {
  return r == Role::AttentionNorm || r == Role::MlpNorm || r == Role::FinalNorm || r == Role::QNorm || r == Role::KNorm;
}

// Fills `out` with `count` values of `dtype`: mean + sigma * z, z a scaled sum of four 16-bit uniforms.
void fill_values(uint8_t* out, size_t count, DType dtype, float mean, uint64_t state) {
  constexpr float kCentre = 2.0f * 65535.0f;
  const float scale = kSigma / 37837.23f;  // sqrt(4 * (65536^2 - 1) / 12): the sum's standard deviation
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = splitmix64(state);
    float sum = float(r & 0xffff) + float((r >> 16) & 0xffff) + float((r >> 32) & 0xffff) + float(r >> 48);
    float v = mean + (sum - kCentre) * scale;
    switch (dtype) {
      case DType::F32: std::memcpy(out + 4 * i, &v, 4); break;
      case DType::BF16: { uint16_t h = f32_to_bf16(v); std::memcpy(out + 2 * i, &h, 2); break; }
      default: { uint16_t h = f32_to_f16(v); std::memcpy(out + 2 * i, &h, 2); break; }
    }
  }
}

bool folder_is_empty(const std::filesystem::path& dir) {
  return std::filesystem::directory_iterator(dir) == std::filesystem::directory_iterator();
}

// A folder that is removed with its contents unless release()d.
class TempFolder {
 public:
  explicit TempFolder(std::filesystem::path path) : path_(std::move(path)) {
    std::error_code ec;
    if (!std::filesystem::create_directory(path_, ec))
      throw io_error(path_.string() + ": cannot create the temporary folder: " + ec.message());
  }
  ~TempFolder() {
    std::error_code ec;
    if (!released_) std::filesystem::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void release() { released_ = true; }

 private:
  std::filesystem::path path_;
  bool released_ = false;
};

std::filesystem::path sibling_name(const std::filesystem::path& out, const char* what) {
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

SynthResult synth_checkpoint(const std::filesystem::path& config_source, const std::filesystem::path& out_dir_in,
                             const SynthOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::F16 && options.dtype != DType::BF16)
    throw bad_input(std::string("synth: dtype must be F32, F16 or BF16, got ") + dtype_name(options.dtype));
  std::error_code ec;
  std::filesystem::path config_path = config_source;
  std::filesystem::path source_dir = config_source;
  if (std::filesystem::is_directory(config_source, ec)) {
    config_path = config_source / "config.json";
  } else {
    source_dir = config_source.parent_path().empty() ? std::filesystem::path(".") : config_source.parent_path();
  }
  if (!std::filesystem::exists(config_path, ec)) throw bad_input(config_path.string() + ": no such config file");
  const std::string config_text = read_file(config_path, kMaxConfigFileBytes);
  ModelConfig cfg = parse_model_config(config_text, config_path.string());

  std::filesystem::path out_dir = std::filesystem::absolute(out_dir_in).lexically_normal();
  if (out_dir.filename().empty()) out_dir = out_dir.parent_path();
  if (std::filesystem::exists(out_dir, ec)) {
    if (!std::filesystem::is_directory(out_dir, ec)) throw bad_input(out_dir.string() + ": exists and is not a folder");
    if (!folder_is_empty(out_dir) && !options.force)
      throw bad_input(out_dir.string() + ": folder exists and is not empty (replacing it must be asked for)");
  }
  std::filesystem::create_directories(out_dir.parent_path(), ec);
  if (ec) throw io_error(out_dir.parent_path().string() + ": cannot create: " + ec.message());

  TempFolder tmp(sibling_name(out_dir, "synth-tmp"));
  SynthResult result;
  write_file_atomic(tmp.path() / "config.json", config_text);
  for (const char* name : kCompanionFiles) {
    std::filesystem::path from = source_dir / name;
    if (!std::filesystem::is_regular_file(from, ec)) continue;  // follows symlinks
    write_file_atomic(tmp.path() / name, read_file(from));
    ++result.copied_files;
  }
  // The copied companions must be consistent with the config (e.g. processor image_seq_len).
  load_model_config(tmp.path());

  const ModelSpec spec = model_spec(cfg);
  const std::vector<ExpectedTensor> expected = expected_tensors(spec);
  std::vector<TensorSpec> specs;
  for (const ExpectedTensor& e : expected) specs.push_back({e.name, options.dtype, e.shape});
  // No fsync: the folder rename below is what makes the result appear at once, and flushing half a
  // gigabyte of scratch weights would dominate the run time.
  auto fill = [&](size_t i, uint8_t* out, size_t nbytes) {
    const ExpectedTensor& e = expected[i];
    bool norm_weight = is_norm(e.role) && e.param == Param::Weight;
    fill_values(out, nbytes / dtype_size(options.dtype), options.dtype, norm_weight ? 1.0f : 0.0f,
                name_seed(options.seed, e.name));
  };
  write_safetensors_streaming(tmp.path() / "model.safetensors", specs, fill, {{"format", "pt"}},
                              /*flush_to_disk=*/false);
  result.tensors = expected.size();
  result.parameters = count_parameters(spec).total();
  result.weight_bytes = std::filesystem::file_size(tmp.path() / "model.safetensors");

  if (std::filesystem::exists(out_dir, ec)) {
    std::filesystem::path old = sibling_name(out_dir, "synth-old");
    rename_or_throw(out_dir, old);
    try {
      rename_or_throw(tmp.path(), out_dir);
    } catch (...) {
      std::filesystem::rename(old, out_dir, ec);  // put the previous folder back
      throw;
    }
    tmp.release();
    std::filesystem::remove_all(old, ec);
  } else {
    rename_or_throw(tmp.path(), out_dir);
    tmp.release();
  }
  return result;
}

}  // namespace smolvlm
