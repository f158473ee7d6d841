// The model's vision cache: a second question about the same image (same bytes, same split) skips
// the vision tower and gives exactly the ids a model without the cache gives; another split setting
// is another set of pixels, so it runs the tower again.
#include <gtest/gtest.h>

#include <smolvlm.hpp>

#include <string>
#include <vector>

#include "api/handles.h"
#include "test_util.h"

namespace smolvlm {
namespace {

std::vector<int32_t> ask(const api::Model& m, const std::string& question, int split) {
  const std::string image = (test::data_dir() / ".." / ".." / "examples" / "flower.jpg").string();
  api::Chat chat;
  chat.add(SMOLVLM_ROLE_USER).image_file(image).text(question);
  smolvlm_request r;
  smolvlm_request_init(&r);
  chat.fill(r);
  r.max_new_tokens = 6;
  r.split = split;
  const api::Result res = m.generate(r);
  return {res.token_ids().begin(), res.token_ids().end()};
}

size_t hits(const api::Model& m) { return m.get()->weights().vision_cache().hits(); }

TEST(VisionCache, SameImageSkipsTheTowerWithTheSameIds) {
  smolvlm_model_options o;
  smolvlm_model_options_init(&o);
  o.threads = 2;
  const std::string dir = test::model_dir("smolvlm-tiny").string();
  const api::Model cached = api::Model::load(dir, &o);
  ask(cached, "Describe this image.", -1);
  EXPECT_EQ(hits(cached), 0u);
  const std::vector<int32_t> second = ask(cached, "What colour is it?", -1);
  EXPECT_EQ(hits(cached), 1u);
  ask(cached, "What colour is it?", 0);  // unsplit: other pixels, a miss
  EXPECT_EQ(hits(cached), 1u);
  const std::vector<int32_t> third = ask(cached, "Where is it?", -1);
  EXPECT_EQ(hits(cached), 2u);

  const api::Model fresh = api::Model::load(dir, &o);
  EXPECT_EQ(ask(fresh, "What colour is it?", -1), second);
  const api::Model fresh2 = api::Model::load(dir, &o);
  EXPECT_EQ(ask(fresh2, "Where is it?", -1), third);
  EXPECT_EQ(hits(fresh2), 0u);
}

TEST(VisionCache, ZeroImagesKeepsNothingAndANegativeCountIsRefused) {
  smolvlm_model_options o;
  smolvlm_model_options_init(&o);
  EXPECT_EQ(o.vision_cache_images, 8);
  o.threads = 2;
  o.vision_cache_images = 0;
  const std::string dir = test::model_dir("smolvlm-tiny").string();
  const api::Model off = api::Model::load(dir, &o);
  const std::vector<int32_t> first = ask(off, "What colour is it?", 0);
  EXPECT_EQ(ask(off, "What colour is it?", 0), first);
  EXPECT_EQ(hits(off), 0u);

  o.vision_cache_images = -1;
  smolvlm_model* m = nullptr;
  EXPECT_EQ(smolvlm_model_load(dir.c_str(), &o, &m), SMOLVLM_ERR_BAD_INPUT);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(smolvlm_last_error()).find("vision_cache_images must be >= 0, got -1"), std::string::npos);
}

}  // namespace
}  // namespace smolvlm
