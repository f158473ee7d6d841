#include "runtime/request.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "image/resample.h"
#include "io/npy.h"
#include "runtime/kv_cache.h"
#include "runtime/stop_strings.h"
#include "runtime/vision_input.h"
#include "text/tokenizer.h"

namespace smolvlm {

namespace {

using Clock = std::chrono::steady_clock;
using OJson = nlohmann::ordered_json;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void dump(const std::filesystem::path& dir, const char* name, const std::vector<int64_t>& shape,
          const std::vector<float>& v) {
  if (dir.empty()) return;
  write_npy(dir / (std::string(name) + ".npy"), "f4", shape, v.data(), v.size() * sizeof(float));
}

void prepare_dump_dir(const std::filesystem::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw io_error(dir.string() + ": cannot create the dump folder: " + ec.message());
}

std::vector<const ImageInput*> images_of(const PromptInput& input) {
  std::vector<const ImageInput*> images;
  for (const Message& m : input.messages)
    for (const ContentPart& p : m.parts)
      if (p.is_image) images.push_back(&p.image);
  return images;
}

// Whether the architecture has a vision tower (known from the config alone: prompts can be
// rendered without the weights).
bool takes_images(const ModelConfig& cfg) { return cfg.image_text() != nullptr; }

void check_input(const ModelConfig& cfg, const PromptInput& input, size_t n_images) {
  if (input.raw && !input.messages.empty()) throw bad_input("a request takes chat messages or a raw prompt, not both");
  if (!input.raw && input.messages.empty()) throw bad_input("the request has no messages and no prompt");
  if (n_images > 0 && !takes_images(cfg))
    throw unsupported(cfg.dir.string() + ": " + cfg.architecture_name() + " is a text-only model; it takes no images");
  if (n_images > 0 && !cfg.image_processor) throw bad_input(cfg.dir.string() + ": preprocessor_config.json is missing");
}

PreprocessedImage preprocess_one(const ImageInput& image, const ImageProcessorConfig& config, std::optional<bool> split) {
  switch (image.kind) {
    case ImageInput::Kind::Path: return load_and_preprocess_idefics3(image.path, config, split);
    case ImageInput::Kind::Encoded:
      return load_and_preprocess_idefics3(image.bytes.data(), image.bytes.size(), image.name(), config, split);
    case ImageInput::Kind::Rgb8: return preprocess_idefics3(decode_image(image), config, split);
  }
  throw internal_error("unknown image kind");
}

// The images decoded and preprocessed as HF's Idefics3 processor does, in order.
struct PreparedImages {
  std::vector<float> pixel_values;  // [tiles, 3, S, S]
  std::vector<ImageGrid> grids;
  std::vector<int64_t> image_tiles;  // per image
  int64_t tiles = 0;
};

PreparedImages prepare_images(const ModelConfig& cfg, const std::vector<const ImageInput*>& images,
                              std::optional<bool> split, ThreadPool& pool, bool keep_pixels) {
  PreparedImages out;
  if (images.empty()) return out;
  const int64_t S = cfg.image_text()->vision.image_size;
  const ScopedResizeThreads resize_threads(pool.size());  // no more threads than the request was given
  for (const ImageInput* image : images) {
    PreprocessedImage p = preprocess_one(*image, *cfg.image_processor, split);
    if (p.tile_size != S)
      throw bad_input(image->name() + ": tiles of " + std::to_string(p.tile_size) + " pixels, but the vision tower takes " +
                      std::to_string(S) + " (preprocessor max_image_size vs vision_config.image_size)");
    if (keep_pixels) out.pixel_values.insert(out.pixel_values.end(), p.pixel_values.begin(), p.pixel_values.end());
    out.grids.push_back({p.rows, p.cols});
    out.image_tiles.push_back(p.num_tiles);
    out.tiles += p.num_tiles;
  }
  return out;
}

// The messages as the model's chat template reads them: an image-text model's content is a list
// of parts ({"type": "image"} where an image goes); a text model's, a string.
OJson template_messages(const ModelConfig& cfg, const std::vector<Message>& messages) {
  OJson out = OJson::array();
  for (const Message& m : messages) {
    OJson content;
    if (takes_images(cfg)) {
      content = OJson::array();
      for (const ContentPart& p : m.parts)
        content.push_back(p.is_image ? OJson{{"type", "image"}} : OJson{{"type", "text"}, {"text", p.text}});
    } else {
      std::string text;
      for (const ContentPart& p : m.parts) text += p.text;
      content = text;
    }
    out.push_back({{"role", role_name(m.role)}, {"content", std::move(content)}});
  }
  return out;
}

// The features of every image, in order. An image whose pixels were seen before takes the cached
// features (exactly what the tower would compute from the same pixels); the others run through the
// tower. When the tower's own output is to be dumped, all run and nothing is cached. `keys` receives
// each image's key and feature rows, for the prompt's KV content.
ImageFeatures image_features(const Model& model, const PreparedImages& images, ThreadPool& pool, bool dumping,
                             std::vector<KvContent::Image>& keys, const ChunkRunner& run_chunk) {
  const int64_t S = model.vision().image_size();
  const int64_t tile_floats = 3 * S * S;
  const int64_t tile_rows = model.connector().tokens_per_tile();
  ImageFeatures features;
  if (dumping) features = encode_images(model, images.pixel_values.data(), images.tiles, pool, true);
  features.tiles = images.tiles;
  int64_t tile = 0;
  for (const int64_t n : images.image_tiles) {
    const float* pixels = images.pixel_values.data() + tile * tile_floats;
    const std::string key = VisionCache::key_of(pixels, static_cast<size_t>(n * tile_floats));
    keys.push_back({key, n * tile_rows});
    tile += n;
    if (dumping) continue;
    std::optional<std::vector<float>> cached = model.vision_cache().find(key);
    if (!cached) {
      cached = encode_images(model, pixels, n, pool, false, run_chunk).image_hidden_states;
      model.vision_cache().insert(key, *cached);
    }
    features.image_hidden_states.insert(features.image_hidden_states.end(), cached->begin(), cached->end());
  }
  return features;
}

BuiltPrompt build_prompt(const ModelConfig& cfg, const TextAssets& assets, const PromptInput& input,
                         const std::vector<ImageGrid>& grids) {
  BuiltPrompt built;
  if (input.raw) {
    built.text = *input.raw;
    built.input_ids = assets.tokenizer().encode(*input.raw, /*add_special_tokens=*/true);
  } else if (takes_images(cfg)) {
    const int64_t per_tile = cfg.image_text()->image_tokens_per_tile();
    if (assets.image_seq_len() && *assets.image_seq_len() != per_tile)
      throw bad_input(cfg.dir.string() + ": processor_config.json image_seq_len " +
                      std::to_string(*assets.image_seq_len()) + " does not match the model's " +
                      std::to_string(per_tile) + " image tokens per tile");
    built = build_vlm_chat_prompt(assets, template_messages(cfg, input.messages), grids);
  } else {
    built = build_chat_prompt(assets, template_messages(cfg, input.messages));
  }
  if (built.input_ids.empty()) throw bad_input("the prompt is empty (no tokens)");
  return built;
}

}  // namespace

std::string ImageInput::name() const {
  switch (kind) {
    case Kind::Path: return path.string();
    case Kind::Encoded: return "image bytes";
    case Kind::Rgb8: return "RGB8 image";
  }
  return "image";
}

RgbImage decode_image(const ImageInput& image) {
  switch (image.kind) {
    case ImageInput::Kind::Path: return load_image(image.path);
    case ImageInput::Kind::Encoded: return load_image_from_memory(image.bytes.data(), image.bytes.size(), image.name());
    case ImageInput::Kind::Rgb8: {
      if (image.width <= 0 || image.height <= 0 || image.width > (int64_t(1) << 20) || image.height > (int64_t(1) << 20))
        throw bad_input("RGB8 image: width and height must be in [1, 2^20], got " + std::to_string(image.width) + "x" +
                        std::to_string(image.height));
      if (image.bytes.data() == nullptr || image.bytes.size() != size_t(image.width * image.height * 3))
        throw bad_input("RGB8 image " + std::to_string(image.width) + "x" + std::to_string(image.height) + ": expected " +
                        std::to_string(image.width * image.height * 3) + " bytes, got " +
                        std::to_string(image.bytes.size()));
      return RgbImage{image.width, image.height, std::vector<uint8_t>(image.bytes.begin(), image.bytes.end())};
    }
  }
  throw internal_error("unknown image kind");
}

const char* role_name(ChatRole r) {
  switch (r) {
    case ChatRole::System: return "system";
    case ChatRole::User: return "user";
    case ChatRole::Assistant: return "assistant";
  }
  return "user";
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Eos: return "eos";
    case FinishReason::Length: return "length";
    case FinishReason::Stop: return "stop";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::ContextFull: return "context_full";
  }
  return "length";
}

