#include "text/template_builtins.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <memory>

#include "text/unicode.h"

namespace smolvlm::text::jinja {

// Python-style string helpers used by filters and methods.
static std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = to_u32(s), set = chars ? to_u32(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return to_utf8(std::u32string_view(u).substr(b, e - b));
}

static std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper
  std::u32string u = to_u32(s);
  for (auto& c : u)
    c = static_cast<char32_t>(mode == 0 ? utf8proc_tolower(static_cast<utf8proc_int32_t>(c)) : utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
  return to_utf8(u);
}

static std::string py_capitalize(const std::string& s) {
  std::u32string u = to_u32(s);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = static_cast<char32_t>(i == 0 ? utf8proc_totitle(static_cast<utf8proc_int32_t>(u[i])) : utf8proc_tolower(static_cast<utf8proc_int32_t>(u[i])));
  return to_utf8(u);
}

static std::string py_title(const std::string& s) {
  std::u32string u = to_u32(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool cased = is_alphabetic(c);
    c = static_cast<char32_t>(prev_cased ? utf8proc_tolower(static_cast<utf8proc_int32_t>(c)) : utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
    prev_cased = cased;
  }
  return to_utf8(u);
}

static std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
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

static Json py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit) {
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

const Value* find_kwarg(const Kwargs& kw, const char* name) {
  for (auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

// Positional argument `i` or keyword `name`.
static const Value* arg(const Args& a, const Kwargs& kw, size_t i, const char* name) {
  if (i < a.size()) return &a[i];
  return find_kwarg(kw, name);
}

static std::string str_arg(const Args& a, const Kwargs& kw, size_t i, const char* name, const char* what) {
  const Value* v = arg(a, kw, i, name);
  if (!v || !v->is_string()) fail(std::string(what) + ": argument '" + name + "' must be a string");
  return v->data.get<std::string>();
}

static std::optional<std::string> opt_str_arg(const Args& a, const Kwargs& kw, size_t i, const char* name, const char* what) {
  const Value* v = arg(a, kw, i, name);
  if (!v || v->undefined() || (v->kind == Value::Kind::Data && v->data.is_null())) return std::nullopt;
  if (!v->is_string()) fail(std::string(what) + ": argument '" + name + "' must be a string");
  return v->data.get<std::string>();
}

static Json items_of(const Json& j) {
  Json out = Json::array();
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(Json::array({it.key(), it.value()}));
  return out;
}
static std::string tojson(const Json& j, const Args& a, const Kwargs& kw) {
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

void add_globals(std::map<std::string, Value>& globals) {
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

// Bound methods of strings and mappings.
static Value method(const Value& self, const std::string& name) {
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


std::optional<bool> apply_test(const std::string& t, const Value& v, const Args& a) {
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
    const std::string& op = ops.at(t);
    const Json& x = data_of(v, "comparison test");
    const Json& y = data_of(a[0], "comparison test");
    if (!(x.is_number() && y.is_number())) fail("'" + t + "' test needs numbers");
    double p = x.get<double>(), q = y.get<double>();
    return op == "<" ? p < q : op == ">" ? p > q : op == "<=" ? p <= q : p >= q;
  }
  return std::nullopt;
}

static Value attribute_of(const Json& item, const std::string& path) {
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

std::optional<Value> apply_filter(const std::string& f, const Value& v, const Args& a, const Kwargs& kw, int line,
                                  BuiltinHost& host) {
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
    for (auto& x : items) out.push_back(data_of(host.filter_by_name(fname, x, line), "map"));
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
      bool r = test_name.empty() ? truthy(subject) : host.test_by_name(test_name, subject, extra, line);
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
  return std::nullopt;
}

}  // namespace smolvlm::text::jinja
