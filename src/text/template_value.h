// The values of the chat template interpreter (text/chat_template.h): JSON data, plus what Jinja has
// beyond data (undefined, namespace objects, callables), with Python's semantics of them: truth,
// equality, str(), repr() and json.dumps().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace smolvlm::text::jinja {

using Json = nlohmann::ordered_json;

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

[[noreturn]] void fail(const std::string& message);

// Python's str.isspace.
bool py_isspace(char32_t c);
std::u32string to_u32(std::string_view s);
std::string to_utf8(std::u32string_view s);

std::string py_repr(const Json& j);
// str(x) as Python prints it ({{ x }}).
std::string py_str(const Json& j);

// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
struct DumpOptions {
  std::optional<std::string> indent;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
void dump_json(const Json& j, const DumpOptions& o, int depth, std::string& out);

const Json& data_of(const Value& v, const char* what);
std::string bounded_concat(const std::string& a, const std::string& b);
std::string output_string(const Value& v);
bool truthy(const Value& v);
bool values_equal(const Value& a, const Value& b);
int64_t to_int(const Value& v, const char* what);
// Elements a `for` loop or a filter iterates over.
Json iterable_of(const Value& v, const char* what);
// `item in container`.
bool contains(const Value& container, const Value& item);

}  // namespace smolvlm::text::jinja
