// Feast's Redis online format: mmh3 field names and the two protobuf messages,
// encoded by hand from their published definitions (Value.proto, timestamp.proto).
#include "features/feast_format.h"

#include <bit>
#include <cmath>

#include <fmt/format.h>

#include <strata/core/coding.h>

namespace strata::features::feast_format {

namespace {

// feast.types.Value field numbers (a oneof "val").
enum ValueField : uint32_t {
  kBytesVal = 1,
  kStringVal = 2,
  kInt32Val = 3,
  kInt64Val = 4,
  kDoubleVal = 5,
  kFloatVal = 6,
  kBoolVal = 7,
  kUnixTimestampVal = 8,
  kFirstList = 11,  // bytes_list_val .. unix_timestamp_list_val: 11..18
  kLastList = 18,
  kNullVal = 19,
};

// Protobuf wire types.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

void PutTag(std::string* out, uint32_t field, Wire wire) { PutVarint32(out, (field << 3) | wire); }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

const char* FieldName(uint32_t f) {
  switch (f) {
    case kBytesVal:
      return "bytes_val";
    case kStringVal:
      return "string_val";
    case kInt32Val:
      return "int32_val";
    case kInt64Val:
      return "int64_val";
    case kDoubleVal:
      return "double_val";
    case kFloatVal:
      return "float_val";
    case kBoolVal:
      return "bool_val";
    case kUnixTimestampVal:
      return "unix_timestamp_val";
    case kNullVal:
      return "null_val";
    default:
      return f >= kFirstList && f <= kLastList ? "a list value" : "an unknown field";
  }
}

// One field of a message: its number, wire type and payload.
struct ProtoField {
  uint32_t number = 0;
  Wire wire = kVarint;
  uint64_t scalar = 0;    // varint, fixed32, fixed64
  std::string_view data;  // length-delimited
};

// Reads the next field of `in`; false at the end, an error when malformed.
Result<bool> NextField(std::string_view* in, ProtoField* f) {
  if (in->empty()) return false;
  uint64_t tag = 0;
  if (!GetVarint64(in, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
    return Status::InvalidArgument("malformed protobuf field tag");
  }
  f->number = static_cast<uint32_t>(tag >> 3);
  f->wire = static_cast<Wire>(tag & 7);
  switch (f->wire) {
    case kVarint:
      if (!GetVarint64(in, &f->scalar)) return Status::InvalidArgument("truncated protobuf varint");
      return true;
    case kFixed64:
      if (in->size() < 8) return Status::InvalidArgument("truncated protobuf fixed64");
      f->scalar = DecodeFixed64(in->data());
      in->remove_prefix(8);
      return true;
    case kFixed32:
      if (in->size() < 4) return Status::InvalidArgument("truncated protobuf fixed32");
      f->scalar = DecodeFixed32(in->data());
      in->remove_prefix(4);
      return true;
    case kLen: {
      uint64_t len = 0;
      if (!GetVarint64(in, &len) || len > in->size())
        return Status::InvalidArgument("truncated protobuf bytes");
      f->data = in->substr(0, len);
      in->remove_prefix(len);
      return true;
    }
    default:
      return Status::InvalidArgument(fmt::format("unsupported protobuf wire type {}", tag & 7));
  }
}

Status WrongWire(const ProtoField& f) {
  return Status::InvalidArgument(
      fmt::format("{} has wire type {}", FieldName(f.number), static_cast<int>(f.wire)));
}

// The value a Value message holds, before conversion to the declared type.
Result<OnlineValue> ParseValue(std::string_view proto) {
  OnlineValue v;  // the empty message: null
  ProtoField f;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, NextField(&proto, &f));
    if (!more) break;
    // A oneof: the last member on the wire wins, as protobuf parsers do.
    switch (f.number) {
      case kBytesVal:
      case kStringVal:
        if (f.wire != kLen) return WrongWire(f);
        v = OnlineValue{f.number == kBytesVal ? OnlineValue::kBytes : OnlineValue::kString, 0, 0,
                        std::string(f.data)};
        break;
      case kInt32Val:
        if (f.wire != kVarint) return WrongWire(f);
        v = OnlineValue::Int(static_cast<int32_t>(static_cast<uint32_t>(f.scalar)));
        break;
      case kInt64Val:
      case kUnixTimestampVal:
        if (f.wire != kVarint) return WrongWire(f);
        v = OnlineValue::Int(static_cast<int64_t>(f.scalar));
        if (f.number == kUnixTimestampVal)
          v.kind = OnlineValue::kTimestamp;  // seconds, converted below
        break;
      case kDoubleVal:
        if (f.wire != kFixed64) return WrongWire(f);
        v = OnlineValue::Double(std::bit_cast<double>(f.scalar));
        break;
      case kFloatVal:
        if (f.wire != kFixed32) return WrongWire(f);
        v = OnlineValue::Double(std::bit_cast<float>(static_cast<uint32_t>(f.scalar)));
        break;
      case kBoolVal:
        if (f.wire != kVarint) return WrongWire(f);
        v = OnlineValue{OnlineValue::kBool, f.scalar != 0 ? 1 : 0, 0, {}};
        break;
      case kNullVal:
        v = OnlineValue::Null();
        break;
      default:
        if (f.number >= kFirstList && f.number <= kLastList) {
          return Status::NotSupported(
              "list values (feast *_list_val) are not supported by Strata's online store");
        }
        break;  // an unknown field: skipped, as protobuf parsers do
    }
  }
  return v;
}

const char* KindName(OnlineValue::Kind k) {
  switch (k) {
    case OnlineValue::kNull:
      return "null";
    case OnlineValue::kBool:
      return "bool_val";
    case OnlineValue::kInt:
      return "an integer";
    case OnlineValue::kDouble:
      return "a float/double";
    case OnlineValue::kString:
      return "string_val";
    case OnlineValue::kBytes:
      return "bytes_val";
    case OnlineValue::kTimestamp:
      return "unix_timestamp_val";
  }
  return "?";
}

}  // namespace

