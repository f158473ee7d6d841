// The linear layers of one decode token of SmolVLM-256M's text model (30 layers of q/k/v, o,
// gate/up, down, then the 49,280-row lm_head), on random weights of one format, timed alone: what
// the decode GEMV costs without attention, norms or sampling. The quantized formats use quantize's
// defaults (q8 per row, q4 in groups of 64, lut4 one table per 16 rows; the lm_head q8 per row), with
// random codes and parameters. On a busy machine read the best token, and alternate builds.
//   ./decode_gemv_bench bf16|q8|q4|lut4[:fast] [threads=2] [tokens=100] [--in-cache | --int8-kernels | --rows |
//                       --read-each | --read-once | --one-call] [N]
// ":fast" runs the pool under Precision::Fast on this CPU's best kernel path: q8, q4 and lut4 then take
// the integer products (kernels/gemv_int8.h), BF16 bf16 products where the CPU has avx512_bf16.
// --in-cache repeats one 576 x 576 weight instead (the kernel's arithmetic rate, Gweights/s), and
// --int8-kernels (q8, q4, lut4) times each integer product this CPU has alone on that weight, one thread, x
// rounded before timing; --k=N makes that weight N wide (a row's fixed cost against its steps). N rows
// of x per product (default 1: a batched decode step of N sequences).
// --read-each and --read-once only read the same weights (their bytes summed, the GEMV's split of rows
// over the threads): one pool call per weight as the products make, or one for the whole token. They
// tell what the products could reach through the same calls, and what the calls themselves cost.
// --one-call runs the same products in one pool call, its threads meeting at a barrier between them
// (kernels/team.h, as a one-row decode step runs), each rounding x itself (every format, BF16 too).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemv_int8.h"
#include "kernels/quant.h"
#include "kernels/team.h"
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

int in_cache(WeightFormat f, ThreadPool& pool, int reps, int64_t M, int64_t N, int64_t K) {
  const char* precision = precision_name(pool.precision());
  std::mt19937 rng(1);
  const Weight w = make_weight(N, K, f, rng);
  std::vector<float> x(static_cast<size_t>(K * M), 0.3f), y(static_cast<size_t>(N * M));
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) linear(x.data(), M, w.ref, nullptr, y.data(), pool);
    best = std::min(best, seconds_since(t0) / 10);
  }
  std::printf("%s (%s) in cache, %lld row(s): %.2f us per %lldx%lld product, %.1f Gweights/s\n", weight_format_name(f),
              precision, static_cast<long long>(M), best * 1e6, static_cast<long long>(N), static_cast<long long>(K),
              double(N * K) / best * 1e-9);
  return 0;
}

// The integer products this CPU has (gemm::int8_products), each alone on this thread: x rounded
// once before timing, the weight in cache; µs per product and Gweights/s.
int int8_kernels_alone(WeightFormat f, int reps, int64_t M, int64_t N, int64_t K) {
  if (f != WeightFormat::Q8 && f != WeightFormat::Q4 && f != WeightFormat::Lut4) {
    std::fprintf(stderr, "--int8-kernels takes q8, q4 or lut4\n");
    return 2;
  }
  std::mt19937 rng(1);
  const Weight w = make_weight(N, K, f, rng);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(K * M)), y(static_cast<size_t>(N * M));
  for (float& v : x) v = dist(rng);
  Int8RowsBuffer buffer;
  const Int8Rows xq = buffer.quantize(x.data(), M, K);
  for (const gemm::Int8Product& k : gemm::int8_products()) {
    double best = 1e9;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) k.run(xq, w.ref, nullptr, y.data(), 0, N);
      best = std::min(best, seconds_since(t0) / 10);
    }
    std::printf("%s %s int8 alone, one thread, %lld row(s) of x: %.2f us per %lldx%lld product, %.1f Gweights/s\n",
                weight_format_name(f), k.name, static_cast<long long>(M), best * 1e6, static_cast<long long>(N),
                static_cast<long long>(K), double(N * K) / best * 1e-9);
  }
  return 0;
}

}  // namespace

enum class Mode { Products, ReadEach, ReadOnce, OneCall };

