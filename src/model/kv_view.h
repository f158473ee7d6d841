// The key/value rows a decoder forward pass reads and writes: a non-owning view of the buffers of a
// KvCache (runtime/kv_cache.h), which owns them and checks that it fits the model.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/attention.h"

namespace smolvlm {

// For layer l, position p, the K row is k + (l·capacity + p)·kv_dim values (kv_dim =
// kv_heads·head_dim), the same for V. The values are fp32 (dtype F32: the cache holds exactly what
// HF's does) or bf16 bits (BF16: half the bytes for each step's attention to read).
struct KvView {
  DType dtype = DType::F32;
  void* k = nullptr;
  void* v = nullptr;
  int64_t capacity = 0;
};

// Stores `rows` new positions from `pos` on in layer `layer`: k and v are [rows, kv_dim] fp32,
// rounded to bf16 (nearest even) in a BF16 cache.
void store_kv_rows(const KvView& kv, int64_t layer, int64_t pos, int64_t rows, int64_t kv_dim, const float* k,
                   const float* v);

// Points `a`'s keys and values at layer `layer` of the cache (AttentionArgs' fp32 or bf16 form).
void read_kv_layer(const KvView& kv, int64_t layer, int64_t kv_dim, AttentionArgs& a);

}  // namespace smolvlm
