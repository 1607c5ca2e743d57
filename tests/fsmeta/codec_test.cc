// FS metadata value codecs: what decodes re-encodes to the same bytes, and
// damaged values are refused.
#include "fsmeta/codec.h"

#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

namespace strata::fsmeta::codec {
namespace {

TEST(CodecTest, DentRoundTripsAndRejectsABadTypeByte) {
  for (uint32_t mode : {uint32_t{S_IFREG | 0644}, uint32_t{S_IFDIR | 0755}, uint32_t{S_IFLNK}}) {
    const std::string v = EncodeDent(mode, 42);
    uint32_t type = 0;
    Ino ino = 0;
    ASSERT_TRUE(DecodeDent(v, &type, &ino));
    EXPECT_EQ(mode & S_IFMT, type);
    EXPECT_EQ(42u, ino);
    EXPECT_EQ(v, EncodeDent(type, ino));
  }
  // The fuzzer's input: a type byte of 0xfe, which no S_IFMT value encodes to.
  std::string bad = EncodeDent(S_IFREG, 42);
  bad[0] = static_cast<char>(0xfe);
  uint32_t type = 0;
  Ino ino = 0;
  EXPECT_FALSE(DecodeDent(bad, &type, &ino));
  EXPECT_FALSE(DecodeDent(bad.substr(0, 8), &type, &ino));
}

}  // namespace
}  // namespace strata::fsmeta::codec
