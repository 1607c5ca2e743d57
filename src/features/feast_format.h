// Feast's published online-store format for Redis, written from the format's
// description (Feast's "Online Store Format" spec, key_encoding_utils.py,
// Value.proto): the pieces a Feast reader or writer agrees with byte for byte.
//
//   hash key   = serialized entity key (v3, SerializeEntityKey) + project
//   field      = mmh3_x86_32("<view>:<feature>", seed 0), 4 bytes little-endian
//                -> a serialized feast.types.Value
//   "_ts:<view>" -> a serialized google.protobuf.Timestamp (event time)
//
// The protobuf messages are encoded by hand (two small messages; no protoc
// step for the features library). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/features/online.h>
#include <strata/features/table.h>

namespace strata::features::feast_format {

// MurmurHash3 x86 32-bit (what Python's mmh3.hash computes, as unsigned).
uint32_t Murmur3_32(std::string_view data, uint32_t seed = 0);
// The hash field of one feature: Murmur3_32("view:feature") little-endian.
std::string FeatureField(std::string_view view, std::string_view feature);
inline std::string TimestampField(std::string_view view) { return "_ts:" + std::string(view); }

// feast.types.Value for `v`, typed by the feature's declared type (Float32 as
// float_val, Int32 as int32_val, timestamps as unix_timestamp_val in seconds,
// dates as the seconds of their midnight). A null is the empty message, as
// Feast writes it.
std::string EncodeValue(const DataType& type, const OnlineValue& v);
// A feast.types.Value read back as a value of the declared type (ints widen to
// doubles for float features). The empty message and null_val are null.
// InvalidArgument when the message is malformed or holds a kind the type
// cannot take (a string for an Int64 feature, a list).
Result<OnlineValue> DecodeValue(const DataType& type, std::string_view proto);

// google.protobuf.Timestamp: seconds and nanos (microsecond precision here).
std::string EncodeTimestamp(int64_t unix_us);
Result<int64_t> DecodeTimestamp(std::string_view proto);

}  // namespace strata::features::feast_format
