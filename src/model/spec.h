// The declarative description of an architecture's weights: every tensor HF creates for a config,
// as a name pattern, a shape, a role, a component and whether it is stored. Validation of a
// checkpoint, weight binding in the model constructors, synthetic checkpoints and parameter counts
// all read this one table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace smolvlm {

// The parts `info` counts parameters for.
enum class Component { Vision, Connector, Text, LmHead };
const char* component_name(Component c);  // "vision", "connector", "text", "lm_head"

// What a tensor is to the model math; the constructors bind tensors by role, never by name.
enum class Role {
  Embedding,          // token embeddings [vocab, hidden]
  PatchEmbedding,     // patch convolution [hidden, channels, patch, patch]
  PositionEmbedding,  // learned positions [positions, hidden]
  QProj, KProj, VProj, OProj,
  QNorm, KNorm,       // per-head norms of queries / keys
  GateProj, UpProj, DownProj,
  Fc1, Fc2,
  AttentionNorm,      // the norm before attention (input_layernorm, layer_norm1)
  MlpNorm,            // the norm before the MLP (post_attention_layernorm, layer_norm2)
  FinalNorm,          // after the last layer (norm, post_layernorm)
  Projection,         // a component's single projection (the Idefics3 connector)
  LmHead,
};
const char* role_name(Role r);  // "q_proj", "norm", ...

enum class Param { Weight, Bias };

enum class Presence {
  Required,  // stored in the checkpoint
  Absent,    // this config leaves it out (e.g. biases without attention_bias); must not be stored
  Tied,      // shares the storage of `tied_to` (lm_head under tie_word_embeddings); must not be stored
};

// One tensor of an architecture. In a layer stack, `pattern` holds "{layer}" for the layer index.
struct TensorRule {
  TensorRule(std::string pattern_, Role role_, Param param_, std::vector<int64_t> shape_,
             Presence presence_ = Presence::Required, std::string tied_to_ = {})
      : pattern(std::move(pattern_)),
        role(role_),
        param(param_),
        shape(std::move(shape_)),
        presence(presence_),
        tied_to(std::move(tied_to_)) {}

  std::string pattern;
  Role role;
  Param param;
  std::vector<int64_t> shape;
  Presence presence;
  std::string tied_to;  // name of the tensor whose storage a Tied rule uses
};

// One concrete tensor: a rule with its layer index filled in.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  Component component;
  Role role;
  Param param = Param::Weight;
  Presence presence = Presence::Required;
  std::string tied_to;
};

// The tensors of one component in HF's registration order: those before the layers, `layers`
// repetitions of the per-layer rules, those after.
struct ComponentSpec {
  explicit ComponentSpec(Component c) : component(c) {}

  Component component;
  std::vector<TensorRule> head;
  int64_t layers = 0;
  std::vector<TensorRule> layer;
  std::vector<TensorRule> tail;

  // A head/tail tensor, or one of layer `layer_index`; Error(Internal) when the spec has no such rule
  // (a constructor asking for a role its architecture does not declare).
  ExpectedTensor tensor(Role role, Param param = Param::Weight) const;
  ExpectedTensor layer_tensor(int64_t layer_index, Role role, Param param = Param::Weight) const;
};

struct ModelSpec {
  std::string architecture;  // HF class name, for messages
  std::vector<ComponentSpec> components;

  bool has(Component c) const;
  const ComponentSpec& component(Component c) const;  // Error(Internal) if absent
};

// Every tensor of the spec in HF's order, stored or not.
std::vector<ExpectedTensor> all_tensors(const ModelSpec& spec);
// The stored ones: exactly the table HF's save_pretrained writes.
std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec);

// Parameters per component, counting each stored tensor once (a tied lm_head adds nothing), as
// HF's `sum(p.numel() for p in model.parameters())` does. Every component of the spec is listed.
struct ParameterCount {
  Component component;
  int64_t parameters = 0;
};
struct ParameterCounts {
  std::vector<ParameterCount> components;
  int64_t of(Component c) const;  // 0 for a component the spec lacks
  int64_t total() const;
};
ParameterCounts count_parameters(const ModelSpec& spec);

// Checks `ckpt` against the spec: every stored tensor present with its shape and a float dtype
// (F32/F16/BF16), nothing else. Error(BadInput) / Error(Unsupported) naming the tensor and the file.
void validate_checkpoint(const ModelSpec& spec, const Checkpoint& ckpt);

// The shape as "[a, b, c]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace smolvlm
