#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "kernels/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"

namespace smolvlm {
namespace {

TEST(Ceilings, FmaPeakIsMeasuredOnEverySupportedPathAndRefusedOnOthers) {
  ThreadPool pool(2);
  for (KernelPath p : {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Avx512}) {
    if (!kernel_path_supported(p)) {
      EXPECT_THROW(measure_fma_peak_gflops(p, pool, 0.01), Error) << kernel_path_name(p);
      continue;
    }
    const double g = measure_fma_peak_gflops(p, pool, 0.01);
    EXPECT_TRUE(std::isfinite(g) && g > 0) << kernel_path_name(p) << ": " << g;
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
    EXPECT_TRUE(std::isfinite(read) && read > 0) << read;
    EXPECT_TRUE(std::isfinite(triad) && triad > 0) << triad;
  }
}

}  // namespace
}  // namespace smolvlm
