// The HF companion config files of a model folder that no model class owns: generation_config.json,
// preprocessor_config.json (Idefics3ImageProcessor) and processor_config.json (Idefics3Processor),
// HF's defaults applied in exactly one place (config.cpp). config.json itself is read per
// architecture (src/model/registry.h). See shared/reference/models/REAL_CONFIG_NOTES.md for which
// keys HF actually reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json_fields.h"

namespace smolvlm {

// generation_config.json (falls back to config.json values when the file is absent).
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;   // `eos_token_id` may be an int or a list
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  // The sampling the model's authors recommend (used when a caller asks for it; decoding stays greedy
  // by default). Absent keys keep the off values.
  double temperature = 1.0;
  int64_t top_k = 0;  // HF's default 50 applies only under do_sample; 0 here: off unless the file sets it
  double top_p = 1.0;
  double repetition_penalty = 1.0;
};

// preprocessor_config.json of Idefics3ImageProcessor.
struct ImageProcessorConfig {
  bool do_convert_rgb = true;
  bool do_resize = true;
  int64_t longest_edge = 4 * 364;        // size.longest_edge
  int resample = 1;                      // PIL filter id (1 = LANCZOS)
  bool do_image_splitting = true;
  int64_t max_image_size = 364;          // max_image_size.longest_edge
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  float image_mean[3] = {0.5f, 0.5f, 0.5f};
  float image_std[3] = {0.5f, 0.5f, 0.5f};
  bool do_pad = true;
};

// processor_config.json of Idefics3Processor.
struct ProcessorConfig {
  int64_t image_seq_len = 169;
};

// The generation keys (eos/bos/pad token ids) of one JSON object: generation_config.json, or the
// config.json values HF falls back to when that file is absent.
GenerationConfig generation_from(const ConfigFields& f);

// Each file from JSON text already in memory; `name` is used in messages.
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& name);
ImageProcessorConfig parse_image_processor_config(const std::string& json_text, const std::string& name);
ProcessorConfig parse_processor_config(const std::string& json_text, const std::string& name);

}  // namespace smolvlm
