// smolvlm_sessions_decode: several sessions' decode steps in one pass give each session exactly what
// it gets alone (bitwise, logits and greedy ids, for 1 to 8 sessions), on every
// kernel path this CPU has, with sessions at different positions; every misuse is an error that
// changes no session.
#include <gtest/gtest.h>

#include <smolvlm.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace smolvlm {
namespace {

constexpr int kSteps = 10;

std::vector<std::string> kernel_paths() {
  std::istringstream in(smolvlm_supported_kernel_paths());
  std::vector<std::string> out;
  for (std::string p; in >> p;) out.push_back(p);
  return out;
}

api::Model load_tiny(const std::string& path, const char* model = "smolvlm-tiny") {
  smolvlm_model_options o;
  smolvlm_model_options_init(&o);
  o.threads = 2;
  o.kernel_path = path.c_str();
  return api::Model::load(test::model_dir(model).string(), &o);
}

// Prompt s: a different length and different ids for each stream.
std::vector<int32_t> prompt(int s) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 3 + 5 * s; ++i) ids.push_back(100 + (s * 37 + i * 11) % 400);
  return ids;
}

using test::argmax;

struct Trace {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // after the prefill and after each step
};

Trace alone(const api::Model& m, int s) {
  api::Session session(m, 128);
  session.prefill(prompt(s));
  Trace t;
  t.logits.emplace_back(session.logits().begin(), session.logits().end());
  for (int k = 0; k < kSteps; ++k) {
    const int32_t id = argmax(session.logits());
    t.ids.push_back(id);
    session.decode(id);
    t.logits.emplace_back(session.logits().begin(), session.logits().end());
  }
  return t;
}

TEST(BatchDecode, EachStreamIsWhatItGetsAlone) {
  // HunYuan's decoder adds the per-head q/k norm after RoPE: the batched step must apply it too.
  for (const char* model : {"smolvlm-tiny", "hunyuan-tiny-a"})
  for (const std::string& path : kernel_paths()) {
    SCOPED_TRACE(std::string(model) + ", kernel path " + path);
    const api::Model m = load_tiny(path, model);
    std::vector<Trace> ref;
    for (int s = 0; s < 8; ++s) ref.push_back(alone(m, s));
    for (int n : {1, 2, 3, 4, 5, 8}) {
      SCOPED_TRACE("streams " + std::to_string(n));
      std::vector<std::unique_ptr<api::Session>> sessions;
      std::vector<smolvlm_session*> handles;
      for (int s = 0; s < n; ++s) {
        sessions.push_back(std::make_unique<api::Session>(m, 128));
        sessions.back()->prefill(prompt(s));
        handles.push_back(sessions.back()->get());
      }
      for (int k = 0; k < kSteps; ++k) {
        std::vector<int32_t> ids;
        for (int s = 0; s < n; ++s) ids.push_back(argmax(sessions[s]->logits()));
        ASSERT_EQ(smolvlm_sessions_decode(handles.data(), ids.data(), handles.size()), SMOLVLM_OK) << smolvlm_last_error();
        for (int s = 0; s < n; ++s) {
          ASSERT_EQ(ids[s], ref[s].ids[k]) << "stream " << s << " step " << k;
          const std::span<const float> got = sessions[s]->logits();
          const std::vector<float>& want = ref[s].logits[k + 1];
          ASSERT_EQ(got.size(), want.size());
          ASSERT_EQ(sessions[s]->position(), static_cast<int64_t>(prompt(s).size()) + k + 1);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "stream " << s << " step " << k;
        }
      }
    }
  }
}

TEST(BatchDecode, MisuseIsAnErrorAndChangesNoSession) {
  const api::Model m = load_tiny(kernel_paths().back());
  const api::Model other = load_tiny(kernel_paths().back());
  api::Session a(m, 8), b(m, 64), fresh(m, 64), foreign(other, 64);
  a.prefill(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7});
  b.prefill(std::vector<int32_t>{1, 2, 3});
  foreign.prefill(std::vector<int32_t>{1, 2});
  const std::vector<float> a_logits(a.logits().begin(), a.logits().end());
  auto call = [](std::vector<smolvlm_session*> s, std::vector<int32_t> ids) {
    return smolvlm_sessions_decode(s.data(), ids.data(), s.size());
  };
  EXPECT_EQ(call({b.get(), b.get()}, {1, 2}), SMOLVLM_ERR_STATE);
  EXPECT_NE(std::string(smolvlm_last_error()).find("twice"), std::string::npos);
  EXPECT_EQ(call({a.get(), fresh.get()}, {1, 2}), SMOLVLM_ERR_STATE);  // fresh was never prefilled
  EXPECT_EQ(call({a.get(), foreign.get()}, {1, 2}), SMOLVLM_ERR_STATE);
  EXPECT_EQ(call({a.get(), b.get()}, {1, 1 << 30}), SMOLVLM_ERR_BAD_INPUT);
  EXPECT_EQ(call({a.get(), nullptr}, {1, 2}), SMOLVLM_ERR_STATE);
  EXPECT_EQ(smolvlm_sessions_decode(nullptr, nullptr, 0), SMOLVLM_ERR_BAD_INPUT);
  EXPECT_EQ(a.position(), 7);
  EXPECT_EQ(b.position(), 3);
  EXPECT_EQ(std::memcmp(a.logits().data(), a_logits.data(), a_logits.size() * sizeof(float)), 0);
  // a's last slot, then a is full: the second batch is refused whole.
  EXPECT_EQ(call({a.get(), b.get()}, {1, 2}), SMOLVLM_OK);
  EXPECT_EQ(call({b.get(), a.get()}, {1, 2}), SMOLVLM_ERR_STATE);
  EXPECT_EQ(a.position(), 8);
  EXPECT_EQ(b.position(), 4);
}

}  // namespace
}  // namespace smolvlm

