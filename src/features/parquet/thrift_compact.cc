#include "features/parquet/thrift_compact.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include <strata/core/coding.h>

namespace strata::features::thrift {

namespace {
constexpr int kMaxDepth = 32;
}

void Reader::Fail(std::string message) {
  if (status_.ok()) {
    status_ = Status::Corruption(
        fmt::format("malformed Thrift metadata at byte {}: {}", position(), message));
  }
  p_ = end_;
}

uint64_t Reader::ReadVarint() {
  uint64_t v = 0;
  const char* next = DecodeVarint64(reinterpret_cast<const char*>(p_), reinterpret_cast<const char*>(end_), &v);
  if (next == nullptr) {
    // The input ended within a varint's 10 bytes, or the value needs more than 64 bits.
    const bool truncated = end_ - p_ < kMaxVarint64Bytes && std::all_of(p_, end_, [](uint8_t b) { return b & 0x80; });
    Fail(truncated ? "truncated varint" : "varint overflows 64 bits");
    return 0;
  }
  p_ = reinterpret_cast<const uint8_t*>(next);
  return v;
}

void Reader::StructBegin() {
  if (++depth_ > kMaxDepth) Fail("structs nested too deeply");
  last_field_.push_back(0);
}

void Reader::StructEnd() {
  --depth_;
  if (!last_field_.empty()) last_field_.pop_back();
}

bool Reader::NextField(int16_t* id, uint8_t* type) {
  if (!ok()) return false;
  if (p_ >= end_) {
    Fail("truncated struct (no stop byte)");
    return false;
  }
  const uint8_t b = *p_++;
  if (b == kStop) return false;
  *type = b & 0x0f;
  const uint8_t delta = b >> 4;
  int16_t& last = last_field_.back();
  if (delta != 0) {
    *id = static_cast<int16_t>(last + delta);
  } else {
    *id = static_cast<int16_t>(ReadZigzag());
  }
  last = *id;
  if (*type > kStruct || *type == kStop) {
    Fail(fmt::format("unknown field type {}", *type));
    return false;
  }
  return ok();
}

bool Reader::ReadBool(uint8_t type) {
  if (type == kTrue) return true;
  if (type == kFalse) return false;
  Fail(fmt::format("expected a boolean field, found type {}", type));
  return false;
}

int32_t Reader::ReadI32() {
  const int64_t v = ReadZigzag();
  if (v < INT32_MIN || v > INT32_MAX) {
    Fail("i32 out of range");
    return 0;
  }
  return static_cast<int32_t>(v);
}

int64_t Reader::ReadI64() { return ReadZigzag(); }

int8_t Reader::ReadByte() {
  if (p_ >= end_) {
    Fail("truncated byte");
    return 0;
  }
  return static_cast<int8_t>(*p_++);
}

double Reader::ReadDouble() {
  if (end_ - p_ < 8) {
    Fail("truncated double");
    return 0;
  }
  const double d = std::bit_cast<double>(DecodeFixed64(reinterpret_cast<const char*>(p_)));
  p_ += 8;
  return d;
}

std::string Reader::ReadString() {
  const uint64_t n = ReadVarint();
  if (!ok()) return {};
  if (n > static_cast<uint64_t>(end_ - p_)) {
    Fail(fmt::format("binary of {} bytes runs past the end ({} left)", n, end_ - p_));
    return {};
  }
  std::string s(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return s;
}

uint32_t Reader::ReadListHeader(uint8_t* elem_type) {
  if (p_ >= end_) {
    Fail("truncated list header");
    return 0;
  }
  const uint8_t b = *p_++;
  *elem_type = b & 0x0f;
  uint64_t n = b >> 4;
  if (n == 15) n = ReadVarint();
  if (!ok()) return 0;
  // Every element takes at least one byte (booleans too), so a count beyond the
  // bytes left is a lie; refusing it bounds what a caller may reserve.
  if (n > static_cast<uint64_t>(end_ - p_)) {
    Fail(fmt::format("list of {} elements cannot fit in the {} bytes left", n, end_ - p_));
    return 0;
  }
  return static_cast<uint32_t>(n);
}

void Reader::Skip(uint8_t type) {
  if (!ok()) return;
  switch (type) {
    case kTrue:
    case kFalse: return;
    case kByte: ReadByte(); return;
    case kI16:
    case kI32:
    case kI64: ReadVarint(); return;
    case kDouble: ReadDouble(); return;
    case kBinary: {
      const uint64_t n = ReadVarint();
      if (n > static_cast<uint64_t>(end_ - p_)) {
        Fail("binary runs past the end");
        return;
      }
      p_ += n;
      return;
    }
    case kList:
    case kSet: {
      uint8_t et;
      const uint32_t n = ReadListHeader(&et);
      if (++depth_ > kMaxDepth) {
        Fail("containers nested too deeply");
        return;
      }
      for (uint32_t i = 0; i < n && ok(); ++i) {
        if (et == kTrue || et == kFalse) {
          ReadByte();  // booleans inside containers take a byte each
        } else {
          Skip(et);
        }
      }
      --depth_;
      return;
    }
    case kMap: {
      const uint64_t n = ReadVarint();
      if (n == 0) return;
      if (n > static_cast<uint64_t>(end_ - p_)) {
        Fail("map cannot fit in the bytes left");
        return;
      }
      const uint8_t kv = static_cast<uint8_t>(ReadByte());
      if (++depth_ > kMaxDepth) {
        Fail("containers nested too deeply");
        return;
      }
      for (uint64_t i = 0; i < n && ok(); ++i) {
        Skip(kv >> 4);
        Skip(kv & 0x0f);
      }
      --depth_;
      return;
    }
    case kStruct: {
      StructBegin();
      int16_t id;
      uint8_t t;
      while (NextField(&id, &t)) Skip(t);
      StructEnd();
      return;
    }
    default: Fail(fmt::format("cannot skip unknown type {}", type));
  }
}

void Writer::Varint(uint64_t v) { PutVarint64(&out_, v); }

void Writer::FieldHeader(int16_t id, uint8_t type) {
  int16_t& last = last_.back();
  const int delta = id - last;
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | type));
  } else {
    out_.push_back(static_cast<char>(type));
    Zigzag(id);
  }
  last = id;
}

void Writer::ListHeader(uint8_t elem_type, uint32_t size) {
  if (size < 15) {
    out_.push_back(static_cast<char>((size << 4) | elem_type));
  } else {
    out_.push_back(static_cast<char>(0xf0 | elem_type));
    Varint(size);
  }
}

}  // namespace strata::features::thrift
