// Requests, sessions and text: the C structs turned into the runtime's, and back.
#include <chrono>

#include "api/handles.h"
#include "core/error.h"
#include "runtime/decode_group.h"
#include "text/tokenizer.h"

using namespace smolvlm;

namespace smolvlm::capi {

ImageInput image_input(const smolvlm_image& im, const std::string& where) {
  ImageInput out;
  switch (im.kind) {
    case SMOLVLM_IMAGE_PATH:
      if (!im.path || !*im.path) throw bad_input(where + ": an image file without a path");
      out.kind = ImageInput::Kind::Path;
      out.path = im.path;
      return out;
    case SMOLVLM_IMAGE_ENCODED:
    case SMOLVLM_IMAGE_RGB8:
      if (!im.data || im.size == 0) throw bad_input(where + ": an image without data");
      out.kind = im.kind == SMOLVLM_IMAGE_ENCODED ? ImageInput::Kind::Encoded : ImageInput::Kind::Rgb8;
      out.bytes = {im.data, im.size};
      out.width = im.width;
      out.height = im.height;
      return out;
  }
  throw bad_input(where + ": unknown image kind " + std::to_string(static_cast<int>(im.kind)));
}

namespace {

ChatRole role_of(smolvlm_role role, size_t message) {
  switch (role) {
    case SMOLVLM_ROLE_SYSTEM: return ChatRole::System;
    case SMOLVLM_ROLE_USER: return ChatRole::User;
    case SMOLVLM_ROLE_ASSISTANT: return ChatRole::Assistant;
  }
  throw bad_input("message " + std::to_string(message) + ": unknown role " + std::to_string(static_cast<int>(role)));
}

}  // namespace

PromptInput prompt_input(const smolvlm_request& r) {
  PromptInput in;
  if (r.prompt) in.raw = r.prompt;
  if (r.n_messages > 0 && !r.messages) throw bad_input("the request counts messages but gives none");
  for (size_t i = 0; i < r.n_messages; ++i) {
    const smolvlm_message& m = r.messages[i];
    Message msg;
    msg.role = role_of(m.role, i);
    if (m.n_parts > 0 && !m.parts) throw bad_input("message " + std::to_string(i) + " counts parts but gives none");
    for (size_t j = 0; j < m.n_parts; ++j) {
      const smolvlm_part& p = m.parts[j];
      ContentPart part;
      if (p.kind == SMOLVLM_PART_TEXT) {
        if (!p.text) throw bad_input("message " + std::to_string(i) + " part " + std::to_string(j) + ": a text part without text");
        part.text = p.text;
      } else if (p.kind == SMOLVLM_PART_IMAGE) {
        part.is_image = true;
        part.image = image_input(p.image, "message " + std::to_string(i) + " part " + std::to_string(j));
      } else {
        throw bad_input("message " + std::to_string(i) + " part " + std::to_string(j) + ": unknown part kind " +
                        std::to_string(static_cast<int>(p.kind)));
      }
      msg.parts.push_back(std::move(part));
    }
    in.messages.push_back(std::move(msg));
  }
  if (r.split < -1 || r.split > 1) throw bad_input("split must be -1, 0 or 1, got " + std::to_string(r.split));
  if (r.split >= 0) in.split = r.split == 1;
  if (r.dump_dir && *r.dump_dir) in.dump_dir = r.dump_dir;
  if (r.reuse_prefix < 0 || r.reuse_prefix > 1) throw bad_input("reuse_prefix must be 0 or 1, got " + std::to_string(r.reuse_prefix));
  if (r.prefill_chunk < 0) throw bad_input("prefill_chunk must be >= 0, got " + std::to_string(r.prefill_chunk));
  return in;
}

RequestOptions request_options(const smolvlm_request& r) {
  RequestOptions o;
  if (r.max_new_tokens < 0) throw bad_input("max_new_tokens must be >= 0, got " + std::to_string(r.max_new_tokens));
  o.generation.max_new_tokens = r.max_new_tokens;
  const smolvlm_sampling& s = r.sampling;
  o.generation.sampling = {s.temperature, s.top_k, s.top_p, s.min_p, s.repetition_penalty, s.seed};
  o.generation.sampling.validate();
  if (r.n_stop > 0 && !r.stop) throw bad_input("the request counts stop strings but gives none");
  for (size_t i = 0; i < r.n_stop; ++i) {
    if (!r.stop[i]) throw bad_input("stop string " + std::to_string(i) + " is NULL");
    o.stop_strings.emplace_back(r.stop[i]);
  }
  if (r.n_stop_ids > 0 && !r.stop_ids) throw bad_input("the request counts stop ids but gives none");
  for (size_t i = 0; i < r.n_stop_ids; ++i) o.generation.eos_token_ids.push_back(r.stop_ids[i]);
  if (r.dump_dir && *r.dump_dir) o.dump_dir = r.dump_dir;
  o.ignore_eos = r.ignore_eos != 0;
  return o;
}

void check_context(const smolvlm_model& m, int64_t context) {
  if (context < 0) throw bad_input("context must be >= 0, got " + std::to_string(context));
  if (context > m.max_context)
    throw bad_input("context " + std::to_string(context) + " exceeds the model's max_context " +
                    std::to_string(m.max_context));
}

TextSink text_sink(const smolvlm_request& r) {
  if (!r.on_piece) return {};
  return [cb = r.on_piece, user = r.user_data](std::string_view piece) { return cb(piece.data(), piece.size(), user) != 0; };
}

void fill_result(const RequestResult& r, smolvlm_result* out) {
  smolvlm_result res{};
  res.struct_size = sizeof(res);
  res.text = copy_string(r.text);
  res.text_size = r.text.size();
  res.token_ids = copy_ids(std::vector<int32_t>(r.token_ids.begin(), r.token_ids.end()));
  res.n_tokens = r.token_ids.size();
  res.prompt_tokens = r.prompt_tokens;
  res.image_tiles = r.image_tiles;
  res.finish_reason = static_cast<smolvlm_finish_reason>(r.finish);
  res.timings = {r.timings.load, r.timings.preprocess, r.timings.vision, r.timings.prefill, r.timings.decode};
  res.kernel_path = kernel_path_name(active_kernel_path());
  res.reused_tokens = r.reused_tokens;
  res.unprintable_tokens = r.unprintable_tokens;
  *out = res;
}

}  // namespace smolvlm::capi

