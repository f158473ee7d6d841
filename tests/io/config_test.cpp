#include "io/config.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace smolvlm {
namespace {

using test::data_dir;
using test::expect_error;

using test::model_dir;

std::string model_config_text(const char* name) { return read_file(model_dir(name) / "config.json"); }

// config.json of a bundled model with one edit applied.
std::string edited_config(const char* model, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(model_config_text(model));
  edit(j);
  return j.dump();
}

TEST(Config, SmolvlmTiny) {
  ModelConfig c = load_model_config(model_dir("smolvlm-tiny"));
  EXPECT_EQ(c.arch, Architecture::Idefics3);
  EXPECT_EQ(c.text.hidden_size, 64);
  EXPECT_EQ(c.text.num_hidden_layers, 2);
  EXPECT_EQ(c.text.num_attention_heads, 4);
  EXPECT_EQ(c.text.num_key_value_heads, 2);
  EXPECT_EQ(c.text.head_dim, 16);
  EXPECT_EQ(c.text.intermediate_size, 128);
  EXPECT_EQ(c.text.vocab_size, 49280);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 100000.0);
  EXPECT_DOUBLE_EQ(c.text.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.text.rope_type, "default");
  EXPECT_EQ(c.vision.image_size, 64);
  EXPECT_EQ(c.vision.patch_size, 8);
  EXPECT_EQ(c.vision.hidden_size, 48);
  EXPECT_EQ(c.vision.num_attention_heads, 4);
  EXPECT_EQ(c.vision.intermediate_size, 96);
  EXPECT_EQ(c.vision.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.scale_factor, 2);
  EXPECT_EQ(c.image_token_id, 49190);
  EXPECT_EQ(c.image_tokens_per_tile(), 16);
  EXPECT_FALSE(c.tie_word_embeddings);
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
  EXPECT_TRUE(c.tie_word_embeddings);          // top-level true
  EXPECT_FALSE(c.text.tie_word_embeddings);    // text_config false, not consulted
  EXPECT_EQ(c.text.head_dim, 8);               // explicit, differs from 40 / 6
  EXPECT_EQ(c.scale_factor, 3);
  EXPECT_EQ(c.image_tokens_per_tile(), 4);
  EXPECT_EQ(c.generation.eos_token_ids, (std::vector<int64_t>{49279, 31828}));
  // The reverse: top-level false, text_config true -> not tied.
  ModelConfig r = parse_model_config(edited_config("smolvlm-tiny-tied", [](nlohmann::json& j) {
    j["tie_word_embeddings"] = false;
    j["text_config"]["tie_word_embeddings"] = true;
  }), "edited");
  EXPECT_FALSE(r.tie_word_embeddings);
}

TEST(Config, LlamaDefaults) {
  ModelConfig c = load_model_config(model_dir("llama-tiny"));
  EXPECT_EQ(c.arch, Architecture::Llama);
  EXPECT_EQ(c.text.head_dim, 8);  // key absent: hidden / heads
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 10000.0);  // key absent
  EXPECT_TRUE(c.tie_word_embeddings);
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
  EXPECT_EQ(d.arch, Architecture::Llama);  // from model_type
  EXPECT_EQ(d.text.num_key_value_heads, 2);
  EXPECT_FALSE(d.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(d.text.rms_norm_eps, 1e-6);
  EXPECT_EQ(d.text.rope_type, "linear");
  EXPECT_DOUBLE_EQ(d.text.rope_factor, 2.0);
}

TEST(Config, GenerationFallsBackToConfigWhenFileAbsent) {
  test::ScratchDir dir("genfallback");
  test::write_bytes(dir / "config.json", model_config_text("llama-tiny"));
  ModelConfig c = load_model_config(dir.path());
  EXPECT_EQ(c.generation.eos_token_ids, std::vector<int64_t>{2});  // config.json's eos_token_id
  EXPECT_EQ(c.generation.bos_token_id, 1);
}

