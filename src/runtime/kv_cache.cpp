#include "runtime/kv_cache.h"

#include <algorithm>

#include "core/error.h"
#include "runtime/model.h"

namespace smolvlm {

std::string KvShape::to_string() const {
  return "layers " + std::to_string(layers) + ", kv_heads " + std::to_string(kv_heads) + ", head_dim " +
         std::to_string(head_dim) + ", " + dtype_name(dtype);
}

int64_t KvShape::bytes_per_position() const {
  return 2 * layers * kv_heads * head_dim * static_cast<int64_t>(dtype_size(dtype));
}

KvShape kv_shape_of(const Model& model) {
  const LlamaModel& t = model.text();
  return KvShape{t.layers(), t.kv_heads(), t.head_dim(), DType::F32};
}

int64_t default_context(const Model& model, int64_t max_bytes) {
  const int64_t per_position = kv_shape_of(model).bytes_per_position();
  return std::max<int64_t>(1, std::min(model.text().config().max_position_embeddings, max_bytes / per_position));
}

KvCache::KvCache(uint64_t model_identity, const KvShape& shape, int64_t capacity)
    : identity_(model_identity), shape_(shape), capacity_(capacity) {
  if (shape.dtype != DType::F32)
    throw unsupported(std::string("KV cache dtype ") + dtype_name(shape.dtype) + " (only F32)");
  if (shape.layers <= 0 || shape.kv_heads <= 0 || shape.head_dim <= 0)
    throw bad_input("KV cache shape (" + shape.to_string() + ") must be positive");
  if (capacity < 1) throw bad_input("KV cache capacity must be at least 1 position, got " + std::to_string(capacity));
  const int64_t per_layer_position = shape.kv_heads * shape.head_dim;
  const int64_t limit = (int64_t(1) << 40) / int64_t(sizeof(float));  // 4 TiB of floats: beyond any real use
  if (capacity > limit / (shape.layers * per_layer_position))
    throw bad_input("KV cache capacity " + std::to_string(capacity) + " is too large for shape " + shape.to_string());
  const size_t n = static_cast<size_t>(shape.layers * capacity * per_layer_position);
  k_ = std::make_unique_for_overwrite<float[]>(n);
  v_ = std::make_unique_for_overwrite<float[]>(n);
}

KvCache::KvCache(const Model& model, int64_t capacity) : KvCache(model.identity(), kv_shape_of(model), capacity) {}

}  // namespace smolvlm
