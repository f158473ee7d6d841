// Malformed tokenizer.json files are clean, named errors; small synthetic tokenizers (recorded from HF
// tokenizers, tests/data/text/synthetic) cover components the real tokenizers do not use.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using nlohmann::json;

void expect_error(const std::string& text, ErrorKind kind, const std::string& needle) {
  try {
    Tokenizer::from_json(text, "tok.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tok.json"), std::string::npos) << e.what();
  }
}

json minimal() {
  return {{"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
}

TEST(TokenizerErrors, MalformedFilesAreNamedErrors) {
  EXPECT_NO_THROW(Tokenizer::from_json(minimal().dump(), "tok.json"));
  expect_error("{\"model\": ", ErrorKind::BadInput, "not valid JSON");
  expect_error("[]", ErrorKind::BadInput, "top level");
  json j = minimal();
  j.erase("model");
  expect_error(j.dump(), ErrorKind::BadInput, "missing field \"model\"");
  j = minimal();
  j["model"]["type"] = "WordPiece";
  expect_error(j.dump(), ErrorKind::Unsupported, "model type \"WordPiece\"");
  j = minimal();
  j["model"]["merges"] = {"a c"};
  expect_error(j.dump(), ErrorKind::BadInput, "merges[0]: token \"c\" is not in the vocabulary");
  j = minimal();
  j["model"]["merges"] = {"ab"};
  expect_error(j.dump(), ErrorKind::BadInput, "merges[0]: expected \"a b\"");
  j = minimal();
  j["model"]["vocab"]["c"] = "x";
  expect_error(j.dump(), ErrorKind::BadInput, "vocab[\"c\"]: expected an integer id");
  j = minimal();
  j["model"]["vocab"]["c"] = 1 << 30;
  expect_error(j.dump(), ErrorKind::BadInput, "out of range");
  j = minimal();
  j["model"]["dropout"] = 0.1;
  expect_error(j.dump(), ErrorKind::Unsupported, "dropout");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}, {{"type", "UnicodeScripts"}}}}};
  expect_error(j.dump(), ErrorKind::Unsupported, "pre_tokenizer.pretokenizers[1]: pre-tokenizer type \"UnicodeScripts\"");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}};
  expect_error(j.dump(), ErrorKind::BadInput, "invalid regular expression");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  expect_error(j.dump(), ErrorKind::BadInput, "behavior");
  j = minimal();
  j["normalizer"] = {{"type", "Precompiled"}};
  expect_error(j.dump(), ErrorKind::Unsupported, "normalizer type \"Precompiled\"");
  j = minimal();
  j["decoder"] = {{"type", "CTC"}};
  expect_error(j.dump(), ErrorKind::Unsupported, "decoder type \"CTC\"");
  j = minimal();
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<s>"}}}}}}, {"special_tokens", json::object()}};
  expect_error(j.dump(), ErrorKind::BadInput, "special token \"<s>\" is not in special_tokens");
  j = minimal();
  j["added_tokens"] = {{{"id", -1}, {"content", "<x>"}}};
  expect_error(j.dump(), ErrorKind::BadInput, "added_tokens[0].id");
  j = minimal();
  j["truncation"] = {{"max_length", 8}};
  expect_error(j.dump(), ErrorKind::Unsupported, "truncation");
}

