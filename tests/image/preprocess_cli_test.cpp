// `smolvlm preprocess` end to end: the .npy it writes equals the reference pixel_values.
#include <gtest/gtest.h>

#include "image_fixtures.h"
#include "io/npy.h"

namespace smolvlm {
namespace {

TEST(PreprocessCli, SingleImageModelGoldensMatch) {
  const auto cases = test::read_json(test::image_data() / "model_goldens.json");
  const auto out = std::filesystem::temp_directory_path() / "smolvlm_preprocess_cli_test.npy";
  int checked = 0;
  for (const auto& [name, c] : cases.items()) {
    if (c["images"].size() != 1) continue;
    SCOPED_TRACE(name);
    const std::string args = "preprocess '" + (test::image_data() / "model_images" / c["images"][0].get<std::string>()).string() +
                             "' --model '" + (test::data_dir() / "models" / c["model"].get<std::string>()).string() +
                             "' --out '" + out.string() + "' --json" + (c["do_image_splitting"].get<bool>() ? "" : " --no-split");
    const auto r = test::run_cli(args, false);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["rows"], c["rows"][0]);
    EXPECT_EQ(j["cols"], c["cols"][0]);
    EXPECT_EQ(j["tiles"], c["pixel_values_shape"][1]);
    const NpyArray a = read_npy(out);
    EXPECT_EQ(a.dtype, "f4");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{c["pixel_values_shape"][1], 3, c["pixel_values_shape"][3],
                                             c["pixel_values_shape"][4]}));
    EXPECT_EQ(sha256_hex(a.bytes.data(), a.bytes.size()), c["pixel_values_sha256"].get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 8);
  std::filesystem::remove(out);
}

TEST(PreprocessCli, BadImageIsACleanError) {
  const auto file = test::image_data() / "corrupt" / "no_eoi.jpg";
  const auto r = test::run_cli("preprocess '" + file.string() + "' --model '" +
                               (test::data_dir() / "models" / "smolvlm-tiny").string() + "' --out /tmp/never_written.npy");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("no_eoi.jpg"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists("/tmp/never_written.npy"));
  EXPECT_NE(test::run_cli("preprocess x.png").exit_code, 0);  // --out is required
}

}  // namespace
}  // namespace smolvlm
