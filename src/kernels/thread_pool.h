// A persistent pool of worker threads. Between jobs a worker spins briefly (bounded, with a pause
// instruction) so that back-to-back kernels (decode runs ~200 of them per token) are dispatched in
// about a microsecond, then sleeps on a condition variable: an idle pool costs no CPU on a shared
// machine. Kernels split their work into a partition that does not depend on the thread count, so a
// kernel's result never depends on how many threads ran it.
//
// Kernel path: every task runs under the pool's own path when it was given one, else under the path
// of the thread that submitted the work (kernels/cpu.h), on the workers as on the calling thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kernels/cpu.h"

namespace smolvlm {

// One wait of a spinning thread: a pause where the CPU has one, else a yield.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class ThreadPool {
 public:
  // num_threads >= 1 (the caller's thread counts as one). With a path, all the pool's work runs on
  // it whatever the submitting thread's path (Error(Unsupported) if the CPU cannot run it). The
  // matrix products given this pool use its precision; Precision::Fast needs a pool path that has it
  // (precision_supported), else Error(Unsupported).
  explicit ThreadPool(int num_threads, std::optional<KernelPath> path = std::nullopt,
                      Precision precision = Precision::Exact);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }
  std::optional<KernelPath> kernel_path() const { return path_; }
  Precision precision() const { return precision_; }
  // The path work submitted from the calling thread runs under: the pool's, else the caller's active
  // path. Kernels choose their instruction set by it before they split the work.
  KernelPath task_kernel_path() const { return path_ ? *path_ : active_kernel_path(); }
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
  std::optional<KernelPath> path_;
  Precision precision_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::exception_ptr error_;  // guarded by mu_
  std::mutex dispatch_mu_;    // one job at a time when several threads share the pool
  // What a job's dispatch writes and its workers read, in one cache line of its own: a worker that
  // sees the generation move finds the job beside it, and the caller's other state (the mutexes
  // above) is not pulled across cores at every job.
  alignas(64) std::atomic<const std::function<void(int)>*> job_{nullptr};
  KernelPath job_path_ = KernelPath::Scalar;  // the current job's; written before generation_ moves
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};  // a worker stored error_ in this job: the caller then takes mu_
};

}  // namespace smolvlm
