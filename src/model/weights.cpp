#include "model/weights.h"

#include "core/dtype.h"
#include "core/error.h"

namespace smolvlm {

namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

float element_f32(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return static_cast<const float*>(t.data)[i];
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    default: throw internal_error("element_f32: " + t.name + " is not a float tensor");
  }
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const TensorView& expect_tensor(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView& t = ckpt.tensor(name);
  if (t.shape != shape)
    throw bad_input(t.file + ": tensor " + name + " has shape " + shape_string(t.shape) + ", expected " +
                    shape_string(shape));
  if (!is_float(t.dtype))
    throw unsupported(t.file + ": tensor " + name + " has dtype " + dtype_name(t.dtype) +
                      ", expected F32, F16 or BF16");
  return t;
}

WeightRef matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = expect_tensor(ckpt, name, {rows, cols});
  return WeightRef{t.data, dense_weight_format(t.dtype), rows, cols};
}

std::vector<float> vector_f32(const Checkpoint& ckpt, const std::string& name, int64_t n) {
  const TensorView& t = expect_tensor(ckpt, name, {n});
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = element_f32(t, i);
  return v;
}

void gather_rows_f32(const TensorView& table, const int64_t* rows, int64_t n, float* out) {
  const int64_t N = table.dim(0), cols = table.dim(1);
  for (int64_t i = 0; i < n; ++i) {
    if (rows[i] < 0 || rows[i] >= N)
      throw bad_input("token id " + std::to_string(rows[i]) + " is outside the vocabulary of " + table.name +
                      " (0.." + std::to_string(N - 1) + ")");
    const int64_t base = rows[i] * cols;
    for (int64_t c = 0; c < cols; ++c) out[i * cols + c] = element_f32(table, base + c);
  }
}

}  // namespace smolvlm
