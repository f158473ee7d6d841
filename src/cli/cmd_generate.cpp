// `smolvlm generate`: continue a text prompt (or answer it as one chat message with --chat) with a
// Llama-family model, or with the text path of a SmolVLM model. The text streams to stdout.
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

struct GenerateFlags : GenerationFlags {
  std::string prompt;
  bool chat = false;
};

const Command kGenerate{"generate", "Generate text from a prompt with a Llama-family model (or SmolVLM's text path)",
                        [](CLI::App& sub) {
  auto f = std::make_shared<GenerateFlags>();
  sub.add_option("--prompt", f->prompt, "the prompt text")->required();
  sub.add_flag("--chat", f->chat, "apply the model's chat template to the prompt as one user message");
  add_generation_flags(sub, *f, "write prefill_logits_last, step_logits, generated_ids as .npy into this folder");
  return [f]() {
    return run_generation(*f, [&](const Model& model, PendingTextAssets& assets, const RequestOptions& o,
                                  ThreadPool& pool, const TextSink& sink) {
      return run_text_request(model, assets.get(), f->prompt, f->chat, o, pool, sink);
    });
  };
}};

}  // namespace
}  // namespace smolvlm::cli
