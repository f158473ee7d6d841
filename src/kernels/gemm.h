// Matrix products of the models. The weight side is an HF nn.Linear weight as stored: [N, K]
// row-major (out_features x in_features) in its stored format (F32, F16, BF16 or quantized blocks:
// WeightRef); conversion to fp32 happens inside the kernel (the GEMV decodes blocks as it streams
// them, the GEMM while packing), never as a full fp32 copy of the model. Every output element is
// computed with the same summation order whatever the thread count, so results are bitwise
// identical for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "core/dtype.h"
#include "kernels/thread_pool.h"

namespace smolvlm {

// How a weight's values are stored. Dense formats hold one element per value; the quantized ones
// hold small integer codes plus per-block parameters (QuantBlocks; kernels/quant.h has the exact
// dequantization every kernel path computes with).
enum class WeightFormat : uint8_t {
  F32,   // dense fp32
  F16,   // dense IEEE half
  BF16,  // dense bfloat16
  Q8,    // int8 code q per value: value = scale * (q - zero_point)
  Q4,    // 4-bit code q in [0, 15] per value, two per byte: value = scale * q + min
  Lut4,  // 4-bit index q per value, packed as Q4: value = lut[q] of the value's block
};
const char* weight_format_name(WeightFormat f);  // "F32", "F16", "BF16", "Q8", "Q4", "LUT4"; "?" if unknown
bool weight_format_is_quantized(WeightFormat f);
// The dense format of a stored float tensor; Error(Unsupported) naming any other dtype.
WeightFormat dense_weight_format(DType dtype);

// The blocks of a quantized weight. A block is block_rows consecutive rows x group_size consecutive
// columns (along K) sharing one set of parameters; blocks are numbered row-block-major,
//   block(n, k) = (n / block_rows) * ceil(cols / group_size) + k / group_size,
// and each parameter array holds one entry (LUT4: 16 entries) per block in that order. The last
// group of a row is short when group_size does not divide cols, and the last block of rows when
// block_rows does not divide rows. Per-row quantization is group_size = cols, block_rows = 1. The
// 4-bit formats need an even group_size and even cols, so no byte spans two blocks or two rows.
struct QuantBlocks {
  int64_t group_size = 0;                // columns per block
  int64_t block_rows = 1;                // rows per block
  const uint16_t* scales = nullptr;      // Q8, Q4: fp16 scale per block
  const int8_t* zero_points = nullptr;   // Q8: zero point per block (null: symmetric, all 0)
  const uint16_t* mins = nullptr;        // Q4: fp16 value of code 0 per block
  const uint16_t* lut = nullptr;         // Lut4: 16 fp16 values per block, entry q at lut[block * 16 + q]
};

// A weight matrix [rows = N, cols = K], row-major, not owned. `data` holds, by format:
//   F32 / F16 / BF16: rows * cols elements; element (n, k) at n * cols + k.
//   Q8: rows * cols int8 codes in the same order.
//   Q4 / Lut4: rows * cols / 2 bytes (cols even); row n starts at byte n * cols / 2, and code k of
//     the row is the low nibble of byte k / 2 for even k, the high nibble for odd k.
struct WeightRef {
  WeightRef() = default;
  WeightRef(const void* data_, WeightFormat format_, int64_t rows_, int64_t cols_, QuantBlocks quant_ = {})
      : data(data_), format(format_), rows(rows_), cols(cols_), quant(quant_) {}

