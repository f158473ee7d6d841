#include "text/chat_template.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "core/error.h"
#include "text/unicode.h"

namespace smolvlm {
namespace text {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Values: JSON data, plus what Jinja has beyond data (undefined, namespace objects, callables).

struct Value;
using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(Args&, Kwargs&)>;

struct Value {
  enum class Kind { Undefined, Data, Namespace, Callable };
  Kind kind = Kind::Undefined;
  Json data;
  std::shared_ptr<std::map<std::string, Value>> ns;
  std::shared_ptr<Function> fn;

  static Value of(Json j) {
    Value v;
    v.kind = Kind::Data;
    v.data = std::move(j);
    return v;
  }
  static Value callable(Function f) {
    Value v;
    v.kind = Kind::Callable;
    v.fn = std::make_shared<Function>(std::move(f));
    return v;
  }
  bool undefined() const { return kind == Kind::Undefined; }
  bool is_string() const { return kind == Kind::Data && data.is_string(); }
  bool is_number() const { return kind == Kind::Data && data.is_number() && !data.is_boolean(); }
};

// Raised by raise_exception() and by errors while rendering; carries the line of the construct.
struct RenderError {
  std::string message;
};

[[noreturn]] static void fail(const std::string& message) { throw RenderError{message}; }

// Python's str.isspace.
static bool py_isspace(char32_t c) { return is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

static std::u32string to_u32(std::string_view s) {
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

static std::string to_utf8(std::u32string_view s) {
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

static std::string py_repr(const Json& j);

// str(x) as Python prints it ({{ x }}).
static std::string py_str(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return py_repr(j);
}

static std::string py_repr(const Json& j) {
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

// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
struct DumpOptions {
  std::optional<std::string> indent;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};

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

static void dump_json(const Json& j, const DumpOptions& o, int depth, std::string& out) {
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

static const Json& data_of(const Value& v, const char* what) {
  if (v.kind == Value::Kind::Data) return v.data;
  if (v.undefined()) fail(std::string(what) + ": value is undefined");
  fail(std::string(what) + ": expected data, got a " + (v.kind == Value::Kind::Namespace ? "namespace" : "function"));
}

static std::string bounded_concat(const std::string& a, const std::string& b) {
  if (a.size() + b.size() > (size_t(64) << 20)) fail("string longer than 64 MiB");
  return a + b;
}

static std::string output_string(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::Data: return py_str(v.data);
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function>";
  }
  return "";
}

static bool truthy(const Value& v) {
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

static bool values_equal(const Value& a, const Value& b) {
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

static int64_t to_int(const Value& v, const char* what) {
  const Json& j = data_of(v, what);
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_number_integer() || j.is_number_unsigned()) return j.get<int64_t>();
  if (j.is_number_float()) return static_cast<int64_t>(j.get<double>());
  fail(std::string(what) + ": expected an integer, got " + py_repr(j));
}

// ---------------------------------------------------------------------------------------------
// Template lexing: text and tags with Jinja's whitespace control.

enum class TagKind { Text, Output, Block };

struct RawTag {
  TagKind kind;
  std::string content;
  int line;
};

struct ExprToken {
  enum Type { Name, String, Int, Float, Op, End } type;
  std::string text;
  int line;
};

static std::vector<ExprToken> lex_expression(const std::string& s, int line, const std::string& where) {
  std::vector<ExprToken> out;
  size_t i = 0;
  auto err = [&](const std::string& m) -> void { throw bad_input(where + " line " + std::to_string(line) + ": " + m); };
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      ++line, ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      out.push_back({ExprToken::Name, s.substr(b, i - b), line});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t b = i;
      bool is_float = false;
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        is_float = true;
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t k = i + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          i = k;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
      }
      std::string num;
      for (size_t k = b; k < i; ++k)
        if (s[k] != '_') num += s[k];
      out.push_back({is_float ? ExprToken::Float : ExprToken::Int, num, line});
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string value;
      ++i;
      bool closed = false;
      while (i < s.size()) {
        char d = s[i++];
        if (d == c) {
          closed = true;
          break;
        }
        if (d == '\n') ++line;
        if (d != '\\' || i >= s.size()) {
          value += d;
          continue;
        }
        char e = s[i++];
        switch (e) {
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case 'r': value += '\r'; break;
          case '0': value += '\0'; break;
          case 'a': value += '\a'; break;
          case 'b': value += '\b'; break;
          case 'f': value += '\f'; break;
          case 'v': value += '\v'; break;
          case '\\': value += '\\'; break;
          case '\'': value += '\''; break;
          case '"': value += '"'; break;
          case '\n': ++line; break;
          case 'x':
          case 'u':
          case 'U': {
            size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (i + n > s.size()) err("bad escape in string literal");
            char32_t cp = 0;
            for (size_t k = 0; k < n; ++k) {
              char h = s[i + k];
              int d2 = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
              if (d2 < 0) err("bad escape in string literal");
              cp = cp * 16 + static_cast<char32_t>(d2);
            }
            i += n;
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) err("escape outside Unicode in string literal");
            utf8_append(value, cp);
            break;
          }
          default: value += '\\', value += e;
        }
      }
      if (!closed) err("unterminated string literal");
      out.push_back({ExprToken::String, value, line});
      continue;
    }
    static const char* two[] = {"==", "!=", "<=", ">=", "//", "**"};
    bool matched = false;
    for (const char* op : two) {
      if (s.compare(i, 2, op) == 0) {
        out.push_back({ExprToken::Op, op, line});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string_view("()[]{}.,:|~+-*/%<>=").find(c) != std::string_view::npos) {
      out.push_back({ExprToken::Op, std::string(1, c), line});
      ++i;
      continue;
    }
    err(std::string("unexpected character '") + c + "' in expression");
  }
  out.push_back({ExprToken::End, "", line});
  return out;
}

static std::vector<RawTag> lex_template(std::string src, const std::string& where) {
  // Jinja normalizes newlines to \n and drops one trailing newline (keep_trailing_newline=False).
  std::string norm;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      norm += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      norm += src[i];
    }
  }
  if (!norm.empty() && norm.back() == '\n') norm.pop_back();
  src = std::move(norm);

  std::vector<RawTag> out;
  size_t pos = 0;
  int line = 1;
  bool line_starting = true;
  auto count_lines = [](std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); };
  while (pos <= src.size()) {
    size_t t = pos;
    while (true) {
      t = src.find('{', t);
      if (t == std::string::npos || t + 1 >= src.size()) {
        t = std::string::npos;
        break;
      }
      char n = src[t + 1];
      if (n == '{' || n == '%' || n == '#') break;
      ++t;
    }
    std::string text = src.substr(pos, t == std::string::npos ? std::string::npos : t - pos);
    if (t == std::string::npos) {
      if (!text.empty()) out.push_back({TagKind::Text, text, line});
      break;
    }
    char open = src[t + 1];
    char modifier = t + 2 < src.size() ? src[t + 2] : '\0';
    int text_lines = count_lines(text);
    if (modifier == '-') {
      size_t e = text.size();
      while (e > 0 && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
      text.resize(e);
    } else if (open != '{' && modifier != '+') {  // lstrip_blocks
      size_t l = text.rfind('\n');
      l = l == std::string::npos ? 0 : l + 1;
      if (l > 0 || line_starting) {
        bool blank = std::all_of(text.begin() + static_cast<ptrdiff_t>(l), text.end(),
                                 [](char ch) { return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v'; });
        if (blank) text.resize(l);
      }
    }
    if (!text.empty()) out.push_back({TagKind::Text, text, line});
    line += text_lines;
    int tag_line = line;
    size_t body = t + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
    size_t end;
    if (open == '#') {
      end = src.find("#}", body);
      if (end == std::string::npos) throw bad_input(where + " line " + std::to_string(tag_line) + ": unclosed comment {# ... #}");
    } else {
      const char close = open == '{' ? '}' : '%';
      end = std::string::npos;
      char quote = 0;
      for (size_t k = body; k + 1 < src.size(); ++k) {
        char ch = src[k];
        if (quote) {
          if (ch == '\\') ++k;
          else if (ch == quote) quote = 0;
          continue;
        }
        if (ch == '\'' || ch == '"') quote = ch;
        else if (ch == close && src[k + 1] == '}') {
          end = k;
          break;
        }
      }
      if (end == std::string::npos)
        throw bad_input(where + " line " + std::to_string(tag_line) + ": unclosed tag " + (open == '{' ? "{{ ... }}" : "{% ... %}"));
    }
    bool strip_after = end > body && src[end - 1] == '-';
    std::string content = src.substr(body, end - body - (strip_after ? 1 : 0));
    line += count_lines(src.substr(t, end + 2 - t));
    pos = end + 2;
    line_starting = false;
    if (strip_after) {
      size_t k = pos;
      while (k < src.size() && std::isspace(static_cast<unsigned char>(src[k]))) ++k;
      line += count_lines(std::string_view(src).substr(pos, k - pos));
      line_starting = k > pos && src[k - 1] == '\n';
      pos = k;
    } else if (open != '{' && pos < src.size() && src[pos] == '\n') {  // trim_blocks
      ++pos, ++line;
      line_starting = true;
    }
    if (open == '{') out.push_back({TagKind::Output, content, tag_line});
    else if (open == '%') out.push_back({TagKind::Block, content, tag_line});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

// Bounds that keep hostile templates from exhausting the stack, the CPU or memory.
constexpr int kMaxNesting = 128;               // nested blocks / expression levels
constexpr int64_t kMaxSteps = 20'000'000;      // evaluated nodes and expressions per render
constexpr size_t kMaxOutputBytes = size_t(64) << 20;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum Kind { Literal, Name, List, Dict, Attr, Index, Slice, Call, Filter, Test, Unary, Binary, Cond } kind;
  int line = 0;
  Json literal;
  std::string name;  // Name, Attr attribute, Filter/Test name, Unary/Binary operator
  std::vector<ExprPtr> args;  // operands / elements / call arguments
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // `is not`
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Generation } kind;
  int line = 0;
  std::string text;                               // Text
  ExprPtr expr;                                   // Output, Set value, For iterable
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: condition + body
  Body body, else_body;
  std::vector<std::string> targets;  // For loop variables; Set target (name or name.attr); Macro name
  ExprPtr filter;                    // For ... if <filter>
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro parameters with defaults
};

}  // namespace text
}  // namespace smolvlm

namespace smolvlm {
namespace text {

class ExprParser {
 public:
  ExprParser(std::vector<ExprToken> tokens, const std::string& where) : t_(std::move(tokens)), where_(where) {}

