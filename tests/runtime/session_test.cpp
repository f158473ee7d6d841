// Runtime state: the KV cache boundary (last slot works, one past is an error), misuse errors,
// reset, and sessions that never interfere with each other.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "test_util.h"

namespace smolvlm {
namespace {

const Model& llama() {
  static auto m = Model::load(test::data_dir() / "models" / "llama-tiny");
  return *m;
}
const Model& vlm() {
  static auto m = Model::load(test::data_dir() / "models" / "smolvlm-tiny");
  return *m;
}

const std::vector<int64_t> kPrompt = {1, 9690, 198, 2683, 314, 260, 3575, 282, 4649, 47, 2, 198};

template <typename F>
ErrorKind error_kind_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorKind::Internal;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

TEST(Session, LastSlotWorksAndOnePastIsAStateError) {
  ThreadPool pool(2);
  const int64_t capacity = static_cast<int64_t>(kPrompt.size()) + 2;
  Session tight(llama(), pool, capacity);
  Session roomy(llama(), pool, 64);
  EXPECT_EQ(copy(tight.prefill(kPrompt)), copy(roomy.prefill(kPrompt)));
  EXPECT_EQ(copy(tight.decode(42)), copy(roomy.decode(42)));
  // position = capacity - 1: the last slot.
  ASSERT_EQ(tight.position(), capacity - 1);
  EXPECT_EQ(copy(tight.decode(43)), copy(roomy.decode(43)));
  EXPECT_EQ(tight.position(), capacity);
  EXPECT_EQ(error_kind_of([&] { tight.decode(44); }), ErrorKind::State);
  EXPECT_EQ(tight.position(), capacity) << "a refused decode must not move the session";
  EXPECT_EQ(error_kind_of([&] { tight.prefill(std::vector<int64_t>{5}); }), ErrorKind::State);
}

TEST(Session, PromptLongerThanTheContextIsRefused) {
  ThreadPool pool(1);
  Session s(llama(), pool, static_cast<int64_t>(kPrompt.size()) - 1);
  EXPECT_EQ(error_kind_of([&] { s.prefill(kPrompt); }), ErrorKind::State);
  EXPECT_EQ(s.position(), 0);
  Session exact(llama(), pool, static_cast<int64_t>(kPrompt.size()));
  EXPECT_NO_THROW(exact.prefill(kPrompt));
  EXPECT_EQ(error_kind_of([&] { exact.decode(1); }), ErrorKind::State);
}

TEST(Session, DecodeBeforePrefillAndLogitsBeforePrefillAreStateErrors) {
  ThreadPool pool(1);
  Session s(llama(), pool, 16);
  EXPECT_EQ(error_kind_of([&] { s.decode(1); }), ErrorKind::State);
  EXPECT_EQ(error_kind_of([&] { (void)s.logits(); }), ErrorKind::State);
}

TEST(Session, TruncateRejectsNegativeAndFuturePositions) {
  ThreadPool pool(1);
  Session s(llama(), pool, 32);
  s.prefill(kPrompt);
  EXPECT_EQ(error_kind_of([&] { s.truncate(-1); }), ErrorKind::State);
  EXPECT_EQ(error_kind_of([&] { s.truncate(s.position() + 1); }), ErrorKind::State);
  // Truncating to the prompt minus its last token and re-feeding it gives the same logits (up to
  // summation order: one row instead of a batch of rows).
  const std::vector<float> full = copy(s.logits());
  s.truncate(static_cast<int64_t>(kPrompt.size()) - 1);
  const std::vector<float> again = copy(s.prefill(std::vector<int64_t>{kPrompt.back()}));
  ASSERT_EQ(again.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i) ASSERT_NEAR(again[i], full[i], 1e-5) << i;
}

TEST(Session, BadTokenIdIsBadInputAndLeavesTheSessionUnchanged) {
  ThreadPool pool(1);
  Session s(llama(), pool, 32);
  EXPECT_EQ(error_kind_of([&] { s.prefill(std::vector<int64_t>{1, -5}); }), ErrorKind::BadInput);
  EXPECT_EQ(s.position(), 0);
  s.prefill(kPrompt);
  EXPECT_EQ(error_kind_of([&] { s.decode(llama().text().vocab()); }), ErrorKind::BadInput);
  EXPECT_EQ(s.position(), static_cast<int64_t>(kPrompt.size()));
}

TEST(Session, ResetGivesTheSameResultsAsAFreshSession) {
  ThreadPool pool(2);
  Session reused(llama(), pool, 32);
  reused.prefill(std::vector<int64_t>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  reused.decode(3);
  reused.reset();
  EXPECT_EQ(reused.position(), 0);
  EXPECT_EQ(error_kind_of([&] { reused.decode(1); }), ErrorKind::State);
  Session fresh(llama(), pool, 32);
  EXPECT_EQ(copy(reused.prefill(kPrompt)), copy(fresh.prefill(kPrompt)));
  EXPECT_EQ(copy(reused.decode(7)), copy(fresh.decode(7)));
}

TEST(Session, CacheFromAnotherModelOrShapeIsRefused) {
  ThreadPool pool(1);
  KvCache for_llama(llama(), 16);
  EXPECT_EQ(error_kind_of([&] { Session s(vlm(), pool, std::move(for_llama)); }), ErrorKind::State);
  KvShape shape = kv_shape_of(llama());
  shape.head_dim += 2;
  KvCache wrong_shape(llama().identity(), shape, 16);
  EXPECT_EQ(error_kind_of([&] { Session s(llama(), pool, std::move(wrong_shape)); }), ErrorKind::State);
  KvCache right(llama(), 16);
  Session ok(llama(), pool, std::move(right));
  EXPECT_NO_THROW(ok.prefill(kPrompt));
}

TEST(Session, BadCapacityIsRefused) {
  EXPECT_EQ(error_kind_of([&] { KvCache c(llama(), 0); }), ErrorKind::BadInput);
  EXPECT_EQ(error_kind_of([&] { KvCache c(llama(), -3); }), ErrorKind::BadInput);
  EXPECT_EQ(error_kind_of([&] { KvCache c(llama(), int64_t(1) << 60); }), ErrorKind::BadInput);
}

TEST(Session, TwoInterleavedSessionsEqualTwoSequentialOnes) {
  ThreadPool pool(2);
  const std::vector<int64_t> other = {1, 2, 3, 4, 5, 6, 7};
  GenerationOptions opt;
  opt.max_new_tokens = 6;
  opt.keep_step_logits = true;

  Session a_alone(llama(), pool, 64), b_alone(llama(), pool, 64);
  a_alone.prefill(kPrompt);
  const GenerationResult a_ref = generate(a_alone, kPrompt, opt);
  b_alone.prefill(other);
  const GenerationResult b_ref = generate(b_alone, other, opt);

  Session a(llama(), pool, 64), b(llama(), pool, 64);
  std::vector<float> a_logits = copy(a.prefill(kPrompt));
  std::vector<float> b_logits = copy(b.prefill(other));
  const int64_t V = llama().text().vocab();
  for (size_t step = 0; step < a_ref.ids.size(); ++step) {
    EXPECT_EQ(a_logits, std::vector<float>(a_ref.step_logits.begin() + step * V, a_ref.step_logits.begin() + (step + 1) * V));
    EXPECT_EQ(b_logits, std::vector<float>(b_ref.step_logits.begin() + step * V, b_ref.step_logits.begin() + (step + 1) * V));
    if (step + 1 == a_ref.ids.size()) break;
    a_logits = copy(a.decode(a_ref.ids[step]));
    b_logits = copy(b.decode(b_ref.ids[step]));
  }
}

TEST(Generate, StopsAtTheContextEndWithoutError) {
  ThreadPool pool(1);
  Session s(llama(), pool, static_cast<int64_t>(kPrompt.size()) + 3);
  s.prefill(kPrompt);
  GenerationOptions opt;
  opt.max_new_tokens = 50;
  const GenerationResult r = generate(s, kPrompt, opt);
  // 3 decodes fill the context; the 4th token is chosen from the last logits.
  EXPECT_EQ(r.ids.size(), 4u);
  EXPECT_EQ(s.position(), s.capacity());
}

}  // namespace
}  // namespace smolvlm
