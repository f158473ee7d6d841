/* smolvlm.h: the engine's C API.
 *
 * Every front end (the `smolvlm` CLI, the server, the bindings, a C program) uses only this header.
 * It is plain C: opaque handles, plain structs, no exceptions across it.
 *
 * Conventions
 * - Every fallible call returns an smolvlm_status. On failure, smolvlm_last_error() gives the
 *   message of the calling thread's last failure: it names the file, tensor or field and says what
 *   was expected and what was found. Output parameters are untouched on failure.
 * - Option structs start with `struct_size`. Fill them with the matching *_init() function, which sets
 *   every default and the size; then change the fields you need. A library built with more fields
 *   reads only the first struct_size bytes and uses defaults for the rest, so programs built against
 *   an older header keep working.
 * - Strings are UTF-8. Memory the library allocates for the caller (arrays, strings, results) is
 *   released with smolvlm_free() or the named *_free() function.
 * - Thread safety: a model may be used by many threads at once (each with its own session); a
 *   session, by one thread at a time. Two models may live in one process, each with its own options.
 */
#ifndef SMOLVLM_H
#define SMOLVLM_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define SMOLVLM_API
#else
#define SMOLVLM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SMOLVLM_VERSION_MAJOR 0
#define SMOLVLM_VERSION_MINOR 4
#define SMOLVLM_VERSION_PATCH 0

/* "0.4.0": the version of the library actually loaded (it may differ from the header's). */
SMOLVLM_API const char* smolvlm_version(void);

/* ---- errors ---------------------------------------------------------------------------------- */

/* The values are the `smolvlm` CLI's exit codes for the same failures. */
typedef enum smolvlm_status {
  SMOLVLM_OK = 0,
  SMOLVLM_ERR_BAD_INPUT = 3,   /* malformed or inconsistent input: files, configs, images, prompts, options */
  SMOLVLM_ERR_UNSUPPORTED = 4, /* valid input the engine does not handle (a dtype, a format, a rope type) */
  SMOLVLM_ERR_IO = 5,          /* the operating system refused (open, read, write, map), or out of memory */
  SMOLVLM_ERR_STATE = 6,       /* misuse: decode before prefill, a full context, a NULL handle */
  SMOLVLM_ERR_INTERNAL = 70    /* a bug of the engine */
} smolvlm_status;

/* The message of the calling thread's last failed call ("" when none failed). Valid until that
 * thread's next call into the library. */
SMOLVLM_API const char* smolvlm_last_error(void);
/* "bad input", "unsupported", "I/O error", "state misuse", "internal error", "ok". */
SMOLVLM_API const char* smolvlm_status_name(smolvlm_status status);

/* Releases memory the library allocated for the caller (token arrays, strings). NULL is a no-op. */
SMOLVLM_API void smolvlm_free(void* p);

/* ---- models ---------------------------------------------------------------------------------- */

typedef struct smolvlm_model smolvlm_model;
typedef struct smolvlm_tokenizer smolvlm_tokenizer;
typedef struct smolvlm_session smolvlm_session;

typedef struct smolvlm_model_options {
  size_t struct_size;
  /* Worker threads of each session of this model; 0: every core. */
  int32_t threads;
  /* Kernels to use: NULL or "" for the path the environment variable SMOLVLM_KERNELS names where it is
   * set (one the CPU cannot run, or an unknown name, is an error at load), else the best this CPU
   * has; or "scalar", "avx2", "avx512" or "neon".
   * A path the CPU cannot run is SMOLVLM_ERR_UNSUPPORTED at load; nothing runs on another path
   * without saying so (smolvlm_result.kernel_path says which ran). */
  const char* kernel_path;
  /* Upper bound on the context (KV capacity) of any session; 0: the model's
   * max_position_embeddings, bounded so one session's cache stays within 2 GiB. */
  int64_t max_context;
  /* 0: read the configs and the tokenizer only, not the weights: enough to tokenize, render prompts
   * and describe the model; generating is then SMOLVLM_ERR_STATE. Default 1. */
  int32_t load_weights;
  /* Images whose vision output is kept for later requests with the same pixels (the tower is then
   * skipped: the same features, exactly); 0 keeps none. Default 8. */
  int32_t vision_cache_images;
  /* Arithmetic of the matrix products: NULL, "" or "exact" (fp32, the results HF computes; the
   * default), or "fast": on the avx512 path, vision and prefill operands rounded to bf16 and multiplied
   * with VDPBF16PS (1.4-2x faster); on the avx2 and neon paths, and on the avx512 one where the CPU
   * has avx512_vnni, the decode products of q8/q4/lut4 weights on integers (each row of x rounded to
   * int8 in blocks of 32, lut4 tables to 6-bit codes); dense decode products and attention stay fp32. The README measures the accuracy
   * cost of each; smolvlm_model_info's decode_products names what runs. "fast" needs the avx2 or neon
   * kernel path or the avx512 one with avx512_bf16, else SMOLVLM_ERR_UNSUPPORTED at load. */
  const char* precision;
  /* Where the weights live: "read": the weight files are read whole into this process's memory at
   * load (advised for huge pages, then read-only), SMOLVLM_ERR_UNSUPPORTED where they do not fit in
   * the memory available; "map": the files are mapped (the load returns at once, pages are read from
   * disk on first use, shared with other processes mapping the same files, and dropped under memory
   * pressure); NULL or "" (the default): "read" where the files take at most three quarters of the
   * memory available, else "map". On a VM whose kernel samples the page cache, decode from mapped
   * files stalled for 60-100 ms every 0.5 s (the README measures it). */
  const char* weight_memory;
} smolvlm_model_options;

