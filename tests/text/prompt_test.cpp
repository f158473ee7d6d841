// Prompt assembly against the reference goldens: Idefics3 image expansion (goldens, goldens_pre with the
// real processor config), text chat and raw prompts (goldens_more). Data: tests/data/text/prompts.jsonl.
#include <gtest/gtest.h>

#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "text/prompt.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using nlohmann::json;

const TextAssets& assets(const std::string& model) {
  static std::map<std::string, std::unique_ptr<TextAssets>> cache;
  auto& slot = cache[model];
  if (!slot) slot = TextAssets::load(test::data_dir() / "models" / model);
  return *slot;
}

std::vector<ImageGrid> grids_of(const json& c) {
  std::vector<ImageGrid> out;
  for (auto& g : c["grids"]) out.push_back({g[0].get<int64_t>(), g[1].get<int64_t>()});
  return out;
}

TEST(Prompt, EveryGoldenPromptIsReproduced) {
  auto cases = test::read_jsonl(test::text_data() / "prompts.jsonl");
  size_t image_cases = 0, hashed = 0, chat = 0, raw = 0;
  for (const json& c : cases) {
    const TextAssets& a = assets(c["model"]);
    std::string src = c["src"];
    if (c.contains("grids")) {
      ++image_cases;
      EXPECT_EQ(a.apply_chat_template(json::array({{{"role", "user"}, {"content", [&] {
                                                      json parts = json::array();
                                                      for (size_t k = 0; k < c["grids"].size(); ++k) parts.push_back({{"type", "image"}});
                                                      parts.push_back({{"type", "text"}, {"text", c["prompt"]}});
                                                      return parts;
                                                    }()}}}),
                                        true),
                c["chat_text"].get<std::string>())
          << src;
      BuiltPrompt p = build_vlm_prompt(a, c["prompt"], grids_of(c));
      if (c.contains("text_sha256")) {
        ++hashed;
        EXPECT_EQ(sha256_hex(p.text.data(), p.text.size()), c["text_sha256"].get<std::string>()) << src;
        EXPECT_EQ(p.input_ids.size(), c["num_input_ids"].get<size_t>()) << src;
      } else {
        EXPECT_EQ(p.text, c["text"].get<std::string>()) << src;
        EXPECT_EQ(p.input_ids, c["input_ids"].get<std::vector<int32_t>>()) << src;
      }
    } else if (c["mode"] == "chat") {
      ++chat;
      BuiltPrompt p = build_chat_prompt(a, c["messages"]);
      EXPECT_EQ(p.text, c["text"].get<std::string>()) << src;
      EXPECT_EQ(p.input_ids, c["input_ids"].get<std::vector<int32_t>>()) << src;
    } else {
      ++raw;
      EXPECT_EQ(a.tokenizer().encode(c["prompt"].get<std::string>(), true), c["input_ids"].get<std::vector<int32_t>>()) << src;
    }
  }
  EXPECT_EQ(image_cases, 13u + 194u);
  EXPECT_EQ(hashed, 194u);
  EXPECT_EQ(chat, 6u);
  EXPECT_EQ(raw, 4u);
}

TEST(Prompt, ImageTextInUserTextIsRefused) {
  const TextAssets& a = assets("smolvlm-tiny");
  EXPECT_THROW(build_vlm_prompt(a, "look: <image>", {{0, 0}}), Error);
  EXPECT_THROW(build_vlm_prompt(a, "hi", {{1, 0}}), Error);
}

TEST(Prompt, FolderWithoutProcessorConfigIsNotAnImageModel) {
  const TextAssets& a = assets("llama-tiny");
  EXPECT_FALSE(a.image_seq_len().has_value());
  try {
    build_vlm_prompt(a, "hi", {{0, 0}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("processor_config.json"), std::string::npos) << e.what();
  }
}

// tokenizer_config.json's clean_up_tokenization_spaces: read when true or false, false when absent or
// null, anything else refused with the file named.
TEST(Prompt, CleanUpTokenizationSpacesFlag) {
  EXPECT_FALSE(assets("llama-tiny").clean_up_tokenization_spaces());  // the file says false
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("smolvlm_cleanup_flag_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(test::model_dir("llama-tiny") / "tokenizer.json", dir / "tokenizer.json");
  const std::pair<const char*, int> cases[] = {
      {R"({"clean_up_tokenization_spaces": true})", 1}, {R"({"clean_up_tokenization_spaces": false})", 0},
      {R"({"clean_up_tokenization_spaces": null})", 0}, {R"({})", 0},
      {R"({"clean_up_tokenization_spaces": "yes"})", -1}, {R"({"clean_up_tokenization_spaces": 1})", -1}};
  for (const auto& [config, want] : cases) {
    SCOPED_TRACE(config);
    test::write_text_file(dir / "tokenizer_config.json", config);
    if (want < 0) {
      try {
        TextAssets::load(dir);
        ADD_FAILURE() << "expected an error";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: clean_up_tokenization_spaces"), std::string::npos)
            << e.what();
      }
    } else {
      EXPECT_EQ(TextAssets::load(dir)->clean_up_tokenization_spaces(), want == 1);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Prompt, MissingTokenizerIsANamedError) {
  try {
    TextAssets::load(test::text_data() / "chat");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace smolvlm
