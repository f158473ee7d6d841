// CPU features, detected once, and the kernel path in use. The path is chosen at run time (never at
// build time): the best the CPU supports, or the one forced with SMOLVLM_KERNELS=scalar|avx2|avx512|neon,
// set_kernel_path() (process-wide: tests and `smolvlm check` force every path the machine can run) or
// a ScopedKernelPath (the calling thread only: two models in one process may run different paths).
#pragma once

#include <cstdint>
#include <vector>

// The instruction sets this build has kernel files for (cmake/isa.cmake compiles *_avx2.cpp and
// *_avx512.cpp on x86-64 only): code that calls into those files is compiled only where they are.
#if defined(__x86_64__)
#define SMOLVLM_HAVE_X86_KERNELS 1
#else
#define SMOLVLM_HAVE_X86_KERNELS 0
#endif
// *_neon.cpp: aarch64 only (Advanced SIMD is part of Armv8.0, so no flag and no feature check).
#if defined(__aarch64__)
#define SMOLVLM_HAVE_NEON_KERNELS 1
#else
#define SMOLVLM_HAVE_NEON_KERNELS 0
#endif

namespace smolvlm {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512bf16 = false;
  bool avx512vnni = false;  // vpdpbusd: the integer decode products of Precision::Fast
  bool avxvnni = false;     // vpdpbusd on 256-bit registers (VEX): the avx2 path's integer products
  bool neon = false;        // aarch64 Advanced SIMD (asimd)
  bool dotprod = false;     // aarch64 sdot (Armv8.2 dotprod): the neon path's integer products
  bool amd = false;   // x86: AuthenticAMD
  int family = 0;     // x86: cpuid's display family (0x19 Zen 3/4, 0x1A Zen 5)
  // Whether the one-row dense decode products request the weight rows ahead in software (gemv_range).
  // Off on Zen 5: there a 2-thread HY-MT1.5-1.8B BF16 token's linears took 86-104 ms median without
  // the requests against 111-124 ms with them, and the 256M token's 5.6-7.2 against 8.5-9.7 ms. Off
  // on Zen 3 (family 0x19 without AVX-512; Zen 4 is 0x19 with it): HY-MT's BF16 decode 6.42-7.42
  // against 5.84-6.36 tok/s, the 256M model's 80.5-93.0 against 65.9-79.4 (3 alternated rounds each,
  // bench/RESULTS.md). On the machines before (Zen 4 among them), they measured 7-10% faster with.
  bool dense_row_requests() const { return !(amd && (family >= 0x1A || (family == 0x19 && !avx512f))); }
  // Whether the avx512 one-row decode products read each thread's rows as four streams side by side
  // (gemv_far512, the wide quantized rows of gemv_quant_range, the integer products' row_streams)
  // instead of one: where the prefetchers run alone, on Zen 5, measured faster (bench/RESULTS.md);
  // elsewhere not measured.
  bool decode_row_streams() const { return amd && family >= 0x1A; }
  // Whether the 256-bit one-row decode products (the avx2 path's dense ones, gemm_simd.h's gemv_range;
  // the integer ones, gemv_int8_256.h: avx2, avx-vnni) read each thread's rows as four streams side
  // by side. On Zen 3 (AVX2 only, 2 threads, alternated): HY-MT1.5-1.8B's q8 linears' best step 52-59
  // against 74-107 ms, its q8 decode faster in 3 of 4 rounds; the 256M model's LUT4 `fast` decode
  // 118-150 against 107-121 tok/s; BF16 decode steps 15-17% shorter on both models (medians of
  // ABBA-alternated steps; bench/RESULTS.md). AMD's; elsewhere not measured, one stream as before.
  bool row_streams_256() const { return amd; }
};
const CpuFeatures& cpu_features();

