// The thread count of the benchmark binaries: SMOLVLM_BENCH_THREADS (default 2, the machine kinds'
// core count), and one pool of that size shared by a binary's benchmarks.
#pragma once

#include <cstdlib>

#include "kernels/thread_pool.h"

namespace smolvlm::bench {

inline int bench_threads() {
  const char* env = std::getenv("SMOLVLM_BENCH_THREADS");
  const int t = env ? std::atoi(env) : 2;
  return t >= 1 ? t : 2;
}

inline ThreadPool& bench_pool() {
  static ThreadPool pool(bench_threads());
  return pool;
}

}  // namespace smolvlm::bench
