// `smolvlm generate`: continue a text prompt (or answer it as one chat message with --chat) with a
// Llama-family model, or with the text path of a SmolVLM model. The text streams to stdout.
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

struct GenerateFlags : GenerationFlags {
  std::string prompt, messages;
  bool chat = false;
};

const Command kGenerate{"generate", "Generate text from a prompt with a Llama-family model (or SmolVLM's text path)",
                        [](CLI::App& sub) {
  auto f = std::make_shared<GenerateFlags>();
  sub.add_option("--prompt", f->prompt, "the prompt text");
  sub.add_flag("--chat", f->chat, "apply the model's chat template to the prompt as one user message");
  sub.add_option("--messages", f->messages,
                 std::string("chat turns rendered with the model's template (before --prompt, which --chat then adds "
                             "as the last user turn): ") + messages_help());
  add_generation_flags(sub, *f, "write prefill_logits_last, step_logits, generated_ids as .npy into this folder");
  return [f, &sub]() {
    const bool has_prompt = sub.count("--prompt") > 0;
    if (!has_prompt && f->messages.empty()) throw UsageError("give --prompt or --messages");
    if (!f->messages.empty() && has_prompt && !f->chat)
      throw UsageError("--messages with --prompt needs --chat (the prompt becomes the last user turn)");
    return run_generation(*f, [&](const api::Model&, smolvlm_request& req, api::Chat& chat) {
      if (f->chat || !f->messages.empty()) {
        if (!f->messages.empty()) add_messages_file(f->messages, chat);
        if (has_prompt) chat.add(SMOLVLM_ROLE_USER).text(f->prompt);
        chat.fill(req);
      } else {
        req.prompt = f->prompt.c_str();
      }
    });
  };
}};

}  // namespace
}  // namespace smolvlm::cli
