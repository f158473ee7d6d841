#include "kernels/team.h"

#include <exception>
#include <thread>

namespace smolvlm {

namespace {

// Thrown in the threads a failed step releases from sync(); run_team swallows it (the failing
// thread's own exception is the one the pool rethrows).
struct TeamFailed {};

// Spins this many times before yielding between checks: a team's threads arrive within microseconds
// of each other, but a machine with fewer cores than threads (tests beside each other, an emulator)
// must let the late thread run.
constexpr int kSpinsBeforeYield = 4096;

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
    if (++spins < kSpinsBeforeYield)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void run_team(ThreadPool& pool, const std::function<void(Team&)>& body) {
  Team::State state(pool.size());
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
