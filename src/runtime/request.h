// Whole requests: chat messages (text and images) or a raw prompt -> the prompt's ids and embeddings
// in a Session -> generated tokens and streamed text, with stop strings, cancellation and per-stage
// timings. The engine API (src/api) is a C surface over these calls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "image/image.h"
#include "kernels/thread_pool.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"
#include "text/prompt.h"

namespace smolvlm {

// An image as a caller hands it over: a file, the bytes of a file, or decoded RGB8 pixels.
struct ImageInput {
  enum class Kind { Path, Encoded, Rgb8 };
  Kind kind = Kind::Path;
  std::filesystem::path path;
  std::span<const uint8_t> bytes;  // Encoded: the file's bytes; Rgb8: [height, width, 3]
  int64_t width = 0, height = 0;   // Rgb8
  std::string name() const;        // for messages: the path, or "image bytes" / "RGB8 image"
};

struct ContentPart {
  bool is_image = false;
  std::string text;
  ImageInput image;
};

// The image's RGB pixels, as HF's load_image gives them (RGB8 input checked and copied as is).
RgbImage decode_image(const ImageInput& image);

enum class ChatRole { System, User, Assistant };
const char* role_name(ChatRole r);  // "system", "user", "assistant"

struct Message {
  ChatRole role = ChatRole::User;
  std::vector<ContentPart> parts;
};

// What the model reads: chat messages rendered with the model's template, or a raw prompt.
struct PromptInput {
  std::vector<Message> messages;
  std::optional<std::string> raw;  // tokenized as is with add_special_tokens=true; no images
  std::optional<bool> split;       // image splitting; nullopt: the preprocessor config's
  std::filesystem::path dump_dir;  // when set, every stage is written there as .npy
};

enum class FinishReason { Eos, Length, Stop, Cancelled, ContextFull };
const char* finish_reason_name(FinishReason r);  // "eos", "length", "stop", "cancelled", "context_full"

struct StageTimings {
  double load = 0, preprocess = 0, vision = 0, prefill = 0, decode = 0;  // seconds
};

// The text assets of a model, possibly still loading: the request asks for them only once its images
// are decoded, and counts the wait as load time.
using TextAssetsSource = std::function<const TextAssets&()>;

// A prompt ready for the decoder: ids and, for prompts with images, the embeddings with the image
// features in place of the image tokens.
struct PreparedPrompt {
  std::vector<int64_t> ids;
  std::string text;               // the rendered prompt
  std::vector<float> embeddings;  // [ids.size(), hidden] when the prompt has images, else empty
  int64_t image_tiles = 0;
  StageTimings timings;           // load (waiting for the text assets), preprocess, vision
  KvContent content;              // what each position puts into the KV (ids, images' keys and rows)
  std::vector<KvContent::Image> content_images;
};

// Renders and tokenizes the prompt and runs its images through the vision tower, each stage of the
// tower a chunk for `run_chunk` (runtime/vision_input.h). Error(BadInput) for an empty prompt, images
// given to a text-only model, a raw prompt beside messages, ...
PreparedPrompt prepare_prompt(const Model& model, const TextAssetsSource& assets, const PromptInput& input,
                              ThreadPool& pool, const ChunkRunner& run_chunk = {});

// The rendered prompt and its ids, without the weights (images are decoded only to know their tile
// grids).
BuiltPrompt render_prompt(const ModelConfig& config, const TextAssets& assets, const PromptInput& input);

struct PrefillOptions {
  int64_t from = 0;   // the first prompt token to append (the ones before are in the session already)
  int64_t chunk = 0;  // tokens per prefill call (0: one call); in a decode group the others step between calls
  std::filesystem::path dump_dir;
};

// Appends the prompt's tokens [from, end) to the session (ids or embeddings) and returns the seconds
// it took. Chunks give the same greedy ids as one call (the products sum rows in another order for
// other row counts: logits equal within float rounding, not always bitwise).
double prefill_prompt(Session& session, const PreparedPrompt& prompt, const PrefillOptions& options = {});

// Keeps what the session holds of the longest common prefix of its content and the prompt's (never
// the prompt's last token, whose logits are needed) and returns its length: prefill_prompt from
// there gives the state a fresh prefill gives. Error(State) when the prompt cannot fit the session.
int64_t keep_common_prefix(Session& session, const PreparedPrompt& prompt);

// Receives each newly printable piece of text; returns false to cancel.
using TextSink = std::function<bool(std::string_view)>;

struct RequestOptions {
  GenerationOptions generation;           // eos ids: the model's are added unless ignore_eos
  bool ignore_eos = false;
  std::vector<std::string> stop_strings;  // text stops, trimmed from the output
  std::filesystem::path dump_dir;
};

struct RequestResult {
  std::string text;                // the generated text, special tokens skipped, stops trimmed
  std::vector<int64_t> token_ids;  // every generated token
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;  // prompt tokens kept in the session from before, not prefilled
  int64_t image_tiles = 0;
  int64_t unprintable_tokens = 0;  // generated ids the tokenizer lacks (kept in token_ids, no text)
  FinishReason finish = FinishReason::Length;
  StageTimings timings;
};

// Generates after a prefilled prompt (`prompt_ids`, the tokens in the session, feed the repetition
// penalty) and streams the text through `sink`.
RequestResult generate_text(Session& session, const TextAssets& assets, std::span<const int64_t> prompt_ids,
                            const RequestOptions& options, const TextSink& sink = {});

// Default KV capacity of a request: prompt + max_new_tokens, within `max_context`.
int64_t request_context(int64_t prompt_tokens, int64_t max_new_tokens, int64_t max_context);

}  // namespace smolvlm
