#include "kernels/thread_pool.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"

namespace smolvlm {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  if (num_threads < 1 || num_threads > 1024)
    throw bad_input("thread count " + std::to_string(num_threads) + " is out of range (1..1024)");
  for (int i = 1; i < num_threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr err;
    try {
      (*job)(index);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_ = num_threads_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, int64_t(num_threads_) * 4);
  if (chunks <= 1 || num_threads_ == 1) {
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
