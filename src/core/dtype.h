// Element types of stored tensors (safetensors spelling) and conversions to float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace smolvlm {

enum class DType { F32, F16, BF16, F64, I8, U8, I16, I32, I64, BOOL };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "F32", "F16", "BF16", ...
// The types a model's float tensors may be stored in (read as fp32).
inline bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as torch does when casting float32 -> bfloat16.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even

}  // namespace smolvlm