  ExprPtr parse_expression() { return parse_conditional(); }
  ExprPtr parse_expression_no_cond() { return parse_or(); }
  bool at_end() const { return t_[i_].type == ExprToken::End; }
  const ExprToken& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).type == ExprToken::Name && peek(k).text == n; }
  bool is_op(const char* o, size_t k = 0) const { return peek(k).type == ExprToken::Op && peek(k).text == o; }
  ExprToken next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  [[noreturn]] void error(const std::string& m) const {
    throw bad_input(where_ + " line " + std::to_string(peek().line) + ": " + m);
  }
  void expect_op(const char* o) {
    if (!is_op(o)) error(std::string("expected '") + o + "', got '" + peek().text + "'");
    next();
  }
  std::string expect_name() {
    if (peek().type != ExprToken::Name) error("expected a name, got '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) error("unexpected '" + peek().text + "'");
  }

 private:
  ExprPtr make(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = peek().line;
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = make(Expr::Binary);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_conditional() {
    ExprPtr value = parse_or();
    while (is_name("if")) {
      next();
      auto e = make(Expr::Cond);
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (is_name("else")) {
        next();
        other = parse_conditional();
      }
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(value));
      e->args.push_back(std::move(other));
      value = std::move(e);
    }
    return value;
  }
  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      next();
      left = binary("or", std::move(left), parse_and());
    }
    return left;
  }
  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      next();
      left = binary("and", std::move(left), parse_not());
    }
    return left;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(Expr::Unary);
      next();
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    while (true) {
      const ExprToken& t = peek();
      if (t.type == ExprToken::Op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
        std::string op = next().text;
        left = binary(op, std::move(left), parse_math1());
      } else if (is_name("in")) {
        next();
        left = binary("in", std::move(left), parse_math1());
      } else if (is_name("not") && is_name("in", 1)) {
        next(), next();
        left = binary("not in", std::move(left), parse_math1());
      } else {
        return left;
      }
    }
  }
  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      left = binary(op, std::move(left), parse_concat());
    }
    return left;
  }
  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      next();
      left = binary("~", std::move(left), parse_math2());
    }
    return left;
  }
  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      left = binary(op, std::move(left), parse_pow());
    }
    return left;
  }
  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      next();
      left = binary("**", std::move(left), parse_unary(true));
    }
    return left;
  }
  ExprPtr parse_unary(bool with_filter) {
    if (++depth_ > kMaxNesting) error("expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(Expr::Unary);
      e->name = next().text;
      e->args.push_back(parse_unary(false));
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }
  ExprPtr parse_primary() {
    const ExprToken& t = peek();
    if (t.type == ExprToken::String) {
      auto e = make(Expr::Literal);
      std::string s = next().text;
      while (peek().type == ExprToken::String) s += next().text;  // adjacent literals concatenate
      e->literal = s;
      return e;
    }
    if (t.type == ExprToken::Int || t.type == ExprToken::Float) {
      auto e = make(Expr::Literal);
      std::string s = next().text;
      try {
        if (t.type == ExprToken::Int) e->literal = static_cast<int64_t>(std::stoll(s));
        else e->literal = std::stod(s);
      } catch (const std::exception&) {
        error("number literal out of range: " + s);
      }
      return e;
    }
    if (t.type == ExprToken::Name) {
      std::string n = t.text;
      auto e = make(Expr::Literal);
      if (n == "true" || n == "True") e->literal = true;
      else if (n == "false" || n == "False") e->literal = false;
      else if (n == "none" || n == "None") e->literal = nullptr;
      else {
        e->kind = Expr::Name;
        e->name = n;
      }
      next();
      return e;
    }
    if (is_op("(")) {
      next();
      if (is_op(")")) {
        next();
        auto e = make(Expr::List);
        return e;
      }
      ExprPtr first = parse_expression();
      if (is_op(",")) {  // tuple
        auto e = make(Expr::List);
        e->args.push_back(std::move(first));
        while (is_op(",")) {
          next();
          if (is_op(")")) break;
          e->args.push_back(parse_expression());
        }
        expect_op(")");
        return e;
      }
      expect_op(")");
      return first;
    }
    if (is_op("[")) {
      next();
      auto e = make(Expr::List);
      while (!is_op("]")) {
        e->args.push_back(parse_expression());
        if (!is_op(",")) break;
        next();
      }
      expect_op("]");
      return e;
    }
    if (is_op("{")) {
      next();
      auto e = make(Expr::Dict);
      while (!is_op("}")) {
        e->args.push_back(parse_expression());
        expect_op(":");
        e->args.push_back(parse_expression());
        if (!is_op(",")) break;
        next();
      }
      expect_op("}");
      return e;
    }
    error(t.type == ExprToken::End ? "unexpected end of expression" : "unexpected '" + t.text + "'");
  }
  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().type == ExprToken::Name && is_op("=", 1)) {
        std::string k = next().text;
        next();
        e.kwargs.emplace_back(k, parse_expression());
      } else {
        if (!e.kwargs.empty()) error("positional argument after keyword argument");
        e.args.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }
  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        next();
        auto e = make(Expr::Attr);
        if (peek().type == ExprToken::Int) e->name = next().text;
        else e->name = expect_name();
        e->args.push_back(std::move(node));
        node = std::move(e);
      } else if (is_op("[")) {
        next();
        ExprPtr parts[3];
        bool is_slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = parse_expression();
          if (k < 2 && is_op(":")) {
            next();
            is_slice = true;
          } else {
            break;
          }
        }
        expect_op("]");
        auto e = make(is_slice ? Expr::Slice : Expr::Index);
        e->args.push_back(std::move(node));
        if (!is_slice && !parts[0]) error("empty subscript");
        for (auto& p : parts) e->args.push_back(std::move(p));
        node = std::move(e);
      } else if (is_op("(")) {
        auto e = make(Expr::Call);
        e->args.push_back(std::move(node));
        parse_call_args(*e);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }
  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        next();
        auto e = make(Expr::Filter);
        e->name = expect_name();
        while (is_op(".")) {
          next();
          e->name += "." + expect_name();
        }
        e->args.push_back(std::move(node));
        if (is_op("(")) parse_call_args(*e);
        node = std::move(e);
      } else if (is_name("is")) {
        next();
        auto e = make(Expr::Test);
        if (is_name("not")) {
          next();
          e->negated = true;
        }
        if (peek().type == ExprToken::Name) e->name = next().text;
        else if (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">=")) e->name = next().text;
        else error("expected a test name after 'is'");
        e->args.push_back(std::move(node));
        if (is_op("(")) {
          parse_call_args(*e);
        } else if (peek().type == ExprToken::String || peek().type == ExprToken::Int || peek().type == ExprToken::Float ||
                   (peek().type == ExprToken::Name && !is_name("and") && !is_name("or") && !is_name("else") &&
                    !is_name("if") && !is_name("is") && !is_name("in") && !is_name("not"))) {
          e->args.push_back(parse_primary());  // `is divisibleby 3`, `is sameas false`
        }
        node = std::move(e);
      } else if (is_op("(")) {
        auto e = make(Expr::Call);
        e->args.push_back(std::move(node));
        parse_call_args(*e);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  std::vector<ExprToken> t_;
  size_t i_ = 0;
  std::string where_;
  int depth_ = 0;
};