SMOLVLM_API void smolvlm_model_options_init(smolvlm_model_options* options);

/* Loads a model folder (config.json, *.safetensors, tokenizer.json, ...) or a hub id
 * "org/name[@revision]" found in the HuggingFace cache (the network is never used). Every tensor is
 * checked before use. The tokenizer loads on a second thread while the caller goes on (with one
 * thread, on first use); a broken tokenizer is reported by the first call that needs it.
 * `options` may be NULL (defaults). */
SMOLVLM_API smolvlm_status smolvlm_model_load(const char* path_or_hub_id, const smolvlm_model_options* options,
                                              smolvlm_model** out);
SMOLVLM_API void smolvlm_model_free(smolvlm_model* model);

typedef struct smolvlm_model_info {
  size_t struct_size;
  const char* architecture; /* HF class: "Idefics3ForConditionalGeneration", "LlamaForCausalLM" */
  const char* path;         /* the model folder */
  const char* kernel_path;  /* the kernels this model runs on */
  const char* precision;    /* "exact" or "fast" (smolvlm_model_options.precision) */
  int32_t threads;          /* worker threads per session */
  int32_t has_vision;       /* 1 when the model takes images */
  int64_t max_context;      /* the largest session context this model allows */
  int64_t max_position_embeddings;
  int64_t vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
  /* Parameters per component (a tied lm_head counts 0, as in HF) and their sum. */
  int64_t params_vision, params_connector, params_text, params_lm_head, params_total;
  /* Image side (0 for a text-only model). */
  int64_t vision_image_size, vision_patch_size, vision_hidden_size, vision_intermediate_size, vision_num_layers;
  int64_t vision_num_channels, scale_factor, image_tokens_per_tile;
  int64_t file_bytes;        /* all safetensors files */
  int64_t decode_bytes;      /* weight bytes read per decoded token (decoder layers, final norm, lm_head) */
  /* generation_config.json's temperature, top_k, top_p, repetition_penalty (1, 0, 1, 1 where absent):
   * the sampling the model's authors recommend; requests stay greedy unless they set it. */
  float recommended_temperature, recommended_top_p, recommended_repetition_penalty;
  int32_t recommended_top_k;
  /* The arithmetic of the decode products, per stored format of the decoder's and lm_head's
   * matrices, in the order they first appear: "BF16 avx512 fp32", or under precision "fast" on an
   * avx512_vnni CPU "Q4 avx512-vnni int8, Q8 avx512-vnni int8" (formats without integer products say
   * "<path> fp32"). "" when the weights are not loaded. */
  const char* decode_products;
  /* "read" or "map" (smolvlm_model_options.weight_memory); "" when the weights are not loaded. */
  const char* weight_memory;
} smolvlm_model_info;

/* Fills `info` (call smolvlm_model_info_init first or set struct_size). Strings live as long as the model. */
SMOLVLM_API void smolvlm_model_info_init(smolvlm_model_info* info);
SMOLVLM_API smolvlm_status smolvlm_model_get_info(const smolvlm_model* model, smolvlm_model_info* info);

/* ---- requests -------------------------------------------------------------------------------- */

typedef enum smolvlm_role { SMOLVLM_ROLE_SYSTEM = 0, SMOLVLM_ROLE_USER = 1, SMOLVLM_ROLE_ASSISTANT = 2 } smolvlm_role;

