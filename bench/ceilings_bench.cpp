// Machine ceilings the GEMM results are compared with: fp32 FMA peak per kernel path (1 thread and
// SMOLVLM_BENCH_THREADS threads, default 2), STREAM triad bandwidth and streaming read bandwidth, and
// the read of an L2-sized buffer on one thread beside them (how far cache outruns memory: reported
// here, never asserted by a test).
#include <benchmark/benchmark.h>

#include <string>

#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"
#include "bench_threads.h"

namespace {

void bm_fma_peak(benchmark::State& state, smolvlm::KernelPath path, int threads) {
  smolvlm::ThreadPool pool(threads);
  double gflops = 0;
  for (auto _ : state) gflops = smolvlm::measure_fma_peak_gflops(path, pool, 1.0);
  state.counters["GFLOP/s"] = gflops;
}

void bm_triad(benchmark::State& state, int threads) {
  smolvlm::ThreadPool pool(threads);
  double gbs = 0;
  for (auto _ : state) gbs = smolvlm::measure_triad_gbs(pool, size_t(64) << 20, 2.0);
  state.counters["GB/s"] = gbs;
}

void bm_read(benchmark::State& state, int threads) {
  smolvlm::ThreadPool pool(threads);
  double gbs = 0;
  for (auto _ : state) gbs = smolvlm::measure_read_gbs(pool, size_t(256) << 20, 2.0);
  state.counters["GB/s"] = gbs;
}

void bm_read_l2(benchmark::State& state) {
  smolvlm::ThreadPool pool(1);
  double gbs = 0;
  for (auto _ : state) gbs = smolvlm::measure_read_gbs(pool, size_t(192) << 10, 1.0);
  state.counters["GB/s"] = gbs;
}

int register_all() {
  benchmark::RegisterBenchmark("read_l2_192k/threads:1", bm_read_l2)->Iterations(1)->UseRealTime();
  for (int threads : {1, smolvlm::bench::bench_threads()}) {
    const std::string t = "/threads:" + std::to_string(threads);
    for (smolvlm::KernelPath p : smolvlm::supported_kernel_paths())
      benchmark::RegisterBenchmark((std::string("fma_peak/") + smolvlm::kernel_path_name(p) + t).c_str(), bm_fma_peak,
                                   p, threads)
          ->Iterations(1)
          ->UseRealTime();
    benchmark::RegisterBenchmark(("triad" + t).c_str(), bm_triad, threads)->Iterations(1)->UseRealTime();
    benchmark::RegisterBenchmark(("read" + t).c_str(), bm_read, threads)->Iterations(1)->UseRealTime();
    if (threads == smolvlm::bench::bench_threads()) break;
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
