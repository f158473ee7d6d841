#include "kernels/gemm.h"

#include <vector>

#include "core/error.h"

namespace smolvlm {

namespace {

// Converts row n of the weight to fp32.
void weight_row(const WeightRef& w, int64_t n, float* out) {
  const int64_t K = w.cols;
  switch (w.dtype) {
    case DType::F32: {
      const float* p = static_cast<const float*>(w.data) + n * K;
      for (int64_t k = 0; k < K; ++k) out[k] = p[k];
      break;
    }
    case DType::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + n * K;
      for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(p[k]);
      break;
    }
    case DType::F16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + n * K;
      for (int64_t k = 0; k < K; ++k) out[k] = f16_to_f32(p[k]);
      break;
    }
    default:
      throw unsupported(std::string("linear: weight dtype ") + dtype_name(w.dtype) + " is not supported");
  }
}

void linear_rows(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
                 int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; ++n) {
    weight_row(w, n, row.data());
    for (int64_t m = 0; m < M; ++m) {
      const float* xm = x + m * K;
      float acc = 0.f;
      for (int64_t k = 0; k < K; ++k) acc += xm[k] * row[k];
      y[m * N + n] = bias ? acc + bias[n] : acc;
    }
  }
}

}  // namespace

void linear_reference(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  linear_rows(x, M, w, bias, y, 0, w.rows);
}

void linear(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, ThreadPool& pool) {
  // Portable path for now: parallel over output features (each y element is one thread's K-order sum).
  pool.parallel_for(w.rows, 16, [&](int64_t n0, int64_t n1) { linear_rows(x, M, w, bias, y, n0, n1); });
}

}  // namespace smolvlm
