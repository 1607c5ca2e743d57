// LocalEngine: Strata's embedded object store (buckets, objects, multipart uploads).
//
// Metadata lives in RocksDB keyed by `bucket \0 key`, so a listing page costs one
// page at any bucket size. Objects up to Options::inline_threshold are stored
// inline in the metadata value; larger ones as data files named by a unique id
// (never by key: keys `a/b` and `a/b/c` coexist), written to a temp name, fsynced,
// renamed, then committed by one metadata write. That write is the moment the
// object exists: readers never see a partial object and an acknowledged write
// survives kill -9. Multipart parts are data files; Complete commits the part
// list by reference (no copy). Every data file carries a CRC32C per block in a
// footer; reads verify blocks before handing out bytes, so a corrupted file
// yields kCorruption, never wrong bytes. Files orphaned by a crash are removed by
// Open(). A body written with PutOptions::data_key is sealed at rest
// (AES-256-GCM per block, see src/objstore/data_file.h): data files, body
// records and embedded bytes hold only ciphertext, while sizes, MD5s and
// checksums are those of the plaintext; reading it takes the same key.
//
// Thread-safety: all methods are safe to call concurrently. Writes to the same
// key are serialised at commit time by a striped lock; conditional writes are
// checked under it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/result.h>

namespace strata::objstore {

struct EngineOptions {
  std::string data_dir;                      // created if missing
  uint64_t inline_threshold = 64 * 1024;     // objects/parts <= this live in RocksDB
  uint64_t block_size = 1024 * 1024;         // CRC32C granularity of data files
  bool sync = true;                          // fsync data files and sync the WAL on commit
  uint64_t rocksdb_block_cache_bytes = 256ull << 20;
};

struct BucketInfo {
  std::string name;
  int64_t created_ns = 0;
  std::string owner;            // access key of the creator
  bool public_read = false;     // anonymous GET/HEAD/List allowed
  // Bucket configurations by sub-resource name ("policy", "encryption", ...),
  // each an opaque document owned by the frontend that set it. Shared and
  // immutable, so GetBucket on every request copies a pointer, not documents;
  // a change replaces the map.
  std::shared_ptr<const std::map<std::string, std::string>> configs;
  // The named configuration, nullptr when absent.
  const std::string* Config(std::string_view config) const {
    if (!configs) return nullptr;
    auto it = configs->find(std::string(config));
    return it == configs->end() ? nullptr : &it->second;
  }
};

// One part of a completed multipart object (kept for GET ?partNumber and composite checksums).
struct PartSummary {
  int number = 0;
  uint64_t size = 0;
  std::string etag;             // hex md5, no quotes
  std::string checksum;         // base64 of this part's checksum in ObjectMeta::checksum_algorithm ("" if none)
};

struct ObjectMeta {
  std::string key;
  uint64_t size = 0;
  std::string etag;             // no quotes: "md5hex" or "md5hex-N" for multipart
  int64_t mtime_ns = 0;
  std::string content_type;     // "" -> frontend answers binary/octet-stream
  // Stored request headers replayed on GET: content-encoding, content-disposition,
  // cache-control, expires, content-language (lower-case names).
  std::map<std::string, std::string> headers;
  std::map<std::string, std::string> user_meta;   // x-amz-meta-NAME -> value (NAME lower-case)
  std::map<std::string, std::string> tags;
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  std::string checksum;         // base64; for multipart COMPOSITE: checksum of part checksums
  bool checksum_composite = false;  // "-N" suffix / x-amz-checksum-type COMPOSITE
  std::vector<PartSummary> parts;   // empty for single-part objects
  std::string owner;
  // System metadata kept with the object and never replayed to clients as is
  // (ACL grants, encryption parameters); the frontend owns the names.
  std::map<std::string, std::string> internal;
  // Versioning (see "Versioning" below). version_id "" is the null version.
  std::string version_id;
  bool delete_marker = false;  // a delete marker (a version without bytes)
  bool is_latest = false;      // ListObjectVersions only
  uint64_t version_order = 0;  // engine-internal: 0 = not kept as a version
  // The S3 storage class the client asked for ("" = STANDARD). Kept with the
  // listing summary so ListObjects reports it; every class is stored alike.
  std::string storage_class;
};

// A pull-style byte stream (an HTTP body, a file). Read returns 0 at end of stream.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

// What the engine computed while storing a body.
struct WriteDigest {
  uint64_t size = 0;
  std::string md5;              // raw 16 bytes
  std::string checksum;         // raw bytes of PutOptions::checksum_algorithm, "" if kNone
};

// The data key of an object being opened, given its metadata (the caller
// keeps the key wrapped in ObjectMeta::internal). Called once per open with the
// object's metadata, sealed or not; a non-OK status fails the open as is. ""
// means "no key": opening a sealed object then fails with kPermissionDenied.
using DataKeyFn = std::function<Result<std::string>(const ObjectMeta& meta)>;

inline constexpr size_t kDataKeyBytes = 32;  // AES-256

struct PutOptions {
  ObjectMeta meta;              // key/size/etag/mtime are filled in by the engine
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;  // computed while writing
  std::optional<uint64_t> expected_size;   // short or long body -> kInvalidArgument
  // Conditional write: fails with kPreconditionFailed when not met at commit time,
  // kConflict when another write to the key committed while this one was uploading.
  bool if_none_match_star = false;
  std::optional<std::string> if_match;     // etag without quotes, or "*"
  // Runs after the bytes are durable, before the commit. A non-OK status aborts
  // the write (nothing becomes visible) and is returned as is. The frontend
  // checks Content-MD5 and x-amz-checksum-* (including trailers) here and may
  // fill meta.checksum.
  std::function<Status(const WriteDigest&, ObjectMeta& meta)> before_commit;
  // kDataKeyBytes raw bytes: seal the body at rest under this key (PutObject,
  // UploadPart, CopyObject's destination); "" stores it as is. AppendObject
  // refuses it (kNotSupported), as it refuses appending to a sealed object.
  std::string data_key;
  // CopyObject only: the source's data key (see DataKeyFn); unset opens the
  // source as OpenObject(bucket, key) does.
  DataKeyFn source_key;
  // CopyObject only: copy this version of the source ("null" for the null
  // version); "" copies the current one.
  std::string source_version_id;
};

// Receives the bytes of a GET, already verified. File pieces may be sent with sendfile.
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual Status WriteMemory(const char* data, size_t n) = 0;
  virtual Status WriteFile(int fd, uint64_t offset, uint64_t n) = 0;
};

