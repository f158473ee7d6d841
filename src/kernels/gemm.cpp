#include "kernels/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8.h"
#include "kernels/quant.h"

namespace smolvlm {

namespace {

// Converts the first K elements of row n of the weight to fp32.
void weight_row(const WeightRef& w, int64_t n, int64_t K, float* out) {
  const int64_t row = n * w.cols;
  switch (w.format) {
    case WeightFormat::F32: {
      const float* p = static_cast<const float*>(w.data) + row;
      for (int64_t k = 0; k < K; ++k) out[k] = p[k];
      return;
    }
    case WeightFormat::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + row;
      for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(p[k]);
      return;
    }
    case WeightFormat::F16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + row;
      for (int64_t k = 0; k < K; ++k) out[k] = f16_to_f32(p[k]);
      return;
    }
    case WeightFormat::Q8:
    case WeightFormat::Q4:
    case WeightFormat::Lut4: dequantize_row(w, n, 0, K, out); return;
  }
  gemm::refuse_weight_format(w.format);
}

// Columns [n0, n1) of y (rows ldy floats apart) for x's M rows (ldx floats apart), over the first K
// columns of the weight: each element a plain K-order sum.
void linear_rows(const float* x, int64_t ldx, int64_t M, const WeightRef& w, int64_t K, const float* bias, float* y,
                 int64_t ldy, int64_t n0, int64_t n1) {
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; ++n) {
    weight_row(w, n, K, row.data());
    for (int64_t m = 0; m < M; ++m) {
      const float* xm = x + m * ldx;
      float acc = 0.f;
      for (int64_t k = 0; k < K; ++k) acc += xm[k] * row[k];
      y[m * ldy + n] = bias ? acc + bias[n] : acc;
    }
  }
}

void check_arguments(const float* x, int64_t M, const WeightRef& w, float* y) {
  switch (w.format) {
    case WeightFormat::F32:
    case WeightFormat::F16:
    case WeightFormat::BF16: break;
    case WeightFormat::Q8:
    case WeightFormat::Q4:
    case WeightFormat::Lut4: check_quant_blocks(w); break;
    default: gemm::refuse_weight_format(w.format);
  }
  if (M < 0 || w.rows < 0 || w.cols < 0)
    throw bad_input("linear: negative shape (M=" + std::to_string(M) + ", weight " + std::to_string(w.rows) +
                    "x" + std::to_string(w.cols) + ")");
  if (M > 0 && w.rows > 0 && !y) throw bad_input("linear: null output pointer");
  if (M > 0 && w.rows > 0 && w.cols > 0 && (!x || !w.data)) throw bad_input("linear: null input or weight pointer");
}

thread_local AlignedBuffer t_packed_weight;  // a worker's current weight block
thread_local AlignedBuffer t_packed_input;   // the caller's whole packed x
thread_local AlignedBuffer t_packed_rows;    // x of linear_packed()
thread_local Int8RowsBuffer t_int8_rows;     // the caller's x rounded to int8 (the integer products)

// Whether a streaming product of w runs on integers (kernels/gemv_int8.h): Precision::Fast, kernels
// that have them (the avx512 ones on a CPU with avx512_vnni) and a weight layout they take.
bool takes_int8(const gemm::GemmKernels& kern, Precision precision, const WeightRef& w) {
  return kern.gemv_int8 && precision == Precision::Fast && (!kern.int8_needs_vnni || cpu_features().avx512vnni) &&
         int8_gemv_takes(w);
}
bool takes_int8(const gemm::GemmKernels& kern, const ThreadPool& pool, const WeightRef& w) {
  return takes_int8(kern, pool.precision(), w);
}

// Weight columns packed per block: bounds the packed block (kc x kMaxBlockCols fp32 = 1 MiB) so it
// stays in the outer caches while every row block of x streams past it.
constexpr int64_t kMaxBlockCols = 1024;
constexpr int kRowBlockTiles = 24;  // rows of x per block = mr * this (an L2-sized slice of x)