// The vocabulary and merges are read while the file is parsed (they never enter the JSON tree): the
// same errors as the tree route, in both merge spellings, and the same encodings.
TEST(TokenizerErrors, VocabularyAndMergesReadWhileParsing) {
  json j = minimal();
  j["model"]["vocab"]["c"] = json::object();
  expect_error(j.dump(), ErrorKind::BadInput, "vocab[\"c\"]: expected an integer id");
  j = minimal();
  j["model"]["vocab"]["c"] = json::array({1});
  expect_error(j.dump(), ErrorKind::BadInput, "vocab[\"c\"]: expected an integer id");
  j = minimal();
  j["model"]["vocab"] = json::array({1, 2});
  expect_error(j.dump(), ErrorKind::BadInput, "vocab: expected an object");
  j = minimal();
  j["model"]["merges"] = {"a b", 7};
  expect_error(j.dump(), ErrorKind::BadInput, "merges[1]: expected \"a b\" or [\"a\", \"b\"], got 7");
  j = minimal();
  j["model"]["merges"] = json::array({json::object()});
  expect_error(j.dump(), ErrorKind::BadInput, "merges[0]: expected \"a b\" or [\"a\", \"b\"]");
  j = minimal();
  j["model"]["merges"] = json::array({json::array({"a", "b", "c"})});
  expect_error(j.dump(), ErrorKind::BadInput, "merges[0]: expected \"a b\" or [\"a\", \"b\"]");
  j = minimal();
  j["model"]["merges"] = "a b";
  expect_error(j.dump(), ErrorKind::BadInput, "merges: expected an array");

  // ["a", "b"] merges and "a b" merges, members in any order, give the same tokenizer.
  json pairs = minimal();
  pairs["model"]["merges"] = json::array({json::array({"a", "b"})});
  const auto strings = Tokenizer::from_json(minimal().dump(), "tok.json");
  const auto arrays = Tokenizer::from_json(pairs.dump(), "tok.json");
  EXPECT_EQ(strings->encode("abba", false), arrays->encode("abba", false));
  EXPECT_EQ(strings->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
  // Merges before the vocabulary in the file.
  const std::string reordered =
      R"({"added_tokens": [], "model": {"merges": [["a", "b"]], "type": "BPE", "vocab": {"ab": 2, "b": 1, "a": 0}}})";
  EXPECT_EQ(Tokenizer::from_json(reordered, "tok.json")->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
  // A repeated merge: its last rank counts, as in HF tokenizers, which gives [3, 2] ("ab", "c") for
  // this file (with the first rank, "b c" would merge before "a b").
  const std::string repeated_merge =
      R"({"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4},
          "merges": ["b c", "a b", "b c"]}})";
  EXPECT_EQ(Tokenizer::from_json(repeated_merge, "tok.json")->encode("abc", false), (std::vector<int32_t>{3, 2}));
  // A repeated vocabulary key: the last one wins, as in a JSON tree.
  const std::string repeated =
      R"({"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 5, "a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";
  EXPECT_EQ(Tokenizer::from_json(repeated, "tok.json")->encode("ab a", false), (std::vector<int32_t>{2, 0}));
  // Keys named vocab/merges elsewhere in the file are left alone.
  json elsewhere = minimal();
  elsewhere["extra"] = {{"model", {{"vocab", {{"zz", 9}}}}}};
  EXPECT_EQ(Tokenizer::from_json(elsewhere.dump(), "tok.json")->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
}

TEST(TokenizerErrors, IdsOutsideTheVocabulary) {
  auto tok = Tokenizer::from_json(minimal().dump(), "tok.json");
  EXPECT_EQ(tok->vocab_size(), 3);
  EXPECT_EQ(tok->id_to_token(2), "ab");
  EXPECT_EQ(tok->token_to_id("ab"), 2);
  EXPECT_FALSE(tok->token_to_id("zz").has_value());
  EXPECT_THROW(tok->id_to_token(3), Error);
  EXPECT_THROW(tok->id_to_token(-1), Error);
  // An id the tokenizer lacks decodes to nothing, as in HF; a negative id is no id.
  EXPECT_TRUE(tok->has_id(2));
  EXPECT_FALSE(tok->has_id(3));
  EXPECT_EQ(tok->decode({0, 7, 1}), tok->decode({0, 1}));
  EXPECT_EQ(tok->decode({7}), "");
  EXPECT_THROW(tok->decode({0, -1}), Error);
  StreamingDetokenizer stream(*tok, false);
  std::string text = stream.push(0);
  text += stream.push(99);
  text += stream.push(1);
  text += stream.finish();
  EXPECT_EQ(text, tok->decode({0, 99, 1}));
  EXPECT_EQ(stream.unprintable(), 1);
  EXPECT_THROW(stream.push(-1), Error);
}

TEST(TokenizerErrors, MissingFileIsAnIoError) {
  try {
    Tokenizer::from_file("/nonexistent/tokenizer.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io) << e.what();
  }
}

class SyntheticTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticTokenizer, MatchesRecordedHfOutputs) {
  auto dir = test::text_data() / "synthetic";
  auto tok = Tokenizer::from_file(dir / (GetParam() + ".json"));
  std::ifstream cases(dir / (GetParam() + ".cases.tsv"));
  size_t n = 0;
  for (std::string line; std::getline(cases, line);) {
    size_t tab = line.find('\t');
    json in = json::parse(line.substr(0, tab)), want = json::parse(line.substr(tab + 1));
    auto ids = tok->encode(in["text"].get<std::string>(), in["add_special_tokens"].get<bool>());
    EXPECT_EQ(json(ids), want["ids"]) << in.dump();
    EXPECT_EQ(tok->decode(ids, false), want["decoded"].get<std::string>()) << in.dump();
    EXPECT_EQ(tok->decode(ids, true), want["decoded_skip"].get<std::string>()) << in.dump();
    ++n;
  }
  EXPECT_GE(n, 2u);
}

INSTANTIATE_TEST_SUITE_P(Recorded, SyntheticTokenizer, ::testing::Values("syn1", "syn2"));

}  // namespace
}  // namespace smolvlm
