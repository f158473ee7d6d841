// Reuse across requests (smolvlm_request.reuse_prefix) and chunked prefill (prefill_chunk): a session
// that keeps the KV of the longest common prefix gives exactly the ids a fresh session gives, over
// multi-turn conversations with images; a different image at the same position is never reused
// (the image token ids are the same, the pixels are not); prefill in chunks gives the ids of one call.
#include <gtest/gtest.h>

#include <smolvlm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/kv_content.h"
#include "test_util.h"

namespace smolvlm {
namespace prefix_reuse_test {
namespace {

api::Model load_tiny() {
  smolvlm_model_options o;
  smolvlm_model_options_init(&o);
  o.threads = 2;
  return api::Model::load(test::model_dir("smolvlm-tiny").string(), &o);
}

// An RGB8 picture whose pixels depend on `seed` (same size, so the same image tokens).
std::vector<uint8_t> picture(int seed, int w = 96, int h = 72) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * (7 + seed) + seed * 31) % 251);
  return px;
}

smolvlm_image rgb(const std::vector<uint8_t>& px, int w = 96, int h = 72) {
  smolvlm_image im{};
  im.kind = SMOLVLM_IMAGE_RGB8;
  im.data = px.data();
  im.size = px.size();
  im.width = w;
  im.height = h;
  return im;
}

struct Turn {
  const std::vector<uint8_t>* image;  // null: text only
  std::string question;
};

// The conversation: each turn's image and question, the answers so far as assistant turns.
api::Chat conversation(const std::vector<Turn>& turns, const std::vector<std::string>& answers) {
  api::Chat chat;
  for (size_t i = 0; i < turns.size(); ++i) {
    chat.add(SMOLVLM_ROLE_USER);
    if (turns[i].image) chat.image(rgb(*turns[i].image));
    chat.text(turns[i].question);
    if (i < answers.size()) chat.add(SMOLVLM_ROLE_ASSISTANT).text(answers[i]);
  }
  return chat;
}

smolvlm_request request_of(api::Chat& chat, int reuse, int64_t chunk = 0) {
  smolvlm_request r;
  smolvlm_request_init(&r);
  chat.fill(r);
  r.max_new_tokens = 8;
  r.reuse_prefix = reuse;
  r.prefill_chunk = chunk;
  return r;
}

std::vector<int32_t> ids_of(const api::Result& r) { return {r.token_ids().begin(), r.token_ids().end()}; }

TEST(PrefixReuse, FollowUpTurnsGiveTheIdsOfAFreshSession) {
  const api::Model m = load_tiny();
  const std::vector<uint8_t> a = picture(1), b = picture(2);
  const std::vector<Turn> turns = {{&a, "Describe this image."}, {nullptr, "And the colours?"}, {&b, "Compare with this one."}};
  api::Session session(m, 2048);
  std::vector<std::string> answers;
  for (size_t t = 1; t <= turns.size(); ++t) {
    const std::vector<Turn> so_far(turns.begin(), turns.begin() + static_cast<long>(t));
    api::Chat chat = conversation(so_far, answers);
    const api::Result reused = session.run(request_of(chat, 1));
    api::Chat fresh_chat = conversation(so_far, answers);
    const api::Result fresh = m.generate(request_of(fresh_chat, 0));
    EXPECT_EQ(ids_of(reused), ids_of(fresh)) << "turn " << t;
    EXPECT_EQ(reused.raw().prompt_tokens, fresh.raw().prompt_tokens);
    EXPECT_EQ(fresh.raw().reused_tokens, 0);
    if (t == 1) {
      EXPECT_EQ(reused.raw().reused_tokens, 0);
    }
    // A later turn repeats the earlier prompt: at least that much is kept.
    if (t > 1) {
      EXPECT_GT(reused.raw().reused_tokens, reused.raw().prompt_tokens / 2) << "turn " << t;
    }
    EXPECT_LT(reused.raw().reused_tokens, reused.raw().prompt_tokens);
    answers.emplace_back(reused.text());
  }
}