BuiltPrompt render_prompt(const ModelConfig& cfg, const TextAssets& assets, const PromptInput& input) {
  const auto images = images_of(input);
  check_input(cfg, input, images.size());
  ThreadPool pool(1);
  return build_prompt(cfg, assets, input, prepare_images(cfg, images, input.split, pool, false).grids);
}

PreparedPrompt prepare_prompt(const Model& model, const TextAssetsSource& assets, const PromptInput& input,
                              ThreadPool& pool, const ChunkRunner& run_chunk) {
  const ModelConfig& cfg = model.config();
  const auto images_in = images_of(input);
  check_input(cfg, input, images_in.size());
  prepare_dump_dir(input.dump_dir);
  PreparedPrompt out;
  auto t0 = Clock::now();
  const PreparedImages images = prepare_images(cfg, images_in, input.split, pool, true);  // while the tokenizer loads
  out.timings.preprocess = seconds_since(t0);
  t0 = Clock::now();
  const TextAssets& text = assets();
  out.timings.load = seconds_since(t0);
  t0 = Clock::now();
  BuiltPrompt built = build_prompt(cfg, text, input, images.grids);
  out.ids.assign(built.input_ids.begin(), built.input_ids.end());
  out.text = std::move(built.text);
  out.timings.preprocess += seconds_since(t0);
  out.image_tiles = images.tiles;
  if (images.tiles == 0) {
    if (takes_images(cfg) && std::count(out.ids.begin(), out.ids.end(), cfg.image_text()->image_token_id) > 0)
      throw bad_input("the prompt holds image tokens but no image was given");
    out.content.append_ids(out.ids);
    return out;
  }
  const SiglipVision& vision = model.vision();
  const int64_t S = vision.image_size();
  dump(input.dump_dir, "pixel_values", {1, images.tiles, 3, S, S}, images.pixel_values);
  t0 = Clock::now();
  const ImageFeatures features = image_features(model, images, pool, /*dumping=*/!input.dump_dir.empty(), out.content_images,
                                                run_chunk);
  out.timings.vision = seconds_since(t0);
  dump(input.dump_dir, "vision_last_hidden", {images.tiles, vision.num_patches(), vision.hidden()},
       features.vision_last_hidden);
  dump(input.dump_dir, "image_hidden_states", {images.tiles, model.connector().tokens_per_tile(), model.text().hidden()},
       features.image_hidden_states);
  t0 = Clock::now();
  out.embeddings = prompt_embeddings(model, out.ids, features);
  out.content = KvContent::of_prompt(out.ids, cfg.image_text()->image_token_id, out.content_images);
  out.timings.prefill = seconds_since(t0);  // the embedding lookup counts as prefill, as before
  return out;
}

