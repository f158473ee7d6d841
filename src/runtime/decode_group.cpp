#include "runtime/decode_group.h"

#include <algorithm>
#include <functional>

#include "runtime/session.h"

namespace smolvlm {

void DecodeGroup::decode(Session& session, int64_t token) {
  std::unique_lock lock(mutex_);
  decoding_.insert(&session);
  Step mine{&session, token, false, nullptr};
  pending_.push_back(&mine);
  // No one is woken: an arrival that completes the group runs the step itself (below), and one that
  // does not changes no other waiter's condition. Waking them all at every arrival cost 2 futile
  // wake-ups a step (8 a step with 4 streams against 6) and 20% of the time between steps.
  const auto arrival = std::chrono::steady_clock::now();
  while (!mine.done) {
    // The wait for the others counts from the end of the last step too: the members it just served
    // are on their way back (sampling, streaming), and stepping without them would split the group
    // into halves that then alternate for good.
    const auto deadline = std::max(arrival, last_step_end_) + max_wait_;
    const bool everyone = pending_.size() >= decoding_.size();
    if (!stepping_ && !pending_.empty() && (everyone || std::chrono::steady_clock::now() >= deadline)) {
      std::vector<Step*> batch;
      batch.swap(pending_);
      // The same member leads every step it is in: its pool's workers are the ones still spinning
      // from the last step (a new pool each step would have to wake its sleeping workers).
      std::sort(batch.begin(), batch.end(), [](const Step* a, const Step* b) { return std::less<>()(a->session, b->session); });
      stepping_ = true;
      lock.unlock();
      std::vector<Session*> sessions;
      std::vector<int64_t> tokens;
      for (Step* s : batch) {
        sessions.push_back(s->session);
        tokens.push_back(s->token);
      }
      std::exception_ptr error;
      try {
        decode_batch(sessions, tokens);  // on the first session's pool: its owner is waiting here too
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      stepping_ = false;
      last_step_end_ = std::chrono::steady_clock::now();
      ++steps_;
      for (Step* s : batch) {
        s->done = true;
        s->error = error;
      }
      changed_.notify_all();
      continue;
    }
    // Only the first member waiting holds the deadline (the earliest: it arrived first); the others
    // sleep until a step ends or one of them completes the group. Every waiter timing its own deadline
    // woke 2.8 of 4 members in the middle of each step (their step had begun without them knowing).
    if (stepping_ || pending_.front() != &mine) changed_.wait(lock);
    else changed_.wait_until(lock, deadline);
  }
  if (mine.error) std::rethrow_exception(mine.error);
}

void DecodeGroup::between_steps(const Session& caller, const std::function<void()>& work, uint64_t& turn) {
  std::unique_lock lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + max_turn_wait;
  // Decoders first: a step since our last call, unless nobody decodes or they are slow to come.
  changed_.wait_until(lock, deadline, [&] { return !stepping_ && (decoding_.size() == decoding_.count(&caller) || steps_ != turn); });
  changed_.wait(lock, [&] { return !stepping_; });
  stepping_ = true;
  lock.unlock();
  std::exception_ptr error;
  try {
    work();
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  stepping_ = false;
  turn = steps_;
  changed_.notify_all();
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

uint64_t DecodeGroup::steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}

void DecodeGroup::leave(const Session& session) {
  std::lock_guard lock(mutex_);
  decoding_.erase(&session);
  changed_.notify_all();
}

}  // namespace smolvlm
