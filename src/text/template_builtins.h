// What chat templates (text/chat_template.h) have built in: the filters (`x | f`), tests (`x is t`),
// bound methods of strings and mappings (`s.strip()`, `d.items()`) and global functions
// (raise_exception, strftime_now, namespace, range, dict), with Python's and Jinja2's semantics.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "text/template_value.h"

namespace smolvlm::text::jinja {

// The evaluator, as the filters that apply another filter or test by name (map, select, reject,
// selectattr, rejectattr) see it: it applies them to each item as it applies a filter or test written
// in the template (`line` is that of the calling filter).
class BuiltinHost {
 public:
  virtual Value filter_by_name(const std::string& name, const Json& item, int line) = 0;
  virtual bool test_by_name(const std::string& name, const Value& item, Args extra, int line) = 0;

 protected:
  ~BuiltinHost() = default;
};

// Keyword argument `name`, or nullptr when it was not passed.
const Value* find_kwarg(const Kwargs& kw, const char* name);

// `obj.name` and `obj[key]`: namespace attributes, mapping and sequence items, bound methods.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);

// `v | name(a..., kw...)` at `line`; nullopt when there is no filter `name`.
std::optional<Value> apply_filter(const std::string& name, const Value& v, const Args& a, const Kwargs& kw, int line,
                                  BuiltinHost& host);
// `v is name(a...)`; nullopt when there is no test `name`.
std::optional<bool> apply_test(const std::string& name, const Value& v, const Args& a);

// Binds the global functions in `globals`, replacing variables of the same names.
void add_globals(std::map<std::string, Value>& globals);

}  // namespace smolvlm::text::jinja