// How far ahead of each of its four streams a one-row decode product requests its lines, where the
// CPU reads four streams best (CpuFeatures::decode_row_streams; on x86 only): the prefetchers alone let
// the products that compute fastest read slowest from memory. HY-MT1.5-1.8B's linears on Zen 5, 2
// threads, alternated (bench/RESULTS.md): the integer LUT4 products' best step 27-32 ms with no
// requests, 20-25 with 1 KB ahead, 17-20 with 2 KB (once 27), 22-26 with 3-8 KB; BF16 median 60-75
// against 71-139 ms (faster in 5 of 6 rounds); the fp32 LUT4 products median 23-39 against 24-40 ms
// (faster in 5 of 7). A request past a stream's last row reads a line of the next stream's (or past
// the weight's end, where a prefetch is dropped, never a fault).
constexpr int64_t kStreamBytesAhead = 2048;

// Whether the one-row decode products read a thread's rows as one stream or as four side by side: as
// the CPU prefers (the CpuFeatures above), or one way forced process-wide. Every row's bits are the
// same either way, and tests force each.
enum class RowStreams { AsCpuPrefers, One, Four };
void force_row_streams(RowStreams s);
bool read_four_streams(bool cpu_prefers);

enum class KernelPath { Scalar, Avx2, Avx512, Neon };
// Every path there is, in order of preference on its architecture (scalar first).
inline constexpr KernelPath kAllKernelPaths[] = {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Avx512,
                                                 KernelPath::Neon};
const char* kernel_path_name(KernelPath p);          // "scalar", "avx2", "avx512", "neon"
bool kernel_path_supported(KernelPath p);
std::vector<KernelPath> supported_kernel_paths();    // every path this CPU can run, scalar first
KernelPath best_kernel_path();
// The path kernels called on this thread use now: the innermost ScopedKernelPath of the thread, else
// the one set_kernel_path() forced, else SMOLVLM_KERNELS if set (Error(Unsupported) if the CPU cannot
// run it, Error(BadInput) for an unknown name), else the best.
KernelPath active_kernel_path();
void set_kernel_path(KernelPath p);                  // Error(Unsupported) if the CPU cannot run it
void reset_kernel_path();                            // undoes set_kernel_path (back to env / best)

// The arithmetic of the matrix products. Exact: fp32 operands and FMAs, the results HF computes in
// fp32 (for quantized weights, exact to the dequantized model). Fast: the blocked products (prefill and
// vision) take both operands rounded to bf16 (round to nearest even) and the bf16 dot-product
// instruction (VDPBF16PS, fp32 sums), twice the fp32 FMA rate, on the avx512 path, as do the streaming
// products (decode) with BF16 weights there (x rounded to bf16, the weights as stored); those with
// q8/q4/lut4 weights take x rounded to int8 and integer dot products (kernels/gemv_int8.h) on the avx2
// and neon paths, and on the avx512 one where the CPU has avx512_vnni; F32/F16 decode and attention
// stay fp32. Opt-in, its error is measured (README). The
// avx512 path on a CPU with avx512_bf16 has it, and the avx2 and neon paths (integer decode only:
// their prefill and vision stay fp32).
enum class Precision { Exact, Fast };
const char* precision_name(Precision p);  // "exact", "fast"
bool precision_supported(KernelPath path, Precision p);
// Error(Unsupported) naming what is missing unless precision_supported(path, p).
void require_precision(KernelPath path, Precision p);

// The calling thread's kernel path for the object's lifetime, ahead of set_kernel_path() and
// SMOLVLM_KERNELS; scopes nest (the previous one is back when the inner one ends). A ThreadPool runs
// the work a thread submits under that thread's path, so the scope reaches the pool's workers too.
// Error(Unsupported) if the CPU cannot run p.
class ScopedKernelPath {
 public:
  explicit ScopedKernelPath(KernelPath p);
  ~ScopedKernelPath();
  ScopedKernelPath(const ScopedKernelPath&) = delete;
  ScopedKernelPath& operator=(const ScopedKernelPath&) = delete;

 private:
  int previous_;  // the thread's override before this scope (-1: none)
};

// Test hook: while on, the matrix products (linear(), linear_packed()) run deliberately broken
// kernels that return slightly wrong results (as a miscompiled kernel would), so tests can see
// `smolvlm check` catch a bad kernel path. Off unless a test turns it on; read only where the
// products choose their kernels.
void set_kernel_fault_injection(bool on);
bool kernel_fault_injection();

}  // namespace smolvlm
