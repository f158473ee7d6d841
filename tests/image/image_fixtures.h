// Shared helpers of the image tests: fixture paths, JSON, hashes.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "test_util.h"

namespace smolvlm::test {

inline std::filesystem::path image_data() { return data_dir() / "image"; }

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return nlohmann::json::parse(f);
}

template <typename T>
std::string sha_of(const std::vector<T>& v) {
  return sha256_hex(v.data(), v.size() * sizeof(T));
}

}  // namespace smolvlm::test
