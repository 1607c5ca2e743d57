// ObjectStore: the one interface through which every upper layer (filesystem,
// cache, checkpoints, feature store, transfers) touches bytes.
//
// A store is one bucket (and optionally a key prefix inside it), named by a URL:
//   file:///var/lib/strata/store?bucket=NAME   the local engine in-process (no HTTP)
//   s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1
//   mem://name                                 in-memory, for tests
// Keys passed to and returned by a store are relative to its prefix.
//
// Bodies stream: Put takes a ByteSource, Get hands bytes to a sink; nothing
// buffers a whole object that can be gigabytes, except the explicit
// whole-object helpers (PutBytes/GetBytes). A backend that must repeat an
// upload (the S3 client retrying after a 503 or a reset connection) can only
// do so when it can read the body again: it rewinds a RewindableSource
// (StringSource, FileSource), and otherwise sends the body in parts it holds
// in memory, one part at a time (see s3_client.h).
//
// Errors: kNotFound (missing key or bucket, the message names which),
// kPreconditionFailed (if_match / if_none_match_star not met), kConflict (a
// concurrent write won), kPermissionDenied, kInvalidArgument, kCorruption (a
// checksum did not match), kUnavailable / kIOError (the backend could not be
// reached after its retries). S3-backed errors carry the S3 code first
// ("NoSuchKey: ...").
//
// Thread-safety: every implementation is safe for concurrent use. A
// ByteSource or sink is used by one call at a time.
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
#include <strata/objstore/local_engine.h>

namespace strata::objstore {

struct ObjectInfo {
  std::string key;              // relative to the store's prefix
  uint64_t size = 0;            // the whole object's size (also for ranged reads)
  std::string etag;             // no quotes
  int64_t mtime_ns = 0;
  std::string content_type;
  std::map<std::string, std::string> user_meta;
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  std::string checksum;         // base64 ("" if none / not returned)
  // As the S3 HEAD/GET reports them ("" when the store has none, or the
  // header was absent: STANDARD, and no versioning).
  std::string storage_class;
  std::string version_id;
  // The HTTP headers stored with the object (S3 HEAD/GET; "" when absent).
  std::string cache_control, content_encoding, content_disposition, expires;
};

struct WriteOptions {
  std::string content_type;
  std::map<std::string, std::string> user_meta;
  // Stored with the object and sent back on GET/HEAD ("" = not sent).
  std::string cache_control, content_encoding, content_disposition, expires;
  // S3 only ("" = not sent; the server's default): x-amz-storage-class
  // (STANDARD, STANDARD_IA, ...) and x-amz-acl (a canned ACL: private,
  // public-read, ...). The server refuses a class or ACL it does not offer.
  std::string storage_class, acl;
  // S3 only ("" = not sent): server-side encryption of what is written,
  // x-amz-server-side-encryption (AES256 or aws:kms) and, with aws:kms,
  // x-amz-server-side-encryption-aws-kms-key-id. SSE-C keys are a client
  // setting (S3Options::sse_customer_key), since reads need them too.
  std::string sse, sse_kms_key_id;
  // Computed while sending and checked by the server (S3: x-amz-checksum-*);
  // kNone sends none. CRC32C, CRC32 and CRC64NVME survive multipart uploads as
  // a full-object checksum.
  ChecksumAlgorithm checksum = ChecksumAlgorithm::kCrc32c;
  // Conditions. For multipart uploads, the ones given to CreateMultipart apply
  // when CompleteMultipart commits (on the same store object).
  bool if_none_match_star = false;           // create only
  std::optional<std::string> if_match;       // replace only this version (etag, no quotes)
  std::optional<uint64_t> size;              // known body size: a short or long body fails
};

// The metadata of info as WriteOptions (content type, user metadata, the
// stored headers; no storage class or ACL, no conditions): what a copy that
// keeps the source's metadata writes.
WriteOptions MetadataOf(const ObjectInfo& info);

struct ReadOptions {
  uint64_t offset = 0;
  std::optional<uint64_t> length;            // nullopt = to the end; clipped at the end
  std::optional<std::string> if_match;       // fail with kPreconditionFailed if the object changed
};

// Receives bytes of a GET in order. A non-OK return stops the read and is
// returned by Get as is.
using ByteSink = std::function<Status(const char* data, size_t n)>;

// A ByteSource that can start over from its first byte, so a failed upload can
// be repeated.
class RewindableSource : public ByteSource {
 public:
  // Back to the first byte; false (and the source unusable) if that failed.
  virtual bool Rewind() = 0;
};

// Bytes in memory (not copied: the view must outlive the source).
class StringSource final : public RewindableSource {
 public:
  explicit StringSource(std::string_view data) : data_(data) {}
  Result<size_t> Read(char* buf, size_t n) override;
  bool Rewind() override {
    pos_ = 0;
    return true;
  }
  uint64_t size() const { return data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// A range of an open file, read with pread (the fd is not owned and its offset
// is not moved, so several FileSources may share one fd).
class FileSource final : public RewindableSource {
 public:
  FileSource(int fd, uint64_t offset, uint64_t length)
      : fd_(fd), offset_(offset), length_(length) {}
  Result<size_t> Read(char* buf, size_t n) override;
  bool Rewind() override {
    pos_ = 0;
    return true;
  }
  uint64_t size() const { return length_; }

 private:
  int fd_;
  uint64_t offset_;
  uint64_t length_;
  uint64_t pos_ = 0;
};

struct ListPage {
  std::vector<ObjectInfo> objects;           // key, size, etag, mtime
  std::vector<std::string> common_prefixes;  // relative to the store's prefix
  std::string next_token;                    // "" when this is the last page
};

struct UploadedPart {
  int number = 0;
  std::string etag;
  uint64_t size = 0;
  std::string checksum;                      // base64, "" if none
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The URL this store was opened from (credentials removed).
  virtual std::string url() const = 0;

  // Stores body under key. WriteOptions::size, when set, must equal the body's
  // length; some backends stream more efficiently when they know it.
  virtual Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                                 const WriteOptions& options = {}) = 0;
  virtual Result<ObjectInfo> PutBytes(std::string_view key, std::string_view data,
                                      const WriteOptions& options = {});
  // Streams [offset, offset+length) of the object into sink. When info is not
  // null it is filled (whole-object size, etag, ...) before the first byte
  // reaches the sink, so a first ranged GET can tell the size of the rest.
  // Whole-object reads are verified where the backend can (S3: the stored
  // checksum and the single-part ETag MD5); a mismatch is kCorruption after
  // the bytes were handed out. An offset at or past the end yields no bytes.
  virtual Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink,
                     ObjectInfo* info = nullptr) = 0;
  virtual Result<std::string> GetBytes(std::string_view key, const ReadOptions& options = {});
  // kNotFound when absent.
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  // Deleting a missing key is OK.
  virtual Status Delete(std::string_view key) = 0;
  // Batched delete (S3 DeleteObjects, 1000 per request); one Status per key.
  // The default deletes one by one.
  virtual Result<std::vector<Status>> DeleteMany(const std::vector<std::string>& keys);
  // One page, keys in ascending order; pass the previous page's next_token to
  // continue. max_keys in 1..1000.
  virtual Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                                std::string_view token, int max_keys = 1000) = 0;
  // Every object under prefix (no delimiter), page by page.
  Status ListAll(std::string_view prefix, const std::function<Status(const ObjectInfo&)>& fn);

