// Private to the S3 frontend: the per-request context (Ctx), Frontend::Impl
// with every operation handler, and the helpers the handler files share. The
// files: frontend.cc (entry points, error replies, metrics), router.cc (the
// routing table: request -> handler), auth.cc (SigV4 authentication and
// bucket authorization), request.cc (request bodies, checksums, ranges, copy
// sources, object headers in), bucket_handlers.cc, object_handlers.cc and
// multipart_handlers.cc (the operations).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <strata/core/checksum.h>
#include <strata/core/http_server.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>

#include "s3/acl.h"
#include "s3/aws_chunked.h"
#include "s3/cors.h"
#include "s3/express.h"
#include "s3/policy.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace strata::s3 {

struct LifecycleConfig;  // s3/lifecycle.h

inline constexpr log::Logger kLog("s3");
inline constexpr uint64_t kMaxKeyBytes = 1024;

// Per-request state.
struct Ctx {
  Ctx(http::Request& r, http::ResponseWriter& wr, std::string id)
      : req(r), w(wr), request_id(std::move(id)) {}
  http::Request& req;
  http::ResponseWriter& w;
  std::string request_id;
  std::string bucket;
  std::string key;
  bool has_key = false;
  std::multimap<std::string, std::string> query;  // decoded
  AuthResult auth;
  // The user table this request was authenticated against (kept alive for it).
  std::shared_ptr<const UserStore::Table> users;
  const User* user = nullptr;  // nullptr: anonymous
  const Policy* user_policy = nullptr;  // the caller's user policy, if any
  std::string op = "Unknown";
  const char* route_op = nullptr;  // the matched route's operation, set before Authorize
  // c.bucket's record as first read in this request (Frontend::Impl::RequestBucket):
  // authorization, default encryption and the handler read it once.
  std::optional<objstore::BucketInfo> bucket_info;

  bool Has(std::string_view name) const { return query.find(std::string(name)) != query.end(); }
  std::string Q(std::string_view name) const {
    auto it = query.find(std::string(name));
    return it == query.end() ? std::string() : it->second;
  }
  std::optional<std::string_view> H(std::string_view name) const { return req.Header(name); }
  std::string Resource() const { return has_key ? "/" + bucket + "/" + key : "/" + bucket; }
};

// The request body as the engine's ByteSource, decoding aws-chunked framing and
// checking x-amz-content-sha256 when the payload is signed.
class BodySource final : public objstore::ByteSource {
 public:
  BodySource(http::Request& req, const AuthResult& auth, bool aws_chunked);

  Result<size_t> Read(char* buf, size_t n) override;

  uint64_t total() const { return total_; }
  // Trailer value by lower-case name, after the body ended.
  std::optional<std::string> Trailer(std::string_view name) const;

 private:
  http::Request& req_;
  const AuthResult& auth_;
  std::unique_ptr<AwsChunkedDecoder> chunked_;
  std::unique_ptr<Hasher> sha_;
  bool done_ = false;
  uint64_t total_ = 0;
};

struct ByteRange {
  uint64_t start = 0;
  uint64_t length = 0;
};

// Parses a single "bytes=" range against size. nullopt: header absent or ignorable
// (multiple ranges -> whole object, as S3). Error: unsatisfiable.
Result<std::optional<ByteRange>> ParseRange(std::string_view h, uint64_t size);

// x-amz-copy-source-range: exactly "bytes=first-last" within the source (not
// clamped, unlike Range): InvalidArgument when malformed, InvalidRange past the end.
Result<ByteRange> ParseCopySourceRange(std::string_view h, uint64_t size);

// True when the body is aws-chunked framed (a streaming payload mode).
bool IsAwsChunked(const Ctx& c);
// Content-MD5, an x-amz-checksum-* header or a checksum trailer is sent (what
// S3 requires of writes that set an Object Lock).
bool HasIntegrityHeader(const Ctx& c);
// The storage class a listing or header reports for an object of `bucket`
// whose stored class is `stored` ("" = STANDARD; directory buckets: EXPRESS_ONEZONE).
std::string_view ReportedStorageClass(std::string_view bucket, std::string_view stored);
// x-amz-storage-class of a write: "" for none or STANDARD, the class when it
// is one whose objects read back at once (REDUCED_REDUNDANCY, STANDARD_IA,
// ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR); GLACIER and DEEP_ARCHIVE
// (which need RestoreObject) answer NotImplemented, others InvalidStorageClass.
// Directory buckets check theirs in CheckDirectoryBucketOp.
Result<std::string> StorageClassFromHeader(const Ctx& c);
// The decoded body length the client promised, for the engine's size check.
Result<std::optional<uint64_t>> ExpectedSize(const Ctx& c, uint64_t max);
// x-amz-copy-source: "/bucket/key" or "bucket/key", URL-encoded, maybe "?versionId=".
// version_id (optional): the ?versionId= value, "" when absent.
Status ParseCopySource(std::string_view h, std::string& bucket, std::string& key,
                       std::string* version_id = nullptr);
