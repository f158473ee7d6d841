#include "model/synth.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "model/model_test_util.h"

namespace smolvlm {
namespace {

using test::expect_error;

using test::model_dir;

size_t entries_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir); it != std::filesystem::directory_iterator(); ++it) ++n;
  return n;
}

TEST(Synth, TinyCheckpointHasHfTableAndCopiesCompanionFiles) {
  test::ScratchDir scratch("synth_tiny");
  SynthResult r = synth_checkpoint(model_dir("smolvlm-tiny"), scratch / "out", {});
  EXPECT_EQ(r.tensors, 59u);
  EXPECT_EQ(r.parameters, 6444528);
  auto synth = test::open_validated(scratch / "out");
  auto real = test::open_validated(model_dir("smolvlm-tiny"));
  ASSERT_EQ(synth->tensors().size(), real->tensors().size());
  for (const auto& [name, t] : real->tensors()) {
    const TensorView& s = synth->tensor(name);
    EXPECT_EQ(s.shape, t.shape) << name;
    EXPECT_EQ(s.dtype, DType::BF16) << name;
  }
  for (const char* f : {"config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json",
                        "chat_template.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_EQ(test::read_bytes(scratch / "out" / f), test::read_bytes(model_dir("smolvlm-tiny") / f)) << f;
  EXPECT_EQ(entries_in(scratch.path()), 1u);  // no temporary folder left behind

  // Values: small around 0 for matrices, around 1 for norm weights, all finite.
  const TensorView& q = synth->tensor("model.text_model.layers.0.self_attn.q_proj.weight");
  const TensorView& norm = synth->tensor("model.text_model.norm.weight");
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < q.numel(); ++i) {
    float v = bf16_to_f32(static_cast<const uint16_t*>(q.data)[i]);
    ASSERT_LT(std::abs(v), 0.1f);
    sum += v;
    sum_sq += double(v) * v;
  }
  double mean = sum / double(q.numel()), sd = std::sqrt(sum_sq / double(q.numel()) - mean * mean);
  EXPECT_LT(std::abs(mean), 0.003);
  EXPECT_NEAR(sd, 0.02, 0.003);
  for (int64_t i = 0; i < norm.numel(); ++i)
    EXPECT_NEAR(bf16_to_f32(static_cast<const uint16_t*>(norm.data)[i]), 1.0f, 0.1f);
}

TEST(Synth, SeedDeterminesValuesAndDtypeIsHonoured) {
  test::ScratchDir scratch("synth_seed");
  SynthOptions opt;
  opt.dtype = DType::F32;
  opt.seed = 7;
  synth_checkpoint(model_dir("llama-tiny") / "config.json", scratch / "a", opt);
  synth_checkpoint(model_dir("llama-tiny"), scratch / "b", opt);
  opt.seed = 8;
  synth_checkpoint(model_dir("llama-tiny"), scratch / "c", opt);
  auto a = test::open_validated(scratch / "a");
  auto b = test::open_validated(scratch / "b");
  auto c = test::open_validated(scratch / "c");
  const TensorView& ta = a->tensor("model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(ta.dtype, DType::F32);
  EXPECT_EQ(std::memcmp(ta.data, b->tensor(ta.name).data, ta.nbytes), 0);
  EXPECT_NE(std::memcmp(ta.data, c->tensor(ta.name).data, ta.nbytes), 0);
  EXPECT_EQ(a->find("lm_head.weight"), nullptr);  // tied
  EXPECT_EQ(a->identity(), b->identity());

  opt.dtype = DType::F16;
  synth_checkpoint(model_dir("smolvlm-tiny-tied"), scratch / "f16", opt);
  auto h = test::open_validated(scratch / "f16");
  for (const auto& [name, t] : h->tensors()) EXPECT_EQ(t.dtype, DType::F16) << name;
  EXPECT_EQ(h->find("lm_head.weight"), nullptr);
}

TEST(Synth, RefusesNonEmptyOutputUnlessForced) {
  test::ScratchDir scratch("synth_force");
  std::filesystem::create_directories(scratch / "out");
  test::write_bytes(scratch / "out" / "keep.txt", "x");
  expect_error([&] { synth_checkpoint(model_dir("llama-tiny"), scratch / "out", {}); }, ErrorKind::BadInput,
               "folder exists and is not empty (replacing it must be asked for)");
  EXPECT_TRUE(std::filesystem::exists(scratch / "out" / "keep.txt"));
  SynthOptions opt;
  opt.force = true;
  synth_checkpoint(model_dir("llama-tiny"), scratch / "out", opt);
  EXPECT_FALSE(std::filesystem::exists(scratch / "out" / "keep.txt"));
  EXPECT_NO_THROW(test::open_validated(scratch / "out"));
  EXPECT_EQ(entries_in(scratch.path()), 1u);
  // An existing empty folder is simply filled.
  std::filesystem::create_directories(scratch / "empty");
  EXPECT_NO_THROW(synth_checkpoint(model_dir("llama-tiny"), scratch / "empty", {}));
}

TEST(Synth, FailureLeavesNothingBehind) {
  test::ScratchDir scratch("synth_fail");
  test::copy_model("smolvlm-tiny", scratch / "src");
  test::write_bytes(scratch / "src" / "processor_config.json", R"({"image_seq_len": 5})");
  std::filesystem::create_directories(scratch / "dest");
  expect_error([&] { synth_checkpoint(scratch / "src", scratch / "dest" / "out", {}); }, ErrorKind::BadInput,
               "image_seq_len 5 does not match");
  EXPECT_EQ(entries_in(scratch / "dest"), 0u);
  expect_error([&] { synth_checkpoint(scratch / "missing", scratch / "dest" / "out", {}); }, ErrorKind::BadInput,
               "no such config file");
}

TEST(SynthCli, WritesAndInfoReadsBack) {
  test::ScratchDir scratch("synth_cli");
  auto r = test::run_cli("synth --config '" + model_dir("smolvlm-tiny-tied").string() + "' --out '" +
                         (scratch / "m").string() + "' --seed 3 --dtype f32 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parameters"].get<int64_t>(), 2084940);
  r = test::run_cli("info --json --model '" + (scratch / "m").string() + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["parameters"]["total"].get<int64_t>(), 2084940);
  EXPECT_EQ(j["dtypes"], nlohmann::json::array({"F32"}));
  r = test::run_cli("synth --config '" + model_dir("smolvlm-tiny-tied").string() + "' --out '" +
                    (scratch / "m").string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("use --force"), std::string::npos) << r.out;
  r = test::run_cli("synth --config '" + model_dir("smolvlm-tiny-tied").string() + "' --out x --dtype q4");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("--dtype: q4 not in {bf16,f16,f32}"), std::string::npos) << r.out;
}

