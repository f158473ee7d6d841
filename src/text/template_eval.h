// Rendering of parsed chat templates (text/chat_template.h): statements and expressions evaluated
// over scoped variables, with bounds on the work and output a template may cause.
#pragma once

#include <string>

#include "text/template_parser.h"
#include "text/template_value.h"

namespace smolvlm::text::jinja {

// The output of `program` with `variables` (a JSON object) as its globals. Throws Error(BadInput)
// "<name>: template error (line N): <message>" for raise_exception() and errors while rendering,
// Error(Unsupported) for a filter or test outside the subset.
std::string render_program(const TemplateProgram& program, const Json& variables);

}  // namespace smolvlm::text::jinja
