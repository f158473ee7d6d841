// Every optimized kernel against its plain reference (src/kernels: linear_reference,
// attention_reference, ops.h's *_reference), on every kernel path the CPU runs: one table of ops,
// each with the tolerance it is held to and why. Prints, per op and path, the largest absolute and
// relative error seen. The ops with one implementation for every path (rope_table, rope_inv_freq,
// softmax, argmax) are held to their formula, evaluated in double precision here.
//
// SMOLVLM_OPS_PERF=1 also times each op on each path (best of repeated runs for about 0.2 s) and
// prints GFLOP/s, or GB/s for the memory-bound ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/quant.h"
#include "kernels/ops.h"

namespace smolvlm {
namespace {

constexpr double kEps = std::numeric_limits<float>::epsilon();

// An element passes when |got - want| <= abs + rel * |want|.
struct Tolerance {
  double abs = 0, rel = 0;
  const char* why = "";
};

struct OpCase {
  std::string name;
  std::function<std::vector<float>(ThreadPool&)> run;  // the op, on the calling thread's path
  std::function<std::vector<double>()> reference;      // the values it must reproduce
  Tolerance scalar;  // on the scalar path
  Tolerance vector;  // on the SIMD paths
  double flops = 0;  // per run, for the perf mode (0: memory bound, report bytes)
  double bytes = 0;
};

std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// ---- Matrix products ----------------------------------------------------------------------------

// A weight of N x K values in [-1, 1] / √K stored in `format`, so that outputs (x in [-1, 1]) are
// O(1) whatever K, and the exact values of its stored elements.
struct Weight {
  std::vector<float> f32;
  std::vector<uint16_t> half;
  QuantizedMatrix quantized;  // Q8 per row, Q4 in groups of 64, LUT4 per 16 rows
  WeightRef ref;
  double bytes = 0;           // stored bytes, for the perf figures
};

Weight make_weight(WeightFormat f, int64_t N, int64_t K, uint32_t seed) {
  Weight w;
  w.f32 = uniform(size_t(N * K), seed, -1.f / std::sqrt(float(K)), 1.f / std::sqrt(float(K)));
  w.bytes = double(N * K) * (f == WeightFormat::F32 ? 4 : 2);
  if (weight_format_is_quantized(f)) {
    const int64_t group = f == WeightFormat::Q4 ? std::min<int64_t>(64, K) : K;
    w.quantized = quantize_matrix(w.f32.data(), N, K, f, group, f == WeightFormat::Lut4 ? std::min<int64_t>(16, N) : 1);
    w.ref = w.quantized.ref();
    w.bytes = double(w.quantized.codes.size() + 2 * (w.quantized.scales.size() + w.quantized.mins.size() + w.quantized.lut.size()) +
                     w.quantized.zeros.size());
    return w;
  }
  if (f == WeightFormat::F32) {
    w.ref = WeightRef{w.f32.data(), f, N, K};
    return w;
  }
  w.half.resize(w.f32.size());
  for (size_t i = 0; i < w.f32.size(); ++i) w.half[i] = f == WeightFormat::BF16 ? f32_to_bf16(w.f32[i]) : f32_to_f16(w.f32[i]);
  w.ref = WeightRef{w.half.data(), f, N, K};
  return w;
}

// Two fp32 sums of K products of size O(1/√K) in different orders differ by a random walk of
// roundings, about eps·√K·|partial sum| with partial sums below 1 (measured: at most ~0.25 eps·√K
// over these shapes); 4 eps·√K leaves room for other seeds and blockings.
Tolerance product_tolerance(int64_t K) {
  return {4 * kEps * std::sqrt(double(K)), 0, "reordered fp32 sum of K products: ~eps*sqrt(K)"};
}
const Tolerance kSameLoops{0, 0, "the scalar path runs the reference's own loops: bitwise"};

void add_linear(std::vector<OpCase>& t, WeightFormat f, int64_t M, int64_t N, int64_t K) {
  auto w = std::make_shared<Weight>(make_weight(f, N, K, uint32_t(M * 131 + N * 7 + K)));
  auto x = std::make_shared<std::vector<float>>(uniform(size_t(M * K), uint32_t(K + 5)));
  auto bias = std::make_shared<std::vector<float>>(uniform(size_t(N), 9));
  const double weight_bytes = w->bytes;
  t.push_back({"linear " + std::string(weight_format_name(f)) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                   std::to_string(K),
               [=](ThreadPool& pool) {
                 std::vector<float> y(size_t(M * N));
                 linear(x->data(), M, w->ref, bias->data(), y.data(), pool);
                 return y;
               },
               [=] {
                 std::vector<float> y(size_t(M * N));
                 linear_reference(x->data(), M, w->ref, bias->data(), y.data());
                 return widen(y);
               },
               kSameLoops, product_tolerance(K), 2.0 * M * N * K, weight_bytes});
}

void add_shared_input(std::vector<OpCase>& t, int64_t M) {
  // q/k/v of a 576-wide model with 3 kv heads of 64 (SmolVLM's text model).
  const int64_t K = 576, Ns[3] = {576, 192, 192};
  auto ws = std::make_shared<std::vector<Weight>>();
  for (int i = 0; i < 3; ++i) ws->push_back(make_weight(WeightFormat::BF16, Ns[i], K, uint32_t(40 + i)));
  auto x = std::make_shared<std::vector<float>>(uniform(size_t(M * K), 44));
  t.push_back({"linear_shared_input BF16 qkv M=" + std::to_string(M),
               [=](ThreadPool& pool) {
                 std::vector<std::vector<float>> ys(3);
                 std::vector<LinearOutput> outs;
                 for (int i = 0; i < 3; ++i) {
                   ys[size_t(i)].resize(size_t(M * Ns[i]));
                   outs.push_back({(*ws)[size_t(i)].ref, nullptr, ys[size_t(i)].data()});
                 }
                 linear_shared_input(x->data(), M, outs, pool);
                 std::vector<float> all;
                 for (auto& y : ys) all.insert(all.end(), y.begin(), y.end());
                 return all;
               },
               [=] {
                 std::vector<double> all;
                 for (int i = 0; i < 3; ++i) {
                   std::vector<float> y(size_t(M * Ns[i]));
                   linear_reference(x->data(), M, (*ws)[size_t(i)].ref, nullptr, y.data());
                   all.insert(all.end(), y.begin(), y.end());
                 }
                 return all;
               },
               kSameLoops, product_tolerance(K), 2.0 * M * 960 * K, 960.0 * K * 2});
}

// linear_packed on keys (w = K [n_keys, D]) or values (w = Vᵀ, packed transposed), using the
// leading N x K block of what was packed when `leading` (a causal block's prefix).
void add_packed(std::vector<OpCase>& t, bool transposed, int64_t M, int64_t rows, int64_t cols, bool leading) {
  const int64_t N = leading ? rows - rows / 3 : rows, K = leading ? cols - cols / 4 : cols;
  const int64_t ld = transposed ? rows + 3 : cols + 5;  // strided source, as attention's heads are
  auto src = std::make_shared<std::vector<float>>(
      uniform(size_t((transposed ? cols : rows) * ld), uint32_t(rows + cols), -1.f / std::sqrt(float(K)),
              1.f / std::sqrt(float(K))));
  auto x = std::make_shared<std::vector<float>>(uniform(size_t(M * K), 61));
  auto w = std::make_shared<std::vector<float>>(size_t(N * K));  // the block, row-major, for the reference
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) (*w)[size_t(n * K + k)] = transposed ? (*src)[size_t(k * ld + n)] : (*src)[size_t(n * ld + k)];
  t.push_back({std::string("linear_packed ") + (transposed ? "values " : "keys ") + std::to_string(M) + "x" +
                   std::to_string(N) + "x" + std::to_string(K) + (leading ? " leading block" : ""),
               [=](ThreadPool&) {
                 PackedWeight pw;
                 if (transposed)
                   pw.pack_transposed(src->data(), rows, cols, ld);
                 else
                   pw.pack(src->data(), rows, cols, ld);
                 std::vector<float> y(size_t(M * N));
                 linear_packed(x->data(), M, K, pw, N, K, y.data(), N);
                 return y;
               },
               [=] {
                 std::vector<float> y(size_t(M * N));
                 linear_reference(x->data(), M, WeightRef{w->data(), WeightFormat::F32, N, K}, nullptr, y.data());
                 return widen(y);
               },
               kSameLoops, product_tolerance(K), 2.0 * M * N * K, 0});
}

// ---- Attention ----------------------------------------------------------------------------------

void add_attention(std::vector<OpCase>& t, const std::string& what, int64_t q_rows, int64_t q_pos0, bool causal,
                   AttentionShape shape) {
  const int64_t kv_rows = q_rows + q_pos0, D = shape.head_dim;
  const int64_t qw = shape.q_heads * D, kvw = shape.kv_heads * D;
  auto q = std::make_shared<std::vector<float>>(uniform(size_t(q_rows * qw), 71));
  auto k = std::make_shared<std::vector<float>>(uniform(size_t(kv_rows * kvw), 72));
  auto v = std::make_shared<std::vector<float>>(uniform(size_t(kv_rows * kvw), 73));
  const float scale = 1.0f / std::sqrt(float(D));
  auto args = [=](float* out) {
    return AttentionArgs{q->data(), q_rows, qw, k->data(), v->data(), kv_rows, kvw, scale, causal, q_pos0, out, qw};
  };
  // Scores err like a D-long product (eps·√D·|q||k|·scale), the SIMD softmax's exp is a polynomial
  // within a few ulp, and the output is a convex combination of values in [-1, 1] summed in another
  // order: a few 1e-7 in all (measured at most 1.8e-7). The scalar path packs the keys in blocks but
  // sums in the reference's order; causal blocks also add the masked keys' zero weights.
  const Tolerance simd{2e-6, 0, "scores and P*V reordered, polynomial exp: a few ulp of O(1) values"};
  const Tolerance scalar{0, 0, "the reference's sums in blocks; masked keys add exact zeros: bitwise"};
  const double pairs = double(shape.q_heads) * q_rows * (causal ? double(q_pos0) + (q_rows + 1) / 2.0 : kv_rows);
  t.push_back({"attention " + what,
               [=](ThreadPool& pool) {
                 std::vector<float> out(size_t(q_rows * qw));
                 attention(args(out.data()), shape, pool);
                 return out;
               },
               [=] {
                 std::vector<float> out(size_t(q_rows * qw));
                 attention_reference(args(out.data()), shape);
                 return widen(out);
               },
               scalar, simd, 4.0 * pairs * D, 0});
}

// ---- The element-wise and row-wise ops ------------------------------------------------------------

// Inputs over the range activations meet and past it (exp under/overflow), odd count for the tails.
std::vector<float> activation_inputs() {
  std::vector<float> x = {0.f, -0.f, 1e-6f, -1e-6f, -88.f, 88.f, -100.f, 100.f, -1e4f, 1e4f};
  for (int i = -1000; i <= 1000; ++i) x.push_back(float(i) * 0.02f);
  for (float v : uniform(1001, 81, -6.f, 6.f)) x.push_back(v);
  return x;
}

void add_ops(std::vector<OpCase>& t) {
  const Tolerance approx{4e-6, 4e-6, "SIMD tanh/exp are polynomials within ~2 ulp of libm, relative"};
  for (int64_t dim : {int64_t(37), int64_t(768)}) {
    const int64_t rows = 5;
    auto x = std::make_shared<std::vector<float>>(uniform(size_t(rows * dim), 91, -3.f, 3.f));
    auto w = std::make_shared<std::vector<float>>(uniform(size_t(dim), 92));
    auto b = std::make_shared<std::vector<float>>(uniform(size_t(dim), 93));
    const Tolerance norm{1e-6, 2e-6, "fp32 SIMD sums of squares vs the reference's double: ~1 ulp of 1/rms"};
    const std::string shape = " " + std::to_string(rows) + "x" + std::to_string(dim);
    t.push_back({"rms_norm" + shape,
                 [=](ThreadPool& pool) {
                   std::vector<float> y(x->size());
                   rms_norm(x->data(), rows, dim, w->data(), 1e-5f, y.data(), pool);
                   return y;
                 },
                 [=] {
                   std::vector<float> y(x->size());
                   rms_norm_reference(x->data(), rows, dim, w->data(), 1e-5f, y.data());
                   return widen(y);
                 },
                 kSameLoops, norm, 0, 8.0 * rows * dim});
    t.push_back({"layer_norm" + shape,
                 [=](ThreadPool& pool) {
                   std::vector<float> y(x->size());
                   layer_norm(x->data(), rows, dim, w->data(), b->data(), 1e-6f, y.data(), pool);
                   return y;
                 },
                 [=] {
                   std::vector<float> y(x->size());
                   layer_norm_reference(x->data(), rows, dim, w->data(), b->data(), 1e-6f, y.data());
                   return widen(y);
                 },
                 kSameLoops, norm, 0, 8.0 * rows * dim});
  }
  auto act = std::make_shared<std::vector<float>>(activation_inputs());
  auto up = std::make_shared<std::vector<float>>(uniform(act->size(), 94));
  const int64_t n = int64_t(act->size());
  t.push_back({"gelu_tanh n=" + std::to_string(n),
               [=](ThreadPool& pool) {
                 std::vector<float> y = *act;
                 gelu_tanh(y.data(), n, pool);
                 return y;
               },
               [=] {
                 std::vector<float> y = *act;
                 gelu_tanh_reference(y.data(), n);
                 return widen(y);
               },
               kSameLoops, approx, 0, 8.0 * n});
  t.push_back({"silu_mul n=" + std::to_string(n),
               [=](ThreadPool& pool) {
                 std::vector<float> y = *act;
                 silu_mul(y.data(), up->data(), n, pool);
                 return y;
               },
               [=] {
                 std::vector<float> y = *act;
                 silu_mul_reference(y.data(), up->data(), n);
                 return widen(y);
               },
               kSameLoops, approx, 0, 12.0 * n});
  t.push_back({"add_inplace n=" + std::to_string(n),
               [=](ThreadPool& pool) {
                 std::vector<float> y = *act;
                 add_inplace(y.data(), up->data(), n, pool);
                 return y;
               },
               [=] {
                 std::vector<float> y = *act;
                 add_inplace_reference(y.data(), up->data(), n);
                 return widen(y);
               },
               kSameLoops, Tolerance{0, 0, "one fp32 add per element on every path: bitwise"}, 0, 12.0 * n});

  // Attention's row primitives, on rows with a stride (heads interleaved): head sizes of SmolLM2 (64)
  // and HunYuan (128) and one with a column tail (72); key counts with and without a tail of a 16-key
  // block, odd and even.
  for (const auto& shape_pair : {std::pair<int64_t, int64_t>{37, 72}, {37, 64}, {48, 128}, {5, 64}}) {
    // Plain copies, not a structured binding: lambdas below capture them (C++20 allows capturing
    // bindings, but clang 14 does not).
    const int64_t keys = shape_pair.first, D = shape_pair.second;
    const int64_t stride = 3 * D + 8;
    const std::string shape = std::to_string(keys) + " keys x " + std::to_string(D);
    auto q = std::make_shared<std::vector<float>>(uniform(size_t(D), uint32_t(95 + D)));
    auto kv = std::make_shared<std::vector<float>>(uniform(size_t(keys * stride), uint32_t(96 + D)));
    auto p = std::make_shared<std::vector<float>>(uniform(size_t(keys), uint32_t(97 + D), 0.f, 1.f / float(keys)));
    t.push_back({"dot_rows " + shape,
                 [=](ThreadPool&) {
                   std::vector<float> s(static_cast<size_t>(keys));
                   dot_rows(q->data(), kv->data(), stride, keys, D, s.data());
                   return s;
                 },
                 [=] {
                   std::vector<float> s(static_cast<size_t>(keys));
                   dot_rows_reference(q->data(), kv->data(), stride, keys, D, s.data());
                   return widen(s);
                 },
                 kSameLoops, Tolerance{1e-5, 0, "reordered fp32 sum of D <= 128 products of O(1): a few ulp of sums ~5"},
                 2.0 * keys * D, 0});
    t.push_back({"weighted_sum_rows " + shape,
                 [=](ThreadPool&) {
                   std::vector<float> o(static_cast<size_t>(D));
                   weighted_sum_rows(p->data(), kv->data(), stride, keys, D, o.data());
                   return o;
                 },
                 [=] {
                   std::vector<float> o(static_cast<size_t>(D));
                   weighted_sum_rows_reference(p->data(), kv->data(), stride, keys, D, o.data());
                   return widen(o);
                 },
                 kSameLoops,
                 Tolerance{4 * kEps, 0,
                           "j order (avx512: even and odd j apart, then added), FMA instead of mul+add: a few ulp of "
                           "sums < 1"},
                 2.0 * keys * D, 0});
  }
  auto scores = std::make_shared<std::vector<float>>(uniform(1003, 98, -30.f, 30.f));
  t.push_back({"scaled_softmax n=1003",
               [=](ThreadPool&) {
                 std::vector<float> s = *scores;
                 scaled_softmax(s.data(), int64_t(s.size()), 0.3f);
                 return s;
               },
               [=] {
                 std::vector<float> s = *scores;
                 scaled_softmax_reference(s.data(), int64_t(s.size()), 0.3f);
                 return widen(s);
               },
               kSameLoops, Tolerance{1e-9, 4e-6, "polynomial exp, 8-lane sum of the exponentials: a few ulp, relative"},
               0, 8.0 * 1003});

  // RoPE: rotate_half against the reference loops; the table and inv_freq against the formula.
  const int64_t rope_rows = 9, heads = 3, head_dim = 64, rope_stride = heads * head_dim + 4;
  auto inv = std::make_shared<std::vector<float>>(size_t(head_dim / 2));
  rope_inv_freq(100000.0, head_dim, inv->data());
  auto positions = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{0, 1, 2, 7, 100, 511, 2047, 4000, 8191});
  auto rx = std::make_shared<std::vector<float>>(uniform(size_t(rope_rows * rope_stride), 99));
  // Heads of 64 and of 20 (a rotated half of 10: the vector loops' remainder): the vector paths round
  // each product and then the sum, as the reference does.
  for (const int64_t dim : {head_dim, int64_t(20)}) {
    auto dim_table = std::make_shared<std::vector<float>>(size_t(rope_rows * dim));
    std::vector<float> dim_inv(size_t(dim / 2));
    rope_inv_freq(100000.0, dim, dim_inv.data());
    rope_table(positions->data(), rope_rows, dim_inv.data(), dim, dim_table->data());
    t.push_back({"rope_rotate_half 9 rows x 3 heads x " + std::to_string(dim),
                 [=](ThreadPool& pool) {
                   std::vector<float> y = *rx;
                   rope_rotate_half(y.data(), rope_rows, rope_stride, heads, dim, dim_table->data(), pool);
                   return y;
                 },
                 [=] {
                   std::vector<float> y = *rx;
                   rope_rotate_half_reference(y.data(), rope_rows, rope_stride, heads, dim, dim_table->data());
                   return widen(y);
                 },
                 kSameLoops, Tolerance{0, 0, "the reference's products and sums, separately rounded: bitwise"},
                 6.0 * rope_rows * heads * dim, 0});
  }
  t.push_back({"rope_inv_freq theta=1e5 d=64",
               [=](ThreadPool&) {
                 std::vector<float> f(size_t(head_dim / 2));
                 rope_inv_freq(100000.0, head_dim, f.data());
                 return f;
               },
               [=] {
                 std::vector<double> f(size_t(head_dim / 2));
                 for (int64_t i = 0; i < head_dim / 2; ++i) f[size_t(i)] = std::pow(1e5, -double(2 * i) / double(head_dim));
                 return f;
               },
               Tolerance{0, 1e-6, "fp32 pow as torch computes it vs the double formula"},
               Tolerance{0, 1e-6, "fp32 pow as torch computes it vs the double formula"}, 0, 0});
  // cos/sin of the fp32 angle pos·inv_freq (as HF computes it): compare with the angle's own cos/sin.
  t.push_back({"rope_table 9 positions x 64",
               [=](ThreadPool&) {
                 std::vector<float> tb(size_t(rope_rows * head_dim));
                 rope_table(positions->data(), rope_rows, inv->data(), head_dim, tb.data());
                 return tb;
               },
               [=] {
                 std::vector<double> tb(size_t(rope_rows * head_dim));
                 for (int64_t r = 0; r < rope_rows; ++r)
                   for (int64_t i = 0; i < head_dim / 2; ++i) {
                     const double angle = double(float((*positions)[size_t(r)]) * (*inv)[size_t(i)]);
                     tb[size_t(r * head_dim + i)] = std::cos(angle);
                     tb[size_t(r * head_dim + head_dim / 2 + i)] = std::sin(angle);
                   }
                 return tb;
               },
               Tolerance{2 * kEps, 0, "libm cosf/sinf of the same fp32 angle: within 1 ulp"},
               Tolerance{2 * kEps, 0, "libm cosf/sinf of the same fp32 angle: within 1 ulp"}, 0, 0});
  auto logits = std::make_shared<std::vector<float>>(uniform(4099, 100, -20.f, 20.f));
  t.push_back({"softmax n=4099",
               [=](ThreadPool&) {
                 std::vector<float> s = *logits;
                 softmax(s.data(), int64_t(s.size()));
                 return s;
               },
               [=] {
                 double mx = -1e300, sum = 0;
                 for (float v : *logits) mx = std::max(mx, double(v));
                 std::vector<double> s;
                 for (float v : *logits) s.push_back(std::exp(double(v) - mx));
                 for (double v : s) sum += v;
                 for (double& v : s) v /= sum;
                 return s;
               },
               Tolerance{1e-12, 8 * kEps, "fp32 expf and normalization vs double: a few ulp, relative"},
               Tolerance{1e-12, 8 * kEps, "fp32 expf and normalization vs double: a few ulp, relative"}, 0, 0});
  t.push_back({"argmax n=4099 (index)",
               [=](ThreadPool&) { return std::vector<float>{float(argmax(logits->data(), int64_t(logits->size())))}; },
               [=] {
                 size_t best = 0;
                 for (size_t i = 1; i < logits->size(); ++i)
                   if ((*logits)[i] > (*logits)[best]) best = i;
                 return std::vector<double>{double(best)};
               },
               Tolerance{0, 0, "an index: exact"}, Tolerance{0, 0, "an index: exact"}, 0, 0});
}

