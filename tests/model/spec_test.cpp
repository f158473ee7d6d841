// The weight spec of each architecture: HF's tensor table and parameter counts from config.json alone,
// role lookups for the constructors, and the validation of checkpoints against it.
#include "model/spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/hunyuan_arch.h"
#include "model/idefics3_arch.h"
#include "model/llama_arch.h"
#include "model/model_test_util.h"
#include "model/registry.h"

namespace smolvlm {
namespace {

using test::edited_config;
using test::expect_error;
using test::model_dir;
using test::open_validated;
using test::find_tensor;
using test::rewrite_weights;

ModelSpec spec_of(const char* model) { return model_spec(load_model_config(model_dir(model))); }

TEST(Spec, RealSmolvlm256mParameterCounts) {
  ParameterCounts p = count_parameters(spec_of("smolvlm-256m-instruct"));
  EXPECT_EQ(p.of(Component::Vision), 86433024);
  EXPECT_EQ(p.of(Component::Connector), 7077888);
  EXPECT_EQ(p.of(Component::Text), 134588736);
  EXPECT_EQ(p.of(Component::LmHead), 28385280);
  EXPECT_EQ(p.total(), 256484928);
  ASSERT_EQ(p.components.size(), 4u);  // in HF's order, each listed once
  EXPECT_EQ(p.components[0].component, Component::Vision);
  EXPECT_EQ(p.components[3].component, Component::LmHead);
}

TEST(Spec, TinyParameterCountsMatchHf) {
  EXPECT_EQ(count_parameters(spec_of("smolvlm-tiny")).total(), 6444528);
  EXPECT_EQ(count_parameters(spec_of("smolvlm-tiny-tied")).total(), 2084940);
  ParameterCounts llama = count_parameters(spec_of("llama-tiny"));
  EXPECT_EQ(llama.total(), 793936);
  EXPECT_EQ(llama.of(Component::LmHead), 0);  // tied: counted once, as the embeddings
  EXPECT_EQ(llama.of(Component::Vision), 0);
  EXPECT_EQ(llama.components.size(), 2u);
}

TEST(Spec, ExpectedTensorsEqualHfTableOfRealConfig) {
  nlohmann::ordered_json ref =
      nlohmann::ordered_json::parse(read_file(model_dir("smolvlm-256m-instruct") / "TENSORS.json"));
  std::vector<ExpectedTensor> table = expected_tensors(spec_of("smolvlm-256m-instruct"));
  ASSERT_EQ(table.size(), ref["shapes"].size());
  EXPECT_EQ(int64_t(table.size()), ref["tensor_count"].get<int64_t>());
  size_t i = 0;
  for (auto it = ref["shapes"].begin(); it != ref["shapes"].end(); ++it, ++i) {
    EXPECT_EQ(table[i].name, it.key()) << "position " << i;
    EXPECT_EQ(table[i].shape, it.value().get<std::vector<int64_t>>()) << it.key();
  }
}

TEST(Spec, TheTinyCheckpointsHoldExactlyTheirSpec) {
  for (const char* name : {"smolvlm-tiny", "smolvlm-tiny-tied", "llama-tiny"}) {
    auto ck = open_validated(model_dir(name));
    std::vector<ExpectedTensor> table = expected_tensors(spec_of(name));
    EXPECT_EQ(table.size(), ck->tensors().size()) << name;
    for (const ExpectedTensor& e : table) EXPECT_EQ(ck->tensor(e.name).shape, e.shape) << e.name;
  }
}

TEST(Spec, RolesNameTheHfTensors) {
  ModelSpec s = spec_of("llama-tiny");  // hidden 16, 2 heads of 8, 1 kv head, 2 layers, tied
  EXPECT_EQ(s.architecture, "LlamaForCausalLM");
  const ComponentSpec& text = s.component(Component::Text);
  ExpectedTensor k = text.layer_tensor(1, Role::KProj);
  EXPECT_EQ(k.name, "model.layers.1.self_attn.k_proj.weight");
  EXPECT_EQ(k.shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(k.component, Component::Text);
  EXPECT_EQ(text.layer_tensor(0, Role::MlpNorm).name, "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(text.tensor(Role::FinalNorm).name, "model.norm.weight");
  EXPECT_EQ(text.layer_tensor(0, Role::QProj, Param::Bias).presence, Presence::Absent);  // attention_bias false
  ExpectedTensor head = s.component(Component::LmHead).tensor(Role::LmHead);
  EXPECT_EQ(head.presence, Presence::Tied);
  EXPECT_EQ(head.tied_to, "model.embed_tokens.weight");
  EXPECT_FALSE(s.has(Component::Vision));

  ModelSpec v = spec_of("smolvlm-tiny");
  EXPECT_EQ(v.component(Component::Vision).layer_tensor(1, Role::OProj, Param::Bias).name,
            "model.vision_model.encoder.layers.1.self_attn.out_proj.bias");
  EXPECT_EQ(v.component(Component::Connector).tensor(Role::Projection).shape, (std::vector<int64_t>{64, 48 * 4}));
  EXPECT_EQ(v.component(Component::Text).tensor(Role::Embedding).name, "model.text_model.embed_tokens.weight");
  EXPECT_EQ(v.component(Component::LmHead).tensor(Role::LmHead).presence, Presence::Required);
}

TEST(Spec, AskingForARoleTheArchitectureLacksIsInternalError) {
  ModelSpec s = spec_of("llama-tiny");
  expect_error([&] { s.component(Component::Text).layer_tensor(0, Role::QNorm); }, ErrorKind::Internal,
               "the spec has no text q_norm weight in layer 0");
  expect_error([&] { s.component(Component::Text).layer_tensor(2, Role::QProj); }, ErrorKind::Internal, "in layer 2");
  expect_error([&] { s.component(Component::Vision); }, ErrorKind::Internal, "LlamaForCausalLM has no vision component");
}

TEST(Spec, BiasesAreStoredExactlyWhenTheConfigAsksForThem) {
  ModelConfig plain = load_model_config(model_dir("llama-tiny"));
  ModelConfig biased = parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
    j["attention_bias"] = true;
    j["mlp_bias"] = true;
  }), "biased");
  const LlamaConfig& c = plain.as<LlamaConfig>();
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  const int64_t per_layer = q + 2 * kv + c.hidden_size + 2 * c.intermediate_size + c.hidden_size;
  EXPECT_EQ(count_parameters(model_spec(biased)).total() - count_parameters(model_spec(plain)).total(),
            c.num_hidden_layers * per_layer);
  EXPECT_EQ(expected_tensors(model_spec(biased)).size() - expected_tensors(model_spec(plain)).size(),
            size_t(7 * c.num_hidden_layers));
  EXPECT_EQ(model_spec(biased).component(Component::Text).layer_tensor(1, Role::DownProj, Param::Bias).name,
            "model.layers.1.mlp.down_proj.bias");
}

TEST(Spec, EveryRegisteredArchitectureIsFoundByItsNames) {
  std::vector<std::string> names;
  for (const Architecture* a : architectures()) names.push_back(a->name);
  EXPECT_EQ(names, (std::vector<std::string>{"Idefics3ForConditionalGeneration", "LlamaForCausalLM",
                                             "HunYuanDenseV1ForCausalLM"}));
  EXPECT_EQ(&kLlamaForCausalLM, load_model_config(model_dir("llama-tiny")).architecture);
  EXPECT_EQ(&kHunYuanDenseV1ForCausalLM, load_model_config(model_dir("hunyuan-tiny-b")).architecture);
  EXPECT_EQ(&kIdefics3ForConditionalGeneration, load_model_config(model_dir("smolvlm-tiny")).architecture);
}

// ---- checkpoints checked against the spec ----------------------------------------------------------

TEST(SpecValidation, MissingTensor) {
  test::ScratchDir dir("missing");
  test::copy_model("smolvlm-tiny", dir.path());
  rewrite_weights("smolvlm-tiny", dir.path(), [](std::vector<TensorToWrite>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](auto& t) { return t.name == "model.text_model.layers.1.mlp.up_proj.weight"; }),
            v.end());
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "model.safetensors: missing 1 tensor(s) that Idefics3ForConditionalGeneration with this config.json needs: "
               "model.text_model.layers.1.mlp.up_proj.weight");
}

