#include "kernels/team.h"

#include <algorithm>
#include <exception>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace smolvlm {

namespace {

// Thrown in the threads a failed step releases from sync(); run_team swallows it (the failing
// thread's own exception is the one the pool rethrows).
struct TeamFailed {};

// How often a waiting thread spins before it yields between checks. A team's threads arrive within
// microseconds of each other, so they spin; but where the team has more threads than the process has
// CPUs, a waiting thread holds a CPU the late one needs. The 256M LUT4 decode on the 2-vCPU machine
// (bench/RESULTS.md), 2 threads: 1024, 256 and 16 spins ran 0.99, 0.97-1.00 and 0.91 times as fast as
// 4096 (some 80 us); 4 threads on those 2 CPUs: 4096 spins 53 tok/s, 256 274, 16 365 (on a 2-vCPU
// AVX2 machine, 4 threads: 28-31 tok/s with 4096 spins, 95-126 with 16; 2 threads 112-147 either way).
int spins_before_yield(int threads) {
  static const int cpus = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return threads > cpus ? 16 : 4096;
}

}  // namespace

void Team::sync() {
  if (size_ == 1) return;
  const uint64_t generation = state_.generation.load(std::memory_order_acquire);
  if (state_.arrived.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {
    state_.arrived.store(0, std::memory_order_relaxed);
    state_.generation.store(generation + 1, std::memory_order_release);
    return;
  }
  for (int spins = 0; state_.generation.load(std::memory_order_acquire) == generation;) {
    if (state_.failed.load(std::memory_order_relaxed)) throw TeamFailed{};
    if (++spins < state_.spins_before_yield)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void run_team(ThreadPool& pool, const std::function<void(Team&)>& body) {
  Team::State state(pool.size(), spins_before_yield(pool.size()));
  pool.run_on_all([&](int t) {
    Team team(t, state);
    try {
      body(team);
    } catch (const TeamFailed&) {
      return;  // another thread failed; its error is the one to report
    } catch (...) {
      state.failed.store(true, std::memory_order_relaxed);
      throw;
    }
  });
}

}  // namespace smolvlm
