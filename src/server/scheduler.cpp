#include "server/scheduler.h"

#include <cstring>
#include <functional>
#include <string_view>

namespace smolvlm::server {

bool Job::take(std::string& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex);
  changed.wait_for(lock, wait, [&] { return done || !pending.empty(); });
  if (!pending.empty()) {
    out += pending.front();
    pending.pop_front();
  }
  return done && pending.empty();
}

namespace {

int on_piece(const char* piece, size_t size, void* user) {
  auto* job = static_cast<Job*>(user);
  {
    std::lock_guard lock(job->mutex);
    if (job->ttft_s < 0) job->ttft_s = std::chrono::duration<double>(Clock::now() - job->enqueued).count();
    job->pending.emplace_back(piece, size);
  }
  job->changed.notify_all();
  if (Clock::now() >= job->deadline) {
    job->timed_out = true;
    return 0;
  }
  return job->cancel.load() ? 0 : 1;
}

uint64_t mix(uint64_t h, uint64_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

uint64_t hash_bytes(const void* data, size_t size) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), size));
}

uint64_t hash_text(const char* text) { return text ? hash_bytes(text, std::strlen(text)) : 0; }

uint64_t part_hash(smolvlm_role role, smolvlm_part_kind kind, uint64_t content) {
  return mix(mix(static_cast<uint64_t>(role) + 2, static_cast<uint64_t>(kind)), content);
}

// The answer as the next turn of the conversation will repeat it.
uint64_t assistant_part(const smolvlm_result& r) {
  return part_hash(SMOLVLM_ROLE_ASSISTANT, SMOLVLM_PART_TEXT, hash_bytes(r.text ? r.text : "", r.text_size));
}

size_t shared_lead(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::vector<uint64_t> conversation_signature(const smolvlm_request& r) {
  std::vector<uint64_t> out;
  if (r.prompt) out.push_back(mix(1, hash_text(r.prompt)));
  if (r.n_messages > 0 && !r.messages) return out;
  for (size_t i = 0; i < r.n_messages; ++i) {
    const smolvlm_message& m = r.messages[i];
    for (size_t j = 0; j < m.n_parts; ++j) {
      const smolvlm_part& p = m.parts[j];
      uint64_t content = 0;
      if (p.kind == SMOLVLM_PART_TEXT) content = hash_text(p.text);
      else if (p.image.kind == SMOLVLM_IMAGE_PATH) content = hash_text(p.image.path);
      else content = mix(hash_bytes(p.image.data, p.image.size), static_cast<uint64_t>(p.image.width));
      out.push_back(part_hash(m.role, p.kind, content));
    }
  }
  return out;
}

int Scheduler::best_idle_slot(const Job& job) const {
  int best = -1;
  size_t best_shared = 0;
  for (size_t k = 0; k < running_.size(); ++k) {
    if (running_[k]) continue;
    const size_t shared = shared_lead(history_[k], job.signature);
    if (best < 0 || shared > best_shared ||
        (shared == best_shared && last_used_[k] < last_used_[static_cast<size_t>(best)])) {
      best = static_cast<int>(k);
      best_shared = shared;
    }
  }
  return best;
}

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
  history_.resize(static_cast<size_t>(slots));
  last_used_.assign(static_cast<size_t>(slots), 0);
  for (int i = 0; i < slots; ++i) threads_.emplace_back([this, i] { run_slot(i); });
}

Scheduler::~Scheduler() { stop(); }

bool Scheduler::submit(const std::shared_ptr<Job>& job) {
  job->signature = conversation_signature(job->engine_request);
  {
    std::lock_guard lock(mutex_);
    size_t idle = 0;  // slots that will take a queued job at once
    for (const auto& j : running_) idle += j == nullptr;
    if (stopping_ || queue_.size() >= queue_capacity_ + idle) return false;
    job->enqueued = Clock::now();
    queue_.push_back(job);
  }
  work_.notify_all();  // the job's best slot takes it
  return true;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  SchedulerStats s;
  s.slots = static_cast<int>(running_.size());
  for (const auto& j : running_) s.busy += j != nullptr;
  s.queued = queue_.size();
  s.cancelled = jobs_cancelled_;
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
      work_.wait(lock, [&] {
        return queue_.empty() ? stopping_ : (stopping_ || best_idle_slot(*queue_.front()) == index);
      });
      if (queue_.empty()) return;  // stopping, nothing left
      job = queue_.front();
      queue_.pop_front();
      running_[static_cast<size_t>(index)] = job;
    }
    work_.notify_all();  // the next job may belong to another idle slot
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
      last_used_[static_cast<size_t>(index)] = ++jobs_ended_;
      if (run && status == SMOLVLM_OK && result.raw().finish_reason == SMOLVLM_FINISH_CANCELLED) ++jobs_cancelled_;
      // The session now holds this conversation and its answer (or whatever ran of it).
      std::vector<uint64_t>& h = history_[static_cast<size_t>(index)];
      if (run) h = job->signature;
      if (run && status == SMOLVLM_OK) h.push_back(assistant_part(result.raw()));
    }
    work_.notify_all();  // this slot is idle again: it may be a queued job's best
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
