// `smolvlm translate` end to end on the tiny HunYuan checkpoints: every HunYuan golden from its
// source text through translate (the model card's prompt built from --to/--from/--system), or, where
// the golden's prompt is not the one translate builds, through `generate --messages`; stdin
// paragraphs in order through one session; --json per paragraph; --sample; the context boundary
// ending with "context_full"; bad flags refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "model/golden_util.h"
#include "test_util.h"

namespace smolvlm {
namespace {

using test::Golden;

std::string sh(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("smolvlm_translate_test_" + name + "_" + std::to_string(::getpid()));
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

// The source text after the template's blank line.
std::string source_of(const Golden& g) {
  const std::string content = g.spec["messages"].back()["content"];
  return content.substr(content.find("\n\n") + 2);
}

struct TranslateCase {
  const char* golden;
  const char* flags;  // nullptr: the golden's prompt is not translate's; run its messages
};

const TranslateCase kCases[] = {
    {"hy_a_en_zh", "--to zh"},  // Chinese target: the Chinese template
    {"hy_a_zh_en", "--to en"},  // no --from: the English template, as the golden
    {"hy_a_ja_fr_emoji", "--to French"},
    {"hy_a_ctx_boundary", nullptr},  // "into Chinese" in the English template
    {"hy_b_ar_en", "--to English"},
    {"hy_b_ctx_boundary", "--to ja"},
    {"hy_b_system_code", "--to de --system 'You are a careful translator.'"},
};

class TranslateGolden : public ::testing::TestWithParam<TranslateCase> {};

TEST_P(TranslateGolden, GivesTheGoldenTokens) {
  const TranslateCase c = GetParam();
  const Golden g = test::load_golden(c.golden);
  const std::string model = sh(g.model_dir().string());
  const std::string n = std::to_string(g.spec["max_new_tokens"].get<int64_t>());
  std::string args;
  std::filesystem::path messages;
  if (c.flags) {
    args = "translate --model " + model + " " + c.flags + " --json --max-new-tokens " + n + " " + sh(source_of(g));
  } else {
    messages = temp_file(g.name + ".json");
    test::write_text_file(messages, g.spec["messages"].dump());
    args = "generate --model " + model + " --messages " + sh(messages.string()) + " --json --max-new-tokens " + n;
  }
  const test::CommandResult r = test::run_cli(args, /*merge_stderr=*/false);
  if (!messages.empty()) std::filesystem::remove(messages);
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0]["token_ids"].get<std::vector<int64_t>>(), g.npy("generated_ids.npy").to_vector<int64_t>()) << args;
  EXPECT_EQ(lines[0]["prompt_tokens"].get<int64_t>(), g.spec["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(lines[0]["finish_reason"].get<std::string>(), g.spec["stopped_on_eos"].get<bool>() ? "eos" : "length");
}

INSTANTIATE_TEST_SUITE_P(HunYuan, TranslateGolden, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.golden); });

std::string tiny_a() { return sh(test::model_dir("hunyuan-tiny-a").string()); }

TEST(Translate, StdinParagraphsInOrderThroughOneSession) {
  const Golden zh = test::load_golden("hy_a_zh_en"), ar = test::load_golden("hy_b_ar_en");
  const auto input = temp_file("stdin.txt");
  // Two paragraphs (the second of two lines), blank lines of spaces and CRLF between and around.
  test::write_text_file(input, "\r\n" + source_of(zh) + "\r\n  \r\nfirst line\nsecond line\n\n\n");
  const test::CommandResult r = test::run_cli("translate --model " + tiny_a() + " --to en --json --max-new-tokens 4 - < " +
                                              sh(input.string()), false);
  std::filesystem::remove(input);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0]["paragraph"], 0);
  EXPECT_EQ(lines[0]["source"], source_of(zh));
  const auto golden = zh.npy("generated_ids.npy").to_vector<int64_t>();
  EXPECT_EQ(lines[0]["token_ids"].get<std::vector<int64_t>>(), std::vector<int64_t>(golden.begin(), golden.begin() + 4))
      << "the first paragraph is the golden's prompt";
  EXPECT_EQ(lines[1]["paragraph"], 1);
  EXPECT_EQ(lines[1]["source"], "first line\nsecond line");
  // The same paragraph on its own gives the same tokens: the reused session starts clean.
  const test::CommandResult alone = test::run_cli(
      "translate --model " + tiny_a() + " --to en --json --max-new-tokens 4 " + sh("first line\nsecond line"), false);
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  EXPECT_EQ(json_lines(alone.out)[0]["token_ids"], lines[1]["token_ids"]);

  // Text mode: the translations in order, a blank line between them.
  test::write_text_file(input, source_of(zh) + "\n\n" + source_of(ar) + "\n");
  const test::CommandResult text =
      test::run_cli("translate --model " + tiny_a() + " --to en --max-new-tokens 3 - < " + sh(input.string()), false);
  std::filesystem::remove(input);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_EQ(std::count(text.out.begin(), text.out.end(), '\n') >= 3, true) << text.out;
  EXPECT_NE(text.out.find("\n\n"), std::string::npos) << text.out;
}