typedef enum smolvlm_image_kind {
  SMOLVLM_IMAGE_PATH = 0,    /* `path`: a JPEG, PNG, WebP, GIF or BMP file */
  SMOLVLM_IMAGE_ENCODED = 1, /* `data`/`size`: the bytes of such a file */
  SMOLVLM_IMAGE_RGB8 = 2     /* `data`/`size`: width*height*3 bytes, rows top to bottom, R G B */
} smolvlm_image_kind;

typedef struct smolvlm_image {
  smolvlm_image_kind kind;
  const char* path;
  const uint8_t* data;
  size_t size;
  int32_t width, height; /* RGB8 only */
} smolvlm_image;

typedef enum smolvlm_part_kind { SMOLVLM_PART_TEXT = 0, SMOLVLM_PART_IMAGE = 1 } smolvlm_part_kind;

typedef struct smolvlm_part {
  smolvlm_part_kind kind;
  const char* text;    /* TEXT: NUL-terminated UTF-8 */
  smolvlm_image image; /* IMAGE */
} smolvlm_part;

typedef struct smolvlm_message {
  smolvlm_role role;
  const smolvlm_part* parts;
  size_t n_parts;
} smolvlm_message;

/* HF's logits processors, in HF's order: repetition penalty, then (when temperature > 0)
 * temperature, top-k, top-p, min-p. The defaults are greedy decoding. */
typedef struct smolvlm_sampling {
  float temperature;        /* 0: greedy */
  int32_t top_k;            /* 0: off */
  float top_p;              /* 1: off */
  float min_p;              /* 0: off */
  float repetition_penalty; /* 1: off */
  uint64_t seed;
} smolvlm_sampling;

/* Receives each newly printable piece of the output (UTF-8, never a partial character, never text
 * of a stop string). Returns nonzero to continue, 0 to stop: the result then ends with
 * SMOLVLM_FINISH_CANCELLED and the session stays usable. */
typedef int (*smolvlm_piece_callback)(const char* piece, size_t size, void* user_data);

typedef struct smolvlm_request {
  size_t struct_size;
  /* Either chat messages, rendered with the model's chat template (generation prompt added; each
   * image becomes the model's image tokens), ... */
  const smolvlm_message* messages;
  size_t n_messages;
  /* ... or a raw prompt, tokenized as is (with the tokenizer's special tokens), no template, no images.
   * Exactly one of the two is given. */
  const char* prompt;
  int32_t split;             /* images split into tiles: -1 the model's preprocessor config, 0 no, 1 yes */
  int64_t max_new_tokens;    /* default 256 */
  smolvlm_sampling sampling;
  /* Text stops: generation ends where the output first contains one; the stop and what follows are
   * not part of the text (the token ids keep every generated token). */
  const char* const* stop;
  size_t n_stop;
  /* Token ids that end generation, besides the model's eos ids (kept in the ids, not in the text). */
  const int32_t* stop_ids;
  size_t n_stop_ids;
  smolvlm_piece_callback on_piece; /* NULL: no streaming */
  void* user_data;
  /* KV capacity of a session this request creates (smolvlm_generate); 0: prompt + max_new_tokens
   * within the model's max_context. */
  int64_t context;
  /* Debugging: a folder to write every stage as .npy (pixel_values, vision_last_hidden,
   * image_hidden_states, prefill_logits_last, step_logits, generated_ids); NULL: none. */
  const char* dump_dir;
  /* 1: the model's eos ids do not end generation (benchmarks that need exactly max_new_tokens). */
  int32_t ignore_eos;
  /* smolvlm_session_run only. 1: keep the session's KV of the longest common prefix of what it holds
   * (the previous prompt and answer) and this prompt, and prefill only the rest: a follow-up turn that
   * repeats the earlier messages skips their prefill. Positions are compared by token id and, at image
   * tokens, by the image's pixels, so the result is what a fresh session gives. 0: start afresh. */
  int32_t reuse_prefix;
  /* Prompt tokens per prefill call (0: one call). In a decode group the other members' decode steps
   * run between the calls, so a long prompt does not stall the streams already running. */
  int64_t prefill_chunk;
} smolvlm_request;

SMOLVLM_API void smolvlm_request_init(smolvlm_request* request);