// Offset of row tile `row` of K block k0 (k0 a multiple of kc, so of kpack), counted in slots.
int64_t packed_tile_offset(const gemm::GemmKernels& kern, int64_t m_pad, int64_t k0, int64_t kc, int64_t row) {
  return k0 / kern.kpack * m_pad + row * kern.slots(kc);
}

// x packed once per call, shared by all tasks: K block kb (columns [kb*kc, ...)) starts at
// kb*kc*m_pad and holds the m_pad/mr row tiles one after the other, each kc_b x mr.
struct PackedInput {
  const float* data;
  int64_t m_pad;
  const float* tile(const gemm::GemmKernels& kern, int64_t k0, int64_t kc, int64_t row) const {
    return data + packed_tile_offset(kern, m_pad, k0, kc, row);
  }
};

// Packs row tiles [t0, t1) of x (rows ldx floats apart) into the PackedInput layout at dst.
void pack_input_tiles(const gemm::GemmKernels& kern, const float* x, int64_t ldx, int64_t M, int64_t K,
                      int64_t m_pad, int64_t t0, int64_t t1, float* dst) {
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t k0 = 0; k0 < K; k0 += kern.kc) {
      const int64_t kc = std::min<int64_t>(kern.kc, K - k0);
      const int64_t row = t * kern.mr;
      kern.pack_a(x + row * ldx + k0, ldx, std::min<int64_t>(kern.mr, M - row), kc,
                  dst + packed_tile_offset(kern, m_pad, k0, kc, row));
    }
}

PackedInput pack_input(const gemm::GemmKernels& kern, const float* x, int64_t M, int64_t K, ThreadPool& pool) {
  const int64_t m_tiles = (M + kern.mr - 1) / kern.mr;
  const int64_t m_pad = m_tiles * kern.mr;
  float* dst = t_packed_input.get(size_t(K * m_pad));
  pool.parallel_for(m_tiles, 8,
                    [&](int64_t t0, int64_t t1) { pack_input_tiles(kern, x, K, M, K, m_pad, t0, t1, dst); });
  return {dst, m_pad};
}

// One task: output rows [m0, m1) x weight panels [p0, p1).
void blocked_task(const gemm::GemmKernels& kern, const PackedInput& a, const WeightRef& w, const float* bias,
                  float* y, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  const int64_t N = w.rows, K = w.cols;
  const int64_t block_panels = std::max<int64_t>(1, kMaxBlockCols / kern.nr);
  const int64_t row_block = int64_t(kern.mr) * kRowBlockTiles;
  float* packed = t_packed_weight.get(size_t(block_panels) * kern.nr * kern.kc);
  for (int64_t jp = p0; jp < p1; jp += block_panels) {
    const int64_t np = std::min(block_panels, p1 - jp);
    const int64_t n_start = jp * kern.nr;
    const int64_t n_valid = std::min(np * kern.nr, N - n_start);
    for (int64_t pc = 0; pc < K; pc += kern.kc) {
      const int64_t kc = std::min<int64_t>(kern.kc, K - pc);
      const bool last = pc + kc >= K;
      kern.pack_b(w, n_start, np, pc, kc, packed);
      for (int64_t ic = m0; ic < m1; ic += row_block) {
        const int64_t mc = std::min(row_block, m1 - ic);
        kern.macro(a.tile(kern, pc, kc, ic), mc, packed, kern.slots(kc) * kern.nr, n_valid, kc,
                   y + ic * N + n_start, N, pc > 0, last && bias ? bias + n_start : nullptr);
      }
    }
  }
}

