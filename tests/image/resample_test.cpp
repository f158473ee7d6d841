// Pillow Image.resize vectors: 6 filters x RGB/L x 42 size pairs (hashes from Pillow 9.4), on every
// kernel path this CPU can run (scalar, avx2, ...), and the paths against each other byte for byte.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "image/image.h"
#include "image/resample.h"
#include "image_fixtures.h"
#include "kernels/cpu.h"

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

// Forces one kernel path for the duration of a test.
class ResamplePaths : public ::testing::TestWithParam<KernelPath> {
 protected:
  void SetUp() override { set_kernel_path(GetParam()); }
  void TearDown() override { reset_kernel_path(); }
};

TEST_P(ResamplePaths, MatchesAllPillowVectors) {
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

INSTANTIATE_TEST_SUITE_P(Paths, ResamplePaths, ::testing::ValuesIn(supported_kernel_paths()),
                         [](const auto& info) { return std::string(kernel_path_name(info.param)); });

U8Image random_image(std::mt19937& rng, int64_t w, int64_t h, int ch, int style) {
  U8Image img{w, h, ch, std::vector<uint8_t>(static_cast<size_t>(w * h * ch))};
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    if (style == 0) img.pixels[i] = static_cast<uint8_t>(rng());
    else if (style == 1) img.pixels[i] = (rng() & 1) ? 255 : 0;  // hard edges: overshoot clips at both ends
    else img.pixels[i] = static_cast<uint8_t>((i / ch) % w * 255 / std::max<int64_t>(w - 1, 1));
  }
  return img;
}

// Every path gives the scalar path's bytes: all filters, 1/3/4/2 channels, up and down, sizes from 1
// (rows near the end of the buffer take the kernels' padded-copy route) to wide.
TEST(Resample, EveryKernelPathGivesTheScalarBytes) {
  const auto paths = supported_kernel_paths();
  if (paths.size() < 2) GTEST_SKIP() << "only the scalar path runs on this CPU";
  std::mt19937 rng(42);
  int compared = 0;
  constexpr int kChannels[] = {3, 3, 4, 1, 2};
  for (int trial = 0; trial < 400; ++trial) {
    const int ch = kChannels[trial % 5];
    const int64_t w = 1 + rng() % (trial % 7 == 0 ? 700 : 40), h = 1 + rng() % 30;
    const int64_t ow = 1 + rng() % (trial % 3 == 0 ? 3 * w + 2 : w + 5), oh = 1 + rng() % (2 * h + 3);
    const auto filter = static_cast<ResampleFilter>(trial % 6);
    const U8Image src = random_image(rng, w, h, ch, trial % 3);
    set_kernel_path(KernelPath::Scalar);
    const U8Image want = resize_u8(src, ow, oh, filter);
    for (KernelPath p : paths) {
      set_kernel_path(p);
      const U8Image got = resize_u8(src, ow, oh, filter);
      EXPECT_EQ(got.pixels, want.pixels) << kernel_path_name(p) << " " << resample_filter_name(filter) << " ch " << ch
                                         << " " << w << "x" << h << " -> " << ow << "x" << oh;
      ++compared;
    }
  }
  reset_kernel_path();
  EXPECT_GT(compared, 400);
}

TEST(Resample, IdentityIsACopyAndBadSizesAreErrors) {
  U8Image img{2, 1, 3, {1, 2, 3, 4, 5, 6}};
  EXPECT_EQ(resize_u8(img, 2, 1, ResampleFilter::Lanczos).pixels, img.pixels);
  EXPECT_THROW(resize_u8(img, 0, 5, ResampleFilter::Lanczos), Error);
  EXPECT_THROW(resize_u8(U8Image{}, 5, 5, ResampleFilter::Bilinear), Error);
  EXPECT_THROW(resample_filter_from_pil(6), Error);
  EXPECT_THROW(resample_filter_from_pil(-1), Error);
}

// Rows are split between threads; the split never changes a byte.
TEST(Resample, ThreadCountDoesNotChangeTheBytes) {
  std::mt19937 rng(7);
  for (int ch : {3, 4, 1}) {
    const U8Image src = random_image(rng, 613, 457, ch, 0);
    for (auto [ow, oh] : {std::pair<int64_t, int64_t>{300, 211}, {613, 900}, {1000, 457}, {97, 1203}}) {
      set_resize_threads(1);
      const U8Image want = resize_u8(src, ow, oh, ResampleFilter::Lanczos);
      for (int t : {2, 3, 4}) {
        set_resize_threads(t);
        EXPECT_EQ(resize_u8(src, ow, oh, ResampleFilter::Lanczos).pixels, want.pixels)
            << t << " threads, ch " << ch << " -> " << ow << "x" << oh;
      }
    }
  }
  set_resize_threads(0);
}

// The setting is the calling thread's: a scope restores it, and another thread never sees it.
TEST(Resample, ResizeThreadsArePerCallingThread) {
  set_resize_threads(0);
  const int default_threads = resize_threads();
  ASSERT_GE(default_threads, 1);
  {
    const ScopedResizeThreads scoped(default_threads + 5);
    EXPECT_EQ(resize_threads(), default_threads + 5);
    int seen_elsewhere = -1;
    std::thread other([&] {
      seen_elsewhere = resize_threads();
      set_resize_threads(1);
    });
    other.join();
    EXPECT_EQ(seen_elsewhere, default_threads);
    EXPECT_EQ(resize_threads(), default_threads + 5);  // the other thread's setting stayed there
  }
  EXPECT_EQ(resize_threads(), default_threads);
}

}  // namespace
}  // namespace smolvlm
