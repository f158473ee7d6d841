// HunYuanDenseV1ForCausalLM: the config as HF reads it (NTK-alpha RoPE base, qk-norm), the spec with
// query_layernorm / key_layernorm, HF's exact inv_freq buffer, the refusals of what is not
// implemented, and contexts past max_position_embeddings refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/npy.h"
#include "kernels/ops.h"
#include "model/model_test_util.h"
#include "model/registry.h"
#include "model/spec.h"

namespace smolvlm {
namespace {

using test::edited_config;
using test::expect_error;
using test::model_dir;

TEST(HunYuan, ConfigReadsAlphaAndQkNorm) {
  const ModelConfig a = load_model_config(model_dir("hunyuan-tiny-a"));
  EXPECT_STREQ(a.architecture_name(), "HunYuanDenseV1ForCausalLM");
  const LlamaConfig& c = a.decoder();
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.positions_bounded);
  EXPECT_EQ(c.rope_alpha, 1000.0);
  EXPECT_DOUBLE_EQ(c.rope_base(), 10000.0 * std::pow(1000.0, 32.0 / 30.0));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(a.generation.eos_token_ids, (std::vector<int64_t>{1007, 1001}));
  const ModelConfig b = load_model_config(model_dir("hunyuan-tiny-b"));
  EXPECT_EQ(b.decoder().rope_alpha, 50.0);
  EXPECT_FALSE(b.decoder().tie_word_embeddings);
  // The real model's base: 10000 * 1000^(128/126).
  const std::string real = read_file(std::string(SMOLVLM_TEST_DATA) + "/models/hy-mt-1.8b-config.json");
  EXPECT_NEAR(parse_model_config(real, "hy.json").decoder().rope_base(), 1.11588e7, 1e2);
}

// The inverse frequencies the decoder computes are HF's buffer, bit for bit.
TEST(HunYuan, RopeInvFreqIsHfBuffer) {
  for (const char* name : {"hunyuan-tiny-a", "hunyuan-tiny-b"}) {
    const ModelConfig cfg = load_model_config(model_dir(name));
    const LlamaConfig& c = cfg.decoder();
    NpyArray ref = read_npy(model_dir(name) / "rope_inv_freq.npy");
    ASSERT_EQ(ref.numel(), c.head_dim / 2) << name;
    std::vector<float> ours(static_cast<size_t>(c.head_dim / 2));
    rope_inv_freq(c.rope_base(), c.head_dim, ours.data());
    for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_EQ(ours[i], ref.data<float>()[i]) << name << " index " << i;
  }
}

TEST(HunYuan, SpecHasQkNormsAfterOProjAndTiedHead) {
  const ModelSpec spec = model_spec(load_model_config(model_dir("hunyuan-tiny-a")));
  const std::vector<ExpectedTensor> stored = expected_tensors(spec);
  std::vector<std::string> names;
  for (const auto& t : stored) names.push_back(t.name);
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  const auto q = at("model.layers.0.self_attn.query_layernorm.weight");
  ASSERT_LT(q, static_cast<long>(names.size()));
  EXPECT_EQ(names[q - 1], "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(names[q + 1], "model.layers.0.self_attn.key_layernorm.weight");
  EXPECT_EQ(stored[q].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(at("lm_head.weight"), static_cast<long>(names.size()));  // tied: not stored
  EXPECT_NO_THROW(test::open_validated(model_dir("hunyuan-tiny-a")));
  EXPECT_NO_THROW(test::open_validated(model_dir("hunyuan-tiny-b")));
  const ModelSpec untied = model_spec(load_model_config(model_dir("hunyuan-tiny-b")));
  EXPECT_EQ(untied.component(Component::LmHead).tensor(Role::LmHead).presence, Presence::Required);
}

TEST(HunYuan, FullSizeParameterCount) {
  const std::string real = read_file(std::string(SMOLVLM_TEST_DATA) + "/models/hy-mt-1.8b-config.json");
  const ParameterCounts p = count_parameters(model_spec(parse_model_config(real, "hy.json")));
  // embed 120818*2048 + 32 layers * (q 2048² + k,v 2*512*2048 + o 2048² + 3*2048*6144 + 2*2048 + 2*128) + norm
  const int64_t layer = 2048LL * 2048 * 2 + 2LL * 512 * 2048 + 3LL * 2048 * 6144 + 2 * 2048 + 2 * 128;
  EXPECT_EQ(p.total(), 120818LL * 2048 + 32 * layer + 2048);
  EXPECT_EQ(p.of(Component::LmHead), 0);
}

TEST(HunYuan, RefusesWhatIsNotImplemented) {
  auto edited = [](const std::function<void(nlohmann::json&)>& e) {
    return edited_config("hunyuan-tiny-a", e);
  };
  expect_error([&] { parse_model_config(edited([](nlohmann::json& j) { j["rope_scaling"]["type"] = "yarn"; }), "hy.json"); },
               ErrorKind::Unsupported, "hy.json: key \"rope_scaling\" has type \"yarn\"");
  expect_error([&] {
    parse_model_config(edited([](nlohmann::json& j) { j["use_cla"] = true; j["cla_share_factor"] = 2; }), "hy.json");
  }, ErrorKind::Unsupported, "cross-layer attention is not implemented");
  expect_error([&] { parse_model_config(edited([](nlohmann::json& j) { j["hidden_act"] = "gelu"; }), "hy.json"); },
               ErrorKind::Unsupported, "key \"hidden_act\" is \"gelu\"");
  expect_error([&] { parse_model_config(edited([](nlohmann::json& j) { j["rope_scaling"]["alpha"] = -1; }), "hy.json"); },
               ErrorKind::BadInput, "\"alpha\" must be >= 0");
  // HF ignores use_cla with a share factor of 1 and use_qk_norm: accepted, the qk-norm always on.
  const ModelConfig ok = parse_model_config(
      edited([](nlohmann::json& j) { j["use_cla"] = true; j["use_qk_norm"] = false; }), "hy.json");
  EXPECT_TRUE(ok.decoder().qk_norm);
  // "dynamic" without alpha: HF's dynamic NTK, the plain base inside the context.
  const ModelConfig plain =
      parse_model_config(edited([](nlohmann::json& j) { j["rope_scaling"].erase("alpha"); }), "hy.json");
  EXPECT_EQ(plain.decoder().rope_base(), 10000.0);
}

TEST(HunYuan, ContextPastMaxPositionsIsRefused) {
  const ModelConfig cfg = load_model_config(model_dir("hunyuan-tiny-a"));
  const LlamaConfig& c = cfg.decoder();
  EXPECT_NO_THROW(check_context_fits(c, 128));
  expect_error([&] { check_context_fits(c, 129); }, ErrorKind::BadInput,
               "a context of 129 positions is past the model's max_position_embeddings (128)");
  // Llama's RoPE has no limit: any context is computed as HF does.
  const ModelConfig llama = load_model_config(model_dir("llama-tiny"));
  EXPECT_NO_THROW(check_context_fits(llama.decoder(), 100000));
}

}  // namespace
}  // namespace smolvlm