// y = x·wᵀ (+ bias) for M > gemv_max_m from x already packed.
void linear_blocked(const gemm::GemmKernels& kern, const PackedInput& a, int64_t M, const WeightRef& w,
                    const float* bias, float* y, ThreadPool& pool) {
  // Tasks: a grid of row chunks x panel chunks, at most `want` of them (so that parallel_for runs
  // each as one chunk). Splitting the panels costs nothing extra (packed x is shared): they are cut
  // for the threads to finish together (balanced_chunks). Splitting the rows repacks the weight, so
  // rows are split only to fill up to `want` tasks when there are few panels. A down projection of a
  // 1141-token prefill (1141 x 576 x 1536) had one thread idle for 19-21% of the product with 8
  // chunks of 2 and 3 panels (and the k/v products' 6 panels x 2 row chunks were regrouped into 8
  // uneven chunks); with 7 chunks, which the two threads end together, 4.5-5.3%.
  const int64_t N = w.rows;
  const int64_t n_panels = (N + kern.nr - 1) / kern.nr;
  const int64_t m_tiles = (M + kern.mr - 1) / kern.mr;
  const int64_t want = pool.size() == 1 ? 1 : int64_t(pool.size()) * 4;
  const int64_t n_chunks = balanced_chunks(n_panels, pool.size(), want);
  const int64_t m_chunks = std::max<int64_t>(1, std::min(m_tiles, want / n_chunks));
  pool.parallel_for(n_chunks * m_chunks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t mi = t / n_chunks, ni = t % n_chunks;
      const int64_t m0 = std::min(M, m_tiles * mi / m_chunks * kern.mr);
      const int64_t m1 = std::min(M, m_tiles * (mi + 1) / m_chunks * kern.mr);
      const int64_t p0 = n_panels * ni / n_chunks, p1 = n_panels * (ni + 1) / n_chunks;
      if (m0 < m1 && p0 < p1) blocked_task(kern, a, w, bias, y, m0, m1, p0, p1);
    }
  });
}

// Runs a streaming GEMV over rows [0, n) in one contiguous range per thread. Each range is one
// stream of weight rows with one prefetch ramp; the pool's default of four dynamic chunks per thread
// restarted the ramp (and the 4-bit paths' reordering of x) at every chunk: a decode token's linears
// alone took 18-29% longer on the 2-core AVX-512 machine (bench/RESULTS.md). A row's result does not
// depend on its range.
void gemv_per_thread(ThreadPool& pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t threads = pool.size();
  pool.parallel_for(n, std::max<int64_t>(32, (n + threads - 1) / threads), fn);
}

void linear_simd(const gemm::GemmKernels& kern, const float* x, int64_t M, const WeightRef& w, const float* bias,
                 float* y, ThreadPool& pool) {
  if (M <= kern.gemv_max_m && takes_int8(kern, pool, w)) {
    const Int8Rows xq = t_int8_rows.quantize(x, M, w.cols, kern.round_int8_row);  // once, for every row of w
    gemv_per_thread(pool, w.rows, [&](int64_t n0, int64_t n1) { kern.gemv_int8(xq, w, bias, y, n0, n1); });
    return;
  }
  if (M <= kern.gemv_max_m) {
    gemv_per_thread(pool, w.rows, [&](int64_t n0, int64_t n1) { kern.gemv(x, M, w, bias, y, n0, n1); });
    return;
  }
  linear_blocked(kern, pack_input(kern, x, M, w.cols, pool), M, w, bias, y, pool);
}

// What the products run on one kernel path: the ISA kernels (null on the scalar path, which sums
// each element with `rows`).
struct PathKernels {
  const gemm::GemmKernels* simd;
  void (*rows)(const float* x, int64_t ldx, int64_t M, const WeightRef& w, int64_t K, const float* bias, float* y,
               int64_t ldy, int64_t n0, int64_t n1);
};

// The deliberately broken kernels of set_kernel_fault_injection(): each adds kFault to the first
// element it writes, as a miscompiled kernel might. The hook is read only where a path's kernels are
// chosen (path_kernels), never inside the products.
constexpr float kFault = 1e-3f;

void faulty_rows(const float* x, int64_t ldx, int64_t M, const WeightRef& w, int64_t K, const float* bias, float* y,
                 int64_t ldy, int64_t n0, int64_t n1) {
  linear_rows(x, ldx, M, w, K, bias, y, ldy, n0, n1);
  if (M > 0 && n0 < n1) y[n0] += kFault;
}

