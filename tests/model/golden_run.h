// Running a model golden's inputs (tests/data/goldens/<case>) through a model: the vision tower and
// connector when the case has images, the prefill logits, and the greedy steps with their logits.
#pragma once

#include <cstdint>
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

inline CaseRun run_golden(const Model& model, const Golden& g, int threads) {
  ThreadPool pool(threads);
  CaseRun r;
  const std::vector<int64_t> ids = g.ids("input_ids");
  const int64_t max_new = g.spec["max_new_tokens"].get<int64_t>();
  Session session(model, pool, static_cast<int64_t>(ids.size()) + max_new);
  if (g.has_images()) {
    int64_t tiles = 0;
    std::vector<float> pixels = golden_pixels(g, &tiles);
    r.images = encode_images(model, pixels.data(), tiles, pool, /*keep_vision_hidden=*/true);
    std::vector<float> x = prompt_embeddings(model, ids, r.images);
    auto logits = session.prefill_embeddings(x.data(), static_cast<int64_t>(ids.size()));
    r.prefill_logits.assign(logits.begin(), logits.end());
  } else {
    auto logits = session.prefill(ids);
    r.prefill_logits.assign(logits.begin(), logits.end());
  }
  GenerationOptions opt;
  opt.max_new_tokens = max_new;
  opt.eos_token_ids = model.config().generation.eos_token_ids;
  opt.keep_step_logits = true;
  r.generation = generate(session, ids, opt);
  return r;
}

}  // namespace smolvlm::test