  const void* data = nullptr;
  WeightFormat format = WeightFormat::F32;
  int64_t rows = 0;   // N (out features)
  int64_t cols = 0;   // K (in features)
  QuantBlocks quant;  // quantized formats only
};

// y[M, N] = x[M, K] · wᵀ (+ bias[N] when non-null). x and y are fp32 row-major with leading
// dimensions K and N. Runs on the pool's task path (ThreadPool::task_kernel_path()).
void linear(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, ThreadPool& pool);

// The arithmetic of w's decode products (few rows of x) on a path under a precision: "avx512-vnni
// int8" where the integer products take it (kernels/gemv_int8.h), else "<path> fp32" (quantized
// weights dequantized exactly).
std::string decode_product_name(const WeightRef& w, KernelPath path, Precision precision);

// The most rows of x for which linear() computes every row exactly as it would for that row alone
// (the streaming path on SIMD kernels; any number on the scalar path). Beyond it the blocked product
// sums in another order: equal within float rounding, not bitwise. On the active kernel path.
int64_t linear_row_exact_max();
// The same on the path and under the precision of the pool's products.
int64_t linear_row_exact_max(const ThreadPool& pool);

// How many chunks, at most `most`, to cut n equal work units into (chunk i: units [n*i/c, n*(i+1)/c))
// so that `threads` threads taking the chunks in order, each the next one when it is free, finish
// soonest; of those, the most chunks (extra tasks per thread balance load on a busy machine). Two
// threads given 18 units in 8 chunks (of 2 and 3) end after 8 and 10 units; in 7 chunks both end
// after 9.
int64_t balanced_chunks(int64_t n, int64_t threads, int64_t most);

// One output of linear_shared_input: y = x · wᵀ (+ bias when non-null).
struct LinearOutput {
  WeightRef w;
  const float* bias = nullptr;
  float* y = nullptr;
};

// linear() for several weights that read the same x (q/k/v, gate/up). For a few rows (decode) all
// outputs are computed in one parallel dispatch; for more, x is packed once for all of them. Every
// element is computed as linear() would.
//
// With rows_done, every output has the same N rows, and rows_done(n0, n1) runs once the columns
// [n0, n1) of every output's rows of y are written, on the thread that wrote them: decode's
// element-wise work on the outputs (SwiGLU's silu(gate) * up) runs split as the products were,
// instead of on one thread while the others wait. Columns [n0, n1) of each row m of y are
// y[m * N + n0 .. m * N + n1). Where the product is not split by columns (many rows of x, the scalar
// path), rows_done(0, N) runs once after it on the calling thread.
void linear_shared_input(const float* x, int64_t M, std::span<const LinearOutput> outputs, ThreadPool& pool,
                         const std::function<void(int64_t, int64_t)>& rows_done = {});

// One thread's share of linear_shared_input(x, M, outputs, pool) for M <= linear_row_exact_max(pool), on
// the calling thread alone (a thread of a team, kernels/team.h): rows [n0, n1) of the outputs' rows
// taken one after the other, or with `columns` (outputs of equal rows) rows [n0, n1) of every output.
// x is rounded on this thread, into its own buffer; every element has the bits linear() gives it.
void linear_shared_input_share(const float* x, int64_t M, std::span<const LinearOutput> outputs,
                               const ThreadPool& pool, int64_t n0, int64_t n1, bool columns = false);

// A 64-byte aligned float array that grows on demand and keeps its memory between uses (packing
// scratch and packed weights). Growing does not keep the contents.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  float* get(size_t count);  // room for at least `count` floats
  const float* data() const { return data_; }

 private:
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

// An fp32 matrix w [rows, cols] already in the layout the active kernels multiply by (the panels
// linear() packs a weight into on every call), for a right-hand side reused by many products:
// attention's keys and values, packed once per call and read by every block of query rows. Repacking
// into the same object reuses its memory.
class PackedWeight {
 public:
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }

  // w[n][k] = src[n * ld + k] (keys: w = K, one row per key).
  void pack(const float* src, int64_t rows, int64_t cols, int64_t ld);
  // w[n][k] = src[k * ld + n] (values: w = Vᵀ, so that y = P · V).
  void pack_transposed(const float* src, int64_t rows, int64_t cols, int64_t ld);

 private:
  friend void linear_packed(const float*, int64_t, int64_t, const PackedWeight&, int64_t, int64_t, float*, int64_t);
  void pack_from(const float* src, int64_t rows, int64_t cols, int64_t ld, bool transposed);

  AlignedBuffer data_;
  int64_t rows_ = 0, cols_ = 0;
  int64_t kc_ = 0, nr_ = 0;  // the kernels' blocking it was packed for (0: plain row-major, scalar path)
};

// y[M, N] (rows ldy floats apart) = x[M, K] (rows ldx floats apart) · w'ᵀ on the calling thread, where
// w' is the leading N x K block of w (N <= w.rows(), K <= w.cols(): a causal block's keys and values
// are a prefix of those packed once for the whole sequence). Each element gets the per-element
// arithmetic of the active path's blocked linear() on w'.
void linear_packed(const float* x, int64_t M, int64_t ldx, const PackedWeight& w, int64_t N, int64_t K, float* y,
                   int64_t ldy);

// The portable reference (plain loops, double-free fp32 accumulation in K order) the fast paths are
// tested against.
void linear_reference(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y);

}  // namespace smolvlm
