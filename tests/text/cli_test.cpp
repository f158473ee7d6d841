// `smolvlm tokenize / detokenize / prompt` end to end: JSON output, exit codes, and the prompt of
// golden cases built from the image files (rows/cols from the image module).
#include <gtest/gtest.h>

#include "core/sha256.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using nlohmann::json;
using test::run_cli;

std::string model(const std::string& name) { return "--model '" + (test::data_dir() / "models" / name).string() + "'"; }

json parse_output(const test::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return json::parse(r.out, nullptr, false);
}

TEST(TextCli, TokenizeMatchesReferenceCorpus) {
  auto cases = test::read_jsonl(test::text_data() / "tokenizers/smolvlm/corpus.jsonl.gz");
  for (size_t k : {size_t(5), size_t(40), size_t(120)}) {
    const json& c = cases.at(k);
    std::string text = c["text"];
    if (text.find('\'') != std::string::npos || text.find('\0') != std::string::npos || text.empty() || text[0] == '-') continue;
    json out = parse_output(run_cli("tokenize " + model("smolvlm-tiny") + " -- '" + text + "'", false));
    EXPECT_EQ(out["ids"], c["ids"]) << text;
    EXPECT_EQ(out["tokens"], c["tokens"]) << text;
  }
}

TEST(TextCli, DetokenizeAndSkipSpecialTokens) {
  json out = parse_output(run_cli("detokenize " + model("smolvlm-tiny") + " 19556 905 216 49190", false));
  EXPECT_EQ(out["text"], "Hello world <image>");
  out = parse_output(run_cli("detokenize " + model("smolvlm-tiny") + " --skip-special-tokens 19556 905 216 49190", false));
  EXPECT_EQ(out["text"], "Hello world ");
}

// An id the tokenizer lacks decodes to nothing, as in HF (ids of an embedding padded past the
// tokenizer), and stderr names it; a negative id is an error.
TEST(TextCli, IdsTheTokenizerLacksDecodeToNothing) {
  json out = parse_output(run_cli("detokenize " + model("smolvlm-tiny") + " 19556 99999999 905", false));
  EXPECT_EQ(out["text"], "Hello world");
  const auto r = run_cli("detokenize " + model("smolvlm-tiny") + " 19556 99999999 905");  // stdout and stderr
  EXPECT_NE(r.out.find("not in the tokenizer, decoded to nothing: 99999999"), std::string::npos) << r.out;
}

TEST(TextCli, BadInputsAreCleanErrors) {
  auto r = run_cli("detokenize " + model("smolvlm-tiny") + " -- 905 -7");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("-7 is negative"), std::string::npos) << r.out;
  r = run_cli("tokenize --model '" + (test::text_data() / "chat").string() + "' hello");
  EXPECT_EQ(r.exit_code, 5) << r.out;  // an I/O error: the folder has no tokenizer.json
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  r = run_cli("prompt " + model("llama-tiny") + " --image x.png --prompt hi --json");
  EXPECT_NE(r.exit_code, 0) << r.out;
}

// Every golden image case: the prompt from the image files equals the reference text and ids.
TEST(TextCli, PromptFromImagesMatchesGoldens) {
  auto cases = test::read_jsonl(test::text_data() / "prompts.jsonl");
  size_t checked = 0, hashed = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const json& c = cases[k];
    if (!c.contains("images")) continue;
    bool pre = c.contains("text_sha256");
    std::string src = c["src"];
    if (pre && (k % 16 != 0 || src.find("_bench") != std::string::npos)) continue;  // a spread of the odd images
    std::string args = "prompt " + model(c["model"]) + " --json --prompt '" + c["prompt"].get<std::string>() + "'";
    for (auto& img : c["images"]) {
      std::string file = std::filesystem::path(img.get<std::string>()).filename();
      args += " --image '" + (test::data_dir() / "image" / (pre ? "odd" : "model_images") / file).string() + "'";
    }
    if (c["grids"][0][0] == 0) args += " --no-split";
    json out = parse_output(run_cli(args, false));
    ASSERT_TRUE(out.is_object()) << src;
    if (pre) {
      std::string text = out["text"];
      EXPECT_EQ(sha256_hex(text.data(), text.size()), c["text_sha256"]) << src;
      EXPECT_EQ(out["input_ids"].size(), c["num_input_ids"].get<size_t>()) << src;
      ++hashed;
    } else {
      EXPECT_EQ(out["text"], c["text"]) << src;
      EXPECT_EQ(out["input_ids"], c["input_ids"]) << src;
    }
    ++checked;
  }
  EXPECT_EQ(checked - hashed, 13u);
  EXPECT_GE(hashed, 10u);
}

TEST(TextCli, TextOnlyModelUsesItsChatTemplate) {
  json out = parse_output(run_cli("prompt " + model("llama-tiny") + " --json --prompt 'What is the capital of France?'", false));
  EXPECT_EQ(out["text"], "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace smolvlm
