// The HunYuan tokenizer (byte-level BPE behind three Split pre-tokenizers: digits, the CJK/kana range,
// DeepSeek-V3's letters/punctuation regex; no BOS from a post-processor): the 150-string corpus of HF
// tokenizers 0.22 (ids, tokens, decode), and the chat template of the checkpoints rendering each
// golden's messages to HF's text and ids.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "io/file.h"
#include "text/prompt.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using nlohmann::json;

std::vector<int32_t> corpus_ids(const json& j) { return j.get<std::vector<int32_t>>(); }

TEST(HunYuanTokenizer, CorpusMatchesReference) {
  const auto assets = TextAssets::load(test::model_dir("hunyuan-tiny-a"));
  const Tokenizer& tok = assets->tokenizer();
  const json corpus = json::parse(test::read_maybe_gzip(test::text_data() / "hunyuan" / "tokenizer_corpus.json"));
  ASSERT_EQ(corpus["cases"].size(), 150u);
  size_t same = 0;
  for (const json& c : corpus["cases"]) {
    const std::string text = c["text"];
    std::vector<std::string> tokens;
    const auto ids = tok.encode_with_tokens(text, false, &tokens);
    const auto ids_special = tok.encode(text, true);  // no post-processor: no BOS added
    const bool ok = ids == corpus_ids(c["ids"]) && ids_special == ids && tokens == c["tokens"].get<std::vector<std::string>>() &&
                    tok.decode(ids, false) == c["decoded"].get<std::string>();
    if (ok) ++same;
    else
      ADD_FAILURE() << json(text).dump() << "\n got ids " << json(ids).dump() << "\n want    " << c["ids"].dump()
                    << "\n got decode " << json(tok.decode(ids, false)).dump() << "\n want " << c["decoded"].dump();
  }
  std::printf("[hunyuan tokenizer] %zu/%zu corpus strings identical (ids, tokens, decode)\n", same,
              corpus["cases"].size());
}

TEST(HunYuanTokenizer, ChatTemplateRendersEveryGolden) {
  const auto a = TextAssets::load(test::model_dir("hunyuan-tiny-a"));
  const auto b = TextAssets::load(test::model_dir("hunyuan-tiny-b"));
  int cases = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() / "goldens")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hy_", 0) != 0) continue;
    const json spec = json::parse(read_file(e.path() / "case.json"));
    const TextAssets& assets = spec["model"].get<std::string>().ends_with("tiny-a") ? *a : *b;
    const BuiltPrompt p = build_chat_prompt(assets, spec["messages"]);
    EXPECT_EQ(p.text, spec["chat_text"].get<std::string>()) << name;
    EXPECT_EQ(p.input_ids, corpus_ids(spec["input_ids"])) << name;
    ++cases;
  }
  EXPECT_EQ(cases, 7);
}

TEST(HunYuanTokenizer, SystemMessageAndAssistantTurns) {
  const auto a = TextAssets::load(test::model_dir("hunyuan-tiny-a"));
  const json messages = json::array({{{"role", "system"}, {"content", "S"}},
                                     {{"role", "user"}, {"content", "U1"}},
                                     {{"role", "assistant"}, {"content", "A1"}},
                                     {{"role", "user"}, {"content", "U2"}}});
  EXPECT_EQ(build_chat_prompt(*a, messages).text,
            "<｜hy_begin▁of▁sentence｜>S<｜hy_place▁holder▁no▁3｜><｜hy_User｜>U1<｜hy_Assistant｜>A1"
            "<｜hy_place▁holder▁no▁2｜><｜hy_User｜>U2<｜hy_Assistant｜>");
  const auto ids = build_chat_prompt(*a, messages).input_ids;
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1000);  // the template writes the BOS
  EXPECT_EQ(ids.back(), 1004);
}

// A folder whose template is in chat_template.jinja (as newer transformers save it) uses that file.
TEST(HunYuanTokenizer, ChatTemplateJinjaFileIsRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("smolvlm-hy-jinja-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(test::model_dir("hunyuan-tiny-a") / f, dir / f,
                               std::filesystem::copy_options::overwrite_existing);
  test::write_text_file(dir / "chat_template.jinja", "{{ bos_token }}[{{ messages[0]['content'] }}]");
  const auto assets = TextAssets::load(dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(build_chat_prompt(*assets, json::array({{{"role", "user"}, {"content", "hi"}}})).text,
            "<｜hy_begin▁of▁sentence｜>[hi]");
}

}  // namespace
}  // namespace smolvlm
