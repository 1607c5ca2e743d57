#include <strata/core/coding.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(CodingTest, FixedLittleEndianLayout) {
  std::string s;
  PutFixed32(&s, 0x04030201);
  PutFixed64(&s, 0x0807060504030201ull);
  PutFixed16(&s, 0x0201);
  ASSERT_EQ(s.size(), 14u);
  EXPECT_EQ(s.substr(0, 4), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(s.substr(4, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(DecodeFixed32(s.data()), 0x04030201u);
  EXPECT_EQ(DecodeFixed64(s.data() + 4), 0x0807060504030201ull);
  EXPECT_EQ(DecodeFixed16(s.data() + 12), 0x0201);
  std::string_view in(s);
  uint32_t a;
  uint64_t b;
  ASSERT_TRUE(GetFixed32(&in, &a));
  ASSERT_TRUE(GetFixed64(&in, &b));
  EXPECT_EQ(in.size(), 2u);
  EXPECT_FALSE(GetFixed32(&in, &a)) << "2 bytes left cannot hold a fixed32";
  EXPECT_EQ(in.size(), 2u) << "a failed Get consumes nothing";
}

TEST(CodingTest, BigEndianSortsByNumber) {
  std::vector<uint64_t> values = {0, 1, 255, 256, 65535, 1ull << 32, std::numeric_limits<uint64_t>::max()};
  std::string prev;
  for (uint64_t v : values) {
    std::string k;
    PutBigEndian64(&k, v);
    EXPECT_EQ(DecodeBigEndian64(k.data()), v);
    if (!prev.empty()) EXPECT_LT(prev, k) << v;
    prev = k;
  }
  char buf[4];
  EncodeBigEndian32(buf, 0x01020304);
  EXPECT_EQ(std::string(buf, 4), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(DecodeBigEndian32(buf), 0x01020304u);
}

TEST(CodingTest, VarintsRoundTripAndRejectMalformed) {
  std::vector<uint64_t> values = {0, 1, 127, 128, 300, 16383, 16384, (1ull << 35) + 7,
                                  std::numeric_limits<uint64_t>::max()};
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  PutVarint32(&s, std::numeric_limits<uint32_t>::max());
  std::string_view in(s);
  for (uint64_t v : values) {
    uint64_t got = 0;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
  }
  uint32_t v32 = 0;
  ASSERT_TRUE(GetVarint32(&in, &v32));
  EXPECT_EQ(v32, std::numeric_limits<uint32_t>::max());
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(VarintLength(127), 1);
  EXPECT_EQ(VarintLength(128), 2);
  EXPECT_EQ(VarintLength(std::numeric_limits<uint64_t>::max()), kMaxVarint64Bytes);
  // Truncated: a continuation bit with nothing after it.
  std::string_view cut("\x80\x80", 2);
  uint64_t x;
  EXPECT_FALSE(GetVarint64(&cut, &x));
  EXPECT_EQ(cut.size(), 2u);
  // Too long for 64 bits (11 bytes), and too big for 32.
  std::string_view longer("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  EXPECT_FALSE(GetVarint64(&longer, &x));
  std::string big;
  PutVarint64(&big, 1ull << 33);
  std::string_view bigv(big);
  EXPECT_FALSE(GetVarint32(&bigv, &v32));
}

}  // namespace
}  // namespace strata
