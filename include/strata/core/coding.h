// Fixed-width and varint encodings, as leveldb's util/coding.h: little-endian
// fixed-width integers for on-disk records (segments, WAL entries, cache block
// headers), big-endian ones for keys that must sort by number (metadata keys),
// and LEB128 varints. Encoders append to a std::string or write to a buffer
// the caller sized; decoders read from a pointer the caller checked, or
// consume from a string_view and return false when it is too short.
//
// Pure functions, thread-safe. The host is little-endian (x86-64, aarch64).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace strata {

static_assert(std::endian::native == std::endian::little, "Strata's encodings assume a little-endian host");

// --- little-endian fixed width ------------------------------------------------
inline void EncodeFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, 2); }
inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint16_t DecodeFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void PutFixed16(std::string* dst, uint16_t v) { dst->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutFixed32(std::string* dst, uint32_t v) { dst->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutFixed64(std::string* dst, uint64_t v) { dst->append(reinterpret_cast<const char*>(&v), 8); }
// Consumes 4 or 8 bytes from the front of *in; false (nothing consumed) when too short.
inline bool GetFixed32(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32(in->data());
  in->remove_prefix(4);
  return true;
}
inline bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64(in->data());
  in->remove_prefix(8);
  return true;
}

// --- big-endian fixed width (keys that sort by number) -------------------------
inline void EncodeBigEndian32(char* dst, uint32_t v) { EncodeFixed32(dst, __builtin_bswap32(v)); }
inline void EncodeBigEndian64(char* dst, uint64_t v) { EncodeFixed64(dst, __builtin_bswap64(v)); }
inline uint32_t DecodeBigEndian32(const char* p) { return __builtin_bswap32(DecodeFixed32(p)); }
inline uint64_t DecodeBigEndian64(const char* p) { return __builtin_bswap64(DecodeFixed64(p)); }
inline void PutBigEndian32(std::string* dst, uint32_t v) { PutFixed32(dst, __builtin_bswap32(v)); }
inline void PutBigEndian64(std::string* dst, uint64_t v) { PutFixed64(dst, __builtin_bswap64(v)); }

// --- varints (LEB128: 7 bits a byte, low groups first) ----------------------
inline constexpr int kMaxVarint32Bytes = 5;
inline constexpr int kMaxVarint64Bytes = 10;

// Writes v at dst (room for kMaxVarint64Bytes) and returns the byte after it.
inline char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}
inline char* EncodeVarint32(char* dst, uint32_t v) { return EncodeVarint64(dst, v); }
inline void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64Bytes];
  dst->append(buf, static_cast<size_t>(EncodeVarint64(buf, v) - buf));
}
inline void PutVarint32(std::string* dst, uint32_t v) { PutVarint64(dst, v); }
inline int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++len;
  }
  return len;
}

// Decodes a varint in [p, limit); returns the byte after it, or nullptr when
// the input ends first or the value does not fit.
inline const char* DecodeVarint64(const char* p, const char* limit, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    const auto byte = static_cast<unsigned char>(*p++);
    if (shift == 63 && byte > 1) return nullptr;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return p;
    }
  }
  return nullptr;
}
inline const char* DecodeVarint32(const char* p, const char* limit, uint32_t* v) {
  uint64_t wide = 0;
  const char* q = DecodeVarint64(p, limit, &wide);
  if (q == nullptr || wide > UINT32_MAX) return nullptr;
  *v = static_cast<uint32_t>(wide);
  return q;
}
// Consume a varint from the front of *in; false (nothing consumed) when malformed.
inline bool GetVarint64(std::string_view* in, uint64_t* v) {
  const char* q = DecodeVarint64(in->data(), in->data() + in->size(), v);
  if (q == nullptr) return false;
  in->remove_prefix(static_cast<size_t>(q - in->data()));
  return true;
}
inline bool GetVarint32(std::string_view* in, uint32_t* v) {
  const char* q = DecodeVarint32(in->data(), in->data() + in->size(), v);
  if (q == nullptr) return false;
  in->remove_prefix(static_cast<size_t>(q - in->data()));
  return true;
}

}  // namespace strata
