// HunYuanDenseV1ForCausalLM (Tencent HY-MT1.5-1.8B, Hunyuan-1.8B): a Llama decoder with a per-head
// RMSNorm of queries and keys applied after RoPE (self_attn.query_layernorm / key_layernorm) and the
// NTK-alpha RoPE base. Its config is a LlamaConfig with rope_alpha, qk_norm and positions_bounded set.
//
// Past max_position_embeddings HF's "dynamic" RoPE recomputes inv_freq with the plain dynamic-NTK
// formula (dropping alpha), a different model than the one inside the context; this engine refuses
// contexts past max_position_embeddings instead (LlamaConfig::positions_bounded).
#pragma once

#include "model/llama_config.h"
#include "model/registry.h"
#include "model/spec.h"

namespace smolvlm {

// config.json of HunYuanDenseV1ForCausalLM as HF's HunYuanDenseV1Config reads it. Error(BadInput)
// naming the key.
LlamaConfig parse_hunyuan_dense_config(const ConfigFields& f);

// Error(Unsupported) naming the key for what the decoder does not implement (a RoPE type other than
// default / dynamic, cross-layer attention, an activation other than silu).
void check_hunyuan_dense_supported(const LlamaConfig& c, const ConfigFields& f);

extern const Architecture kHunYuanDenseV1ForCausalLM;

}  // namespace smolvlm
