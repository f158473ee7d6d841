// A persistent pool of worker threads. Between jobs a worker spins briefly (bounded, with a pause
// instruction) so that back-to-back kernels (decode runs ~200 of them per token) are dispatched in
// about a microsecond, then sleeps on a condition variable: an idle pool costs no CPU on a shared
// machine. Kernels split their work into a partition that does not depend on the thread count, so a
// kernel's result never depends on how many threads ran it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace smolvlm {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads >= 1 (the caller's thread counts as one)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }
  // Calls fn(begin, end) over a partition of [0, n) into chunks of at least `grain` items; blocks
  // until all are done. Exceptions from fn are rethrown on the calling thread.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
  // Calls fn(t) once for each t in [0, size()) (t = thread index); blocks until all are done.
  void run_on_all(const std::function<void(int)>& fn);

  // How long an idle worker (and a caller waiting for workers) spins before sleeping.
  static constexpr int64_t kSpinNanoseconds = 100'000;

 private:
  void worker(int index);
  void run_job(int index);

  int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::atomic<const std::function<void(int)>*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // guarded by mu_
  std::mutex dispatch_mu_;    // one job at a time when several threads share the pool
};

}  // namespace smolvlm