namespace {

using Clock = std::chrono::steady_clock;

// Runs each vision stage of a request on `session` between its decode group's steps (at once when it
// is in no group).
ChunkRunner between_group_steps(smolvlm_session* session) {
  return [session](const std::function<void()>& work) { session->session.between_steps(work); };
}

// Prepares, prefills and generates; `session` null: one is made for the prompt's length.
RequestResult run(smolvlm_model& m, smolvlm_session* session, const smolvlm_request& req) {
  const PromptInput input = capi::prompt_input(req);
  const RequestOptions options = capi::request_options(req);
  const TextSink sink = capi::text_sink(req);
  capi::check_context(m, req.context);
  ThreadPool* pool = session ? &session->pool : nullptr;
  std::optional<ThreadPool> request_pool;
  if (!pool) pool = &request_pool.emplace(m.threads, m.kernel_path, m.precision);
  const Model& model = m.weights();
  PreparedPrompt prompt = prepare_prompt(model, [&m]() -> const TextAssets& { return m.text_assets(); }, input, *pool,
                                         session ? between_group_steps(session) : ChunkRunner{});
  const int64_t tokens = static_cast<int64_t>(prompt.ids.size());
  Session* s = nullptr;
  std::optional<Session> request_session;
  int64_t reused = 0;
  if (session) {
    s = &session->session;
    if (req.reuse_prefix) reused = keep_common_prefix(*s, prompt);
    else s->reset();
  } else {
    const int64_t capacity = req.context > 0 ? req.context : request_context(tokens, options.generation.max_new_tokens, m.max_context);
    if (tokens > capacity)
      throw state_error("the prompt has " + std::to_string(tokens) + " tokens but the context holds " +
                        std::to_string(capacity));
    s = &request_session.emplace(model, *pool, capacity);
  }
  // However generation ends, the session's decode group (if any) stops waiting for it.
  struct LeaveGroup {
    Session& s;
    ~LeaveGroup() {
      if (s.decode_group()) s.decode_group()->leave(s);
    }
  } leave_group{*s};
  const double prefill = prefill_prompt(*s, prompt, {reused, req.prefill_chunk, input.dump_dir});
  RequestResult r = generate_text(*s, m.text_assets(), prompt.ids, options, sink);
  r.reused_tokens = reused;
  r.image_tiles = prompt.image_tiles;
  r.timings.load = prompt.timings.load;
  r.timings.preprocess = prompt.timings.preprocess;
  r.timings.vision = prompt.timings.vision;
  r.timings.prefill = prompt.timings.prefill + prefill;
  return r;
}

smolvlm_request default_request() {
  smolvlm_request r;
  smolvlm_request_init(&r);
  return r;
}

}  // namespace