template <const gemm::GemmKernels& (*Real)()>
struct FaultyKernels {
  static void macro(const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride,
                    int64_t n_valid, int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias) {
    Real().macro(packed_a, mc, packed_b, b_panel_stride, n_valid, kc, y, ldy, accumulate, bias);
    if (mc > 0 && n_valid > 0) y[0] += kFault;
  }
  static void gemv(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
                   int64_t n1) {
    Real().gemv(x, M, w, bias, y, n0, n1);
    if (M > 0 && n0 < n1) y[n0] += kFault;
  }
  static void gemv_int8(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1) {
    Real().gemv_int8(x, w, bias, y, n0, n1);
    if (x.M > 0 && n0 < n1) y[n0] += kFault;
  }
  // Built on first use, once the real table (another file's static) surely exists.
  static const gemm::GemmKernels* table() {
    static const gemm::GemmKernels t = [] {
      gemm::GemmKernels k = Real();
      k.macro = macro;
      k.gemv = gemv;
      if (k.gemv_int8) k.gemv_int8 = gemv_int8;
      return k;
    }();
    return &t;
  }
};

// The ISA kernels of a path, or their faulty versions. Null for the scalar path and for a path this
// build has no kernel files for (never active: kernel_path_supported() is false for it).
template <const gemm::GemmKernels& (*Real)()>
const gemm::GemmKernels* isa_kernels(bool faulty) {
  return faulty ? FaultyKernels<Real>::table() : &Real();
}

const gemm::GemmKernels* simd_kernels(KernelPath path, [[maybe_unused]] Precision precision,
                                      [[maybe_unused]] bool faulty) {
  switch (path) {
#if SMOLVLM_HAVE_X86_KERNELS
    case KernelPath::Avx2: return isa_kernels<gemm::gemm_kernels_avx2>(faulty);
    case KernelPath::Avx512:
      return precision == Precision::Fast ? isa_kernels<gemm::gemm_kernels_avx512_bf16>(faulty)
                                          : isa_kernels<gemm::gemm_kernels_avx512>(faulty);
#endif
#if SMOLVLM_HAVE_NEON_KERNELS
    case KernelPath::Neon: return isa_kernels<gemm::gemm_kernels_neon>(faulty);
#endif
    default: return nullptr;
  }
}

// The products of a pool (its path and precision: ThreadPool refuses a precision its path lacks) or,
// for attention's packed products (always fp32), of a path.
PathKernels path_kernels(KernelPath path, Precision precision = Precision::Exact) {
  const bool faulty = kernel_fault_injection();
  return {simd_kernels(path, precision, faulty), faulty ? faulty_rows : linear_rows};
}

PathKernels path_kernels(const ThreadPool& pool) { return path_kernels(pool.task_kernel_path(), pool.precision()); }

// linear_row_exact_max on these kernels.
int64_t row_exact_max(const PathKernels& path) {
  return path.simd ? path.simd->gemv_max_m : std::numeric_limits<int64_t>::max();
}

}  // namespace

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32: return "F32";
    case WeightFormat::F16: return "F16";
    case WeightFormat::BF16: return "BF16";
    case WeightFormat::Q8: return "Q8";
    case WeightFormat::Q4: return "Q4";
    case WeightFormat::Lut4: return "LUT4";
  }
  return "?";
}

bool weight_format_is_quantized(WeightFormat f) {
  return f == WeightFormat::Q8 || f == WeightFormat::Q4 || f == WeightFormat::Lut4;
}

WeightFormat dense_weight_format(DType dtype) {
  switch (dtype) {
    case DType::F32: return WeightFormat::F32;
    case DType::F16: return WeightFormat::F16;
    case DType::BF16: return WeightFormat::BF16;
    default:
      throw unsupported(std::string("weight dtype ") + dtype_name(dtype) +
                        " has no weight format (expected F32, F16 or BF16)");
  }
}

