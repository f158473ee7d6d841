#include "runtime/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/error.h"
#include "image/idefics3.h"
#include "image/resample.h"
#include "io/npy.h"
#include "kernels/cpu.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"
#include "text/tokenizer.h"

namespace smolvlm {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void dump(const RequestOptions& o, const char* name, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  if (o.dump_dir.empty()) return;
  write_npy(o.dump_dir / (std::string(name) + ".npy"), "f4", shape, v.data(), v.size() * sizeof(float));
}

int64_t context_for(const Model& model, const RequestOptions& o, int64_t prompt_tokens) {
  if (o.context < 0) throw bad_input("--ctx must be positive, got " + std::to_string(o.context));
  if (o.context > 0) return o.context;
  return std::min(default_context(model), prompt_tokens + std::max<int64_t>(o.generation.max_new_tokens, 1));
}

// Prefill (ids or embeddings), then generate while streaming text; fills everything but load/preprocess/vision.
RequestResult prefill_and_generate(const Model& model, const TextAssets& assets, const std::vector<int64_t>& ids,
                                   const std::vector<float>* embeddings, const RequestOptions& o, ThreadPool& pool,
                                   const TextSink& sink) {
  RequestResult r;
  r.prompt_tokens = static_cast<int64_t>(ids.size());
  const int64_t capacity = context_for(model, o, r.prompt_tokens);
  if (r.prompt_tokens > capacity)
    throw state_error("the prompt has " + std::to_string(r.prompt_tokens) + " tokens but the context holds " +
                      std::to_string(capacity) + " (raise --ctx)");
  Session session(model, pool, capacity);
  auto t0 = Clock::now();
  std::span<const float> logits =
      embeddings ? session.prefill_embeddings(embeddings->data(), r.prompt_tokens) : session.prefill(ids);
  r.timings.prefill = seconds_since(t0);
  if (!o.dump_dir.empty()) dump(o, "prefill_logits_last", {model.text().vocab()}, {logits.begin(), logits.end()});

  GenerationOptions g = o.generation;
  if (g.eos_token_ids.empty()) g.eos_token_ids = model.config().generation.eos_token_ids;
  g.keep_step_logits = g.keep_step_logits || !o.dump_dir.empty();
  StreamingDetokenizer detok(assets.tokenizer(), /*skip_special_tokens=*/true, assets.clean_up_tokenization_spaces());
  GenerationResult gen = generate(session, ids, g, [&](int64_t id) {
    const std::string piece = detok.push(static_cast<int32_t>(id));
    r.text += piece;
    if (sink && !piece.empty()) sink(piece);
  });
  const std::string rest = detok.finish();
  r.text += rest;
  if (sink && !rest.empty()) sink(rest);
  r.timings.decode = gen.decode_seconds;
  r.token_ids = gen.ids;
  r.stopped_on_eos = gen.stopped_on_eos;
  if (!o.dump_dir.empty()) {
    const int64_t steps = static_cast<int64_t>(gen.ids.size());
    dump(o, "step_logits", {steps, model.text().vocab()}, gen.step_logits);
    write_npy(o.dump_dir / "generated_ids.npy", "i8", {steps}, gen.ids.data(), gen.ids.size() * sizeof(int64_t));
  }
  return r;
}

void prepare_dump_dir(const RequestOptions& o) {
  if (o.dump_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.dump_dir, ec);
  if (ec) throw io_error(o.dump_dir.string() + ": cannot create the dump folder: " + ec.message());
}

}  // namespace

PreparedImages prepare_images(const Model& model, const std::vector<std::filesystem::path>& images, bool split,
                              ThreadPool& pool) {
  const ModelConfig& cfg = model.config();
  if (!model.has_vision())
    throw unsupported(cfg.dir.string() + ": " + cfg.architecture_name() + " is a text-only model; use `generate`");
  if (!cfg.image_processor) throw bad_input(cfg.dir.string() + ": preprocessor_config.json is missing");
  if (images.empty()) throw bad_input("no image given");
  const int64_t S = model.vision().image_size();
  auto t0 = Clock::now();
  PreparedImages out;
  const ScopedResizeThreads resize_threads(pool.size());  // no more threads than the request was given
  for (const auto& path : images) {
    PreprocessedImage p = load_and_preprocess_idefics3(path, *cfg.image_processor, split);
    if (p.tile_size != S)
      throw bad_input(path.string() + ": tiles of " + std::to_string(p.tile_size) + " pixels, but the vision tower takes " +
                      std::to_string(S) + " (preprocessor max_image_size vs vision_config.image_size)");
    out.pixel_values.insert(out.pixel_values.end(), p.pixel_values.begin(), p.pixel_values.end());
    out.grids.push_back({p.rows, p.cols});
    out.tiles += p.num_tiles;
  }
  out.seconds = seconds_since(t0);
  return out;
}