std::vector<OpCase> make_table() {
  std::vector<OpCase> t;
  // Odd shapes around the blockings (mr 6/8, nr 16/32, kc 256, GEMV up to M = 4), M = 1 decode
  // shapes of the models, and a prefill block.
  const int64_t shapes[][3] = {{1, 576, 1536}, {1, 1536, 576}, {1, 37, 300}, {3, 97, 64}, {4, 33, 17},
                               {7, 17, 33},    {13, 50, 300},  {25, 70, 513}, {64, 256, 576}};
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4,
                         WeightFormat::Lut4})
    for (const auto& s : shapes)
      if (f == WeightFormat::F32 || f == WeightFormat::F16 || f == WeightFormat::BF16 || f == WeightFormat::Q8 || s[2] % 2 == 0)
        add_linear(t, f, s[0], s[1], s[2]);  // 4-bit codes need an even K
  add_shared_input(t, 1);
  add_shared_input(t, 40);
  for (bool transposed : {false, true})
    for (bool leading : {false, true}) add_packed(t, transposed, 50, 70, 300, leading);
  add_attention(t, "causal decode (1 row at 40)", 1, 40, true, {9, 3, 64});
  add_attention(t, "causal rows (5 at 3)", 5, 3, true, {9, 3, 64});
  add_attention(t, "causal GQA prefill (100 rows)", 100, 0, true, {6, 2, 64});
  add_attention(t, "causal GQA chunk (60 rows at 37)", 60, 37, true, {6, 2, 64});
  add_attention(t, "non-causal vision (70 rows)", 70, 0, false, {4, 4, 72});
  add_ops(t);
  return t;
}

struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  size_t failures = 0, first_failure = 0;
};

ErrorStats compare(const std::vector<float>& got, const std::vector<double>& want, const Tolerance& tol) {
  ErrorStats e;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - want[i]);
    e.max_abs = std::max(e.max_abs, d);
    if (std::fabs(want[i]) >= 1e-6) e.max_rel = std::max(e.max_rel, d / std::fabs(want[i]));
    if (!(d <= tol.abs + tol.rel * std::fabs(want[i])) && e.failures++ == 0) e.first_failure = i;
  }
  return e;
}

// Best seconds per run of op over repeated runs for about 0.2 s.
double time_op(const OpCase& op, ThreadPool& pool) {
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    const std::vector<float> out = op.run(pool);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    if (out.empty()) break;  // the output is used, so the run cannot be dropped
  } while (std::chrono::duration<double>(Clock::now() - start).count() < 0.2);
  return best;
}

class OpsTable : public ::testing::TestWithParam<KernelPath> {};

TEST_P(OpsTable, EveryOpMatchesItsReference) {
  const KernelPath path = GetParam();
  if (!kernel_path_supported(path))
    GTEST_SKIP() << "this CPU cannot run the " << kernel_path_name(path) << " kernel path";
  const char* perf_env = std::getenv("SMOLVLM_OPS_PERF");
  const bool perf = perf_env && std::string(perf_env) == "1";
  const ScopedKernelPath scope(path);
  ThreadPool pool(2);
  std::printf("%-44s %-7s %10s %10s %19s%s\n", "op", "path", "max abs", "max rel", "tolerance abs+rel",
              perf ? "      speed" : "");
  for (const OpCase& op : make_table()) {
    const Tolerance& tol = path == KernelPath::Scalar ? op.scalar : op.vector;
    const std::vector<double> want = op.reference();
    const std::vector<float> got = op.run(pool);
    ASSERT_EQ(got.size(), want.size()) << op.name;
    const ErrorStats e = compare(got, want, tol);
    std::printf("%-44s %-7s %10.3g %10.3g %9.2g+%-9.2g", op.name.c_str(), kernel_path_name(path), e.max_abs,
                e.max_rel, tol.abs, tol.rel);
    if (perf) {
      const double s = time_op(op, pool);
      if (op.flops > 0)
        std::printf(" %8.2f GFLOP/s", op.flops / s / 1e9);
      else if (op.bytes > 0)
        std::printf(" %8.2f GB/s", op.bytes / s / 1e9);
      else
        std::printf(" %8.2f us", s * 1e6);
    }
    std::printf("\n");
    EXPECT_EQ(e.failures, 0u) << op.name << " on " << kernel_path_name(path) << ": " << e.failures
                              << " elements out of tolerance (abs " << tol.abs << " + rel " << tol.rel << ": "
                              << tol.why << "), first at " << e.first_failure << ": got " << got[e.first_failure]
                              << ", want " << want[e.first_failure];
  }
}

