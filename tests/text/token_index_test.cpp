// The flat vocabulary and merge tables: lookups, replacement rules and growth.
#include "text/token_index.h"

#include <gtest/gtest.h>

#include <string>

namespace smolvlm::text {
namespace {

TEST(TokenIndex, FindsInsertedTokensAndNothingElse) {
  TokenIndex index;
  EXPECT_EQ(index.find("a"), -1);  // empty: no slots yet
  index.insert_or_assign("a", 7);
  index.insert_or_assign("", 3);
  index.insert_or_assign("a longer token that is not stored inline", 11);
  EXPECT_EQ(index.find("a"), 7);
  EXPECT_EQ(index.find(""), 3);
  EXPECT_EQ(index.find("a longer token that is not stored inline"), 11);
  EXPECT_EQ(index.find("b"), -1);
  EXPECT_EQ(index.find("a "), -1);
  EXPECT_EQ(index.size(), 3u);
}

TEST(TokenIndex, RepeatedTokenTakesTheLastId) {
  TokenIndex index;
  index.insert_or_assign("x", 1);
  index.insert_or_assign("y", 2);
  index.insert_or_assign("x", 5);
  EXPECT_EQ(index.find("x"), 5);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.key(0), "x");
  EXPECT_EQ(index.value(0), 5);
}

TEST(TokenIndex, GrowsPastItsReservation) {
  TokenIndex index;
  index.reserve(4);
  constexpr int kTokens = 100000;
  for (int i = 0; i < kTokens; ++i) index.insert_or_assign("t" + std::to_string(i), i);
  ASSERT_EQ(index.size(), size_t(kTokens));
  for (int i = 0; i < kTokens; ++i) ASSERT_EQ(index.find("t" + std::to_string(i)), i) << i;
  EXPECT_EQ(index.find("t" + std::to_string(kTokens)), -1);
  for (size_t i = 0; i < index.size(); ++i) ASSERT_EQ(index.key(i), "t" + std::to_string(index.value(i)));
}

TEST(MergeTable, RepeatedPairTakesTheLastEntry) {
  MergeTable merges;
  EXPECT_EQ(merges.find(0, 0), nullptr);  // empty
  merges.insert_or_assign(0, 0, {4, 9});  // ids 0 and 0: a key of zero is a real pair
  merges.insert_or_assign(1, 2, {0, 8});
  merges.insert_or_assign(1, 2, {6, 3});
  ASSERT_NE(merges.find(0, 0), nullptr);
  EXPECT_EQ(merges.find(0, 0)->rank, 4);
  EXPECT_EQ(merges.find(0, 0)->new_id, 9);
  ASSERT_NE(merges.find(1, 2), nullptr);
  EXPECT_EQ(merges.find(1, 2)->rank, 6);
  EXPECT_EQ(merges.find(1, 2)->new_id, 3);
  EXPECT_EQ(merges.find(2, 1), nullptr);
}

TEST(MergeTable, GrowsPastItsReservation) {
  MergeTable merges;
  merges.reserve(2);
  constexpr int kSide = 400;
  for (int a = 0; a < kSide; ++a)
    for (int b = 0; b < kSide; b += 3) merges.insert_or_assign(a, b, {a * kSide + b, a + b});
  for (int a = 0; a < kSide; ++a)
    for (int b = 0; b < kSide; ++b) {
      const MergeTable::Merge* m = merges.find(a, b);
      if (b % 3 != 0) {
        ASSERT_EQ(m, nullptr) << a << " " << b;
        continue;
      }
      ASSERT_NE(m, nullptr) << a << " " << b;
      ASSERT_EQ(m->rank, a * kSide + b);
      ASSERT_EQ(m->new_id, a + b);
    }
}

}  // namespace
}  // namespace smolvlm::text