  // Multipart. Parts are numbered 1..10000; all but the last must be at least
  // 5 MiB (as S3). CompleteMultipart takes the parts in ascending order.
  virtual Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options = {}) = 0;
  virtual Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                          int part_number, ByteSource& body, uint64_t size) = 0;
  virtual Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                               const std::vector<UploadedPart>& parts) = 0;
  virtual Status AbortMultipart(std::string_view key, std::string_view upload_id) = 0;
  virtual Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                                      std::string_view upload_id) = 0;

  // Server-side copy within this store (data and metadata).
  virtual Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) = 0;
  // Atomic rename where the backend has it (local engine, mem, Strata's S3
  // RenameObject); kNotSupported otherwise (the default).
  virtual Status Rename(std::string_view src_key, std::string_view dst_key);
};

// Opens a store from a URL:
//   file:///DIR?bucket=NAME[&prefix=P][&sync=false]
//       a LocalEngine over DIR (one per directory per process, shared by the
//       stores opened on it and kept alive by them); the bucket ("default" when
//       not given) is created if missing.
//   s3://BUCKET[/PREFIX][?endpoint=URL&region=R&access_key=..&secret_key=..
//       &session_token=..&profile=P&path_style=true|false&part_size=BYTES
//       &multipart_threshold=BYTES&max_retries=N&connect_timeout_ms=..&timeout_ms=..
//       &max_idle_connections=N&verify_md5=always|never|when_no_checksum&verify_checksum=..&sign_payload=..
//       &tls_verify=..&ca_file=PATH&rename_object=..&fault_error_rate=F&fault_drop_rate=F
//       &fault_seed=N]
//       the S3 client (s3_client.h); the fault_* parameters make its own HTTP
//       transport inject 503s and dropped connections, to exercise retries.
//       Settings not in the URL come from the environment
//       (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
//       AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_PROFILE)
//       and then the profile ("default") in ~/.aws/credentials and
//       ~/.aws/config (region, endpoint_url); see ResolveS3Url in s3_client.h.
//   mem://NAME[/PREFIX]
//       in-memory; stores opened with the same NAME share their objects while
//       any of them is open.
Result<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view url);

// A bucket of an open LocalEngine as an ObjectStore (no HTTP). The engine must
// outlive it. The bucket must exist.
std::unique_ptr<ObjectStore> NewLocalObjectStore(LocalEngine* engine, std::string bucket,
                                                 std::string prefix = "");
// A fresh in-memory store, for tests; it shares nothing (name only shows in url()).
std::unique_ptr<ObjectStore> NewMemObjectStore(std::string name = "mem");

}  // namespace strata::objstore
