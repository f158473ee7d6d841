// Lexing of chat templates (text/chat_template.h): the source split into text and tags with Jinja's
// whitespace control (trim_blocks, lstrip_blocks, `-` and `+` modifiers), and the tokens of the
// expressions inside tags.
#pragma once

#include <string>
#include <vector>

namespace smolvlm::text::jinja {

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

// The tokens of the expression `s` that starts on `line`, ending with an End token. `where` (the
// template's name) prefixes error messages; throws Error(BadInput) on a malformed token.
std::vector<ExprToken> lex_expression(const std::string& s, int line, const std::string& where);

// The text runs, {{ output }} tags and {% block %} tags of `src` (comments dropped). Throws
// Error(BadInput) for an unclosed tag or comment.
std::vector<RawTag> lex_template(std::string src, const std::string& where);

}  // namespace smolvlm::text::jinja
