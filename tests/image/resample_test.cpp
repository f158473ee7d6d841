// Pillow Image.resize vectors: 6 filters x RGB/L x 42 size pairs (hashes from Pillow 9.4).
#include <gtest/gtest.h>

#include "image/image.h"
#include "image/resample.h"
#include "image_fixtures.h"

namespace smolvlm {
namespace {

U8Image load_source(const std::string& file, const std::string& mode) {
  RgbImage rgb = load_image(test::image_data() / "resample_src" / file);
  U8Image img{rgb.width, rgb.height, 3, std::move(rgb.pixels)};
  if (mode == "L") {  // the L sources decode to R = G = B
    std::vector<uint8_t> l(static_cast<size_t>(img.width * img.height));
    for (size_t i = 0; i < l.size(); ++i) l[i] = img.pixels[i * 3];
    img.pixels = std::move(l);
    img.channels = 1;
  }
  return img;
}

TEST(Resample, MatchesAllPillowVectors) {
  const auto cases = test::read_json(test::image_data() / "resample_vectors.json");
  ASSERT_EQ(cases.size(), 504u);
  int matched = 0;
  for (const auto& c : cases) {
    const U8Image src = load_source(c["src"], c["mode"]);
    ASSERT_EQ(test::sha_of(src.pixels), c["src_sha256"].get<std::string>()) << c["src"];
    const auto filter = resample_filter_from_pil(c["filter_id"].get<int>());
    const U8Image out = resize_u8(src, c["dst_wh"][0], c["dst_wh"][1], filter);
    const bool ok = test::sha_of(out.pixels) == c["out_sha256"].get<std::string>();
    EXPECT_TRUE(ok) << resample_filter_name(filter) << " " << c["mode"] << " " << c["src_wh"] << " -> " << c["dst_wh"];
    matched += ok;
  }
  EXPECT_EQ(matched, 504);
}

TEST(Resample, IdentityIsACopyAndBadSizesAreErrors) {
  U8Image img{2, 1, 3, {1, 2, 3, 4, 5, 6}};
  EXPECT_EQ(resize_u8(img, 2, 1, ResampleFilter::Lanczos).pixels, img.pixels);
  EXPECT_THROW(resize_u8(img, 0, 5, ResampleFilter::Lanczos), Error);
  EXPECT_THROW(resize_u8(U8Image{}, 5, 5, ResampleFilter::Bilinear), Error);
  EXPECT_THROW(resample_filter_from_pil(6), Error);
  EXPECT_THROW(resample_filter_from_pil(-1), Error);
}

}  // namespace
}  // namespace smolvlm