void gemm::refuse_weight_format(WeightFormat format) {
  if (weight_format_is_quantized(format))
    throw unsupported(std::string("linear: no kernel for weight format ") + weight_format_name(format) + " yet");
  throw unsupported("linear: unknown weight format " + std::to_string(static_cast<int>(format)));
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

float* AlignedBuffer::get(size_t count) {
  if (count > capacity_ || !data_) {
    std::free(data_);
    const size_t bytes = (std::max<size_t>(count, 1) * sizeof(float) + 63) / 64 * 64;
    data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    capacity_ = data_ ? count : 0;
    if (!data_) throw internal_error("cannot allocate " + std::to_string(bytes) + " bytes of packing scratch");
  }
  return data_;
}

namespace {

// The layout of the kernels' pack_b, one K block after the other: block k0 starts at k0 * n_pad
// and holds n_pad / nr panels of kc_b x nr (element (n, k) at (n % nr) + k * nr of its panel); rows
// past `rows` are zero. Without SIMD kernels, plain row-major.
struct PanelLayout {
  const gemm::GemmKernels* kern;
  int64_t rows, cols, n_pad;
  PanelLayout(const gemm::GemmKernels* k, int64_t r, int64_t c)
      : kern(k), rows(r), cols(c), n_pad(k ? (r + k->nr - 1) / k->nr * k->nr : r) {}
  size_t size() const { return size_t(n_pad * cols); }
};

// w[n][k] = src[n * ld + k]: the kernels' own weight packing, reading columns [0, cols) of an
// [rows, ld] fp32 matrix.
void pack_rows(const PanelLayout& l, const float* src, int64_t ld, float* dst) {
  if (!l.kern) {
    for (int64_t n = 0; n < l.rows; ++n) std::copy_n(src + n * ld, l.cols, dst + n * l.cols);
    return;
  }
  const WeightRef w{src, WeightFormat::F32, l.rows, ld};
  for (int64_t k0 = 0; k0 < l.cols; k0 += l.kern->kc)
    l.kern->pack_b(w, 0, l.n_pad / l.kern->nr, k0, std::min<int64_t>(l.kern->kc, l.cols - k0), dst + k0 * l.n_pad);
}

// w[n][k] = src[k * ld + n]: each row of src is one k, copied into every panel in nr-wide runs.
void pack_columns(const PanelLayout& l, const float* src, int64_t ld, float* dst) {
  if (!l.kern) {
    for (int64_t n = 0; n < l.rows; ++n)
      for (int64_t k = 0; k < l.cols; ++k) dst[n * l.cols + k] = src[k * ld + n];
    return;
  }
  const int64_t nr = l.kern->nr;
  for (int64_t k0 = 0; k0 < l.cols; k0 += l.kern->kc) {
    const int64_t kc = std::min<int64_t>(l.kern->kc, l.cols - k0);
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = src + (k0 + k) * ld;
      for (int64_t n0 = 0; n0 < l.n_pad; n0 += nr) {
        float* d = dst + k0 * l.n_pad + n0 * kc + k * nr;
        const int64_t valid = std::min(nr, l.rows - n0);
        if (valid == nr) {  // a plain loop the compiler vectorizes; a copy call per 16 floats cost more
          for (int64_t j = 0; j < nr; ++j) d[j] = s[n0 + j];
          continue;
        }
        for (int64_t j = 0; j < nr; ++j) d[j] = j < valid ? s[n0 + j] : 0.f;
      }
    }
  }
}

void check_pack(const float* src, int64_t rows, int64_t cols, int64_t ld, int64_t ld_min) {
  if (rows < 0 || cols < 0 || ld < ld_min || (rows > 0 && cols > 0 && !src))
    throw bad_input("PackedWeight: bad matrix (" + std::to_string(rows) + "x" + std::to_string(cols) +
                    ", leading dimension " + std::to_string(ld) + ")");
}

}  // namespace

void PackedWeight::pack(const float* src, int64_t rows, int64_t cols, int64_t ld) {
  pack_from(src, rows, cols, ld, false);
}

void PackedWeight::pack_transposed(const float* src, int64_t rows, int64_t cols, int64_t ld) {
  pack_from(src, rows, cols, ld, true);
}

