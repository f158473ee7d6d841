#include "server/request.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

#include "server/http_error.h"

namespace smolvlm::server {

namespace {

using json = nlohmann::json;

HttpError invalid(const std::string& param, const std::string& message) {
  return HttpError(400, param.empty() ? message : param + ": " + message, param);
}

// The leading bytes of the formats the engine decodes (JPEG, PNG, WebP, GIF, BMP).
bool looks_like_image(const std::string& b) {
  auto starts = [&](const char* magic, size_t n, size_t at = 0) {
    return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
  };
  return starts("\xff\xd8\xff", 3) || starts("\x89PNG\r\n\x1a\n", 8) || (starts("RIFF", 4) && starts("WEBP", 4, 8)) ||
         starts("GIF87a", 6) || starts("GIF89a", 6) || starts("BM", 2);
}

double number(const json& body, const char* name, double lo, double hi) {
  const json& v = body[name];
  if (!v.is_number()) throw invalid(name, "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw invalid(name, "must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v.dump());
  return x;
}

// The engine takes NUL-terminated text: a NUL inside would silently cut it.
std::string text_field(const json& v, const std::string& param) {
  std::string s = v.get<std::string>();
  if (s.find('\0') != std::string::npos) throw invalid(param, "must not contain a NUL character");
  return s;
}

bool present(const json& body, const char* name) { return body.contains(name) && !body[name].is_null(); }

void add_content_part(const json& part, const std::string& param, ParsedRequest& out, const MediaPolicy& policy,
                      const RemoteFetcher& fetch) {
  if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
    throw invalid(param, "a part must be {\"type\": \"text\", ...} or {\"type\": \"image_url\", ...}");
  const std::string type = part["type"].get<std::string>();
  if (type == "text") {
    if (!part.contains("text") || !part["text"].is_string()) throw invalid(param + ".text", "must be a string");
    out.chat.text(text_field(part["text"], param + ".text"));
  } else if (type == "image_url") {
    const json* iu = part.contains("image_url") ? &part["image_url"] : nullptr;
    std::string url;
    if (iu && iu->is_string()) url = iu->get<std::string>();  // a shorthand some clients send
    else if (iu && iu->is_object() && iu->contains("url") && (*iu)["url"].is_string()) url = (*iu)["url"].get<std::string>();
    else throw invalid(param + ".image_url", "must be {\"url\": \"...\"}");
    auto bytes = std::make_unique<std::string>(load_image_url(url, policy, fetch, param + ".image_url"));
    if (!looks_like_image(*bytes))
      throw HttpError(400, param + ".image_url: not an image the server decodes (JPEG, PNG, WebP, GIF or BMP)",
                      param + ".image_url", "invalid_image");
    smolvlm_image img{};
    img.kind = SMOLVLM_IMAGE_ENCODED;
    img.data = reinterpret_cast<const uint8_t*>(bytes->data());
    img.size = bytes->size();
    out.images.push_back(std::move(bytes));
    out.chat.image(img);
  } else {
    throw invalid(param + ".type", "\"" + type.substr(0, 32) + "\" is not supported (expected text or image_url)");
  }
}

void parse_messages(const json& body, ParsedRequest& out, const MediaPolicy& policy, const RemoteFetcher& fetch) {
  if (!body.contains("messages")) throw invalid("messages", "is required");
  const json& msgs = body["messages"];
  if (!msgs.is_array() || msgs.empty()) throw invalid("messages", "must be a non-empty array");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    const json& m = msgs[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw invalid(param, "expected {\"role\": ..., \"content\": ...}");
    const std::string role = m["role"].get<std::string>();
    if (role == "system" || role == "developer") out.chat.add(SMOLVLM_ROLE_SYSTEM);
    else if (role == "user") out.chat.add(SMOLVLM_ROLE_USER);
    else if (role == "assistant") out.chat.add(SMOLVLM_ROLE_ASSISTANT);
    else throw invalid(param + ".role", "\"" + role.substr(0, 32) + "\" is not supported (system, user or assistant)");
    const json content = m.contains("content") ? m["content"] : json();
    if (content.is_string()) {
      out.chat.text(text_field(content, param + ".content"));
    } else if (content.is_array()) {
      for (size_t j = 0; j < content.size(); ++j)
        add_content_part(content[j], param + ".content[" + std::to_string(j) + "]", out, policy, fetch);
    } else {
      throw invalid(param + ".content", "must be a string or an array of parts");
    }
  }
}

void parse_stop(const json& body, ParsedRequest& out) {
  if (!present(body, "stop")) return;
  const json& s = body["stop"];
  if (s.is_string()) {
    out.stop.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    if (s.size() > 4) throw invalid("stop", "at most 4 stop sequences");
    for (const auto& x : s) {
      if (!x.is_string()) throw invalid("stop", "must be a string or a list of strings");
      out.stop.push_back(x.get<std::string>());
    }
  } else {
    throw invalid("stop", "must be a string or a list of strings");
  }
  for (const auto& x : out.stop) {
    if (x.empty()) throw invalid("stop", "a stop sequence must not be empty");
    if (x.find('\0') != std::string::npos) throw invalid("stop", "a stop sequence must not contain a NUL character");
  }
}

void parse_options(const json& body, ParsedRequest& out) {
  if (present(body, "model")) {
    if (!body["model"].is_string()) throw invalid("model", "must be a string");
    out.model = body["model"].get<std::string>();
  }
  for (const char* name : {"max_completion_tokens", "max_tokens"}) {
    if (!present(body, name)) continue;
    const json& v = body[name];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) throw invalid(name, "must be an integer >= 1");
    out.max_tokens = v.get<int64_t>();
    break;
  }
  if (present(body, "temperature")) out.sampling.temperature = static_cast<float>(number(body, "temperature", 0, 2));
  if (present(body, "top_p")) out.sampling.top_p = static_cast<float>(number(body, "top_p", 0, 1));
  if (out.sampling.top_p <= 0) throw invalid("top_p", "must be > 0");
  if (present(body, "top_k")) out.sampling.top_k = static_cast<int32_t>(number(body, "top_k", 0, 1 << 30));
  if (present(body, "min_p")) out.sampling.min_p = static_cast<float>(number(body, "min_p", 0, 1));
  if (present(body, "repetition_penalty"))
    out.sampling.repetition_penalty = static_cast<float>(number(body, "repetition_penalty", 1e-3, 100));
  if (present(body, "seed")) {
    if (!body["seed"].is_number_integer()) throw invalid("seed", "must be an integer");
    out.sampling.seed = static_cast<uint64_t>(body["seed"].get<int64_t>());
  }
  for (const char* name : {"frequency_penalty", "presence_penalty"})
    if (present(body, name) && number(body, name, -2, 2) != 0)
      throw invalid(name, "is not supported (only 0); use repetition_penalty");
  if (present(body, "n") && (!body["n"].is_number_integer() || body["n"].get<int64_t>() != 1))
    throw invalid("n", "only n = 1 is supported");
  if (present(body, "logprobs") && !(body["logprobs"].is_boolean() && !body["logprobs"].get<bool>()))
    throw invalid("logprobs", "is not supported");
  if (present(body, "tools") && !(body["tools"].is_array() && body["tools"].empty()))
    throw invalid("tools", "tool calls are not supported");
  if (present(body, "stream")) {
    if (!body["stream"].is_boolean()) throw invalid("stream", "must be true or false");
    out.stream = body["stream"].get<bool>();
  }
  if (present(body, "stream_options")) {
    const json& so = body["stream_options"];
    if (!so.is_object()) throw invalid("stream_options", "must be an object");
    if (present(so, "include_usage")) {
      if (!so["include_usage"].is_boolean()) throw invalid("stream_options.include_usage", "must be true or false");
      out.include_usage = so["include_usage"].get<bool>();
    }
  }
  if (present(body, "ignore_eos")) {  // an extension (benchmarks, tests): exactly max_tokens tokens
    if (!body["ignore_eos"].is_boolean()) throw invalid("ignore_eos", "must be true or false");
    out.ignore_eos = body["ignore_eos"].get<bool>();
  }
  if (present(body, "split")) {  // an extension: image splitting on or off (default: the model's)
    if (!body["split"].is_boolean()) throw invalid("split", "must be true or false");
    out.split = body["split"].get<bool>() ? 1 : 0;
  }
  parse_stop(body, out);
}

}  // namespace

