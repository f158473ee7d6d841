// LlamaForCausalLM (SmolLM2 and other Llama checkpoints): its weight spec and registry entry. The
// decoder and lm_head specs are shared with the architectures that embed a Llama text model.
#pragma once

#include <string>

#include "model/llama_config.h"
#include "model/registry.h"
#include "model/spec.h"

namespace smolvlm {

// LlamaModel under `prefix` ("model." or "model.text_model."): embed_tokens, layers (self_attn
// q/k/v/o, mlp gate/up/down, the two RMSNorms), norm.
ComponentSpec llama_decoder_spec(const LlamaConfig& c, const std::string& prefix);

// lm_head [vocab, hidden]; under `tied` it shares the storage of `embedding_name`.
ComponentSpec lm_head_spec(const LlamaConfig& c, bool tied, const std::string& embedding_name);

extern const Architecture kLlamaForCausalLM;

}  // namespace smolvlm