TEST(Translate, TerminologyPromptAndSampling) {
  const auto terms = temp_file("terms.tsv");
  test::write_text_file(terms, "# glossary\nhouse\t房子\n\nreceipt\t收据\n");
  const std::string base = "translate --model " + tiny_a() + " --to zh --terms " + sh(terms.string()) +
                           " --json --max-new-tokens 6 'Please keep the receipt.'";
  const test::CommandResult greedy = test::run_cli(base, false);
  ASSERT_EQ(greedy.exit_code, 0) << greedy.out;
  // The terminology prompt is longer than the plain Chinese one.
  const test::CommandResult plain =
      test::run_cli("translate --model " + tiny_a() + " --to zh --json --max-new-tokens 6 'Please keep the receipt.'", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_GT(json_lines(greedy.out)[0]["prompt_tokens"].get<int64_t>(),
            json_lines(plain.out)[0]["prompt_tokens"].get<int64_t>() + 5);
  // --sample: seeded runs repeat; greedy runs repeat exactly.
  const test::CommandResult s1 = test::run_cli(base + " --sample --seed 3", false),
                            s2 = test::run_cli(base + " --sample --seed 3", false);
  ASSERT_EQ(s1.exit_code, 0) << s1.out;
  EXPECT_EQ(json_lines(s1.out)[0]["token_ids"], json_lines(s2.out)[0]["token_ids"]);
  EXPECT_EQ(test::run_cli(base + " --sample --temperature 0.5").exit_code, 2);
  test::write_text_file(terms, "no tab here\n");
  const test::CommandResult bad = test::run_cli(base);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("line 1: expected \"source<TAB>target\""), std::string::npos) << bad.out;
  std::filesystem::remove(terms);
}

// At the context boundary of the golden (65 + 31 = 96 = max_position_embeddings) asking for more
// tokens ends with "context_full" after the 32nd: the golden's 31 and the one the last slot chose.
TEST(Translate, ContextBoundaryEndsWithContextFull) {
  const Golden g = test::load_golden("hy_b_ctx_boundary");
  const std::string args = "translate --model " + sh(g.model_dir().string()) +
                           " --to ja --json --max-new-tokens 60 --ctx 96 " + sh(source_of(g));
  const test::CommandResult r = test::run_cli(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto out = json_lines(r.out)[0];
  EXPECT_EQ(out["finish_reason"], "context_full");
  const auto ids = out["token_ids"].get<std::vector<int64_t>>();
  const auto golden = g.npy("generated_ids.npy").to_vector<int64_t>();
  ASSERT_EQ(ids.size(), golden.size() + 1) << "prompt " << g.spec["prompt_tokens"] << " + new fill 96 exactly";
  EXPECT_EQ(std::vector<int64_t>(ids.begin(), ids.begin() + golden.size()), golden);
  // Past max_position_embeddings: refused, naming the limit.
  const test::CommandResult past = test::run_cli(
      "translate --model " + sh(g.model_dir().string()) + " --to ja --ctx 97 " + sh(source_of(g)));
  EXPECT_EQ(past.exit_code, 3) << past.out;
  EXPECT_NE(past.out.find("max_context 96"), std::string::npos) << past.out;
}

TEST(Translate, BadCommandLines) {
  auto run = [](const std::string& args) { return test::run_cli("translate --model " + tiny_a() + " " + args); };
  EXPECT_EQ(run("--to klingon hi").exit_code, 2);
  EXPECT_NE(run("--to klingon hi").out.find("is not a language of the model card"), std::string::npos);
  EXPECT_EQ(run("hi").exit_code, 2);          // --to is required
  EXPECT_EQ(run("--to en").exit_code, 2);     // no text
  EXPECT_EQ(run("--to en - < /dev/null").exit_code, 2);
  EXPECT_EQ(run("--to en --from xx hi").exit_code, 2);
  EXPECT_EQ(run("--to en --terms /nonexistent/terms.tsv hi").exit_code, 2);
}

}  // namespace
}  // namespace smolvlm
