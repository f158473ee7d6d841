// `smolvlm check` must pass on this machine, and must fail, naming the stage, when a golden is
// altered, a kernel computes wrong values, or the tokenizer loses a merge.
#include "check/check.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "check/assets.h"
#include "io/file.h"
#include "io/npy.h"
#include "kernels/cpu.h"
#include "test_util.h"

namespace smolvlm {
namespace {

std::filesystem::path source_assets() { return test::data_dir() / ".." / ".." / "assets" / "check"; }

// A writable copy of the assets in a temporary folder.
struct AssetCopy {
  TempDir tmp;
  AssetCopy() { std::filesystem::copy(source_assets(), tmp.path(), std::filesystem::copy_options::recursive); }
  std::filesystem::path path() const { return tmp.path(); }
};

const CheckRow* find_row(const CheckReport& rep, const std::string& stage) {
  for (const CheckRow& r : rep.rows)
    if (r.stage == stage) return &r;
  return nullptr;
}

std::vector<std::string> failed_stages(const CheckReport& rep) {
  std::vector<std::string> out;
  for (const CheckRow& r : rep.rows)
    if (!r.pass()) out.push_back(r.stage);
  return out;
}

void print_report(const CheckReport& rep) {
  for (const CheckRow& r : rep.rows)
    std::printf("  %-15s %-7s cases %2d failed %d max_err %.3g %s\n", r.stage.c_str(), r.path.c_str(), r.cases,
                r.failed, r.max_error, r.detail.substr(0, 160).c_str());
}

TEST(Check, PassesOnThisMachine) {
  CheckReport rep = run_check({});
  print_report(rep);
  EXPECT_TRUE(rep.passed());
  EXPECT_EQ(rep.paths_run.size(), supported_kernel_paths().size());
  for (const char* stage : {"decode", "resample", "tiling", "tokenizer", "pixel values", "vision", "connector",
                            "prefill logits", "step logits", "greedy ids"}) {
    const CheckRow* r = find_row(rep, stage);
    ASSERT_NE(r, nullptr) << stage;
    EXPECT_GT(r->cases, 0) << stage;
  }
}

TEST(Check, AlteredGoldenFailsItsStage) {
  AssetCopy a;
  auto file = a.path() / "goldens" / "tied_two_images" / "vision_last_hidden.npy";
  NpyArray arr = read_npy(file);
  float v;
  std::memcpy(&v, arr.bytes.data() + 40, 4);
  v += 1e-3f;
  std::memcpy(arr.bytes.data() + 40, &v, 4);
  write_npy(file, arr.dtype, arr.shape, arr.bytes.data(), arr.bytes.size());
  CheckOptions opt;
  opt.assets_dir = a.path();
  CheckReport rep = run_check(opt);
  EXPECT_FALSE(rep.passed());
  std::vector<std::string> failed = failed_stages(rep);
  ASSERT_FALSE(failed.empty());
  for (const std::string& s : failed) EXPECT_EQ(s, "vision");
  EXPECT_NE(find_row(rep, "vision")->detail.find("tied_two_images"), std::string::npos);
}

TEST(Check, BrokenKernelFailsTheModelStages) {
  set_kernel_fault_injection(true);
  CheckReport rep = run_check({});
  set_kernel_fault_injection(false);
  EXPECT_FALSE(rep.passed());
  for (const char* stage : {"decode", "resample", "tiling", "tokenizer", "pixel values"})
    EXPECT_TRUE(find_row(rep, stage)->pass()) << stage;
  const CheckRow* v = find_row(rep, "vision");
  ASSERT_NE(v, nullptr);
  EXPECT_FALSE(v->pass());
  EXPECT_GT(v->max_error, kCheckBound);
}

TEST(Check, AlteredDecodeHashNamesTheLibrary) {
  AssetCopy a;
  auto path = a.path() / "images" / "expected.json";
  nlohmann::json j = nlohmann::json::parse(read_file(path));
  j["decode"][0]["rgb_sha256"] = std::string(64, '0');
  write_file_atomic(path, j.dump());
  CheckOptions opt;
  opt.assets_dir = a.path();
  CheckReport rep = run_check(opt);
  const CheckRow* r = find_row(rep, "decode");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->failed, 1);
  EXPECT_NE(r->detail.find("libjpeg-turbo"), std::string::npos) << r->detail;
}

std::string gunzip_file(const std::filesystem::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

void gzip_file(const std::filesystem::path& p, const std::string& data) {
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

TEST(Check, TokenizerWithOneMergeRemovedFails) {
  AssetCopy a;
  auto path = a.path() / "model" / "tokenizer.json.gz";
  nlohmann::json tok = nlohmann::json::parse(gunzip_file(path));
  auto& merges = tok["model"]["merges"];
  ASSERT_TRUE(merges.is_array());
  merges.erase(merges.begin());  // the highest-priority merge ("Ġ t" in SmolVLM's list)
  gzip_file(path, tok.dump());
  CheckOptions opt;
  opt.assets_dir = a.path();
  CheckReport rep = run_check(opt);
  const CheckRow* r = find_row(rep, "tokenizer");
  ASSERT_NE(r, nullptr);
  EXPECT_GT(r->failed, 0);
  EXPECT_NE(r->detail.find("ids differ"), std::string::npos) << r->detail;
}

TEST(Check, CliReportsPassAndFailWithExitCodes) {
  auto ok = test::run_cli("check --json", false);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  nlohmann::json j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j["pass"].get<bool>());
  EXPECT_GT(j["seconds"].get<double>(), 0.0);  // timed (the speed itself is benchmarked, not tested)
  EXPECT_FALSE(j["caption_path"].get<std::string>().empty());

  AssetCopy a;
  auto path = a.path() / "goldens" / "tied_nosplit_square" / "case.json";
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  c["generated_ids"][0] = c["generated_ids"][0].get<int64_t>() + 1;
  write_file_atomic(path, c.dump());
  auto bad = test::run_cli("check --assets '" + a.path().string() + "'");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("greedy ids"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("FAIL"), std::string::npos) << bad.out;
}

TEST(Check, CaptionWithCheckRefusesOnFailure) {
  std::string image = (test::data_dir() / ".." / ".." / "examples" / "flower.jpg").string();
  std::string model = (test::data_dir() / "models" / "smolvlm-tiny").string();
  auto ok = test::run_cli("caption --check --json --max-new-tokens 3 --model '" + model + "' '" + image + "'", false);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"token_ids\""), std::string::npos) << ok.out;

  AssetCopy a;
  auto path = a.path() / "goldens" / "tied_two_images" / "case.json";
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  c["generated_ids"][3] = 7;
  write_file_atomic(path, c.dump());
  setenv("SMOLVLM_CHECK_ASSETS", a.path().c_str(), 1);
  auto bad_out = test::run_cli("caption --check --max-new-tokens 3 --model '" + model + "' '" + image + "'", false);
  auto bad_all = test::run_cli("caption --check --max-new-tokens 3 --model '" + model + "' '" + image + "'");
  unsetenv("SMOLVLM_CHECK_ASSETS");
  EXPECT_EQ(bad_out.exit_code, 1);
  EXPECT_EQ(bad_out.out, "");  // nothing was captioned
  EXPECT_NE(bad_all.out.find("greedy ids"), std::string::npos) << bad_all.out;
  EXPECT_NE(bad_all.out.find("not captioning"), std::string::npos) << bad_all.out;
}

}  // namespace
}  // namespace smolvlm