double prefill_prompt(Session& session, const PreparedPrompt& prompt, const PrefillOptions& options) {
  const auto t0 = Clock::now();
  const int64_t rows = static_cast<int64_t>(prompt.ids.size());
  if (options.from < 0 || options.from >= rows)
    throw internal_error("prefill_prompt: start " + std::to_string(options.from) + " outside the prompt of " +
                         std::to_string(rows) + " tokens");
  if (options.chunk < 0) throw bad_input("prefill_chunk must be >= 0, got " + std::to_string(options.chunk));
  const int64_t H = session.model().text().hidden();
  std::span<const float> logits;
  for (int64_t at = options.from; at < rows;) {
    const int64_t n = options.chunk > 0 ? std::min(options.chunk, rows - at) : rows - at;
    if (prompt.embeddings.empty()) {
      logits = session.prefill(std::span<const int64_t>(prompt.ids).subspan(static_cast<size_t>(at), static_cast<size_t>(n)));
    } else {
      KvContent part;
      part.append(prompt.content, static_cast<size_t>(at), static_cast<size_t>(at + n));
      logits = session.prefill_embeddings(prompt.embeddings.data() + at * H, n, part);
    }
    at += n;
  }
  const double seconds = seconds_since(t0);
  if (!options.dump_dir.empty())
    dump(options.dump_dir, "prefill_logits_last", {session.model().text().vocab()}, {logits.begin(), logits.end()});
  return seconds;
}

