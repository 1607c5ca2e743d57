// S3Client: Strata's client for any S3-compatible service (our own server,
// AWS S3, MinIO, ...), and the S3 backend of ObjectStore.
//
// One S3Client holds the endpoint, credentials and an HTTP connection pool;
// OpenBucket() gives ObjectStores over bucket/prefix that share it. Requests
// are signed with SigV4 (header auth; path- or virtual-host-style), and a
// failed request is repeated with exponential backoff and full jitter
// (sleep uniform(0, min(max_delay, base * 2^attempt))) when it failed on a 5xx,
// 429, SlowDown, RequestTimeout, a reset connection or a timeout — and only
// when the request can be sent again:
//   * requests without a body, or with a body in memory, always can;
//   * a streamed body (Put, UploadPart) only when it is a RewindableSource
//     (StringSource, FileSource) or none of it was read yet. Put therefore
//     streams one request only from a RewindableSource of known size (up to
//     multipart_threshold); any other body is sent as a multipart upload whose
//     parts it holds in memory one at a time (part_size), each retried alone.
//   * a GET that breaks mid-body resumes with a ranged GET from the next byte,
//     pinned to the first response's ETag (If-Match), so the bytes handed to
//     the sink always come from one version of the object.
//
// Integrity: uploads carry a checksum (WriteOptions::checksum, CRC32C by
// default) that the server verifies: computed up front for bodies in memory,
// sent as an aws-chunked trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER) for
// streamed ones; multipart uploads ask for a FULL_OBJECT checksum. Whole-object
// GETs ask for the stored checksum (x-amz-checksum-mode: ENABLED) and check
// it, and check a single-part ETag as the MD5 of the bytes (by default only
// when there was no stored checksum, see S3Options::verify_md5); a mismatch is
// kCorruption.
//
// Errors: the S3 error code comes first in the message ("NoSuchKey: The
// specified key does not exist. (GET s3://bucket/key)"), with the StatusCode
// that fits: 404 -> kNotFound, 412 -> kPreconditionFailed, 409 -> kConflict
// (BucketAlreadyOwnedByYou -> kAlreadyExists, BucketNotEmpty ->
// kPreconditionFailed), 403 -> kPermissionDenied, 400 -> kInvalidArgument,
// 501 -> kNotSupported, 5xx/429 -> kUnavailable, BadDigest -> kCorruption.
//
// Thread-safety: S3Client and its stores are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/http_client.h>
#include <strata/core/result.h>
#include <strata/core/sigv4.h>
#include <strata/objstore/object_store.h>

namespace strata::objstore {

struct S3RetryOptions {
  int max_attempts = 10;      // tries per request, the first included (1 = never retry)
  int base_delay_ms = 20;     // backoff before retry n: uniform(0, min(max, base * 2^n))
  int max_delay_ms = 2'000;
};

struct S3Options {
  // "http://127.0.0.1:9000"; "" = AWS: https://s3.<region>.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  // An empty access key sends unsigned (anonymous) requests.
  sigv4::Credentials credentials;
  // nullopt: virtual-host style (bucket.host) on amazonaws.com, path style
  // (host/bucket) elsewhere, as most S3-compatible servers want.
  std::optional<bool> path_style;
  http::ClientOptions http;          // timeouts, pool size, TLS, injected faults
  S3RetryOptions retry;
  uint64_t part_size = 16ull << 20;            // Put's parts when it cannot stream one request
  uint64_t multipart_threshold = 64ull << 20;  // a known-size Put above this uses multipart
  bool verify_checksum = true;  // whole-object GETs: check the stored x-amz-checksum-*
  // Whole-object GETs of single-part objects: check the ETag as the MD5 of the
  // bytes. kWhenNoChecksum skips it when a stored checksum was checked: a CRC
  // covers the same bytes at a fraction of MD5's cost (on loopback a 60 MiB GET
  // ran at ~230 MB/s checking both, ~550 MB/s checking only CRC32C).
  enum class EtagCheck { kNever, kWhenNoChecksum, kAlways };
  EtagCheck verify_md5 = EtagCheck::kWhenNoChecksum;
  // Hex SHA-256 for bodies in memory instead of UNSIGNED-PAYLOAD (the
  // checksum header protects them either way; small XML bodies are always hashed).
  bool sign_payload = false;
  // ObjectStore::Rename through RenameObject (PUT ?renameObject). nullopt: only
  // against Strata's server (recognised by its Server header), since a service
  // that ignored the unknown sub-resource would store an empty object instead.
  // true for other services that have it (S3 Express directory buckets).
  std::optional<bool> rename_object;
  // SSE-C: the customer's 32-byte key (raw bytes, "" = none). Sent with its
  // MD5 (x-amz-server-side-encryption-customer-*) on every request that
  // writes or reads an object's data or metadata: PutObject, UploadPart,
  // CreateMultipartUpload, CompleteMultipartUpload, GetObject, HeadObject, and
  // as the destination's key of CopyObject and UploadPartCopy.
  std::string sse_customer_key;
  // SSE-C key of the source of CopyObject / UploadPartCopy (and of the HEAD a
  // copy makes of its source): x-amz-copy-source-server-side-encryption-customer-*.
  std::string sse_copy_source_customer_key;
};

// Where an s3:// URL points.
struct S3Location {
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
};

// Resolves an s3:// URL (parameters listed at OpenObjectStore in
// object_store.h) into options: the URL first, then the environment
// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_REGION,
// AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_PROFILE), then
// the profile in AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and
// AWS_CONFIG_FILE (~/.aws/config: region, endpoint_url, also under "s3 =").
Result<std::pair<S3Options, S3Location>> ResolveS3Url(std::string_view url);

struct BucketEntry {
  std::string name;
  int64_t created_ns = 0;
};

struct CopyOptions {
  std::optional<std::string> source_if_match;  // copy only this version of the source
  // Replace the metadata (x-amz-metadata-directive: REPLACE) instead of copying it.
  std::optional<WriteOptions> new_metadata;
  // Sent whether the metadata is copied or replaced ("" = the server's
  // default, as for a PUT); they override new_metadata's.
  std::string storage_class, acl;
  // Server-side encryption of the copy (x-amz-server-side-encryption, and the
  // KMS key id with aws:kms); "" = the bucket's default, as for a PUT.
  std::string sse, sse_kms_key_id;
};

// One entry of ListObjectVersions: a version or a delete marker.
struct ObjectVersion {
  std::string key;  // the whole key
  std::string version_id;
  bool delete_marker = false;
  bool is_latest = false;
  uint64_t size = 0;
  std::string etag;  // no quotes ("" for delete markers)
  int64_t mtime_ns = 0;
  std::string storage_class;
};
struct VersionPage {
  std::vector<ObjectVersion> versions;  // key order, newest first per key
  // Continue with these ("" and "" when this is the last page).
  std::string next_key_marker, next_version_marker;
};
// One entry of ListMultipartUploads.
struct MultipartUploadEntry {
  std::string key;
  std::string upload_id;
  int64_t initiated_ns = 0;
};
struct MultipartUploadPage {
  std::vector<MultipartUploadEntry> uploads;
  std::string next_key_marker, next_upload_id_marker;  // "" when this is the last page
};

class S3ObjectStore;

class S3Client : public std::enable_shared_from_this<S3Client> {
 public:
  static Result<std::shared_ptr<S3Client>> Create(S3Options options);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // A store over bucket/prefix ("" or ending in '/') sharing this client.
  std::unique_ptr<ObjectStore> OpenBucket(std::string bucket, std::string prefix = "");

