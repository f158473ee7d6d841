// What the opaque handles of include/smolvlm.h are, and the error boundary every entry point goes
// through. Internal to src/api.
#pragma once

#include <smolvlm.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/error.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"
#include "runtime/model.h"
#include "runtime/request.h"
#include "runtime/session.h"
#include "text/prompt.h"

struct smolvlm_tokenizer {
  std::unique_ptr<smolvlm::Tokenizer> owned;  // a tokenizer loaded on its own
  const smolvlm::Tokenizer* tokenizer = nullptr;
};

struct smolvlm_model {
  std::filesystem::path dir;
  smolvlm::ModelConfig config;
  std::unique_ptr<smolvlm::Model> model;  // null when loaded without weights

  // The weights; Error(State) for a model loaded without them.
  const smolvlm::Model& weights() const;
  int threads = 1;
  smolvlm::KernelPath kernel_path = smolvlm::KernelPath::Scalar;
  smolvlm::Precision precision = smolvlm::Precision::Exact;
  int64_t max_context = 0;
  std::string decode_products;  // smolvlm_model_info.decode_products (empty without weights)

  // The text assets load on a second thread from load time (with one thread, on first use); the
  // first caller that needs them waits, and a loading error is reported to every caller.
  const smolvlm::TextAssets& text_assets();
  std::mutex text_mutex;
  std::future<std::unique_ptr<smolvlm::TextAssets>> text_future;
  std::unique_ptr<smolvlm::TextAssets> text;
  std::optional<smolvlm::Error> text_error;
  smolvlm_tokenizer tokenizer_handle;
};

struct smolvlm_session {
  smolvlm_session(smolvlm_model& m, int64_t capacity)
      : model(m), pool(m.threads, m.kernel_path, m.precision), session(m.weights(), pool, capacity) {}
  ~smolvlm_session() { session.set_decode_group(nullptr); }
  smolvlm_session(const smolvlm_session&) = delete;
  smolvlm_session& operator=(const smolvlm_session&) = delete;
  smolvlm_model& model;
  smolvlm::ThreadPool pool;
  smolvlm::Session session;
};

namespace smolvlm::capi {

// The decode products of the decoder's matrices and the lm_head: each stored format with the
// arithmetic it runs on, once, in the order they first appear ("Q4 avx512-vnni int8, Q8 avx512 fp32";
// smolvlm_model_info.decode_products).
std::string decode_products(const ModelConfig& cfg, const Checkpoint& ck, KernelPath path, Precision precision);

// Records `message` as the calling thread's last error and returns `status`.
smolvlm_status fail(smolvlm_status status, const std::string& message);
// Runs `body` under the model's kernel path, turning every exception into a status and a message.
smolvlm_status guarded(const std::function<void()>& body);
smolvlm_status guarded(const smolvlm_model* model, const std::function<void()>& body);

// Copies an option struct a caller filled (its first struct_size bytes) over the defaults; a struct
// whose size was never set is Error(BadInput) (its fields would otherwise be silently ignored).
template <typename T>
T read_struct(const T* given, const T& defaults, const char* name) {
  T out = defaults;
  if (given) {
    if (given->struct_size < sizeof(size_t))
      throw Error(ErrorKind::BadInput, std::string(name) + ".struct_size is " + std::to_string(given->struct_size) +
                                           ": fill the struct with its _init function first");
    std::memcpy(static_cast<void*>(&out), given, std::min(given->struct_size, sizeof(T)));
    out.struct_size = sizeof(T);
  }
  return out;
}

// malloc'ed copies the caller releases with smolvlm_free().
char* copy_string(const std::string& s);
int32_t* copy_ids(const std::vector<int32_t>& ids);

// The engine-side form of a request and of its images (`where` names the image in messages).
ImageInput image_input(const smolvlm_image& image, const std::string& where);
PromptInput prompt_input(const smolvlm_request& r);
RequestOptions request_options(const smolvlm_request& r);
TextSink text_sink(const smolvlm_request& r);
// Error(BadInput) unless 0 <= context <= the model's max_context.
void check_context(const smolvlm_model& m, int64_t context);
void fill_result(const RequestResult& r, smolvlm_result* out);

}  // namespace smolvlm::capi
