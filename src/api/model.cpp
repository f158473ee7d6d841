// Models, their information and their tokenizers.
#include <algorithm>
#include <optional>
#include <thread>

#include "api/handles.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "kernels/gemm.h"
#include "model/quantized_weights.h"
#include "model/spec.h"
#include "model/weights.h"
#include "runtime/kv_cache.h"

using namespace smolvlm;

const TextAssets& smolvlm_model::text_assets() {
  std::lock_guard<std::mutex> lock(text_mutex);
  if (!text && !text_error) {
    try {
      text = text_future.get();
    } catch (const Error& e) {
      text_error = e;
    }
    if (text) tokenizer_handle.tokenizer = &text->tokenizer();
  }
  if (text_error) throw *text_error;
  return *text;
}

const Model& smolvlm_model::weights() const {
  if (!model) throw state_error(dir.string() + ": the model was loaded without its weights");
  return *model;
}

namespace {

// No name: the process's path (SMOLVLM_KERNELS where set, else the best this CPU has).
KernelPath kernel_path_named(const char* name) {
  if (!name || !*name) return active_kernel_path();
  for (KernelPath p : kAllKernelPaths)
    if (std::string(name) == kernel_path_name(p)) {
      if (!kernel_path_supported(p))
        throw unsupported(std::string("kernel path ") + name + ": this CPU cannot run it (it runs: " +
                          smolvlm_supported_kernel_paths() + ")");
      return p;
    }
  throw bad_input(std::string("kernel path \"") + name + "\": expected scalar, avx2, avx512 or neon");
}

Precision precision_named(const char* name, KernelPath path) {
  if (!name || !*name || std::string(name) == "exact") return Precision::Exact;
  if (std::string(name) != "fast") throw bad_input(std::string("precision \"") + name + "\": expected exact or fast");
  require_precision(path, Precision::Fast);
  return Precision::Fast;
}

// smolvlm_model_options.weight_memory: unset (nullopt), or read / map.
std::optional<FileResidency> weight_memory_named(const char* name) {
  if (!name || !*name) return std::nullopt;
  if (std::string(name) == "read") return FileResidency::Read;
  if (std::string(name) == "map") return FileResidency::Mapped;
  throw bad_input(std::string("weight memory \"") + name + "\": expected read or map");
}

// Where the weights of `cfg` live (weight_residency); the files are sized (their headers opened) only
// where the answer depends on their size.
FileResidency weight_residency_of(std::optional<FileResidency> asked, const ModelConfig& cfg) {
  const std::optional<uint64_t> available = available_memory_bytes();
  const bool sized = asked != FileResidency::Mapped && available;
  const uint64_t bytes = sized ? Checkpoint::open(cfg.dir, FileResidency::Mapped)->file_bytes() : 0;
  return weight_residency(asked, bytes, available, cfg.dir.string());
}

int thread_count(int32_t asked) {
  if (asked < 0 || asked > 1024) throw bad_input("threads must be in [0, 1024], got " + std::to_string(asked));
  if (asked > 0) return asked;
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// The stored entry a decode-side entry reads: itself, or for a tied lm_head the entry it is tied to.
const ExpectedTensor& stored_entry(const ExpectedTensor& t, const std::vector<ExpectedTensor>& table) {
  if (t.presence == Presence::Tied)
    for (const ExpectedTensor& e : table)
      if (e.name == t.tied_to) return e;
  return t;
}

// The entries a decode step reads in full: every tensor of the decoder but the embedding table (one
// row per token), and the lm_head.
bool read_per_token(const ExpectedTensor& t) {
  return (t.component == Component::Text || t.component == Component::LmHead) && t.role != Role::Embedding &&
         t.presence != Presence::Absent;
}

// Weight bytes a decode step reads: every tensor of the decoder but the embedding table (one row
// per token), and the lm_head, which is the embedding table itself when tied.
int64_t decode_bytes(const ModelConfig& cfg, const Checkpoint& ck) {
  int64_t bytes = 0;
  const std::vector<ExpectedTensor> table = all_tensors(model_spec(cfg));
  for (const ExpectedTensor& t : table) {
    if (!read_per_token(t)) continue;
    // A quantized module's codes and block parameters (model/quantized_weights.h) replace its weight;
    // a tied lm_head reads the stored tensors of the entry it is tied to.
    const std::vector<std::string> names = stored_names(ck, stored_entry(t, table));
    for (const std::string& name : names)
      if (const TensorView* view = ck.find(name)) bytes += static_cast<int64_t>(view->nbytes);
  }
  return bytes;
}

}  // namespace

// The decode products of the decoder's matrices and the lm_head: each stored format with the
// arithmetic it runs on, once, in the order they first appear ("Q4 avx512-vnni int8, Q8 avx512 fp32").
std::string capi::decode_products(const ModelConfig& cfg, const Checkpoint& ck, KernelPath path, Precision precision) {
  const std::vector<std::string> seen = [&] {
    std::vector<std::string> v;
    const std::vector<ExpectedTensor> table = all_tensors(model_spec(cfg));
    for (const ExpectedTensor& t : table) {
      if (!read_per_token(t) || t.shape.size() != 2) continue;
      const WeightRef w = matrix(ck, stored_entry(t, table));
      std::string entry = std::string(weight_format_name(w.format)) + " " + decode_product_name(w, path, precision);
      if (std::find(v.begin(), v.end(), entry) == v.end()) v.push_back(std::move(entry));
    }
    return v;
  }();
  std::string joined;
  for (const std::string& e : seen) joined += (joined.empty() ? "" : ", ") + e;
  return joined;
}

extern "C" {

void smolvlm_model_options_init(smolvlm_model_options* o) {
  if (!o) return;
  *o = smolvlm_model_options{};
  o->struct_size = sizeof(*o);
  o->load_weights = 1;
  o->vision_cache_images = 8;
}

smolvlm_status smolvlm_model_load(const char* ref, const smolvlm_model_options* options, smolvlm_model** out) {
  if (!out) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_model_load: the output pointer is NULL");
  return capi::guarded([&] {
    smolvlm_model_options defaults;
    smolvlm_model_options_init(&defaults);
    const smolvlm_model_options o = capi::read_struct(options, defaults, "smolvlm_model_options");
    auto m = std::make_unique<smolvlm_model>();
    m->threads = thread_count(o.threads);
    m->kernel_path = kernel_path_named(o.kernel_path);
    m->precision = precision_named(o.precision, m->kernel_path);
    const std::optional<FileResidency> weight_memory = weight_memory_named(o.weight_memory);
    if (o.max_context < 0) throw bad_input("max_context must be >= 0, got " + std::to_string(o.max_context));
    if (o.vision_cache_images < 0)
      throw bad_input("vision_cache_images must be >= 0, got " + std::to_string(o.vision_cache_images));
    m->dir = resolve_model_dir(ref ? ref : "");
    const auto dir = m->dir;
    m->config = load_model_config(dir);
    const char* documented_template = m->config.architecture->documented_chat_template;
    m->text_future = std::async(m->threads > 1 ? std::launch::async : std::launch::deferred,
                                [dir, documented_template] { return TextAssets::load(dir, documented_template); });
    if (o.load_weights) {
      const ScopedKernelPath path(m->kernel_path);
      m->model = std::make_unique<Model>(m->config, open_checkpoint(m->config, weight_residency_of(weight_memory, m->config)));
      m->model->vision_cache().set_max_entries(static_cast<size_t>(o.vision_cache_images));
      m->max_context = o.max_context > 0 ? o.max_context : default_context(*m->model);
      m->decode_products = capi::decode_products(m->config, m->model->checkpoint(), m->kernel_path, m->precision);
    } else {
      m->max_context = o.max_context > 0 ? o.max_context : m->config.decoder().max_position_embeddings;
    }
    check_context_fits(m->config.decoder(), m->max_context);
    *out = m.release();
  });
}

void smolvlm_model_free(smolvlm_model* model) {
  if (!model) return;
  // A tokenizer still loading is waited for: its thread reads the folder the model names.
  if (model->text_future.valid()) model->text_future.wait();
  delete model;
}

void smolvlm_model_info_init(smolvlm_model_info* info) {
  if (!info) return;
  *info = smolvlm_model_info{};
  info->struct_size = sizeof(*info);
}

smolvlm_status smolvlm_model_get_info(const smolvlm_model* model, smolvlm_model_info* info) {
  if (!info) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_model_get_info: the output pointer is NULL");
  return capi::guarded(model, [&] {
    const ModelConfig& cfg = model->config;
    const LlamaConfig& c = cfg.decoder();
    const Idefics3Config* vlm = cfg.image_text();
    smolvlm_model_info r;
    smolvlm_model_info_init(&r);
    r.architecture = cfg.architecture_name();
    r.path = cfg.dir.c_str();
    r.kernel_path = kernel_path_name(model->kernel_path);
    r.precision = precision_name(model->precision);
    r.threads = model->threads;
    r.has_vision = vlm ? 1 : 0;
    r.max_context = model->max_context;
    r.max_position_embeddings = c.max_position_embeddings;
    const GenerationConfig& g = cfg.generation;
    r.recommended_temperature = static_cast<float>(g.temperature);
    r.recommended_top_k = static_cast<int32_t>(g.top_k);
    r.recommended_top_p = static_cast<float>(g.top_p);
    r.recommended_repetition_penalty = static_cast<float>(g.repetition_penalty);
    r.vocab_size = c.vocab_size;
    r.hidden_size = c.hidden_size;
    r.intermediate_size = c.intermediate_size;
    r.num_layers = c.num_hidden_layers;
    r.num_heads = c.num_attention_heads;
    r.num_kv_heads = c.num_key_value_heads;
    r.head_dim = c.head_dim;
    const ParameterCounts counts = count_parameters(model_spec(cfg));
    r.params_vision = counts.of(Component::Vision);
    r.params_connector = counts.of(Component::Connector);
    r.params_text = counts.of(Component::Text);
    r.params_lm_head = counts.of(Component::LmHead);
    r.params_total = counts.total();
    if (vlm) {
      r.vision_image_size = vlm->vision.image_size;
      r.vision_patch_size = vlm->vision.patch_size;
      r.vision_hidden_size = vlm->vision.hidden_size;
      r.vision_intermediate_size = vlm->vision.intermediate_size;
      r.vision_num_layers = vlm->vision.num_hidden_layers;
      r.vision_num_channels = vlm->vision.num_channels;
      r.scale_factor = vlm->scale_factor;
      r.image_tokens_per_tile = vlm->image_tokens_per_tile();
    }
    if (model->model) {
      r.file_bytes = static_cast<int64_t>(model->model->checkpoint().file_bytes());
      r.decode_bytes = decode_bytes(cfg, model->model->checkpoint());
    }
    r.decode_products = model->decode_products.c_str();
    r.weight_memory = !model->model                                                   ? ""
                      : model->model->checkpoint().residency() == FileResidency::Read ? "read"
                                                                                      : "map";
    const size_t n = std::min(info->struct_size, sizeof(r));
    r.struct_size = info->struct_size;
    std::memcpy(static_cast<void*>(info), &r, n);
  });
}

smolvlm_status smolvlm_tokenizer_load(const char* path, smolvlm_tokenizer** out) {
  if (!out) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_tokenizer_load: the output pointer is NULL");
  if (!path) return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_tokenizer_load: no path given");
  return capi::guarded([&] {
    std::filesystem::path p = path;
    if (std::filesystem::is_directory(p)) p /= "tokenizer.json";
    auto t = std::make_unique<smolvlm_tokenizer>();
    t->owned = Tokenizer::from_file(p);
    t->tokenizer = t->owned.get();
    *out = t.release();
  });
}

void smolvlm_tokenizer_free(smolvlm_tokenizer* tokenizer) { delete tokenizer; }

smolvlm_status smolvlm_model_tokenizer(smolvlm_model* model, const smolvlm_tokenizer** out) {
  if (!out) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_model_tokenizer: the output pointer is NULL");
  return capi::guarded(model, [&] {
    model->text_assets();
    *out = &model->tokenizer_handle;
  });
}

smolvlm_status smolvlm_resolve_model(const char* ref, char** dir) {
  if (!dir) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_resolve_model: the output pointer is NULL");
  return capi::guarded([&] { *dir = capi::copy_string(resolve_model_dir(ref ? ref : "").string()); });
}

const char* smolvlm_default_model(void) { return kDefaultModelId; }

}  // extern "C"
