// Running a model golden's inputs (tests/data/goldens/<case>) through a model: the vision tower and
// connector when the case has images, the prefill logits, and the greedy steps with their logits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "golden_util.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"

namespace smolvlm::test {

struct CaseRun {
  ImageFeatures images;
  std::vector<float> prefill_logits;
  GenerationResult generation;
};

// How run_golden feeds the prompt: all at once (the prefill path), or one position at a time, so
// that every product of the text model takes the decode path; the images are encoded on
// `vision_pool` where given, else on the run's pool.
struct GoldenFeed {
  bool row_by_row = false;
  ThreadPool* vision_pool = nullptr;
};

inline CaseRun run_golden(const Model& model, const Golden& g, ThreadPool& pool, GoldenFeed feed = {}) {
  CaseRun r;
  const std::vector<int64_t> ids = g.ids("input_ids");
  const int64_t max_new = g.spec["max_new_tokens"].get<int64_t>();
  Session session(model, pool, static_cast<int64_t>(ids.size()) + max_new);
  const size_t n = ids.size();
  std::span<const float> logits;
  if (g.has_images()) {
    int64_t tiles = 0;
    std::vector<float> pixels = golden_pixels(g, &tiles);
    r.images = encode_images(model, pixels.data(), tiles, feed.vision_pool ? *feed.vision_pool : pool,
                             /*keep_vision_hidden=*/true);
    std::vector<float> x = prompt_embeddings(model, ids, r.images);
    if (feed.row_by_row) {
      for (size_t i = 0; i < n; ++i) logits = session.prefill_embeddings(x.data() + i * (x.size() / n), 1);
    } else {
      logits = session.prefill_embeddings(x.data(), static_cast<int64_t>(n));
    }
  } else if (feed.row_by_row) {
    for (size_t i = 0; i < n; ++i) logits = session.prefill(std::span<const int64_t>(ids).subspan(i, 1));
  } else {
    logits = session.prefill(ids);
  }
  r.prefill_logits.assign(logits.begin(), logits.end());
  GenerationOptions opt;
  opt.max_new_tokens = max_new;
  opt.eos_token_ids = model.config().generation.eos_token_ids;
  opt.keep_step_logits = true;
  r.generation = generate(session, ids, opt);
  return r;
}

inline CaseRun run_golden(const Model& model, const Golden& g, int threads) {
  ThreadPool pool(threads);
  return run_golden(model, g, pool);
}

// All logits of a run: the prefill's then every step's.
inline std::vector<float> all_logits(const CaseRun& r) {
  std::vector<float> v = r.prefill_logits;
  v.insert(v.end(), r.generation.step_logits.begin(), r.generation.step_logits.end());
  return v;
}

// Mean KL(p || q) over the rows of two [rows, V] logit arrays, and the fraction of rows whose argmax agree.
inline void agreement(const std::vector<float>& p, const std::vector<float>& q, int64_t V, double* kl, double* top1) {
  const int64_t rows = int64_t(p.size()) / V;
  double total = 0, same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = p.data() + r * V;
    const float* b = q.data() + r * V;
    const double ma = *std::max_element(a, a + V), mb = *std::max_element(b, b + V);
    double za = 0, zb = 0;
    for (int64_t i = 0; i < V; ++i) za += std::exp(a[i] - ma), zb += std::exp(b[i] - mb);
    double k = 0;
    for (int64_t i = 0; i < V; ++i) {
      const double lpa = a[i] - ma - std::log(za), lpb = b[i] - mb - std::log(zb);
      k += std::exp(lpa) * (lpa - lpb);
    }
    total += k;
    same += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
  }
  *kl = total / double(rows);
  *top1 = same / double(rows);
}

}  // namespace smolvlm::test
