#include "model/synth.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "io/json_fields.h"
#include "io/safetensors.h"
#include "model/model_folder.h"
#include "model/registry.h"

namespace smolvlm {

namespace {

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

  StagedModelFolder folder(out_dir_in, options.force, "synth");
  SynthResult result;
  write_file_atomic(folder.path() / "config.json", config_text);
  result.copied_files = folder.copy_companion_files(source_dir);
  // The copied companions must be consistent with the config (e.g. processor image_seq_len).
  load_model_config(folder.path());

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
  write_safetensors_streaming(folder.path() / "model.safetensors", specs, fill, {{"format", "pt"}},
                              /*flush_to_disk=*/false);
  result.tensors = expected.size();
  result.parameters = count_parameters(spec).total();
  result.weight_bytes = std::filesystem::file_size(folder.path() / "model.safetensors");

  folder.commit();
  return result;
}

}  // namespace smolvlm
