#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"

namespace smolvlm {

namespace {

// Spins until done() or the spin budget is spent; true when done() became true.
template <typename Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ThreadPool::kSpinNanoseconds);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      if (done()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// The pool whose job the current thread is running: a nested parallel call runs inline instead of
// waiting for workers that are busy with the outer job.
thread_local const ThreadPool* t_running_pool = nullptr;

struct RunningPoolScope {
  const ThreadPool* saved;
  explicit RunningPoolScope(const ThreadPool* p) : saved(t_running_pool) { t_running_pool = p; }
  ~RunningPoolScope() { t_running_pool = saved; }
};

}  // namespace

ThreadPool::ThreadPool(int num_threads, std::optional<KernelPath> path, Precision precision)
    : num_threads_(num_threads), path_(path), precision_(precision) {
  if (num_threads < 1 || num_threads > 1024)
    throw bad_input("thread count " + std::to_string(num_threads) + " is out of range (1..1024)");
  if (precision == Precision::Fast && !path)
    throw unsupported(
        "thread pool: precision fast needs a pool with a kernel path named: avx2, neon, or avx512 on a CPU with "
        "avx512_bf16");
  if (path) require_precision(*path, precision);  // exact: the path runs on this CPU
  for (int i = 1; i < num_threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_job(int index) {
  std::exception_ptr err;
  try {
    RunningPoolScope scope(this);
    const ScopedKernelPath path(job_path_);
    (*job_.load())(index);
  } catch (...) {
    err = std::current_exception();
  }
  if (err) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = err;
    failed_.store(true);  // seen by the caller once pending_ reaches zero below
  }
  // The last worker out wakes the caller if it went to sleep. The caller publishes
  // caller_sleeping_ under mu_ before re-checking pending_, so this cannot miss it.
  if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    done_.notify_one();
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto has_news = [&] { return stop_.load() || generation_.load() != seen; };
    if (!spin_until(has_news)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_workers_.fetch_add(1);
      wake_.wait(lock, has_news);
      sleeping_workers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    run_job(index);
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  const KernelPath path = task_kernel_path();
  const ScopedKernelPath caller_path(path);  // the caller's share runs under the job's path too
  if (num_threads_ == 1 || t_running_pool == this) {
    for (int t = 0; t < num_threads_; ++t) fn(t);
    return;
  }
  std::lock_guard<std::mutex> dispatch(dispatch_mu_);
  job_path_ = path;
  job_.store(&fn);
  pending_.store(num_threads_ - 1);
  generation_.fetch_add(1);
  // A worker that decided to sleep registered in sleeping_workers_ under mu_ before its final check
  // of generation_, so either it sees the new generation or we see it asleep and notify.
  if (sleeping_workers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  std::exception_ptr mine;
  try {
    RunningPoolScope scope(this);
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  auto all_done = [&] { return pending_.load() == 0; };
  if (!spin_until(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    // An exchange, not a store: the check of pending_ below must not be seen before this flag. A
    // seq_cst store then a seq_cst load of another atomic (stlr, ldar on aarch64) is ordered on the
    // hardware, but not under every emulator: under qemu user mode `smolvlm check` once stopped here
    // with both threads asleep, its last worker having read the flag as unset. A read-modify-write is
    // a full barrier everywhere.
    caller_sleeping_.exchange(true);
    done_.wait(lock, all_done);
    caller_sleeping_.store(false);
  }
  job_.store(nullptr);
  std::exception_ptr err;
  if (failed_.load()) {  // a worker failed: take its error so that the next job starts clean
    std::lock_guard<std::mutex> lock(mu_);
    err = error_;
    error_ = nullptr;
    failed_.store(false);
  }
  if (mine) std::rethrow_exception(mine);
  if (err) std::rethrow_exception(err);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, int64_t(num_threads_) * 4);
  if (chunks <= 1 || num_threads_ == 1 || t_running_pool == this) {
    const ScopedKernelPath path(task_kernel_path());
    fn(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  run_on_all([&](int) {
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
      if (b < e) fn(b, e);
    }
  });
}

}  // namespace smolvlm
