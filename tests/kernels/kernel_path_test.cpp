// The kernel path of an execution context: ScopedKernelPath on the calling thread, a ThreadPool's own
// path, the submitting thread's path reaching the pool's workers, and two threads running linear()
// on different paths at the same time.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {

// The path each of the pool's threads (index 0 = the caller) sees while it runs a job.
std::vector<KernelPath> paths_seen_by(ThreadPool& pool) {
  std::vector<KernelPath> seen(size_t(pool.size()), static_cast<KernelPath>(99));  // 99: did not run
  pool.run_on_all([&](int t) { seen[size_t(t)] = active_kernel_path(); });
  return seen;
}

// The vector path to pair with scalar; skips the test when the CPU has none.
#define REQUIRE_VECTOR_PATH()                                                        \
  if (best_kernel_path() == KernelPath::Scalar) GTEST_SKIP() << "this CPU runs the scalar path only"

TEST(ScopedKernelPath, OverridesTheProcessPathAndNests) {
  REQUIRE_VECTOR_PATH();
  const KernelPath best = best_kernel_path();
  struct Reset {
    ~Reset() { reset_kernel_path(); }
  } reset;
  set_kernel_path(best);
  {
    const ScopedKernelPath outer(KernelPath::Scalar);
    EXPECT_EQ(active_kernel_path(), KernelPath::Scalar);
    {
      const ScopedKernelPath inner(best);
      EXPECT_EQ(active_kernel_path(), best);
    }
    EXPECT_EQ(active_kernel_path(), KernelPath::Scalar);
    // Another thread does not see this thread's scope.
    KernelPath other = KernelPath::Scalar;
    std::thread([&] { other = active_kernel_path(); }).join();
    EXPECT_EQ(other, best);
  }
  EXPECT_EQ(active_kernel_path(), best);
}

TEST(ScopedKernelPath, RefusesAPathTheCpuCannotRun) {
  for (KernelPath p : kAllKernelPaths) {
    if (kernel_path_supported(p)) continue;
    const KernelPath before = active_kernel_path();
    try {
      const ScopedKernelPath scope(p);
      FAIL() << kernel_path_name(p) << " accepted on a CPU without it";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
      EXPECT_NE(std::string(e.what()).find(kernel_path_name(p)), std::string::npos) << e.what();
    }
    EXPECT_EQ(active_kernel_path(), before);
    EXPECT_THROW(ThreadPool(2, p), Error);
    return;
  }
  GTEST_SKIP() << "this CPU runs every kernel path";
}

TEST(ThreadPoolKernelPath, WorkersRunUnderTheSubmittingThreadsPath) {
  REQUIRE_VECTOR_PATH();
  ThreadPool pool(3);
  EXPECT_FALSE(pool.kernel_path().has_value());
  for (KernelPath p : supported_kernel_paths()) {
    const ScopedKernelPath scope(p);
    EXPECT_EQ(pool.task_kernel_path(), p);
    EXPECT_EQ(paths_seen_by(pool), std::vector<KernelPath>(3, p)) << kernel_path_name(p);
  }
}

TEST(ThreadPoolKernelPath, APoolWithAPathRunsEverythingOnIt) {
  REQUIRE_VECTOR_PATH();
  const KernelPath best = best_kernel_path();
  ThreadPool scalar_pool(3, KernelPath::Scalar), one_thread(1, KernelPath::Scalar);
  ASSERT_EQ(scalar_pool.kernel_path(), KernelPath::Scalar);
  const ScopedKernelPath caller(best);
  EXPECT_EQ(paths_seen_by(scalar_pool), std::vector<KernelPath>(3, KernelPath::Scalar));
  EXPECT_EQ(paths_seen_by(one_thread), std::vector<KernelPath>(1, KernelPath::Scalar));
  KernelPath inline_path = best;  // one chunk: runs on the caller, still on the pool's path
  scalar_pool.parallel_for(1, 1, [&](int64_t, int64_t) { inline_path = active_kernel_path(); });
  EXPECT_EQ(inline_path, KernelPath::Scalar);
  EXPECT_EQ(active_kernel_path(), best);  // the caller's own path is back after the job

  // linear() through the pool gives the scalar path's bits although the caller runs on `best`.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  const int64_t M = 20, N = 33, K = 300;
  std::vector<float> x(size_t(M * K)), w(size_t(N * K)), y(size_t(M * N)), scalar(y.size()), vec(y.size());
  for (float& v : x) v = d(rng);
  for (float& v : w) v = d(rng);
  const WeightRef ref{w.data(), WeightFormat::F32, N, K};
  ThreadPool plain(2);
  linear(x.data(), M, ref, nullptr, vec.data(), plain);
  linear(x.data(), M, ref, nullptr, y.data(), scalar_pool);
  {
    const ScopedKernelPath s(KernelPath::Scalar);
    linear(x.data(), M, ref, nullptr, scalar.data(), plain);
  }
  ASSERT_NE(scalar, vec) << "the paths must differ in some bit for this test to tell them apart";
  EXPECT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * sizeof(float)));
}

TEST(ThreadPoolKernelPath, TwoThreadsOnDifferentPathsGetTheirOwnBits) {
  REQUIRE_VECTOR_PATH();
  const KernelPath paths[2] = {KernelPath::Scalar, best_kernel_path()};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  // A decode row (the streaming GEMV) and a block of rows (packed, blocked GEMM).
  for (int64_t M : {int64_t(1), int64_t(40)}) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const int64_t N = 70, K = 777;
    std::vector<float> x(size_t(M * K)), w(size_t(N * K));
    for (float& v : x) v = d(rng);
    for (float& v : w) v = d(rng);
    const WeightRef ref{w.data(), WeightFormat::F32, N, K};
    std::vector<float> expected[2];
    for (int i = 0; i < 2; ++i) {
      const ScopedKernelPath scope(paths[i]);
      ThreadPool pool(2);
      expected[i].resize(size_t(M * N));
      linear(x.data(), M, ref, nullptr, expected[i].data(), pool);
    }
    ASSERT_NE(expected[0], expected[1]) << "the paths must differ in some bit for this test to tell them apart";
    int mismatches[2] = {0, 0};
    auto run = [&](int i) {
      const ScopedKernelPath scope(paths[i]);
      ThreadPool pool(2);
      std::vector<float> y(size_t(M * N));
      for (int rep = 0; rep < 30; ++rep) {
        linear(x.data(), M, ref, nullptr, y.data(), pool);
        if (std::memcmp(y.data(), expected[i].data(), y.size() * sizeof(float)) != 0) ++mismatches[i];
      }
    };
    std::thread a(run, 0), b(run, 1);
    a.join();
    b.join();
    EXPECT_EQ(mismatches[0], 0) << kernel_path_name(paths[0]);
    EXPECT_EQ(mismatches[1], 0) << kernel_path_name(paths[1]);
  }
}

}  // namespace
}  // namespace smolvlm
