// Fuzzes tokenizer.json loading and encoding/decoding. Input: one selector byte, then
//   selector even: a tokenizer.json document; when it loads, a fixed set of strings is encoded,
//                  decoded and streamed (with and without clean-up) with it;
//   selector odd:  text, encoded (both add_special_tokens settings), decoded and streamed with one of two
//                  small built-in tokenizers (byte-level BPE / SentencePiece-style with byte fallback).
// Errors are expected (smolvlm::Error); crashes, leaks and undefined behaviour are bugs.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/pipeline.h"
#include "text/tokenizer.h"

namespace {

using nlohmann::json;

std::string byte_level_tokenizer() {
  json vocab = json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) vocab[smolvlm::text::byte_to_unicode(static_cast<uint8_t>(b))] = id++;
  for (const char* t : {"he", "ll", "hell", "hello", "Ġw", "Ġwo", "Ġwor", "Ġworl", "Ġworld", "ĠĠ"}) vocab[t] = id++;
  json merges = {"h e", "l l", "he ll", "hell o", "Ġ w", "Ġw o", "Ġwo r", "Ġwor l", "Ġworl d", "Ġ Ġ"};
  json root = {
      {"version", "1.0"},
      {"added_tokens", {{{"id", id}, {"content", "<image>"}, {"special", true}, {"lstrip", false}, {"rstrip", false},
                         {"single_word", false}, {"normalized", false}},
                        {{"id", id + 1}, {"content", "<w>"}, {"special", false}, {"lstrip", true}, {"rstrip", true},
                         {"single_word", true}, {"normalized", true}}}},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}}}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<image>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<image>", {{"id", "<image>"}, {"ids", {id}}, {"tokens", {"<image>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
  return root.dump();
}

std::string sentencepiece_tokenizer() {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  int id = 2;
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) vocab[std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">"] = id++;
  for (const char* t : {"▁", "a", "b", "▁a", "▁b", "ab", "▁ab"}) vocab[t] = id++;
  json merges = json::array({json::array({"▁", "a"}), json::array({"▁", "b"}), json::array({"a", "b"}), json::array({"▁a", "b"})});
  json root = {
      {"added_tokens", {{{"id", 0}, {"content", "<unk>"}, {"special", true}}, {{"id", 1}, {"content", "<s>"}, {"special", true}}}},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", {{"type", "BertProcessing"}, {"cls", {"<s>", 1}}, {"sep", {"<unk>", 0}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}}, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}, {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}}}};
  return root.dump();
}

void exercise(const smolvlm::Tokenizer& tok, std::string_view text) {
  for (bool special : {false, true}) {
    auto ids = tok.encode(text, special);
    for (bool skip : {false, true})
      for (bool clean_up : {false, true}) {
        std::string full = tok.decode(ids, skip);
        if (clean_up) full = smolvlm::clean_up_tokenization(std::move(full));
        smolvlm::StreamingDetokenizer stream(tok, skip, clean_up);
        std::string streamed;
        for (int32_t id : ids) streamed += stream.push(id);
        streamed += stream.finish();
        if (streamed != full) __builtin_trap();  // the streaming contract, with and without clean-up
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto byte_level = smolvlm::Tokenizer::from_json(byte_level_tokenizer(), "byte-level");
  static const auto sentencepiece = smolvlm::Tokenizer::from_json(sentencepiece_tokenizer(), "sentencepiece");
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      auto tok = smolvlm::Tokenizer::from_json(std::string(rest), "fuzz");
      for (std::string_view s : {"Hello world 123", " <image>  a\tb\n", "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80", "\xE4\xB8"}) exercise(*tok, s);
      for (int32_t id = 0; id < 64 && id < tok->vocab_size(); ++id) {
        try {
          tok->decode({id}, false);
        } catch (const smolvlm::Error&) {
        }
      }
    } else {
      exercise(data[0] % 4 == 1 ? *byte_level : *sentencepiece, rest);
    }
  } catch (const smolvlm::Error&) {
  }
  return 0;
}