// Bytes of one row of a weight's values (the codes of a quantized one, nearly all of its bytes).
int64_t row_bytes_of(const WeightRef& w) {
  switch (w.format) {
    case WeightFormat::F32: return w.cols * 4;
    case WeightFormat::Q8: return w.cols;
    case WeightFormat::Q4:
    case WeightFormat::Lut4: return w.cols / 2;
    default: return w.cols * 2;
  }
}

// Sums rows [n0, n1) of a weight's values as 64-bit words, four sums in flight.
uint64_t sum_rows(const WeightRef& w, int64_t n0, int64_t n1) {
  const int64_t row_bytes = row_bytes_of(w);
  const uint64_t* p = reinterpret_cast<const uint64_t*>(static_cast<const char*>(w.data) + n0 * row_bytes);
  const size_t words = static_cast<size_t>((n1 - n0) * row_bytes / 8);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= words; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  for (; i < words; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

// Reads weights one after another in one pool call, each with the GEMV's split (one contiguous range
// of rows per thread): with several weights there is no wait between them.
uint64_t read_weights(std::span<const WeightRef* const> ws, ThreadPool& pool) {
  std::vector<uint64_t> sums(size_t(pool.size()));
  pool.run_on_all([&](int t) {
    for (const WeightRef* w : ws) sums[size_t(t)] += sum_rows(*w, w->rows * t / pool.size(), w->rows * (t + 1) / pool.size());
  });
  uint64_t s = 0;
  for (uint64_t v : sums) s += v;
  return s;
}

// The decoder shapes a token's linears take: SmolVLM-256M's text model (the default) or HY-MT1.5-1.8B's
// (--shape=hymt). In cache, a weight of `cache_rows` x hidden.
struct Shapes {
  int64_t layers, H, I, KV, V, cache_rows;
};
constexpr Shapes kSmolVlm256m{30, 576, 1536, 192, 49280, 576};
constexpr Shapes kHyMt18b{32, 2048, 6144, 512, 120818, 256};

int main(int argc, char** argv) {
  std::vector<std::string> args;
  Shapes shape = kSmolVlm256m;
  int64_t cache_cols = 0;  // --k: the in-cache weight's width (default: the model's hidden size)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shape=hymt") shape = kHyMt18b;
    else if (a == "--shape=256m") shape = kSmolVlm256m;
    else if (a.rfind("--k=", 0) == 0) cache_cols = std::atoll(a.c_str() + 4);
    else args.push_back(a);
  }
  if (args.empty()) {
    std::fprintf(stderr,
                 "usage: %s bf16|q8|q4|lut4[:fast] [threads] [tokens] "
                 "[--in-cache|--int8-kernels|--rows|--read-each|--read-once|--one-call] [N] [--shape=256m|hymt] [--k=N]\n",
                 argv[0]);
    return 2;
  }
  const size_t n_args = args.size();
  std::string format = args[0];
  const bool fast = format.size() > 5 && format.substr(format.size() - 5) == ":fast";
  const WeightFormat f = format_named(fast ? format.substr(0, format.size() - 5) : format);
  const int threads = n_args > 1 ? std::atoi(args[1].c_str()) : 2;
  const int tokens = n_args > 2 ? std::max(1, std::atoi(args[2].c_str())) : 100;
  ThreadPool pool(std::max(1, threads), fast ? std::optional<KernelPath>(best_kernel_path()) : std::nullopt,
                  fast ? Precision::Fast : Precision::Exact);
  const int64_t M = n_args > 4 ? std::max(1, std::atoi(args[4].c_str())) : 1;
  const std::string option = n_args > 3 ? args[3] : "";
  if (cache_cols < 0 || cache_cols > (int64_t(1) << 20) || (cache_cols % 2) != 0) {
    std::fprintf(stderr, "--k takes an even width up to 1048576\n");
    return 2;
  }
  const int64_t cache_k = cache_cols > 0 ? cache_cols : shape.H;
  if (option == "--in-cache") return in_cache(f, pool, tokens, M, shape.cache_rows, cache_k);
  if (option == "--int8-kernels") return int8_kernels_alone(f, tokens, M, shape.cache_rows, cache_k);
  const Mode mode = option == "--read-each"  ? Mode::ReadEach
                    : option == "--read-once" ? Mode::ReadOnce
                    : option == "--one-call"  ? Mode::OneCall
                                              : Mode::Products;
  std::mt19937 rng(1);
  const int64_t H = shape.H, I = shape.I, KV = shape.KV, V = shape.V;
  struct Layer {
    Weight q, k, v, o, gate, up, down;
  };
  std::vector<Layer> layers(static_cast<size_t>(shape.layers));
  for (Layer& l : layers) {
    l.q = make_weight(H, H, f, rng), l.k = make_weight(KV, H, f, rng), l.v = make_weight(KV, H, f, rng);
    l.o = make_weight(H, H, f, rng), l.gate = make_weight(I, H, f, rng), l.up = make_weight(I, H, f, rng);
    l.down = make_weight(H, I, f, rng);
  }
  const Weight head = make_weight(V, H, f == WeightFormat::BF16 ? f : WeightFormat::Q8, rng);
  auto floats = [M](int64_t n) { return std::vector<float>(static_cast<size_t>(n * M), 0.1f); };
  std::vector<float> x = floats(I), q = floats(H), k = floats(KV), v = floats(KV), o = floats(H), g = floats(I),
                     u = floats(I), logits = floats(V);
  // The token's weights in call order, for the read-only modes.
  std::vector<const WeightRef*> order;
  for (const Layer& l : layers)
    for (const Weight* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) order.push_back(&w->ref);
  order.push_back(&head.ref);
  std::vector<double> times;
  uint64_t sink = 0;
  for (int t = 0; t < tokens; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == Mode::ReadEach) {
      for (const WeightRef*& w : order) sink += read_weights({&w, 1}, pool);
    } else if (mode == Mode::ReadOnce) {
      sink += read_weights(order, pool);
    } else if (mode == Mode::OneCall) {
      run_team(pool, [&](Team& team) {
        // Each product: this thread's share (x rounded by the thread itself), then a barrier.
        auto product = [&](const float* in, std::initializer_list<LinearOutput> outs) {
          int64_t rows = 0;
          for (const LinearOutput& o : outs) rows += o.w.rows;
          linear_shared_input_share(in, M, std::span(outs.begin(), outs.size()), pool, team.first(rows), team.last(rows));
          team.sync();
        };
        for (const Layer& l : layers) {
          product(x.data(), {{l.q.ref, nullptr, q.data()}, {l.k.ref, nullptr, k.data()}, {l.v.ref, nullptr, v.data()}});
          product(q.data(), {{l.o.ref, nullptr, o.data()}});
          product(o.data(), {{l.gate.ref, nullptr, g.data()}, {l.up.ref, nullptr, u.data()}});
          product(g.data(), {{l.down.ref, nullptr, o.data()}});
        }
        product(o.data(), {{head.ref, nullptr, logits.data()}});
      });
    } else {
      for (const Layer& l : layers) {
        const LinearOutput qkv[] = {{l.q.ref, nullptr, q.data()}, {l.k.ref, nullptr, k.data()}, {l.v.ref, nullptr, v.data()}};
        linear_shared_input(x.data(), M, qkv, pool);
        linear(q.data(), M, l.o.ref, nullptr, o.data(), pool);
        const LinearOutput gate_up[] = {{l.gate.ref, nullptr, g.data()}, {l.up.ref, nullptr, u.data()}};
        linear_shared_input(o.data(), M, gate_up, pool);
        linear(g.data(), M, l.down.ref, nullptr, o.data(), pool);
      }
      linear(o.data(), M, head.ref, nullptr, logits.data(), pool);
    }
    times.push_back(seconds_since(t0));
  }
  volatile uint64_t keep = sink;  // the reads have a use
  (void)keep;
  std::sort(times.begin(), times.end());
  const double best = times.front(), median = times[times.size() / 2];
  double bytes = 0;
  for (const WeightRef* w : order) bytes += double(row_bytes_of(*w) * w->rows);
  static const char* const what[] = {"products", "read, one call per weight", "read, one call per token",
                                     "products, one call per token"};
  std::printf("%s, %d thread(s), %lld row(s), %s: best step %.3f ms, median %.3f ms (%.0f tok/s at the best; %.1f GB/s "
              "at the best, %.1f at the median)\n",
              (std::string(weight_format_name(f)) + (fast ? " fast" : "")).c_str(), threads, static_cast<long long>(M),
              what[int(mode)], best * 1e3, median * 1e3,
              double(M) / best, bytes / best * 1e-9, bytes / median * 1e-9);
  return 0;
}