void PackedWeight::pack_from(const float* src, int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  check_pack(src, rows, cols, ld, transposed ? rows : cols);
  const gemm::GemmKernels* kern = path_kernels(active_kernel_path()).simd;
  const PanelLayout layout(kern, rows, cols);
  float* dst = data_.get(layout.size());
  if (transposed)
    pack_columns(layout, src, ld, dst);
  else
    pack_rows(layout, src, ld, dst);
  rows_ = rows, cols_ = cols, kc_ = kern ? kern->kc : 0, nr_ = kern ? kern->nr : 0;
}

void linear_packed(const float* x, int64_t M, int64_t ldx, const PackedWeight& w, int64_t N, int64_t K, float* y,
                   int64_t ldy) {
  if (M < 0 || N < 0 || K < 0 || N > w.rows_ || K > w.cols_ || ldx < K || ldy < N ||
      (M > 0 && N > 0 && (!y || (K > 0 && !x))))
    throw bad_input("linear_packed: bad operands (M " + std::to_string(M) + ", N " + std::to_string(N) + " of " +
                    std::to_string(w.rows_) + ", K " + std::to_string(K) + " of " + std::to_string(w.cols_) +
                    ", ldx " + std::to_string(ldx) + ", ldy " + std::to_string(ldy) + ")");
  if (M == 0 || N == 0) return;
  const PathKernels path = path_kernels(active_kernel_path());
  const gemm::GemmKernels* kern = path.simd;
  if ((kern ? kern->kc : 0) != w.kc_ || (kern ? kern->nr : 0) != w.nr_)
    throw state_error("linear_packed: the weight was packed for another kernel path");
  if (K == 0 || !kern) {  // scalar path: the weight is plain row-major
    path.rows(x, ldx, M, WeightRef{w.data_.data(), WeightFormat::F32, w.rows_, w.cols_}, K, nullptr, y, ldy, 0, N);
    return;
  }
  const int64_t m_tiles = (M + kern->mr - 1) / kern->mr, m_pad = m_tiles * kern->mr;
  const int64_t n_pad = PanelLayout(kern, w.rows_, w.cols_).n_pad;
  float* a = t_packed_rows.get(size_t(K * m_pad));
  pack_input_tiles(*kern, x, ldx, M, K, m_pad, 0, m_tiles, a);
  const PackedInput packed{a, m_pad};
  const int64_t row_block = int64_t(kern->mr) * kRowBlockTiles;
  for (int64_t k0 = 0; k0 < K; k0 += kern->kc) {
    // The K blocks of the packing; a K < cols may stop inside one, whose panels keep their stride.
    const int64_t kc = std::min<int64_t>(kern->kc, K - k0);
    const int64_t panel_stride = std::min<int64_t>(kern->kc, w.cols_ - k0) * kern->nr;
    for (int64_t ic = 0; ic < M; ic += row_block)
      kern->macro(packed.tile(*kern, k0, kc, ic), std::min(row_block, M - ic), w.data_.data() + k0 * n_pad,
                  panel_stride, N, kc, y + ic * ldy, ldy, k0 > 0, nullptr);
  }
}

void linear_reference(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y) {
  check_arguments(x, M, w, y);
  linear_rows(x, w.cols, M, w, w.cols, bias, y, w.rows, 0, w.rows);
}

