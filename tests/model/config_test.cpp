// config.json of each architecture, read through the registry: HF's defaults and derived values, the
// flags HF actually reads, and the messages of malformed configs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/idefics3_config.h"
#include "model/llama_config.h"
#include "model/model_test_util.h"
#include "model/registry.h"
#include "runtime/model.h"

namespace smolvlm {
namespace {

using test::edited_config;
using test::expect_error;
using test::model_config_text;
using test::model_dir;

TEST(Config, SmolvlmTiny) {
  ModelConfig c = load_model_config(model_dir("smolvlm-tiny"));
  EXPECT_STREQ(c.architecture_name(), "Idefics3ForConditionalGeneration");
  const Idefics3Config& i = c.as<Idefics3Config>();
  EXPECT_EQ(i.text.hidden_size, 64);
  EXPECT_EQ(i.text.num_hidden_layers, 2);
  EXPECT_EQ(i.text.num_attention_heads, 4);
  EXPECT_EQ(i.text.num_key_value_heads, 2);
  EXPECT_EQ(i.text.head_dim, 16);
  EXPECT_EQ(i.text.intermediate_size, 128);
  EXPECT_EQ(i.text.vocab_size, 49280);
  EXPECT_DOUBLE_EQ(i.text.rope_theta, 100000.0);
  EXPECT_DOUBLE_EQ(i.text.rms_norm_eps, 1e-5);
  EXPECT_EQ(i.text.rope_type, "default");
  EXPECT_EQ(i.vision.image_size, 64);
  EXPECT_EQ(i.vision.patch_size, 8);
  EXPECT_EQ(i.vision.hidden_size, 48);
  EXPECT_EQ(i.vision.num_attention_heads, 4);
  EXPECT_EQ(i.vision.intermediate_size, 96);
  EXPECT_EQ(i.vision.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(i.scale_factor, 2);
  EXPECT_EQ(i.image_token_id, 49190);
  EXPECT_EQ(i.image_tokens_per_tile(), 16);
  EXPECT_FALSE(i.tie_word_embeddings);
  EXPECT_EQ(c.generation.eos_token_ids, std::vector<int64_t>{49279});
  EXPECT_EQ(c.generation.bos_token_id, 0);
  EXPECT_EQ(c.generation.pad_token_id, 2);
  ASSERT_TRUE(c.image_processor.has_value());
  EXPECT_EQ(c.image_processor->longest_edge, 128);
  EXPECT_EQ(c.image_processor->max_image_size, 64);
  EXPECT_EQ(c.image_processor->resample, 1);
  EXPECT_FLOAT_EQ(c.image_processor->image_std[2], 0.5f);
  ASSERT_TRUE(c.processor.has_value());
  EXPECT_EQ(c.processor->image_seq_len, 16);
}

TEST(Config, TiedUsesTopLevelFlagOnlyAndExplicitHeadDim) {
  ModelConfig c = load_model_config(model_dir("smolvlm-tiny-tied"));
  const Idefics3Config& i = c.as<Idefics3Config>();
  EXPECT_TRUE(i.tie_word_embeddings);          // top-level true
  EXPECT_FALSE(i.text.tie_word_embeddings);    // text_config false, not consulted
  EXPECT_EQ(i.text.head_dim, 8);               // explicit, differs from 40 / 6
  EXPECT_EQ(i.scale_factor, 3);
  EXPECT_EQ(i.image_tokens_per_tile(), 4);
  EXPECT_EQ(c.generation.eos_token_ids, (std::vector<int64_t>{49279, 31828}));
  // The reverse: top-level false, text_config true -> not tied.
  ModelConfig r = parse_model_config(edited_config("smolvlm-tiny-tied", [](nlohmann::json& j) {
    j["tie_word_embeddings"] = false;
    j["text_config"]["tie_word_embeddings"] = true;
  }), "edited");
  EXPECT_FALSE(r.as<Idefics3Config>().tie_word_embeddings);
}

TEST(Config, LlamaDefaults) {
  ModelConfig c = load_model_config(model_dir("llama-tiny"));
  EXPECT_STREQ(c.architecture_name(), "LlamaForCausalLM");
  const LlamaConfig& l = c.as<LlamaConfig>();
  EXPECT_EQ(l.head_dim, 8);  // key absent: hidden / heads
  EXPECT_DOUBLE_EQ(l.rope_theta, 10000.0);  // key absent
  EXPECT_TRUE(l.tie_word_embeddings);
  EXPECT_EQ(c.generation.eos_token_ids, (std::vector<int64_t>{2, 4211}));
  EXPECT_FALSE(c.image_processor.has_value());
  // num_key_value_heads absent -> num_attention_heads; tie absent -> false; eps absent -> 1e-6.
  ModelConfig d = parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
    j.erase("num_key_value_heads");
    j.erase("tie_word_embeddings");
    j.erase("rms_norm_eps");
    j.erase("architectures");
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  }), "edited");
  EXPECT_STREQ(d.architecture_name(), "LlamaForCausalLM");  // from model_type
  const LlamaConfig& e = d.as<LlamaConfig>();
  EXPECT_EQ(e.num_key_value_heads, 2);
  EXPECT_FALSE(e.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(e.rms_norm_eps, 1e-6);
  EXPECT_EQ(e.rope_type, "linear");
  EXPECT_DOUBLE_EQ(e.rope_factor, 2.0);
}

TEST(Config, ReadAsAnotherArchitectureIsInternalError) {
  ModelConfig c = load_model_config(model_dir("llama-tiny"));
  expect_error([&] { c.as<Idefics3Config>(); }, ErrorKind::Internal, "LlamaForCausalLM config read as");
}

TEST(Config, LlamaRefusesRopeTypesItDoesNotImplementNamingKeyAndValue) {
  const LlamaConfig ok = load_model_config(model_dir("llama-tiny")).as<LlamaConfig>();
  EXPECT_NO_THROW(check_llama_supported(ok, "cfg.json"));
  ModelConfig linear = parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  }), "cfg.json");
  expect_error([&] { check_llama_supported(linear.as<LlamaConfig>(), "cfg.json"); }, ErrorKind::Unsupported,
               "cfg.json: key \"rope_scaling\" has rope_type \"linear\"; only the \"default\" RoPE is implemented");
  ModelConfig gelu = parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) { j["hidden_act"] = "gelu"; }),
                                        "cfg.json");
  expect_error([&] { check_llama_supported(gelu.as<LlamaConfig>(), "cfg.json"); }, ErrorKind::Unsupported,
               "key \"hidden_act\" is \"gelu\"");
}