TEST(SpecValidation, WrongShape) {
  test::ScratchDir dir("shape");
  test::copy_model("smolvlm-tiny", dir.path());
  rewrite_weights("smolvlm-tiny", dir.path(), [](std::vector<TensorToWrite>& v) {
    find_tensor(v, "model.text_model.norm.weight")->shape = {8, 8};
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "tensor \"model.text_model.norm.weight\" has shape [8, 8], expected [64]");
}

TEST(SpecValidation, UnexpectedTensor) {
  test::ScratchDir dir("unexpected");
  test::copy_model("llama-tiny", dir.path());
  float extra[2] = {0, 0};
  rewrite_weights("llama-tiny", dir.path(), [&](std::vector<TensorToWrite>& v) {
    v.push_back({"model.layers.9.mlp.up_proj.weight", DType::F32, {2}, extra, 8});
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "1 unexpected tensor(s) that LlamaForCausalLM with this config.json does not have: "
               "model.layers.9.mlp.up_proj.weight");
}

TEST(SpecValidation, BiasTheConfigDoesNotHave) {
  test::ScratchDir dir("bias");
  test::copy_model("llama-tiny", dir.path());
  std::vector<float> bias(8, 0.0f);
  rewrite_weights("llama-tiny", dir.path(), [&](std::vector<TensorToWrite>& v) {
    v.push_back({"model.layers.0.self_attn.k_proj.bias", DType::F32, {8}, bias.data(), 32});
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "unexpected tensor(s) that LlamaForCausalLM with this config.json does not have: "
               "model.layers.0.self_attn.k_proj.bias");
  // With attention_bias the same file lacks the other biases.
  test::write_bytes(dir / "config.json", edited_config("llama-tiny", [](nlohmann::json& j) { j["attention_bias"] = true; }));
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "missing 7 tensor(s) that LlamaForCausalLM with this config.json needs: "
               "model.layers.0.self_attn.q_proj.bias, model.layers.0.self_attn.v_proj.bias");
}

TEST(SpecValidation, LmHeadInTiedModel) {
  test::ScratchDir dir("tiedhead");
  test::copy_model("smolvlm-tiny-tied", dir.path());
  rewrite_weights("smolvlm-tiny-tied", dir.path(), [](std::vector<TensorToWrite>& v) {
    TensorToWrite head = *find_tensor(v, "model.text_model.embed_tokens.weight");
    head.name = "lm_head.weight";
    v.push_back(head);
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::BadInput,
               "(config.json ties lm_head.weight to model.text_model.embed_tokens.weight, so lm_head.weight must not "
               "be stored)");
}

TEST(SpecValidation, IntegerDtype) {
  test::ScratchDir dir("intdtype");
  test::copy_model("smolvlm-tiny", dir.path());
  rewrite_weights("smolvlm-tiny", dir.path(), [](std::vector<TensorToWrite>& v) {
    find_tensor(v, "model.text_model.norm.weight")->dtype = DType::I16;
  });
  expect_error([&] { open_validated(dir.path()); }, ErrorKind::Unsupported,
               "tensor \"model.text_model.norm.weight\" has dtype I16, expected F32, F16 or BF16");
}

}  // namespace
}  // namespace smolvlm
