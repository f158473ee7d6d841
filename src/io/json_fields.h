// Typed, bounded reading of HF JSON config files: the JSON object of a file and typed access to
// its keys, with messages that name the file, sub-object and key. Knows JSON, not any model.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace smolvlm {

// Upper bound on any size read from a config (dimensions, layer counts, vocab): larger values are
// Error(BadInput), so that products of sizes never overflow int64.
inline constexpr int64_t kMaxConfigDimension = int64_t(1) << 24;
// Upper bound on a layer count, for the same reason.
inline constexpr int64_t kMaxConfigLayers = 4096;

// Config files are small; anything bigger than this is not a config.
inline constexpr size_t kMaxConfigFileBytes = size_t(16) << 20;

// Parses `text` as one JSON object; Error(BadInput) naming `name` otherwise.
nlohmann::json parse_json_object(const std::string& text, const std::string& name);

// Error(BadInput) with `message` unless `ok`.
void require(bool ok, const std::string& message);

// Typed access to the keys of one JSON object; `where` names the file (and sub-object) in messages.
// A key that is absent or null takes the fallback.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  const nlohmann::json* get(const char* key) const { return has(key) ? &obj_.at(key) : nullptr; }
  std::string where(const char* key) const { return where_ + ": key \"" + key + "\""; }
  const std::string& location() const { return where_; }

  int64_t integer(const char* key, int64_t fallback) const { return has(key) ? required_integer(key) : fallback; }
  int64_t required_integer(const char* key) const;
  // Sizes are integers in 1..kMaxConfigDimension.
  int64_t size(const char* key, int64_t fallback) const { return has(key) ? required_size(key) : fallback; }
  int64_t required_size(const char* key) const;
  double number(const char* key, double fallback) const;           // finite
  double positive_number(const char* key, double fallback) const;  // finite and > 0
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  ConfigFields object(const char* key) const;  // required sub-object

  static int64_t as_integer(const nlohmann::json& v, const std::string& where);

 private:
  const nlohmann::json& obj_;
  std::string where_;
};

}  // namespace smolvlm
