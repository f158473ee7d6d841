// Chat templates rendered byte for byte as transformers 4.47 apply_chat_template (reference cases in
// tests/data/text/chat), and the template engine's errors.
#include <gtest/gtest.h>

#include "core/error.h"
#include "text/chat_template.h"
#include "text_test_util.h"

namespace smolvlm {
namespace {

using OJson = nlohmann::ordered_json;

OJson read_ordered(const std::filesystem::path& p) { return OJson::parse(test::read_maybe_gzip(p)); }

class ChatCases : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatCases, RenderAndIdsMatchReference) {
  const std::string name = GetParam();
  auto dir = test::text_data() / "chat" / name;
  OJson meta = read_ordered(dir / "meta.json");
  ChatTemplate tmpl(test::read_maybe_gzip(dir / "chat_template.jinja"), name);
  const Tokenizer& tok = test::reference_tokenizer(meta["tokenizer"].get<std::string>());
  std::string text = test::read_maybe_gzip(dir / "cases.jsonl");
  size_t n = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    OJson c = OJson::parse(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
    OJson vars = meta["special_tokens_map_passed"];
    vars["messages"] = c["messages"];
    vars["add_generation_prompt"] = c["add_generation_prompt"];
    vars["tools"] = c.contains("tools") ? c["tools"] : OJson(nullptr);
    vars["documents"] = nullptr;
    if (c.contains("template_kwargs"))
      for (auto it = c["template_kwargs"].begin(); it != c["template_kwargs"].end(); ++it) vars[it.key()] = it.value();
    ++n;
    if (c.contains("error")) {
      std::string want = c["error"].get<std::string>();
      want = want.substr(want.find(": ") + 2);
      try {
        tmpl.render(vars);
        ADD_FAILURE() << name << " case " << c["i"] << ": expected an error";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      }
      continue;
    }
    std::string rendered = tmpl.render(vars);
    EXPECT_EQ(rendered, c["rendered"].get<std::string>()) << name << " case " << c["i"] << " (" << c["desc"] << ")";
    EXPECT_EQ(tok.encode(rendered, false), c["ids"].get<std::vector<int32_t>>()) << name << " case " << c["i"];
  }
  EXPECT_GE(n, 12u);
}

INSTANTIATE_TEST_SUITE_P(Reference, ChatCases, ::testing::Values("smolvlm", "smollm2", "llama3_1", "qwen3", "gemma3"),
                         [](const auto& info) { return info.param; });

std::string render(const std::string& src, const OJson& vars = OJson::object()) {
  return ChatTemplate(src, "t.jinja").render(vars);
}

TEST(ChatTemplate, JinjaSemantics) {
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{% if not loop.last %},{% endif %}{% endfor %}"), "1,2,3");
  EXPECT_EQ(render("{{ 'abc'[::-1] }}|{{ [1,2,3][1:] }}|{{ 'a' ~ 1 ~ none }}"), "cba|[2, 3]|a1None");
  EXPECT_EQ(render("{{ x | default('d') }}{{ '  y ' | trim }}{{ 'hello' | capitalize }}"), "dyHello");
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}"), "4");
  EXPECT_EQ(render("{{ {'b': 1, 'a': [1.5, 'é', true, none]} | tojson }}"), "{\"b\": 1, \"a\": [1.5, \"é\", true, null]}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(indent=2, sort_keys=true) }}"), "{\n  \"a\": 2,\n  \"b\": 1\n}");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' x y '.split() | length }}"), "['a', 'b', '', 'c']2");
  EXPECT_EQ(render("{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}"), "a=1");
  EXPECT_EQ(render("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}"), "02");
  EXPECT_EQ(render("{% macro greet(n, p='Hi') %}{{ p }} {{ n }}{% endmacro %}{{ greet('Bob') }}"), "Hi Bob");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 1 / 2 }} {{ 2 ** 3 }}"), "3 -4 1 0.5 8");
  EXPECT_EQ(render("a\n  {%- if true %}\n  b\n  {% endif %}\nc\n"), "a  b\nc");  // -, trim/lstrip blocks, trailing \n
  EXPECT_EQ(render("{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ 3 is not string }}", {{"x", 1}}), "TrueTrueTrueTrue");
  EXPECT_EQ(render("{{ [3,1,2] | sort | join('-') }}{{ [{'r':'a'},{'r':'b'}] | selectattr('r', 'equalto', 'b') | list | length }}"), "1-2-31");
}

TEST(ChatTemplate, ErrorsNameTheConstructAndLine) {
  auto expect_error = [](const std::string& src, ErrorKind kind, const std::string& needle) {
    try {
      render(src);
      ADD_FAILURE() << "no error for " << src;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("a\n{% for x in y %}", ErrorKind::BadInput, "line 2: missing {% endfor %}");
  expect_error("{{ 1 + }}", ErrorKind::BadInput, "line 1");
  expect_error("x\n\n{% include 'a' %}", ErrorKind::Unsupported, "line 3: unsupported template tag 'include'");
  expect_error("{{ x | wordwrap }}", ErrorKind::Unsupported, "unsupported filter 'wordwrap'");
  expect_error("{{ 'abc }}", ErrorKind::BadInput, "line 1: unclosed tag");
  expect_error("{{ raise_exception('boom') }}", ErrorKind::BadInput, "template error (line 1): boom");
  expect_error("{{ x.y }}", ErrorKind::BadInput, "undefined");
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", ErrorKind::BadInput, "recursion");
}

}  // namespace
}  // namespace smolvlm
