// The hardware ceilings `smolvlm bench` reports: each measurement must be a finite, positive figure no
// larger than any hardware could give, so a broken timer, a loop the compiler removed or a miscounted
// byte shows. No lower bound on a rate and no comparison between two rates is asserted: a loaded
// machine can make any figure small, and how the figures relate (vector against scalar, cache against
// memory) is what bench/ceilings_bench reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {

// No core runs faster than this, nor does more per cycle than the widths below (x86: 2 FMA pipes;
// NEON: 4 pipes of 4 lanes, as Apple M-series and Neoverse V cores have).
constexpr double kMaxGhz = 6.5;
double max_gflops_per_thread(KernelPath p) {
  const double flops_per_cycle = p == KernelPath::Avx512 ? 64 : p == KernelPath::Avx2 || p == KernelPath::Neon ? 32 : 4;
  return flops_per_cycle * kMaxGhz;
}

TEST(Ceilings, FmaPeakIsWithinWhatAnyCoreCanDo) {
  ThreadPool pool(2);
  for (KernelPath p : kAllKernelPaths) {
    if (!kernel_path_supported(p)) {
      EXPECT_THROW(measure_fma_peak_gflops(p, pool, 0.01), Error) << kernel_path_name(p);
      continue;
    }
    const double g = measure_fma_peak_gflops(p, pool, 0.05);
    EXPECT_TRUE(std::isfinite(g) && g > 0) << kernel_path_name(p) << ": " << g;
    EXPECT_LT(g, max_gflops_per_thread(p) * pool.size()) << kernel_path_name(p) << ": " << g << " GFLOP/s";
    std::printf("FMA peak %-7s %8.1f GFLOP/s on %d threads\n", kernel_path_name(p), g, pool.size());
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
    // Positive and below 64 bytes per cycle per thread (more than any core's load ports).
    const double max_gbs = 64 * kMaxGhz * threads;
    EXPECT_TRUE(std::isfinite(read) && read > 0 && read < max_gbs) << read;
    EXPECT_TRUE(std::isfinite(triad) && triad > 0 && triad < max_gbs) << triad;
  }
}

// Each size the bench compares (L2-sized, larger than any last-level cache): a figure within bounds.
TEST(Ceilings, ReadFromCacheAndFromMemoryAreWithinBounds) {
  ThreadPool pool(1);
  for (size_t bytes : {size_t(192) << 10, size_t(128) << 20}) {
    const double gbs = measure_read_gbs(pool, bytes, 0.02);
    EXPECT_TRUE(std::isfinite(gbs) && gbs > 0 && gbs < 64 * kMaxGhz) << bytes << " bytes: " << gbs << " GB/s";
  }
  const double triad = measure_triad_gbs(pool, size_t(32) << 20, 0.02);
  EXPECT_TRUE(std::isfinite(triad) && triad > 0 && triad < 64 * kMaxGhz) << triad;
}

}  // namespace
}  // namespace smolvlm