void ParsedRequest::fill(smolvlm_request& req) {
  if (endpoint == Endpoint::Chat) {
    chat.fill(req);
  } else {
    req.prompt = prompt.c_str();
  }
  req.sampling = sampling;
  req.ignore_eos = ignore_eos ? 1 : 0;
  req.split = split;
  if (max_tokens > 0) req.max_new_tokens = max_tokens;
  stop_ptrs_.clear();
  for (const auto& s : stop) stop_ptrs_.push_back(s.c_str());
  req.stop = stop_ptrs_.data();
  req.n_stop = stop_ptrs_.size();
}

ParsedRequest parse_request(std::string_view text, Endpoint endpoint, const MediaPolicy& policy,
                            const RemoteFetcher& fetch) {
  json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) throw HttpError(400, "the request body is not valid JSON", "", "invalid_json");
  if (!body.is_object()) throw HttpError(400, "the request body must be a JSON object", "", "invalid_json");
  ParsedRequest out;
  out.endpoint = endpoint;
  parse_options(body, out);
  if (endpoint == Endpoint::Chat) {
    parse_messages(body, out, policy, fetch);
  } else {
    if (!body.contains("prompt")) throw invalid("prompt", "is required");
    const json& p = body["prompt"];
    if (p.is_string()) out.prompt = text_field(p, "prompt");
    else if (p.is_array() && p.size() == 1 && p[0].is_string()) out.prompt = text_field(p[0], "prompt");
    else throw invalid("prompt", "must be a string (or a list of one string)");
    if (out.prompt.empty()) throw invalid("prompt", "must not be empty");
  }
  return out;
}

}  // namespace smolvlm::server
