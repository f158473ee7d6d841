// attention() on the shapes of the models: a SigLIP tile (1024 patches, 12 heads of 64, all keys
// visible) and a SmolLM2-135M prefill of 1141 tokens (9 query heads over 3 kv heads of 64, causal).
// GFLOP/s counts the two products (q·kᵀ and p·v) only, over the keys each query sees, so the figure
// compares directly with the GEMM benchmarks. The decode cases time one layer of a decode step (one
// query row per sequence against its cached keys).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"
#include "bench_threads.h"

namespace {

struct Case {
  int64_t rows, q_heads, kv_heads, head_dim;
  bool causal;
};

void bm_attention(benchmark::State& state, Case c) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  const int64_t q_width = c.q_heads * c.head_dim, kv_width = c.kv_heads * c.head_dim;
  std::vector<float> q(size_t(c.rows * q_width)), k(size_t(c.rows * kv_width)), v(k.size()), out(q.size());
  for (auto* buf : {&q, &k, &v})
    for (float& x : *buf) x = dist(rng);
  smolvlm::AttentionArgs a;
  a.q = q.data();
  a.q_rows = c.rows;
  a.q_stride = q_width;
  a.k = k.data();
  a.v = v.data();
  a.kv_rows = c.rows;
  a.kv_stride = kv_width;
  a.scale = 0.125f;
  a.causal = c.causal;
  a.out = out.data();
  a.out_stride = q_width;
  for (auto _ : state) {
    smolvlm::attention(a, {c.q_heads, c.kv_heads, c.head_dim}, smolvlm::bench::bench_pool());
    benchmark::DoNotOptimize(out.data());
  }
  // Score pairs: every (query, key) a query sees.
  const double pairs = c.causal ? double(c.rows) * double(c.rows + 1) / 2 : double(c.rows) * double(c.rows);
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * pairs * double(c.head_dim * c.q_heads) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// One decode step's attention in one layer: `rows` sequences (a batched step), one query row each,
// every one against its own `keys` cached keys (attention_single_rows, the decode path).
void bm_decode_attention(benchmark::State& state, Case c, int64_t keys) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  const int64_t q_width = c.q_heads * c.head_dim, kv_width = c.kv_heads * c.head_dim;
  std::vector<float> q(size_t(c.rows * q_width)), k(size_t(c.rows * keys * kv_width)), v(k.size()), out(q.size());
  for (auto* buf : {&q, &k, &v})
    for (float& x : *buf) x = dist(rng);
  std::vector<smolvlm::AttentionArgs> args(size_t(c.rows));
  for (int64_t r = 0; r < c.rows; ++r) {
    smolvlm::AttentionArgs& a = args[size_t(r)];
    a.q = q.data() + r * q_width;
    a.q_rows = 1;
    a.q_stride = q_width;
    a.k = k.data() + r * keys * kv_width;
    a.v = v.data() + r * keys * kv_width;
    a.kv_rows = keys;
    a.kv_stride = kv_width;
    a.scale = 0.125f;
    a.causal = true;
    a.q_pos0 = keys - 1;
    a.out = out.data() + r * q_width;
    a.out_stride = q_width;
  }
  for (auto _ : state) {
    smolvlm::attention_single_rows(args, {c.q_heads, c.kv_heads, c.head_dim}, smolvlm::bench::bench_pool());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * double(c.rows * keys) * double(c.head_dim * c.q_heads) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  for (int64_t rows : {1, 4})
    for (int64_t keys : {128, 1024})
      benchmark::RegisterBenchmark(("attention/decode_" + std::to_string(rows) + "rows_9x3x64_keys" + std::to_string(keys)).c_str(),
                                   bm_decode_attention, Case{rows, 9, 3, 64, true}, keys)
          ->UseRealTime();
  benchmark::RegisterBenchmark("attention/siglip_tile_1024x12x64", bm_attention, Case{1024, 12, 12, 64, false})
      ->UseRealTime();
  benchmark::RegisterBenchmark("attention/llama_prefill_1141x9x3x64_causal", bm_attention,
                               Case{1141, 9, 3, 64, true})
      ->UseRealTime();
  benchmark::AddCustomContext("threads", std::to_string(smolvlm::bench::bench_threads()));
  benchmark::AddCustomContext("smolvlm_kernel_path", smolvlm::kernel_path_name(smolvlm::active_kernel_path()));
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
