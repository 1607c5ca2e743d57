// Checksums and digests used across Strata.
//
// CRC32 (IEEE, as S3's x-amz-checksum-crc32) and CRC32C via ISA-L; CRC64NVME
// (the CRC-64/NVME polynomial S3 uses) with our own slicing table; MD5 with our
// own multi-buffer code (md5_mb.h: concurrent streams share AVX2 lanes); SHA1,
// SHA256 and HMAC-SHA256 via OpenSSL. Streaming objects are not thread-safe;
// the free functions are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

// Incremental CRCs: pass the previous value (0 to start).
uint32_t Crc32(uint32_t crc, const void* data, size_t n);
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);
uint64_t Crc64Nvme(uint64_t crc, const void* data, size_t n);

// Combines crc(A) and crc(B) into crc(A||B) given len(B), as zlib's crc32_combine.
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

enum class ChecksumAlgorithm { kNone, kCrc32, kCrc32c, kCrc64Nvme, kSha1, kSha256, kMd5 };

// "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", "MD5" (case-insensitive) -> algorithm; kNone if unknown.
ChecksumAlgorithm ParseChecksumAlgorithm(std::string_view name);
// Upper-case S3 name ("CRC32C"); "" for kNone.
std::string_view ChecksumAlgorithmName(ChecksumAlgorithm a);
// The header that carries it: "x-amz-checksum-crc32c".
std::string ChecksumHeaderName(ChecksumAlgorithm a);

// CRC32, CRC32C or CRC64NVME: the algorithms whose values combine.
bool IsCrc(ChecksumAlgorithm a);
// crc(A||B) from crc(A), crc(B) and len(B) for a CRC algorithm; 0 for the others.
uint64_t CrcCombine(ChecksumAlgorithm a, uint64_t crc_a, uint64_t crc_b, uint64_t len_b);
// The CRC of an object made of parts, from each part's CRC (base64 of the
// big-endian value, as S3 writes them) and size, in order: S3's FULL_OBJECT
// checksum of a multipart upload. nullopt when `a` is not a CRC or a part's
// value is missing or malformed.
std::optional<std::string> CombinePartCrcs(ChecksumAlgorithm a,
                                           const std::vector<std::pair<std::string, uint64_t>>& parts);

// A streaming hasher for any algorithm above. Digest() returns raw bytes
// (big-endian for CRCs, as S3 encodes them before base64).
class Hasher {
 public:
  virtual ~Hasher() = default;
  virtual void Update(const void* data, size_t n) = 0;
  virtual std::string Digest() = 0;  // may be called once
  static std::unique_ptr<Hasher> Create(ChecksumAlgorithm a);
};

// One-shot digests, raw bytes.
std::string Md5(std::string_view data);
std::string Sha1(std::string_view data);
std::string Sha256(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);

}  // namespace strata
