#include "model/spec.h"

#include "model/quantized_weights.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace smolvlm {

namespace {

constexpr const char* kLayerPlaceholder = "{layer}";

std::string with_layer(const std::string& pattern, int64_t layer) {
  std::string name = pattern;
  size_t at = name.find(kLayerPlaceholder);
  if (at != std::string::npos) name.replace(at, std::char_traits<char>::length(kLayerPlaceholder), std::to_string(layer));
  return name;
}

ExpectedTensor expand(const TensorRule& r, Component c, const std::string& name) {
  return ExpectedTensor{name, r.shape, c, r.role, r.param, r.presence, r.tied_to};
}

const TensorRule* find_rule(const std::vector<TensorRule>& rules, Role role, Param param) {
  for (const TensorRule& r : rules)
    if (r.role == role && r.param == param) return &r;
  return nullptr;
}

std::string rule_text(Component c, Role role, Param param) {
  return std::string(component_name(c)) + " " + role_name(role) + (param == Param::Bias ? " bias" : " weight");
}

// Lists up to `limit` names, then how many more.
std::string name_list(const std::vector<std::string>& names, size_t limit = 8) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < limit; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > limit) s += ", ... (" + std::to_string(names.size() - limit) + " more)";
  return s;
}

}  // namespace

const char* component_name(Component c) {
  switch (c) {
    case Component::Vision: return "vision";
    case Component::Connector: return "connector";
    case Component::Text: return "text";
    case Component::LmHead: return "lm_head";
  }
  return "?";
}

const char* role_name(Role r) {
  switch (r) {
    case Role::Embedding: return "embedding";
    case Role::PatchEmbedding: return "patch_embedding";
    case Role::PositionEmbedding: return "position_embedding";
    case Role::QProj: return "q_proj";
    case Role::KProj: return "k_proj";
    case Role::VProj: return "v_proj";
    case Role::OProj: return "o_proj";
    case Role::QNorm: return "q_norm";
    case Role::KNorm: return "k_norm";
    case Role::GateProj: return "gate_proj";
    case Role::UpProj: return "up_proj";
    case Role::DownProj: return "down_proj";
    case Role::Fc1: return "fc1";
    case Role::Fc2: return "fc2";
    case Role::AttentionNorm: return "attention_norm";
    case Role::MlpNorm: return "mlp_norm";
    case Role::FinalNorm: return "final_norm";
    case Role::Projection: return "projection";
    case Role::LmHead: return "lm_head";
  }
  return "?";
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

ExpectedTensor ComponentSpec::tensor(Role role, Param param) const {
  const TensorRule* r = find_rule(head, role, param);
  if (!r) r = find_rule(tail, role, param);
  if (!r) throw internal_error("the spec has no " + rule_text(component, role, param));
  return expand(*r, component, r->pattern);
}

ExpectedTensor ComponentSpec::layer_tensor(int64_t layer_index, Role role, Param param) const {
  const TensorRule* r = find_rule(layer, role, param);
  if (!r || layer_index < 0 || layer_index >= layers)
    throw internal_error("the spec has no " + rule_text(component, role, param) + " in layer " +
                         std::to_string(layer_index));
  return expand(*r, component, with_layer(r->pattern, layer_index));
}

bool ModelSpec::has(Component c) const {
  return std::any_of(components.begin(), components.end(), [&](const ComponentSpec& s) { return s.component == c; });
}

const ComponentSpec& ModelSpec::component(Component c) const {
  for (const ComponentSpec& s : components)
    if (s.component == c) return s;
  throw internal_error(architecture + " has no " + component_name(c) + " component");
}

std::vector<ExpectedTensor> all_tensors(const ModelSpec& spec) {
  std::vector<ExpectedTensor> out;
  for (const ComponentSpec& c : spec.components) {
    for (const TensorRule& r : c.head) out.push_back(expand(r, c.component, r.pattern));
    for (int64_t l = 0; l < c.layers; ++l)
      for (const TensorRule& r : c.layer) out.push_back(expand(r, c.component, with_layer(r.pattern, l)));
    for (const TensorRule& r : c.tail) out.push_back(expand(r, c.component, r.pattern));
  }
  return out;
}

std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec) {
  std::vector<ExpectedTensor> out = all_tensors(spec);
  out.erase(std::remove_if(out.begin(), out.end(), [](const ExpectedTensor& t) { return t.presence != Presence::Required; }),
            out.end());
  return out;
}

