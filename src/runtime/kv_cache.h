// The key/value state of one sequence: KvCache owns the buffers, the model's forward pass reads and
// writes them through a KvView (model/kv_view.h). Its capacity is fixed at creation; it records its
// shape and the identity of the model it was made for, so it is never used with another model or shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "model/kv_view.h"

namespace smolvlm {

class Model;

struct KvShape {
  int64_t layers = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::F32;  // storage type (fp32: the cache holds exactly what HF's does)

  bool operator==(const KvShape&) const = default;
  std::string to_string() const;  // "layers 30, kv_heads 3, head_dim 64, F32"
  int64_t bytes_per_position() const;
};

KvShape kv_shape_of(const Model& model);

// Default capacity: the model's max_position_embeddings, bounded so the cache stays within
// `max_bytes` (default 2 GiB).
int64_t default_context(const Model& model, int64_t max_bytes = int64_t(2) << 30);

class KvCache {
 public:
  // Error(BadInput) when capacity < 1 or the cache would not be addressable; memory is reserved
  // but pages are only touched as positions are written.
  KvCache(uint64_t model_identity, const KvShape& shape, int64_t capacity);
  KvCache(const Model& model, int64_t capacity);
  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  uint64_t model_identity() const { return identity_; }
  const KvShape& shape() const { return shape_; }
  int64_t capacity() const { return capacity_; }
  // The buffers as the model's forward pass takes them.
  KvView view() { return KvView{k_.get(), v_.get(), capacity_}; }

 private:
  uint64_t identity_;
  KvShape shape_;
  int64_t capacity_;
  std::unique_ptr<float[]> k_, v_;
};

}  // namespace smolvlm
