// Two models' decode steps alternated in one process, a few tokens a turn (turns A B B A, then
// B A A B, ...): their ratio under the same moments of a machine whose speed moves from second to
// second, where runs of each model one after the other (a sitting's rounds) compare different moments.
// Each model keeps its own session and thread pool. The first token of a turn is not timed: it wakes
// its pool's workers, while the other pool's spin down (ThreadPool::kSpinNanoseconds); the others
// follow each other at once, as the tokens of `smolvlm bench` and of a generation do.
//   decode_pair_bench MODEL_A[:fast|:exact] MODEL_B[:fast|:exact] [threads=2] [pairs=200] [context=72]
// `pairs` counts A B B A groups of turns (each model's timed steps: 6 a group). Prints each model's
// median, tenth percentile and mean step, and A's rate over B's (B's step over A's; JSON on stdout, a
// line on stderr). The sessions decode from position 8 (an 8-token prompt) to `context`, then start over
// from there, as `smolvlm bench` decodes after its 8-token prompt.
#include <smolvlm.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

namespace {

struct Side {
  std::string dir, precision;
};

Side parse_side(const std::string& arg) {
  for (const char* p : {":fast", ":exact"}) {
    const std::string suffix = p;
    if (arg.size() > suffix.size() && arg.compare(arg.size() - suffix.size(), suffix.size(), suffix) == 0)
      return {arg.substr(0, arg.size() - suffix.size()), suffix.substr(1)};
  }
  return {arg, "exact"};
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_A[:fast|:exact] MODEL_B[:fast|:exact] [threads=2] [pairs=200] [context=72]\n",
                 argv[0]);
    return 2;
  }
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2, pairs = argc > 4 ? std::atoi(argv[4]) : 200;
  const int64_t context = argc > 5 ? std::atoll(argv[5]) : 72;
  if (threads < 1 || threads > 256 || pairs < 1 || pairs > 100000 || context < 10 || context > 100000) {
    std::fprintf(stderr, "threads 1-256, pairs 1-100000, context 10-100000\n");
    return 2;
  }
  try {
    const Side sides[2] = {parse_side(argv[1]), parse_side(argv[2])};
    std::vector<smolvlm::api::Model> models;
    std::vector<smolvlm::api::Session> sessions;
    for (const Side& s : sides) {
      smolvlm_model_options o;
      smolvlm_model_options_init(&o);
      o.threads = threads;
      o.precision = s.precision.c_str();
      models.push_back(smolvlm::api::Model::load(s.dir, &o));
    }
    const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    for (const smolvlm::api::Model& m : models) {
      sessions.emplace_back(m, context);
      sessions.back().prefill(prompt);
    }
    std::vector<double> step_ms[2];
    const auto decode = [&](int side, bool timed) {
      smolvlm::api::Session& s = sessions[static_cast<size_t>(side)];
      if (s.position() + 1 >= s.capacity()) smolvlm_session_truncate(s.get(), static_cast<int64_t>(prompt.size()));
      const auto t0 = std::chrono::steady_clock::now();
      s.decode(9 + static_cast<int32_t>(s.position() % 64));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (timed) step_ms[side].push_back(ms);
    };
    constexpr int kTurnTokens = 4;
    for (int i = 0; i < 4; ++i) decode(i % 2, false);  // warm-up: first touch of each model's scratch
    for (int i = 0; i < pairs; ++i) {
      const int first = i % 2;  // turns A B B A, then B A A B
      for (int side : {first, 1 - first, 1 - first, first})
        for (int t = 0; t < kTurnTokens; ++t) decode(side, t > 0);
    }
    double median[2], p10[2], mean[2];
    for (int s = 0; s < 2; ++s) {
      median[s] = quantile(step_ms[s], 0.5);
      p10[s] = quantile(step_ms[s], 0.1);
      mean[s] = std::accumulate(step_ms[s].begin(), step_ms[s].end(), 0.0) / static_cast<double>(step_ms[s].size());
    }
    std::fprintf(stderr, "A %s (%s): median %.3f ms, p10 %.3f, mean %.3f | B %s (%s): median %.3f ms, p10 %.3f, mean %.3f | "
                 "A's rate over B's: median %.3f, p10 %.3f, mean %.3f\n",
                 sides[0].dir.c_str(), sides[0].precision.c_str(), median[0], p10[0], mean[0], sides[1].dir.c_str(),
                 sides[1].precision.c_str(), median[1], p10[1], mean[1], median[1] / median[0], p10[1] / p10[0],
                 mean[1] / mean[0]);
    std::printf("{\"threads\": %d, \"pairs\": %d, \"context\": %lld, \"a_median_ms\": %.4f, \"a_p10_ms\": %.4f, "
                "\"a_mean_ms\": %.4f, \"b_median_ms\": %.4f, \"b_p10_ms\": %.4f, \"b_mean_ms\": %.4f, "
                "\"a_rate_over_b_median\": %.4f, \"a_rate_over_b_mean\": %.4f}\n",
                threads, pairs, static_cast<long long>(context), median[0], p10[0], mean[0], median[1], p10[1], mean[1],
                median[1] / median[0], mean[1] / mean[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_pair_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
