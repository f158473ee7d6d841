// Flat open-addressing tables for the BPE vocabulary and merge ranks. A 49K-token vocabulary and
// its 49K merges are built on every tokenizer load: node-based maps spent most of that time in
// allocation and cache misses; these keep every entry in a few contiguous arrays. Internal to the
// text module.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace smolvlm::text {

// Token string -> id. Each distinct token is stored once; inserting a token again replaces its id.
class TokenIndex {
 public:
  void reserve(size_t tokens);
  void insert_or_assign(std::string token, int32_t id);
  // The id of `token`, or -1.
  int32_t find(std::string_view token) const;
  size_t size() const { return keys_.size(); }
  const std::string& key(size_t i) const { return keys_[i]; }
  int32_t value(size_t i) const { return values_[i]; }

 private:
  static uint64_t hash(std::string_view s);
  static uint64_t slot_entry(uint64_t h, size_t index);
  size_t slot_of(std::string_view s, uint64_t h) const;  // the slot holding s, or the empty one to use
  void rehash(size_t slots);

  std::vector<std::string> keys_;
  std::vector<int32_t> values_;
  // (high 32 bits of the hash) << 32 | (key index + 1); 0 marks an empty slot. Power-of-two size,
  // at most half full.
  std::vector<uint64_t> slots_;
};

// (left id, right id) -> (rank, merged id). Inserting a pair again replaces its entry, as HF tokenizers'
// merge map (collected from the merges in order) does.
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  void reserve(size_t merges);
  void insert_or_assign(int32_t left, int32_t right, Merge m);
  // nullptr when the pair does not merge.
  const Merge* find(int32_t left, int32_t right) const;

 private:
  struct Slot {
    uint64_t key;  // kEmpty or (left << 32 | right)
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are non-negative, so no pair has this key
  static uint64_t key_of(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t slot_of(uint64_t key) const;

  std::vector<Slot> slots_;  // power-of-two size, at most half full
  size_t count_ = 0;
};

}  // namespace smolvlm::text
