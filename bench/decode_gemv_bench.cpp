// The linear layers of one decode token of SmolVLM-256M's text model (30 layers of q/k/v, o,
// gate/up, down, then the 49,280-row lm_head), on random weights of one format, timed alone: what
// the decode GEMV costs without attention, norms or sampling. The quantized formats use quantize's
// defaults (q8 per row, q4 in groups of 64, lut4 one table per 16 rows; the lm_head q8 per row), with
// random codes and parameters. On a busy machine read the best token, and alternate builds.
//   ./decode_gemv_bench bf16|q8|q4|lut4 [threads=2] [tokens=100] [--in-cache | --rows] [N]
// --in-cache repeats one 576 x 576 weight instead (the kernel's arithmetic rate, Gweights/s); N rows
// of x per product (default 1: a batched decode step of N sequences).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemm.h"
#include "kernels/quant.h"
#include "kernels/thread_pool.h"

namespace {

using namespace smolvlm;

struct Weight {
  QuantizedMatrix q;
  std::vector<uint16_t> bf16;
  WeightRef ref;
};

Weight make_weight(int64_t N, int64_t K, WeightFormat f, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Weight w;
  if (f == WeightFormat::BF16) {
    w.bf16.resize(size_t(N * K));
    for (uint16_t& v : w.bf16) v = f32_to_bf16(dist(rng));
    w.ref = WeightRef(w.bf16.data(), f, N, K);
    return w;
  }
  QuantizedMatrix& q = w.q;
  q.format = f, q.rows = N, q.cols = K;
  q.group_size = f == WeightFormat::Q4 ? 64 : K;
  q.block_rows = f == WeightFormat::Lut4 ? 16 : 1;
  const int64_t blocks = quant_block_count(WeightRef(nullptr, f, N, K, QuantBlocks{q.group_size, q.block_rows}));
  q.codes.resize(size_t(f == WeightFormat::Q8 ? N * K : N * K / 2));
  for (uint8_t& c : q.codes) c = uint8_t(rng());
  q.scales.assign(size_t(blocks), f32_to_f16(0.01f));
  q.zeros.assign(size_t(blocks), 3);
  q.mins.assign(size_t(blocks), f32_to_f16(-0.07f));
  q.lut.resize(size_t(blocks * 16));
  for (uint16_t& l : q.lut) l = f32_to_f16(dist(rng));
  w.ref = q.ref();
  return w;
}

WeightFormat format_named(const std::string& s) {
  if (s == "q8") return WeightFormat::Q8;
  if (s == "q4") return WeightFormat::Q4;
  if (s == "lut4") return WeightFormat::Lut4;
  return WeightFormat::BF16;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int in_cache(WeightFormat f, ThreadPool& pool, int reps, int64_t M) {
  std::mt19937 rng(1);
  const int64_t N = 576, K = 576;
  const Weight w = make_weight(N, K, f, rng);
  std::vector<float> x(static_cast<size_t>(K * M), 0.3f), y(static_cast<size_t>(N * M));
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) linear(x.data(), M, w.ref, nullptr, y.data(), pool);
    best = std::min(best, seconds_since(t0) / 10);
  }
  std::printf("%s in cache, %lld row(s): %.2f us per 576x576 product, %.1f Gweights/s\n", weight_format_name(f),
              static_cast<long long>(M), best * 1e6, double(N * K) / best * 1e-9);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s bf16|q8|q4|lut4 [threads] [tokens] [--in-cache]\n", argv[0]);
    return 2;
  }
  const WeightFormat f = format_named(argv[1]);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2, tokens = argc > 3 ? std::max(1, std::atoi(argv[3])) : 100;
  ThreadPool pool(std::max(1, threads));
  const int64_t M = argc > 5 ? std::max(1, std::atoi(argv[5])) : 1;
  if (argc > 4 && std::string(argv[4]) == "--in-cache") return in_cache(f, pool, tokens, M);

  std::mt19937 rng(1);
  const int64_t H = 576, I = 1536, KV = 192, V = 49280;
  struct Layer {
    Weight q, k, v, o, gate, up, down;
  };
  std::vector<Layer> layers(30);
  for (Layer& l : layers) {
    l.q = make_weight(H, H, f, rng), l.k = make_weight(KV, H, f, rng), l.v = make_weight(KV, H, f, rng);
    l.o = make_weight(H, H, f, rng), l.gate = make_weight(I, H, f, rng), l.up = make_weight(I, H, f, rng);
    l.down = make_weight(H, I, f, rng);
  }
  const Weight head = make_weight(V, H, f == WeightFormat::BF16 ? f : WeightFormat::Q8, rng);
  auto floats = [M](int64_t n) { return std::vector<float>(static_cast<size_t>(n * M), 0.1f); };
  std::vector<float> x = floats(I), q = floats(H), k = floats(KV), v = floats(KV), o = floats(H), g = floats(I),
                     u = floats(I), logits = floats(V);
  std::vector<double> times;
  for (int t = 0; t < tokens; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Layer& l : layers) {
      const LinearOutput qkv[] = {{l.q.ref, nullptr, q.data()}, {l.k.ref, nullptr, k.data()}, {l.v.ref, nullptr, v.data()}};
      linear_shared_input(x.data(), M, qkv, pool);
      linear(q.data(), M, l.o.ref, nullptr, o.data(), pool);
      const LinearOutput gate_up[] = {{l.gate.ref, nullptr, g.data()}, {l.up.ref, nullptr, u.data()}};
      linear_shared_input(o.data(), M, gate_up, pool);
      linear(g.data(), M, l.down.ref, nullptr, o.data(), pool);
    }
    linear(o.data(), M, head.ref, nullptr, logits.data(), pool);
    times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  const double best = times.front(), median = times[times.size() / 2];
  std::printf("%s, %d thread(s), %lld row(s): best step %.3f ms, median %.3f ms (%.0f tok/s of linears alone at the best)\n",
              weight_format_name(f), threads, static_cast<long long>(M), best * 1e3, median * 1e3, double(M) / best);
  return 0;
}