TEST(Config, LoadingAModelWithAnUnimplementedRopeIsUnsupported) {
  test::ScratchDir dir("rope");
  test::copy_model("llama-tiny", dir.path());
  test::write_bytes(dir / "config.json", edited_config("llama-tiny", [](nlohmann::json& j) {
    j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  }));
  expect_error([&] { Model::load(dir.path()); }, ErrorKind::Unsupported,
               "config.json: key \"rope_scaling\" has rope_type \"dynamic\"; only the \"default\" RoPE is implemented");
}

TEST(Config, GenerationFallsBackToConfigWhenFileAbsent) {
  test::ScratchDir dir("genfallback");
  test::write_bytes(dir / "config.json", model_config_text("llama-tiny"));
  ModelConfig c = load_model_config(dir.path());
  EXPECT_EQ(c.generation.eos_token_ids, std::vector<int64_t>{2});  // config.json's eos_token_id
  EXPECT_EQ(c.generation.bos_token_id, 1);
}

TEST(Config, RealSmolvlm256m) {
  ModelConfig c = load_model_config(model_dir("smolvlm-256m-instruct"));
  const Idefics3Config& i = c.as<Idefics3Config>();
  EXPECT_EQ(i.scale_factor, 4);
  EXPECT_EQ(i.text.num_key_value_heads, 3);
  EXPECT_EQ(i.image_tokens_per_tile(), 64);
  EXPECT_EQ(c.image_processor->longest_edge, 2048);
  EXPECT_EQ(c.image_processor->max_image_size, 512);
}

// ---- malformed configs: each names the file and the problem -------------------------------------

