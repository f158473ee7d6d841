// The instruction-set-specific pieces of linear(), behind plain function pointers so that the
// portable driver (gemm.cpp: threading, blocking, scratch memory) is shared by every path and no
// template or standard-library code is instantiated inside the ISA-specific translation units.
//
// Blocking: the weight is packed KC x (NR-wide panels) at a time (converted to fp32 there); the micro
// kernel multiplies MR rows of x by one packed panel. K is always cut at multiples of kc, and every
// output element is summed as acc(block 0) then y += acc(block b) in block order, whatever the tile,
// thread or chunk it lands in, so results are bitwise identical for any thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/gemv_int8.h"

namespace smolvlm::gemm {

struct GemmKernels {
  const char* name;
  int mr;            // rows of x per micro tile
  int nr;            // output features per packed panel
  int kc;            // K block (fixed: part of the summation order)
  int gemv_max_m;    // M <= this takes the streaming (no packing) path

  // Packs weight rows [n0, n0 + panels*nr) x columns [k0, k0 + kc) as fp32 panels:
  // dst[p*kc*nr + k*nr + j] = w[n0 + p*nr + j][k0 + k]; rows >= w.rows are zero.
  void (*pack_b)(const WeightRef& w, int64_t n0, int64_t panels, int64_t k0, int64_t kc, float* dst);

  // Packs one MR-row tile of x: rows [0, rows) x columns [0, kc) (leading dimension ldx) as
  // dst[k*mr + r]; rows >= `rows` are zero. Writes exactly mr*kc floats.
  void (*pack_a)(const float* x, int64_t ldx, int64_t rows, int64_t kc, float* dst);

  // y[0..mc) x [0..n_valid) (leading dimension ldy) = (accumulate ? y : 0) + x·packed_b (+ bias when
  // non-null, added after the sum). packed_a holds ceil(mc/mr) consecutive tiles from pack_a, packed_b
  // ceil(n_valid/nr) panels from pack_b, b_panel_stride floats apart, both for the same K block of which
  // the first kc steps are used (b_panel_stride = kc*nr when the block was packed kc long).
  void (*macro)(const float* packed_a, int64_t mc, const float* packed_b, int64_t b_panel_stride, int64_t n_valid,
                int64_t kc, float* y, int64_t ldy, bool accumulate, const float* bias);

  // Rows [n0, n1) of y for M <= gemv_max_m, reading the weight directly (decode).
  void (*gemv)(const float* x, int64_t M, const WeightRef& w, const float* bias, float* y, int64_t n0,
               int64_t n1);
  // What decode_product_name() calls gemv's product of BF16 weights where it rounds x to bf16
  // (Precision::Fast on avx512_bf16); null where BF16 weights take the fp32 product.
  const char* bf16_gemv_name = nullptr;

  // K values per packed 32-bit slot: 1 for fp32 panels; 2 for bf16 pairs (Precision::Fast), where
  // slot s of a packed row holds values 2s (low half) and 2s+1 (high half), an odd K block's last
  // slot padded with zero. A K block of kc values takes ceil(kc / kpack) slots: pack_a writes mr
  // slots per slot index, pack_b nr per panel per slot index, and the panel stride and the tiles of
  // packed x are counted in slots.
  int kpack = 1;
  int64_t slots(int64_t kc) const { return (kc + kpack - 1) / kpack; }

  // Rows [n0, n1) of y for every row of x rounded to int8 (kernels/gemv_int8.h), for the weights
  // int8_gemv_takes(); null where the path has no integer products. Used under Precision::Fast, on
  // the avx512 path only where the CPU has avx512_vnni (int8_needs_vnni).
  void (*gemv_int8)(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0,
                    int64_t n1) = nullptr;
  bool int8_needs_vnni = false;
  const char* int8_name = nullptr;  // what decode_product_name() calls them: "avx2 int8", ...
  // The rounding of x for them: the path's own where it has one (round_int8_row_reference's bits).
  RoundInt8Row round_int8_row = round_int8_row_reference;
};

// Throws Error(Unsupported) naming a format the kernels cannot read (defined in the portable
// gemm.cpp: the ISA files instantiate no standard-library code).
[[noreturn]] void refuse_weight_format(WeightFormat format);

// Pieces every kernel file shares. Internal linkage, so each ISA file compiles its own copy: an
// out-of-line copy one file emits must never be the one the linker hands a file for another CPU.
namespace {

// Code k of a 4-bit row (kernels/quant.h: the low nibble of byte k / 2 for even k, the high for odd).
inline uint8_t code4(const uint8_t* row, int64_t k) { return (k & 1) ? row[k >> 1] >> 4 : row[k >> 1] & 0x0f; }

// Calls fn.template operator()<FMT>() for a quantized format.
template <typename Fn>
inline void with_quant_format(WeightFormat format, Fn&& fn) {
  switch (format) {
    case WeightFormat::Q8: fn.template operator()<WeightFormat::Q8>(); return;
    case WeightFormat::Q4: fn.template operator()<WeightFormat::Q4>(); return;
    case WeightFormat::Lut4: fn.template operator()<WeightFormat::Lut4>(); return;
    default: break;
  }
  refuse_weight_format(format);
}

}  // namespace

const GemmKernels& gemm_kernels_avx2();
const GemmKernels& gemm_kernels_avx512();
// The avx512 kernels with bf16 blocked products (Precision::Fast; needs avx512_bf16): the same
// blocking and the same fp32 streaming GEMV.
const GemmKernels& gemm_kernels_avx512_bf16();
const GemmKernels& gemm_kernels_neon();

// The integer decode products (kernels/gemv_int8.h), each giving the scalar reference's bits: on
// AVX-512 VNNI (gemv_int8_avx512.cpp), AVX2 and AVX-VNNI (gemv_int8_avx2.cpp, gemv_int8_avxvnni.cpp:
// the avx2 path takes the latter where the CPU has avx_vnni), NEON and NEON with sdot
// (gemv_int8_neon.cpp, gemv_int8_dotprod.cpp: the neon path takes the latter where the CPU has
// dotprod).
using GemvInt8 = void (*)(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0,
                          int64_t n1);
void gemv_int8_avx512(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);
void round_int8_row_avx512(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums);
void gemv_int8_avx2(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);
void round_int8_row_avx2(const float* x, int64_t K, int64_t k_pad, int8_t* q, float* scales, float* sums);
void gemv_int8_avxvnni(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);
void gemv_int8_neon(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);
void gemv_int8_dotprod(const Int8Rows& x, const WeightRef& w, const float* bias, float* y, int64_t n0, int64_t n1);

// Each integer product this CPU can run, for the tests and benches that run every one alone, those of
// a path in order of preference ("avx2", "avx-vnni"; "avx512-vnni"; "neon", "neon-dotprod"): `taken`
// where the path's Precision::Fast table uses it (the best of the path on this CPU), and `max_rows`
// the most rows of x that path's linear() streams through it (0 where not taken).
struct Int8Product {
  const char* name;
  GemvInt8 run;
  KernelPath path;
  bool taken = false;
  int64_t max_rows = 0;
  RoundInt8Row round = round_int8_row_reference;  // how its path rounds x (GemmKernels::round_int8_row)
};
std::vector<Int8Product> int8_products();

}  // namespace smolvlm::gemm