typedef enum smolvlm_finish_reason {
  SMOLVLM_FINISH_EOS = 0,          /* an eos id (or one of stop_ids) was generated */
  SMOLVLM_FINISH_LENGTH = 1,       /* max_new_tokens reached */
  SMOLVLM_FINISH_STOP = 2,         /* a stop string appeared */
  SMOLVLM_FINISH_CANCELLED = 3,    /* the callback returned 0 */
  SMOLVLM_FINISH_CONTEXT_FULL = 4  /* the session's context is full */
} smolvlm_finish_reason;

/* "eos", "length", "stop", "cancelled", "context_full". */
SMOLVLM_API const char* smolvlm_finish_reason_name(smolvlm_finish_reason reason);

typedef struct smolvlm_timings {
  double load_s;       /* model load the request waited for (the tokenizer, when it was still loading) */
  double preprocess_s; /* image decoding, tiling, prompt rendering and tokenization */
  double vision_s;     /* vision tower + connector */
  double prefill_s;    /* the prompt through the decoder */
  double decode_s;     /* every decode step */
} smolvlm_timings;

typedef struct smolvlm_result {
  size_t struct_size;
  char* text;                 /* NUL-terminated; the generated text, special tokens skipped */
  size_t text_size;
  int32_t* token_ids;         /* every generated token (an eos included) */
  size_t n_tokens;
  int64_t prompt_tokens;
  int64_t image_tiles;        /* tiles through the vision tower */
  smolvlm_finish_reason finish_reason;
  smolvlm_timings timings;
  const char* kernel_path;    /* static string: the kernels that ran */
  int64_t reused_tokens;      /* prompt tokens kept from the session's KV (reuse_prefix), not prefilled */
  int64_t unprintable_tokens; /* generated ids the tokenizer lacks (a model's embedding padded past its
                                 tokenizer): kept in token_ids, decoded to nothing, as HF does */
} smolvlm_result;

/* Releases the result's arrays and zeroes it. */
SMOLVLM_API void smolvlm_result_free(smolvlm_result* result);

/* Runs a request on a session of its own (created and released inside the call). */
SMOLVLM_API smolvlm_status smolvlm_generate(smolvlm_model* model, const smolvlm_request* request,
                                            smolvlm_result* result);

/* ---- sessions: one sequence and its KV cache --------------------------------------------------- */

/* A session of `context` positions (0: the model's max_context). */
SMOLVLM_API smolvlm_status smolvlm_session_create(smolvlm_model* model, int64_t context, smolvlm_session** out);
SMOLVLM_API void smolvlm_session_free(smolvlm_session* session);

/* Runs `request` in this session (its `context` field is ignored), afresh or, with reuse_prefix, after
 * the longest common prefix of what the session holds. */
SMOLVLM_API smolvlm_status smolvlm_session_run(smolvlm_session* session, const smolvlm_request* request,
                                               smolvlm_result* result);

/* For callers that drive generation themselves. Every misuse (decode before prefill, writing past the
 * capacity, an id outside the vocabulary) is an error and leaves the session as it was. */
/* Forgets every token; the cache is kept for reuse. */
SMOLVLM_API smolvlm_status smolvlm_session_reset(smolvlm_session* session);
/* Tokens in the cache (the position of the next one) and the capacity. */
SMOLVLM_API int64_t smolvlm_session_position(const smolvlm_session* session);
SMOLVLM_API int64_t smolvlm_session_capacity(const smolvlm_session* session);
/* Keeps the first `position` tokens (0 <= position <= the current position). */
SMOLVLM_API smolvlm_status smolvlm_session_truncate(smolvlm_session* session, int64_t position);
/* Appends token ids. */
SMOLVLM_API smolvlm_status smolvlm_session_prefill(smolvlm_session* session, const int32_t* ids, size_t n);
/* Appends a request's prompt (template, images, tokens; only messages/prompt/split/dump_dir are read).
 * `timings` (may be NULL) receives preprocess, vision and prefill times; `prompt_tokens` (may be
 * NULL) the number of tokens appended. */
SMOLVLM_API smolvlm_status smolvlm_session_prefill_request(smolvlm_session* session, const smolvlm_request* request,
                                                           smolvlm_timings* timings, int64_t* prompt_tokens);
/* Appends one token. */
SMOLVLM_API smolvlm_status smolvlm_session_decode(smolvlm_session* session, int32_t id);
/* The logits [n_vocab] of the last position, valid until the session's next call. */
SMOLVLM_API smolvlm_status smolvlm_session_logits(const smolvlm_session* session, const float** logits,
                                                  size_t* n_vocab);
