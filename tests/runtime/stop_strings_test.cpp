#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/stop_strings.h"

namespace smolvlm {
namespace {

// Feeds `pieces` one by one; returns everything shown and whether a stop was seen.
std::pair<std::string, bool> run(std::vector<std::string> stops, const std::vector<std::string>& pieces) {
  StopStringFilter f(std::move(stops));
  std::string shown;
  for (const auto& p : pieces) {
    shown += f.push(p);
    if (f.stopped()) return {shown, true};
  }
  return {shown + f.finish(), false};
}

TEST(StopStrings, SplitAcrossPiecesIsFoundAndNeverShown) {
  StopStringFilter f({"END"});
  EXPECT_EQ(f.push("abc E"), "abc ");  // "E" may start the stop: held
  EXPECT_EQ(f.push("N"), "");
  EXPECT_EQ(f.push("Dxyz"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.finish(), "");
}

TEST(StopStrings, HeldTextIsReleasedWhenItCannotBeAStop) {
  StopStringFilter f({"END"});
  EXPECT_EQ(f.push("E"), "");
  EXPECT_EQ(f.push("x"), "Ex");
  EXPECT_EQ(f.push("EN"), "");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.finish(), "EN");  // generation ended for another reason: nothing is lost
}

TEST(StopStrings, AtTheStartAbsentAndTheEarliestOfSeveral) {
  EXPECT_EQ(run({"Hi"}, {"Hi there"}), std::make_pair(std::string(), true));
  EXPECT_EQ(run({"zzz"}, {"Hi ", "there"}), std::make_pair(std::string("Hi there"), false));
  EXPECT_EQ(run({"there", "Hi t"}, {"Oh. Hi th", "ere"}), std::make_pair(std::string("Oh. "), true));
  // A stop inside one piece, with text after it in the same piece.
  EXPECT_EQ(run({"\n\n"}, {"line one\n\nline two"}), std::make_pair(std::string("line one"), true));
}

TEST(StopStrings, MultibyteStopsSplitInsideTheirBytes) {
  // "。" is three bytes; a piece boundary may fall anywhere in the stop's characters.
  EXPECT_EQ(run({"。終"}, {"文", "。", "終わり"}), std::make_pair(std::string("文"), true));
}

TEST(StopStrings, AnEmptyStopIsRefused) {
  try {
    StopStringFilter f({"ok", ""});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("stop string 1 is empty"), std::string::npos);
  }
}

}  // namespace
}  // namespace smolvlm