uint32_t Murmur3_32(std::string_view data, uint32_t seed) {
  constexpr uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  const size_t n = data.size();
  const char* p = data.data();
  uint32_t h = seed;
  auto mix = [&](uint32_t k) {
    k *= c1;
    k = std::rotl(k, 15);
    k *= c2;
    return k;
  };
  for (size_t i = 0; i + 4 <= n; i += 4) {
    h ^= mix(DecodeFixed32(p + i));
    h = std::rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  const auto* tail = reinterpret_cast<const uint8_t*>(p + (n & ~size_t{3}));
  uint32_t k = 0;
  switch (n & 3) {
    case 3:
      k ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= tail[0];
      h ^= mix(k);
      break;
    default:
      break;
  }
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

std::string FeatureField(std::string_view view, std::string_view feature) {
  std::string name;
  name.reserve(view.size() + 1 + feature.size());
  name.append(view).append(":").append(feature);
  std::string out;
  PutFixed32(&out, Murmur3_32(name));
  return out;
}

std::string EncodeValue(const DataType& type, const OnlineValue& v) {
  std::string out;
  if (v.kind == OnlineValue::kNull) return out;  // Feast writes ValueProto() for a missing value
  const int64_t i = v.kind == OnlineValue::kDouble ? static_cast<int64_t>(v.d) : v.i;
  const double d = v.kind == OnlineValue::kDouble ? v.d : static_cast<double>(v.i);
  switch (type.id) {
    case TypeId::kBool:
      PutTag(&out, kBoolVal, kVarint);
      PutVarint64(&out, i != 0 ? 1 : 0);
      break;
    case TypeId::kInt32:
      PutTag(&out, kInt32Val, kVarint);
      PutVarint64(&out, static_cast<uint64_t>(
                            static_cast<int64_t>(static_cast<int32_t>(i))));  // sign-extended
      break;
    case TypeId::kInt64:
      PutTag(&out, kInt64Val, kVarint);
      PutVarint64(&out, static_cast<uint64_t>(i));
      break;
    case TypeId::kFloat:
      PutTag(&out, kFloatVal, kFixed32);
      PutFixed32(&out, std::bit_cast<uint32_t>(static_cast<float>(d)));
      break;
    case TypeId::kDouble:
      PutTag(&out, kDoubleVal, kFixed64);
      PutFixed64(&out, std::bit_cast<uint64_t>(d));
      break;
    case TypeId::kString:
    case TypeId::kBinary:
      PutTag(&out, type.id == TypeId::kString ? kStringVal : kBytesVal, kLen);
      PutVarint64(&out, v.s.size());
      out += v.s;
      break;
    case TypeId::kTimestamp:  // microseconds here; Feast keeps seconds
      PutTag(&out, kUnixTimestampVal, kVarint);
      PutVarint64(&out, static_cast<uint64_t>(FloorDiv(v.i, 1000000)));
      break;
    case TypeId::kDate:  // days; Feast has no date type: the seconds of that midnight
      PutTag(&out, kUnixTimestampVal, kVarint);
      PutVarint64(&out, static_cast<uint64_t>(v.i * 86400));
      break;
  }
  return out;
}

Result<OnlineValue> DecodeValue(const DataType& type, std::string_view proto) {
  STRATA_ASSIGN_OR_RETURN(OnlineValue v, ParseValue(proto));
  if (v.kind == OnlineValue::kNull) return v;
  auto mismatch = [&] {
    return Status::InvalidArgument(
        fmt::format("holds {}, but the feature is {}", KindName(v.kind), type.ToString()));
  };
  switch (type.id) {
    case TypeId::kBool:
      if (v.kind != OnlineValue::kBool) return mismatch();
      return v;
    case TypeId::kInt32:
    case TypeId::kInt64:
      if (v.kind != OnlineValue::kInt) return mismatch();
      return v;
    case TypeId::kFloat:
    case TypeId::kDouble:
      if (v.kind == OnlineValue::kInt) return OnlineValue::Double(static_cast<double>(v.i));
      if (v.kind != OnlineValue::kDouble) return mismatch();
      return v;
    case TypeId::kString:
    case TypeId::kBinary:
      if (v.kind != OnlineValue::kString && v.kind != OnlineValue::kBytes) return mismatch();
      v.kind = type.id == TypeId::kString ? OnlineValue::kString : OnlineValue::kBytes;
      return v;
    case TypeId::kTimestamp:
      if (v.kind != OnlineValue::kTimestamp) return mismatch();
      v.i *= 1000000;
      return v;
    case TypeId::kDate:
      if (v.kind != OnlineValue::kTimestamp) return mismatch();
      return OnlineValue::Int(FloorDiv(v.i, 86400));
  }
  return v;
}

std::string EncodeTimestamp(int64_t unix_us) {
  std::string out;
  const int64_t seconds = FloorDiv(unix_us, 1000000);
  const int64_t nanos =
      (unix_us - seconds * 1000000) * 1000;  // 0..999'999'000, as the spec requires
  if (seconds != 0) {
    PutTag(&out, 1, kVarint);
    PutVarint64(&out, static_cast<uint64_t>(seconds));
  }
  if (nanos != 0) {
    PutTag(&out, 2, kVarint);
    PutVarint64(&out, static_cast<uint64_t>(nanos));
  }
  return out;
}

Result<int64_t> DecodeTimestamp(std::string_view proto) {
  int64_t seconds = 0, nanos = 0;
  ProtoField f;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, NextField(&proto, &f));
    if (!more) break;
    if ((f.number == 1 || f.number == 2) && f.wire != kVarint) {
      return Status::InvalidArgument("malformed google.protobuf.Timestamp");
    }
    if (f.number == 1) seconds = static_cast<int64_t>(f.scalar);
    if (f.number == 2) nanos = static_cast<int32_t>(static_cast<uint32_t>(f.scalar));
  }
  if (nanos < 0 || nanos > 999999999 || std::abs(seconds) > 9'000'000'000'000LL) {
    return Status::InvalidArgument("google.protobuf.Timestamp out of range");
  }
  return seconds * 1000000 + nanos / 1000;
}

}  // namespace strata::features::feast_format
