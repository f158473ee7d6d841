#include "cli/messages.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace smolvlm::cli {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot open");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* messages_help() {
  return "a JSON file in OpenAI's message shape: [{\"role\": \"system\"|\"user\"|\"assistant\", "
         "\"content\": \"text\" or [{\"type\": \"text\", \"text\": ...}, {\"type\": \"image_url\", "
         "\"image_url\": {\"url\": \"PATH or file://PATH\"}}]}, ...]";
}

void add_messages_file(const std::string& path, api::Chat& chat) { add_messages_json(read_text_file(path), path, chat); }

void add_messages_json(const std::string& text, const std::string& path, api::Chat& chat) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": not valid JSON: " + e.what());
  }
  auto bad = [&](size_t i, const std::string& what) {
    return api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": message " + std::to_string(i) + ": " + what);
  };
  if (!j.is_array()) throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": expected an array of messages");
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) throw bad(i, "expected {\"role\": ..., \"content\": ...}");
    const std::string role = m["role"];
    if (role == "system") chat.add(SMOLVLM_ROLE_SYSTEM);
    else if (role == "user") chat.add(SMOLVLM_ROLE_USER);
    else if (role == "assistant") chat.add(SMOLVLM_ROLE_ASSISTANT);
    else throw bad(i, "role \"" + role + "\": expected system, user or assistant");
    const auto content = m.value("content", nlohmann::json());
    if (content.is_string()) {
      chat.text(content.get<std::string>());
      continue;
    }
    if (!content.is_array()) throw bad(i, "content must be a string or an array of parts");
    for (const auto& part : content) {
      // value("type", "") would throw nlohmann's type_error for a non-string type: read it by hand.
      const std::string type =
          part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
      if (type == "text" && part.contains("text") && part["text"].is_string()) {
        chat.text(part["text"].get<std::string>());
      } else if (type == "image_url" && part.contains("image_url") && part["image_url"].is_object() &&
                 part["image_url"].value("url", nlohmann::json()).is_string()) {
        std::string url = part["image_url"]["url"];
        if (url.rfind("file://", 0) == 0) url = url.substr(7);
        else if (url.find("://") != std::string::npos || url.rfind("data:", 0) == 0)
          throw bad(i, "image url \"" + url.substr(0, 40) + "\": only local files (a path or file://PATH) are read");
        chat.image_file(url);
      } else {
        throw bad(i, "a part must be {\"type\": \"text\", \"text\": ...} or {\"type\": \"image_url\", \"image_url\": {\"url\": ...}}");
      }
    }
  }
}

}  // namespace smolvlm::cli
