// Fuzzes quantized checkpoints: the input is a quantization_config JSON text, a NUL byte, then a
// safetensors file, loaded as a one-layer Llama (config below). Loading must validate or refuse
// with an Error; every matrix it hands out is then multiplied (the GEMV and the packing GEMM), so
// a block parameter or code read outside its tensor is caught by the sanitizers.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "kernels/gemm.h"
#include "model/quantized_weights.h"
#include "model/registry.h"
#include "model/weights.h"

namespace {

// vocab 32, hidden 16, 1 layer, 2 heads (1 kv head), intermediate 40 (K = 40: a short q4 group), tied.
constexpr const char* kConfigHead =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "intermediate_size": 40,)"
    R"( "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 32,)"
    R"( "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "tie_word_embeddings": true, "bos_token_id": 1,)"
    R"( "eos_token_id": 2, "quantization_config": )";

const std::filesystem::path& fuzz_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("smolvlm_quantized_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smolvlm;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string qconfig = input.substr(0, nul);
  const std::string weights = nul == std::string::npos ? std::string() : input.substr(nul + 1);
  const std::filesystem::path& dir = fuzz_dir();
  try {
    write_file_atomic(dir / "config.json", std::string(kConfigHead) + qconfig + "}");
    write_file_atomic(dir / "model.safetensors", weights);
    const ModelConfig cfg = load_model_config(dir);
    const std::unique_ptr<Checkpoint> ck = open_checkpoint(cfg);
    const ModelSpec spec = model_spec(cfg);
    ThreadPool pool(1);
    std::vector<float> x(5 * 64, 0.5f), y(5 * 64);
    for (const ExpectedTensor& e : expected_tensors(spec)) {
      if (!quantizable(e)) continue;
      const WeightRef w = matrix(*ck, e);
      if (w.rows > 64 || w.cols > 64) __builtin_trap();  // the spec's shapes, nothing else
      linear(x.data(), 1, w, nullptr, y.data(), pool);
      linear(x.data(), 5, w, nullptr, y.data(), pool);
    }
  } catch (const Error&) {
  }
  return 0;
}
