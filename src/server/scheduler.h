// Slots and the queue in front of them: each slot owns one engine session (its own KV cache) and
// runs one request at a time; requests beyond the slots wait in a bounded queue, and one that finds
// the queue full is refused at once (the caller answers 503). A job's text streams out through
// `pending` while the slot generates; cancelling a job (client gone, time limit, shutdown) stops it
// at its next token and frees the slot.
#pragma once

#include <smolvlm.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/request.h"

namespace smolvlm::server {

using Clock = std::chrono::steady_clock;

struct Job {
  ParsedRequest request;
  smolvlm_request engine_request{};
  Clock::time_point enqueued{}, deadline = Clock::time_point::max();

  std::mutex mutex;
  std::condition_variable changed;
  // Streamed pieces not yet taken by the writer, one per printable piece the engine gave: each is
  // its own event, however fast the engine runs or however slowly the writer comes back.
  std::deque<std::string> pending;
  bool started = false, done = false;
  bool ran = false;  // the engine ran it (false: cancelled while queued)
  smolvlm_status status = SMOLVLM_OK;
  std::string error;
  api::Result result;
  bool timed_out = false;
  double ttft_s = -1;  // from enqueue to the first piece
  std::vector<uint64_t> signature;  // conversation_signature(engine_request), set by submit()
  std::atomic<bool> cancel{false};

  // Waits up to `wait` for news; moves the oldest pending piece into `out`. True once the job is done
  // and every piece has been taken.
  bool take(std::string& out, std::chrono::milliseconds wait);
};

// Hashes of a request's turns, part by part (role, text or image bytes), in order: a job goes to the
// idle slot whose last conversation shares the longest leading run of them, where the engine's own
// comparison (reuse_prefix) is likely to keep the most KV. Only a routing hint: the engine decides
// what is reused, exactly.
std::vector<uint64_t> conversation_signature(const smolvlm_request& request);

struct SchedulerStats {
  int slots = 0, busy = 0;
  size_t queued = 0;
  uint64_t cancelled = 0;  // jobs that ran and were stopped early (client gone, time limit, shutdown)
};

class Scheduler {
 public:
  // `batch`: the slots' decode steps run together (one pass over the weights for all decoding slots).
  Scheduler(const api::Model& model, int slots, int64_t context, size_t queue_capacity, bool batch = true);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // False when the queue is full (the job is not taken).
  bool submit(const std::shared_ptr<Job>& job);
  SchedulerStats stats() const;
  // Cancels every queued and running job (they finish with what they have).
  void cancel_all();
  // Stops the slot threads after their current job.
  void stop();

 private:
  void run_slot(int index);
  // The idle slot a job should go to (under mutex_): the longest shared signature, then the one
  // idle longest; -1 when none is idle.
  int best_idle_slot(const Job& job) const;

  const size_t queue_capacity_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> running_;
  std::vector<std::vector<uint64_t>> history_;  // per slot: the signature of its last conversation
  std::vector<uint64_t> last_used_;              // per slot: when its last job ended (a counter)
  uint64_t jobs_ended_ = 0;
  uint64_t jobs_cancelled_ = 0;
  bool stopping_ = false;
  struct GroupFree {
    void operator()(smolvlm_decode_group* g) const { smolvlm_decode_group_free(g); }
  };
  std::unique_ptr<smolvlm_decode_group, GroupFree> group_;  // declared before the sessions: freed after them
  std::vector<std::unique_ptr<api::Session>> sessions_;
  std::vector<std::thread> threads_;
};

}  // namespace smolvlm::server