// An open object: metadata plus its bytes, readable while the object is
// overwritten or deleted (the reader pins its data files).
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual const ObjectMeta& meta() const = 0;
  // Streams [offset, offset+length) into sink, verifying block checksums first.
  virtual Status Stream(uint64_t offset, uint64_t length, ChunkSink& sink) = 0;
  // Convenience: copies a range into memory.
  virtual Result<std::string> ReadRange(uint64_t offset, uint64_t length) = 0;
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;        // "" = flat listing
  std::string start_after;      // exclusive; keys and common prefixes > this
  int max_keys = 1000;          // 0..1000
};

struct ListResult {
  std::vector<ObjectMeta> objects;          // key, size, etag, mtime, owner filled
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_marker;      // last key or common prefix returned, when truncated
};

// ListObjectVersions: keys in order, each key's versions newest first.
struct VersionListOptions {
  std::string prefix;
  std::string delimiter;
  std::string key_marker;         // start after this key ...
  std::string version_id_marker;  // ... or after this version of key_marker
  int max_keys = 1000;            // versions + common prefixes, 0..1000
};

struct VersionListResult {
  std::vector<ObjectMeta> versions;  // summary fields, version_id, delete_marker, is_latest
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_key_marker;         // when truncated
  std::string next_version_id_marker;  // "null" for the null version
};

// What DeleteObject did in a versioned bucket.
struct DeleteResult {
  bool delete_marker = false;  // a delete marker was created or removed
  std::string version_id;      // of that marker or of the removed version ("" = null)
};

struct MultipartUpload {
  std::string upload_id;
  std::string key;
  int64_t initiated_ns = 0;
  std::string owner;
  std::string storage_class;  // "" = STANDARD
};

struct PartInfo {
  int number = 0;
  uint64_t size = 0;
  std::string etag;             // hex md5, no quotes
  int64_t mtime_ns = 0;
  std::string checksum;         // base64, "" if none
  // The part's own algorithm: the upload's, or the one its x-amz-checksum-*
  // header named when the upload was created without one.
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
};

struct CompletePart {
  int number = 0;
  std::string etag;             // quotes already stripped
  std::string checksum;         // base64 given by the client, "" if none
};

