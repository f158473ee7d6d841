// The companion config files (generation, image processor, processor) and the typed JSON reading
// every config parser uses. config.json of each architecture is tested in tests/model.
#include "io/config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_fields.h"
#include "io_test_util.h"

namespace smolvlm {
namespace {

using test::expect_error;

TEST(ConfigFiles, CompanionFileDefaultsAndValues) {
  GenerationConfig g = parse_generation_config(R"({"eos_token_id": [1, 7], "bos_token_id": 3})", "gen.json");
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(g.bos_token_id, 3);
  EXPECT_FALSE(g.pad_token_id.has_value());
  EXPECT_EQ(parse_generation_config(R"({"eos_token_id": 5})", "gen.json").eos_token_ids, std::vector<int64_t>{5});
  ImageProcessorConfig p = parse_image_processor_config(R"({"size": {"longest_edge": 64}, "image_mean": 0.25})", "pre.json");
  EXPECT_EQ(p.longest_edge, 64);
  EXPECT_FLOAT_EQ(p.image_mean[1], 0.25f);
  EXPECT_EQ(p.max_image_size, 364);  // Idefics3ImageProcessor default
  EXPECT_EQ(parse_processor_config("{}", "proc.json").image_seq_len, 169);
}

TEST(ConfigFields, TypedAccessNamesTheKey) {
  nlohmann::json j = nlohmann::json::parse(R"({"n": 3, "big": 99999999999, "x": null, "sub": {"k": "v"}})");
  ConfigFields f(j, "f.json");
  EXPECT_EQ(f.size("n", 1), 3);
  EXPECT_EQ(f.size("x", 7), 7);  // null takes the fallback
  EXPECT_EQ(f.object("sub").string("k", ""), "v");
  expect_error([&] { f.required_size("big"); }, ErrorKind::BadInput, "f.json: key \"big\" must be in 1..");
  expect_error([&] { f.object("sub").required_integer("k"); }, ErrorKind::BadInput,
               "f.json: sub: key \"k\" must be an integer, got string");
  expect_error([&] { f.required_integer("absent"); }, ErrorKind::BadInput, "key \"absent\" is missing (required)");
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
  expect_error([] { parse_generation_config("[1]", "gen.json"); }, ErrorKind::BadInput,
               "gen.json: expected a JSON object");
}

}  // namespace
}  // namespace smolvlm