  // Buckets.
  Result<std::vector<BucketEntry>> ListBuckets();
  Status CreateBucket(std::string_view bucket);  // kAlreadyExists if it exists
  Status DeleteBucket(std::string_view bucket);  // kPreconditionFailed if not empty
  // DeleteObject; with if_match, only while the current version's ETag is that
  // one (kPreconditionFailed otherwise). A server that does not implement
  // conditional deletes ignores the condition, as S3 did before 2024.
  Status DeleteObject(std::string_view bucket, std::string_view key,
                      std::optional<std::string> if_match = {});
  Status HeadBucket(std::string_view bucket);    // kNotFound if absent

  // ListObjectVersions: one page of versions and delete markers under prefix,
  // from (key_marker, version_marker) ("" = the start).
  Result<VersionPage> ListObjectVersions(std::string_view bucket, std::string_view prefix,
                                         std::string_view key_marker = "",
                                         std::string_view version_marker = "");
  // DeleteObjects naming each (key, version id) ("" = the current version);
  // up to 1000 per request, batched. One Status per entry.
  Result<std::vector<Status>> DeleteVersions(
      std::string_view bucket, const std::vector<std::pair<std::string, std::string>>& entries);
  // ListMultipartUploads: one page of the uploads in progress under prefix.
  Result<MultipartUploadPage> ListMultipartUploads(std::string_view bucket, std::string_view prefix,
                                                   std::string_view key_marker = "",
                                                   std::string_view upload_id_marker = "");
  Status AbortMultipartUpload(std::string_view bucket, std::string_view key,
                              std::string_view upload_id);

  // Server-side copy, also across buckets (x-amz-copy-source). Objects over
  // 5 GiB are copied as a multipart upload of UploadPartCopy parts.
  Result<ObjectInfo> CopyObject(std::string_view src_bucket, std::string_view src_key,
                                std::string_view dst_bucket, std::string_view dst_key,
                                const CopyOptions& options = {});
  // One part of a multipart upload copied from [offset, offset+length) of
  // another object (the whole object when range is nullopt).
  Result<UploadedPart> UploadPartCopy(std::string_view dst_bucket, std::string_view dst_key,
                                      std::string_view upload_id, int part_number,
                                      std::string_view src_bucket, std::string_view src_key,
                                      std::optional<std::pair<uint64_t, uint64_t>> range = {},
                                      std::optional<std::string> source_if_match = {});

  // A presigned URL for method ("GET", "PUT", ...) on bucket/key, valid for
  // expires_sec seconds (at most a week).
  Result<std::string> Presign(std::string_view method, std::string_view bucket,
                              std::string_view key, int64_t expires_sec);

  struct Stats {
    uint64_t requests = 0;   // HTTP requests sent (attempts)
    uint64_t retries = 0;    // attempts after the first
    uint64_t resumed_gets = 0;
    http::HttpClient::Stats http;
  };
  Stats stats() const;
  const S3Options& options() const;

  struct Impl;

 private:
  explicit S3Client(std::unique_ptr<Impl> impl);
  friend class S3ObjectStore;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::objstore
