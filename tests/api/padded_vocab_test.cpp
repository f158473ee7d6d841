// A model whose embedding is padded past its tokenizer (tests/data/models/llama-tiny-padded, made by
// make_padded_vocab.py): 49344 rows, the tokenizer ends at 49279, and row 49300 is twice row 29466,
// the first greedy token of llama-tiny after the prompt below. The model then generates 49300: as in
// HF, the id is kept in token_ids and decodes to nothing, greedy picks it like any other id, and the
// generation goes on. Through the C API and the CLI (the server's test is tests/server/http_errors).
#include <gtest/gtest.h>

#include <smolvlm.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "test_util.h"

namespace smolvlm {
namespace {

constexpr const char* kPrompt = "The capital of France is";
constexpr int32_t kTokenizerEnd = 49280, kPaddedRows = 49344, kPaddedId = 49300, kCopiedId = 29466;

std::string padded_model() { return test::model_dir("llama-tiny-padded").string(); }

smolvlm_request greedy_request(int64_t max_new_tokens) {
  smolvlm_request r;
  smolvlm_request_init(&r);
  r.prompt = kPrompt;
  r.max_new_tokens = max_new_tokens;
  r.ignore_eos = 1;
  return r;
}

using test::argmax;

TEST(PaddedVocab, TheModelScoresThePaddedRowsAsAnyOther) {
  const api::Model m = api::Model::load(padded_model());
  api::Session s(m);
  s.prefill(greedy_request(1));
  const std::span<const float> logits = s.logits();
  ASSERT_EQ(logits.size(), static_cast<size_t>(kPaddedRows));
  EXPECT_EQ(m.tokenizer().vocab_size(), kTokenizerEnd);
  // Twice a row gives exactly twice its logit (every product and partial sum doubles exactly); a
  // zero row gives zero.
  EXPECT_EQ(logits[kPaddedId], 2 * logits[kCopiedId]);
  EXPECT_EQ(logits[kTokenizerEnd], 0.f);
  EXPECT_GT(logits[kCopiedId], 0.f) << "the padded row only wins where its source's logit is positive";
  EXPECT_EQ(argmax(logits), kPaddedId);
}

TEST(PaddedVocab, GreedyGeneratesTheIdKeepsItAndDecodesItToNothing) {
  const api::Model m = api::Model::load(padded_model());
  constexpr int64_t kTokens = 12;
  std::string streamed;
  smolvlm_request r = greedy_request(kTokens);
  r.on_piece = [](const char* piece, size_t size, void* user) {
    static_cast<std::string*>(user)->append(piece, size);
    return 1;
  };
  r.user_data = &streamed;
  const api::Result res = m.generate(r);
  const std::vector<int32_t> ids(res.token_ids().begin(), res.token_ids().end());
  ASSERT_EQ(ids.size(), static_cast<size_t>(kTokens));
  EXPECT_EQ(ids[0], kPaddedId);
  const auto unprintable = std::count_if(ids.begin(), ids.end(), [](int32_t id) { return id >= kTokenizerEnd; });
  EXPECT_EQ(res.raw().unprintable_tokens, unprintable);
  EXPECT_EQ(res.raw().finish_reason, SMOLVLM_FINISH_LENGTH);

  // The same ids from a greedy loop of our own over the session's logits.
  api::Session s(m);
  s.prefill(greedy_request(kTokens));
  std::vector<int32_t> own;
  for (int64_t t = 0; t < kTokens; ++t) {
    own.push_back(argmax(s.logits()));
    if (t + 1 < kTokens) s.decode(own.back());
  }
  EXPECT_EQ(own, ids);

  // The text is the decode of every id (the padded ones give nothing), streamed or whole.
  std::vector<int32_t> printable;
  std::copy_if(ids.begin(), ids.end(), std::back_inserter(printable), [](int32_t id) { return id < kTokenizerEnd; });
  const api::Tokenizer tok = m.tokenizer();
  EXPECT_EQ(res.text(), tok.detokenize(ids, true));
  EXPECT_EQ(res.text(), tok.detokenize(printable, true));
  EXPECT_EQ(streamed, res.text());
  EXPECT_FALSE(tok.has_token(kPaddedId));
  EXPECT_TRUE(tok.has_token(kCopiedId));
}

TEST(PaddedVocab, TheCliPrintsTheTextKeepsTheIdsAndSaysSoOnceWhenVerbose) {
  const std::string args = "generate --model '" + padded_model() + "' --prompt '" + kPrompt + "' --max-new-tokens 8";
  const test::CommandResult json_run = test::run_cli(args + " --json", false);
  ASSERT_EQ(json_run.exit_code, 0) << json_run.out;
  const nlohmann::json out = nlohmann::json::parse(json_run.out);
  const std::vector<int32_t> ids = out["token_ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], kPaddedId);
  const test::CommandResult verbose = test::run_cli(args + " --verbose");  // stdout and stderr
  ASSERT_EQ(verbose.exit_code, 0) << verbose.out;
  const std::string note = "its tokenizer cannot print";
  const size_t at = verbose.out.find(note);
  EXPECT_NE(at, std::string::npos) << verbose.out;
  EXPECT_EQ(verbose.out.find(note, at + 1), std::string::npos) << "said once: " << verbose.out;
  // Streamed to stdout: the same text as --json.
  const test::CommandResult plain = test::run_cli(args, false);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out, out["text"].get<std::string>() + "\n");
}

}  // namespace
}  // namespace smolvlm
