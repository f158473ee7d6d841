// The vision outputs of recent images, by the SHA-256 of each image's pixel values: a follow-up question
// about the same images (same bytes, same split setting give the same pixels) skips the vision tower
// and the connector. Keyed on the exact pixels the tower would read, a hit returns exactly the
// features it would compute. Shared by all sessions of a model; thread-safe; least recently used
// entries go first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace smolvlm {

class VisionCache {
 public:
  explicit VisionCache(size_t max_entries = 8) : max_entries_(max_entries) {}

  // The key of an image's pixel values (every tile of it).
  static std::string key_of(const float* pixel_values, size_t n);
  static std::string key_of(const std::vector<float>& pixel_values) { return key_of(pixel_values.data(), pixel_values.size()); }
  // The image_hidden_states stored for `key`, if any.
  std::optional<std::vector<float>> find(const std::string& key);
  void insert(const std::string& key, const std::vector<float>& image_hidden_states);
  size_t hits() const;
  // Keeps at most `n` images from now on (0: none), dropping the least recently used beyond it.
  void set_max_entries(size_t n);

 private:
  struct Entry {
    std::string key;
    std::vector<float> features;
  };
  size_t max_entries_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  size_t hits_ = 0;
};

}  // namespace smolvlm