namespace smolvlm {
namespace {

// Four threads, each running whole requests on its own session of one decode group: every answer is
// the one the request gets alone, whatever steps it shared.
TEST(BatchDecode, DecodeGroupKeepsEveryAnswer) {
  const api::Model m = load_tiny(kernel_paths().back());
  const char* prompts[] = {"The capital of France is", "Once upon a time", "1, 2, 3,", "Hello"};
  auto request = [&](int i, int64_t n) {
    smolvlm_request r;
    smolvlm_request_init(&r);
    r.prompt = prompts[i % 4];
    r.max_new_tokens = n;
    r.ignore_eos = 1;
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 4; ++i) {
    const smolvlm_request r = request(i, 8 + 3 * i);
    const api::Result res = m.generate(r);
    alone.emplace_back(res.token_ids().begin(), res.token_ids().end());
  }
  smolvlm_decode_group* group = nullptr;
  ASSERT_EQ(smolvlm_decode_group_create(m.get(), &group), SMOLVLM_OK);
  {
    std::vector<std::unique_ptr<api::Session>> sessions;
    for (int i = 0; i < 4; ++i) {
      sessions.push_back(std::make_unique<api::Session>(m, 128));
      ASSERT_EQ(smolvlm_session_set_decode_group(sessions.back()->get(), group), SMOLVLM_OK);
    }
    std::vector<std::vector<std::vector<int32_t>>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int k = 0; k < 3; ++k) {  // requests of different lengths start and end at different steps
          const smolvlm_request r = request(t + k, 8 + 3 * ((t + k) % 4));
          const api::Result res = sessions[t]->run(r);
          got[t].emplace_back(res.token_ids().begin(), res.token_ids().end());
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(got[t][k], alone[(t + k) % 4]) << "thread " << t << " request " << k;
  }
  smolvlm_decode_group_free(group);
}


// Prompts prefilled in small chunks between the group's decode steps, with prefix reuse, while other
// members decode: every answer is still the one the request gets alone.
TEST(BatchDecode, ChunkedPrefillAndReuseInAGroupKeepEveryAnswer) {
  const api::Model m = load_tiny(kernel_paths().back());
  const std::string prompts[] = {"The capital of France is a city that", "Once upon a time there was a", "1, 2, 3, 4, 5,"};
  auto request = [&](int i, int64_t n) {
    smolvlm_request r;
    smolvlm_request_init(&r);
    r.prompt = prompts[i % 3].c_str();
    r.max_new_tokens = n;
    r.ignore_eos = 1;
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 3; ++i) {
    const api::Result res = m.generate(request(i, 12));
    alone.emplace_back(res.token_ids().begin(), res.token_ids().end());
  }
  smolvlm_decode_group* group = nullptr;
  ASSERT_EQ(smolvlm_decode_group_create(m.get(), &group), SMOLVLM_OK);
  {
    std::vector<std::unique_ptr<api::Session>> sessions;
    for (int i = 0; i < 3; ++i) {
      sessions.push_back(std::make_unique<api::Session>(m, 128));
      ASSERT_EQ(smolvlm_session_set_decode_group(sessions.back()->get(), group), SMOLVLM_OK);
    }
    std::vector<std::vector<std::vector<int32_t>>> got(3);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        for (int k = 0; k < 4; ++k) {
          smolvlm_request r = request(t + k, 12);
          r.prefill_chunk = 1 + (t + k) % 3;
          r.reuse_prefix = 1;
          const api::Result res = sessions[t]->run(r);
          got[t].emplace_back(res.token_ids().begin(), res.token_ids().end());
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 3; ++t)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(got[t][k], alone[(t + k) % 3]) << "thread " << t << " request " << k;
  }
  smolvlm_decode_group_free(group);
}

}  // namespace
}  // namespace smolvlm
