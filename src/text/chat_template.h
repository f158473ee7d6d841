// Chat templates: the Jinja subset real HF chat templates use, rendered exactly as transformers 4.47
// apply_chat_template does (Jinja2 sandbox with trim_blocks, lstrip_blocks, loopcontrols; `tojson` as
// json.dumps(ensure_ascii=False); raise_exception; strftime_now; keep_trailing_newline=False).
// Values are JSON; constructs outside the subset are refused with an Error naming the construct and
// the line.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace smolvlm {

namespace text {
struct TemplateProgram;
}

class ChatTemplate {
 public:
  // Parses `source`; `name` (a path or label) appears in error messages. Throws Error(BadInput) for a
  // syntax error, Error(Unsupported) for a construct outside the subset.
  ChatTemplate(const std::string& source, const std::string& name);
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // `variables`: the template's globals (messages, add_generation_prompt, tools, bos_token, ...).
  // Object key order is kept (it shows in `tojson`). A template that calls raise_exception throws
  // Error(BadInput) "<name>: template error: <message>".
  std::string render(const nlohmann::ordered_json& variables) const;

 private:
  std::unique_ptr<text::TemplateProgram> program_;
};

}  // namespace smolvlm
