#include "io/json_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace smolvlm {

using nlohmann::json;

json parse_json_object(const std::string& text, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw bad_input(name + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw bad_input(name + ": expected a JSON object at the top level, got " + j.type_name());
  return j;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw bad_input(message);
}

int64_t ConfigFields::required_integer(const char* key) const {
  const json* v = get(key);
  if (!v) throw bad_input(where(key) + " is missing (required)");
  return as_integer(*v, where(key));
}

int64_t ConfigFields::required_size(const char* key) const {
  int64_t v = required_integer(key);
  if (v <= 0 || v > kMaxConfigDimension)
    throw bad_input(where(key) + " must be in 1.." + std::to_string(kMaxConfigDimension) + ", got " +
                    std::to_string(v));
  return v;
}

double ConfigFields::number(const char* key, double fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_number()) throw bad_input(where(key) + " must be a number, got " + v->type_name());
  double d = v->get<double>();
  if (!std::isfinite(d)) throw bad_input(where(key) + " must be finite");
  return d;
}

double ConfigFields::positive_number(const char* key, double fallback) const {
  double d = number(key, fallback);
  if (!(d > 0)) throw bad_input(where(key) + " must be positive, got " + std::to_string(d));
  return d;
}

bool ConfigFields::boolean(const char* key, bool fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw bad_input(where(key) + " must be true or false, got " + v->type_name());
  return v->get<bool>();
}

std::string ConfigFields::string(const char* key, const std::string& fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_string()) throw bad_input(where(key) + " must be a string, got " + v->type_name());
  return v->get<std::string>();
}

ConfigFields ConfigFields::object(const char* key) const {
  const json* v = get(key);
  if (!v) throw bad_input(where(key) + " is missing (required)");
  if (!v->is_object()) throw bad_input(where(key) + " must be an object, got " + v->type_name());
  return ConfigFields(*v, where_ + ": " + key);
}

int64_t ConfigFields::as_integer(const json& v, const std::string& where) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      throw bad_input(where + " is out of range");
    return v.get<int64_t>();
  }
  throw bad_input(where + " must be an integer, got " + (v.is_number() ? std::string("a fraction") : v.type_name()));
}

}  // namespace smolvlm
