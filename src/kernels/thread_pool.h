// A persistent pool of worker threads that sleep on a condition variable between jobs (no spinning:
// the machine is shared). Work is split into a fixed partition of the index range, so the result of
// a kernel never depends on how many threads ran it.
#pragma once

#include <condition_variable>
#include <cstdint>
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

 private:
  void worker(int index);
  int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace smolvlm