// A batched decode step's attention (several one-row queries, each over its own cache, in one split)
// gives each query exactly the bits of attention() on it alone, on every path.
TEST_P(OpsTable, SingleRowQueriesTogetherGiveTheBitsOfEachAlone) {
  const KernelPath path = GetParam();
  if (!kernel_path_supported(path))
    GTEST_SKIP() << "this CPU cannot run the " << kernel_path_name(path) << " kernel path";
  const ScopedKernelPath scope(path);
  ThreadPool pool(2);
  const AttentionShape shape{9, 3, 64};
  const int64_t qw = shape.q_heads * shape.head_dim, kvw = shape.kv_heads * shape.head_dim;
  const int64_t positions[] = {0, 5, 40, 77, 200};
  std::vector<std::vector<float>> q, k, v, together, alone;
  std::vector<AttentionArgs> args;
  for (size_t i = 0; i < std::size(positions); ++i) {
    const int64_t keys = positions[i] + 1;
    q.push_back(uniform(size_t(qw), 90 + uint32_t(i)));
    k.push_back(uniform(size_t(keys * kvw), 100 + uint32_t(i)));
    v.push_back(uniform(size_t(keys * kvw), 110 + uint32_t(i)));
    together.emplace_back(size_t(qw), -1.f);
    alone.emplace_back(size_t(qw), -2.f);
  }
  for (size_t i = 0; i < std::size(positions); ++i) {
    const AttentionArgs a{q[i].data(), 1, qw, k[i].data(), v[i].data(), positions[i] + 1, kvw, 0.125f, true,
                          positions[i], together[i].data(), qw};
    args.push_back(a);
    AttentionArgs b = a;
    b.out = alone[i].data();
    attention(b, shape, pool);
  }
  attention_single_rows(args, shape, pool);
  for (size_t i = 0; i < std::size(positions); ++i)
    EXPECT_EQ(0, std::memcmp(together[i].data(), alone[i].data(), size_t(qw) * sizeof(float))) << "query " << i;
  args[1].q_rows = 2;
  EXPECT_THROW(attention_single_rows(args, shape, pool), Error);
}