int64_t ParameterCounts::of(Component c) const {
  for (const ParameterCount& p : components)
    if (p.component == c) return p.parameters;
  return 0;
}

int64_t ParameterCounts::total() const {
  int64_t total = 0;
  for (const ParameterCount& p : components) total += p.parameters;  // count_parameters checked the sum
  return total;
}

ParameterCounts count_parameters(const ModelSpec& spec) {
  ParameterCounts counts;
  for (const ComponentSpec& c : spec.components) counts.components.push_back({c.component, 0});
  int64_t total = 0;
  for (const ExpectedTensor& t : expected_tensors(spec)) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (__builtin_mul_overflow(n, d, &n))
        throw bad_input("tensor " + t.name + ": shape " + shape_string(t.shape) + " is too large");
    for (ParameterCount& p : counts.components)
      if (p.component == t.component && __builtin_add_overflow(p.parameters, n, &p.parameters))
        throw bad_input("parameter count overflows 64 bits");
    if (__builtin_add_overflow(total, n, &total)) throw bad_input("parameter count overflows 64 bits");
  }
  return counts;
}

void validate_checkpoint(const ModelSpec& spec, const Checkpoint& ckpt) {
  const std::vector<ExpectedTensor> table = all_tensors(spec);
  check_quantized_modules(ckpt, table);
  std::vector<std::string> missing;
  for (const ExpectedTensor& e : table) {
    if (e.presence != Presence::Required) continue;
    if (const QuantizedModule* m = quantized_module(ckpt, e)) {
      quantized_matrix(ckpt, e, *m);  // every rule of the quantized layout
      continue;
    }
    const TensorView* t = ckpt.find(e.name);
    if (!t) {
      missing.push_back(e.name);
      continue;
    }
    if (t->shape != e.shape)
      throw bad_input(t->file + ": tensor \"" + e.name + "\" has shape " + shape_string(t->shape) + ", expected " +
                      shape_string(e.shape) + " for this config.json");
    if (!is_float_dtype(t->dtype))
      throw unsupported(t->file + ": tensor \"" + e.name + "\" has dtype " + dtype_name(t->dtype) +
                        ", expected F32, F16 or BF16");
  }
  if (!missing.empty())
    throw bad_input(ckpt.source() + ": missing " + std::to_string(missing.size()) + " tensor(s) that " +
                    spec.architecture + " with this config.json needs: " + name_list(missing));
  std::set<std::string> stored;
  for (const ExpectedTensor& e : table)
    if (e.presence == Presence::Required)
      for (const std::string& name : stored_names(ckpt, e)) stored.insert(name);
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : ckpt.tensors())
    if (!stored.count(name)) unexpected.push_back(name);
  if (unexpected.empty()) return;
  // A stored tensor the config ties to another one is the likely mistake: say so.
  std::string hint;
  for (const ExpectedTensor& e : table)
    if (e.presence == Presence::Tied && std::count(unexpected.begin(), unexpected.end(), e.name))
      hint = " (config.json ties " + e.name + " to " + e.tied_to + ", so " + e.name + " must not be stored)";
  throw bad_input(ckpt.source() + ": " + std::to_string(unexpected.size()) + " unexpected tensor(s) that " +
                  spec.architecture + " with this config.json does not have: " + name_list(unexpected) + hint);
}

}  // namespace smolvlm