// x-amz-copy-source-if-* conditions against the source.
Status CheckCopySourceConditions(const Ctx& c, const objstore::ObjectMeta& src);

struct Frontend::Impl {
  objstore::LocalEngine* engine;
  FrontendOptions opts;
  UserStore* users = nullptr;             // opts.user_store
  std::unique_ptr<UserStore> own_users;   // when the options named none
  // Parsed bucket policies and public access blocks by bucket, valid while the
  // bucket's configs pointer is the one cached (a change replaces the map).
  struct BucketAccess {
    std::shared_ptr<const std::map<std::string, std::string>> configs;
    std::shared_ptr<const Policy> policy;
    uint8_t pab = 0;  // kBlockPublicAcls | kIgnorePublicAcls | ...
    std::shared_ptr<const CorsConfig> cors;  // nullptr: no CORS configuration
  };
  std::shared_mutex access_mu;
  std::unordered_map<std::string, std::shared_ptr<const BucketAccess>> access_cache;  // guarded by access_mu
  std::atomic<uint64_t> request_seq{0};
  uint64_t id_prefix = 0;
  metrics::Histogram* latency = nullptr;
  metrics::Counter* bytes_in = nullptr;
  metrics::Counter* bytes_out = nullptr;
  std::mutex counters_mu;
  std::map<std::string, metrics::Counter*, std::less<>> counters;  // guarded by counters_mu
  // Parsed lifecycle configurations by bucket, valid while the bucket's
  // configs pointer is the one cached (as access_cache).
  struct LifecycleCacheEntry {
    std::shared_ptr<const std::map<std::string, std::string>> configs;
    std::shared_ptr<const LifecycleConfig> config;
  };
  std::mutex lifecycle_mu;
  std::unordered_map<std::string, LifecycleCacheEntry> lifecycle_cache;  // guarded by lifecycle_mu

  // frontend.cc
  void Handle(http::Request& req, http::ResponseWriter& w);
  void SendError(Ctx& c, const Status& st, std::string_view fallback_not_found);
  void SendXml(Ctx& c, int status, const std::string& xml);
  metrics::Counter& RequestCounter(std::string_view op, int status);
  metrics::Counter& RequestCounterSlow(std::string_view op, int status);

  // router.cc: parses the target, authenticates, runs the matching handler.
  Status Route(Ctx& c);
  Status ParseTarget(Ctx& c);
  Status MethodNotAllowed(Ctx& c);
  Status NotImplemented(Ctx& c);

  // auth.cc
  Status Authenticate(Ctx& c);
  Status Authorize(Ctx& c, bool write);
  Status CheckBucket(Ctx& c);
  // c.bucket's record, read from the engine once per request (kNotFound when
  // it does not exist). Handlers that change the bucket read the engine.
  Result<const objstore::BucketInfo*> RequestBucket(Ctx& c);
  // One action on one resource of an existing bucket (key "" = the bucket):
  // AccessDenied unless the policies and ACLs allow it (see auth.cc).
  Status AuthorizeAction(Ctx& c, const objstore::BucketInfo& b, std::string_view action,
                         std::string_view key, bool object_resource);
  Status AuthorizeCopySource(Ctx& c, std::string_view bucket, std::string_view key);
  std::shared_ptr<const BucketAccess> AccessOf(const objstore::BucketInfo& b);
  std::string DisplayName(const Ctx& c, std::string_view id) const;

  // access_handlers.cc: bucket policies, public access blocks, ACLs.
  Status GetBucketAcl(Ctx& c);
  Status PutBucketAcl(Ctx& c);
  Status GetObjectAcl(Ctx& c);
  Status PutObjectAcl(Ctx& c);
  Status PutBucketPolicy(Ctx& c);
  Status GetBucketPolicy(Ctx& c);
  Status DeleteBucketPolicy(Ctx& c);
  Status GetBucketPolicyStatus(Ctx& c);
  Status PutPublicAccessBlock(Ctx& c);
  Status GetPublicAccessBlock(Ctx& c);
  Status DeletePublicAccessBlock(Ctx& c);
  // The ACL of a new bucket or object from x-amz-acl / x-amz-grant-*:
  // checked (with an explicit Deny of s3:CreateBucket in the user policy)
  // before the bucket is created, stored after.
  Result<std::optional<Acl>> NewBucketAcl(Ctx& c);
  Status StoreNewBucketAcl(Ctx& c, const std::optional<Acl>& acl);
  Status ObjectAclFromHeaders(Ctx& c, objstore::ObjectMeta& meta);