RequestResult run_image_request(const Model& model, const TextAssets& assets, const PreparedImages& images,
                                const std::string& prompt, const RequestOptions& o, ThreadPool& pool,
                                const TextSink& sink) {
  const ModelConfig& cfg = model.config();
  const SiglipVision& vision = model.vision();  // Error(Unsupported) for a text-only model
  const int64_t S = vision.image_size(), tiles = images.tiles;
  if (tiles <= 0 || images.pixel_values.size() != static_cast<size_t>(tiles * 3 * S * S))
    throw internal_error("run_image_request: the prepared images do not match the vision tower");
  const int64_t tokens_per_tile = model.connector().tokens_per_tile();
  if (assets.image_seq_len() && *assets.image_seq_len() != tokens_per_tile)
    throw bad_input(cfg.dir.string() + ": processor_config.json image_seq_len " +
                    std::to_string(*assets.image_seq_len()) + " does not match the model's " +
                    std::to_string(tokens_per_tile) + " image tokens per tile");
  prepare_dump_dir(o);

  auto t0 = Clock::now();
  BuiltPrompt built = build_vlm_prompt(assets, prompt, images.grids);
  const std::vector<int64_t> ids(built.input_ids.begin(), built.input_ids.end());
  const double preprocess = images.seconds + seconds_since(t0);
  dump(o, "pixel_values", {1, tiles, 3, S, S}, images.pixel_values);

  t0 = Clock::now();
  ImageFeatures features = encode_images(model, images.pixel_values.data(), tiles, pool, !o.dump_dir.empty());
  const double vision_s = seconds_since(t0);
  dump(o, "vision_last_hidden", {tiles, vision.num_patches(), vision.hidden()}, features.vision_last_hidden);
  dump(o, "image_hidden_states", {tiles, tokens_per_tile, model.text().hidden()}, features.image_hidden_states);

  t0 = Clock::now();
  const std::vector<float> x = prompt_embeddings(model, ids, features);
  const double embed_s = seconds_since(t0);
  RequestResult r = prefill_and_generate(model, assets, ids, &x, o, pool, sink);
  r.timings.preprocess = preprocess;
  r.timings.vision = vision_s;
  r.timings.prefill += embed_s;
  return r;
}

RequestResult run_text_request(const Model& model, const TextAssets& assets, const std::string& prompt, bool chat,
                               const RequestOptions& o, ThreadPool& pool, const TextSink& sink) {
  prepare_dump_dir(o);
  auto t0 = Clock::now();
  std::vector<int32_t> ids32;
  if (chat) {
    nlohmann::ordered_json content = prompt;
    if (model.has_vision())  // the Idefics3 template expects content as a list of parts
      content = nlohmann::ordered_json::array({{{"type", "text"}, {"text", prompt}}});
    ids32 = build_chat_prompt(assets, nlohmann::ordered_json::array({{{"role", "user"}, {"content", content}}})).input_ids;
  } else {
    ids32 = assets.tokenizer().encode(prompt, /*add_special_tokens=*/true);
  }
  if (ids32.empty()) throw bad_input("the prompt is empty (no tokens)");
  const std::vector<int64_t> ids(ids32.begin(), ids32.end());
  const double preprocess = seconds_since(t0);
  RequestResult r = prefill_and_generate(model, assets, ids, nullptr, o, pool, sink);
  r.timings.preprocess = preprocess;
  return r;
}

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

nlohmann::ordered_json result_json(const RequestResult& r) {
  nlohmann::ordered_json j;
  j["text"] = r.text;
  j["token_ids"] = r.token_ids;
  j["prompt_tokens"] = r.prompt_tokens;
  j["stopped_on_eos"] = r.stopped_on_eos;
  j["timings"] = {{"load_s", r.timings.load},         {"preprocess_s", r.timings.preprocess},
                  {"vision_s", r.timings.vision},     {"prefill_s", r.timings.prefill},
                  {"decode_s", r.timings.decode},     {"kernel_path", kernel_path_name(active_kernel_path())}};
  return j;
}

std::string timing_report(const RequestResult& r, int threads) {
  const auto& t = r.timings;
  const size_t decoded = r.token_ids.empty() ? 0 : r.token_ids.size() - 1;  // the first comes from the prefill
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "load %.3f s, preprocess %.3f s, vision %.3f s, prefill %.3f s (%lld tokens, %.1f tok/s), "
                "decode %.3f s (%zu tokens, %.2f tok/s); kernels %s, %d threads",
                t.load, t.preprocess, t.vision, t.prefill, static_cast<long long>(r.prompt_tokens),
                t.prefill > 0 ? r.prompt_tokens / t.prefill : 0.0, t.decode, decoded,
                t.decode > 0 ? decoded / t.decode : 0.0, kernel_path_name(active_kernel_path()), threads);
  return buf;
}

}  // namespace smolvlm