TEST(PrefixReuse, ADifferentImageAtTheSamePositionIsNotReused) {
  const api::Model m = load_tiny();
  const std::vector<uint8_t> a = picture(1), b = picture(2);
  api::Session session(m, 2048);
  api::Chat first = conversation({{&a, "Describe this image."}}, {});
  const api::Result r1 = session.run(request_of(first, 1));
  // The same question about another picture of the same size: the same token ids throughout.
  api::Chat second = conversation({{&b, "Describe this image."}}, {});
  const api::Result r2 = session.run(request_of(second, 1));
  api::Chat second_fresh = conversation({{&b, "Describe this image."}}, {});
  const api::Result fresh = m.generate(request_of(second_fresh, 0));
  EXPECT_EQ(ids_of(r2), ids_of(fresh));
  EXPECT_EQ(r1.raw().prompt_tokens, r2.raw().prompt_tokens);
  // Only the text before the image is kept.
  char* text = nullptr;
  int32_t* ids = nullptr;
  size_t n = 0;
  smolvlm_request rq = request_of(second, 0);
  api::check(smolvlm_render_prompt(m.get(), &rq, &text, &ids, &n));
  const smolvlm_model_info info = m.info();
  (void)info;
  // The first image token: the first id that occurs more than 16 times in a row.
  int64_t first_image = -1;
  for (size_t i = 0; i + 16 < n && first_image < 0; ++i)
    if (std::all_of(ids + i, ids + i + 16, [&](int32_t v) { return v == ids[i]; })) first_image = static_cast<int64_t>(i);
  smolvlm_free(text);
  smolvlm_free(ids);
  ASSERT_GT(first_image, 0);
  EXPECT_LE(r2.raw().reused_tokens, first_image);
  // And the same picture again keeps all but the last token.
  api::Chat third = conversation({{&b, "Describe this image."}}, {});
  const api::Result r3 = session.run(request_of(third, 1));
  EXPECT_EQ(ids_of(r3), ids_of(fresh));
  EXPECT_EQ(r3.raw().reused_tokens, r3.raw().prompt_tokens - 1);
}

TEST(PrefixReuse, ChunkedPrefillGivesTheIdsOfOneCall) {
  const api::Model m = load_tiny();
  const std::vector<uint8_t> a = picture(3);
  api::Chat chat = conversation({{&a, "Describe this image in detail."}}, {});
  const api::Result whole = m.generate(request_of(chat, 0, 0));
  float max_diff = 0;
  bool bitwise = true;
  api::Session one(m, 2048);
  one.prefill(request_of(chat, 0, 0));
  const std::vector<float> l1(one.logits().begin(), one.logits().end());
  for (int64_t chunk : {1, 5, 64, 100}) {
    const api::Result r = m.generate(request_of(chat, 0, chunk));
    EXPECT_EQ(ids_of(r), ids_of(whole)) << "chunk " << chunk;
    api::Session s(m, 2048);
    s.prefill(request_of(chat, 0, chunk));
    ASSERT_EQ(s.position(), one.position());
    for (size_t i = 0; i < l1.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(s.logits()[i] - l1[i]));
      bitwise = bitwise && s.logits()[i] == l1[i];
    }
  }
  EXPECT_LE(max_diff, 1e-4f);
  std::printf("chunked prefill vs one call: last logits %s (max |diff| %.3g)\n", bitwise ? "bitwise equal" : "not bitwise",
              static_cast<double>(max_diff));
}

