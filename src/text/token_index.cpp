#include "text/token_index.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace smolvlm::text {

namespace {

// A power-of-two slot count that keeps `entries` at most half the slots.
size_t slots_for(size_t entries) { return std::bit_ceil(std::max<size_t>(16, entries * 2)); }

}  // namespace

uint64_t TokenIndex::hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

uint64_t TokenIndex::slot_entry(uint64_t h, size_t index) { return ((h >> 32) << 32) | (index + 1); }

void TokenIndex::reserve(size_t tokens) {
  keys_.reserve(tokens);
  values_.reserve(tokens);
  if (slots_for(tokens) > slots_.size()) rehash(slots_for(tokens));
}

void TokenIndex::rehash(size_t slots) {
  slots_.assign(slots, 0);
  for (size_t i = 0; i < keys_.size(); ++i) {
    const uint64_t h = hash(keys_[i]);
    slots_[slot_of(keys_[i], h)] = slot_entry(h, i);
  }
}

size_t TokenIndex::slot_of(std::string_view s, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = h >> 32;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return i;
    if ((slot >> 32) == tag && keys_[(slot & 0xffffffffu) - 1] == s) return i;
  }
}

void TokenIndex::insert_or_assign(std::string token, int32_t id) {
  if (slots_for(keys_.size() + 1) > slots_.size()) rehash(slots_for(keys_.size() * 2 + 1));
  const uint64_t h = hash(token);
  const size_t i = slot_of(token, h);
  if (slots_[i] != 0) {
    values_[(slots_[i] & 0xffffffffu) - 1] = id;
    return;
  }
  keys_.push_back(std::move(token));
  values_.push_back(id);
  slots_[i] = slot_entry(h, keys_.size() - 1);
}

int32_t TokenIndex::find(std::string_view token) const {
  if (slots_.empty()) return -1;
  const uint64_t slot = slots_[slot_of(token, hash(token))];
  return slot == 0 ? -1 : values_[(slot & 0xffffffffu) - 1];
}

// ---------------------------------------------------------------------------------------------

void MergeTable::reserve(size_t merges) {
  if (slots_for(merges) <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(slots_for(merges), Slot{kEmpty, {}});
  for (const Slot& s : old)
    if (s.key != kEmpty) slots_[slot_of(s.key)] = s;
}

size_t MergeTable::slot_of(uint64_t key) const {
  // Fibonacci hashing: the product's high bits mix both ids.
  const int shift = 64 - std::countr_zero(slots_.size());
  const size_t mask = slots_.size() - 1;
  for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift;; i = (i + 1) & mask)
    if (slots_[i].key == kEmpty || slots_[i].key == key) return i;
}

void MergeTable::insert_or_assign(int32_t left, int32_t right, Merge m) {
  if (slots_for(count_ + 1) > slots_.size()) reserve(count_ * 2 + 1);
  const uint64_t key = key_of(left, right);
  Slot& s = slots_[slot_of(key)];
  if (s.key != key) ++count_;
  s = Slot{key, m};
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t key = key_of(left, right);
  const Slot& s = slots_[slot_of(key)];
  return s.key == key ? &s.merge : nullptr;
}

}  // namespace smolvlm::text
