// Matrix products of the models. The weight side is an HF nn.Linear weight as stored: [N, K]
// row-major (out_features x in_features) in its stored dtype (F32, F16 or BF16); conversion to fp32
// happens inside the kernel, never as a full fp32 copy of the model. Every output element is
// computed with the same summation order whatever the thread count, so results are bitwise
// identical for any --threads.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "kernels/thread_pool.h"

namespace smolvlm {

struct WeightRef {
  const void* data = nullptr;
  DType dtype = DType::F32;  // F32, F16 or BF16
  int64_t rows = 0;          // N (out features)
  int64_t cols = 0;          // K (in features)
};

// y[M, N] = x[M, K] · wᵀ (+ bias[N] when non-null). x and y are fp32 row-major with leading
// dimensions K and N. Uses the active kernel path (kernels/cpu.h).
void linear(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, ThreadPool& pool);

// One output of linear_shared_input: y = x · wᵀ (+ bias when non-null).
struct LinearOutput {
  WeightRef w;
  const float* bias = nullptr;
  float* y = nullptr;
};

// linear() for several weights that read the same x (q/k/v, gate/up). For a few rows (decode) all
// outputs are computed in one parallel dispatch; every element is computed as linear() would.
void linear_shared_input(const float* x, int64_t M, std::span<const LinearOutput> outputs, ThreadPool& pool);

// The portable reference (plain loops, double-free fp32 accumulation in K order) the fast paths are
// tested against.
void linear_reference(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y);

}  // namespace smolvlm
