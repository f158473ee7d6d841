#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {

TEST(ThreadPool, ParallelForCoversTheRangeExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, RunOnAllGivesEachIndexOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  pool.run_on_all([&](int t) { seen[size_t(t)].fetch_add(1); });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPool, ManyBackToBackJobs) {
  // Decode dispatches hundreds of small jobs per token: none may be lost or run twice.
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  for (int job = 0; job < 1000; ++job)
    pool.parallel_for(12, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 1000 * 12);
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  pool.run_on_all([&](int) { ran.fetch_add(1); });
  // Longer than the spin budget: the workers are asleep on the condition variable now.
  std::this_thread::sleep_for(std::chrono::nanoseconds(ThreadPool::kSpinNanoseconds * 5));
  pool.run_on_all([&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 4);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run_on_all([](int t) {
    if (t == 2) throw std::runtime_error("worker failed");
  }),
               std::runtime_error);
  EXPECT_THROW(pool.run_on_all([](int t) {
    if (t == 0) throw std::runtime_error("caller failed");
  }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> ran{0};
  pool.run_on_all([&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 3);
}

// A job where the caller and a worker both fail rethrows one error, and the worker's does not
// resurface in the next job.
TEST(ThreadPool, AFailedJobLeavesNoErrorForTheNext) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run_on_all([](int t) { throw std::runtime_error(t == 0 ? "caller failed" : "worker failed"); }),
               std::runtime_error);
  for (int i = 0; i < 100; ++i) {
    std::atomic<int> ran{0};
    EXPECT_NO_THROW(pool.run_on_all([&](int) { ran.fetch_add(1); }));
    EXPECT_EQ(ran.load(), 2);
  }
}

TEST(ThreadPool, NestedParallelForRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, 1, [&](int64_t b2, int64_t e2) { total.fetch_add(e2 - b2); });
  });
  EXPECT_EQ(total.load(), 80);
}

TEST(ThreadPool, RejectsBadThreadCount) {
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(100000), Error);
}

}  // namespace
}  // namespace smolvlm
