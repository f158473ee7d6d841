// Hostile and broken files: every one is a clean smolvlm::Error (never a crash, hang or huge
// allocation; these tests also run under ASan/UBSan).
#include <gtest/gtest.h>

#include <zlib.h>


#include "image/idefics3.h"
#include "image/image.h"
#include "image_fixtures.h"

namespace smolvlm {
namespace {

ErrorKind load_error_kind(const std::vector<uint8_t>& bytes, const std::string& name, std::string* message = nullptr,
                          DecodeLimits limits = {}) {
  try {
    load_image_from_memory(bytes.data(), bytes.size(), name, limits);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << name << ": decoded without error";
  return ErrorKind::Internal;
}

TEST(Corrupt, EveryReferenceFailureIsAnError) {
  const auto expected = test::read_json(test::image_data() / "corrupt_expected.json");
  ASSERT_EQ(expected.size(), 18u);
  for (const auto& e : expected) {
    const std::string file = e["file"];
    SCOPED_TRACE(file);
    std::string msg;
    const ErrorKind kind = load_error_kind(test::read_bytes(test::image_data() / "corrupt" / file), file, &msg);
    EXPECT_NE(kind, ErrorKind::Internal) << msg;
    EXPECT_NE(msg.find(file), std::string::npos) << "message should name the file: " << msg;
    if (e["exception"] == "PIL.Image.DecompressionBombError") {
      EXPECT_NE(msg.find("exceeds the limit"), std::string::npos) << msg;
    }
    if (file == "ljt_monkey12.jpg" || file == "pillow_bmp_rgba32_bitfields.bmp") {
      EXPECT_EQ(kind, ErrorKind::Unsupported) << msg;
    }
  }
}

TEST(Corrupt, TruncatedOddImagesFailCleanly) {
  const auto goldens = test::read_json(test::image_data() / "goldens_pre.json");
  for (const auto& [file, g] : goldens.items()) {
    const auto bytes = test::read_bytes(test::image_data() / "odd" / file);
    if (bytes.size() > 200000) continue;  // keeps the sanitizer run short
    SCOPED_TRACE(file);
    // Half the file is never enough.
    const std::vector<uint8_t> half(bytes.begin(), bytes.begin() + bytes.size() / 2);
    EXPECT_NE(load_error_kind(half, file), ErrorKind::Internal);
    // Other cuts may or may not leave a decodable image, but must never crash.
    for (size_t cut : {size_t{1}, size_t{8}, size_t{30}, size_t{100}, bytes.size() * 9 / 10, bytes.size() - 1}) {
      if (cut >= bytes.size()) continue;
      try {
        load_image_from_memory(bytes.data(), cut, file);
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal) << e.what();
      }
    }
  }
}

TEST(Corrupt, FlippedBytesNeverCrash) {
  uint32_t state = 12345;
  for (const char* file : {"pillow_hopper.jpg", "pillow_hopper.png", "pillow_hopper.webp", "pillow_hopper.gif",
                           "pillow_bmp_pal4.bmp", "gen_progressive_cjpeg.jpg", "pillow_pil123p.png"}) {
    const auto bytes = test::read_bytes(test::image_data() / "odd" / file);
    for (int trial = 0; trial < 20; ++trial) {
      auto mutated = bytes;
      for (int k = 0; k < 4; ++k) {
        state = state * 1664525u + 1013904223u;
        mutated[state % mutated.size()] ^= static_cast<uint8_t>(1u << (state >> 29));
      }
      try {
        const RgbImage img = load_image_from_memory(mutated.data(), mutated.size(), file);
        EXPECT_EQ(static_cast<int64_t>(img.pixels.size()), img.width * img.height * 3);
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal) << file << ": " << e.what();
      }
    }
  }
}

// RLE-compressed BMPs: random bit flips in the command stream (delta escapes, absolute runs, the
// palette) give a Pillow-shaped image or a clean error; the malformed streams of tests/data/image/rle
// (truncated, early end of bitmap, a delta escape cut short, an RLE4 stream that loses sync) are BadInput.
TEST(Corrupt, RleBmpStreams) {
  uint32_t state = 777;
  for (const char* file : {"rle8_bottomup.bmp", "rle4_bottomup.bmp", "rle8_delta.bmp", "rle8_overrun.bmp"}) {
    const auto bytes = test::read_bytes(test::image_data() / "rle" / file);
    for (int trial = 0; trial < 200; ++trial) {
      auto mutated = bytes;
      for (int k = 0; k < 3; ++k) {
        state = state * 1664525u + 1013904223u;
        // Mostly the pixel data (after the 54-byte headers), sometimes the headers.
        const size_t at = trial % 4 == 0 ? state % mutated.size() : 54 + state % (mutated.size() - 54);
        mutated[at] ^= static_cast<uint8_t>(1u << (state >> 29));
      }
      try {
        const RgbImage img = load_image_from_memory(mutated.data(), mutated.size(), file);
        EXPECT_EQ(static_cast<int64_t>(img.pixels.size()), img.width * img.height * 3);
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal) << file << ": " << e.what();
      }
    }
  }
  for (const char* file : {"err_rle8_truncated.bmp", "err_rle8_early_eob.bmp", "err_rle8_delta_cut.bmp",
                           "err_rle4_abs_cut.bmp", "err_rle4_odd_desync.bmp"}) {
    std::string msg;
    EXPECT_EQ(load_error_kind(test::read_bytes(test::image_data() / "rle" / file), file, &msg), ErrorKind::BadInput) << msg;
    EXPECT_NE(msg.find("corrupt RLE BMP"), std::string::npos) << msg;
  }
}

