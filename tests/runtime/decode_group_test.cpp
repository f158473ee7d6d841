// A decode group keeps its members stepping together: four sequences decoding side by side on their
// own threads (sampling between steps) share their steps. How many rows a step gets depends on when
// the threads run (a loaded machine may hold one back past any wait), so the count is bounded by what
// holds whatever the scheduling: each token a step of its own at worst, and the group's wait long
// enough (only a hang reaches it) that steps are shared once the streams run together. (The tiny model's steps are too short to
// show the split into alternating halves that long steps caused before the wait counted from the
// end of the last step; decode_step_bench's BM_GroupStreams on a full-size synth shows that.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <latch>
#include <thread>
#include <vector>

#include "runtime/decode_group.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "test_util.h"

namespace smolvlm {
namespace {

TEST(DecodeGroupSteps, FourStreamsShareTheirSteps) {
  static auto model = Model::load(test::data_dir() / "models" / "llama-tiny");
  constexpr int kStreams = 4;
  constexpr int64_t kTokens = 48;
  DecodeGroup group(std::chrono::seconds(30));
  std::vector<std::unique_ptr<ThreadPool>> pools;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < kStreams; ++i) {
    pools.push_back(std::make_unique<ThreadPool>(2));
    sessions.push_back(std::make_unique<Session>(*model, *pools.back(), 128));
    sessions.back()->set_decode_group(&group);
    sessions.back()->prefill(std::vector<int64_t>{1, 2, 3, int64_t(4 + i)});
  }
  const uint64_t before = group.steps();
  std::vector<std::thread> threads;
  std::latch start(kStreams);
  for (int i = 0; i < kStreams; ++i)
    threads.emplace_back([&, i] {
      Session& s = *sessions[static_cast<size_t>(i)];
      start.arrive_and_wait();
      for (int64_t t = 0; t < kTokens; ++t) {
        const std::span<const float> logits = s.logits();
        int64_t best = 0;  // greedy, as a generation loop would sample between steps
        for (size_t v = 1; v < logits.size(); ++v)
          if (logits[v] > logits[static_cast<size_t>(best)]) best = static_cast<int64_t>(v);
        s.decode(best);
      }
      group.leave(s);
    });
  for (auto& t : threads) t.join();
  const uint64_t steps = group.steps() - before;
  // kStreams * kTokens rows went through: all together take kTokens steps, and a stream that started
  // late steps alone until it catches up. Fewer steps than rows: the streams did share.
  std::printf("%llu steps for %d rows (%.2f rows per step)\n", static_cast<unsigned long long>(steps),
              int(kStreams * kTokens), double(kStreams * kTokens) / double(steps));
  EXPECT_GE(steps, static_cast<uint64_t>(kTokens));
  EXPECT_LT(steps, static_cast<uint64_t>(kStreams * kTokens));
}

// Members that are decoding but do not come back for their next step (no leave()) hold the others
// back only for the group's wait, which the first member waiting times: one member alone is served,
// then two together (in one step, or two if the second came after the first's wait ran out).
TEST(DecodeGroupSteps, MembersThatStopComingHoldTheOthersOnlyForTheWait) {
  static auto model = Model::load(test::data_dir() / "models" / "llama-tiny");
  DecodeGroup group(std::chrono::milliseconds(20));
  std::vector<std::unique_ptr<ThreadPool>> pools;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < 4; ++i) {
    pools.push_back(std::make_unique<ThreadPool>(1));
    sessions.push_back(std::make_unique<Session>(*model, *pools.back(), 64));
    sessions.back()->set_decode_group(&group);
    sessions.back()->prefill(std::vector<int64_t>{1, 2, 3, int64_t(4 + i)});
  }
  const auto decode_on_threads = [&](std::vector<int> members) {
    std::vector<std::future<void>> done;
    for (const int i : members)
      done.push_back(std::async(std::launch::async, [&, i] { sessions[static_cast<size_t>(i)]->decode(7); }));
    return done;
  };
  for (auto& f : decode_on_threads({0, 1, 2, 3})) f.get();  // all four are decoding members now
  // Then the first alone (it times the wait itself), then the second and third together (the first
  // of them times it for both); the last never comes back.
  const uint64_t before = group.steps();
  bool all_served = true;
  for (const std::vector<int>& members : {std::vector<int>{0}, std::vector<int>{1, 2}}) {
    auto done = decode_on_threads(members);
    for (auto& f : done) all_served = all_served && f.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    if (!all_served) group.leave(*sessions[3]);  // releases them: the test fails below instead of hanging
    for (auto& f : done) f.get();
  }
  EXPECT_TRUE(all_served) << "members waited past the group's wait for one that never came";
  const uint64_t steps = group.steps() - before;
  EXPECT_GE(steps, 2u);
  EXPECT_LE(steps, 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sessions[static_cast<size_t>(i)]->position(), 6);
  EXPECT_EQ(sessions[3]->position(), 5);
  group.leave(*sessions[3]);
}

}  // namespace
}  // namespace smolvlm