struct CompleteOptions {
  bool if_none_match_star = false;
  std::optional<std::string> if_match;
  uint64_t min_part_size = 5 * 1024 * 1024;  // all parts but the last
  // Runs under the key's commit lock with the final metadata (parts filled in),
  // before the commit; may adjust meta (e.g. a full-object CRC). Non-OK aborts.
  std::function<Status(ObjectMeta& meta)> before_commit;
};

class LocalEngine {
 public:
  static Result<std::unique_ptr<LocalEngine>> Open(const EngineOptions& options);
  virtual ~LocalEngine() = default;

  // Buckets. DeleteBucket of a non-empty bucket -> kPreconditionFailed
  // ("bucket \"x\" is not empty"); CreateBucket of an existing one -> kAlreadyExists.
  // Name validation is the frontend's job.
  virtual Status CreateBucket(std::string_view name, std::string_view owner) = 0;
  virtual Status DeleteBucket(std::string_view name) = 0;
  virtual Result<BucketInfo> GetBucket(std::string_view name) = 0;
  virtual Result<std::vector<BucketInfo>> ListBuckets() = 0;
  virtual Status SetBucketPublicRead(std::string_view name, bool public_read) = 0;
  // Sets (value) or removes (nullopt) one of BucketInfo::configs, durably.
  virtual Status SetBucketConfig(std::string_view bucket, std::string_view name,
                                 std::optional<std::string> value) = 0;

  // Objects. Missing bucket -> kNotFound with a message naming the bucket;
  // missing key -> kNotFound naming the key (the frontend tells them apart with GetBucket).
  virtual Result<ObjectMeta> PutObject(std::string_view bucket, std::string_view key,
                                       ByteSource& body, PutOptions options) = 0;
  // Appends to an existing object whose size equals write_offset (else
  // kPreconditionFailed); write_offset 0 on a missing key creates it.
  virtual Result<ObjectMeta> AppendObject(std::string_view bucket, std::string_view key,
                                          uint64_t write_offset, ByteSource& body,
                                          PutOptions options) = 0;
  virtual Result<ObjectMeta> HeadObject(std::string_view bucket, std::string_view key) = 0;
  // Opening a sealed object this way fails with kPermissionDenied.
  virtual Result<std::unique_ptr<ObjectReader>> OpenObject(std::string_view bucket,
                                                           std::string_view key) = 0;
  // Opens an object that may be sealed: `data_key` is asked for its key.
  virtual Result<std::unique_ptr<ObjectReader>> OpenObject(std::string_view bucket,
                                                           std::string_view key,
                                                           const DataKeyFn& data_key) = 0;
  // Deleting a missing key is OK (S3 semantics).
  virtual Status DeleteObject(std::string_view bucket, std::string_view key) = 0;
  // Deletes the key only while its current object is still the one read
  // before (same etag and mtime), checked under the key's commit lock:
  // kPreconditionFailed when it was overwritten meanwhile, OK when already
  // gone. The lifecycle worker's delete: a PUT that lands between its listing
  // and its delete is never lost.
  virtual Status DeleteObjectIfUnchanged(std::string_view bucket, std::string_view key,
                                         std::string_view etag, int64_t mtime_ns) = 0;
  // Copies data and metadata; `meta` replaces the metadata when set (REPLACE directive).
  virtual Result<ObjectMeta> CopyObject(std::string_view src_bucket, std::string_view src_key,
                                        std::string_view dst_bucket, std::string_view dst_key,
                                        std::optional<ObjectMeta> meta, PutOptions options) = 0;
  // Atomic, metadata-only rename within a bucket; fails with kPreconditionFailed
  // when options' conditions on dst are not met.
  virtual Result<ObjectMeta> RenameObject(std::string_view bucket, std::string_view src_key,
                                          std::string_view dst_key, PutOptions options) = 0;
  virtual Status SetObjectTags(std::string_view bucket, std::string_view key,
                               std::map<std::string, std::string> tags) = 0;
  // Rewrites an object's metadata (not its bytes) under the key's commit lock:
  // `update` edits tags, internal or user metadata; a non-OK status changes
  // nothing. Size, etag, checksums and parts must be left as they are.
  virtual Status UpdateObjectMeta(std::string_view bucket, std::string_view key,
                                  const std::function<Status(ObjectMeta&)>& update) = 0;
  virtual Result<ListResult> ListObjects(std::string_view bucket, const ListOptions& options) = 0;

