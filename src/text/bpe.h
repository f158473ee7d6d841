// The BPE model of tokenizer.json (HF tokenizers `models::bpe::BPE`): vocabulary, merge ranks, byte
// fallback, unknown-token handling, ignore_merges, subword prefix/suffix. Internal to the text module.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/token_index.h"

namespace smolvlm::text {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// model.vocab and model.merges of tokenizer.json in file order: most of the file, so they are read
// while it is parsed instead of through the JSON tree (parse_tokenizer_json).
struct BpeTables {
  std::vector<std::pair<std::string, int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  bool has_vocab = false, has_merges = false;  // false: read them from the model object
};

// Parses tokenizer.json into a tree, moving root.model.vocab (an object) and root.model.merges (an
// array) into `tables` as they are read; the tree keeps them empty. Syntax errors throw
// nlohmann::json::exception; malformed entries, Error(BadInput) naming `where` (the model).
nlohmann::json parse_tokenizer_json(const std::string& text, BpeTables& tables, const std::string& where);

class BpeModel {
 public:
  // `tables` holds what parse_tokenizer_json took out of `model` (or nothing: then `model` has it all).
  BpeModel(const nlohmann::json& model, BpeTables tables, const std::string& where);

  // Appends the ids of one pre-token.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when `id` has no vocabulary entry.
  const std::string* id_to_token(int32_t id) const;
  int64_t id_limit() const { return static_cast<int64_t>(id_to_key_.size()); }  // max id + 1

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  TokenIndex vocab_;
  std::vector<int32_t> id_to_key_;  // id -> vocab_ entry, -1 for an id no token has
  MergeTable merges_;
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_, end_of_word_suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};  // <0xHH> ids, -1 when absent

  // Results for pre-tokens seen before (most text repeats words); bounded.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace smolvlm::text
