// smolvlm.hpp: a thin header-only C++ layer over the C API (smolvlm.h): RAII handles, std::string_view
// in, std::string / std::vector out, and smolvlm::api::Error (status + message) instead of status codes.
// The C API is the contract; this header only adds ownership and exceptions.
#pragma once

#include <smolvlm.h>

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace smolvlm::api {

class Error : public std::runtime_error {
 public:
  Error(smolvlm_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  smolvlm_status status() const { return status_; }

 private:
  smolvlm_status status_;
};

// Throws Error with the calling thread's last message unless `status` is SMOLVLM_OK.
inline void check(smolvlm_status status) {
  if (status != SMOLVLM_OK) throw Error(status, smolvlm_last_error());
}

// Library-allocated memory, released with smolvlm_free().
struct Freer {
  void operator()(void* p) const { smolvlm_free(p); }
};

inline std::string take_string(char* s) {
  std::unique_ptr<char, Freer> owned(s);
  return s ? std::string(s) : std::string();
}

inline std::vector<int32_t> take_ids(int32_t* ids, size_t n) {
  std::unique_ptr<int32_t, Freer> owned(ids);
  return ids ? std::vector<int32_t>(ids, ids + n) : std::vector<int32_t>();
}

// A finished request's output.
class Result {
 public:
  Result() { r_.struct_size = sizeof(r_); }
  ~Result() { smolvlm_result_free(&r_); }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = smolvlm_result{}; }
  Result& operator=(Result&& o) noexcept {
    if (this != &o) {
      smolvlm_result_free(&r_);
      r_ = o.r_;
      o.r_ = smolvlm_result{};
    }
    return *this;
  }

  std::string_view text() const { return {r_.text ? r_.text : "", r_.text_size}; }
  std::span<const int32_t> token_ids() const { return {r_.token_ids, r_.n_tokens}; }
  const smolvlm_result& raw() const { return r_; }
  smolvlm_result* out() { return &r_; }

 private:
  smolvlm_result r_{};
};

class Tokenizer {
 public:
  // A tokenizer owned by a model (not freed here), or loaded on its own (freed here).
  explicit Tokenizer(const smolvlm_tokenizer* borrowed) : t_(borrowed) {}
  static Tokenizer load(const std::string& path) {
    smolvlm_tokenizer* t = nullptr;
    check(smolvlm_tokenizer_load(path.c_str(), &t));
    Tokenizer out(t);
    out.owned_.reset(t);
    return out;
  }
  std::vector<int32_t> tokenize(std::string_view text, bool add_special_tokens) const {
    int32_t* ids = nullptr;
    size_t n = 0;
    check(smolvlm_tokenize(t_, text.data(), text.size(), add_special_tokens, &ids, &n));
    return take_ids(ids, n);
  }
  std::string detokenize(std::span<const int32_t> ids, bool skip_special_tokens) const {
    char* text = nullptr;
    check(smolvlm_detokenize(t_, ids.data(), ids.size(), skip_special_tokens, &text));
    return take_string(text);
  }
  int64_t vocab_size() const { return smolvlm_tokenizer_vocab_size(t_); }
  std::string token_string(int32_t id) const {
    char* s = nullptr;
    check(smolvlm_token_to_string(t_, id, &s));
    return take_string(s);
  }
  // False for an id the tokenizer lacks (detokenize gives it no text).
  bool has_token(int32_t id) const {
    char* s = nullptr;
    const bool found = smolvlm_token_to_string(t_, id, &s) == SMOLVLM_OK;
    take_string(s);
    return found;
  }

 private:
  struct Deleter {
    void operator()(smolvlm_tokenizer* t) const { smolvlm_tokenizer_free(t); }
  };
  const smolvlm_tokenizer* t_;
  std::unique_ptr<smolvlm_tokenizer, Deleter> owned_;
};

class Model {
 public:
  static Model load(const std::string& path_or_hub_id, const smolvlm_model_options* options = nullptr) {
    smolvlm_model* m = nullptr;
    check(smolvlm_model_load(path_or_hub_id.c_str(), options, &m));
    return Model(m);
  }
  smolvlm_model* get() const { return m_.get(); }

  smolvlm_model_info info() const {
    smolvlm_model_info i;
    smolvlm_model_info_init(&i);
    check(smolvlm_model_get_info(m_.get(), &i));
    return i;
  }
  Tokenizer tokenizer() const {
    const smolvlm_tokenizer* t = nullptr;
    check(smolvlm_model_tokenizer(m_.get(), &t));
    return Tokenizer(t);
  }
  Result generate(const smolvlm_request& request) const {
    Result r;
    check(smolvlm_generate(m_.get(), &request, r.out()));
    return r;
  }

 private:
  struct Deleter {
    void operator()(smolvlm_model* m) const { smolvlm_model_free(m); }
  };
  explicit Model(smolvlm_model* m) : m_(m) {}
  std::unique_ptr<smolvlm_model, Deleter> m_;
};

class Session {
 public:
  explicit Session(const Model& model, int64_t context = 0) {
    smolvlm_session* s = nullptr;
    check(smolvlm_session_create(model.get(), context, &s));
    s_.reset(s);
  }
  smolvlm_session* get() const { return s_.get(); }
  Result run(const smolvlm_request& request) {
    Result r;
    check(smolvlm_session_run(s_.get(), &request, r.out()));
    return r;
  }
  void reset() { check(smolvlm_session_reset(s_.get())); }
  void prefill(std::span<const int32_t> ids) { check(smolvlm_session_prefill(s_.get(), ids.data(), ids.size())); }
  int64_t prefill(const smolvlm_request& request, smolvlm_timings* timings = nullptr) {
    int64_t tokens = 0;
    check(smolvlm_session_prefill_request(s_.get(), &request, timings, &tokens));
    return tokens;
  }
  void decode(int32_t id) { check(smolvlm_session_decode(s_.get(), id)); }
  std::span<const float> logits() const {
    const float* l = nullptr;
    size_t n = 0;
    check(smolvlm_session_logits(s_.get(), &l, &n));
    return {l, n};
  }
  int64_t position() const { return smolvlm_session_position(s_.get()); }
  int64_t capacity() const { return smolvlm_session_capacity(s_.get()); }

 private:
  struct Deleter {
    void operator()(smolvlm_session* s) const { smolvlm_session_free(s); }
  };
  std::unique_ptr<smolvlm_session, Deleter> s_;
};

// Chat messages whose text and parts this object owns; request() points a smolvlm_request at them.
class Chat {
 public:
  Chat& add(smolvlm_role role) {
    messages_.push_back({role, {}});
    return *this;
  }
  // Parts go to the last message (a user message is started when there is none).
  Chat& text(std::string t) {
    last().parts.push_back({SMOLVLM_PART_TEXT, std::make_unique<std::string>(std::move(t)), {}});
    return *this;
  }
  Chat& image_file(std::string path) {
    Part p{SMOLVLM_PART_IMAGE, std::make_unique<std::string>(std::move(path)), {}};
    p.image.kind = SMOLVLM_IMAGE_PATH;
    last().parts.push_back(std::move(p));
    return *this;
  }
  Chat& image(const smolvlm_image& image) {
    last().parts.push_back({SMOLVLM_PART_IMAGE, nullptr, image});
    return *this;
  }
  bool empty() const { return messages_.empty(); }

  // Valid while this object lives and is not changed.
  void fill(smolvlm_request& request) {
    c_parts_.clear();
    c_messages_.clear();
    for (auto& m : messages_) {
      auto& parts = c_parts_.emplace_back();
      for (auto& p : m.parts) {
        smolvlm_part cp{};
        cp.kind = p.kind;
        cp.image = p.image;
        if (p.kind == SMOLVLM_PART_TEXT) cp.text = p.text->c_str();
        else if (p.text) cp.image.path = p.text->c_str();
        parts.push_back(cp);
      }
    }
    for (size_t i = 0; i < messages_.size(); ++i)
      c_messages_.push_back({messages_[i].role, c_parts_[i].data(), c_parts_[i].size()});
    request.messages = c_messages_.data();
    request.n_messages = c_messages_.size();
  }

 private:
  struct Part {
    smolvlm_part_kind kind;
    std::unique_ptr<std::string> text;  // the text, or an image file's path
    smolvlm_image image;
  };
  struct Message {
    smolvlm_role role;
    std::vector<Part> parts;
  };
  Message& last() {
    if (messages_.empty()) add(SMOLVLM_ROLE_USER);
    return messages_.back();
  }
  std::vector<Message> messages_;
  std::vector<std::vector<smolvlm_part>> c_parts_;
  std::vector<smolvlm_message> c_messages_;
};

}  // namespace smolvlm::api
