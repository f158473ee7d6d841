#include "model/kv_view.h"

#include <cstring>

#include "core/error.h"

namespace smolvlm {

void store_kv_rows(const KvView& kv, int64_t layer, int64_t pos, int64_t rows, int64_t kv_dim, const float* k,
                   const float* v) {
  const int64_t first = (layer * kv.capacity + pos) * kv_dim, n = rows * kv_dim;
  switch (kv.dtype) {
    case DType::F32:
      std::memcpy(static_cast<float*>(kv.k) + first, k, static_cast<size_t>(n) * sizeof(float));
      std::memcpy(static_cast<float*>(kv.v) + first, v, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::BF16:
      round_to_bf16(k, n, static_cast<uint16_t*>(kv.k) + first);
      round_to_bf16(v, n, static_cast<uint16_t*>(kv.v) + first);
      return;
    default: throw internal_error(std::string("KV view of dtype ") + dtype_name(kv.dtype));
  }
}

void read_kv_layer(const KvView& kv, int64_t layer, int64_t kv_dim, AttentionArgs& a) {
  const int64_t first = layer * kv.capacity * kv_dim;
  a.k = a.v = nullptr;
  a.k_bf16 = a.v_bf16 = nullptr;
  switch (kv.dtype) {
    case DType::F32:
      a.k = static_cast<const float*>(kv.k) + first;
      a.v = static_cast<const float*>(kv.v) + first;
      return;
    case DType::BF16:
      a.k_bf16 = static_cast<const uint16_t*>(kv.k) + first;
      a.v_bf16 = static_cast<const uint16_t*>(kv.v) + first;
      return;
    default: throw internal_error(std::string("KV view of dtype ") + dtype_name(kv.dtype));
  }
}

}  // namespace smolvlm
