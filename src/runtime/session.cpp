#include "runtime/session.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "runtime/decode_group.h"

namespace smolvlm {

namespace {

KvCache checked_cache(const Model& model, KvCache cache) {
  if (cache.model_identity() != model.identity())
    throw state_error("KV cache was made for another model (identity " + std::to_string(cache.model_identity()) +
                      ", this model " + std::to_string(model.identity()) + ", " + model.config().dir.string() + ")");
  const KvShape expected = kv_shape_of(model);
  if (!(cache.shape() == expected))
    throw state_error("KV cache shape (" + cache.shape().to_string() + ") does not match the model (" +
                      expected.to_string() + ")");
  check_context_fits(model.text().config(), cache.capacity());
  return cache;
}

}  // namespace

Session::Session(const Model& model, ThreadPool& pool, int64_t capacity)
    : Session(model, pool, KvCache(model, capacity)) {}

Session::Session(const Model& model, ThreadPool& pool, KvCache cache)
    : model_(model), pool_(pool), cache_(checked_cache(model, std::move(cache))) {}

void Session::set_decode_group(DecodeGroup* group) {
  if (group_ && group_ != group) group_->leave(*this);
  group_ = group;
}

std::span<const float> Session::logits() const {
  if (!started()) throw state_error("no logits yet: the session has not been prefilled");
  return logits_;
}

void Session::reset() {
  position_ = 0;
  content_.clear();
}

void Session::truncate(int64_t position) {
  if (position < 0 || position > position_)
    throw state_error("cannot truncate the session to position " + std::to_string(position) + " (it holds " +
                      std::to_string(position_) + " tokens)");
  position_ = position;
  content_.truncate(static_cast<size_t>(position));
  if (position_ == 0) logits_.clear();
}

void Session::check_room(int64_t rows, const char* what) const {
  if (rows <= 0) throw bad_input(std::string(what) + ": nothing to process (0 tokens)");
  if (position_ + rows > cache_.capacity())
    throw state_error(std::string(what) + ": " + std::to_string(rows) + " token(s) at position " +
                      std::to_string(position_) + " do not fit the context of " + std::to_string(cache_.capacity()) +
                      " positions");
}

void Session::ensure_buffers(int64_t rows) {
  // Sized by the longest call so far (the prompt), once; decode steps reuse the same buffers.
  if (!scratch_ || scratch_->max_rows < rows) {
    scratch_.emplace(model_.text(), rows);
    x_.resize(static_cast<size_t>(rows * model_.text().hidden()));
  }
  logits_.resize(static_cast<size_t>(model_.text().vocab()));
}

std::span<const float> Session::run(int64_t rows) {
  model_.text().forward(x_.data(), rows, position_, cache_.view(), *scratch_, pool_, logits_.data());
  position_ += rows;
  return logits_;
}

std::span<const float> Session::prefill(std::span<const int64_t> ids) {
  const int64_t rows = static_cast<int64_t>(ids.size());
  check_room(rows, "prefill");
  auto body = [&] {
    ensure_buffers(rows);
    model_.text().embed(ids.data(), rows, x_.data());
    run(rows);
    content_.append_ids(ids);
  };
  between_steps(body);
  return logits_;
}

std::span<const float> Session::prefill_embeddings(const float* embeddings, int64_t rows, const KvContent& content) {
  check_room(rows, "prefill");
  if (content.size() != static_cast<size_t>(rows))
    throw internal_error("prefill: " + std::to_string(rows) + " rows but a content of " + std::to_string(content.size()));
  auto body = [&] {
    ensure_buffers(rows);
    std::memcpy(x_.data(), embeddings, static_cast<size_t>(rows * model_.text().hidden()) * sizeof(float));
    run(rows);
    content_.append(content, 0, content.size());
  };
  between_steps(body);
  return logits_;
}

std::span<const float> Session::prefill_embeddings(const float* embeddings, int64_t rows) {
  return prefill_embeddings(embeddings, rows, KvContent::opaque(rows));
}

void Session::between_steps(const std::function<void()>& work) {
  if (group_) group_->between_steps(*this, work, group_turn_);
  else work();
}

std::span<const float> Session::decode(int64_t token) {
  if (!started()) throw state_error("decode before prefill: the session holds no prompt");
  check_room(1, "decode");
  if (group_) {
    group_->decode(*this, token);
    return logits_;
  }
  ensure_buffers(1);
  model_.text().embed(&token, 1, x_.data());
  run(1);
  content_.append_ids({&token, 1});
  return logits_;
}

}  // namespace smolvlm