  // cors_handlers.cc: Put/Get/DeleteBucketCors, the preflight (OPTIONS, before
  // authentication) and the CORS headers of actual requests (AddCorsHeaders:
  // before authentication, so errors carry them too).
  Status PutBucketCors(Ctx& c);
  Status GetBucketCors(Ctx& c);
  Status DeleteBucketCors(Ctx& c);
  Status CorsPreflight(Ctx& c);
  void AddCorsHeaders(Ctx& c);

  // bucket_handlers.cc
  Status ListBuckets(Ctx& c);
  Status CreateBucket(Ctx& c);
  Status DeleteBucket(Ctx& c);
  Status HeadBucket(Ctx& c);
  Status GetBucketLocation(Ctx& c);
  Status GetBucketVersioning(Ctx& c);
  // Versioning (version_handlers.cc).
  Status PutBucketVersioning(Ctx& c);
  Status ListObjectVersions(Ctx& c);
  // The metadata of a copy source version ("" = current) or the S3 error.
  Result<objstore::ObjectMeta> HeadCopySource(const std::string& sb, const std::string& sk,
                                              const std::string& sv);
  // The object (its ?versionId=) a tagging/ACL request names, or the S3 error.
  Result<objstore::ObjectMeta> HeadForSubresource(Ctx& c);
  Status SetTagsOfVersion(Ctx& c, std::map<std::string, std::string> tags, int status);
  // The bucket has versioning Enabled or Suspended (its record as read by this request).
  bool Versioned(Ctx& c);
  // x-amz-version-id for an object of a versioned bucket ("null" for the null version).
  void AddVersionId(Ctx& c, const objstore::ObjectMeta& m);
  // The answer to a read that found nothing (st NotFound): NoSuchVersion, or
  // for a delete marker 405 (a version named) / 404 (the current one) with
  // x-amz-delete-marker; any other status as is.
  Status NoSuchVersionOrMarker(Ctx& c, const Status& st, std::string_view version_id, bool head);
  // Bucket tagging (bucket_handlers.cc): up to 50 tags, kept in the bucket config "tagging".
  Status PutBucketTagging(Ctx& c);
  Status GetBucketTagging(Ctx& c);
  Status DeleteBucketTagging(Ctx& c);
  Status ListObjectsV1(Ctx& c);
  Status ListObjectsV2(Ctx& c);
  Status ListObjects(Ctx& c, bool v2);
  Status DeleteObjects(Ctx& c);
  Status CheckDeleteConditions(const std::string& bucket, const DeleteRequest::Object& o);

  // object_handlers.cc
  Status PutObject(Ctx& c);
  Status CopyObject(Ctx& c);
  Status RenameObject(Ctx& c);
  Status GetObject(Ctx& c);
  Status HeadObject(Ctx& c);
  Status ServeObject(Ctx& c, bool head);
  // Opens the version ?versionId= names (the current one without it), with
  // the S3 answers for a missing bucket, a missing version and a delete
  // marker (GetObject, HeadObject, GetObjectAttributes).
  Result<std::unique_ptr<objstore::ObjectReader>> OpenRequestedVersion(Ctx& c, bool head);
  Status DeleteObject(Ctx& c);
  Status GetObjectTagging(Ctx& c);
  Status PutObjectTagging(Ctx& c);
  Status DeleteObjectTagging(Ctx& c);
  void AddObjectHeaders(Ctx& c, const objstore::ObjectMeta& m, bool with_checksum);
  // object_attributes.cc
  Status GetObjectAttributes(Ctx& c);

  // multipart_handlers.cc
  Status CreateUpload(Ctx& c);
  Status UploadPart(Ctx& c);
  Status CompleteUpload(Ctx& c);
  Status AbortUpload(Ctx& c);
  Status ListParts(Ctx& c);
  Status ListUploads(Ctx& c);

