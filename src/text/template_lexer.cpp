#include "text/template_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>

#include "core/error.h"
#include "text/unicode.h"

namespace smolvlm::text::jinja {

std::vector<ExprToken> lex_expression(const std::string& s, int line, const std::string& where) {
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

std::vector<RawTag> lex_template(std::string src, const std::string& where) {
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

}  // namespace smolvlm::text::jinja
