// An image encoded by a member of a decode group runs in bounded chunks (one stage of the vision
// tower per chunk) between the group's decode steps: the streams already decoding keep stepping while
// the image is encoded, the two never run at once, and the features are exactly those of an
// uninterrupted run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/decode_group.h"
#include "runtime/model.h"
#include "runtime/request.h"
#include "runtime/session.h"
#include "test_util.h"

namespace smolvlm {
namespace {

const Model& tiny_vlm() {
  static auto m = Model::load(test::data_dir() / "models" / "smolvlm-tiny");
  return *m;
}

const TextAssets& tiny_vlm_assets() {
  static auto a = TextAssets::load(test::data_dir() / "models" / "smolvlm-tiny");
  return *a;
}

PromptInput image_question() {
  PromptInput in;
  Message m;
  ContentPart image;
  image.is_image = true;
  image.image.path = test::data_dir() / ".." / ".." / "examples" / "flower.jpg";
  ContentPart text;
  text.text = "What is in this image?";
  m.parts = {image, text};
  in.messages = {m};
  in.split = false;
  return in;
}

TEST(VisionInterleave, EveryStageIsAChunkAndGivesTheSameFeatures) {
  tiny_vlm().vision_cache().set_max_entries(0);  // both runs through the tower
  ThreadPool pool(2);
  const PromptInput in = image_question();
  const PreparedPrompt plain = prepare_prompt(tiny_vlm(), tiny_vlm_assets, in, pool);
  int64_t chunks = 0;
  const PreparedPrompt chunked =
      prepare_prompt(tiny_vlm(), tiny_vlm_assets, in, pool, [&](const std::function<void()>& work) { ++chunks, work(); });
  tiny_vlm().vision_cache().set_max_entries(8);
  ASSERT_EQ(plain.image_tiles, 1);
  // Each tile: the patch embedding, every encoder layer, the post-LayerNorm, then the connector.
  EXPECT_EQ(chunks, plain.image_tiles * (tiny_vlm().vision().tile_stages() + 1));
  EXPECT_GE(tiny_vlm().vision().tile_stages(), 3);
  ASSERT_EQ(plain.embeddings.size(), chunked.embeddings.size());
  EXPECT_EQ(0, std::memcmp(plain.embeddings.data(), chunked.embeddings.data(), plain.embeddings.size() * sizeof(float)));
}

TEST(VisionInterleave, TheOthersStepBetweenTheStagesOfAnImage) {
  // Another image per run: the vision cache would otherwise skip the tower the second time.
  tiny_vlm().vision_cache().set_max_entries(0);
  ThreadPool pool_a(2), pool_b(2);
  DecodeGroup group;
  Session a(tiny_vlm(), pool_a, 512), b(tiny_vlm(), pool_b, 512);
  a.set_decode_group(&group);
  b.set_decode_group(&group);
  a.prefill(std::vector<int64_t>{1, 2, 3, 4});
  std::atomic<bool> stop{false};
  std::atomic<int64_t> a_steps{0};
  std::thread decoder([&] {
    while (!stop) {
      if (a.position() + 1 >= a.capacity()) a.truncate(4);  // keeps decoding until told to stop
      a.decode(42);
      ++a_steps;
    }
    group.leave(a);
  });
  while (a_steps == 0) std::this_thread::yield();

  std::vector<uint64_t> steps_at_chunk;
  const PreparedPrompt p = prepare_prompt(tiny_vlm(), tiny_vlm_assets, image_question(), pool_b, [&](const std::function<void()>& work) {
    b.between_steps([&] {
      steps_at_chunk.push_back(group.steps());
      work();
    });
  });
  stop = true;
  decoder.join();
  tiny_vlm().vision_cache().set_max_entries(8);

  ASSERT_EQ(static_cast<int64_t>(steps_at_chunk.size()), tiny_vlm().vision().tile_stages() + 1);
  // A decode step ran before every chunk after the first (between_steps gives the decoders a turn;
  // it skips one only after waiting 200 ms, far longer than a step of the tiny model).
  int64_t stepped = 0;
  for (size_t i = 1; i < steps_at_chunk.size(); ++i) stepped += steps_at_chunk[i] > steps_at_chunk[i - 1];
  EXPECT_EQ(stepped, static_cast<int64_t>(steps_at_chunk.size()) - 1);

  ThreadPool pool(2);
  const PreparedPrompt alone = prepare_prompt(tiny_vlm(), tiny_vlm_assets, image_question(), pool);
  ASSERT_EQ(alone.embeddings.size(), p.embeddings.size());
  EXPECT_EQ(0, std::memcmp(alone.embeddings.data(), p.embeddings.data(), p.embeddings.size() * sizeof(float)));
}

}  // namespace
}  // namespace smolvlm
