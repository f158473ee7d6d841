// One sequence being generated: a KV cache and the position of the next token. prefill() and decode()
// are separate calls sharing this explicit state; every misuse (decode before prefill, a cache from
// another model or shape, writing past capacity, a negative position) is Error(State), never a
// silent overwrite. Two sessions never share buffers; run one call at a time per ThreadPool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernels/thread_pool.h"
#include "model/llama.h"
#include "runtime/kv_cache.h"
#include "runtime/kv_content.h"
#include "runtime/model.h"

namespace smolvlm {

class Session;
class DecodeGroup;
void decode_batch(std::span<Session* const> sessions, std::span<const int64_t> tokens);

class Session {
 public:
  // A fresh cache of `capacity` positions for `model`.
  Session(const Model& model, ThreadPool& pool, int64_t capacity);
  // Adopts an existing cache; Error(State) if it was made for another model or has another shape.
  Session(const Model& model, ThreadPool& pool, KvCache cache);

  const Model& model() const { return model_; }
  int64_t position() const { return position_; }  // tokens in the cache = position of the next one
  int64_t capacity() const { return cache_.capacity(); }
  bool started() const { return position_ > 0; }
  const KvCache& cache() const { return cache_; }
  // What went into the cache at each position (runtime/kv_content.h).
  const KvContent& content() const { return content_; }
  // Logits [vocab] of the last processed position; Error(State) before the first prefill.
  std::span<const float> logits() const;

  // Forgets every token (the cache and buffers are kept for reuse).
  void reset();
  // Keeps only the first `position` tokens (0 <= position <= position()), e.g. to re-run a suffix.
  void truncate(int64_t position);

  // Appends `ids` (or input embeddings [rows, hidden]) and returns the logits of the last one.
  // In a decode group the call runs between the group's decode steps (DecodeGroup::between_steps).
  std::span<const float> prefill(std::span<const int64_t> ids);
  // `content` says what the rows are (content.size() == rows); without it they match nothing later.
  std::span<const float> prefill_embeddings(const float* embeddings, int64_t rows, const KvContent& content);
  std::span<const float> prefill_embeddings(const float* embeddings, int64_t rows);
  // Runs `work` (which uses this session's pool) between the decode group's steps, or at once outside
  // a group: a long computation for this session (an image through the vision tower) in bounded
  // pieces lets the group's other sequences keep decoding.
  void between_steps(const std::function<void()>& work);
  // Appends one generated token; Error(State) before prefill or when the cache is full.
  std::span<const float> decode(int64_t token);

  // Appends tokens[i] to sessions[i] for every i in one pass over the weights (runtime/batch_decode.cpp):
  // each session's logits() are then what decode(tokens[i]) alone would give. The sessions share a
  // model and are distinct; the first one's thread pool runs the step. Checks every session before
  // touching any: on an error none has changed.
  friend void decode_batch(std::span<Session* const> sessions, std::span<const int64_t> tokens);

  // decode() steps together with the other sessions of `group` (runtime/decode_group.h); null: alone.
  // The group outlives the session's membership.
  void set_decode_group(DecodeGroup* group);
  DecodeGroup* decode_group() const { return group_; }

 private:
  void check_room(int64_t rows, const char* what) const;
  void ensure_buffers(int64_t rows);
  std::span<const float> run(int64_t rows);

  const Model& model_;
  ThreadPool& pool_;
  KvCache cache_;
  KvContent content_;
  int64_t position_ = 0;
  std::optional<LlamaModel::Scratch> scratch_;
  std::vector<float> x_;       // input embeddings / residual stream [rows, hidden]
  std::vector<float> logits_;  // [vocab]
  std::vector<float> batch_logits_;  // [rows, vocab] of the batched steps this session leads (kept: no page faults per step)
  DecodeGroup* group_ = nullptr;
  uint64_t group_turn_ = 0;  // the group's step count when this session's last prefill call ended
};

}  // namespace smolvlm
