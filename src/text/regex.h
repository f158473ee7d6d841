// Oniguruma regular expressions (the engine HF tokenizers uses), for the pre-tokenizer, normalizer
// and decoder patterns of tokenizer.json.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct re_pattern_buffer;

namespace smolvlm::text {

class Regex {
 public:
  // Throws Error(BadInput) naming `what` when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& what);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches, left to right, as [begin, end) byte offsets. `s` must be valid UTF-8.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;

 private:
  re_pattern_buffer* regex_ = nullptr;
};

}  // namespace smolvlm::text