TEST(Config, RealSmolvlm256mParameterCounts) {
  ModelConfig c = load_model_config(model_dir("smolvlm-256m-instruct"));
  EXPECT_EQ(c.scale_factor, 4);
  EXPECT_EQ(c.text.num_key_value_heads, 3);
  EXPECT_EQ(c.image_tokens_per_tile(), 64);
  EXPECT_EQ(c.image_processor->longest_edge, 2048);
  EXPECT_EQ(c.image_processor->max_image_size, 512);
  ParameterCounts p = count_parameters(expected_tensors(c));
  EXPECT_EQ(p.vision, 86433024);
  EXPECT_EQ(p.connector, 7077888);
  EXPECT_EQ(p.text, 134588736);
  EXPECT_EQ(p.lm_head, 28385280);
  EXPECT_EQ(p.total(), 256484928);
}

TEST(Config, TinyParameterCountsMatchHf) {
  EXPECT_EQ(count_parameters(expected_tensors(load_model_config(model_dir("smolvlm-tiny")))).total(), 6444528);
  EXPECT_EQ(count_parameters(expected_tensors(load_model_config(model_dir("smolvlm-tiny-tied")))).total(), 2084940);
  EXPECT_EQ(count_parameters(expected_tensors(load_model_config(model_dir("llama-tiny")))).total(), 793936);
}

TEST(Config, ExpectedTensorsEqualHfTableOfRealConfig) {
  nlohmann::ordered_json ref =
      nlohmann::ordered_json::parse(read_file(model_dir("smolvlm-256m-instruct") / "TENSORS.json"));
  std::vector<ExpectedTensor> table = expected_tensors(load_model_config(model_dir("smolvlm-256m-instruct")));
  ASSERT_EQ(table.size(), ref["shapes"].size());
  EXPECT_EQ(int64_t(table.size()), ref["tensor_count"].get<int64_t>());
  size_t i = 0;
  for (auto it = ref["shapes"].begin(); it != ref["shapes"].end(); ++it, ++i) {
    EXPECT_EQ(table[i].name, it.key()) << "position " << i;
    EXPECT_EQ(table[i].shape, it.value().get<std::vector<int64_t>>()) << it.key();
  }
}

// ---- malformed configs: each names the file and the problem -------------------------------------

TEST(ConfigErrors, MissingHiddenSize) {
  expect_error([] { parse_model_config(edited_config("smolvlm-tiny", [](nlohmann::json& j) {
                     j["text_config"].erase("hidden_size"); }), "cfg.json"); },
               ErrorKind::BadInput, "cfg.json: text_config: key \"hidden_size\" is missing");
}

TEST(ConfigErrors, UnknownArchitecture) {
  expect_error([] { parse_model_config(edited_config("llama-tiny", [](nlohmann::json& j) {
                     j["architectures"] = {"MistralForCausalLM"}; }), "cfg.json"); },
               ErrorKind::Unsupported, "architecture \"MistralForCausalLM\" is not supported");
  expect_error([] { parse_model_config(R"({"model_type": "gpt2"})", "cfg.json"); }, ErrorKind::Unsupported,
               "model_type \"gpt2\"");
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

TEST(ConfigErrors, CompanionFiles) {
  expect_error([] { parse_generation_config(R"({"eos_token_id": "2"})", "gen.json"); }, ErrorKind::BadInput,
               "gen.json: key \"eos_token_id\" must be an integer");
  expect_error([] { parse_generation_config(R"({"eos_token_id": [1, -2]})", "gen.json"); }, ErrorKind::BadInput,
               "must not be negative");
  expect_error([] { parse_image_processor_config(R"({"size": {"height": 3}})", "pre.json"); }, ErrorKind::BadInput,
               "pre.json: size: key \"longest_edge\" is missing");
  expect_error([] { parse_image_processor_config(R"({"image_std": [0.5, 0, 0.5]})", "pre.json"); },
               ErrorKind::BadInput, "must not contain 0");
  expect_error([] { parse_image_processor_config(R"({"image_mean": [0.5, 0.5]})", "pre.json"); },
               ErrorKind::BadInput, "list of 3 numbers");
  expect_error([] { parse_processor_config(R"({"image_seq_len": -1})", "proc.json"); }, ErrorKind::BadInput,
               "proc.json: key \"image_seq_len\"");
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
