// Idefics3 preprocessing against the reference: stage sizes and hashes, tiles, pixel_values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "image/idefics3.h"
#include "image_fixtures.h"
#include "io/config.h"
#include "kernels/cpu.h"

namespace smolvlm {
namespace {

// The real SmolVLM-256M-Instruct processor settings (goldens_pre).
ImageProcessorConfig smolvlm_config() {
  ImageProcessorConfig c;
  c.longest_edge = 2048;
  c.max_image_size = 512;
  c.resample = 1;
  c.rescale_factor = 0.00392156862745098;
  return c;
}

// HF's u8 stage arrays: HWC for normal images, CHW for the channels-first quirk.
std::string stage_hash(const U8Image& img, bool chw) {
  if (!chw) return test::sha_of(img.pixels);
  std::vector<uint8_t> planar(img.pixels.size());
  const size_t n = static_cast<size_t>(img.width * img.height);
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < img.channels; ++c) planar[c * n + i] = img.pixels[i * img.channels + c];
  return test::sha_of(planar);
}

int check_golden(const std::string& file, const nlohmann::json& g) {
  SCOPED_TRACE(file);
  const RgbImage img = load_image(test::image_data() / "odd" / file);
  int ok = 0;
  for (const char* setting : {"split", "nosplit"}) {
    SCOPED_TRACE(setting);
    const auto& e = g[setting];
    Idefics3Trace trace;
    const PreprocessedImage p = preprocess_idefics3(img, smolvlm_config(), std::string(setting) == "split", &trace);
    const bool chw = e["channels_first"].get<bool>();
    EXPECT_EQ(trace.channels_first_quirk, chw);
    EXPECT_EQ(trace.resized.height, e["resized_hw"][0].get<int64_t>());
    EXPECT_EQ(trace.resized.width, e["resized_hw"][1].get<int64_t>());
    EXPECT_EQ(stage_hash(trace.resized, chw), e["resized_sha256"].get<std::string>());
    if (e.contains("vision_encoder_hw")) {
      EXPECT_EQ(trace.vision_encoder.height, e["vision_encoder_hw"][0].get<int64_t>());
      EXPECT_EQ(trace.vision_encoder.width, e["vision_encoder_hw"][1].get<int64_t>());
      EXPECT_EQ(stage_hash(trace.vision_encoder, chw), e["vision_encoder_sha256"].get<std::string>());
    }
    EXPECT_EQ(p.rows, e["rows"].get<int64_t>());
    EXPECT_EQ(p.cols, e["cols"].get<int64_t>());
    EXPECT_EQ(p.num_tiles, e["num_tiles"].get<int64_t>());
    const bool tiles_ok = test::sha_of(p.tiles_u8) == e["tiles_sha256"].get<std::string>();
    const bool pv_ok = test::sha_of(p.pixel_values) == e["pixel_values_sha256"].get<std::string>();
    EXPECT_TRUE(tiles_ok);
    EXPECT_TRUE(pv_ok);
    ok += tiles_ok && pv_ok;
  }
  return ok;
}

// Representative images (quirks, float rounding, exact sizes, orientation, CMYK, palettes) keep the
// unit run short under sanitizers; AllOddImages (run as an integration test) covers the 97.
TEST(Idefics3, RepresentativeGoldens) {
  const auto goldens = test::read_json(test::image_data() / "goldens_pre.json");
  const char* files[] = {"gen_1x1.png", "gen_9x1.png", "gen_2000x3.jpg", "gen_1x7.png", "gen_2048x93.png",
                         "gen_512x512.png", "pillow_hopper_orientation_6.jpg", "pillow_cmyk_adobe.jpg",
                         "pillow_tRNS_null_1x1.png", "ljt_testorig.jpg"};
  int ok = 0;
  for (const char* f : files) ok += check_golden(f, goldens.at(f));
  EXPECT_EQ(ok, 2 * static_cast<int>(std::size(files)));
}

TEST(Idefics3, DISABLED_AllOddImages) {
  const auto goldens = test::read_json(test::image_data() / "goldens_pre.json");
  int ok = 0;
  for (const auto& [file, g] : goldens.items()) ok += check_golden(file, g);
  EXPECT_EQ(ok, 2 * 97);
}

TEST(Idefics3, ModelGoldensPixelValues) {
  const auto cases = test::read_json(test::image_data() / "model_goldens.json");
  for (const auto& [name, c] : cases.items()) {
    SCOPED_TRACE(name);
    const auto model_dir = test::data_dir() / "models" / c["model"].get<std::string>();
    std::ifstream f(model_dir / "preprocessor_config.json");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const ImageProcessorConfig cfg = parse_image_processor_config(text, "preprocessor_config.json");
    std::vector<float> all;
    for (size_t i = 0; i < c["images"].size(); ++i) {
      const RgbImage img = load_image(test::image_data() / "model_images" / c["images"][i].get<std::string>());
      const PreprocessedImage p = preprocess_idefics3(img, cfg, c["do_image_splitting"].get<bool>());
      EXPECT_EQ(p.rows, c["rows"][i].get<int64_t>());
      EXPECT_EQ(p.cols, c["cols"][i].get<int64_t>());
      all.insert(all.end(), p.pixel_values.begin(), p.pixel_values.end());
    }
    const auto& shape = c["pixel_values_shape"];
    EXPECT_EQ(static_cast<int64_t>(all.size()), shape[1].get<int64_t>() * 3 * shape[3].get<int64_t>() * shape[4].get<int64_t>());
    EXPECT_EQ(test::sha_of(all), c["pixel_values_sha256"].get<std::string>());
  }
}

// load_and_preprocess_idefics3 (the longest-edge resize following the JPEG decoder on a second thread)
// against the reference hashes, with and without the second thread; rotated, channels-first and
// non-JPEG inputs take the plain path, truncated files fail as load_image does.
TEST(Idefics3, LoadAndPreprocessMatchesTheGoldens) {
  const auto goldens = test::read_json(test::image_data() / "goldens_pre.json");
  for (int threads : {2, 1}) {
    set_resize_threads(threads);
    for (const char* file : {"gen_4000x3000_bench.jpg", "gen_2500x1100.jpg", "gen_512x1537.jpg", "ljt_testorig.jpg",
                             "gen_gray_progressive.jpg", "gen_cmyk_adobe.jpg", "pillow_hopper_orientation_6.jpg",
                             "gen_2000x3.jpg", "gen_1x1.jpg", "pillow_hopper.png"}) {
      for (const char* setting : {"split", "nosplit"}) {
        SCOPED_TRACE(std::string(file) + " " + setting + " threads " + std::to_string(threads));
        const auto& e = goldens.at(file)[setting];
        const PreprocessedImage p = load_and_preprocess_idefics3(test::image_data() / "odd" / file, smolvlm_config(),
                                                                 std::string(setting) == "split");
        EXPECT_EQ(p.rows, e["rows"].get<int64_t>());
        EXPECT_EQ(p.cols, e["cols"].get<int64_t>());
        EXPECT_EQ(test::sha_of(p.tiles_u8), e["tiles_sha256"].get<std::string>());
        EXPECT_EQ(test::sha_of(p.pixel_values), e["pixel_values_sha256"].get<std::string>());
      }
    }
  }
  set_resize_threads(2);
  const std::vector<uint8_t> bytes = test::read_bytes(test::image_data() / "odd" / "gen_2500x1100.jpg");
  for (size_t cut : {bytes.size() / 2, bytes.size() - 2, size_t{700}}) {
    try {
      load_and_preprocess_idefics3(bytes.data(), cut, "cut.jpg", smolvlm_config());
      ADD_FAILURE() << "a truncated JPEG was accepted (cut " << cut << ")";
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::BadInput) << err.what();
    }
  }
  set_resize_threads(0);
}

