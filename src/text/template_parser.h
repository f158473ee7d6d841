// The syntax tree of chat templates (text/chat_template.h) and its parser: statements ({% if %},
// {% for %}, {% set %}, {% macro %}, ...) over the lexed tags, expressions with Jinja's precedence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/template_lexer.h"
#include "text/template_value.h"

namespace smolvlm::text::jinja {

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

// The body of the template whose tags are `tags`. `where` (the template's name) prefixes error messages.
// Throws Error(BadInput) for a syntax error, Error(Unsupported) for a construct outside the subset.
Body parse_template(std::vector<RawTag> tags, const std::string& where);

}  // namespace smolvlm::text::jinja

namespace smolvlm::text {

// A parsed template, as ChatTemplate holds it.
struct TemplateProgram {
  std::string name;
  jinja::Body body;
};

}  // namespace smolvlm::text
