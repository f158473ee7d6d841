// Helpers of the text tests: gzip-compressed reference files, JSON lines, the reference tokenizers.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "text/tokenizer.h"

namespace smolvlm::test {

inline std::string read_maybe_gzip(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files unchanged too
  if (!f) throw std::runtime_error("cannot open " + path.string());
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot decompress " + path.string());
  return out;
}

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::string text = read_maybe_gzip(path);
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    if (nl > pos) out.push_back(nlohmann::json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return out;
}

inline std::filesystem::path text_data() { return data_dir() / "text"; }

// The tokenizer.json of a reference tokenizer (smolvlm's is the one of the model folders).
inline std::filesystem::path reference_tokenizer_path(const std::string& name) {
  if (name == "smolvlm") return data_dir() / "models" / "smolvlm-256m-instruct" / "tokenizer.json";
  return text_data() / "tokenizers" / name / "tokenizer.json.gz";
}

// Loaded once per process: the big vocabularies take a moment to parse.
inline const Tokenizer& reference_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) slot = Tokenizer::from_json(read_maybe_gzip(reference_tokenizer_path(name)), name);
  return *slot;
}

inline const std::vector<std::string>& reference_tokenizer_names() {
  static const std::vector<std::string> names = {"smolvlm", "gpt2", "llama3_1", "qwen3", "gemma3", "mistral"};
  return names;
}

}  // namespace smolvlm::test
