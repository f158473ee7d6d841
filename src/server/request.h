// An OpenAI request body (/v1/chat/completions or /v1/completions) turned into an engine request.
// Every field is checked; anything wrong is an HttpError 400 naming the field. Unknown fields are
// ignored, as OpenAI does.
#pragma once

#include <smolvlm.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/media.h"

namespace smolvlm::server {

enum class Endpoint { Chat, Completion };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;  // as the client named it ("" when absent)
  api::Chat chat;     // Chat: the turns, images as encoded bytes
  std::string prompt; // Completion: the raw prompt
  std::vector<std::unique_ptr<std::string>> images;  // the bytes the chat's image parts point at
  int64_t max_tokens = -1;                           // -1: not given
  smolvlm_sampling sampling{1.0f, 0, 1.0f, 0.0f, 1.0f, 0};  // OpenAI's defaults: temperature 1, top_p 1
  std::vector<std::string> stop;
  bool stream = false, include_usage = false;
  bool ignore_eos = false;  // extension: eos does not end the answer
  int split = -1;           // extension: image splitting (-1 the model's default, 0 off, 1 on)

  // Points `req` at this object's messages or prompt, sampling and stops (valid while this lives).
  void fill(smolvlm_request& req);

 private:
  std::vector<const char*> stop_ptrs_;
};

ParsedRequest parse_request(std::string_view body, Endpoint endpoint, const MediaPolicy& policy,
                            const RemoteFetcher& fetch = fetch_remote_image);

}  // namespace smolvlm::server
