// The key/value rows a decoder forward pass reads and writes: a non-owning view of the buffers of a
// KvCache (runtime/kv_cache.h), which owns them and checks that it fits the model.
#pragma once

#include <cstdint>

namespace smolvlm {

// For layer l, position p, the K row is k + (l·capacity + p)·kv_dim (kv_dim = kv_heads·head_dim),
// the same for V.
struct KvView {
  float* k = nullptr;
  float* v = nullptr;
  int64_t capacity = 0;
};

}  // namespace smolvlm
