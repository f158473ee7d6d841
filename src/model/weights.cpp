#include "model/weights.h"

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/quant.h"
#include "model/quantized_weights.h"

namespace smolvlm {

namespace {

float element_f32(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return static_cast<const float*>(t.data)[i];
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    default: throw internal_error("element_f32: " + t.name + " is not a float tensor");
  }
}

}  // namespace

const TensorView& bind_tensor(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  if (entry.presence != Presence::Required)
    throw internal_error("tensor " + entry.name + " is not stored for this config");
  const TensorView& t = ckpt.tensor(entry.name);
  if (t.shape != entry.shape)
    throw bad_input(t.file + ": tensor " + entry.name + " has shape " + shape_string(t.shape) + ", expected " +
                    shape_string(entry.shape));
  if (!is_float_dtype(t.dtype))
    throw unsupported(t.file + ": tensor " + entry.name + " has dtype " + dtype_name(t.dtype) +
                      ", expected F32, F16 or BF16");
  return t;
}

WeightRef matrix(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  if (entry.shape.size() != 2) throw internal_error("tensor " + entry.name + " is not a matrix in the spec");
  if (const QuantizedModule* m = quantized_module(ckpt, entry)) return quantized_matrix(ckpt, entry, *m);
  return matrix_view(bind_tensor(ckpt, entry), entry.shape[0], entry.shape[1]);
}

WeightRef matrix_view(const TensorView& t, int64_t rows, int64_t cols) {
  if (rows * cols != t.numel())
    throw internal_error("tensor " + t.name + " of shape " + shape_string(t.shape) + " viewed as [" +
                         std::to_string(rows) + ", " + std::to_string(cols) + "]");
  WeightRef w;
  w.data = t.data;
  w.format = dense_weight_format(t.dtype);
  w.rows = rows;
  w.cols = cols;
  return w;
}

std::vector<float> vector_f32(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  const TensorView& t = bind_tensor(ckpt, entry);
  if (t.shape.size() != 1) throw internal_error("tensor " + entry.name + " is not a vector in the spec");
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = element_f32(t, i);
  return v;
}

std::vector<float> optional_vector_f32(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  return entry.presence == Presence::Absent ? std::vector<float>{} : vector_f32(ckpt, entry);
}

void gather_rows_f32(const TensorView& table, const int64_t* rows, int64_t n, float* out) {
  gather_rows_f32(matrix_view(table, table.dim(0), table.dim(1)), table.name, rows, n, out);
}

void gather_rows_f32(const WeightRef& table, const std::string& name, const int64_t* rows, int64_t n, float* out) {
  const int64_t N = table.rows, cols = table.cols;
  for (int64_t i = 0; i < n; ++i) {
    if (rows[i] < 0 || rows[i] >= N)
      throw bad_input("token id " + std::to_string(rows[i]) + " is outside the vocabulary of " + name + " (0.." +
                      std::to_string(N - 1) + ")");
    float* row = out + i * cols;
    const size_t base = static_cast<size_t>(rows[i] * cols);
    switch (table.format) {
      case WeightFormat::F32:
        for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<const float*>(table.data)[base + c];
        break;
      case WeightFormat::F16:
        for (int64_t c = 0; c < cols; ++c) row[c] = f16_to_f32(static_cast<const uint16_t*>(table.data)[base + c]);
        break;
      case WeightFormat::BF16:
        for (int64_t c = 0; c < cols; ++c) row[c] = bf16_to_f32(static_cast<const uint16_t*>(table.data)[base + c]);
        break;
      case WeightFormat::Q8: case WeightFormat::Q4: case WeightFormat::Lut4:
        dequantize_row(table, rows[i], 0, cols, row);
        break;
      default: throw internal_error("gather_rows_f32: " + name + " has an unknown weight format");
    }
  }
}

}  // namespace smolvlm
