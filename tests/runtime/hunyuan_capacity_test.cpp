// The capacity lesson of the HY-MT field report, on the tiny HunYuan checkpoint with a
// max_position_embeddings raised to 2048 (same weights): at contexts of 1024 and 1025, prompts of
// N-1, N and N+1 tokens, through prefill then decode and through decode steps alone. A prompt plus
// generation that fills the KV state exactly works, the next token ends with "context full" (never an
// overwrite), a prompt past the context is refused, and a HunYuan KV state in a SmolVLM session is a
// clear error. Contexts past max_position_embeddings are refused on this architecture.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "io/file.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "test_util.h"

namespace smolvlm {
namespace {

namespace fs = std::filesystem;

// tests/data/models/hunyuan-tiny-a with max_position_embeddings 2048, in a temporary folder.
const Model& hunyuan_2048() {
  static std::unique_ptr<Model> m = [] {
    const fs::path src = test::model_dir("hunyuan-tiny-a");
    const fs::path dir = fs::temp_directory_path() / ("smolvlm-hy-ctx-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(src))
      fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
    nlohmann::json cfg = nlohmann::json::parse(read_file(src / "config.json"));
    cfg["max_position_embeddings"] = 2048;
    test::write_text_file(dir / "config.json", cfg.dump(1));
    auto model = Model::load(dir);
    fs::remove_all(dir);  // the weights stay mapped
    return model;
  }();
  return *m;
}

const Model& smolvlm_tiny() {
  static auto m = Model::load(test::model_dir("smolvlm-tiny"));
  return *m;
}

template <typename F>
std::string state_error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::State) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no Error thrown";
  return {};
}

std::vector<int64_t> prompt_of(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = 1 + (i * 37) % 999;  // ordinary tokens, no eos
  return ids;
}

std::vector<float> logits_copy(std::span<const float> s) { return {s.begin(), s.end()}; }

struct Boundary : ::testing::TestWithParam<int64_t> {};

TEST_P(Boundary, PrefillThenDecodeFillsTheContextExactly) {
  const int64_t C = GetParam();
  ThreadPool pool(2);
  const Model& m = hunyuan_2048();
  for (int64_t n : {C - 1, C, C + 1}) {
    SCOPED_TRACE("capacity " + std::to_string(C) + ", prompt " + std::to_string(n));
    Session s(m, pool, C);
    const std::vector<int64_t> prompt = prompt_of(n);
    if (n > C) {
      const std::string e = state_error_of([&] { s.prefill(prompt); });
      EXPECT_NE(e.find("do not fit the context of " + std::to_string(C)), std::string::npos) << e;
      EXPECT_EQ(s.position(), 0) << "a refused prefill must not move the session";
      continue;
    }
    s.prefill(prompt);
    // The generation loop: every token that fits is fed, the one after the last slot is chosen from
    // the last logits and generation ends with context_full.
    GenerationOptions opt;
    opt.max_new_tokens = 10;
    opt.eos_token_ids = {};  // never stop on eos: run into the boundary
    const GenerationResult r = generate(s, prompt, opt);
    EXPECT_TRUE(r.context_full);
    EXPECT_EQ(static_cast<int64_t>(r.ids.size()), C - n + 1) << "tokens chosen: those fed plus the last one";
    EXPECT_EQ(s.position(), C) << "the KV state is filled to its last slot";
    const std::vector<float> last = logits_copy(s.logits());
    const std::string e = state_error_of([&] { s.decode(5); });
    EXPECT_NE(e.find("do not fit the context of " + std::to_string(C)), std::string::npos) << e;
    EXPECT_EQ(s.position(), C);
    EXPECT_EQ(logits_copy(s.logits()), last) << "a refused decode leaves the logits as they were";
  }
}

// Decode steps alone (one token prefilled, the rest fed one at a time) up to the same boundary; the
// logits at the last slot agree with a single prefill of the same tokens.
TEST_P(Boundary, DecodeOnlyUpToTheLastSlot) {
  const int64_t C = GetParam();
  ThreadPool pool(2);
  const Model& m = hunyuan_2048();
  const std::vector<int64_t> tokens = prompt_of(C + 1);
  Session stepwise(m, pool, C);
  stepwise.prefill(std::span<const int64_t>(tokens.data(), 1));
  for (int64_t i = 1; i < C; ++i) stepwise.decode(tokens[i]);
  EXPECT_EQ(stepwise.position(), C);
  state_error_of([&] { stepwise.decode(tokens[C]); });
  EXPECT_EQ(stepwise.position(), C);

  Session whole(m, pool, C);
  whole.prefill(std::span<const int64_t>(tokens.data(), C));
  const std::vector<float> a = logits_copy(stepwise.logits()), b = logits_copy(whole.logits());
  ASSERT_EQ(a.size(), b.size());
  float err = 0;
  for (size_t i = 0; i < a.size(); ++i) err = std::max(err, std::fabs(a[i] - b[i]));
  EXPECT_LE(err, 1e-4f) << "decode steps vs one prefill at the last slot";
  std::printf("[capacity %lld] decode-only vs prefill logits at the last slot: max error %.2e\n",
              static_cast<long long>(C), err);
}

INSTANTIATE_TEST_SUITE_P(HunYuan, Boundary, ::testing::Values(int64_t(1024), int64_t(1025)));

TEST(HunYuanCapacity, KvStateInASmolvlmSessionIsAnError) {
  ThreadPool pool(1);
  Session hy(hunyuan_2048(), pool, 16);
  hy.prefill(prompt_of(4));
  KvCache cache(hunyuan_2048(), 16);
  const std::string e = state_error_of([&] { Session vlm(smolvlm_tiny(), pool, std::move(cache)); });
  EXPECT_NE(e.find("KV cache was made for another model"), std::string::npos) << e;
}

TEST(HunYuanCapacity, ContextPastMaxPositionEmbeddingsIsRefused) {
  ThreadPool pool(1);
  const Model& m = hunyuan_2048();
  EXPECT_NO_THROW(Session(m, pool, 2048));
  try {
    Session s(m, pool, 2049);
    ADD_FAILURE() << "a context of 2049 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("past the model's max_position_embeddings (2048)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace smolvlm
