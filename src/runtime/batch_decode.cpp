// decode_batch (runtime/session.h): the decode steps of several sessions of one model together.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/gemm.h"
#include "runtime/session.h"

namespace smolvlm {

void decode_batch(std::span<Session* const> sessions, std::span<const int64_t> tokens) {
  if (sessions.empty()) throw bad_input("decode_batch: no sessions");
  if (sessions.size() != tokens.size())
    throw bad_input("decode_batch: " + std::to_string(sessions.size()) + " sessions but " + std::to_string(tokens.size()) +
                    " tokens");
  const int64_t rows = static_cast<int64_t>(sessions.size());
  Session& lead = *sessions[0];
  const LlamaModel& text = lead.model_.text();
  std::vector<KvView> views;
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < rows; ++i) {
    Session* s = sessions[static_cast<size_t>(i)];
    const std::string which = "decode_batch: session " + std::to_string(i);
    if (!s) throw state_error(which + " is NULL");
    if (&s->model_ != &lead.model_) throw state_error(which + " belongs to another model");
    if (std::find(sessions.begin(), sessions.begin() + i, s) != sessions.begin() + i)
      throw state_error(which + " appears twice");
    if (!s->started()) throw state_error(which + ": decode before prefill: the session holds no prompt");
    s->check_room(1, "decode");
    if (tokens[static_cast<size_t>(i)] < 0 || tokens[static_cast<size_t>(i)] >= text.vocab())
      throw bad_input(which + ": token id " + std::to_string(tokens[static_cast<size_t>(i)]) + " is outside the vocabulary of " +
                      std::to_string(text.vocab()));
    views.push_back(s->cache_.view());
    positions.push_back(s->position_);
  }
  lead.ensure_buffers(rows);
  text.embed(tokens.data(), rows, lead.x_.data());
  const size_t vocab = static_cast<size_t>(text.vocab());
  std::vector<float>& logits = lead.batch_logits_;
  logits.resize(static_cast<size_t>(rows) * vocab);
  // In groups the products compute row by row exactly as for one row: each stream's logits are
  // bitwise those of decoding it alone, and each group still reads the weights once.
  const int64_t group = std::max<int64_t>(1, linear_row_exact_max());
  for (int64_t g = 0; g < rows; g += group)
    text.decode_batch(lead.x_.data() + g * text.hidden(), std::min(group, rows - g), positions.data() + g, views.data() + g,
                      *lead.scratch_, lead.pool_, logits.data() + static_cast<size_t>(g) * vocab);
  for (int64_t i = 0; i < rows; ++i) {
    Session* s = sessions[static_cast<size_t>(i)];
    s->logits_.resize(vocab);
    std::memcpy(s->logits_.data(), logits.data() + static_cast<size_t>(i) * vocab, vocab * sizeof(float));
    s->position_ += 1;
    s->content_.append_ids(tokens.subspan(static_cast<size_t>(i), 1));
  }
}

}  // namespace smolvlm
