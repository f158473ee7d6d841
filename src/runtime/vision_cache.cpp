#include "runtime/vision_cache.h"

#include "core/sha256.h"

namespace smolvlm {

std::string VisionCache::key_of(const float* pixel_values, size_t n) {
  return sha256_hex(pixel_values, n * sizeof(float));
}

std::optional<std::vector<float>> VisionCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->key == key) {
      entries_.splice(entries_.begin(), entries_, it);
      ++hits_;
      return entries_.front().features;
    }
  return std::nullopt;
}

void VisionCache::insert(const std::string& key, const std::vector<float>& image_hidden_states) {
  std::lock_guard lock(mutex_);
  if (max_entries_ == 0) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->key == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
  entries_.push_front({key, image_hidden_states});
  while (entries_.size() > max_entries_) entries_.pop_back();
}

void VisionCache::set_max_entries(size_t n) {
  std::lock_guard lock(mutex_);
  max_entries_ = n;
  while (entries_.size() > max_entries_) entries_.pop_back();
}

size_t VisionCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

}  // namespace smolvlm