/* Appends ids[i] to sessions[i] for each of `n` distinct sessions of one model in a single pass over
 * the weights (decode is bound by reading them: several streams cost little more than one). Each
 * session's logits are then bitwise those smolvlm_session_decode(sessions[i], ids[i]) gives (the
 * sessions go through the weights in groups as large as the kernels keep rows independent: 4 on
 * AVX2/AVX-512). Runs on the first session's threads; no other call may use
 * these sessions meanwhile. Every session is checked first: on an error none has changed. */
SMOLVLM_API smolvlm_status smolvlm_sessions_decode(smolvlm_session* const* sessions, const int32_t* ids, size_t n);

/* A decode group: sessions of one model, each generating on its own thread (smolvlm_session_run),
 * whose decode steps run together, as smolvlm_sessions_decode would run them, whenever several are
 * decoding at once; a server's streams then share each pass over the weights. Answers are bitwise
 * those of each request alone. A session joins with smolvlm_session_set_decode_group (NULL leaves);
 * free the group after every member has left or been freed. */
typedef struct smolvlm_decode_group smolvlm_decode_group;
SMOLVLM_API smolvlm_status smolvlm_decode_group_create(smolvlm_model* model, smolvlm_decode_group** out);
SMOLVLM_API void smolvlm_decode_group_free(smolvlm_decode_group* group);
SMOLVLM_API smolvlm_status smolvlm_session_set_decode_group(smolvlm_session* session, smolvlm_decode_group* group);

/* ---- text -------------------------------------------------------------------------------------- */

/* A tokenizer on its own: a model folder (only tokenizer.json and tokenizer_config.json are read) or a
 * tokenizer.json file. */
SMOLVLM_API smolvlm_status smolvlm_tokenizer_load(const char* path, smolvlm_tokenizer** out);
SMOLVLM_API void smolvlm_tokenizer_free(smolvlm_tokenizer* tokenizer);
/* The model's tokenizer (waits for it to load); owned by the model. */
SMOLVLM_API smolvlm_status smolvlm_model_tokenizer(smolvlm_model* model, const smolvlm_tokenizer** out);

/* Encodes `size` bytes of text, as HF's tokenizer(text, add_special_tokens=...). *ids is released
 * with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_tokenize(const smolvlm_tokenizer* tokenizer, const char* text, size_t size,
                                            int add_special_tokens, int32_t** ids, size_t* n_ids);
/* Decodes ids, as HF's tokenizer.decode(ids, skip_special_tokens=...): an id the tokenizer lacks (a
 * model's embedding may be padded past it) gives no text; a negative id is SMOLVLM_ERR_BAD_INPUT.
 * *text is released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_detokenize(const smolvlm_tokenizer* tokenizer, const int32_t* ids, size_t n_ids,
                                              int skip_special_tokens, char** text);
/* The vocabulary string of one id (e.g. "Ġthe"); SMOLVLM_ERR_BAD_INPUT for an id the tokenizer lacks.
 * *token is released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_token_to_string(const smolvlm_tokenizer* tokenizer, int32_t id, char** token);
SMOLVLM_API int64_t smolvlm_tokenizer_vocab_size(const smolvlm_tokenizer* tokenizer);

/* The model input a request becomes: the rendered prompt text (images expanded into their tokens)
 * and its ids, exactly as HF's processor builds them. Reads messages/prompt/split only. Both outputs
 * are released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_render_prompt(smolvlm_model* model, const smolvlm_request* request, char** text,
                                                 int32_t** ids, size_t* n_ids);

/* ---- translation prompts (HY-MT) -------------------------------------------------------------- */

typedef struct smolvlm_term {
  const char* source;
  const char* target;
} smolvlm_term;

/* The HY-MT1.5 model card's prompt for translating `text` into `to` (a model card code such as "de",
 * or its English or Chinese name): the terminology template when n_terms > 0, the Chinese template when
 * either `to` or `from` is Chinese, the English one otherwise; `from` (NULL allowed) only picks the
 * template. Send it as the user turn of a chat request. *prompt is released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_translation_prompt(const char* text, const char* to, const char* from,
                                                      const smolvlm_term* terms, size_t n_terms, char** prompt);
/* The model card's language codes, comma separated (static storage). */
SMOLVLM_API const char* smolvlm_translation_languages(void);

/* ---- model folders and images, without loading a model ---------------------------------------- */

