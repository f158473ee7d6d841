#include "text/template_eval.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "text/template_builtins.h"

namespace smolvlm::text::jinja {

namespace {

struct LoopControl {
  bool is_break;
};

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

class Renderer final : BuiltinHost {
 public:
  Renderer(const TemplateProgram& program, const Json& variables) : program_(program) {
    frames_.emplace_back();
    auto& globals = frames_.back();
    for (auto it = variables.begin(); it != variables.end(); ++it) globals[it.key()] = Value::of(it.value());
    add_globals(globals);
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

  bool test(const Expr& e) {
    Value v = eval(*e.args[0]);
    Args a;
    Kwargs kw;
    eval_args(e, 1, a, kw);
    if (std::optional<bool> r = apply_test(e.name, v, a)) return *r;
    throw unsupported(program_.name + " line " + std::to_string(e.line) + ": unsupported test '" + e.name + "'");
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.args[0]);
    Args a;
    Kwargs kw;
    eval_args(e, 1, a, kw);
    if (std::optional<Value> r = apply_filter(e.name, v, a, kw, e.line, *this)) return std::move(*r);
    throw unsupported(program_.name + " line " + std::to_string(e.line) + ": unsupported filter '" + e.name + "'");
  }

  // Applies a named filter to an item, as map does: through a literal expression, so that each item
  // counts as a step of the render as the template's own filters do.
  Value filter_by_name(const std::string& name, const Json& item, int line) override {
    Expr fe = named_expr(Expr::Filter, name, line);
    fe.args.push_back(literal_expr(item));
    return filter(fe);
  }

  // Applies a named test to an item, as select/reject/selectattr/rejectattr do.
  bool test_by_name(const std::string& name, const Value& item, Args extra, int line) override {
    Expr e = named_expr(Expr::Test, name, line);
    if (item.undefined()) {
      auto lit = std::make_unique<Expr>();
      lit->kind = Expr::Name;
      lit->name = "\x01undefined";  // never bound: evaluates to undefined
      e.args.push_back(std::move(lit));
    } else {
      e.args.push_back(literal_expr(item.data));
    }
    for (auto& x : extra) e.args.push_back(literal_expr(data_of(x, "test argument")));
    return test(e);
  }

  static Expr named_expr(Expr::Kind kind, const std::string& name, int line) {
    Expr e;
    e.kind = kind;
    e.name = name;
    e.line = line;
    return e;
  }

  static ExprPtr literal_expr(Json value) {
    auto lit = std::make_unique<Expr>();
    lit->kind = Expr::Literal;
    lit->literal = std::move(value);
    return lit;
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

std::string render_program(const TemplateProgram& program, const Json& variables) {
  Renderer renderer(program, variables);
  try {
    return renderer.run();
  } catch (const RenderError& e) {
    throw bad_input(program.name + ": template error (line " + std::to_string(renderer.line()) + "): " + e.message);
  } catch (const LoopControl&) {
    throw bad_input(program.name + ": 'break' or 'continue' outside a loop");
  }
}

}  // namespace smolvlm::text::jinja
