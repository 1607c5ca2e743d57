#include <strata/core/clock.h>
#include <strata/core/etag.h>

#include <ctime>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ETagTest, QuoteAndUnquote) {
  EXPECT_EQ(UnquoteETag("\"abc\""), "abc");
  EXPECT_EQ(UnquoteETag("  \"abc\" "), "abc");
  EXPECT_EQ(UnquoteETag("W/\"abc\""), "abc");
  EXPECT_EQ(UnquoteETag("abc"), "abc");
  EXPECT_EQ(UnquoteETag("\""), "\"");
  EXPECT_EQ(QuoteETag("abc"), "\"abc\"");
  EXPECT_EQ(QuoteETag("\"abc\""), "\"abc\"");
  EXPECT_EQ(QuoteETag("abc-3"), "\"abc-3\"");
}

TEST(ETagTest, ListMatches) {
  EXPECT_TRUE(ETagListMatches("\"a\", \"b\"", "b"));
  EXPECT_TRUE(ETagListMatches("*", "anything"));
  EXPECT_TRUE(ETagListMatches("W/\"a\"", "a"));
  EXPECT_FALSE(ETagListMatches("\"a\", \"b\"", "c"));
  EXPECT_FALSE(ETagListMatches("", "c"));
}

TEST(ClockTest, WallIsUnixTimeAndMonotonicNeverGoesBack) {
  const int64_t wall = NowUnixNanos();
  EXPECT_LE(std::llabs(wall / 1'000'000'000 - static_cast<int64_t>(std::time(nullptr))), 2);
  int64_t prev = MonotonicNanos();
  for (int i = 0; i < 1000; ++i) {
    const int64_t now = MonotonicNanos();
    ASSERT_GE(now, prev);
    prev = now;
  }
}

}  // namespace
}  // namespace strata
