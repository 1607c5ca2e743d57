// Binary encoding of the engine's RocksDB keys and values.
//
// Values start with a version byte, then varints and length-prefixed byte strings
// (LEB128 lengths), so encode/decode is a single pass with no parsing of text.
// Decoded string_views (inline data) point into the value buffer passed to the
// decoder: the caller keeps that buffer alive. All functions are pure and
// thread-safe.
//
// Key spaces (one RocksDB column family, 1-byte prefixes):
//   B <bucket>                          -> BucketRecord
//   O <bucket> \0 <key>                 -> ObjectMeta (summary first) + pieces
//   U <bucket> \0 <key> \0 <upload id>  -> UploadRecord
//   P <upload id> \0 <part number BE32> -> PartRecord
//   G <file id (16 raw bytes)>          -> "" (data file that may be garbage)
//   V <bucket> \0 <key> \0 <~order BE64> -> ObjectMeta + pieces of one version
//                                          (newest first; delete markers too)
//   N <bucket> \0 <key>                 -> order of the key's "null" version in V
// Versions: a bucket that never had versioning writes only O rows (each object
// is its null version, order 0). Once versioning is set, every write puts the
// new version in V and, unless it is a delete marker, the same record under O,
// so ListObjects reads O exactly as before. Pieces belong to the V row; an O
// row with order != 0 is a copy of its key's newest V row. An O row with order
// 0 in such a bucket (written before versioning was set) is moved to V as the
// null version by the next write to its key.
// Column family "inline": <body id (16 raw bytes)> -> the bytes of a small body.
// Keeping bodies out of the metadata records keeps listings and commit-time
// reads at metadata size (1000 x 64 KiB bodies would be read per listing page).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/status.h>
#include <strata/objstore/local_engine.h>

namespace strata::objstore {

// 128-bit random id naming a data file (never the key).
struct FileId {
  std::array<uint8_t, 16> bytes{};
  static FileId Random();
  std::string Hex() const;                      // 32 lower-case hex chars
  static bool FromHex(std::string_view hex, FileId* out);
  std::string_view Raw() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
  bool operator==(const FileId&) const = default;
};

// A contiguous piece of an object's bytes: embedded in the record (tiny bodies),
// a body record in the "inline" column family (small bodies), or a whole data file.
struct Piece {
  enum Kind : uint8_t { kInline = 0, kFile = 1, kBlob = 2 };
  Kind kind = kInline;
  std::string_view data;        // kInline: the bytes (not owned)
  FileId file;                  // kFile: data file id; kBlob: body record key
  uint64_t length = 0;          // bytes of object data (== data.size() for inline)
  uint32_t block_size = 0;      // kFile: CRC32C block size of the file
  // Sealed at rest with the object's data key (AES-256-GCM, see data_file.h):
  // the stored bytes are ciphertext plus a 16-byte tag per block (kFile) or
  // per piece (kInline, kBlob). nonce: random per piece, the high 8 bytes of
  // every IV. `length` stays the plaintext length; kInline `data` is sealed.
  bool sealed = false;
  uint64_t nonce = 0;
};

// ---- keys -------------------------------------------------------------------
inline constexpr char kBucketPrefix = 'B';
inline constexpr char kObjectPrefix = 'O';
inline constexpr char kUploadPrefix = 'U';
inline constexpr char kPartPrefix = 'P';
inline constexpr char kGarbagePrefix = 'G';
inline constexpr char kVersionPrefix = 'V';
inline constexpr char kNullVersionPrefix = 'N';

std::string BucketKey(std::string_view bucket);
std::string ObjectKeyPrefix(std::string_view bucket);                  // "O bucket \0"
std::string ObjectKey(std::string_view bucket, std::string_view key);
std::string UploadKeyPrefix(std::string_view bucket);                  // "U bucket \0"
std::string UploadKey(std::string_view bucket, std::string_view key, std::string_view upload_id);
std::string PartKeyPrefix(std::string_view upload_id);                 // "P id \0"
std::string PartKey(std::string_view upload_id, int part_number);
std::string GarbageKey(const FileId& id);
std::string VersionKeyPrefix(std::string_view bucket);                        // "V bucket \0"
std::string VersionKeyPrefix(std::string_view bucket, std::string_view key);  // ".. key \0"
std::string VersionKey(std::string_view bucket, std::string_view key, uint64_t order);
std::string NullVersionKey(std::string_view bucket, std::string_view key);
// Version ids: 16 lower-case hex chars of ~order, so newer versions have smaller ids.
std::string VersionIdFromOrder(uint64_t order);
bool OrderFromVersionId(std::string_view id, uint64_t* order);
// The smallest string greater than every string that starts with `prefix`;
// "" when none exists (prefix is all 0xFF).
std::string PrefixSuccessor(std::string_view prefix);

// ---- values -----------------------------------------------------------------
struct BucketRecord {
  int64_t created_ns = 0;
  std::string owner;
  bool public_read = false;
  std::map<std::string, std::string> configs;  // BucketInfo::configs
};
void EncodeBucket(const BucketRecord& r, std::string* out);
Status DecodeBucket(std::string_view in, BucketRecord* r);

// meta.key is not stored (it is in the RocksDB key). pieces may be empty.
void EncodeObject(const ObjectMeta& meta, const std::vector<Piece>& pieces, std::string* out);
// Full decode; `pieces` may be null (then they are not parsed).
Status DecodeObject(std::string_view in, ObjectMeta* meta, std::vector<Piece>* pieces);
// Only the fields a listing needs: size, mtime, etag, owner, checksum algorithm/type.
Status DecodeObjectSummary(std::string_view in, ObjectMeta* meta);
// Only the pieces (for garbage collection), skipping the metadata.
Status DecodeObjectPieces(std::string_view in, std::vector<Piece>* pieces);

struct UploadRecord {
  int64_t initiated_ns = 0;
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  ObjectMeta meta;              // applied at Complete (key/size/etag ignored)
};
void EncodeUpload(const UploadRecord& r, std::string* out);
Status DecodeUpload(std::string_view in, UploadRecord* r);

struct PartRecord {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string etag;             // hex md5
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  std::string checksum;         // base64, "" if none
  Piece piece;
};
void EncodePart(const PartRecord& r, std::string* out);
Status DecodePart(std::string_view in, PartRecord* r);

}  // namespace strata::objstore
