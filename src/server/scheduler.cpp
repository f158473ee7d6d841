#include "server/scheduler.h"

namespace smolvlm::server {

bool Job::take(std::string& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex);
  changed.wait_for(lock, wait, [&] { return done || !pending.empty(); });
  out += pending;
  pending.clear();
  return done;
}

namespace {

int on_piece(const char* piece, size_t size, void* user) {
  auto* job = static_cast<Job*>(user);
  {
    std::lock_guard lock(job->mutex);
    if (job->ttft_s < 0) job->ttft_s = std::chrono::duration<double>(Clock::now() - job->enqueued).count();
    job->pending.append(piece, size);
  }
  job->changed.notify_all();
  if (Clock::now() >= job->deadline) {
    job->timed_out = true;
    return 0;
  }
  return job->cancel.load() ? 0 : 1;
}

}  // namespace

Scheduler::Scheduler(const api::Model& model, int slots, int64_t context, size_t queue_capacity, bool batch)
    : queue_capacity_(queue_capacity) {
  if (batch && slots > 1) {
    smolvlm_decode_group* g = nullptr;
    api::check(smolvlm_decode_group_create(model.get(), &g));
    group_.reset(g);
  }
  for (int i = 0; i < slots; ++i) {
    sessions_.push_back(std::make_unique<api::Session>(model, context));
    if (group_) api::check(smolvlm_session_set_decode_group(sessions_.back()->get(), group_.get()));
  }
  running_.resize(static_cast<size_t>(slots));
  for (int i = 0; i < slots; ++i) threads_.emplace_back([this, i] { run_slot(i); });
}

Scheduler::~Scheduler() { stop(); }

bool Scheduler::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mutex_);
    size_t idle = 0;  // slots that will take a queued job at once
    for (const auto& j : running_) idle += j == nullptr;
    if (stopping_ || queue_.size() >= queue_capacity_ + idle) return false;
    job->enqueued = Clock::now();
    queue_.push_back(job);
  }
  work_.notify_one();
  return true;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  SchedulerStats s;
  s.slots = static_cast<int>(running_.size());
  for (const auto& j : running_) s.busy += j != nullptr;
  s.queued = queue_.size();
  return s;
}

void Scheduler::cancel_all() {
  std::lock_guard lock(mutex_);
  for (auto& j : queue_) j->cancel = true;
  for (auto& j : running_)
    if (j) j->cancel = true;
}

void Scheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Scheduler::run_slot(int index) {
  api::Session& session = *sessions_[static_cast<size_t>(index)];
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = queue_.front();
      queue_.pop_front();
      running_[static_cast<size_t>(index)] = job;
    }
    {
      std::lock_guard lock(job->mutex);
      job->started = true;
    }
    api::Result result;
    smolvlm_status status = SMOLVLM_OK;
    std::string error;
    const bool run = !job->cancel;
    if (!run) {
      status = SMOLVLM_ERR_STATE;
      error = "cancelled before it started";
    } else {
      job->engine_request.on_piece = on_piece;
      job->engine_request.user_data = job.get();
      status = smolvlm_session_run(session.get(), &job->engine_request, result.out());
      if (status != SMOLVLM_OK) error = smolvlm_last_error();
    }
    {
      std::lock_guard lock(mutex_);
      running_[static_cast<size_t>(index)] = nullptr;
    }
    {
      std::lock_guard lock(job->mutex);
      job->status = status;
      job->ran = run;
      job->error = std::move(error);
      job->result = std::move(result);
      job->done = true;
    }
    job->changed.notify_all();
  }
}

}  // namespace smolvlm::server