void linear_shared_input(const float* x, int64_t M, std::span<const LinearOutput> outputs, ThreadPool& pool,
                         const std::function<void(int64_t, int64_t)>& rows_done) {
  const gemm::GemmKernels* kern = path_kernels(pool).simd;
  int64_t total = 0;
  for (const LinearOutput& o : outputs) {
    check_arguments(x, M, o.w, o.y);
    if (o.w.cols != outputs[0].w.cols)
      throw bad_input("linear_shared_input: weights read inputs of different widths (" +
                      std::to_string(o.w.cols) + " and " + std::to_string(outputs[0].w.cols) + ")");
    if (rows_done && o.w.rows != outputs[0].w.rows)
      throw bad_input("linear_shared_input: outputs of " + std::to_string(o.w.rows) + " and " +
                      std::to_string(outputs[0].w.rows) + " rows cannot be finished column by column");
    total += o.w.rows;
  }
  const int64_t N = outputs.empty() ? 0 : outputs[0].w.rows;
  const auto finish_all = [&] {
    if (rows_done && N > 0) rows_done(0, N);
  };
  if (!kern || M == 0 || outputs.empty() || outputs[0].w.cols == 0) {
    for (const LinearOutput& o : outputs) linear(x, M, o.w, o.bias, o.y, pool);
    return finish_all();
  }
  if (M > kern->gemv_max_m) {  // x packed once for all the outputs
    const PackedInput a = pack_input(*kern, x, M, outputs[0].w.cols, pool);
    for (const LinearOutput& o : outputs)
      if (o.w.rows > 0) linear_blocked(*kern, a, M, o.w, o.bias, o.y, pool);
    return finish_all();
  }
  // x rounded to int8 once for all the outputs the integer products take.
  bool any_int8 = false;
  for (const LinearOutput& o : outputs) any_int8 = any_int8 || takes_int8(*kern, pool, o.w);
  const Int8Rows xq = any_int8 ? t_int8_rows.quantize(x, M, outputs[0].w.cols, kern->round_int8_row) : Int8Rows{};
  const auto rows = [&](const LinearOutput& o, int64_t b, int64_t e) {
    if (takes_int8(*kern, pool, o.w))
      kern->gemv_int8(xq, o.w, o.bias, o.y, b, e);
    else
      kern->gemv(x, M, o.w, o.bias, o.y, b, e);
  };
  if (rows_done) {  // each thread: the same columns of every output, then rows_done on them
    gemv_per_thread(pool, N, [&](int64_t n0, int64_t n1) {
      for (const LinearOutput& o : outputs) rows(o, n0, n1);
      rows_done(n0, n1);
    });
    return;
  }
  // Rows [0, total) run over the outputs' rows one after the other.
  gemv_per_thread(pool, total, [&](int64_t r0, int64_t r1) {
    int64_t base = 0;
    for (const LinearOutput& o : outputs) {
      const int64_t b = std::max(r0, base) - base, e = std::min(r1, base + o.w.rows) - base;
      if (b < e) rows(o, b, e);
      base += o.w.rows;
    }
  });
}

void linear_shared_input_share(const float* x, int64_t M, std::span<const LinearOutput> outputs,
                               const ThreadPool& pool, int64_t n0, int64_t n1, bool columns) {
  int64_t total = 0;
  for (const LinearOutput& o : outputs) {
    check_arguments(x, M, o.w, o.y);
    if (o.w.cols != outputs[0].w.cols || (columns && o.w.rows != outputs[0].w.rows))
      throw bad_input("linear_shared_input_share: outputs of different shapes");
    total += o.w.rows;
  }
  const PathKernels path = path_kernels(pool);
  const gemm::GemmKernels* kern = path.simd;
  const int64_t end = columns ? (outputs.empty() ? 0 : outputs[0].w.rows) : total;
  if (n0 < 0 || n1 > end || n0 > n1 || M > row_exact_max(path))
    throw bad_input("linear_shared_input_share: rows [" + std::to_string(n0) + ", " + std::to_string(n1) + ") of " +
                    std::to_string(end) + " for " + std::to_string(M) + " rows of x");
  if (M == 0 || n0 == n1) return;
  const int64_t K = outputs[0].w.cols;
  bool any_int8 = false;
  for (const LinearOutput& o : outputs) any_int8 = any_int8 || (kern && takes_int8(*kern, pool, o.w));
  const Int8Rows xq = any_int8 && K > 0 ? t_int8_rows.quantize(x, M, K, kern->round_int8_row) : Int8Rows{};
  int64_t base = 0;
  for (const LinearOutput& o : outputs) {
    const int64_t N = o.w.rows;
    const int64_t b = columns ? n0 : std::max(n0, base) - base, e = columns ? n1 : std::min(n1, base + N) - base;
    base += N;
    if (b >= e) continue;
    if (K == 0) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = b; n < e; ++n) o.y[m * N + n] = o.bias ? o.bias[n] : 0.f;
    } else if (!kern) {
      path.rows(x, K, M, o.w, K, o.bias, o.y, N, b, e);
    } else if (takes_int8(*kern, pool, o.w)) {
      kern->gemv_int8(xq, o.w, o.bias, o.y, b, e);
    } else {
      kern->gemv(x, M, o.w, o.bias, o.y, b, e);
    }
  }
}

