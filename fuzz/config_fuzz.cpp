// Fuzzes the config parsers (config.json, generation_config.json, preprocessor_config.json,
// processor_config.json) and the weight spec, parameter counts and `info` summary derived from a
// config that parses. Errors are expected; crashes, leaks and UB are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/config.h"
#include "model/registry.h"
#include "model/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    smolvlm::ModelConfig cfg = smolvlm::parse_model_config(text, "fuzz/config.json");
    smolvlm::count_parameters(smolvlm::model_spec(cfg));
    (void)cfg.architecture->describe(cfg);
  } catch (const smolvlm::Error&) {
  }
  try {
    smolvlm::parse_generation_config(text, "fuzz/generation_config.json");
  } catch (const smolvlm::Error&) {
  }
  try {
    smolvlm::parse_image_processor_config(text, "fuzz/preprocessor_config.json");
  } catch (const smolvlm::Error&) {
  }
  try {
    smolvlm::parse_processor_config(text, "fuzz/processor_config.json");
  } catch (const smolvlm::Error&) {
  }
  return 0;
}
