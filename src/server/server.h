// `smolvlm serve`: an OpenAI-compatible HTTP server over the engine API (cpp-httplib).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/media.h"

namespace smolvlm::server {

struct ServerOptions {
  std::string model;         // folder or hub id ("" : the default model)
  std::string model_id;      // the id /v1/models lists and requests name ("" : the folder's name)
  std::string host = "127.0.0.1";
  int port = 8080;           // 0: any free port (the one chosen is printed)
  int parallel = 1;          // slots, each with its own session
  bool batch = true;         // decoding slots step together (one pass over the weights)
  bool reuse = true;         // a request keeps the slot's KV of its longest common prefix
  int64_t prefill_chunk = 64;  // prompt tokens per prefill call, between the other slots' decode steps
  size_t queue = 16;         // requests waiting for a slot; beyond that 503
  int64_t context = 0;       // KV capacity of each slot; 0: the model's max_context
  int threads = 0;           // worker threads per slot; 0: every core
  std::string kernels;       // "" : the best the CPU has
  std::string precision;     // "" : exact (smolvlm_model_options.precision)
  std::string weight_memory; // "" : the library's choice (smolvlm_model_options.weight_memory)
  std::string api_key;       // "" : no key needed
  int64_t default_max_tokens = 256;
  size_t max_body = size_t(32) << 20;
  double request_timeout_s = 300;  // generation of one request, from its enqueue
  int read_timeout_s = 30, write_timeout_s = 30;
  double grace_s = 10;        // on SIGTERM/SIGINT: how long in-flight requests may finish
  MediaPolicy media;
};

// Serves until SIGTERM or SIGINT (then drains within the grace period) and returns the exit code:
// 0 after a signal, the engine's status code when the model fails to load, 5 when the port cannot
// be bound. Prints "listening on http://HOST:PORT" to stderr once bound.
int run_server(const ServerOptions& options);

}  // namespace smolvlm::server
