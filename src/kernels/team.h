// The threads of one pool call taking a sequence of dependent steps together (a decode token's
// layers): each thread takes its share of a step, then waits in sync() for the others before the next
// step reads what they wrote. A sync is one spin barrier; a pool call per step costs a dispatch and a
// join, and its caller rounds the step's input alone while the other threads wait for it. On the
// 2-vCPU Zen 5 machine, a SmolVLM-256M LUT4 token's products as one call with a barrier between them
// took 1.39-1.48 against 1.70-1.73 ms as 121 pool calls, in the minutes the machine read fastest
// (`decode_gemv_bench --one-call`), and its LUT4 `fast` decode ran 9-10% faster (bench/RESULTS.md).
//
// A step that fails on one thread fails the team: the others leave their next sync() and the pool call
// rethrows the first error (run_team).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "kernels/thread_pool.h"

namespace smolvlm {

class Team {
 public:
  int index() const { return index_; }
  int size() const { return size_; }
  // This thread's part of n items: [first, last), contiguous, in thread order.
  int64_t first(int64_t n) const { return n * index_ / size_; }
  int64_t last(int64_t n) const { return n * (index_ + 1) / size_; }
  // Returns once every thread of the team has called it (as often); what each wrote before is then
  // visible to all.
  void sync();

  // Shared by the threads of one run_team call.
  struct State {
    State(int threads, int spins_before_yield) : threads(threads), spins_before_yield(spins_before_yield) {}
    const int threads;
    const int spins_before_yield;  // a waiting thread's spins before it yields between checks
    alignas(64) std::atomic<int> arrived{0};
    alignas(64) std::atomic<uint64_t> generation{0};
    std::atomic<bool> failed{false};
  };

 private:
  friend void run_team(ThreadPool& pool, const std::function<void(Team&)>& body);
  Team(int index, State& state) : index_(index), size_(state.threads), state_(state) {}
  int index_, size_;
  State& state_;
};

// Calls body(team) on every thread of the pool at once (team.index() = the pool's thread index) and
// returns when all are done; an exception from any body is rethrown here. Within body, the pool's own
// calls run on the calling thread alone (as any call nested in a pool job).
void run_team(ThreadPool& pool, const std::function<void(Team&)>& body);

}  // namespace smolvlm