  // post_object.cc: browser-based upload (multipart/form-data with a POST policy)
  Status PostObject(Ctx& c);
  // express_handlers.cc: S3 Express One Zone (directory buckets, sessions).
  struct ExpressSession {
    const User* user = nullptr;  // set when the request carries a valid session token
    const Policy* user_policy = nullptr;  // the user's own policy, nullptr none
    SessionClaims claims;
    std::string secret;  // the session's secret key, for VerifySigV4's lookup
  };
  // Authenticate: resolves x-amz-s3session-token (or X-Amz-S3session-Token) before
  // the signature is checked, then confines the request to the session's bucket.
  Status ResolveExpressSession(Ctx& c, int64_t now_ns, ExpressSession& s);
  Status AdoptExpressSession(Ctx& c, const ExpressSession& s);
  // Route: GET / signed for "s3express" is ListDirectoryBuckets (S3 serves it on
  // its own host, s3express-control; here one endpoint serves both).
  void NoteExpressControlRequest(Ctx& c);
  // Route, before the handler: what directory buckets do not support answers
  // NotImplemented; their ListObjectsV2 and storage-class rules.
  Status CheckDirectoryBucketOp(Ctx& c);
  // CreateBucket: validates the configuration; a directory bucket's document to store.
  Result<std::optional<std::string>> DirectoryBucketDocument(Ctx& c, std::string_view body);
  Status CreateSession(Ctx& c);
  Status ListDirectoryBuckets(Ctx& c);

  // request.cc
  Result<objstore::PutOptions> PutOptionsFromHeaders(Ctx& c);
  Status SetupChecksum(Ctx& c, objstore::PutOptions& o, BodySource& body, bool single_part);
  Result<std::string> ReadXmlBody(Ctx& c);

  // sse.cc: server-side encryption (see sse.h). SseForWrite picks the scheme
  // (headers, else the bucket default), makes and wraps the data key and chains
  // o.before_commit (call it after SetupChecksum); SseForPart gives a part the
  // upload's key; SseReader is the DataKeyFn of a GET/HEAD or a copy source.
  Status SseForWrite(Ctx& c, objstore::PutOptions& o);
  Status SseForPart(Ctx& c, const objstore::PutOptions& upload, objstore::PutOptions& o);
  objstore::DataKeyFn SseReader(Ctx& c, bool copy_source);
  void SseResponseHeaders(Ctx& c, const objstore::ObjectMeta& m);
  Status PutBucketEncryption(Ctx& c);
  Status GetBucketEncryption(Ctx& c);
  Status DeleteBucketEncryption(Ctx& c);

  // object_lock_handlers.cc: Object Lock (rules: object_lock.h).
  Status PutObjectLockConfiguration(Ctx& c);
  Status GetObjectLockConfiguration(Ctx& c);
  Status PutObjectRetention(Ctx& c);
  Status GetObjectRetention(Ctx& c);
  Status PutObjectLegalHold(Ctx& c);
  Status GetObjectLegalHold(Ctx& c);
  // The lock of a new version from x-amz-object-lock-* and the bucket's
  // default retention: checked (InvalidRequest on a bucket without Object
  // Lock; Content-MD5 or a checksum required when `has_body` and a retention
  // or hold applies), set in o.meta and kept through o.before_commit (a copy
  // does not inherit its source's lock). CreateMultipartUpload passes
  // has_body false; the upload's metadata carries the lock to its completion.
  Status ObjectLockForWrite(Ctx& c, objstore::PutOptions& o, bool has_body);
  // x-amz-object-lock-mode, -retain-until-date and -legal-hold of GET/HEAD.
  void AddObjectLockHeaders(Ctx& c, const objstore::ObjectMeta& m);
  // Removes one version (DeleteObject, DeleteObjects with a version id): in a
  // bucket with Object Lock, refused (AccessDenied) while the version is held
  // or retained, unless x-amz-bypass-governance-retention lifts a GOVERNANCE
  // retention for a caller allowed s3:BypassGovernanceRetention.
  Result<objstore::DeleteResult> DeleteVersionChecked(Ctx& c, const std::string& key,
                                                      const std::string& version_id);
  // The bucket has Object Lock enabled (its record as read by this request).
  bool LockEnabled(Ctx& c);
  int64_t LockNow() const;

  // lifecycle_handlers.cc: bucket lifecycle configurations (rules: lifecycle.h).
  Status PutBucketLifecycle(Ctx& c);
  Status GetBucketLifecycle(Ctx& c);
  Status DeleteBucketLifecycle(Ctx& c);
  // x-amz-expiration of GET/HEAD when a rule expires the object.
  void AddExpirationHeader(Ctx& c, const objstore::ObjectMeta& m);
  std::shared_ptr<const LifecycleConfig> BucketLifecycle(const objstore::BucketInfo& b);
};

}  // namespace strata::s3
