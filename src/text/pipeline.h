// The stages of an HF tokenizer pipeline other than the model: normalizers, pre-tokenizers,
// decoders and post-processors, built from their tokenizer.json objects. Internal to the text module.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smolvlm::text {

// A piece of text on its way to the model. `at_origin`: it starts at offset 0 of the original input
// (Metaspace's prepend_scheme "first" depends on it).
struct Piece {
  std::string text;
  bool at_origin = false;
};

using Normalizer = std::function<std::string(std::string)>;
using PreTokenizer = std::function<void(std::vector<Piece>&)>;
// Decoders map the token strings to strings, like HF's decode_chain; the result is concatenated.
using Decoder = std::function<std::vector<std::string>(std::vector<std::string>)>;
// Adds the special tokens of add_special_tokens=true around the ids of one sequence.
using PostProcessor = std::function<void(std::vector<int32_t>& ids, std::vector<std::string>* tokens)>;

// `where` names the location in error messages (e.g. "tokenizer.json: normalizer").
// A null json yields an empty function (the stage is absent).
Normalizer make_normalizer(const nlohmann::json& j, const std::string& where);
PreTokenizer make_pre_tokenizer(const nlohmann::json& j, const std::string& where);
Decoder make_decoder(const nlohmann::json& j, const std::string& where);
PostProcessor make_post_processor(const nlohmann::json& j, const std::string& where);

// GPT-2's reversible byte <-> printable character table used by ByteLevel.
const std::string& byte_to_unicode(uint8_t byte);  // UTF-8 of the character for `byte`
int unicode_to_byte(char32_t c);                   // -1 when `c` is not in the table

// Field helpers shared with the model parser: they throw Error(BadInput) naming `where` and `key`.
const nlohmann::json& require(const nlohmann::json& j, const char* key, const std::string& where);
std::string get_string(const nlohmann::json& j, const char* key, const std::string& where);
bool get_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);

}  // namespace smolvlm::text