// The vector kernels (resampling, RGB to planes) give the scalar path's tensors on every path.
TEST(Idefics3, EveryKernelPathGivesTheSameTensors) {
  for (const char* file : {"gen_2500x1100.jpg", "gen_513x513.png", "pillow_hopper.png", "gen_rgba_gradient_alpha.png",
                           "gen_2000x3.jpg"}) {
    SCOPED_TRACE(file);
    const RgbImage img = load_image(test::image_data() / "odd" / file);
    set_kernel_path(KernelPath::Scalar);
    const PreprocessedImage want = preprocess_idefics3(img, smolvlm_config(), true);
    for (KernelPath path : supported_kernel_paths()) {
      set_kernel_path(path);
      const PreprocessedImage got = preprocess_idefics3(img, smolvlm_config(), true);
      EXPECT_EQ(got.tiles_u8, want.tiles_u8) << kernel_path_name(path);
      EXPECT_EQ(got.pixel_values, want.pixel_values) << kernel_path_name(path);
    }
    reset_kernel_path();
  }
}

TEST(Idefics3, SizeRules) {
  // 2048x93: int(2048 / (2048/93)) = 92 (float detail documented by the reference).
  EXPECT_EQ(idefics3_longest_edge_size(93, 2048, 2048), (std::pair<int64_t, int64_t>{92, 2048}));
  EXPECT_EQ(idefics3_longest_edge_size(149, 227, 2048), (std::pair<int64_t, int64_t>{1344, 2048}));
  EXPECT_EQ(idefics3_vision_encoder_size(1344, 2048, 512), (std::pair<int64_t, int64_t>{1536, 2048}));
  EXPECT_EQ(idefics3_vision_encoder_size(2048, 292, 512), (std::pair<int64_t, int64_t>{2048, 512}));
}

TEST(Idefics3, RejectsBadInputs) {
  ImageProcessorConfig cfg = smolvlm_config();
  EXPECT_THROW(preprocess_idefics3(RgbImage{}, cfg), Error);
  RgbImage img{2, 2, std::vector<uint8_t>(12, 7)};
  cfg.max_image_size = 0;
  EXPECT_THROW(preprocess_idefics3(img, cfg), Error);
  cfg = smolvlm_config();
  cfg.resample = 9;
  EXPECT_THROW(preprocess_idefics3(img, cfg), Error);
}

}  // namespace
}  // namespace smolvlm