int64_t keep_common_prefix(Session& session, const PreparedPrompt& prompt) {
  const int64_t tokens = static_cast<int64_t>(prompt.ids.size());
  if (tokens > session.capacity())
    throw state_error("the prompt has " + std::to_string(tokens) + " tokens but the context holds " +
                      std::to_string(session.capacity()));
  // At least the last token runs again: its logits choose the first new token.
  const int64_t keep = std::min<int64_t>(static_cast<int64_t>(session.content().common_prefix(prompt.content)), tokens - 1);
  session.truncate(keep);
  return keep;
}

RequestResult generate_text(Session& session, const TextAssets& assets, std::span<const int64_t> prompt_ids,
                            const RequestOptions& o, const TextSink& sink) {
  const Model& model = session.model();
  RequestResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  GenerationOptions g = o.generation;
  if (!o.ignore_eos)
    for (int64_t id : model.config().generation.eos_token_ids)
      if (std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), id) == g.eos_token_ids.end()) g.eos_token_ids.push_back(id);
  g.keep_step_logits = g.keep_step_logits || !o.dump_dir.empty();
  StreamingDetokenizer detok(assets.tokenizer(), /*skip_special_tokens=*/true, assets.clean_up_tokenization_spaces());
  StopStringFilter stops(o.stop_strings);
  bool cancelled = false;
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    r.text += piece;
    if (sink && !cancelled && !sink(piece)) cancelled = true;
  };
  GenerationResult gen = generate(session, prompt_ids, g, [&](int64_t id) {
    emit(stops.push(detok.push(static_cast<int32_t>(id))));
    return !cancelled && !stops.stopped();
  });
  if (!stops.stopped() && !cancelled) emit(stops.push(detok.finish()));
  if (!stops.stopped() && !cancelled) emit(stops.finish());
  r.timings.decode = gen.decode_seconds;
  r.token_ids = gen.ids;
  r.unprintable_tokens = detok.unprintable();
  if (stops.stopped()) r.finish = FinishReason::Stop;
  else if (gen.stopped_by_caller) r.finish = FinishReason::Cancelled;
  else if (gen.stopped_on_eos) r.finish = FinishReason::Eos;
  else if (gen.context_full) r.finish = FinishReason::ContextFull;
  else r.finish = FinishReason::Length;
  if (!o.dump_dir.empty()) {
    prepare_dump_dir(o.dump_dir);
    const int64_t steps = static_cast<int64_t>(gen.ids.size());
    dump(o.dump_dir, "step_logits", {steps, model.text().vocab()}, gen.step_logits);
    write_npy(o.dump_dir / "generated_ids.npy", "i8", {steps}, gen.ids.data(), gen.ids.size() * sizeof(int64_t));
  }
  return r;
}

int64_t request_context(int64_t prompt_tokens, int64_t max_new_tokens, int64_t max_context) {
  return std::min(max_context, prompt_tokens + std::max<int64_t>(max_new_tokens, 1));
}

}  // namespace smolvlm
