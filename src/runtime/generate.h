// The generation loop over a prefilled Session: choose a token, stop on an eos id (which is kept in
// the output, as HF does), after max_new_tokens, when the context is full or when the caller says
// so, otherwise decode it and go on.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/session.h"

namespace smolvlm {

struct GenerationOptions {
  int64_t max_new_tokens = 64;
  SamplingOptions sampling;
  std::vector<int64_t> eos_token_ids;  // usually ModelConfig::generation.eos_token_ids, plus any stop ids
  bool keep_step_logits = false;       // record the logits that chose each token
};

struct GenerationResult {
  std::vector<int64_t> ids;         // new tokens only (eos included when hit)
  bool stopped_on_eos = false;
  bool stopped_by_caller = false;   // on_token returned false
  bool context_full = false;        // the session had no room for the next token
  std::vector<float> step_logits;   // [ids.size(), vocab] when requested
  double decode_seconds = 0.0;      // time in decode() calls
};

// `prompt_ids` are the tokens already in the session (for the repetition penalty). `on_token` is
// called with each new id as soon as it is chosen and returns false to end generation there. Stops
// early (without error) when the session's context is full.
GenerationResult generate(Session& session, std::span<const int64_t> prompt_ids, const GenerationOptions& options,
                          const std::function<bool(int64_t)>& on_token = {});

}  // namespace smolvlm