// Statement parser over the raw tags.
class TemplateParser {
 public:
  TemplateParser(std::vector<RawTag> tags, const std::string& where) : tags_(std::move(tags)), where_(where) {}

  Body parse_all() {
    std::string end;
    Body b = parse_body({}, &end);
    return b;
  }

 private:
  [[noreturn]] void error_at(int line, const std::string& m) const {
    throw bad_input(where_ + " line " + std::to_string(line) + ": " + m);
  }
  ExprParser expr_parser(const std::string& s, int line) const { return ExprParser(lex_expression(s, line, where_), where_); }

  static std::string first_word(const std::string& s) {
    size_t b = 0;
    while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    size_t e = b;
    while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    return s.substr(b, e - b);
  }

  // Parses nodes until a block tag whose first word is in `stops`; returns it in *stop (with its content
  // in *stop_content). At the top level `stops` is empty and the end of input ends the body.
  Body parse_body(const std::vector<std::string>& stops, std::string* stop, std::string* stop_content = nullptr, int open_line = 0) {
    Body body;
    while (pos_ < tags_.size()) {
      const RawTag& tag = tags_[pos_];
      if (tag.kind == TagKind::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Text;
        n->text = tag.content;
        body.push_back(std::move(n));
        ++pos_;
        continue;
      }
      if (tag.kind == TagKind::Output) {
        auto p = expr_parser(tag.content, tag.line);
        auto n = std::make_unique<Node>();
        n->kind = Node::Output;
        n->line = tag.line;
        n->expr = p.parse_expression();
        p.expect_end();
        body.push_back(std::move(n));
        ++pos_;
        continue;
      }
      std::string word = first_word(tag.content);
      if (std::find(stops.begin(), stops.end(), word) != stops.end()) {
        *stop = word;
        if (stop_content) *stop_content = tag.content;
        ++pos_;
        return body;
      }
      body.push_back(parse_statement(tag, word));
    }
    if (!stops.empty()) error_at(open_line, "missing {% " + stops.back() + " %} for the block opened here");
    return body;
  }

  std::unique_ptr<Node> parse_statement(const RawTag& tag, const std::string& word) {
    if (++depth_ > kMaxNesting) error_at(tag.line, "blocks nested deeper than " + std::to_string(kMaxNesting) + " levels");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    auto n = std::make_unique<Node>();
    n->line = tag.line;
    ++pos_;
    auto p = expr_parser(tag.content, tag.line);
    p.next();  // the keyword
    if (word == "if") {
      n->kind = Node::If;
      ExprPtr cond = p.parse_expression();
      p.expect_end();
      while (true) {
        std::string stop, content;
        Body b = parse_body({"elif", "else", "endif"}, &stop, &content, tag.line);
        n->branches.emplace_back(std::move(cond), std::move(b));
        if (stop == "elif") {
          auto q = expr_parser(content, tags_[pos_ - 1].line);
          q.next();
          cond = q.parse_expression();
          q.expect_end();
        } else if (stop == "else") {
          n->else_body = parse_body({"endif"}, &stop, nullptr, tag.line);
          break;
        } else {
          break;
        }
      }
    } else if (word == "for") {
      n->kind = Node::For;
      n->targets.push_back(p.expect_name());
      while (p.is_op(",")) {
        p.next();
        n->targets.push_back(p.expect_name());
      }
      if (!p.is_name("in")) p.error("expected 'in' in for loop");
      p.next();
      n->expr = p.parse_expression_no_cond();
      if (p.is_name("if")) {
        p.next();
        n->filter = p.parse_expression_no_cond();
      }
      if (p.is_name("recursive")) p.error("recursive loops are not supported");
      p.expect_end();
      std::string stop;
      n->body = parse_body({"else", "endfor"}, &stop, nullptr, tag.line);
      if (stop == "else") n->else_body = parse_body({"endfor"}, &stop, nullptr, tag.line);
    } else if (word == "set") {
      std::string target = p.expect_name();
      if (p.is_op(".")) {
        p.next();
        target += "." + p.expect_name();
      }
      if (p.is_op(",")) p.error("tuple assignment in set is not supported");
      n->targets.push_back(target);
      if (p.at_end()) {
        n->kind = Node::SetBlock;
        std::string stop;
        n->body = parse_body({"endset"}, &stop, nullptr, tag.line);
      } else {
        n->kind = Node::Set;
        p.expect_op("=");
        n->expr = p.parse_expression();
        p.expect_end();
      }
    } else if (word == "macro") {
      n->kind = Node::Macro;
      n->targets.push_back(p.expect_name());
      p.expect_op("(");
      while (!p.is_op(")")) {
        std::string param = p.expect_name();
        ExprPtr def;
        if (p.is_op("=")) {
          p.next();
          def = p.parse_expression();
        }
        n->params.emplace_back(param, std::move(def));
        if (!p.is_op(",")) break;
        p.next();
      }
      p.expect_op(")");
      p.expect_end();
      std::string stop;
      n->body = parse_body({"endmacro"}, &stop, nullptr, tag.line);
    } else if (word == "break" || word == "continue") {
      n->kind = word == "break" ? Node::Break : Node::Continue;
      p.expect_end();
    } else if (word == "generation") {
      n->kind = Node::Generation;
      p.expect_end();
      std::string stop;
      n->body = parse_body({"endgeneration"}, &stop, nullptr, tag.line);
    } else if (word.empty()) {
      error_at(tag.line, "empty block tag {% %}");
    } else {
      throw unsupported(where_ + " line " + std::to_string(tag.line) + ": unsupported template tag '" + word + "'");
    }
    return n;
  }

  std::vector<RawTag> tags_;
  size_t pos_ = 0;
  std::string where_;
  int depth_ = 0;
};

}  // namespace text
}  // namespace smolvlm

