#include <limits>
#include <random>

#include <gtest/gtest.h>

#include <strata/core/strings.h>

#include "testutil/testutil.h"

namespace strata {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(StringsTest, Hex) {
  EXPECT_EQ(HexEncode(std::string("\x00\x01\xab\xff", 4)), "0001abff");
  EXPECT_EQ(HexEncode(""), "");
  EXPECT_EQ(*HexDecode("0001ABff"), std::string("\x00\x01\xab\xff", 4));
  EXPECT_EQ(*HexDecode(""), "");
  EXPECT_FALSE(HexDecode("abc"));
  EXPECT_FALSE(HexDecode("zz"));
  EXPECT_FALSE(HexDecode("0x"));
}

TEST(StringsTest, Base64Rfc4648Vectors) {
  const std::pair<const char*, const char*> v[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (auto [plain, enc] : v) {
    EXPECT_EQ(Base64Encode(plain), enc);
    auto d = Base64Decode(enc);
    ASSERT_TRUE(d) << enc;
    EXPECT_EQ(*d, plain);
  }
}

TEST(StringsTest, Base64RoundTripRandom) {
  std::mt19937 rng(5);
  for (size_t n = 0; n < 200; ++n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, s);
  }
}

TEST(StringsTest, Base64RejectsMalformed) {
  EXPECT_FALSE(Base64Decode("Zg="));      // not a multiple of 4
  EXPECT_FALSE(Base64Decode("Zg"));       // missing padding
  EXPECT_FALSE(Base64Decode("Z==="));     // too much padding
  EXPECT_FALSE(Base64Decode("===="));
  EXPECT_FALSE(Base64Decode("Zg==Zm8="));  // padding in the middle
  EXPECT_FALSE(Base64Decode("Z=g="));
  EXPECT_FALSE(Base64Decode("Zm9v\n"));
  EXPECT_FALSE(Base64Decode("Zm 9"));
  EXPECT_FALSE(Base64Decode("Zm-_"));      // URL alphabet is not standard base64
  EXPECT_FALSE(Base64Decode("Zm9*"));
}

TEST(StringsTest, UriEncodeSigV4) {
  EXPECT_EQ(UriEncode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(UriEncode("a b", false), "a%20b");  // never '+'
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("a/b", true), "a/b");
  EXPECT_EQ(UriEncode("a+b=c&d*e", false), "a%2Bb%3Dc%26d%2Ae");
  EXPECT_EQ(UriEncode("\xc3\xa9", false), "%C3%A9");  // UTF-8 bytes, upper-case hex
  EXPECT_EQ(UriEncode("", false), "");
}

TEST(StringsTest, UriDecode) {
  EXPECT_EQ(*UriDecode("a%20b%2fc"), "a b/c");
  EXPECT_EQ(*UriDecode("a+b"), "a+b");
  EXPECT_EQ(*UriDecode("a+b", true), "a b");
  EXPECT_EQ(*UriDecode("%C3%A9"), "\xc3\xa9");
  EXPECT_FALSE(UriDecode("%"));
  EXPECT_FALSE(UriDecode("%2"));
  EXPECT_FALSE(UriDecode("a%zz"));
  EXPECT_FALSE(UriDecode("abc%4"));
  for (std::string s : {"hello world/é?&=+%", "", "~-._"}) {
    EXPECT_EQ(*UriDecode(UriEncode(s, false)), s);
    EXPECT_EQ(*UriDecode(UriEncode(s, true)), s);
  }
}

TEST(StringsTest, CaseTrimSplit) {
  EXPECT_EQ(ToLower("X-Amz-Date"), "x-amz-date");
  EXPECT_TRUE(IEquals("Content-Type", "content-TYPE"));
  EXPECT_FALSE(IEquals("abc", "abcd"));
  EXPECT_EQ(Trim("  \t a b \r\n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_TRUE(StartsWith("x-amz-meta-a", "x-amz-meta-"));
  EXPECT_FALSE(StartsWith("x-am", "x-amz"));
  auto v = Split("a,,b,", ',');
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], "a");
  EXPECT_EQ(v[1], "");
  EXPECT_EQ(v[2], "b");
  EXPECT_EQ(v[3], "");
  EXPECT_EQ(Split("abc", ',').size(), 1u);
  EXPECT_EQ(Split("", ',').size(), 1u);
}

TEST(StringsTest, ParseIntegers) {
  EXPECT_EQ(*ParseUint64("0"), 0u);
  EXPECT_EQ(*ParseUint64("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseUint64("18446744073709551616"));
  EXPECT_FALSE(ParseUint64(""));
  EXPECT_FALSE(ParseUint64("-1"));
  EXPECT_FALSE(ParseUint64("+1"));
  EXPECT_FALSE(ParseUint64(" 1"));
  EXPECT_FALSE(ParseUint64("1 "));
  EXPECT_FALSE(ParseUint64("12a"));
  EXPECT_EQ(*ParseInt64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(*ParseInt64("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(ParseInt64("9223372036854775808"));
  EXPECT_EQ(*ParseInt64("-5"), -5);
  EXPECT_FALSE(ParseInt64("-"));
  EXPECT_FALSE(ParseInt64("--5"));
  EXPECT_FALSE(ParseInt64(""));
}

TEST(StringsTest, XmlEscape) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(XmlEscape("plain"), "plain");
}

TEST(StringsTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii text, long enough for the fast path"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xc3"));                                  // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));                                  // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));                              // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));                          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));                          // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));                      // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("abcdefgh\xc3("));
}

TEST(StringsTest, FormatDates) {
  // 1994-11-15T08:12:31Z = 784887151
  const int64_t t = 784887151 * kSec;
  EXPECT_EQ(FormatHttpDate(t), "Tue, 15 Nov 1994 08:12:31 GMT");
  EXPECT_EQ(FormatAmzDate(t), "19941115T081231Z");
  EXPECT_EQ(FormatIso8601(t + 7'000'000), "1994-11-15T08:12:31.007Z");
  // 2024-01-02T03:04:05Z = 1704164645
  const int64_t u = 1704164645 * kSec;
  EXPECT_EQ(FormatIso8601(u), "2024-01-02T03:04:05.000Z");
  EXPECT_EQ(FormatAmzDate(u), "20240102T030405Z");
  EXPECT_EQ(FormatHttpDate(u), "Tue, 02 Jan 2024 03:04:05 GMT");
  EXPECT_EQ(FormatHttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(FormatIso8601(u + 999'999'999), "2024-01-02T03:04:05.999Z");
  // Leap day, and before the epoch.
  EXPECT_EQ(FormatIso8601(951782400LL * kSec), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(FormatHttpDate(-1 * kSec), "Wed, 31 Dec 1969 23:59:59 GMT");
}

TEST(StringsTest, ParseDates) {
  const int64_t t = 784887151 * kSec;
  EXPECT_EQ(*ParseHttpDate("Tue, 15 Nov 1994 08:12:31 GMT"), t);
  EXPECT_EQ(*ParseHttpDate("Tuesday, 15-Nov-94 08:12:31 GMT"), t);  // RFC 850
  EXPECT_EQ(*ParseHttpDate("Tue Nov 15 08:12:31 1994"), t);         // asctime
  EXPECT_EQ(*ParseHttpDate("Sun Nov  6 08:49:37 1994"), 784111777 * kSec);
  EXPECT_FALSE(ParseHttpDate("Tue, 15 Nov 1994 08:12:31"));  // no zone
  EXPECT_FALSE(ParseHttpDate("Tue, 31 Feb 1994 08:12:31 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 15 Foo 1994 08:12:31 GMT"));
  EXPECT_FALSE(ParseHttpDate("15 Nov 1994 08:12:31 GMT"));
  EXPECT_FALSE(ParseHttpDate(""));

  EXPECT_EQ(*ParseAmzDate("19941115T081231Z"), t);
  EXPECT_FALSE(ParseAmzDate("19941115T081231"));
  EXPECT_FALSE(ParseAmzDate("19941315T081231Z"));
  EXPECT_FALSE(ParseAmzDate("19941115T251231Z"));
  EXPECT_FALSE(ParseAmzDate("1994111xT081231Z"));

  EXPECT_EQ(*ParseIso8601("1994-11-15T08:12:31Z"), t);
  EXPECT_EQ(*ParseIso8601("1994-11-15T08:12:31.007Z"), t + 7'000'000);
  EXPECT_EQ(*ParseIso8601("1994-11-15T08:12:31.123456789Z"), t + 123456789);
  EXPECT_EQ(*ParseIso8601("1994-11-15T10:12:31+02:00"), t);
  EXPECT_FALSE(ParseIso8601("1994-11-15T08:12:31"));
  EXPECT_FALSE(ParseIso8601("1994-11-15 08:12:31Z"));
  EXPECT_FALSE(ParseIso8601("1994-11-15T08:12:31.Z"));
  EXPECT_FALSE(ParseIso8601("1994-11-15T08:12:31Zjunk"));
}

// Valid calendar dates whose Unix nanoseconds do not fit int64 (outside
// 1677-09-21..2262-04-11) are refused, not wrapped (a fuzzer found the overflow).
TEST(StringsTest, DatesOutsideInt64NanosAreRefused) {
  const int64_t last_sec = (std::numeric_limits<int64_t>::max() / kSec) * kSec;
  EXPECT_EQ(*ParseIso8601("2262-04-11T23:47:16Z"), last_sec);
  EXPECT_FALSE(ParseIso8601("2262-04-11T23:47:17Z"));
  EXPECT_FALSE(ParseIso8601("9999-12-31T23:59:59.999999999Z"));
  EXPECT_FALSE(ParseIso8601("0001-01-01T00:00:00Z"));
  EXPECT_FALSE(ParseIso8601("1677-09-21T00:12:43Z"));
  EXPECT_TRUE(ParseIso8601("1677-09-21T00:12:44Z"));
  // In range as a local time, out of range once the zone offset is applied.
  EXPECT_FALSE(ParseIso8601("2262-04-11T23:47:16-00:01"));
  EXPECT_FALSE(ParseAmzDate("99991231T235959Z"));
  EXPECT_FALSE(ParseHttpDate("Fri, 31 Dec 9999 23:59:59 GMT"));
  EXPECT_FALSE(ParseHttpDate("Mon Jan  1 00:00:00 0001"));
}

TEST(StringsTest, DateRoundTrips) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 2000; ++i) {
    // Any instant from 1970 to ~2100, at millisecond precision.
    const int64_t ms = static_cast<int64_t>(rng() % 4'102'444'800'000ULL);
    const int64_t t = ms * 1'000'000;
    EXPECT_EQ(*ParseIso8601(FormatIso8601(t)), t);
    const int64_t s = (t / kSec) * kSec;
    EXPECT_EQ(*ParseHttpDate(FormatHttpDate(t)), s);
    EXPECT_EQ(*ParseAmzDate(FormatAmzDate(t)), s);
  }
}

TEST(StringsTest, FormatMatchesGmtime) {
  // Cross-check the calendar code against libc.
  std::mt19937_64 rng(13);
  for (int i = 0; i < 2000; ++i) {
    const time_t secs = static_cast<time_t>(rng() % 4'102'444'800ULL);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[64];
    strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    EXPECT_EQ(FormatHttpDate(static_cast<int64_t>(secs) * kSec), buf);
    EXPECT_EQ(timegm(&tm), secs);
  }
}

TEST(StringsTest, NowIsSane) {
  const int64_t now = NowUnixNanos();
  EXPECT_GT(now, 1'600'000'000LL * kSec);  // after 2020
  EXPECT_LT(now, 4'102'444'800LL * kSec);  // before 2100
}

TEST(ParseByteSizeTest, Units) {
  EXPECT_EQ(*ParseByteSize("123"), 123u);
  EXPECT_EQ(*ParseByteSize("4k"), 4096u);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseByteSize("100G"), 100ull << 30);
  EXPECT_EQ(*ParseByteSize("1.5T"), 3ull << 39);
  EXPECT_EQ(*ParseByteSize(" 2 GB "), 2ull << 30);
  EXPECT_STATUS_CODE(ParseByteSize("lots"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseByteSize("5X"), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseByteSize("8MB"), 8ull << 20) << "awscli's spelling, from the CLI's former copy";
  EXPECT_STATUS_CODE(ParseByteSize("1.2.3M"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ParseByteSize("99999999999T"), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
