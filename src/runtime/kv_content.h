// What went into a session's KV cache, position by position: the token id and, at a position whose
// embedding came from an image, which image (the key of its pixels, runtime/vision_cache.h) and
// which row of its features. Two sequences whose first n entries are equal put exactly the same
// inputs at the same n positions, so a session holding one can keep those positions for the other
// and prefill only the rest. An image token id alone says nothing (every image uses the same id):
// the image key and row are compared too. Embeddings of unknown origin never compare equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace smolvlm {

class KvContent {
 public:
  // An image of a prompt: the key of its pixels and how many feature rows (image tokens) it fills.
  struct Image {
    std::string key;
    int64_t rows = 0;
  };
  // A prompt: `ids`, where the tokens equal to `image_token` take, in order, the rows of `images`.
  // Error(BadInput) when the image tokens and the images' rows differ in number.
  static KvContent of_prompt(std::span<const int64_t> ids, int64_t image_token, const std::vector<Image>& images);
  // Rows whose embeddings came from elsewhere (a caller's buffer): they match nothing.
  static KvContent opaque(int64_t rows);

  size_t size() const { return entries_.size(); }
  // Appends token ids embedded from the vocabulary.
  void append_ids(std::span<const int64_t> ids);
  // Appends entries [from, to) of `other`.
  void append(const KvContent& other, size_t from, size_t to);
  // Keeps the first n entries (n <= size()).
  void truncate(size_t n);
  void clear() { truncate(0); }
  // The number of leading entries equal in both.
  size_t common_prefix(const KvContent& other) const;

 private:
  static constexpr int32_t kText = -1, kOpaque = -2;
  struct Entry {
    int64_t id = 0;
    int32_t image = kText;  // index into images_, or kText / kOpaque
    int64_t row = 0;        // row of the image's features
  };
  bool same(const Entry& a, const KvContent& other, const Entry& b) const;
  int32_t image_index(const std::string& key);

  std::vector<Entry> entries_;
  std::vector<std::string> images_;  // keys, in order of first use
};

}  // namespace smolvlm
