// smolvlm_sessions_decode: one decode step for several sessions of a model together.
#include <smolvlm.h>

#include <vector>

#include "api/handles.h"
#include "runtime/decode_group.h"
#include "runtime/session.h"

extern "C" smolvlm_status smolvlm_sessions_decode(smolvlm_session* const* sessions, const int32_t* ids, size_t n) {
  using smolvlm::capi::fail;
  if (n == 0) return fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_sessions_decode: no sessions (n is 0)");
  if (!sessions || !ids) return fail(SMOLVLM_ERR_STATE, "smolvlm_sessions_decode: the sessions or ids pointer is NULL");
  for (size_t i = 0; i < n; ++i)
    if (!sessions[i]) return fail(SMOLVLM_ERR_STATE, "smolvlm_sessions_decode: session " + std::to_string(i) + " is NULL");
  for (size_t i = 1; i < n; ++i)
    if (&sessions[i]->model != &sessions[0]->model)
      return fail(SMOLVLM_ERR_STATE, "smolvlm_sessions_decode: session " + std::to_string(i) + " belongs to another model");
  return smolvlm::capi::guarded(&sessions[0]->model, [&] {
    std::vector<smolvlm::Session*> s(n);
    std::vector<int64_t> tokens(n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = &sessions[i]->session;
      tokens[i] = ids[i];
    }
    smolvlm::decode_batch(s, tokens);
  });
}

struct smolvlm_decode_group {
  explicit smolvlm_decode_group(smolvlm_model& m) : model(m) {}
  smolvlm_model& model;
  smolvlm::DecodeGroup group;
};

extern "C" smolvlm_status smolvlm_decode_group_create(smolvlm_model* model, smolvlm_decode_group** out) {
  if (!out) return smolvlm::capi::fail(SMOLVLM_ERR_STATE, "smolvlm_decode_group_create: the output pointer is NULL");
  return smolvlm::capi::guarded(model, [&] { *out = new smolvlm_decode_group(*model); });
}

extern "C" void smolvlm_decode_group_free(smolvlm_decode_group* group) { delete group; }

extern "C" smolvlm_status smolvlm_session_set_decode_group(smolvlm_session* session, smolvlm_decode_group* group) {
  using smolvlm::capi::fail;
  if (!session) return fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  if (group && &group->model != &session->model)
    return fail(SMOLVLM_ERR_STATE, "smolvlm_session_set_decode_group: the group belongs to another model");
  return smolvlm::capi::guarded([&] { session->session.set_decode_group(group ? &group->group : nullptr); });
}
