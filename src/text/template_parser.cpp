#include "text/template_parser.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "core/error.h"

namespace smolvlm::text::jinja {

namespace {

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

}  // namespace

Body parse_template(std::vector<RawTag> tags, const std::string& where) {
  return TemplateParser(std::move(tags), where).parse_all();
}

}  // namespace smolvlm::text::jinja
