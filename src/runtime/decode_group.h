// Sessions whose decode steps run together. Each session keeps its own thread and its own
// generation loop (sampling, stop strings, streaming); when it decodes, it waits for the other
// sessions of the group that are decoding too, and one of them runs all their steps in a single pass
// over the weights (decode_batch, runtime/session.h). The results are bitwise what each session
// would get alone, so grouping never changes an answer; it only changes how often the weights are read.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <span>
#include <vector>

namespace smolvlm {

class Session;

class DecodeGroup {
 public:
  // A session waits at most `max_wait` for members that are decoding but have not yet asked for
  // their next step (one that stopped without leave(), a slow callback), then steps without them.
  explicit DecodeGroup(std::chrono::microseconds max_wait = std::chrono::microseconds(2000)) : max_wait_(max_wait) {}
  DecodeGroup(const DecodeGroup&) = delete;
  DecodeGroup& operator=(const DecodeGroup&) = delete;

  // Session::decode of a member: appends `token` to `session` together with the other members'
  // pending steps. Rethrows what the step threw.
  void decode(Session& session, int64_t token);
  // The session's generation is over: the others stop waiting for it.
  void leave(const Session& session);
  // Runs `work` (a prefill call of `caller`) while no decode step runs, and, when other members are
  // decoding, only after they have stepped since this caller's previous call
  // (`turn`, updated here): a prompt given in bounded calls then alternates with the running
  // streams' steps instead of stalling them, and no two passes compete for the cores. Waits at most
  // `max_turn_wait` for that step (members busy elsewhere), then runs anyway. Rethrows what work threw.
  void between_steps(const Session& caller, const std::function<void()>& work, uint64_t& turn);
  // Decode batches run so far.
  uint64_t steps() const;

 private:
  struct Step {
    Session* session;
    int64_t token;
    bool done = false;
    std::exception_ptr error;
  };
  const std::chrono::microseconds max_wait_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::set<const Session*> decoding_;  // members between their first decode and leave()
  std::vector<Step*> pending_;
  bool stepping_ = false;  // a batch or a prefill call is running (one at a time)
  uint64_t steps_ = 0;     // decode batches run so far
  std::chrono::steady_clock::time_point last_step_end_{};
  static constexpr std::chrono::milliseconds max_turn_wait{200};
};

}  // namespace smolvlm