extern "C" {

void smolvlm_request_init(smolvlm_request* r) {
  if (!r) return;
  *r = smolvlm_request{};
  r->struct_size = sizeof(*r);
  r->split = -1;
  r->max_new_tokens = 256;
  r->sampling = {0.0f, 0, 1.0f, 0.0f, 1.0f, 0};
}

const char* smolvlm_finish_reason_name(smolvlm_finish_reason reason) {
  return finish_reason_name(static_cast<FinishReason>(reason));
}

void smolvlm_result_free(smolvlm_result* result) {
  if (!result) return;
  std::free(result->text);
  std::free(result->token_ids);
  *result = smolvlm_result{};
}

smolvlm_status smolvlm_generate(smolvlm_model* model, const smolvlm_request* request, smolvlm_result* result) {
  if (!request || !result) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_generate: the request or result pointer is NULL");
  return capi::guarded(model, [&] {
    const smolvlm_request req = capi::read_struct(request, default_request(), "smolvlm_request");
    capi::fill_result(run(*model, nullptr, req), result);
  });
}

smolvlm_status smolvlm_session_create(smolvlm_model* model, int64_t context, smolvlm_session** out) {
  if (!out) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_session_create: the output pointer is NULL");
  return capi::guarded(model, [&] {
    capi::check_context(*model, context);
    *out = new smolvlm_session(*model, context > 0 ? context : model->max_context);
  });
}

void smolvlm_session_free(smolvlm_session* session) { delete session; }

smolvlm_status smolvlm_session_run(smolvlm_session* session, const smolvlm_request* request, smolvlm_result* result) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  if (!request || !result) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_session_run: the request or result pointer is NULL");
  return capi::guarded(&session->model, [&] {
    const smolvlm_request req = capi::read_struct(request, default_request(), "smolvlm_request");
    capi::fill_result(run(session->model, session, req), result);
  });
}

smolvlm_status smolvlm_session_reset(smolvlm_session* session) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  return capi::guarded(&session->model, [&] { session->session.reset(); });
}

int64_t smolvlm_session_position(const smolvlm_session* session) { return session ? session->session.position() : -1; }
int64_t smolvlm_session_capacity(const smolvlm_session* session) { return session ? session->session.capacity() : -1; }

smolvlm_status smolvlm_session_truncate(smolvlm_session* session, int64_t position) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  return capi::guarded(&session->model, [&] { session->session.truncate(position); });
}

smolvlm_status smolvlm_session_prefill(smolvlm_session* session, const int32_t* ids, size_t n) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  if (n > 0 && !ids) return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_session_prefill: ids is NULL");
  return capi::guarded(&session->model, [&] {
    const std::vector<int64_t> v(ids, ids + n);
    session->session.prefill(v);
  });
}

