// Loading a compact model golden (tests/data/goldens/<case>) and comparing arrays against it.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/file.h"
#include "io/npy.h"
#include "test_util.h"

#ifndef SMOLVLM_SHARED_DIR
#define SMOLVLM_SHARED_DIR ""  // full reference arrays unavailable: compact data only
#endif

namespace smolvlm::test {

inline std::filesystem::path goldens_dir() { return data_dir() / "goldens"; }

inline std::vector<std::string> golden_cases() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(goldens_dir()))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct Golden {
  std::string name;
  std::filesystem::path dir;
  nlohmann::json spec;  // case.json
  std::filesystem::path model_dir() const {
    return data_dir() / "models" / std::filesystem::path(spec["model"].get<std::string>()).filename();
  }
  bool has_images() const { return std::filesystem::exists(dir / "pixel_values_u8.npy"); }
  bool has(const std::string& file) const { return std::filesystem::exists(dir / file); }
  NpyArray npy(const std::string& file) const { return read_npy(dir / file); }
  // An id list (case.json stores a single eos id as a bare number).
  std::vector<int64_t> ids(const char* key) const {
    const auto& v = spec.at(key);
    return v.is_array() ? v.get<std::vector<int64_t>>() : std::vector<int64_t>{v.get<int64_t>()};
  }
  // The full reference array in shared/reference when that folder exists.
  std::filesystem::path shared_file(const std::string& file) const {
    if (std::string(SMOLVLM_SHARED_DIR).empty()) return {};
    for (const char* group : {"goldens", "goldens_more"}) {
      auto p = std::filesystem::path(SMOLVLM_SHARED_DIR) / "reference" / group / name / file;
      if (std::filesystem::exists(p)) return p;
    }
    return {};
  }
};

inline Golden load_golden(const std::string& name) {
  Golden g{name, goldens_dir() / name, {}};
  g.spec = nlohmann::json::parse(read_file(g.dir / "case.json"));
  return g;
}

// pixel_values [tiles, 3, S, S] from the exact u8 + LUT form.
inline std::vector<float> golden_pixels(const Golden& g, int64_t* tiles) {
  NpyArray u8 = g.npy("pixel_values_u8.npy");
  NpyArray lut = g.npy("pixel_values_lut.npy");
  const uint8_t* q = u8.data<uint8_t>();
  const float* table = lut.data<float>();
  std::vector<float> px(static_cast<size_t>(u8.numel()));
  for (int64_t i = 0; i < u8.numel(); ++i) px[i] = table[q[i]];
  *tiles = u8.shape.at(1);
  return px;
}

inline float max_abs_diff(const float* a, const float* b, int64_t n) {
  float m = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (!(d <= m)) m = d;  // NaN propagates as a failure
  }
  return m;
}

// Max error of a logits row against its golden top-32 (ids, values) and probe (every 61st value).
inline float compact_logits_error(const float* logits, const int64_t* top_ids, const float* top_values,
                                  const float* probe, int64_t probe_len) {
  float m = 0.f;
  for (int i = 0; i < 32; ++i) m = std::max(m, std::fabs(logits[top_ids[i]] - top_values[i]));
  for (int64_t i = 0; i < probe_len; ++i) m = std::max(m, std::fabs(logits[i * 61] - probe[i]));
  return m;
}

}  // namespace smolvlm::test