int64_t balanced_chunks(int64_t n, int64_t threads, int64_t most) {
  int64_t best = 1, best_span = n;
  std::vector<int64_t> free_at(static_cast<size_t>(std::max<int64_t>(threads, 1)), 0);
  for (int64_t c = 1; c <= std::min(n, most); ++c) {
    std::fill(free_at.begin(), free_at.end(), 0);
    for (int64_t i = 0; i < c; ++i) {
      auto t = std::min_element(free_at.begin(), free_at.end());
      *t += n * (i + 1) / c - n * i / c;
    }
    const int64_t span = *std::max_element(free_at.begin(), free_at.end());
    if (span <= best_span) best = c, best_span = span;
  }
  return best;
}

std::string decode_product_name(const WeightRef& w, KernelPath path, Precision precision) {
  const gemm::GemmKernels* kern = path_kernels(path, precision).simd;
  if (kern && takes_int8(*kern, precision, w)) return kern->int8_name;
  if (kern && kern->bf16_gemv_name && w.format == WeightFormat::BF16) return kern->bf16_gemv_name;
  return std::string(kernel_path_name(path)) + " fp32";
}

std::vector<gemm::Int8Product> gemm::int8_products() {
  std::vector<Int8Product> v;
  const auto add = [&v](const char* name, GemvInt8 run, KernelPath path) {
    const GemmKernels* k = precision_supported(path, Precision::Fast) ? simd_kernels(path, Precision::Fast, false)
                                                                      : nullptr;
    const bool taken = k && k->gemv_int8 == run;
    v.push_back({name, run, path, taken, taken ? k->gemv_max_m : 0, k ? k->round_int8_row : round_int8_row_reference});
  };
  [[maybe_unused]] const CpuFeatures& f = cpu_features();
#if SMOLVLM_HAVE_X86_KERNELS
  if (kernel_path_supported(KernelPath::Avx2)) {
    add("avx2", gemv_int8_avx2, KernelPath::Avx2);
    if (f.avxvnni) add("avx-vnni", gemv_int8_avxvnni, KernelPath::Avx2);
  }
  if (precision_supported(KernelPath::Avx512, Precision::Fast) && f.avx512vnni)
    add("avx512-vnni", gemv_int8_avx512, KernelPath::Avx512);
#endif
#if SMOLVLM_HAVE_NEON_KERNELS
  if (kernel_path_supported(KernelPath::Neon)) {
    add("neon", gemv_int8_neon, KernelPath::Neon);
    if (f.dotprod) add("neon-dotprod", gemv_int8_dotprod, KernelPath::Neon);
  }
#endif
  return v;
}

int64_t linear_row_exact_max() { return row_exact_max(path_kernels(active_kernel_path())); }

int64_t linear_row_exact_max(const ThreadPool& pool) { return row_exact_max(path_kernels(pool)); }

void linear(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, ThreadPool& pool) {
  check_arguments(x, M, w, y);
  const int64_t N = w.rows, K = w.cols;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] = bias ? bias[n] : 0.f;
    return;
  }
  const PathKernels path = path_kernels(pool);
  if (path.simd)
    linear_simd(*path.simd, x, M, w, bias, y, pool);
  else  // each y element is one thread's K-order sum, whatever the partition
    pool.parallel_for(N, 16, [&](int64_t n0, int64_t n1) { path.rows(x, K, M, w, K, bias, y, N, n0, n1); });
}

}  // namespace smolvlm