smolvlm_status smolvlm_session_prefill_request(smolvlm_session* session, const smolvlm_request* request,
                                               smolvlm_timings* timings, int64_t* prompt_tokens) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  if (!request) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_session_prefill_request: the request pointer is NULL");
  return capi::guarded(&session->model, [&] {
    const smolvlm_request req = capi::read_struct(request, default_request(), "smolvlm_request");
    smolvlm_model& m = session->model;
    const PromptInput input = capi::prompt_input(req);
    PreparedPrompt prompt = prepare_prompt(m.weights(), [&m]() -> const TextAssets& { return m.text_assets(); }, input,
                                           session->pool, between_group_steps(session));
    const double prefill = prefill_prompt(session->session, prompt, {0, req.prefill_chunk, input.dump_dir});
    if (timings)
      *timings = {prompt.timings.load, prompt.timings.preprocess, prompt.timings.vision, prompt.timings.prefill + prefill, 0};
    if (prompt_tokens) *prompt_tokens = static_cast<int64_t>(prompt.ids.size());
  });
}

smolvlm_status smolvlm_session_decode(smolvlm_session* session, int32_t id) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  return capi::guarded(&session->model, [&] { session->session.decode(id); });
}

smolvlm_status smolvlm_session_logits(const smolvlm_session* session, const float** logits, size_t* n_vocab) {
  if (!session) return capi::fail(SMOLVLM_ERR_STATE, "the session handle is NULL");
  if (!logits || !n_vocab) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_session_logits: an output pointer is NULL");
  return capi::guarded([&] {
    const std::span<const float> l = session->session.logits();
    *logits = l.data();
    *n_vocab = l.size();
  });
}

smolvlm_status smolvlm_tokenize(const smolvlm_tokenizer* tokenizer, const char* text, size_t size,
                                int add_special_tokens, int32_t** ids, size_t* n_ids) {
  if (!tokenizer || !tokenizer->tokenizer) return capi::fail(SMOLVLM_ERR_STATE, "the tokenizer handle is NULL");
  if (!ids || !n_ids) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_tokenize: an output pointer is NULL");
  if (size > 0 && !text) return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_tokenize: text is NULL");
  return capi::guarded([&] {
    const std::vector<int32_t> v = tokenizer->tokenizer->encode(std::string_view(text ? text : "", size), add_special_tokens != 0);
    *ids = capi::copy_ids(v);
    *n_ids = v.size();
  });
}

smolvlm_status smolvlm_detokenize(const smolvlm_tokenizer* tokenizer, const int32_t* ids, size_t n_ids,
                                  int skip_special_tokens, char** text) {
  if (!tokenizer || !tokenizer->tokenizer) return capi::fail(SMOLVLM_ERR_STATE, "the tokenizer handle is NULL");
  if (!text) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_detokenize: the output pointer is NULL");
  if (n_ids > 0 && !ids) return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_detokenize: ids is NULL");
  return capi::guarded([&] {
    *text = capi::copy_string(tokenizer->tokenizer->decode(std::vector<int32_t>(ids, ids + n_ids), skip_special_tokens != 0));
  });
}

smolvlm_status smolvlm_token_to_string(const smolvlm_tokenizer* tokenizer, int32_t id, char** token) {
  if (!tokenizer || !tokenizer->tokenizer) return capi::fail(SMOLVLM_ERR_STATE, "the tokenizer handle is NULL");
  if (!token) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_token_to_string: the output pointer is NULL");
  return capi::guarded([&] { *token = capi::copy_string(tokenizer->tokenizer->id_to_token(id)); });
}

int64_t smolvlm_tokenizer_vocab_size(const smolvlm_tokenizer* tokenizer) {
  return tokenizer && tokenizer->tokenizer ? tokenizer->tokenizer->vocab_size() : -1;
}

smolvlm_status smolvlm_render_prompt(smolvlm_model* model, const smolvlm_request* request, char** text, int32_t** ids,
                                     size_t* n_ids) {
  if (!request || !text || !ids || !n_ids)
    return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_render_prompt: the request or an output pointer is NULL");
  return capi::guarded(model, [&] {
    const smolvlm_request req = capi::read_struct(request, default_request(), "smolvlm_request");
    const BuiltPrompt built = render_prompt(model->config, model->text_assets(), capi::prompt_input(req));
    char* t = capi::copy_string(built.text);
    *ids = capi::copy_ids(built.input_ids);
    *n_ids = built.input_ids.size();
    *text = t;
  });
}

}  // extern "C"
