// Time of one batched decode step (smolvlm_sessions_decode) at 1, 2, 4 and 8 sessions against the
// same steps one session at a time: whether a step of n rows costs about one pass over the weights.
// BM_GroupStreams/n/t: n threads, each generating t greedy tokens (64 or 256) on its own session of one
// decode group (what `smolvlm serve --parallel n` runs per request, without HTTP): aggregate tok/s of
// whole requests, each request's prompt prefill included (its share shrinks as t grows).
// Usage: SMOLVLM_BENCH_MODEL=DIR [SMOLVLM_BENCH_THREADS=2] [SMOLVLM_BENCH_PRECISION=exact|fast]
//        [SMOLVLM_BENCH_WEIGHT_MEMORY=read|map] [SMOLVLM_BENCH_CONTEXT=4096] decode_step_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <smolvlm.hpp>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const smolvlm::api::Model& model() {
  static const smolvlm::api::Model m = [] {
    smolvlm_model_options o;
    smolvlm_model_options_init(&o);
    const char* threads = std::getenv("SMOLVLM_BENCH_THREADS");
    o.threads = threads ? std::atoi(threads) : 2;
    o.precision = std::getenv("SMOLVLM_BENCH_PRECISION");          // null: the default (exact)
    o.weight_memory = std::getenv("SMOLVLM_BENCH_WEIGHT_MEMORY");  // null: the library's choice
    const char* dir = std::getenv("SMOLVLM_BENCH_MODEL");
    if (!dir) throw std::runtime_error("set SMOLVLM_BENCH_MODEL to a model folder");
    return smolvlm::api::Model::load(dir, &o);
  }();
  return m;
}

// Positions a session holds before BM_BatchedStep truncates it back to its prompt: the steps attend
// over 8 to this many keys (a short context leaves the weights alone to time).
int64_t context() {
  const char* c = std::getenv("SMOLVLM_BENCH_CONTEXT");
  const int64_t n = c ? std::atoll(c) : 4096;
  if (n < 16) throw std::runtime_error("SMOLVLM_BENCH_CONTEXT must be at least 16");
  return n;
}

std::vector<std::unique_ptr<smolvlm::api::Session>> sessions(int n) {
  std::vector<std::unique_ptr<smolvlm::api::Session>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<smolvlm::api::Session>(model(), context()));
    const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, int32_t(8 + i)};
    out.back()->prefill(prompt);
  }
  return out;
}

void BM_BatchedStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto s = sessions(n);
  std::vector<smolvlm_session*> handles;
  for (auto& x : s) handles.push_back(x->get());
  const std::vector<int32_t> ids(static_cast<size_t>(n), 42);
  for (auto _ : state) {
    if (s[0]->position() + 1 >= s[0]->capacity())
      for (auto& x : s) smolvlm_session_truncate(x->get(), 8);
    smolvlm::api::check(smolvlm_sessions_decode(handles.data(), ids.data(), handles.size()));
  }
  state.counters["rows"] = n;
  state.counters["tok_s"] = benchmark::Counter(double(n) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_OneByOne(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto s = sessions(n);
  for (auto _ : state) {
    for (auto& x : s) {
      if (x->position() + 1 >= x->capacity()) smolvlm_session_truncate(x->get(), 8);
      x->decode(42);
    }
  }
  state.counters["rows"] = n;
  state.counters["tok_s"] = benchmark::Counter(double(n) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_GroupStreams(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int new_tokens = static_cast<int>(state.range(1));
  smolvlm_decode_group* group = nullptr;
  smolvlm::api::check(smolvlm_decode_group_create(model().get(), &group));
  std::vector<std::unique_ptr<smolvlm::api::Session>> s;
  for (int i = 0; i < n; ++i) {
    s.push_back(std::make_unique<smolvlm::api::Session>(model(), 512));
    smolvlm::api::check(smolvlm_session_set_decode_group(s.back()->get(), group));
  }
  const std::string prompts[] = {"Once upon a time", "The capital of France is", "1, 2, 3,", "Hello there",
                                 "A story about a cat", "In the beginning", "Dear diary,", "The weather today"};
  int64_t tokens = 0;
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
      threads.emplace_back([&, i] {
        smolvlm_request r;
        smolvlm_request_init(&r);
        r.prompt = prompts[i % 8].c_str();
        r.max_new_tokens = new_tokens;
        r.ignore_eos = 1;
        s[static_cast<size_t>(i)]->run(r);
      });
    for (auto& t : threads) t.join();
    tokens += int64_t(n) * new_tokens;
  }
  s.clear();
  smolvlm_decode_group_free(group);
  state.counters["streams"] = n;
  state.counters["tok_s"] = benchmark::Counter(double(tokens), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_BatchedStep)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_OneByOne)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_GroupStreams)
    ->ArgsProduct({{1, 2, 4, 8}, {64}})
    ->Args({1, 256})
    ->Args({4, 256})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
