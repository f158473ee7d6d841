// Shared helpers of the image tests: fixture paths, file bytes, JSON, hashes, decode checks.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "image/image.h"
#include "test_util.h"

namespace smolvlm::test {

inline std::filesystem::path image_data() { return data_dir() / "image"; }

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return nlohmann::json::parse(f);
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

template <typename T>
std::string sha_of(const std::vector<T>& v) {
  return sha256_hex(v.data(), v.size() * sizeof(T));
}

// Decodes `path` with load_image and checks it against a reference record: size [w, h] and the
// sha256 of the RGB bytes. Reports failures (`label` names the reference's mode); true when the
// pixels match.
inline bool expect_decodes_to(const std::filesystem::path& path, const nlohmann::json& wh, const std::string& sha256,
                              const std::string& label) {
  RgbImage img;
  try {
    img = load_image(path);
  } catch (const Error& e) {
    ADD_FAILURE() << "decode failed: " << e.what();
    return false;
  }
  EXPECT_EQ(img.width, wh[0].get<int64_t>());
  EXPECT_EQ(img.height, wh[1].get<int64_t>());
  const bool ok = sha_of(img.pixels) == sha256;
  EXPECT_TRUE(ok) << label;
  return ok;
}

}  // namespace smolvlm::test
