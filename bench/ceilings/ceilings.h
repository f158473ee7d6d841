// Hardware ceilings measured on the running machine, so benchmarks (and `smolvlm bench`) can report
// kernels as fractions of what the CPU can do: peak fp32 FMA throughput per kernel path, STREAM
// triad memory bandwidth and streaming read bandwidth.
#pragma once

#include <cstddef>

#include "kernels/cpu.h"
#include "kernels/thread_pool.h"

namespace smolvlm {

// Peak fp32 multiply-add throughput in GFLOP/s (2 flops per lane per FMA) with every pool thread
// running independent FMAs held in registers: scalar (mul+add, portable build), AVX2 (ymm FMA) or
// AVX-512 (zmm FMA). Best of a few runs of about `seconds` in total. Error(Unsupported) for a path
// the CPU cannot run.
double measure_fma_peak_gflops(KernelPath path, ThreadPool& pool, double seconds = 0.3);

// The same for the bf16 dot product of Precision::Fast (VDPBF16PS, 4 flops per lane), the ceiling
// of the fast products. Error(Unsupported) without avx512 and avx512_bf16.
double measure_bf16_dot_peak_gflops(ThreadPool& pool, double seconds = 0.3);
// Whether this CPU runs precision fast's bf16 products (an avx512 path with avx512_bf16), the loop
// measure_bf16_dot_peak_gflops times; elsewhere fast is integer decode only and has no such peak.
bool bf16_dot_peak_supported();

// STREAM triad a[i] = b[i] + s*c[i] over three fp32 arrays of `bytes_per_array` bytes each, split
// across the pool's threads; GB/s counting 3 * bytes_per_array per pass (STREAM's convention).
// Best pass within about `seconds`. The arrays should be much larger than the last-level cache.
double measure_triad_gbs(ThreadPool& pool, size_t bytes_per_array = size_t(64) << 20, double seconds = 0.5);

// Streaming read of one `bytes` buffer, each pool thread reading its contiguous share once per pass:
// the access pattern of a decode step, which reads every weight once. The share is read as one
// sequential stream and as four side by side, passes alternated; GB/s of the best pass of either
// within about `seconds`. The buffer should be much larger than the last-level cache.
double measure_read_gbs(ThreadPool& pool, size_t bytes = size_t(256) << 20, double seconds = 0.5);

namespace ceilings_detail {
// Runs `iterations` rounds of independent register FMAs; returns a value that depends on all of them
// (so the loop cannot be removed). flops_per_iteration() tells how many flops one round does.
float fma_loop_avx2(long iterations);
double fma_flops_per_iteration_avx2();
float fma_loop_avx512(long iterations);
double fma_flops_per_iteration_avx512();
float bf16_dot_loop_avx512(long iterations);  // needs avx512_bf16
double bf16_dot_flops_per_iteration_avx512();
float fma_loop_neon(long iterations);
double fma_flops_per_iteration_neon();
}  // namespace ceilings_detail

}  // namespace smolvlm