/* Validates a model folder (configs; with config_only 0 also every safetensors header, the shards and
 * their index, and every tensor's name, shape and dtype against what HF creates for the config) and
 * describes it as one JSON object: architecture, parameters per component, dtypes, file sizes,
 * tensor count, key config values. *json is released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_inspect_model(const char* path_or_hub_id, int config_only, char** json);

typedef struct smolvlm_synth_options {
  size_t struct_size;
  uint64_t seed;
  const char* dtype; /* "bf16" (default), "f16" or "f32" */
  int32_t force;     /* 1: replace an existing output folder */
} smolvlm_synth_options;
SMOLVLM_API void smolvlm_synth_options_init(smolvlm_synth_options* options);
/* Writes a random-weight checkpoint with exactly HF's tensor names and shapes for a config
 * (config.json or a folder holding one), plus copies of the folder's other configs and tokenizer
 * files. The folder appears whole or not at all. *json (may be NULL) receives a summary. */
SMOLVLM_API smolvlm_status smolvlm_synth(const char* config_path, const char* out_dir,
                                         const smolvlm_synth_options* options, char** json);

typedef struct smolvlm_quantize_options {
  size_t struct_size;
  const char* scheme;                /* "q8" (default), "q4", "lut4"; "f32": every weight dequantized to fp32 */
  int64_t group_size;                /* q8/q4: columns per group; lut4: rows per table; 0: the default */
  const char* const* overrides;      /* "PATTERN=FORMAT" (q8, q4, lut4, bf16, f16, f32, source), first match wins */
  size_t n_overrides;
  int32_t force;                     /* 1: replace an existing output folder */
  int32_t threads;                   /* 0: all hardware threads */
  /* Called after each tensor (serialized; may be NULL): done of total, the tensor's name. */
  void (*progress)(void* user, size_t done, size_t total, const char* tensor);
  void* progress_user;
} smolvlm_quantize_options;
SMOLVLM_API void smolvlm_quantize_options_init(smolvlm_quantize_options* options);
/* Writes a copy of a model folder with quantized linear weights and, in a tied model, token embedding
 * (layout and the quantization_config of config.json: see the README), every other file copied. Atomic like smolvlm_synth and
 * deterministic (same input and options, same bytes). *json (may be NULL) receives a summary with
 * every tensor's format and quantization error. */
SMOLVLM_API smolvlm_status smolvlm_quantize(const char* model_dir, const char* out_dir,
                                            const smolvlm_quantize_options* options, char** json);

typedef struct smolvlm_pixels {
  size_t struct_size;
  int64_t width, height;     /* the decoded image (after EXIF orientation) */
  int64_t rows, cols;        /* the split grid (0, 0: not split) */
  int64_t tiles, tile_size;  /* tiles [tiles, 3, tile_size, tile_size]: the crops row-major, the global image last */
  float* pixel_values;       /* rescaled and normalized, as the vision tower takes them */
  uint8_t* tiles_u8;         /* the same tiles before rescale/normalize */
} smolvlm_pixels;
/* An image through HF's load_image + the Idefics3 image processor of a model folder (only
 * preprocessor_config.json is read). split: -1 the config's, 0 no, 1 yes. */
SMOLVLM_API smolvlm_status smolvlm_preprocess_image(const char* path_or_hub_id, const smolvlm_image* image,
                                                    int32_t split, smolvlm_pixels* out);
SMOLVLM_API void smolvlm_pixels_free(smolvlm_pixels* pixels);

/* Writes a float32 or uint8 array as a .npy file (dtype "f4" or "u1"). */
SMOLVLM_API smolvlm_status smolvlm_write_npy(const char* path, const char* dtype, const int64_t* shape, size_t ndim,
                                             const void* data, size_t nbytes);
/* Writes an RGB8 image (width*height*3 bytes) as PNG. */
SMOLVLM_API smolvlm_status smolvlm_write_png(const char* path, const uint8_t* rgb, int64_t width, int64_t height);

/* The folder a model reference names: a local folder as is, a hub id's snapshot in the HuggingFace
 * cache (never the network), NULL or "" the default model. *dir is released with smolvlm_free(). */
SMOLVLM_API smolvlm_status smolvlm_resolve_model(const char* path_or_hub_id, char** dir);
/* "HuggingFaceTB/SmolVLM-256M-Instruct". */
SMOLVLM_API const char* smolvlm_default_model(void);

/* The kernel paths this CPU can run, best last, e.g. "scalar avx2" (static string). */
SMOLVLM_API const char* smolvlm_supported_kernel_paths(void);

#ifdef __cplusplus
}
#endif

#endif /* SMOLVLM_H */
