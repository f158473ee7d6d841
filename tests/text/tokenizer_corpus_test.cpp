// Every reference corpus string of HF tokenizers 0.22.2 (tests/data/text/tokenizers): ids and tokens
// with and without special tokens, the four decodes, decode-only cases, streaming, llama.cpp vectors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using nlohmann::json;
using test::read_jsonl;
using test::reference_tokenizer;
using test::text_data;

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

class CorpusTest : public ::testing::TestWithParam<std::string> {};

// One test per tokenizer (the large vocabularies take seconds to load): the corpus, the decode-only
// cases and streaming.
TEST_P(CorpusTest, EncodeDecodeAndStreamMatchReference) {
  const std::string name = GetParam();
  const Tokenizer& tok = reference_tokenizer(name);
  auto cases = read_jsonl(text_data() / "tokenizers" / name / "corpus.jsonl.gz");
  ASSERT_GT(cases.size(), 200u);
  size_t failures = 0;
  for (const json& c : cases) {
    std::string text = c["text"];
    std::vector<std::string> tokens, tokens_special;
    auto ids = tok.encode_with_tokens(text, false, &tokens);
    auto ids_special = tok.encode_with_tokens(text, true, &tokens_special);
    bool ok = ids == ids_of(c["ids"]) && ids_special == ids_of(c["ids_special"]) &&
              tokens == c["tokens"].get<std::vector<std::string>>() &&
              tokens_special == c["tokens_special"].get<std::vector<std::string>>();
    ok = ok && tok.decode(ids_of(c["ids"]), false) == c["decode"].get<std::string>() &&
         tok.decode(ids_of(c["ids"]), true) == c["decode_skip"].get<std::string>() &&
         tok.decode(ids_of(c["ids_special"]), false) == c["decode_special"].get<std::string>() &&
         tok.decode(ids_of(c["ids_special"]), true) == c["decode_special_skip"].get<std::string>();
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << name << " case " << c["i"] << " (" << c["cat"] << "): " << json(text).dump() << "\n got ids "
                    << json(ids).dump() << "\n want    " << c["ids"].dump() << "\n got decode "
                    << json(tok.decode(ids_of(c["ids"]), false)).dump() << "\n want " << c["decode"].dump();
    }
  }
  EXPECT_EQ(failures, 0u) << name << ": " << failures << " of " << cases.size() << " corpus strings differ";

  // Decode-only cases: invalid / incomplete UTF-8 pieces, streaming prefixes.
  auto decode_cases = read_jsonl(text_data() / "tokenizers" / name / "decode.jsonl.gz");
  ASSERT_GT(decode_cases.size(), 10u);
  for (const json& c : decode_cases) {
    auto ids = ids_of(c["ids"]);
    EXPECT_EQ(tok.decode(ids, false), c["decode"].get<std::string>()) << name << " " << c.dump();
    EXPECT_EQ(tok.decode(ids, true), c["decode_skip"].get<std::string>()) << name << " " << c.dump();
  }

  // Streaming: the concatenated pieces equal the full decode.
  for (bool skip : {false, true}) {
    for (const json& c : cases) {
      auto ids = ids_of(c["ids_special"]);
      StreamingDetokenizer stream(tok, skip);
      std::string all;
      for (int32_t id : ids) {
        all += stream.push(id);
      }
      all += stream.finish();
      EXPECT_EQ(all, tok.decode(ids, skip)) << name << " case " << c["i"];
    }
  }
}

// transformers' decode for a tokenizer_config.json with clean_up_tokenization_spaces: true (llama3_1's
// hf_* fields): the tokenizer's decode, then clean_up_tokenization; streamed, the same text.
TEST(CorpusCleanUp, TransformersDecodeOfLlama31) {
  const Tokenizer& tok = reference_tokenizer("llama3_1");
  auto cases = read_jsonl(text_data() / "tokenizers" / "llama3_1" / "corpus.jsonl.gz");
  size_t changed = 0, failures = 0;
  for (const json& c : cases) {
    ASSERT_TRUE(c.contains("hf_decode")) << "case " << c["i"];
    const struct {
      const char* ids;
      bool skip;
      const char* want;
    } forms[] = {{"ids", false, "hf_decode"},
                 {"ids", true, "hf_decode_skip"},
                 {"ids_special", false, "hf_decode_special"},
                 {"ids_special", true, "hf_decode_special_skip"}};
    for (const auto& f : forms) {
      const auto ids = ids_of(c[f.ids]);
      const std::string want = c[f.want].get<std::string>(), raw = tok.decode(ids, f.skip);
      changed += raw != want;
      StreamingDetokenizer stream(tok, f.skip, /*clean_up_spaces=*/true);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.finish();
      const std::string cleaned = clean_up_tokenization(raw);
      if ((cleaned != want || streamed != want) && ++failures <= 5)
        ADD_FAILURE() << "case " << c["i"] << " " << f.want << ": cleaned " << json(cleaned).dump() << ", streamed "
                      << json(streamed).dump() << "\n want " << json(want).dump();
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GE(changed, 10u) << "the corpus should exercise the clean-up (16 decodes differ in it)";
}

TEST(CorpusCleanUp, ReplacementsApplyInTransformersOrder) {
  EXPECT_EQ(clean_up_tokenization("a !== b"), "a!== b");
  EXPECT_EQ(clean_up_tokenization("x ' ."), "x '.");  // " ." goes first, so " ' " no longer matches
  EXPECT_EQ(clean_up_tokenization("I do n't , it 's ok ' s"), "I don't, it's ok's");
  EXPECT_EQ(clean_up_tokenization(""), "");
}

INSTANTIATE_TEST_SUITE_P(Reference, CorpusTest, ::testing::ValuesIn(test::reference_tokenizer_names()),
                         [](const auto& info) { return info.param; });

// llama.cpp's tokenizer vectors, reproduced by our tokenizer.json files (add_special_tokens=false).
TEST(LlamaCppVectors, AllSuitesMatch) {
  const std::pair<const char*, const char*> suites[] = {
      {"gpt-2", "gpt2"}, {"llama-bpe", "llama3_1"}, {"qwen2", "qwen3"}, {"deepseek-r1-qwen", "qwen3"}};
  for (auto [vocab, name] : suites) {
    auto base = text_data() / "llamacpp" / (std::string("ggml-vocab-") + vocab + ".gguf");
    std::string inp = test::read_maybe_gzip(base.string() + ".inp");
    std::string out = test::read_maybe_gzip(base.string() + ".out");
    std::vector<std::string> texts;
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t pos = 0;;) {
      size_t next = inp.find(sep, pos);
      if (next == std::string::npos) break;
      texts.push_back(inp.substr(pos, next - pos));
      pos = next + sep.size();
    }
    std::vector<std::string> lines;
    std::istringstream ls(out);
    for (std::string line; std::getline(ls, line);) lines.push_back(line);
    ASSERT_EQ(texts.size(), 46u) << vocab;
    ASSERT_EQ(lines.size(), texts.size()) << vocab;
    const Tokenizer& tok = reference_tokenizer(name);
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<int32_t> want;
      std::istringstream is(lines[i]);
      for (int32_t id; is >> id;) want.push_back(id);
      EXPECT_EQ(tok.encode(texts[i], false), want) << vocab << " #" << i << ": " << json(texts[i]).dump();
    }
  }
}

}  // namespace
}  // namespace smolvlm
