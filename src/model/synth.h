// Random-weight checkpoints in HF layout for any supported config: exactly the tensors of the
// architecture's spec (model/spec.h), with HF's names and shapes, small random values that keep a forward pass finite. Used to test and benchmark at
// real model sizes without downloading weights.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/dtype.h"

namespace smolvlm {

struct SynthOptions {
  uint64_t seed = 0;
  DType dtype = DType::BF16;  // F32, F16 or BF16
  bool force = false;         // replace a non-empty existing output folder
};

struct SynthResult {
  size_t tensors = 0;
  int64_t parameters = 0;
  uint64_t weight_bytes = 0;  // size of model.safetensors
  size_t copied_files = 0;    // config / tokenizer / processor files copied from the source folder
};

// `config_source` is a model folder or a config.json file (its folder supplies the tokenizer,
// processor, chat template and generation files). Everything is written into a temporary folder
// next to `out_dir` and renamed into place at the end, so an interrupted run leaves no folder that
// looks like a model. Values are near-normal (a scaled sum of four uniforms: cheap, bounded by
// +-3.5 sigma) with sigma 0.02: matrices and biases centred on 0, norm weights on 1. Each tensor's
// values depend only on the seed and the tensor name.
SynthResult synth_checkpoint(const std::filesystem::path& config_source, const std::filesystem::path& out_dir,
                             const SynthOptions& options);

}  // namespace smolvlm