// A PNG header declaring w x h with valid CRCs and a few bytes of image data.
std::vector<uint8_t> png_with_size(uint32_t w, uint32_t h) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto chunk = [&](const char* type, const std::vector<uint8_t>& payload) {
    const uint32_t n = static_cast<uint32_t>(payload.size());
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(n >> s));
    const size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), payload.begin(), payload.end());
    const uint32_t crc = static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(4 + n)));
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(crc >> s));
  };
  std::vector<uint8_t> ihdr;
  for (uint32_t v : {w, h})
    for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<uint8_t>(v >> s));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  chunk("IHDR", ihdr);
  chunk("IDAT", {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  chunk("IEND", {});
  return out;
}

TEST(Corrupt, DeclaredSizesAreCheckedBeforeAllocating) {
  std::string msg;
  EXPECT_EQ(load_error_kind(png_with_size(100000, 100000), "huge.png", &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("exceeds the limit"), std::string::npos) << msg;
  EXPECT_EQ(load_error_kind(png_with_size(0, 10), "zero.png", &msg), ErrorKind::BadInput);
  EXPECT_EQ(load_error_kind(png_with_size(0xFFFFFFFFu, 0xFFFFFFFFu), "max.png", &msg), ErrorKind::BadInput);
  // Under the limit but with almost no data: refused without allocating 12000 x 10000 x 3.
  EXPECT_EQ(load_error_kind(png_with_size(12000, 10000), "big.png", &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // The limit is configurable.
  const auto hopper = test::read_bytes(test::image_data() / "odd" / "pillow_hopper.jpg");
  EXPECT_EQ(load_error_kind(hopper, "hopper.jpg", &msg, DecodeLimits{128 * 128 - 1}), ErrorKind::BadInput);
  EXPECT_NO_THROW(load_image_from_memory(hopper.data(), hopper.size(), "hopper.jpg", DecodeLimits{128 * 128}));
}

TEST(Corrupt, EmptyGarbageAndUnsupportedFormats) {
  EXPECT_EQ(load_error_kind({}, "empty"), ErrorKind::BadInput);
  EXPECT_EQ(load_error_kind({'h', 'e', 'l', 'l', 'o'}, "text"), ErrorKind::BadInput);
  EXPECT_EQ(load_error_kind({'I', 'I', '*', 0, 8, 0, 0, 0}, "x.tif"), ErrorKind::Unsupported);
  EXPECT_EQ(load_error_kind({0xFF, 0xD8, 0xFF}, "soi.jpg"), ErrorKind::BadInput);
  EXPECT_EQ(load_error_kind({'B', 'M', 0, 0}, "short.bmp"), ErrorKind::BadInput);
  EXPECT_EQ(load_error_kind({'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0, 0x3b}, "noimage.gif"),
            ErrorKind::BadInput);
  try {
    load_image("/nonexistent/dir/x.png");
    ADD_FAILURE() << "missing file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
  }
}

}  // namespace
}  // namespace smolvlm