TEST(PrefixReuse, TextPromptsAndBadFields) {
  const api::Model m = load_tiny();
  api::Session session(m, 512);
  smolvlm_request r;
  smolvlm_request_init(&r);
  r.prompt = "The quick brown fox jumps over the lazy dog and then";
  r.max_new_tokens = 6;
  r.reuse_prefix = 1;
  session.run(r);
  const std::string longer = std::string(r.prompt) + " runs away";
  r.prompt = longer.c_str();
  const api::Result again = session.run(r);
  r.reuse_prefix = 0;
  const api::Result fresh = m.generate(r);
  EXPECT_EQ(ids_of(again), ids_of(fresh));
  EXPECT_GT(again.raw().reused_tokens, 5);
  smolvlm_result out{};
  r.reuse_prefix = 2;
  EXPECT_EQ(smolvlm_session_run(session.get(), &r, &out), SMOLVLM_ERR_BAD_INPUT);
  EXPECT_NE(std::string(smolvlm_last_error()).find("reuse_prefix"), std::string::npos);
  r.reuse_prefix = 1;
  r.prefill_chunk = -1;
  EXPECT_EQ(smolvlm_session_run(session.get(), &r, &out), SMOLVLM_ERR_BAD_INPUT);
  EXPECT_NE(std::string(smolvlm_last_error()).find("prefill_chunk"), std::string::npos);
  // A prompt longer than the session is an error before anything is dropped.
  const int64_t before = session.position();
  std::string huge;
  for (int i = 0; i < 1200; ++i) huge += " fox";
  r.prefill_chunk = 0;
  r.prompt = huge.c_str();
  EXPECT_EQ(smolvlm_session_run(session.get(), &r, &out), SMOLVLM_ERR_STATE);
  EXPECT_EQ(session.position(), before);
}

TEST(PrefixReuse, TruncateMisuseIsAnErrorThatChangesNothing) {
  const api::Model m = load_tiny();
  api::Session s(m, 16);
  const std::vector<int32_t> ids = {5, 6, 7, 8};
  s.prefill(ids);
  EXPECT_EQ(smolvlm_session_truncate(s.get(), -1), SMOLVLM_ERR_STATE);
  EXPECT_EQ(smolvlm_session_truncate(s.get(), 5), SMOLVLM_ERR_STATE);
  EXPECT_EQ(smolvlm_session_truncate(nullptr, 0), SMOLVLM_ERR_STATE);
  EXPECT_EQ(s.position(), 4);
  const std::vector<float> full(s.logits().begin(), s.logits().end());
  // Truncate then re-run the last token: the logits of the full prefill, bitwise (one row each way).
  api::check(smolvlm_session_truncate(s.get(), 3));
  s.decode(8);
  EXPECT_TRUE(std::equal(full.begin(), full.end(), s.logits().begin()));
}

TEST(KvContent, ImagesCompareByKeyAndRow) {
  const std::vector<int64_t> ids = {1, 9, 9, 9, 9, 2};
  const KvContent a = KvContent::of_prompt(ids, 9, {{"k1", 2}, {"k2", 2}});
  const KvContent same = KvContent::of_prompt(ids, 9, {{"k1", 2}, {"k2", 2}});
  const KvContent other_second = KvContent::of_prompt(ids, 9, {{"k1", 2}, {"k3", 2}});
  const KvContent one_image = KvContent::of_prompt(ids, 9, {{"k1", 4}});
  EXPECT_EQ(a.common_prefix(same), 6u);
  EXPECT_EQ(a.common_prefix(other_second), 3u);
  EXPECT_EQ(a.common_prefix(one_image), 3u);  // row 2 of k1 is not row 0 of k2
  KvContent text;
  text.append_ids(ids);
  EXPECT_EQ(a.common_prefix(text), 1u);  // an image row is not the token's own embedding
  EXPECT_EQ(KvContent::opaque(6).common_prefix(KvContent::opaque(6)), 0u);
  KvContent copy;
  copy.append(a, 0, 4);
  copy.truncate(2);
  copy.append(a, 2, 6);
  EXPECT_EQ(copy.common_prefix(a), 6u);
  EXPECT_THROW(KvContent::of_prompt(ids, 9, {{"k1", 3}}), smolvlm::Error);
}

}  // namespace
}  // namespace prefix_reuse_test
}  // namespace smolvlm
