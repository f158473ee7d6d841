// Fuzzes chat template parsing and rendering. Input: template source, then optionally a NUL byte and
// a JSON object of variables (when it does not parse, a small conversation is used).
// Errors are expected (smolvlm::Error); crashes, leaks, hangs and undefined behaviour are bugs.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string source = input.substr(0, nul);
  nlohmann::ordered_json vars = nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"image"},{"type":"text","text":"Hi <image>"}]},{"role":"assistant","content":"<think>x</think>ok"}],"add_generation_prompt":true,"bos_token":"<s>","eos_token":"</s>","tools":null})");
  if (nul != std::string::npos) {
    auto parsed = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, false);
    if (parsed.is_object()) vars = parsed;
  }
  try {
    smolvlm::ChatTemplate tmpl(source, "fuzz.jinja");
    tmpl.render(vars);
  } catch (const smolvlm::Error&) {
  }
  return 0;
}
