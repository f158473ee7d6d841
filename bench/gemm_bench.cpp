// linear() on the models' shapes, ours (BF16 and F32 weights; on avx512_bf16 also BF16 with
// Precision::Fast) against OpenBLAS cblas_sgemm (F32) in the same run, in GFLOP/s; M <= 4 shapes also report the weight bytes streamed per second, and
// kernel_in_cache measures the GEMM kernel alone against one core's FMA peak.
// Threads: SMOLVLM_BENCH_THREADS (default 2), used by both libraries.
// On a busy machine use repetitions and read the `max` aggregate of GFLOP/s (the best repetition):
//   ./gemm_bench --benchmark_repetitions=10 --benchmark_min_time=0.05 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/thread_pool.h"
#include "bench_threads.h"

#ifdef SMOLVLM_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using smolvlm::DType;

struct Shape {
  int64_t M, N, K;
  const char* what;
};

const Shape kShapes[] = {
    {1024, 768, 768, "vision attn out"},   {1024, 2304, 768, "vision fused qkv"},
    {1024, 3072, 768, "vision mlp up"},    {1024, 768, 3072, "vision mlp down"},
    {1141, 576, 1536, "prefill mlp down"}, {1141, 1536, 576, "prefill mlp up"},
    {1, 576, 1536, "decode mlp down"},     {1, 49280, 576, "decode lm_head"},
};

struct Operands {
  std::vector<float> x, w32, y;
  std::vector<uint16_t> w16;
};

Operands make_operands(const Shape& s, DType dt) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Operands o;
  o.x.resize(size_t(s.M * s.K));
  for (float& v : o.x) v = dist(rng);
  if (dt == DType::F32) {
    o.w32.resize(size_t(s.N * s.K));
    for (float& v : o.w32) v = dist(rng);
  } else {
    o.w16.resize(size_t(s.N * s.K));
    for (uint16_t& v : o.w16) v = smolvlm::f32_to_bf16(dist(rng));
  }
  o.y.resize(size_t(s.M * s.N));
  return o;
}

void set_counters(benchmark::State& state, const Shape& s, double weight_bytes) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(s.M * s.N * s.K) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (s.M <= 4)
    state.counters["weight_GB/s"] =
        benchmark::Counter(double(s.N * s.K) * weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The pool of the fast (bf16) products: the avx512 path with Precision::Fast.
smolvlm::ThreadPool& fast_pool() {
  static smolvlm::ThreadPool pool(smolvlm::bench::bench_threads(), smolvlm::KernelPath::Avx512,
                                  smolvlm::Precision::Fast);
  return pool;
}

void bm_ours(benchmark::State& state, Shape s, DType dt, smolvlm::Precision precision) {
  Operands o = make_operands(s, dt);
  smolvlm::WeightRef w{dt == DType::F32 ? static_cast<const void*>(o.w32.data()) : o.w16.data(),
                       smolvlm::dense_weight_format(dt), s.N, s.K};
  smolvlm::ThreadPool& pool = precision == smolvlm::Precision::Fast ? fast_pool() : smolvlm::bench::bench_pool();
  for (auto _ : state) {
    smolvlm::linear(o.x.data(), s.M, w, nullptr, o.y.data(), pool);
    benchmark::DoNotOptimize(o.y.data());
  }
  set_counters(state, s, dt == DType::F32 ? 4 : 2);
}

#ifdef SMOLVLM_HAVE_OPENBLAS
void bm_openblas(benchmark::State& state, Shape s) {
  Operands o = make_operands(s, DType::F32);
  openblas_set_num_threads(smolvlm::bench::bench_threads());
  for (auto _ : state) {
    // y[M,N] = x[M,K] · w[N,K]ᵀ, as linear() computes it.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.M), int(s.N), int(s.K), 1.f, o.x.data(), int(s.K),
                o.w32.data(), int(s.K), 0.f, o.y.data(), int(s.N));
    benchmark::DoNotOptimize(o.y.data());
  }
  set_counters(state, s, 4);
  // OpenBLAS's workers keep a core busy for about 0.11 s after a call (0.11 s of CPU in the 0.15 s
  // after each cblas_sgemm, measured with a small program against the same library). The timed loop
  // is over: let them go to sleep before the next benchmark, ours, starts on the same cores.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}
#endif

// The kernel alone, on one thread, with every operand in L1/L2: one 144-row block of x (24 micro
// tiles) against 16 prepacked weight panels, K = 256 (one K block), as the big GEMMs run it between
// packings. One core's FMA peak, measured in the same run, is reported beside it.
void bm_kernel_in_cache(benchmark::State& state) {
  const int64_t M = 144, N = 256, K = 256;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(size_t(M * K)), w(size_t(N * K)), y(size_t(M * N));
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  smolvlm::PackedWeight packed;
  packed.pack(w.data(), N, K, K);
  for (auto _ : state) {
    smolvlm::linear_packed(x.data(), M, K, packed, N, K, y.data(), N);
    benchmark::DoNotOptimize(y.data());
  }
  const double gflops = 2.0 * double(M * N * K) * double(state.iterations()) / 1e9;
  state.counters["GFLOP/s"] = benchmark::Counter(gflops, benchmark::Counter::kIsRate);
  smolvlm::ThreadPool one(1);
  state.counters["fma_peak_1_core"] = smolvlm::measure_fma_peak_gflops(smolvlm::active_kernel_path(), one, 0.3);
}

std::string shape_name(const Shape& s) {
  return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void configure(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->ComputeStatistics("max", max_of)->ComputeStatistics("min", min_of);
}

int register_all() {
  const smolvlm::Precision exact = smolvlm::Precision::Exact;
  const bool fast = smolvlm::precision_supported(smolvlm::KernelPath::Avx512, smolvlm::Precision::Fast);
  for (const Shape& s : kShapes) {
    const std::string n = shape_name(s);
    configure(benchmark::RegisterBenchmark(("ours_bf16/" + n).c_str(), bm_ours, s, DType::BF16, exact));
    configure(benchmark::RegisterBenchmark(("ours_f32/" + n).c_str(), bm_ours, s, DType::F32, exact));
    if (fast && s.M > 8)  // fewer rows stream the weights in fp32 in both precisions
      configure(benchmark::RegisterBenchmark(("ours_bf16_fast/" + n).c_str(), bm_ours, s, DType::BF16,
                                             smolvlm::Precision::Fast));
#ifdef SMOLVLM_HAVE_OPENBLAS
    configure(benchmark::RegisterBenchmark(("openblas_f32/" + n).c_str(), bm_openblas, s));
#endif
  }
  configure(benchmark::RegisterBenchmark("kernel_in_cache/144x256x256/threads:1", bm_kernel_in_cache));
  benchmark::AddCustomContext("threads", std::to_string(smolvlm::bench::bench_threads()));
  benchmark::AddCustomContext("smolvlm_kernel_path", smolvlm::kernel_path_name(smolvlm::active_kernel_path()));
#ifdef SMOLVLM_HAVE_OPENBLAS
  benchmark::AddCustomContext("openblas_config", openblas_get_config());
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  benchmark::AddCustomContext("OPENBLAS_CORETYPE", coretype ? coretype : "(unset)");
#endif
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