TEST(ConfigErrors, MissingHiddenSize) {
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["text_config"].erase("hidden_size"); }), "cfg.json"); },
               ErrorKind::BadInput, "cfg.json: text_config: key \"hidden_size\" is missing");
}

TEST(ConfigErrors, UnknownArchitectureListsTheKnownOnes) {
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
                     j["architectures"] = {"MistralForCausalLM"}; }), "cfg.json"); },
               ErrorKind::Unsupported,
               "architecture \"MistralForCausalLM\" is not supported (supported: Idefics3ForConditionalGeneration, "
               "LlamaForCausalLM, HunYuanDenseV1ForCausalLM)");
  expect_error([] { parse_model_config(R"({"model_type": "gpt2"})", "cfg.json"); }, ErrorKind::Unsupported,
               "model_type \"gpt2\" is not supported (supported: idefics3, llama, hunyuan_v1_dense)");
  expect_error([] { parse_model_config(R"({"hidden_size": 4})", "cfg.json"); }, ErrorKind::BadInput,
               "neither \"architectures\" nor \"model_type\"");
}

TEST(ConfigErrors, WrongTypes) {
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) { j["hidden_size"] = "16"; }),
                                       "cfg.json"); },
               ErrorKind::BadInput, "key \"hidden_size\" must be an integer, got string");
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) { j["hidden_size"] = 16.5; }),
                                       "cfg.json"); },
               ErrorKind::BadInput, "key \"hidden_size\" must be an integer, got a fraction");
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) { j["rope_theta"] = "x"; }),
                                       "cfg.json"); },
               ErrorKind::BadInput, "key \"rope_theta\" must be a number");
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
                     j["tie_word_embeddings"] = 1; }), "cfg.json"); },
               ErrorKind::BadInput, "key \"tie_word_embeddings\" must be true or false");
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["vision_config"] = 3; }), "cfg.json"); },
               ErrorKind::BadInput, "key \"vision_config\" must be an object");
}

TEST(ConfigErrors, BadValues) {
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) { j["hidden_size"] = 0; }),
                                       "cfg.json"); },
               ErrorKind::BadInput, "key \"hidden_size\" must be in 1..");
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
                     j["num_key_value_heads"] = 3; j["num_attention_heads"] = 4; }), "cfg.json"); },
               ErrorKind::BadInput, "must be a multiple of num_key_value_heads");
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) { j["scale_factor"] = 3; }),
                                       "cfg.json"); },
               ErrorKind::BadInput, "must divide the patch grid side");
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["vision_config"]["num_attention_heads"] = 5; }), "cfg.json"); },
               ErrorKind::BadInput, "vision_config: hidden_size (48) must be divisible by num_attention_heads (5)");
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["vision_config"]["patch_size"] = 7; }), "cfg.json"); },
               ErrorKind::BadInput, "image_size (64) must be a multiple of patch_size (7)");
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["image_token_id"] = 50000; }), "cfg.json"); },
               ErrorKind::BadInput, "image_token_id");
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
                     j["rope_scaling"] = {{"factor", 2.0}}; }), "cfg.json"); },
               ErrorKind::BadInput, "neither \"rope_type\" nor \"type\"");
}

TEST(ConfigErrors, NotJsonOrNotObject) {
  expect_error([] { parse_model_config("{\"a\": ", "cfg.json"); }, ErrorKind::BadInput, "cfg.json: invalid JSON");
  expect_error([] { parse_model_config("[1, 2]", "cfg.json"); }, ErrorKind::BadInput,
               "cfg.json: expected a JSON object");
}

TEST(ConfigErrors, ProcessorImageSeqLenMustMatchConfig) {
  test::ScratchDir dir("seqlen");
  test::copy_model("smolvlm-tiny", dir.path());
  test::write_bytes(dir / "processor_config.json", R"({"image_seq_len": 64})");
  expect_error([&] { load_model_config(dir.path()); }, ErrorKind::BadInput,
               "image_seq_len 64 does not match config.json");
}

TEST(ConfigErrors, MissingFolderOrConfig) {
  test::ScratchDir dir("noconfig");
  expect_error([&] { load_model_config(dir.path()); }, ErrorKind::BadInput, "no config.json in this folder");
}

}  // namespace
}  // namespace smolvlm
