// `smolvlm serve`: the OpenAI-compatible HTTP server (src/server) with its flags.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "server/server.h"

namespace smolvlm::cli {
namespace {

std::string read_key_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("--api-key-file " + path + ": cannot open");
  std::stringstream s;
  s << f.rdbuf();
  std::string key = s.str();
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
  if (key.empty()) throw UsageError("--api-key-file " + path + ": the file is empty");
  return key;
}

const Command kServe{"serve", "Serve a model over an OpenAI-compatible HTTP API (chat, completions, a page at /)", [](CLI::App& sub) {
  auto o = std::make_shared<server::ServerOptions>();
  auto key_file = std::make_shared<std::string>();
  auto max_body_mib = std::make_shared<double>(32);
  auto image_mib = std::make_shared<double>(20);
  sub.add_option("--model", o->model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
  sub.add_option("--model-id", o->model_id, "the model id clients send and /v1/models lists (default: the folder's name or the hub id)");
  sub.add_option("--host", o->host, "address to bind (a non-loopback address exposes the server to the network)")->capture_default_str();
  sub.add_option("--port", o->port, "port to listen on (0: any free port, printed at start)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub.add_option("--parallel", o->parallel, "slots: requests generated at once, each with its own KV cache")
      ->capture_default_str()->check(CLI::Range(1, 64));
  auto no_batch = std::make_shared<bool>(false);
  sub.add_flag("--no-batch", *no_batch, "decode each slot on its own instead of stepping the decoding slots together");
  auto no_reuse = std::make_shared<bool>(false);
  sub.add_flag("--no-reuse", *no_reuse, "prefill every prompt in full instead of keeping the slot's KV of the longest common prefix");
  sub.add_option("--prefill-chunk", o->prefill_chunk, "prompt tokens per prefill call; the other slots decode between calls (0: one call)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  sub.add_option("--queue", o->queue, "requests that may wait for a slot; beyond that 503 with Retry-After")
      ->capture_default_str()->check(CLI::Range(0, 4096));
  sub.add_option("--ctx", o->context, "KV capacity of each slot in tokens (default: the model's max_context)");
  sub.add_option("--threads", o->threads, "worker threads of each slot (default: all cores)");
  sub.add_option("--kernels", o->kernels, std::string("kernel path: ") + smolvlm_supported_kernel_paths() + " on this CPU (default: the best)");
  add_precision_flag(sub, o->precision);
  add_weight_memory_flag(sub, o->weight_memory);
  auto key = sub.add_option("--api-key", o->api_key, "require Authorization: Bearer KEY on every /v1 route");
  sub.add_option("--api-key-file", *key_file, "read the API key from this file (keeps it out of the process list)")->excludes(key);
  sub.add_option("--max-tokens", o->default_max_tokens, "new tokens when a request gives no max_tokens")->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--max-body", *max_body_mib, "largest request body in MiB (413 beyond)")->capture_default_str()->check(CLI::PositiveNumber);
  sub.add_option("--max-image", *image_mib, "largest image in MiB (data:, file:// or fetched)")->capture_default_str()->check(CLI::PositiveNumber);
  sub.add_option("--timeout", o->request_timeout_s, "seconds a request may take from its arrival; then it ends with what it has")
      ->capture_default_str()->check(CLI::PositiveNumber);
  sub.add_option("--read-timeout", o->read_timeout_s, "seconds to wait for a client's request bytes")->capture_default_str()->check(CLI::PositiveNumber);
  sub.add_option("--write-timeout", o->write_timeout_s, "seconds to wait for a client to take answer bytes")->capture_default_str()->check(CLI::PositiveNumber);
  sub.add_option("--grace", o->grace_s, "on SIGTERM/SIGINT: seconds in-flight requests may finish before they are cancelled")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  sub.add_option("--media-path", o->media.media_path, "serve file:// image URLs from this folder (never outside it); default: refused")
      ->check(CLI::ExistingDirectory);
  sub.add_flag("--allow-remote-images", o->media.allow_remote, "fetch http(s):// image URLs (public addresses only)");
  sub.add_flag("--allow-private-images", o->media.allow_private,
               "with --allow-remote-images, also fetch from loopback, private and link-local addresses");
  return [o, key_file, max_body_mib, image_mib, no_batch, no_reuse]() {
    o->batch = !*no_batch;
    o->reuse = !*no_reuse;
    if (!key_file->empty()) o->api_key = read_key_file(*key_file);
    if (o->media.allow_private && !o->media.allow_remote) throw UsageError("--allow-private-images needs --allow-remote-images");
    o->max_body = static_cast<size_t>(*max_body_mib * 1048576.0);
    o->media.max_image_bytes = static_cast<size_t>(*image_mib * 1048576.0);
    if (o->host != "127.0.0.1" && o->host != "localhost" && o->host != "::1" && o->api_key.empty())
      std::cerr << "smolvlm serve: warning: listening on " << o->host << " without --api-key\n";
    return server::run_server(*o);
  };
}};

}  // namespace
}  // namespace smolvlm::cli
