#include "ceilings/ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu.h"

namespace smolvlm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kScalarChains = 8;

// Portable build: the compiler emits scalar multiplies and adds (no FMA without -mfma). Eight
// separate chains; the empty asm statements keep the compiler from vectorizing them.
float scalar_loop(long iterations) {
  float c0 = 0.000f, c1 = 0.001f, c2 = 0.002f, c3 = 0.003f, c4 = 0.004f, c5 = 0.005f, c6 = 0.006f, c7 = 0.007f;
  const float a = 0.999999f, b = 1e-7f;
  for (long it = 0; it < iterations; ++it) {
    c0 = c0 * a + b;
    c1 = c1 * a + b;
    c2 = c2 * a + b;
    c3 = c3 * a + b;
    c4 = c4 * a + b;
    c5 = c5 * a + b;
    c6 = c6 * a + b;
    c7 = c7 * a + b;
#if defined(__aarch64__)
    __asm__ volatile("" : "+w"(c0), "+w"(c1), "+w"(c2), "+w"(c3), "+w"(c4), "+w"(c5), "+w"(c6), "+w"(c7));
#elif defined(__x86_64__)
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7));
#endif
  }
  return c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7;
}

struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data;
  explicit AlignedFloats(size_t n) {
    data.reset(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)));
    if (!data) throw internal_error("ceilings: cannot allocate " + std::to_string(n * sizeof(float)) + " bytes");
  }
};

// Thread t's share [begin, end) of n elements split evenly over `threads`.
std::pair<size_t, size_t> thread_slice(size_t n, int t, int64_t threads) {
  return {n * size_t(t) / size_t(threads), n * size_t(t + 1) / size_t(threads)};
}

// Runs `pass` on every pool thread again and again for about `seconds` (at least three times) and
// returns the best rate in GB/s for `bytes_per_pass` bytes moved per pass.
template <typename Pass>
double best_pass_gbs(ThreadPool& pool, double bytes_per_pass, double seconds, const Pass& pass) {
  double best = 0;
  const auto start = Clock::now();
  int passes = 0;
  do {
    auto t0 = Clock::now();
    pool.run_on_all(pass);
    best = std::max(best, bytes_per_pass / seconds_since(t0) / 1e9);
    ++passes;
  } while (seconds_since(start) < seconds || passes < 3);
  return best;
}

// The best rate of `loop` on every pool thread at once, in GFLOP/s.
double best_loop_gflops(float (*loop)(long), double flops_per_iteration, ThreadPool& pool, double seconds) {
  // Calibrate on one thread to runs of ~2 ms (short enough to fit in one scheduler slice on a busy
  // machine), then take the best of the timed runs.
  long iterations = 1 << 12;
  for (;;) {
    auto t0 = Clock::now();
    volatile float sink = loop(iterations);
    (void)sink;
    if (seconds_since(t0) > 0.001 || iterations > (1L << 40)) {
      iterations = long(double(iterations) * 0.002 / std::max(seconds_since(t0), 1e-9)) + 1;
      break;
    }
    iterations *= 4;
  }
  double best = 0;
  const auto start = Clock::now();
  do {
    std::atomic<float> sink{0};
    auto t0 = Clock::now();
    pool.run_on_all([&](int) { sink.store(loop(iterations)); });
    const double dt = seconds_since(t0);
    best = std::max(best, flops_per_iteration * double(iterations) * pool.size() / dt / 1e9);
  } while (seconds_since(start) < seconds);
  return best;
}

}  // namespace

double measure_fma_peak_gflops(KernelPath path, ThreadPool& pool, double seconds) {
  if (!kernel_path_supported(path))
    throw unsupported(std::string("FMA peak: this CPU cannot run the ") + kernel_path_name(path) + " path");
  float (*loop)(long) = scalar_loop;
  double flops_per_iteration = kScalarChains * 2;
#if SMOLVLM_HAVE_X86_KERNELS
  if (path == KernelPath::Avx2) {
    loop = ceilings_detail::fma_loop_avx2;
    flops_per_iteration = ceilings_detail::fma_flops_per_iteration_avx2();
  } else if (path == KernelPath::Avx512) {
    loop = ceilings_detail::fma_loop_avx512;
    flops_per_iteration = ceilings_detail::fma_flops_per_iteration_avx512();
  }
#endif
#if SMOLVLM_HAVE_NEON_KERNELS
  if (path == KernelPath::Neon) {
    loop = ceilings_detail::fma_loop_neon;
    flops_per_iteration = ceilings_detail::fma_flops_per_iteration_neon();
  }
#endif
  return best_loop_gflops(loop, flops_per_iteration, pool, seconds);
}

bool bf16_dot_peak_supported() {
#if SMOLVLM_HAVE_X86_KERNELS
  return precision_supported(KernelPath::Avx512, Precision::Fast);
#else
  return false;
#endif
}

