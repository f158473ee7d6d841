#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "kernels/team.h"

namespace smolvlm {
namespace {

TEST(Team, SharesCoverEveryItemOnceInThreadOrder) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::vector<int64_t> first(static_cast<size_t>(threads)), last(static_cast<size_t>(threads));
      run_team(pool, [&](Team& team) {
        EXPECT_EQ(team.size(), threads);
        first[size_t(team.index())] = team.first(n), last[size_t(team.index())] = team.last(n);
        for (int64_t i = team.first(n); i < team.last(n); ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " threads, n " << n;
      EXPECT_EQ(first[0], 0);
      EXPECT_EQ(last[size_t(threads - 1)], n);
      for (int t = 1; t < threads; ++t) EXPECT_EQ(first[size_t(t)], last[size_t(t - 1)]);
    }
  }
}

TEST(Team, SyncMakesWhatEveryThreadWroteVisibleToAll) {
  // Each round every thread writes its slot, syncs, reads every slot, and syncs again before the
  // next round overwrites them (plain writes: the barrier orders them, and TSan checks it).
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    std::vector<int64_t> slots(size_t(threads), -1);
    std::atomic<int> wrong{0};
    run_team(pool, [&](Team& team) {
      for (int64_t round = 0; round < 500; ++round) {
        slots[size_t(team.index())] = round * threads + team.index();
        team.sync();
        for (int t = 0; t < threads; ++t)
          if (slots[size_t(t)] != round * threads + t) wrong.fetch_add(1);
        team.sync();
      }
    });
    EXPECT_EQ(wrong.load(), 0) << threads << " threads";
  }
}

TEST(Team, AThreadThatFailsFailsTheTeamAndLeavesThePoolUsable) {
  // Thread 1 throws in round 3 while the others wait for it in sync(): they leave, run_team rethrows
  // its error, and the pool runs the next team in full.
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::atomic<int> rounds{0};
    EXPECT_THROW(run_team(pool,
                          [&](Team& team) {
                            for (int round = 0; round < 10; ++round) {
                              if (team.index() == 1 && round == 3) throw std::runtime_error("thread 1 failed");
                              rounds.fetch_add(1);
                              team.sync();
                            }
                          }),
                 std::runtime_error);
    EXPECT_LE(rounds.load(), 4 * threads);
    std::atomic<int> after{0};
    run_team(pool, [&](Team& team) {
      team.sync();
      after.fetch_add(1);
    });
    EXPECT_EQ(after.load(), threads);
  }
}

}  // namespace
}  // namespace smolvlm
