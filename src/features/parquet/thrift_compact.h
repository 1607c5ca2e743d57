// The Thrift compact protocol, by hand: enough of it to read and write the
// Parquet footer and page headers (apache/thrift doc/specs/thrift-compact-protocol.md).
//
// The reader never trusts its input: every length is checked against the
// buffer, nesting depth and list sizes are bounded, and an error names what
// broke. Not thread-safe; one reader per buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/status.h>

namespace strata::features::thrift {

enum CType : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  size_t position() const { return static_cast<size_t>(p_ - begin_); }
  // The first error; every read after it is a no-op returning zero.
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  void StructBegin();
  void StructEnd();
  // Reads the next field header; false at the struct's stop byte (or on error).
  bool NextField(int16_t* id, uint8_t* type);
  bool ReadBool(uint8_t type);  // field booleans live in the type nibble
  int32_t ReadI32();
  int64_t ReadI64();
  int8_t ReadByte();
  double ReadDouble();
  std::string ReadString();
  // A list header: element type and count (count checked against the bytes left).
  uint32_t ReadListHeader(uint8_t* elem_type);
  void Skip(uint8_t type);
  void Fail(std::string message);

 private:
  uint64_t ReadVarint();
  int64_t ReadZigzag() {
    uint64_t v = ReadVarint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  Status status_;
  std::vector<int16_t> last_field_;  // one per open struct
  int depth_ = 0;
};

class Writer {
 public:
  std::string& buffer() { return out_; }

  void StructBegin() { last_.push_back(0); }
  void StructEnd() {
    out_.push_back(0);
    last_.pop_back();
  }
  void FieldI32(int16_t id, int32_t v) {
    FieldHeader(id, kI32);
    Zigzag(v);
  }
  void FieldI64(int16_t id, int64_t v) {
    FieldHeader(id, kI64);
    Zigzag(v);
  }
  void FieldI8(int16_t id, int8_t v) {
    FieldHeader(id, kByte);
    out_.push_back(static_cast<char>(v));
  }
  void FieldBool(int16_t id, bool v) { FieldHeader(id, v ? kTrue : kFalse); }
  void FieldBinary(int16_t id, std::string_view v) {
    FieldHeader(id, kBinary);
    Binary(v);
  }
  void FieldStructBegin(int16_t id) {
    FieldHeader(id, kStruct);
    StructBegin();
  }
  void FieldListBegin(int16_t id, uint8_t elem_type, uint32_t size) {
    FieldHeader(id, kList);
    ListHeader(elem_type, size);
  }
  void ListHeader(uint8_t elem_type, uint32_t size);
  void Zigzag(int64_t v) { Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void Varint(uint64_t v);
  void Binary(std::string_view v) {
    Varint(v.size());
    out_.append(v.data(), v.size());
  }

 private:
  void FieldHeader(int16_t id, uint8_t type);

  std::string out_;
  std::vector<int16_t> last_;
};

}  // namespace strata::features::thrift