double measure_bf16_dot_peak_gflops([[maybe_unused]] ThreadPool& pool, [[maybe_unused]] double seconds) {
#if SMOLVLM_HAVE_X86_KERNELS
  if (bf16_dot_peak_supported())
    return best_loop_gflops(ceilings_detail::bf16_dot_loop_avx512,
                            ceilings_detail::bf16_dot_flops_per_iteration_avx512(), pool, seconds);
#endif
  throw unsupported("bf16 dot-product peak: this CPU has no avx512 path with avx512_bf16");
}

double measure_triad_gbs(ThreadPool& pool, size_t bytes_per_array, double seconds) {
  const size_t n = std::max<size_t>(bytes_per_array / sizeof(float), 1024);
  AlignedFloats a(n), b(n), c(n);
  float* pa = a.data.get();
  float* pb = b.data.get();
  float* pc = c.data.get();
  // First touch by the thread that will stream the slice.
  pool.run_on_all([&](int t) {
    const auto [b0, e0] = thread_slice(n, t, pool.size());
    for (size_t i = b0; i < e0; ++i) {
      pa[i] = 0.f;
      pb[i] = 1.f;
      pc[i] = 2.f;
    }
  });
  const float s = 3.f;
  const double best = best_pass_gbs(pool, 3.0 * double(n * sizeof(float)), seconds, [&](int t) {
    const auto [b0, e0] = thread_slice(n, t, pool.size());
    for (size_t i = b0; i < e0; ++i) pa[i] = pb[i] + s * pc[i];
  });
  if (pa[n / 2] != 7.f) throw internal_error("triad: wrong result");
  return best;
}

namespace {

// The sum of p[b, e) read as `streams` parts side by side (each part front to back, one element of
// each per round, the rest of the longer parts after): one sequential stream when streams is 1.
// Four independent sums per part, so that the loads, not an add chain, set the pace. With `ahead`
// bytes, each part also requests its line that far on (the decode products' four streams on the CPUs
// that read those best: kStreamBytesAhead).
template <int streams>
uint64_t read_streams(const uint64_t* p, size_t b, size_t e, size_t ahead = 0) {
  const size_t n = e - b, part = n / size_t(streams) / 8 * 8;
  uint64_t s[4][4] = {};
  for (size_t i = 0; i < part; i += 4)
    for (int j = 0; j < streams; ++j) {
      const uint64_t* q = p + b + size_t(j) * part + i;
      if (ahead && i % 8 == 0) __builtin_prefetch(reinterpret_cast<const char*>(q) + ahead, 0, 3);
      s[j][0] += q[0];
      s[j][1] += q[1];
      s[j][2] += q[2];
      s[j][3] += q[3];
    }
  uint64_t total = 0;
  for (int j = 0; j < streams; ++j) total += s[j][0] + s[j][1] + s[j][2] + s[j][3];
  for (size_t i = b + size_t(streams) * part; i < e; ++i) total += p[i];
  return total;
}

}  // namespace

double measure_read_gbs(ThreadPool& pool, size_t bytes, double seconds) {
  const size_t n = std::max<size_t>(bytes / sizeof(uint64_t), 1024);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[n]);
  uint64_t* p = buffer.get();
  // Written (not just allocated) by the thread that will read the slice: untouched pages would all
  // map the kernel's one zero page and be read from cache.
  pool.run_on_all([&](int t) {
    const auto [b0, e0] = thread_slice(n, t, pool.size());
    for (size_t i = b0; i < e0; ++i) p[i] = i;
  });
  // Three read kernels, their passes alternated, the best pass of any: each thread's share as one
  // sequential stream, as four streams side by side, and as four streams each requesting its lines
  // kStreamBytesAhead on. On the 2-vCPU Zen 5 VM a probe with 64-byte loads read 58-63 GB/s (median
  // pass) with four streams where one read 55, and the decode products' four streams with their
  // requests read up to 68 GB/s; the ceiling is what the machine can read, not what one access
  // pattern gets.
  const uint64_t want = uint64_t(n) * uint64_t(n - 1) / 2;
  double best = 0;
  for (int kernel : {0, 1, 2, 0, 1, 2}) {
    std::vector<uint64_t> sums(size_t(pool.size()));
    best = std::max(best, best_pass_gbs(pool, double(n * sizeof(uint64_t)), seconds / 6, [&](int t) {
      const auto [b0, e0] = thread_slice(n, t, pool.size());
      sums[size_t(t)] = kernel == 0   ? read_streams<1>(p, b0, e0)
                        : kernel == 1 ? read_streams<4>(p, b0, e0)
                                      : read_streams<4>(p, b0, e0, size_t(kStreamBytesAhead));
    }));
    uint64_t total = 0;
    for (uint64_t s : sums) total += s;
    if (total != want) throw internal_error("read bandwidth: wrong sum");
  }
  return best;
}

}  // namespace smolvlm
