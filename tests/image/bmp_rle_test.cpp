// RLE8 / RLE4 BMPs against Pillow 9.4 (tests/data/image/rle, written by tests/image/make_rle_fixtures.py,
// which records the sha256 of Pillow's convert("RGB") bytes or the exception Pillow raises).
#include <gtest/gtest.h>

#include "image/image.h"
#include "image_fixtures.h"

namespace smolvlm {
namespace {

TEST(BmpRle, MatchesPillow) {
  const auto expected = test::read_json(test::image_data() / "rle_expected.json");
  ASSERT_EQ(expected.size(), 20u);
  int matched = 0, refused = 0;
  for (const auto& e : expected) {
    const std::string file = e["file"];
    SCOPED_TRACE(file);
    const auto path = test::image_data() / "rle" / file;
    if (e.contains("exception")) {
      // Pillow fails at load: a truncated or inconsistent stream ("not enough image data", or an
      // unpacking error inside a delta escape), or a mode its RLE decoder has no raw mode for.
      try {
        load_image(path);
        ADD_FAILURE() << "decoded, but Pillow raises " << e["exception"];
      } catch (const Error& err) {
        EXPECT_NE(err.kind(), ErrorKind::Internal) << err.what();
        EXPECT_NE(std::string(err.what()).find(file), std::string::npos) << err.what();
        const bool pillow_cannot = e["exception"].get<std::string>().find("unknown raw mode") != std::string::npos;
        EXPECT_EQ(err.kind(), pillow_cannot ? ErrorKind::Unsupported : ErrorKind::BadInput) << err.what();
        ++refused;
      }
      continue;
    }
    matched += test::expect_decodes_to(path, e["wh"], e["rgb_sha256"], "Pillow mode " + e["mode"].dump());
  }
  EXPECT_EQ(matched, 13);
  EXPECT_EQ(refused, 7);
}

// Every prefix of a valid RLE file either decodes (only when the cut falls after the last pixel's
// command) or is a clean BadInput, never a crash or an oversized allocation.
TEST(BmpRle, EveryTruncationIsCleanAndAgreesWithTheFullFile) {
  for (const char* file : {"rle8_bottomup.bmp", "rle4_topdown.bmp", "rle8_delta.bmp", "rle4_abs_odd.bmp"}) {
    SCOPED_TRACE(file);
    const auto bytes = test::read_bytes(test::image_data() / "rle" / file);
    const RgbImage full = load_image_from_memory(bytes.data(), bytes.size(), file);
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      try {
        const RgbImage img = load_image_from_memory(bytes.data(), cut, file);
        EXPECT_EQ(img.pixels, full.pixels) << "cut " << cut;
      } catch (const Error& err) {
        EXPECT_NE(err.kind(), ErrorKind::Internal) << err.what();
      }
    }
  }
}

// A delta escape can add 255 rows from 6 bytes; the decoder still stops at width x height and the
// declared-size guard applies before anything is decoded.
TEST(BmpRle, DeltaBombIsBoundedByTheDeclaredSize) {
  auto rle_bmp = [](uint32_t w, uint32_t h, const std::vector<uint8_t>& stream) {
    std::vector<uint8_t> b = {'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 14 + 40 + 8, 0, 0, 0};
    auto u32 = [&](uint32_t v) {
      for (int s = 0; s < 32; s += 8) b.push_back(static_cast<uint8_t>(v >> s));
    };
    u32(40), u32(w), u32(h);
    b.insert(b.end(), {1, 0, 8, 0});
    u32(1), u32(0), u32(0), u32(0), u32(2), u32(0);
    b.insert(b.end(), {0, 0, 0, 0, 9, 9, 200, 0});  // two colours, not black and white
    b.insert(b.end(), stream.begin(), stream.end());
    return b;
  };
  std::vector<uint8_t> stream;
  for (int i = 0; i < 200; ++i) stream.insert(stream.end(), {0, 2, 0, 0, 255, 255});
  const auto ok = rle_bmp(1000, 1000, stream);
  const RgbImage img = load_image_from_memory(ok.data(), ok.size(), "delta.bmp");
  EXPECT_EQ(img.pixels.size(), 1000u * 1000u * 3u);
  EXPECT_EQ(img.pixels[0], 0);
  const auto big = rle_bmp(20000, 20000, stream);
  try {
    load_image_from_memory(big.data(), big.size(), "big.bmp", DecodeLimits{1 << 20});
    ADD_FAILURE() << "the declared size exceeds the limit";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("exceeds the limit"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace smolvlm
