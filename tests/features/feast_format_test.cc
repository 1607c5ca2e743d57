// Feast's Redis online format, checked against the published encodings:
// MurmurHash3 x86_32 vectors (the mmh3 package's documented values), protobuf
// wire bytes of feast.types.Value and google.protobuf.Timestamp written out
// from the protobuf encoding spec, and malformed messages refused.
#include "features/feast_format.h"

#include <gtest/gtest.h>

#include "testutil/testutil.h"

namespace strata::features::feast_format {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(FeastFormatTest, Murmur3MatchesMmh3) {
  // mmh3.hash("foo") == -156908512, mmh3.hash("foo", 42) == -1322301282 (signed)
  EXPECT_EQ(Murmur3_32("foo"), static_cast<uint32_t>(-156908512));
  EXPECT_EQ(Murmur3_32("foo", 42), static_cast<uint32_t>(-1322301282));
  EXPECT_EQ(Murmur3_32(""), 0u);  // seed 0, no data
  // The field is the hash's 4 little-endian bytes.
  const uint32_t h = Murmur3_32("view:feat");
  EXPECT_EQ(FeatureField("view", "feat"),
            Bytes({static_cast<int>(h & 0xff), static_cast<int>((h >> 8) & 0xff),
                   static_cast<int>((h >> 16) & 0xff), static_cast<int>(h >> 24)}));
  EXPECT_EQ(TimestampField("driver_stats"), "_ts:driver_stats");
}

TEST(FeastFormatTest, ValueWireBytes) {
  EXPECT_EQ(EncodeValue(DataType::Int64(), OnlineValue::Int(30)), Bytes({0x20, 30}));
  EXPECT_EQ(EncodeValue(DataType::Int64(), OnlineValue::Int(0)),
            Bytes({0x20, 0}));  // oneof: zero is kept
  EXPECT_EQ(EncodeValue(DataType::Int64(), OnlineValue::Int(300)), Bytes({0x20, 0xac, 0x02}));
  EXPECT_EQ(EncodeValue(DataType::Int32(), OnlineValue::Int(-1)),
            Bytes({0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  EXPECT_EQ(EncodeValue(DataType::String(), OnlineValue::String("ab")), Bytes({0x12, 2, 'a', 'b'}));
  EXPECT_EQ(EncodeValue(DataType::Binary(), OnlineValue{OnlineValue::kBytes, 0, 0, "z"}),
            Bytes({0x0a, 1, 'z'}));
  EXPECT_EQ(EncodeValue(DataType::Bool(), OnlineValue{OnlineValue::kBool, 1, 0, {}}),
            Bytes({0x38, 1}));
  // 1.0 as a double: 0x3ff0000000000000; as a float: 0x3f800000.
  EXPECT_EQ(EncodeValue(DataType::Double(), OnlineValue::Double(1.0)),
            Bytes({0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  EXPECT_EQ(EncodeValue(DataType::Float(), OnlineValue::Double(1.0)),
            Bytes({0x35, 0, 0, 0x80, 0x3f}));
  // Timestamps as unix_timestamp_val in seconds (floor).
  EXPECT_EQ(
      EncodeValue(DataType::Timestamp(), OnlineValue{OnlineValue::kTimestamp, 5'500'000, 0, {}}),
      Bytes({0x40, 5}));
  EXPECT_EQ(EncodeValue(DataType::Int64(), OnlineValue::Null()), "");  // ValueProto(): empty
}

TEST(FeastFormatTest, ValueDecodesByDeclaredType) {
  ASSERT_OK_AND_ASSIGN(OnlineValue v, DecodeValue(DataType::Int64(), Bytes({0x20, 0xac, 0x02})));
  EXPECT_EQ(v, OnlineValue::Int(300));
  ASSERT_OK_AND_ASSIGN(
      v, DecodeValue(DataType::Int32(), EncodeValue(DataType::Int32(), OnlineValue::Int(-7))));
  EXPECT_EQ(v, OnlineValue::Int(-7));
  ASSERT_OK_AND_ASSIGN(
      v, DecodeValue(DataType::Double(), Bytes({0x35, 0, 0, 0x80, 0x3f})));  // float_val
  EXPECT_EQ(v, OnlineValue::Double(1.0));
  ASSERT_OK_AND_ASSIGN(v, DecodeValue(DataType::Double(), Bytes({0x20, 3})));  // int64_val widens
  EXPECT_EQ(v, OnlineValue::Double(3.0));
  ASSERT_OK_AND_ASSIGN(v, DecodeValue(DataType::String(), Bytes({0x12, 2, 'h', 'i'})));
  EXPECT_EQ(v, OnlineValue::String("hi"));
  ASSERT_OK_AND_ASSIGN(v, DecodeValue(DataType::Timestamp(), Bytes({0x40, 5})));
  EXPECT_EQ(v.kind, OnlineValue::kTimestamp);
  EXPECT_EQ(v.i, 5'000'000);
  ASSERT_OK_AND_ASSIGN(v, DecodeValue(DataType::Int64(), ""));
  EXPECT_EQ(v.kind, OnlineValue::kNull);
  ASSERT_OK_AND_ASSIGN(v,
                       DecodeValue(DataType::Int64(), Bytes({0x98, 0x01, 0x00})));  // null_val = 19
  EXPECT_EQ(v.kind, OnlineValue::kNull);
  // Unknown fields are skipped (a newer Feast may add members).
  ASSERT_OK_AND_ASSIGN(v, DecodeValue(DataType::Int64(),
                                      Bytes({0xa0, 0x06, 0x01, 0x20, 0x04})));  // field 100, then 4
  EXPECT_EQ(v, OnlineValue::Int(4));
  // Refused: the wrong kind, a list, truncated or malformed bytes.
  EXPECT_STATUS_CODE(DecodeValue(DataType::Int64(), Bytes({0x12, 1, 'x'})),
                     StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(DecodeValue(DataType::Int64(), Bytes({0x72, 2, 0x08, 0x01})),
                     StatusCode::kNotSupported);
  EXPECT_STATUS_CODE(DecodeValue(DataType::String(), Bytes({0x12, 5, 'x'})),
                     StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(DecodeValue(DataType::Int64(), Bytes({0x20})), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(DecodeValue(DataType::Int64(), Bytes({0x21, 1})),
                     StatusCode::kInvalidArgument);  // wire 1
}

TEST(FeastFormatTest, TimestampWireBytes) {
  // seconds = 1700000000 (varint 0x80 0xe2 0xcf 0xaa 0x06), nanos 500000000.
  EXPECT_EQ(EncodeTimestamp(1700000000LL * 1000000), Bytes({0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06}));
  EXPECT_EQ(EncodeTimestamp(1700000000LL * 1000000 + 500000),
            Bytes({0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01}));
  EXPECT_EQ(EncodeTimestamp(0), "");
  ASSERT_OK_AND_ASSIGN(int64_t us,
                       DecodeTimestamp(EncodeTimestamp(1700000000LL * 1000000 + 500000)));
  EXPECT_EQ(us, 1700000000LL * 1000000 + 500000);
  ASSERT_OK_AND_ASSIGN(
      us, DecodeTimestamp(EncodeTimestamp(-1)));  // before the epoch: seconds -1, nanos 999999000
  EXPECT_EQ(us, -1);
  EXPECT_STATUS_CODE(DecodeTimestamp(Bytes({0x10, 0xff, 0xff, 0xff, 0xff, 0x0f})),
                     StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(DecodeTimestamp(Bytes({0x08})), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::features::feast_format
