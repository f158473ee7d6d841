// load_image against the reference decode of every odd image (hash of HF load_image's RGB array).
#include <gtest/gtest.h>

#include "image/image.h"
#include "image_fixtures.h"

namespace smolvlm {
namespace {

TEST(Decode, EveryOddImageMatchesHfLoadImage) {
  const auto goldens = test::read_json(test::image_data() / "goldens_pre.json");
  ASSERT_EQ(goldens.size(), 97u);
  int matched = 0;
  for (const auto& [file, g] : goldens.items()) {
    SCOPED_TRACE(file);
    matched += test::expect_decodes_to(test::image_data() / "odd" / file, g["decoded_wh"], g["rgb_sha256"],
                                       "mode " + g["mode"].dump());
  }
  EXPECT_EQ(matched, 97);
}

TEST(Decode, MemoryAndFileAgree) {
  const auto path = test::image_data() / "odd" / "pillow_hopper.jpg";
  const std::vector<uint8_t> bytes = test::read_bytes(path);
  EXPECT_EQ(load_image_from_memory(bytes.data(), bytes.size(), "hopper").pixels, load_image(path).pixels);
}

TEST(Decode, SniffsFormats) {
  const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_EQ(sniff_image_format(png, sizeof png), "png");
  const uint8_t jpg[] = {0xFF, 0xD8, 0xFF};
  EXPECT_EQ(sniff_image_format(jpg, sizeof jpg), "jpeg");
  EXPECT_EQ(sniff_image_format(jpg, 2), "");
}

}  // namespace
}  // namespace smolvlm
