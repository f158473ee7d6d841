// End to end through the CLI: image files + prompt (caption) or a text prompt (generate) give the
// golden token ids, and --dump writes the golden stages (pixel_values bit-exact, the rest within 1e-4).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "io/npy.h"
#include "kernels/cpu.h"
#include "model/golden_util.h"
#include "test_util.h"

namespace smolvlm {
namespace {

using test::Golden;

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("smolvlm_cli_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

nlohmann::json run_json(const std::string& args) {
  const test::CommandResult r = test::run_cli(args, /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
  return nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
}

class CaptionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptionGolden, ImageFilesAndPromptGiveTheGoldenTokens) {
  const Golden g = test::load_golden(GetParam());
  const auto dump = temp_dir(g.name);
  std::string args = "caption --model " + quoted(g.model_dir().string());
  for (const auto& image : g.spec["images"])
    args += " " + quoted((test::data_dir() / "image" / "model_images" /
                          std::filesystem::path(image.get<std::string>()).filename()).string());
  args += " --prompt " + quoted(g.spec["prompt"].get<std::string>());
  if (!g.spec["do_image_splitting"].get<bool>()) args += " --no-split";
  args += " --max-new-tokens 8 --threads 2 --json --dump " + quoted(dump.string());
  const nlohmann::json out = run_json(args);
  EXPECT_EQ(out["token_ids"].get<std::vector<int64_t>>(), g.npy("generated_ids.npy").to_vector<int64_t>());
  EXPECT_EQ(out["prompt_tokens"].get<int64_t>(), g.spec["prompt_tokens"].get<int64_t>());

  int64_t tiles = 0;
  const std::vector<float> pixels = test::golden_pixels(g, &tiles);
  const NpyArray dumped = read_npy(dump / "pixel_values.npy");
  ASSERT_EQ(dumped.numel(), static_cast<int64_t>(pixels.size()));
  EXPECT_EQ(std::memcmp(dumped.data<float>(), pixels.data(), pixels.size() * sizeof(float)), 0) << "pixel_values";
  for (const char* name : {"vision_last_hidden", "image_hidden_states"}) {
    const NpyArray ref = g.npy(std::string(name) + ".npy"), got = read_npy(dump / (std::string(name) + ".npy"));
    ASSERT_EQ(got.shape, ref.shape) << name;
    EXPECT_LE(test::max_abs_diff(got.data<float>(), ref.data<float>(), ref.numel()), 1e-4f) << name;
  }
  const NpyArray ids = read_npy(dump / "generated_ids.npy"), steps = read_npy(dump / "step_logits.npy");
  EXPECT_EQ(ids.to_vector<int64_t>(), g.npy("generated_ids.npy").to_vector<int64_t>());
  EXPECT_EQ(steps.shape.at(0), ids.numel());
  std::filesystem::remove_all(dump);
}

INSTANTIATE_TEST_SUITE_P(Goldens, CaptionGolden,
                         ::testing::Values("vlm_split_landscape", "vlm_nosplit_landscape", "vlm_two_images",
                                           "vlm_gray_png", "vlm_rgba_png", "vlm_jpeg", "vlm_split_portrait",
                                           "vlm_tiny_upscaled", "tied_split_tall_jpeg", "tied_nosplit_square",
                                           "tied_two_images", "tied_rgba_png", "tied_gray_nosplit"),
                         [](const auto& info) { return info.param; });

class GenerateGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(GenerateGolden, PromptGivesTheGoldenTokens) {
  const Golden g = test::load_golden(GetParam());
  std::string args = "generate --model " + quoted(g.model_dir().string());
  if (g.spec.contains("prompt") && g.spec["prompt"].is_string()) {
    args += " --prompt " + quoted(g.spec["prompt"].get<std::string>());
  } else {
    const auto& content = g.spec["messages"].at(0)["content"];
    args += " --chat --prompt " + quoted(content.is_string() ? content.get<std::string>()
                                                              : content.at(0)["text"].get<std::string>());
  }
  args += " --max-new-tokens 8 --json";
  const nlohmann::json out = run_json(args);
  EXPECT_EQ(out["token_ids"].get<std::vector<int64_t>>(), g.npy("generated_ids.npy").to_vector<int64_t>());
  EXPECT_EQ(out["prompt_tokens"].get<int64_t>(), g.spec["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(out["stopped_on_eos"].get<bool>(), g.spec["stopped_on_eos"].get<bool>());
}

INSTANTIATE_TEST_SUITE_P(Goldens, GenerateGolden,
                         ::testing::Values("llama_chat_single", "llama_eos_stop", "llama_raw_unicode",
                                           "llama_single_token", "tied_text_chat_single", "tied_text_eos_stop",
                                           "tied_text_raw_unicode", "tied_text_single_token"),
                         [](const auto& info) { return info.param; });

TEST(CliErrors, CleanErrorsWithExitCodes) {
  const auto tiny = (test::data_dir() / "models" / "smolvlm-tiny").string();
  const auto llama = (test::data_dir() / "models" / "llama-tiny").string();
  auto r = test::run_cli("caption --model " + quoted(tiny) + " /nonexistent/image.png");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("/nonexistent/image.png"), std::string::npos) << r.out;
  r = test::run_cli("caption --model " + quoted(llama) + " " +
                    quoted((test::data_dir() / "image" / "model_images" / "tiny.png").string()));
  EXPECT_EQ(r.exit_code, 4) << r.out;  // unsupported: text-only model
  r = test::run_cli("generate --model " + quoted(llama) + " --prompt 'hello world, how are you today?' --ctx 2");
  EXPECT_EQ(r.exit_code, 6) << r.out;  // state: the prompt does not fit the context
  r = test::run_cli("generate --model " + quoted(llama) + " --prompt hello --top-p 0");
  EXPECT_EQ(r.exit_code, 3) << r.out;
}

// `smolvlm bench` on the tiny SmolVLM, one tile, short caption and decode, plus `extra` flags: its
// JSON (one indented object), or an empty object after a failed expectation on the exit code.
nlohmann::json run_bench_json(const std::string& extra) {
  const auto tiny = (test::data_dir() / "models" / "smolvlm-tiny").string();
  const test::CommandResult r = test::run_cli("bench --model " + quoted(tiny) + " --no-split --json --threads 2 " +
                                                  "--decode-tokens 2 --caption-tokens 1 " + extra,
                                              /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// `bench` reports every stage; vision both as the caption's cold pass and as warm passes, whose
// best and median it orders consistently.
TEST(CliBench, ReportsColdAndWarmVisionAndEveryStage) {
  const nlohmann::json out = run_bench_json("--no-ceilings");
  for (const char* key : {"load_s", "preprocess_s", "vision_cold_s_per_tile", "vision_s_per_tile",
                          "vision_median_s_per_tile", "vision_gflops", "time_to_first_token_s", "caption_s_incl_load",
                          "prefill_tok_s_81", "prefill_tok_s_1141", "decode_tok_s", "peak_rss_mib"}) {
    ASSERT_TRUE(out.contains(key)) << key;
    EXPECT_GT(out[key].get<double>(), 0.0) << key;
  }
  EXPECT_EQ(out["tiles"].get<int64_t>(), 1);
  EXPECT_EQ(out["caption_new_tokens"].get<int64_t>(), 1);
  const int64_t passes = out["vision_warm_passes"].get<int64_t>();
  EXPECT_GE(passes, 1);
  EXPECT_LE(passes, 3);
  EXPECT_LE(out["vision_s_per_tile"].get<double>(), out["vision_median_s_per_tile"].get<double>());
  EXPECT_FALSE(out.contains("ceilings"));  // --no-ceilings
  EXPECT_GT(out["caption_s_incl_load"].get<double>(), out["vision_cold_s_per_tile"].get<double>());
  // Decode: the mean rate and the best token, which can be no slower than the mean (equal when one
  // token is timed, but for the rounding of the two divisions).
  ASSERT_TRUE(out.contains("decode_best_gb_s") && out.contains("decode_best_token_s"));
  EXPECT_GE(out["decode_best_gb_s"].get<double>(), out["decode_gb_s"].get<double>() * (1 - 1e-12));
  EXPECT_EQ(out["weight_memory"].get<std::string>(), "read") << "a small model fits in memory";
  EXPECT_NEAR(out["decode_best_gb_s"].get<double>() * out["decode_best_token_s"].get<double>(),
              out["decode_gb_s"].get<double>() / out["decode_tok_s"].get<double>(), 1e-6);
}

// With the ceilings, OpenBLAS (where installed) is sampled twice before each warm vision pass and
// each prefill and four times at the end, in child processes, and every fraction is reported.
TEST(CliBench, SamplesTheCeilingsBesideThePasses) {
  const nlohmann::json out = run_bench_json("");
  ASSERT_TRUE(out.contains("ceilings") && out.contains("fractions")) << out.dump();
  const nlohmann::json& c = out["ceilings"];
  for (const char* key : {"triad_gb_s", "read_gb_s"}) EXPECT_GT(c[key].get<double>(), 0.0) << key;
  const std::string peak = "fma_peak_gflops_" + out["kernel_path"].get<std::string>();
  EXPECT_GT(c[peak].get<double>(), 0.0) << peak;
  for (const char* key : {"vision_of_fma_peak", "decode_of_triad", "decode_of_read", "decode_mean_of_read"})
    EXPECT_GT(out["fractions"][key].get<double>(), 0.0) << key;
  // The read ceiling is a best pass: the best token is what is set against it, the mean beside it.
  EXPECT_NEAR(out["fractions"]["decode_of_read"].get<double>(),
              out["decode_best_gb_s"].get<double>() / c["read_gb_s"].get<double>(), 1e-9);
  EXPECT_NEAR(out["fractions"]["decode_mean_of_read"].get<double>(),
              out["decode_gb_s"].get<double>() / c["read_gb_s"].get<double>(), 1e-9);
  // The read ceiling measured just before and after the decode tokens is reported, with the mean
  // decode's fraction of it.
  ASSERT_TRUE(c.contains("read_gb_s_beside_decode") && c["read_gb_s_beside_decode"].is_number()) << c.dump();
  EXPECT_NEAR(out["fractions"]["decode_mean_of_read_beside"].get<double>(),
              out["decode_gb_s"].get<double>() / c["read_gb_s_beside_decode"].get<double>(), 1e-9);
  if (!c.contains("openblas_sgemm_gflops")) GTEST_SKIP() << "libopenblas is not installed";
  EXPECT_GT(c["openblas_sgemm_gflops"].get<double>(), 0.0);
  EXPECT_EQ(c["openblas_samples"].get<int64_t>(), 2 * out["vision_warm_passes"].get<int64_t>() + 2 * 2 + 4);
  EXPECT_NEAR(out["fractions"]["vision_of_openblas"].get<double>(),
              out["vision_gflops"].get<double>() / c["openblas_sgemm_gflops"].get<double>(), 1e-9);
  EXPECT_TRUE(out["fractions"].contains("prefill_1141_of_openblas"));
}

// Precision fast with the ceilings on every CPU: it succeeds (exit 0, checked by run_bench_json) and
// reports the ceilings and fractions either way; the bf16 peak and its fractions appear exactly where
// the CPU has fast's bf16 products (the avx512 path), never on any other path.
TEST(CliBench, FastPrecisionMeasuresTheCeilingsTheCpuHas) {
  const nlohmann::json out = run_bench_json("--precision fast");
  ASSERT_TRUE(out.contains("ceilings") && out.contains("fractions")) << out.dump();
  const nlohmann::json& c = out["ceilings"];
  EXPECT_TRUE(out["fractions"].contains("decode_of_read"));
  const bool bf16 = c.contains("bf16_dot_peak_gflops");
  EXPECT_EQ(out["fractions"].contains("vision_of_bf16_dot_peak"), bf16);
  if (out["kernel_path"].get<std::string>() != "avx512") {
    EXPECT_FALSE(bf16) << "no bf16 products off avx512";
  }
}

// The tokenizer loads on a second thread while the model and images load (with one thread, on first
// use): its errors still end the command with the same message and exit code either way.
TEST(CliErrors, BrokenTokenizerIsACleanErrorWhereverItLoads) {
  const auto tiny = test::data_dir() / "models" / "smolvlm-tiny";
  const auto dir = temp_dir("broken_tokenizer");
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(tiny))
    if (e.path().filename() != "tokenizer.json") std::filesystem::create_symlink(e.path(), dir / e.path().filename());
  test::write_text_file(dir / "tokenizer.json", "{\"model\": 3");
  const auto image = quoted((test::data_dir() / "image" / "model_images" / "tiny.png").string());
  for (const char* threads : {"1", "2"}) {
    auto r = test::run_cli("caption --threads " + std::string(threads) + " --max-new-tokens 1 --model " +
                           quoted(dir.string()) + " " + image);
    EXPECT_EQ(r.exit_code, 3) << threads << " threads: " << r.out;
    EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
    r = test::run_cli("generate --threads " + std::string(threads) + " --max-new-tokens 1 --prompt hi --model " +
                      quoted(dir.string()));
    EXPECT_EQ(r.exit_code, 3) << threads << " threads: " << r.out;
    EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace smolvlm

namespace smolvlm {
namespace {

// SMOLVLM_KERNELS picks the kernels of a command without --kernels; --kernels wins over it; a path the
// CPU cannot run or an unknown name is a clean error naming the variable.
TEST(CliKernels, EnvironmentPicksThePathWhereNoFlagDoes) {
  const auto llama = (test::data_dir() / "models" / "llama-tiny").string();
  const std::string args = "generate --json --max-new-tokens 2 --prompt hi --model " + quoted(llama);
  const auto path_of = [](const test::CommandResult& r) {
    return nlohmann::json::parse(r.out)["timings"]["kernel_path"].get<std::string>();
  };
  auto r = test::run_cli(args, false, "SMOLVLM_KERNELS=scalar ");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(path_of(r), "scalar");
  const std::string best = kernel_path_name(best_kernel_path());
  r = test::run_cli(args + " --kernels " + best, false, "SMOLVLM_KERNELS=scalar ");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(path_of(r), best);
  r = test::run_cli(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(path_of(r), best);
  r = test::run_cli(args, true, "SMOLVLM_KERNELS=vector9 ");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("SMOLVLM_KERNELS=vector9: unknown kernel path"), std::string::npos) << r.out;
}

// --messages: earlier turns (OpenAI's shape) before the command line's images and prompt; a broken
// file is a clean error naming it; --stop trims the answer where the stop first appears.
TEST(CliMessages, TurnsFromAFileAndStops) {
  const auto tiny = (test::data_dir() / "models" / "smolvlm-tiny").string();
  const auto image = (test::data_dir() / "image" / "model_images" / "tiny.png").string();
  const auto dir = temp_dir("messages");
  std::filesystem::create_directories(dir);
  const auto turns = dir / "turns.json";
  test::write_text_file(turns, "[{\"role\": \"system\", \"content\": \"Be brief.\"},"
                               " {\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": \"file://" +
                                   image + "\"}}, {\"type\": \"text\", \"text\": \"What is it?\"}]},"
                               " {\"role\": \"assistant\", \"content\": \"A square.\"}]");
  auto one = test::run_cli("caption --json --max-new-tokens 6 --model " + quoted(tiny) + " " + quoted(image), false);
  auto many = test::run_cli("caption --json --max-new-tokens 6 --messages " + quoted(turns.string()) + " --model " +
                                quoted(tiny) + " " + quoted(image) + " --prompt 'And now?'",
                            false);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(many.exit_code, 0) << many.out;
  const auto j1 = nlohmann::json::parse(one.out), jm = nlohmann::json::parse(many.out);
  EXPECT_GT(jm["prompt_tokens"].get<int64_t>(), 2 * j1["prompt_tokens"].get<int64_t>() - 10);  // two images' tokens
  auto prompt = test::run_cli("prompt --messages " + quoted(turns.string()) + " --model " + quoted(tiny) +
                                  " --image " + quoted(image) + " --prompt 'And now?'",
                              false);
  ASSERT_EQ(prompt.exit_code, 0) << prompt.out;
  for (const char* part : {"Be brief.", "What is it?", "A square.", "And now?"})
    EXPECT_NE(prompt.out.find(part), std::string::npos) << part << " in " << prompt.out;

  // A stop taken from the answer itself: the text ends right before it.
  const std::string text = j1["text"].get<std::string>();
  ASSERT_GE(text.size(), 3u) << text;
  const std::string stop = text.substr(text.size() / 2, 2);
  auto stopped = test::run_cli("caption --json --max-new-tokens 6 --model " + quoted(tiny) + " " + quoted(image) +
                                   " --stop " + quoted(stop),
                               false);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out;
  const auto js = nlohmann::json::parse(stopped.out);
  EXPECT_EQ(js["text"].get<std::string>(), text.substr(0, text.find(stop)));
  EXPECT_EQ(js["finish_reason"], "stop");

  test::write_text_file(turns, "[{\"role\": \"user\", \"content\": [{\"type\": \"video\"}]}]");
  auto bad = test::run_cli("caption --messages " + quoted(turns.string()) + " --model " + quoted(tiny));
  EXPECT_EQ(bad.exit_code, 3) << bad.out;
  EXPECT_NE(bad.out.find(turns.string() + ": message 0"), std::string::npos) << bad.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace smolvlm
