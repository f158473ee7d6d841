#include "text/chat_template.h"

#include "core/error.h"
#include "text/template_eval.h"
#include "text/template_lexer.h"
#include "text/template_parser.h"

namespace smolvlm {

ChatTemplate::ChatTemplate(const std::string& source, const std::string& name) {
  program_ = std::make_unique<text::TemplateProgram>();
  program_->name = name;
  program_->body = text::jinja::parse_template(text::jinja::lex_template(source, name), name);
}

ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw bad_input(program_->name + ": template variables must be a JSON object");
  return text::jinja::render_program(*program_, variables);
}

}  // namespace smolvlm