namespace smolvlm {
namespace text {

struct TemplateProgram {
  std::string name;
  Body body;
};

namespace {

struct LoopControl {
  bool is_break;
};

// Python-style string helpers used by filters and methods.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = to_u32(s), set = chars ? to_u32(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return to_utf8(std::u32string_view(u).substr(b, e - b));
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper
  std::u32string u = to_u32(s);
  for (auto& c : u)
    c = static_cast<char32_t>(mode == 0 ? utf8proc_tolower(static_cast<utf8proc_int32_t>(c)) : utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
  return to_utf8(u);
}

std::string py_capitalize(const std::string& s) {
  std::u32string u = to_u32(s);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = static_cast<char32_t>(i == 0 ? utf8proc_totitle(static_cast<utf8proc_int32_t>(u[i])) : utf8proc_tolower(static_cast<utf8proc_int32_t>(u[i])));
  return to_utf8(u);
}

std::string py_title(const std::string& s) {
  std::u32string u = to_u32(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool cased = is_alphabetic(c);
    c = static_cast<char32_t>(prev_cased ? utf8proc_tolower(static_cast<utf8proc_int32_t>(c)) : utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
    prev_cased = cased;
  }
  return to_utf8(u);
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between characters
    std::u32string u = to_u32(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) out += to, ++done;
      if (i < u.size()) utf8_append(out, u[i]);
    }
    return out;
  }
  size_t prev = 0;
  int64_t done = 0;
  for (size_t p = s.find(from); p != std::string::npos && (count < 0 || done < count); p = s.find(from, prev)) {
    out.append(s, prev, p - prev);
    out += to;
    prev = p + from.size();
    ++done;
  }
  out.append(s, prev);
  return out;
}

Json py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit) {
  Json out = Json::array();
  if (!sep) {
    std::u32string u = to_u32(s);
    size_t i = 0;
    int64_t splits = 0;
    while (i < u.size()) {
      while (i < u.size() && py_isspace(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && splits >= maxsplit) {
        size_t e = u.size();
        while (e > i && py_isspace(u[e - 1])) --e;
        out.push_back(to_utf8(u.substr(i, e - i)));
        break;
      }
      size_t b = i;
      while (i < u.size() && !py_isspace(u[i])) ++i;
      out.push_back(to_utf8(u.substr(b, i - b)));
      ++splits;
    }
    return out;
  }
  if (sep->empty()) fail("split(): empty separator");
  size_t prev = 0;
  int64_t splits = 0;
  for (size_t p = s.find(*sep); p != std::string::npos && (maxsplit < 0 || splits < maxsplit); p = s.find(*sep, prev)) {
    out.push_back(s.substr(prev, p - prev));
    prev = p + sep->size();
    ++splits;
  }
  out.push_back(s.substr(prev));
  return out;
}

// Python slice indices.
std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
  int64_t st = step.value_or(1);
  if (st == 0) fail("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t b = clamp(start, st > 0 ? 0 : n - 1), e = clamp(stop, st > 0 ? n : -1);
  std::vector<int64_t> idx;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) idx.push_back(i);
  return idx;
}

const Value* find_kwarg(const Kwargs& kw, const char* name) {
  for (auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

// Positional argument `i` or keyword `name`.
const Value* arg(const Args& a, const Kwargs& kw, size_t i, const char* name) {
  if (i < a.size()) return &a[i];
  return find_kwarg(kw, name);
}

std::string str_arg(const Args& a, const Kwargs& kw, size_t i, const char* name, const char* what) {
  const Value* v = arg(a, kw, i, name);
  if (!v || !v->is_string()) fail(std::string(what) + ": argument '" + name + "' must be a string");
  return v->data.get<std::string>();
}

std::optional<std::string> opt_str_arg(const Args& a, const Kwargs& kw, size_t i, const char* name, const char* what) {
  const Value* v = arg(a, kw, i, name);
  if (!v || v->undefined() || (v->kind == Value::Kind::Data && v->data.is_null())) return std::nullopt;
  if (!v->is_string()) fail(std::string(what) + ": argument '" + name + "' must be a string");
  return v->data.get<std::string>();
}

Json items_of(const Json& j) {
  Json out = Json::array();
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(Json::array({it.key(), it.value()}));
  return out;
}

// Elements a `for` loop or a filter iterates over.
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

std::string tojson(const Json& j, const Args& a, const Kwargs& kw) {
  DumpOptions o;
  if (const Value* indent = arg(a, kw, 0, "indent"); indent && !indent->undefined() && !indent->data.is_null()) {
    if (indent->is_string()) o.indent = indent->data.get<std::string>();
    else o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(to_int(*indent, "tojson indent"), 0, 64)), ' ');
    o.item_sep = ",";
  }
  if (const Value* seps = find_kwarg(kw, "separators"); seps && seps->kind == Value::Kind::Data && seps->data.is_array() &&
                                                        seps->data.size() == 2 && seps->data[0].is_string() && seps->data[1].is_string()) {
    o.item_sep = seps->data[0].get<std::string>();
    o.key_sep = seps->data[1].get<std::string>();
  }
  if (const Value* sk = find_kwarg(kw, "sort_keys")) o.sort_keys = truthy(*sk);
  std::string out;
  dump_json(j, o, 0, out);
  return out;
}

class Renderer {
 public:
  Renderer(const TemplateProgram& program, const Json& variables) : program_(program) {
    frames_.emplace_back();
    auto& globals = frames_.back();
    for (auto it = variables.begin(); it != variables.end(); ++it) globals[it.key()] = Value::of(it.value());
    globals["raise_exception"] = Value::callable([](Args& a, Kwargs&) -> Value {
      fail(a.empty() ? std::string() : output_string(a[0]));
    });
    globals["strftime_now"] = Value::callable([](Args& a, Kwargs& kw) -> Value {
      std::string fmt = str_arg(a, kw, 0, "format", "strftime_now");
      std::time_t now = std::time(nullptr);
      std::tm tm{};
      localtime_r(&now, &tm);
      char buf[256];
      size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
      return Value::of(std::string(buf, n));
    });
    globals["namespace"] = Value::callable([](Args& a, Kwargs& kw) -> Value {
      Value v;
      v.kind = Value::Kind::Namespace;
      v.ns = std::make_shared<std::map<std::string, Value>>();
      for (auto& x : a) {
        if (x.kind != Value::Kind::Data || !x.data.is_object()) fail("namespace(): positional argument must be a mapping");
        for (auto it = x.data.begin(); it != x.data.end(); ++it) (*v.ns)[it.key()] = Value::of(it.value());
      }
      for (auto& [k, x] : kw) (*v.ns)[k] = x;
      return v;
    });
    globals["range"] = Value::callable([](Args& a, Kwargs&) -> Value {
      if (a.empty() || a.size() > 3) fail("range(): expected 1 to 3 arguments");
      int64_t start = 0, stop, step = 1;
      if (a.size() == 1) stop = to_int(a[0], "range");
      else start = to_int(a[0], "range"), stop = to_int(a[1], "range");
      if (a.size() == 3) step = to_int(a[2], "range");
      if (step == 0) fail("range(): step must not be zero");
      Json out = Json::array();
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= 100000) fail("range(): more than 100000 items");
        out.push_back(i);
      }
      return Value::of(out);
    });
    globals["dict"] = Value::callable([](Args&, Kwargs& kw) -> Value {
      Json out = Json::object();
      for (auto& [k, x] : kw) out[k] = data_of(x, "dict()");
      return Value::of(out);
    });
  }

  std::string run() {
    std::string out;
    render_body(program_.body, out);
    return out;
  }

 private:
  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return f->second;
    return Value{};
  }

  void render_body(const Body& body, std::string& out) {
    for (auto& n : body) render_node(*n, out);
  }

  void render_node(const Node& n, std::string& out) {
    line_ = n.line;
    if (++steps_ > kMaxSteps) fail("rendering takes more than " + std::to_string(kMaxSteps) + " steps");
    if (out.size() > kMaxOutputBytes) fail("output larger than " + std::to_string(kMaxOutputBytes >> 20) + " MiB");
    switch (n.kind) {
      case Node::Text: out += n.text; break;
      case Node::Output: out += output_string(eval(*n.expr)); break;
      case Node::If:
        for (auto& [cond, body] : n.branches) {
          if (truthy(eval(*cond))) {
            render_body(body, out);
            return;
          }
        }
        render_body(n.else_body, out);
        break;
      case Node::For: render_for(n, out); break;
      case Node::Set: assign(n.targets[0], eval(*n.expr)); break;
      case Node::SetBlock: {
        std::string captured;
        render_body(n.body, captured);
        assign(n.targets[0], Value::of(captured));
        break;
      }
      case Node::Macro: define_macro(n); break;
      case Node::Break: throw LoopControl{true};
      case Node::Continue: throw LoopControl{false};
      case Node::Generation: render_body(n.body, out); break;
    }
  }

  void assign(const std::string& target, Value v) {
    size_t dot = target.find('.');
    if (dot == std::string::npos) {
      frames_.back()[target] = std::move(v);
      return;
    }
    Value ns = lookup(target.substr(0, dot));
    if (ns.kind != Value::Kind::Namespace) fail("cannot assign attribute '" + target + "': not a namespace");
    (*ns.ns)[target.substr(dot + 1)] = std::move(v);
  }

  void render_for(const Node& n, std::string& out) {
    Json items = iterable_of(eval(*n.expr), "for loop");
    if (n.filter) {
      Json kept = Json::array();
      for (auto& item : items) {
        frames_.emplace_back();
        bind_targets(n, item);
        bool keep = truthy(eval(*n.filter));
        frames_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      render_body(n.else_body, out);
      return;
    }
    int64_t len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      frames_.emplace_back();
      bind_targets(n, items[static_cast<size_t>(i)]);
      Json loop = {{"index", i + 1},      {"index0", i},       {"revindex", len - i}, {"revindex0", len - i - 1},
                   {"first", i == 0},     {"last", i == len - 1}, {"length", len},   {"depth", 1}, {"depth0", 0}};
      if (i > 0) loop["previtem"] = items[static_cast<size_t>(i - 1)];
      if (i + 1 < len) loop["nextitem"] = items[static_cast<size_t>(i + 1)];
      frames_.back()["loop"] = Value::of(std::move(loop));
      bool stop = false;
      try {
        render_body(n.body, out);
      } catch (const LoopControl& c) {
        stop = c.is_break;
      }
      frames_.pop_back();
      if (stop) break;
    }
  }

  void bind_targets(const Node& n, const Json& item) {
    if (n.targets.size() == 1) {
      frames_.back()[n.targets[0]] = Value::of(item);
      return;
    }
    if (!item.is_array() || item.size() != n.targets.size())
      fail("for loop: cannot unpack " + py_repr(item) + " into " + std::to_string(n.targets.size()) + " names");
    for (size_t k = 0; k < n.targets.size(); ++k) frames_.back()[n.targets[k]] = Value::of(item[k]);
  }

  void define_macro(const Node& n) {
    const Node* node = &n;
    frames_.back()[n.targets[0]] = Value::callable([this, node](Args& a, Kwargs& kw) -> Value {
      if (a.size() > node->params.size()) fail("macro " + node->targets[0] + ": too many arguments");
      if (++depth_ > 64) fail("macro " + node->targets[0] + ": recursion deeper than 64");
      frames_.emplace_back();
      for (size_t k = 0; k < node->params.size(); ++k) {
        const auto& [pname, pdefault] = node->params[k];
        Value v;
        if (k < a.size()) v = a[k];
        else if (const Value* x = find_kwarg(kw, pname.c_str())) v = *x;
        else if (pdefault) v = eval(*pdefault);
        frames_.back()[pname] = v;
      }
      std::string out;
      try {
        render_body(node->body, out);
      } catch (...) {
        frames_.pop_back();
        --depth_;
        throw;
      }
      frames_.pop_back();
      --depth_;
      return Value::of(out);
    });
  }

  // ---- expressions

  Value eval(const Expr& e) {
    line_ = e.line;
    if (++steps_ > kMaxSteps) fail("rendering takes more than " + std::to_string(kMaxSteps) + " steps");
    switch (e.kind) {
      case Expr::Literal: return Value::of(e.literal);
      case Expr::Name: return lookup(e.name);
      case Expr::List: {
        Json out = Json::array();
        for (auto& x : e.args) out.push_back(data_of(eval(*x), "list literal"));
        return Value::of(out);
      }
      case Expr::Dict: {
        Json out = Json::object();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k]);
          if (!key.is_string()) fail("dict literal: keys must be strings");
          out[key.data.get<std::string>()] = data_of(eval(*e.args[k + 1]), "dict literal");
        }
        return Value::of(out);
      }
      case Expr::Attr: return get_attr(eval(*e.args[0]), e.name);
      case Expr::Index: return get_item(eval(*e.args[0]), eval(*e.args[1]));
      case Expr::Slice: return slice(e);
      case Expr::Call: return call(e);
      case Expr::Filter: return filter(e);
      case Expr::Test: {
        bool r = test(e);
        return Value::of(e.negated ? !r : r);
      }
      case Expr::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::of(!truthy(v));
        const Json& j = data_of(v, "unary operator");
        if (!j.is_number()) fail("unary " + e.name + " needs a number, got " + py_repr(j));
        if (e.name == "+") return v;
        if (j.is_number_float()) return Value::of(-j.get<double>());
        return Value::of(-j.get<int64_t>());
      }
      case Expr::Binary: return binary(e);
      case Expr::Cond: {
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value{};
      }
    }
    return Value{};
  }

  Value get_attr(const Value& obj, const std::string& name) {
    if (obj.undefined()) fail("'" + name + "': attribute of an undefined value");
    if (obj.kind == Value::Kind::Namespace) {
      auto it = obj.ns->find(name);
      return it == obj.ns->end() ? Value{} : it->second;
    }
    if (obj.kind != Value::Kind::Data) return Value{};
    const Json& j = obj.data;
    if (j.is_string() || j.is_object() || j.is_array()) {
      if (Value m = method(obj, name); !m.undefined()) return m;
    }
    if (j.is_object()) {
      auto it = j.find(name);
      return it == j.end() ? Value{} : Value::of(*it);
    }
    if (j.is_array() && !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) return get_item(obj, Value::of(std::stoll(name)));
    return Value{};
  }

  Value get_item(const Value& obj, const Value& key) {
    if (obj.undefined()) fail("subscript of an undefined value");
    if (obj.kind == Value::Kind::Namespace) return key.is_string() ? get_attr(obj, key.data.get<std::string>()) : Value{};
    if (obj.kind != Value::Kind::Data) return Value{};
    const Json& j = obj.data;
    if (j.is_object()) {
      if (!key.is_string()) return Value{};
      auto it = j.find(key.data.get<std::string>());
      if (it != j.end()) return Value::of(*it);
      return method(obj, key.data.get<std::string>());
    }
    if (j.is_array() || j.is_string()) {
      if (key.is_string()) return method(obj, key.data.get<std::string>());
      if (key.kind != Value::Kind::Data || !(key.data.is_number_integer() || key.data.is_number_unsigned())) return Value{};
      int64_t i = key.data.get<int64_t>();
      if (j.is_array()) {
        int64_t n = static_cast<int64_t>(j.size());
        if (i < 0) i += n;
        return i >= 0 && i < n ? Value::of(j[static_cast<size_t>(i)]) : Value{};
      }
      std::u32string u = to_u32(j.get<std::string>());
      int64_t n = static_cast<int64_t>(u.size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? Value::of(to_utf8(u.substr(static_cast<size_t>(i), 1))) : Value{};
    }
    return Value{};
  }

  Value slice(const Expr& e) {
    Value obj = eval(*e.args[0]);
    auto bound = [&](const ExprPtr& x) -> std::optional<int64_t> {
      if (!x) return std::nullopt;
      Value v = eval(*x);
      if (v.undefined() || (v.kind == Value::Kind::Data && v.data.is_null())) return std::nullopt;
      return to_int(v, "slice");
    };
    auto b = bound(e.args[1]), s = bound(e.args[2]), st = bound(e.args[3]);
    const Json& j = data_of(obj, "slice");
    if (j.is_array()) {
      Json out = Json::array();
      for (int64_t i : slice_indices(static_cast<int64_t>(j.size()), b, s, st)) out.push_back(j[static_cast<size_t>(i)]);
      return Value::of(out);
    }
    if (j.is_string()) {
      std::u32string u = to_u32(j.get<std::string>()), r;
      for (int64_t i : slice_indices(static_cast<int64_t>(u.size()), b, s, st)) r.push_back(u[static_cast<size_t>(i)]);
      return Value::of(to_utf8(r));
    }
    fail("cannot slice " + py_repr(j));
  }

  // Bound methods of strings and mappings.
  Value method(const Value& self, const std::string& name) {
    const Json j = self.data;
    if (j.is_string()) {
      std::string s = j.get<std::string>();
      if (name == "startswith" || name == "endswith") {
        bool starts = name == "startswith";
        return Value::callable([s, starts](Args& a, Kwargs&) -> Value {
          if (a.empty()) fail("startswith/endswith: missing argument");
          std::vector<std::string> options;
          const Json& p = data_of(a[0], "startswith/endswith");
          if (p.is_string()) options.push_back(p.get<std::string>());
          else if (p.is_array())
            for (auto& x : p) options.push_back(x.is_string() ? x.get<std::string>() : "");
          else fail("startswith/endswith: argument must be a string or a tuple of strings");
          for (auto& o : options)
            if (o.size() <= s.size() && (starts ? s.compare(0, o.size(), o) == 0 : s.compare(s.size() - o.size(), o.size(), o) == 0))
              return Value::of(true);
          return Value::of(false);
        });
      }
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        bool l = name != "rstrip", r = name != "lstrip";
        return Value::callable([s, l, r](Args& a, Kwargs& kw) -> Value {
          return Value::of(py_strip(s, opt_str_arg(a, kw, 0, "chars", "strip"), l, r));
        });
      }
      if (name == "split")
        return Value::callable([s](Args& a, Kwargs& kw) -> Value {
          const Value* m = arg(a, kw, 1, "maxsplit");
          return Value::of(py_split(s, opt_str_arg(a, kw, 0, "sep", "split"), m ? to_int(*m, "split") : -1));
        });
      if (name == "lower" || name == "upper")
        return Value::callable([s, name](Args&, Kwargs&) -> Value { return Value::of(map_case(s, name == "upper")); });
      if (name == "capitalize") return Value::callable([s](Args&, Kwargs&) -> Value { return Value::of(py_capitalize(s)); });
      if (name == "title") return Value::callable([s](Args&, Kwargs&) -> Value { return Value::of(py_title(s)); });
      if (name == "replace")
        return Value::callable([s](Args& a, Kwargs& kw) -> Value {
          const Value* c = arg(a, kw, 2, "count");
          return Value::of(py_replace(s, str_arg(a, kw, 0, "old", "replace"), str_arg(a, kw, 1, "new", "replace"), c ? to_int(*c, "replace") : -1));
        });
      if (name == "find" || name == "count")
        return Value::callable([s, name](Args& a, Kwargs& kw) -> Value {
          std::string sub = str_arg(a, kw, 0, "sub", name.c_str());
          if (name == "find") {
            size_t p = s.find(sub);
            return Value::of(p == std::string::npos ? int64_t(-1) : static_cast<int64_t>(to_u32(s.substr(0, p)).size()));
          }
          if (sub.empty()) return Value::of(static_cast<int64_t>(to_u32(s).size() + 1));
          int64_t n = 0;
          for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
          return Value::of(n);
        });
      if (name == "join")
        return Value::callable([s](Args& a, Kwargs&) -> Value {
          if (a.empty()) fail("join: missing argument");
          std::string out;
          Json items = iterable_of(a[0], "join");
          for (size_t k = 0; k < items.size(); ++k) out += (k ? s : "") + py_str(items[k]);
          return Value::of(out);
        });
      return Value{};
    }
    if (j.is_object()) {
      if (name == "items") return Value::callable([j](Args&, Kwargs&) -> Value { return Value::of(items_of(j)); });
      if (name == "keys" || name == "values")
        return Value::callable([j, name](Args&, Kwargs&) -> Value {
          Json out = Json::array();
          for (auto it = j.begin(); it != j.end(); ++it) out.push_back(name == "keys" ? Json(it.key()) : it.value());
          return Value::of(out);
        });
      if (name == "get")
        return Value::callable([j](Args& a, Kwargs& kw) -> Value {
          std::string k = str_arg(a, kw, 0, "key", "get");
          auto it = j.find(k);
          if (it != j.end()) return Value::of(*it);
          const Value* d = arg(a, kw, 1, "default");
          return d ? *d : Value::of(nullptr);
        });
    }
    return Value{};
  }

  void eval_args(const Expr& e, size_t first, Args& a, Kwargs& kw) {
    for (size_t k = first; k < e.args.size(); ++k) a.push_back(eval(*e.args[k]));
    for (auto& [name, x] : e.kwargs) kw.emplace_back(name, eval(*x));
  }

  Value call(const Expr& e) {
    Value f = eval(*e.args[0]);
    if (f.kind != Value::Kind::Callable) {
      std::string what = e.args[0]->kind == Expr::Name ? "'" + e.args[0]->name + "'" : e.args[0]->kind == Expr::Attr ? "'" + e.args[0]->name + "'" : "value";
      if (f.undefined()) fail(what + " is undefined and cannot be called");
      fail(what + " is not callable");
    }
    Args a;
    Kwargs kw;
    eval_args(e, 1, a, kw);
    return (*f.fn)(a, kw);
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value l = eval(*e.args[0]);
      return truthy(l) ? eval(*e.args[1]) : l;
    }
    if (op == "or") {
      Value l = eval(*e.args[0]);
      return truthy(l) ? l : eval(*e.args[1]);
    }
    Value l = eval(*e.args[0]), r = eval(*e.args[1]);
    if (op == "==") return Value::of(values_equal(l, r));
    if (op == "!=") return Value::of(!values_equal(l, r));
    if (op == "~") return Value::of(bounded_concat(output_string(l), output_string(r)));
    if (op == "in" || op == "not in") {
      bool found = contains(r, l);
      return Value::of(op == "in" ? found : !found);
    }
    const Json& a = data_of(l, ("operator " + op).c_str());
    const Json& b = data_of(r, ("operator " + op).c_str());
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c;
      if (a.is_number() && b.is_number()) {
        double x = a.get<double>(), y = b.get<double>();
        c = x < y ? -1 : x > y ? 1 : 0;
      } else if (a.is_string() && b.is_string()) {
        c = to_u32(a.get<std::string>()).compare(to_u32(b.get<std::string>()));
      } else {
        fail("'" + op + "' not supported between " + py_repr(a) + " and " + py_repr(b));
      }
      bool r2 = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
      return Value::of(r2);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value::of(bounded_concat(a.get<std::string>(), b.get<std::string>()));
      if (a.is_array() && b.is_array()) {
        if (a.size() + b.size() > (size_t(1) << 20)) fail("list longer than 1048576 items");
        Json out = a;
        for (auto& x : b) out.push_back(x);
        return Value::of(out);
      }
    }
    if (op == "*" && ((a.is_string() && b.is_number_integer()) || (b.is_string() && a.is_number_integer()))) {
      std::string s = a.is_string() ? a.get<std::string>() : b.get<std::string>();
      int64_t n = a.is_string() ? b.get<int64_t>() : a.get<int64_t>();
      if (n > 0 && s.size() * static_cast<size_t>(n) > (size_t(1) << 24)) fail("string repetition larger than 16 MiB");
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += s;
      return Value::of(out);
    }
    bool numbers = (a.is_number() || a.is_boolean()) && (b.is_number() || b.is_boolean());
    if (!numbers) fail("unsupported operand types for " + op + ": " + py_repr(a) + " and " + py_repr(b));
    bool ints = !a.is_number_float() && !b.is_number_float();
    auto num = [](const Json& x) { return x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>(); };
    auto inum = [](const Json& x) { return x.is_boolean() ? int64_t(x.get<bool>()) : x.get<int64_t>(); };
    if (op == "+") return ints ? Value::of(inum(a) + inum(b)) : Value::of(num(a) + num(b));
    if (op == "-") return ints ? Value::of(inum(a) - inum(b)) : Value::of(num(a) - num(b));
    if (op == "*") return ints ? Value::of(inum(a) * inum(b)) : Value::of(num(a) * num(b));
    if (op == "/") {
      if (num(b) == 0) fail("division by zero");
      return Value::of(num(a) / num(b));
    }
    if (op == "//" || op == "%") {
      if (num(b) == 0) fail("division by zero");
      if (ints) {
        int64_t x = inum(a), y = inum(b), q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
        return Value::of(op == "//" ? q : m);
      }
      double q = std::floor(num(a) / num(b));
      return op == "//" ? Value::of(q) : Value::of(num(a) - q * num(b));
    }
    if (op == "**") return ints && inum(b) >= 0 ? Value::of(static_cast<int64_t>(std::pow(num(a), num(b)))) : Value::of(std::pow(num(a), num(b)));
    fail("unknown operator " + op);
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

  bool test(const Expr& e) {
    Value v = eval(*e.args[0]);
    Args a;
    Kwargs kw;
    eval_args(e, 1, a, kw);
    const std::string& t = e.name;
    bool data = v.kind == Value::Kind::Data;
    const Json& j = v.data;
    if (t == "defined") return !v.undefined();
    if (t == "undefined") return v.undefined();
    if (t == "none") return data && j.is_null();
    if (t == "boolean") return data && j.is_boolean();
    if (t == "true") return data && j.is_boolean() && j.get<bool>();
    if (t == "false") return data && j.is_boolean() && !j.get<bool>();
    if (t == "string") return data && j.is_string();
    if (t == "number") return data && j.is_number();
    if (t == "integer") return data && (j.is_number_integer() || j.is_number_unsigned());
    if (t == "float") return data && j.is_number_float();
    if (t == "mapping") return (data && j.is_object()) || v.kind == Value::Kind::Namespace;
    if (t == "iterable") return data && (j.is_array() || j.is_object() || j.is_string());
    if (t == "sequence") return data && (j.is_array() || j.is_object() || j.is_string());
    if (t == "callable") return v.kind == Value::Kind::Callable;
    if (t == "even" || t == "odd") return (to_int(v, "even/odd") % 2 == 0) == (t == "even");
    if (t == "divisibleby") {
      if (a.empty()) fail("divisibleby needs an argument");
      int64_t d = to_int(a[0], "divisibleby");
      return d != 0 && to_int(v, "divisibleby") % d == 0;
    }
    if (t == "lower") return data && j.is_string() && map_case(j.get<std::string>(), 0) == j.get<std::string>();
    if (t == "upper") return data && j.is_string() && map_case(j.get<std::string>(), 1) == j.get<std::string>();
    if (t == "in") {
      if (a.empty()) fail("'in' test needs an argument");
      return contains(a[0], v);
    }
    if (t == "eq" || t == "equalto" || t == "==" || t == "ne" || t == "!=" || t == "sameas") {
      if (a.empty()) fail("'" + t + "' test needs an argument");
      bool eq = values_equal(v, a[0]) && (t != "sameas" || v.data.type() == a[0].data.type());
      return (t == "ne" || t == "!=") ? !eq : eq;
    }
    if (t == "lt" || t == "gt" || t == "le" || t == "ge" || t == "<" || t == ">" || t == "<=" || t == ">=") {
      if (a.empty()) fail("'" + t + "' test needs an argument");
      static const std::map<std::string, std::string> ops = {{"lt", "<"}, {"gt", ">"}, {"le", "<="}, {"ge", ">="},
                                                             {"<", "<"},  {">", ">"},  {"<=", "<="}, {">=", ">="}};
      Expr cmp;
      cmp.kind = Expr::Binary;
      cmp.name = ops.at(t);
      const Json& x = data_of(v, "comparison test");
      const Json& y = data_of(a[0], "comparison test");
      if (!(x.is_number() && y.is_number())) fail("'" + t + "' test needs numbers");
      double p = x.get<double>(), q = y.get<double>();
      return cmp.name == "<" ? p < q : cmp.name == ">" ? p > q : cmp.name == "<=" ? p <= q : p >= q;
    }
    throw unsupported(program_.name + " line " + std::to_string(e.line) + ": unsupported test '" + t + "'");
  }

  Value attribute_of(const Json& item, const std::string& path) {
    Value v = Value::of(item);
    size_t pos = 0;
    while (pos <= path.size()) {
      size_t dot = path.find('.', pos);
      std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      v = v.undefined() ? v : get_item(v, std::all_of(part.begin(), part.end(), ::isdigit) && !part.empty() ? Value::of(std::stoll(part)) : Value::of(part));
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
    return v;
  }

  // Applies a named test to an item, as select/reject/selectattr/rejectattr do.
  bool apply_test(const std::string& name, const Value& item, Args extra, int line) {
    Expr e;
    e.kind = Expr::Test;
    e.name = name;
    e.line = line;
    auto lit = std::make_unique<Expr>();
    lit->kind = Expr::Literal;
    if (item.undefined()) {
      lit->kind = Expr::Name;
      lit->name = "\x01undefined";  // never bound: evaluates to undefined
    } else {
      lit->literal = item.data;
    }
    e.args.push_back(std::move(lit));
    for (auto& x : extra) {
      auto l = std::make_unique<Expr>();
      l->kind = Expr::Literal;
      l->literal = data_of(x, "test argument");
      e.args.push_back(std::move(l));
    }
    return test(e);
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.args[0]);
    Args a;
    Kwargs kw;
    eval_args(e, 1, a, kw);
    const std::string& f = e.name;
    if (f == "default" || f == "d") {
      const Value* def = arg(a, kw, 0, "default_value");
      bool boolean = arg(a, kw, 1, "boolean") && truthy(*arg(a, kw, 1, "boolean"));
      if (v.undefined() || (boolean && !truthy(v))) return def ? *def : Value::of("");
      return v;
    }
    if (f == "safe") return v;
    if (f == "string") return Value::of(output_string(v));
    if (f == "tojson") return Value::of(tojson(data_of(v, "tojson"), a, kw));
    if (f == "length" || f == "count") {
      const Json& j = data_of(v, "length");
      if (j.is_string()) return Value::of(static_cast<int64_t>(to_u32(j.get<std::string>()).size()));
      if (j.is_array() || j.is_object()) return Value::of(static_cast<int64_t>(j.size()));
      fail("length of " + py_repr(j));
    }
    if (f == "list") return Value::of(iterable_of(v, "list"));
    if (f == "first" || f == "last") {
      Json items = iterable_of(v, f.c_str());
      if (items.empty()) return Value{};
      return Value::of(f == "first" ? items.front() : items.back());
    }
    if (f == "reverse") {
      if (v.is_string()) {
        std::u32string u = to_u32(v.data.get<std::string>());
        std::reverse(u.begin(), u.end());
        return Value::of(to_utf8(u));
      }
      Json items = iterable_of(v, "reverse");
      std::reverse(items.begin(), items.end());
      return Value::of(items);
    }
    if (f == "items") {
      const Json& j = data_of(v, "items");
      if (!j.is_object()) fail("items: expected a mapping");
      return Value::of(items_of(j));
    }
    if (f == "dictsort") {
      const Json& j = data_of(v, "dictsort");
      if (!j.is_object()) fail("dictsort: expected a mapping");
      Json items = items_of(j);
      std::sort(items.begin(), items.end(), [](const Json& x, const Json& y) {
        return map_case(x[0].get<std::string>(), 0) < map_case(y[0].get<std::string>(), 0);
      });
      return Value::of(items);
    }
    if (f == "int") {
      if (v.is_string()) {
        try {
          return Value::of(static_cast<int64_t>(std::stoll(py_strip(v.data.get<std::string>(), std::nullopt, true, true))));
        } catch (const std::exception&) {
          return Value::of(int64_t(0));
        }
      }
      return Value::of(v.kind == Value::Kind::Data && (v.data.is_number() || v.data.is_boolean()) ? to_int(v, "int") : 0);
    }
    if (f == "float") {
      if (v.is_number()) return Value::of(v.data.get<double>());
      if (v.is_string()) {
        try {
          return Value::of(std::stod(v.data.get<std::string>()));
        } catch (const std::exception&) {
        }
      }
      return Value::of(0.0);
    }
    if (f == "abs") {
      const Json& j = data_of(v, "abs");
      if (j.is_number_float()) return Value::of(std::fabs(j.get<double>()));
      return Value::of(std::llabs(to_int(v, "abs")));
    }
    if (f == "join") {
      std::string sep = a.empty() ? "" : output_string(a[0]);
      const Value* attr = arg(a, kw, 1, "attribute");
      std::string out;
      Json items = iterable_of(v, "join");
      for (size_t k = 0; k < items.size(); ++k)
        out += (k ? sep : "") + (attr ? output_string(attribute_of(items[k], output_string(*attr))) : py_str(items[k]));
      return Value::of(out);
    }
    if (f == "map") {
      Json items = iterable_of(v, "map");
      Json out = Json::array();
      if (const Value* attr = find_kwarg(kw, "attribute")) {
        const Value* def = find_kwarg(kw, "default");
        for (auto& x : items) {
          Value r = attribute_of(x, output_string(*attr));
          if (r.undefined() && def) r = *def;
          out.push_back(r.undefined() ? Json(nullptr) : data_of(r, "map"));
        }
        return Value::of(out);
      }
      if (a.empty() || !a[0].is_string()) fail("map: expected a filter name or attribute=");
      std::string fname = a[0].data.get<std::string>();
      for (auto& x : items) {
        Expr fe;
        fe.kind = Expr::Filter;
        fe.name = fname;
        fe.line = e.line;
        auto lit = std::make_unique<Expr>();
        lit->kind = Expr::Literal;
        lit->literal = x;
        fe.args.push_back(std::move(lit));
        out.push_back(data_of(filter(fe), "map"));
      }
      return Value::of(out);
    }
    if (f == "select" || f == "reject" || f == "selectattr" || f == "rejectattr") {
      bool by_attr = f == "selectattr" || f == "rejectattr", keep_true = f == "select" || f == "selectattr";
      size_t k = 0;
      std::string attr = by_attr ? (a.size() > k ? output_string(a[k++]) : (fail(f + ": missing attribute"), "")) : "";
      std::string test_name = a.size() > k ? output_string(a[k++]) : "";
      Args extra(a.begin() + static_cast<ptrdiff_t>(std::min(k, a.size())), a.end());
      Json out = Json::array();
      for (auto& x : iterable_of(v, f.c_str())) {
        Value subject = by_attr ? attribute_of(x, attr) : Value::of(x);
        bool r = test_name.empty() ? truthy(subject) : apply_test(test_name, subject, extra, e.line);
        if (r == keep_true) out.push_back(x);
      }
      return Value::of(out);
    }
    if (f == "unique") {
      Json out = Json::array();
      for (auto& x : iterable_of(v, "unique")) {
        bool seen = false;
        for (auto& y : out) seen = seen || values_equal(Value::of(x), Value::of(y));
        if (!seen) out.push_back(x);
      }
      return Value::of(out);
    }
    if (f == "sort") {
      Json items = iterable_of(v, "sort");
      bool rev = false;
      if (const Value* r = arg(a, kw, 0, "reverse")) rev = truthy(*r);
      std::optional<std::string> attr;
      if (const Value* at = find_kwarg(kw, "attribute")) attr = output_string(*at);
      std::vector<Json> keyed(items.begin(), items.end());
      auto key = [&](const Json& x) { return attr ? data_of(attribute_of(x, *attr), "sort") : x; };
      std::stable_sort(keyed.begin(), keyed.end(), [&](const Json& x, const Json& y) {
        Json p = key(x), q = key(y);
        if (p.is_string() && q.is_string()) {
          std::string ps = map_case(p.get<std::string>(), 0), qs = map_case(q.get<std::string>(), 0);
          return rev ? qs < ps : ps < qs;
        }
        return rev ? q < p : p < q;
      });
      return Value::of(Json(keyed));
    }
    if (f == "sum") {
      double total = 0;
      bool all_int = true;
      for (auto& x : iterable_of(v, "sum")) {
        if (!x.is_number()) fail("sum: items must be numbers");
        all_int = all_int && !x.is_number_float();
        total += x.get<double>();
      }
      return all_int ? Value::of(static_cast<int64_t>(total)) : Value::of(total);
    }
    if (f == "min" || f == "max") {
      Json items = iterable_of(v, f.c_str());
      if (items.empty()) return Value{};
      Json best = items[0];
      for (auto& x : items)
        if (f == "min" ? x < best : best < x) best = x;
      return Value::of(best);
    }
    if (f == "indent") {
      std::string s = output_string(v);
      const Value* w = arg(a, kw, 0, "width");
      std::string pad = w ? (w->is_string() ? w->data.get<std::string>() : std::string(static_cast<size_t>(std::clamp<int64_t>(to_int(*w, "indent"), 0, 64)), ' ')) : "    ";
      bool first = arg(a, kw, 1, "first") && truthy(*arg(a, kw, 1, "first"));
      bool blank = arg(a, kw, 2, "blank") && truthy(*arg(a, kw, 2, "blank"));
      std::string out;
      size_t pos = 0;
      bool first_line = true;
      while (true) {
        size_t nl = s.find('\n', pos);
        std::string line = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        bool indent_it = first_line ? first : (blank || !py_strip(line, std::nullopt, true, true).empty());
        out += (indent_it ? pad : "") + line;
        if (nl == std::string::npos) break;
        out += '\n';
        pos = nl + 1;
        first_line = false;
      }
      return Value::of(out);
    }
    if (f == "e" || f == "escape") {
      std::string out;
      for (char c : output_string(v)) {
        switch (c) {
          case '&': out += "&amp;"; break;
          case '<': out += "&lt;"; break;
          case '>': out += "&gt;"; break;
          case '"': out += "&#34;"; break;
          case '\'': out += "&#39;"; break;
          default: out += c;
        }
      }
      return Value::of(out);
    }
    // String filters.
    if (f == "trim" || f == "upper" || f == "lower" || f == "capitalize" || f == "title" || f == "replace") {
      std::string s = output_string(v);
      if (f == "trim") return Value::of(py_strip(s, opt_str_arg(a, kw, 0, "chars", "trim"), true, true));
      if (f == "upper") return Value::of(map_case(s, 1));
      if (f == "lower") return Value::of(map_case(s, 0));
      if (f == "capitalize") return Value::of(py_capitalize(s));
      if (f == "title") return Value::of(py_title(s));
      const Value* c = arg(a, kw, 2, "count");
      return Value::of(py_replace(s, str_arg(a, kw, 0, "old", "replace"), str_arg(a, kw, 1, "new", "replace"), c && !c->undefined() && !c->data.is_null() ? to_int(*c, "replace") : -1));
    }
    throw unsupported(program_.name + " line " + std::to_string(e.line) + ": unsupported filter '" + f + "'");
  }

  const TemplateProgram& program_;
  std::vector<std::map<std::string, Value>> frames_;
  int line_ = 0;
  int depth_ = 0;
  int64_t steps_ = 0;

 public:
  int line() const { return line_; }
};

}  // namespace
}  // namespace text

ChatTemplate::ChatTemplate(const std::string& source, const std::string& name) {
  program_ = std::make_unique<text::TemplateProgram>();
  program_->name = name;
  text::TemplateParser parser(text::lex_template(source, name), name);
  program_->body = parser.parse_all();
}

ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw bad_input(program_->name + ": template variables must be a JSON object");
  text::Renderer renderer(*program_, variables);
  try {
    return renderer.run();
  } catch (const text::RenderError& e) {
    throw bad_input(program_->name + ": template error (line " + std::to_string(renderer.line()) + "): " + e.message);
  } catch (const text::LoopControl&) {
    throw bad_input(program_->name + ": 'break' or 'continue' outside a loop");
  }
}

}  // namespace smolvlm
