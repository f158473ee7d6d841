#include "runtime/kv_content.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace smolvlm {

KvContent KvContent::of_prompt(std::span<const int64_t> ids, int64_t image_token, const std::vector<Image>& images) {
  int64_t rows = 0;
  for (const Image& im : images) rows += im.rows;
  const int64_t tokens = images.empty() ? 0 : std::count(ids.begin(), ids.end(), image_token);
  if (tokens != rows)
    throw bad_input("the prompt has " + std::to_string(tokens) + " image tokens but its images fill " +
                    std::to_string(rows) + " rows");
  KvContent c;
  c.entries_.reserve(ids.size());
  size_t image = 0;
  int64_t row = 0;
  for (int64_t id : ids) {
    Entry e{id, kText, 0};
    if (id == image_token && !images.empty()) {
      while (row == images[image].rows) {  // the counts agree: a next image exists
        ++image;
        row = 0;
      }
      e.image = c.image_index(images[image].key);
      e.row = row++;
    }
    c.entries_.push_back(e);
  }
  return c;
}

KvContent KvContent::opaque(int64_t rows) {
  KvContent c;
  c.entries_.assign(static_cast<size_t>(std::max<int64_t>(rows, 0)), Entry{0, kOpaque, 0});
  return c;
}

void KvContent::append_ids(std::span<const int64_t> ids) {
  for (int64_t id : ids) entries_.push_back({id, kText, 0});
}

int32_t KvContent::image_index(const std::string& key) {
  const auto it = std::find(images_.begin(), images_.end(), key);
  if (it != images_.end()) return static_cast<int32_t>(it - images_.begin());
  images_.push_back(key);
  return static_cast<int32_t>(images_.size() - 1);
}

void KvContent::append(const KvContent& other, size_t from, size_t to) {
  if (from > to || to > other.entries_.size()) throw internal_error("KvContent::append: range outside the content");
  for (size_t i = from; i < to; ++i) {
    Entry e = other.entries_[i];
    if (e.image >= 0) e.image = image_index(other.images_[static_cast<size_t>(e.image)]);
    entries_.push_back(e);
  }
}

void KvContent::truncate(size_t n) {
  if (n > entries_.size()) throw internal_error("KvContent::truncate past the end");
  entries_.resize(n);
  // Keys are added in order of first use, so the ones still used are a prefix.
  int32_t used = 0;
  for (const Entry& e : entries_) used = std::max(used, e.image + 1);
  images_.resize(static_cast<size_t>(used));
}

bool KvContent::same(const Entry& a, const KvContent& other, const Entry& b) const {
  if (a.id != b.id || a.image == kOpaque || b.image == kOpaque) return false;
  if ((a.image == kText) != (b.image == kText)) return false;
  if (a.image == kText) return true;
  return a.row == b.row && images_[static_cast<size_t>(a.image)] == other.images_[static_cast<size_t>(b.image)];
}

size_t KvContent::common_prefix(const KvContent& other) const {
  const size_t n = std::min(entries_.size(), other.entries_.size());
  size_t i = 0;
  while (i < n && same(entries_[i], other, other.entries_[i])) ++i;
  return i;
}

}  // namespace smolvlm