// Rows attended one at a time are split by kv head group or by query head depending on the thread
// count: every thread count gives the bits of one thread, alone and in a batched step.
TEST_P(OpsTable, SingleRowAttentionGivesTheSameBitsOnEveryThreadCount) {
  const KernelPath path = GetParam();
  if (!kernel_path_supported(path))
    GTEST_SKIP() << "this CPU cannot run the " << kernel_path_name(path) << " kernel path";
  const ScopedKernelPath scope(path);
  const AttentionShape shape{9, 3, 64};
  const int64_t qw = shape.q_heads * shape.head_dim, kvw = shape.kv_heads * shape.head_dim;
  const int64_t keys = 77;
  for (const int64_t rows : {int64_t(1), int64_t(5)}) {
    const std::vector<float> q = uniform(size_t(rows * qw), 120), k = uniform(size_t(keys * kvw), 121),
                             v = uniform(size_t(keys * kvw), 122);
    std::vector<std::vector<float>> outs;
    for (const int threads : {1, 2, 3, 4, 9}) {
      ThreadPool pool(threads);
      outs.emplace_back(size_t(rows * qw), -1.f);
      const AttentionArgs a{q.data(), rows, qw, k.data(), v.data(), keys, kvw, 0.125f, true, keys - rows,
                            outs.back().data(), qw};
      attention(a, shape, pool);
      EXPECT_EQ(0, std::memcmp(outs.back().data(), outs[0].data(), outs[0].size() * sizeof(float)))
          << rows << " rows on " << threads << " threads";
      if (rows == 1) {  // the same query twice in a batched step, each into its own output
        std::vector<float> first(outs[0].size(), -2.f), second(outs[0].size(), -3.f);
        AttentionArgs b0 = a, b1 = a;
        b0.out = first.data();
        b1.out = second.data();
        const AttentionArgs batch[] = {b0, b1};
        attention_single_rows(batch, shape, pool);
        EXPECT_EQ(0, std::memcmp(first.data(), outs[0].data(), outs[0].size() * sizeof(float)))
            << "batched, first, on " << threads << " threads";
        EXPECT_EQ(0, std::memcmp(second.data(), outs[0].data(), outs[0].size() * sizeof(float)))
            << "batched, second, on " << threads << " threads";
        // The parts a team of that many threads takes, one after the other on this thread, of the
        // query alone and of the batched pair.
        for (const size_t queries : {size_t(1), size_t(2)}) {
          std::vector<float> p0(outs[0].size(), -4.f), p1(outs[0].size(), -5.f);
          AttentionArgs parts[] = {a, a};
          parts[0].out = p0.data();
          parts[1].out = p1.data();
          for (int part = 0; part < threads; ++part)
            attention_single_rows_part({parts, queries}, shape, part, threads);
          EXPECT_EQ(0, std::memcmp(p0.data(), outs[0].data(), outs[0].size() * sizeof(float)))
              << queries << " queries in " << threads << " parts";
          if (queries == 2) {
            EXPECT_EQ(0, std::memcmp(p1.data(), outs[0].data(), outs[0].size() * sizeof(float)))
                << "the second query in " << threads << " parts";
          }
        }
      }
    }
    const AttentionArgs a{q.data(), rows, qw, k.data(), v.data(), keys, kvw, 0.125f, true, keys - rows,
                          outs[0].data(), qw};
    std::vector<float> want(outs[0].size());
    AttentionArgs r = a;
    r.out = want.data();
    attention_reference(r, shape);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(outs[0][i], want[i], 1e-5f) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, OpsTable, ::testing::ValuesIn(kAllKernelPaths),
                         [](const ::testing::TestParamInfo<KernelPath>& info) {
                           return std::string(kernel_path_name(info.param));
                         });

}  // namespace
}  // namespace smolvlm