  // Multipart.
  virtual Result<std::string> CreateMultipartUpload(std::string_view bucket, std::string_view key,
                                                    PutOptions options) = 0;
  // Wrong upload id -> kNotFound ("upload \"id\" does not exist").
  virtual Result<PartInfo> UploadPart(std::string_view bucket, std::string_view key,
                                      std::string_view upload_id, int part_number,
                                      ByteSource& body, PutOptions options) = 0;
  // Unknown/out-of-order/too-small parts or etag mismatch -> kInvalidArgument with
  // a message starting "InvalidPart:", "InvalidPartOrder:" or "EntityTooSmall:".
  virtual Result<ObjectMeta> CompleteMultipartUpload(std::string_view bucket, std::string_view key,
                                                     std::string_view upload_id,
                                                     const std::vector<CompletePart>& parts,
                                                     const CompleteOptions& options) = 0;
  virtual Status AbortMultipartUpload(std::string_view bucket, std::string_view key,
                                      std::string_view upload_id) = 0;
  virtual Result<std::vector<PartInfo>> ListParts(std::string_view bucket, std::string_view key,
                                                  std::string_view upload_id) = 0;
  // The options the upload was created with (metadata to apply at Complete).
  virtual Result<PutOptions> GetUpload(std::string_view bucket, std::string_view key,
                                       std::string_view upload_id) = 0;
  virtual Result<std::vector<MultipartUpload>> ListMultipartUploads(std::string_view bucket,
                                                                    std::string_view prefix) = 0;

  // Versioning. A bucket's state is its config "versioning" (the engine reads
  // it: "Enabled" or "Suspended"; absent = never versioned; set it with
  // SetBucketConfig). In an unversioned bucket writes replace the object and
  // nothing else is kept. Enabled: each PutObject, CopyObject and
  // CompleteMultipartUpload adds a version with a new id, DeleteObject adds a
  // delete marker; older versions stay readable by id. Suspended: those write
  // the "null" version (id ""), replacing the previous null version. Ids are
  // opaque, URL-safe and ordered (a newer version of a key has a smaller id).
  // Data is freed when the last version referencing it is deleted. Each call is
  // one synced RocksDB commit. Version ids given by callers: "null" names the
  // null version; an id that is not well-formed -> kInvalidArgument.
  //
  // DeleteObject in a versioned bucket: the marker it created.
  virtual Result<DeleteResult> DeleteCurrent(std::string_view bucket, std::string_view key) = 0;
  // Removes one version (a delete marker too); the next newer-to-older version
  // becomes current. A missing version is OK (S3 semantics).
  virtual Result<DeleteResult> DeleteVersion(std::string_view bucket, std::string_view key,
                                             std::string_view version_id) = 0;
  // DeleteVersion that first gives the version's metadata (internal included)
  // to `allow`, under the key's lock: a non-OK status refuses the delete and is
  // returned as is (S3 object lock: retention and legal hold are checked and
  // the version removed with no change in between).
  virtual Result<DeleteResult> DeleteVersionIf(
      std::string_view bucket, std::string_view key, std::string_view version_id,
      const std::function<Status(const ObjectMeta&)>& allow) = 0;
  // Metadata of one version, a delete marker too (then meta.delete_marker);
  // version_id "" = the newest version (which may be a delete marker).
  virtual Result<ObjectMeta> HeadVersion(std::string_view bucket, std::string_view key,
                                         std::string_view version_id) = 0;
  // Opens one version; a delete marker -> kNotFound with meta() unavailable, so
  // callers check HeadVersion first when they must tell the two apart.
  virtual Result<std::unique_ptr<ObjectReader>> OpenVersion(std::string_view bucket,
                                                            std::string_view key,
                                                            std::string_view version_id,
                                                            const DataKeyFn& data_key) = 0;
  // Like UpdateObjectMeta, for one version ("" = current).
  virtual Status UpdateVersionMeta(std::string_view bucket, std::string_view key,
                                   std::string_view version_id,
                                   const std::function<Status(ObjectMeta&)>& update) = 0;
  // One page of versions; a page costs O(max_keys) at any bucket size.
  virtual Result<VersionListResult> ListObjectVersions(std::string_view bucket,
                                                       const VersionListOptions& options) = 0;

  // Counts for /metrics and tests.
  struct Stats {
    uint64_t objects_put = 0;
    uint64_t orphans_removed_at_open = 0;
  };
  virtual Stats GetStats() = 0;
};

}  // namespace strata::objstore