// The real SmolVLM-256M shapes (513 MB): run by the `model_synth_real_size` integration test, which sets
// SMOLVLM_FULL_SYNTH; skipped in the unit run to keep it fast.
TEST(SynthFull, RealConfigMatchesHfTensorTableAndCounts) {
  if (!std::getenv("SMOLVLM_FULL_SYNTH")) GTEST_SKIP() << "set SMOLVLM_FULL_SYNTH=1 (integration test)";
  test::ScratchDir scratch("synth_real");
  auto r = test::run_cli("synth --config '" + model_dir("smolvlm-256m-instruct").string() + "' --out '" +
                         (scratch / "real").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = test::run_cli("info --json --model '" + (scratch / "real").string() + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["parameters"]["total"].get<int64_t>(), 256484928);
  EXPECT_EQ(info["parameters"]["vision"].get<int64_t>(), 86433024);
  EXPECT_EQ(info["parameters"]["connector"].get<int64_t>(), 7077888);
  EXPECT_EQ(info["parameters"]["text"].get<int64_t>(), 134588736);
  EXPECT_EQ(info["parameters"]["lm_head"].get<int64_t>(), 28385280);
  EXPECT_EQ(info["dtypes"], nlohmann::json::array({"BF16"}));

  nlohmann::json ref = nlohmann::json::parse(read_file(model_dir("smolvlm-256m-instruct") / "TENSORS.json"));
  SafetensorsFile file(scratch / "real" / "model.safetensors");
  ASSERT_EQ(file.tensors().size(), ref["shapes"].size());
  for (const TensorView& t : file.tensors()) {
    ASSERT_TRUE(ref["shapes"].contains(t.name)) << t.name;
    EXPECT_EQ(t.shape, ref["shapes"][t.name].get<std::vector<int64_t>>()) << t.name;
    EXPECT_EQ(dtype_name(t.dtype), ref["dtype"].get<std::string>()) << t.name;
  }
}

}  // namespace
}  // namespace smolvlm
