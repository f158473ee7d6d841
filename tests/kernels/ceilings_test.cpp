// The hardware ceilings `smolvlm bench` reports: each measurement must land where the hardware can be,
// and relate to the others as the hardware does, so a broken timer, a loop the compiler removed or a
// miscounted byte shows. Bounds are wide (a shared, noisy 2-core VM) and each figure is the best of
// many runs, which noise can only lower.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {

// Under AddressSanitizer the measuring loops are instrumented (their registers spill to checked
// stack slots): the figures stay within the hardware's bounds but no longer relate as it does.
// GCC defines __SANITIZE_ADDRESS__; clang 14 reports the sanitizer through __has_feature only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kInstrumented = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kInstrumented = true;
#else
constexpr bool kInstrumented = false;
#endif
#else
constexpr bool kInstrumented = false;
#endif

// No core runs faster than this, nor does more per cycle than the widths below (x86: 2 FMA pipes;
// NEON: 4 pipes of 4 lanes, as Apple M-series and Neoverse V cores have).
constexpr double kMaxGhz = 6.5;
double max_gflops_per_thread(KernelPath p) {
  const double flops_per_cycle = p == KernelPath::Avx512 ? 64 : p == KernelPath::Avx2 || p == KernelPath::Neon ? 32 : 4;
  return flops_per_cycle * kMaxGhz;
}

TEST(Ceilings, FmaPeakIsPlausibleAndTheVectorPathsOutrunScalar) {
  ThreadPool pool(2);
  const double scalar = measure_fma_peak_gflops(KernelPath::Scalar, pool, 0.05);
  for (KernelPath p : kAllKernelPaths) {
    if (!kernel_path_supported(p)) {
      EXPECT_THROW(measure_fma_peak_gflops(p, pool, 0.01), Error) << kernel_path_name(p);
      continue;
    }
    const double g = p == KernelPath::Scalar ? scalar : measure_fma_peak_gflops(p, pool, 0.05);
    EXPECT_TRUE(std::isfinite(g)) << kernel_path_name(p);
    // At least 0.1 GHz's worth of one chain per thread; at most what any core could do.
    EXPECT_GT(g, 0.2) << kernel_path_name(p);
    EXPECT_LT(g, max_gflops_per_thread(p) * pool.size()) << kernel_path_name(p) << ": " << g << " GFLOP/s";
    // 8 fp32 lanes per FMA against the scalar loop's dependent mul+add chains: ~10x on current cores
    // (two 128-bit-pumped pipes still give ~5x); 3x leaves room for a busy neighbour.
    std::printf("FMA peak %-7s %8.1f GFLOP/s on %d threads\n", kernel_path_name(p), g, pool.size());
    if (p != KernelPath::Scalar && !kInstrumented) {
      EXPECT_GT(g, 3 * scalar) << kernel_path_name(p) << " " << g << " vs scalar " << scalar;
    }
  }
}

// Sizes that split unevenly over 3 threads and leave a tail after the 4-wide loop: the read
// measurement checks the sum of every element itself and throws when any was missed or read twice.
TEST(Ceilings, BandwidthsCoverUnevenSlices) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const size_t odd_bytes = (size_t(1) << 20) + 3 * sizeof(uint64_t);
    double read = 0, triad = 0;
    ASSERT_NO_THROW(read = measure_read_gbs(pool, odd_bytes, 0.01)) << threads << " threads";
    ASSERT_NO_THROW(triad = measure_triad_gbs(pool, odd_bytes, 0.01)) << threads << " threads";
    // Between a crawl and 64 bytes per cycle per thread (more than any core's load ports).
    const double max_gbs = 64 * kMaxGhz * threads;
    EXPECT_TRUE(std::isfinite(read) && read > 0.5 && read < max_gbs) << read;
    EXPECT_TRUE(std::isfinite(triad) && triad > 0.5 && triad < max_gbs) << triad;
  }
}

TEST(Ceilings, ReadingFromCacheOutrunsReadingFromMemory) {
  // One thread (no dispatch cost in the timing): 192 KiB stays in any current core's L2; 128 MiB is
  // larger than any last-level cache a 2-core VM sees (96 MiB per CCD at most). L2 serves a core
  // several times faster than DRAM (measured here: ~100 against 16-30 GB/s).
  if (kInstrumented) GTEST_SKIP() << "AddressSanitizer checks every load: the read loop measures the checks";
  ThreadPool pool(1);
  const double cached = measure_read_gbs(pool, size_t(192) << 10, 0.05);
  const double memory = measure_read_gbs(pool, size_t(128) << 20, 0.05);
  const double triad = measure_triad_gbs(pool, size_t(32) << 20, 0.05);
  std::printf("read: %.1f GB/s from L2, %.1f GB/s from memory; triad %.1f GB/s\n", cached, memory, triad);
  EXPECT_GT(cached, 1.25 * memory) << "cached " << cached << " GB/s, memory " << memory << " GB/s";
  EXPECT_LT(cached, 64 * kMaxGhz) << cached;
  EXPECT_GT(memory, 0.5) << memory;
  // Three 32 MiB arrays stream from memory: slower than reading from L2.
  EXPECT_TRUE(triad > 0.5 && triad < cached) << "triad over memory " << triad << " GB/s, cached read " << cached;
}

}  // namespace
}  // namespace smolvlm
