// A decode group keeps its members stepping together: four sequences decoding side by side on their
// own threads (sampling between steps) share most steps. (The tiny model's steps are too short to
// show the split into alternating halves that long steps caused before the wait counted from the
// end of the last step; decode_step_bench's BM_GroupStreams on a full-size synth shows that.)
#include <gtest/gtest.h>

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
  DecodeGroup group;
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
  for (int i = 0; i < kStreams; ++i)
    threads.emplace_back([&, i] {
      Session& s = *sessions[static_cast<size_t>(i)];
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
  // kStreams * kTokens rows went through; all together would take kTokens steps, halves that
  // alternate twice as many. Allow stragglers at the start and end and a slow scheduler now and then.
  EXPECT_GE(steps, static_cast<uint64_t>(kTokens));
  EXPECT_LE(steps, static_cast<uint64_t>(kTokens * 3 / 2)) << "rows per step: " << double(kStreams * kTokens) / double(steps);
}

}  // namespace
}  // namespace smolvlm
