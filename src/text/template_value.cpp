#include "text/template_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/unicode.h"

namespace smolvlm::text::jinja {

void fail(const std::string& message) { throw RenderError{message}; }

bool py_isspace(char32_t c) { return is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(utf8_decode_at(s, i, n));
    i += n;
  }
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

// Python float repr (shortest round-trip digits; exponent form below 1e-4 and from 1e16).
static std::string py_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    int point = exp + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

static std::string py_repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : to_u32(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(c));
      out += b;
    } else utf8_append(out, c);
  }
  return out + q;
}

std::string py_str(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return py_repr(j);
}

std::string py_repr(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float: return py_float(j.get<double>());
    case Json::value_t::string: return py_repr_string(j.get<std::string>());
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + py_repr(j[i]);
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        out += (first ? "" : ", ") + py_repr_string(it.key()) + ": " + py_repr(it.value());
        first = false;
      }
      return out + "}";
    }
    default: return "";
  }
}

static std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char32_t c : to_u32(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
          out += b;
        } else {
          utf8_append(out, c);
        }
    }
  }
  return out + "\"";
}

void dump_json(const Json& j, const DumpOptions& o, int depth, std::string& out) {
  auto newline = [&](int d) {
    if (!o.indent) return;
    out += '\n';
    for (int k = 0; k < d; ++k) out += *o.indent;
  };
  switch (j.type()) {
    case Json::value_t::null: out += "null"; break;
    case Json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; break;
    case Json::value_t::number_float: {
      double d = j.get<double>();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : py_float(d);
      break;
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: out += py_repr(j); break;
    case Json::value_t::string: out += json_string(j.get<std::string>()); break;
    case Json::value_t::array:
      if (j.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) out += o.item_sep;
        newline(depth + 1);
        dump_json(j[i], o, depth + 1, out);
      }
      newline(depth);
      out += ']';
      break;
    case Json::value_t::object: {
      if (j.empty()) {
        out += "{}";
        break;
      }
      std::vector<std::string> keys;
      for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
      if (o.sort_keys) std::sort(keys.begin(), keys.end());
      out += '{';
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out += o.item_sep;
        newline(depth + 1);
        out += json_string(keys[i]) + o.key_sep;
        dump_json(j.at(keys[i]), o, depth + 1, out);
      }
      newline(depth);
      out += '}';
      break;
    }
    default: break;
  }
}

const Json& data_of(const Value& v, const char* what) {
  if (v.kind == Value::Kind::Data) return v.data;
  if (v.undefined()) fail(std::string(what) + ": value is undefined");
  fail(std::string(what) + ": expected data, got a " + (v.kind == Value::Kind::Namespace ? "namespace" : "function"));
}

std::string bounded_concat(const std::string& a, const std::string& b) {
  if (a.size() + b.size() > (size_t(64) << 20)) fail("string longer than 64 MiB");
  return a + b;
}

std::string output_string(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::Data: return py_str(v.data);
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function>";
  }
  return "";
}

bool truthy(const Value& v) {
  if (v.kind != Value::Kind::Data) return v.kind != Value::Kind::Undefined;
  const Json& j = v.data;
  switch (j.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return j.get<bool>();
    case Json::value_t::number_integer: return j.get<int64_t>() != 0;
    case Json::value_t::number_unsigned: return j.get<uint64_t>() != 0;
    case Json::value_t::number_float: return j.get<double>() != 0.0;
    case Json::value_t::string: return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !j.empty();
    default: return false;
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == Value::Kind::Undefined) return true;
  if (a.kind == Value::Kind::Namespace) return a.ns == b.ns;
  if (a.kind == Value::Kind::Callable) return a.fn == b.fn;
  if (a.data.is_boolean() != b.data.is_boolean()) {
    // Python: True == 1
    const Json& n = a.data.is_boolean() ? b.data : a.data;
    const Json& t = a.data.is_boolean() ? a.data : b.data;
    return n.is_number() && n.get<double>() == (t.get<bool>() ? 1.0 : 0.0);
  }
  if (a.data.is_number() && b.data.is_number()) return a.data.get<double>() == b.data.get<double>();
  return a.data == b.data;
}

int64_t to_int(const Value& v, const char* what) {
  const Json& j = data_of(v, what);
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_number_integer() || j.is_number_unsigned()) return j.get<int64_t>();
  if (j.is_number_float()) return static_cast<int64_t>(j.get<double>());
  fail(std::string(what) + ": expected an integer, got " + py_repr(j));
}

Json iterable_of(const Value& v, const char* what) {
  const Json& j = data_of(v, what);
  if (j.is_array()) return j;
  if (j.is_object()) {
    Json keys = Json::array();
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    return keys;
  }
  if (j.is_string()) {
    Json chars = Json::array();
    for (char32_t c : to_u32(j.get<std::string>())) chars.push_back(to_utf8(std::u32string(1, c)));
    return chars;
  }
  fail(std::string(what) + ": " + py_repr(j) + " is not iterable");
}

bool contains(const Value& container, const Value& item) {
  const Json& c = data_of(container, "'in'");
  if (c.is_string()) {
    if (!item.is_string()) fail("'in <string>' requires a string on the left");
    return c.get<std::string>().find(item.data.get<std::string>()) != std::string::npos;
  }
  if (c.is_array()) {
    for (auto& x : c)
      if (values_equal(Value::of(x), item)) return true;
    return false;
  }
  if (c.is_object()) return item.is_string() && c.contains(item.data.get<std::string>());
  fail("argument of 'in' is not a container: " + py_repr(c));
}

}  // namespace smolvlm::text::jinja
