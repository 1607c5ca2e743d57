// S3 Express One Zone: CreateSession, ListDirectoryBuckets, session
// authentication, the CreateBucket step for directory buckets, and the rules
// that set directory buckets apart (see docs/s3.md, "S3 Express One Zone").
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include <strata/core/clock.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/express.h"
#include "s3/frontend_internal.h"
#include "s3/xml.h"

namespace strata::s3 {

namespace {

// The operations S3 serves on directory buckets (Regional and Zonal endpoint
// API operations, by the router's operation names). "Bucket" and "Object" are
// the router's MethodNotAllowed rows.
// clang-format off
constexpr std::string_view kDirectoryBucketOps[] = {
    "CreateBucket", "DeleteBucket", "HeadBucket", "ListObjectsV2", "ListMultipartUploads",
    "DeleteObjects", "CreateSession",
    "GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy",
    "GetBucketEncryption", "PutBucketEncryption", "DeleteBucketEncryption",
    "GetBucketLifecycle", "GetBucketLifecycleConfiguration", "PutBucketLifecycleConfiguration",
    "DeleteBucketLifecycle",
    "PutObject", "GetObject", "HeadObject", "DeleteObject", "CopyObject", "RenameObject",
    "GetObjectAttributes", "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
    "CompleteMultipartUpload", "AbortMultipartUpload", "ListParts",
    "Bucket", "Object"};
// clang-format on

bool IsDirectoryBucketOp(std::string_view op) {
  return std::find(std::begin(kDirectoryBucketOps), std::end(kDirectoryBucketOps), op) !=
         std::end(kDirectoryBucketOps);
}

}  // namespace

Status Frontend::Impl::ResolveExpressSession(Ctx& c, int64_t now_ns, ExpressSession& s) {
  std::string token;
  if (auto h = c.H(kSessionTokenHeader)) {
    token = std::string(Trim(*h));
  } else if (c.Has(kSessionTokenQuery)) {
    token = c.Q(kSessionTokenQuery);
  } else {
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(SessionClaims claims, ReadSessionToken(token));
  auto it = c.users->by_key.find(claims.user_access_key);
  if (it == c.users->by_key.end())
    return MakeError("InvalidToken", "The provided token is malformed or otherwise invalid.");
  STRATA_ASSIGN_OR_RETURN(s.secret, VerifySessionToken(token, it->second->user.secret_key, now_ns));
  s.user = &it->second->user;
  s.user_policy = it->second->policy.get();
  s.claims = std::move(claims);
  return Status::Ok();
}

Status Frontend::Impl::AdoptExpressSession(Ctx& c, const ExpressSession& s) {
  c.user = s.user;
  c.user_policy = s.user_policy;
  c.auth.express_session = true;
  if (c.bucket != s.claims.bucket)
    return MakeError("AccessDenied", "The session credentials are for bucket \"" + s.claims.bucket +
                                         "\"; call CreateSession for \"" + c.bucket + "\"");
  if (s.claims.mode == SessionMode::kReadOnly && c.req.method != "GET" && c.req.method != "HEAD")
    return MakeError("AccessDenied", "A ReadOnly session allows only GET and HEAD requests");
  return Status::Ok();
}

void Frontend::Impl::NoteExpressControlRequest(Ctx& c) {
  if (c.bucket.empty() && c.req.method == "GET" && c.auth.service == kS3ExpressService &&
      !c.Has("x-id"))
    c.query.emplace("x-id", "ListDirectoryBuckets");
}

Status Frontend::Impl::CheckDirectoryBucketOp(Ctx& c) {
  if (!IsDirectoryBucketName(c.bucket)) return Status::Ok();
  auto b = RequestBucket(c);
  if (!b.ok()) return Status::Ok();  // the operation answers NoSuchBucket (or creates it)
  if (!IsDirectoryBucketOp(c.op)) {
    if (c.op == "ListObjects")
      return MakeError("NotImplemented",
                       "ListObjects is not supported for directory buckets; use ListObjectsV2");
    return MakeError("NotImplemented", c.op + " is not supported for directory buckets");
  }
  if (c.op == "ListObjectsV2") {
    const std::string delimiter = c.Q("delimiter"), prefix = c.Q("prefix");
    if (!delimiter.empty() && delimiter != "/")
      return MakeError("InvalidArgument", "Directory buckets support only \"/\" as the delimiter");
    if (!prefix.empty() && prefix.back() != '/')
      return MakeError("InvalidArgument",
                       "Directory buckets support only prefixes that end in the delimiter \"/\"");
  }
  if (c.op == "PutObject" || c.op == "CopyObject" || c.op == "CreateMultipartUpload") {
    if (auto sc = c.H("x-amz-storage-class"); sc && Trim(*sc) != "EXPRESS_ONEZONE")
      return MakeError("InvalidStorageClass",
                       "Directory buckets hold only the EXPRESS_ONEZONE "
                       "storage class");
  }
  if (c.op == "HeadBucket") {
    if (const std::string* doc = (*b)->Config(kDirectoryBucketConfigName)) {
      if (auto cfg = DirectoryBucketConfig::FromDocument(*doc); cfg.ok()) {
        c.w.AddHeader("x-amz-bucket-location-type", cfg->location_type);
        c.w.AddHeader("x-amz-bucket-location-name", cfg->location_name);
      }
    }
  }
  return Status::Ok();
}

Result<std::optional<std::string>> Frontend::Impl::DirectoryBucketDocument(Ctx& c,
                                                                           std::string_view body) {
  STRATA_ASSIGN_OR_RETURN(DirectoryBucketConfig cfg, ParseCreateBucketType(c.bucket, body));
  if (cfg.location_type.empty()) return std::optional<std::string>();
  return std::optional<std::string>(cfg.Document());
}

Status Frontend::Impl::CreateSession(Ctx& c) {
  // The AWS SDK for JavaScript v3 sends "/bucket//?session" (and "/bucket//key")
  // to a path-style endpoint: refused here, before it makes keys with a leading "/".
  if (c.has_key)
    return MakeError("InvalidRequest",
                     "CreateSession names a bucket, not an object (\"/" + c.bucket + "/" + c.key +
                         "\"); with a path-style endpoint some SDKs add a '/' after the bucket: "
                         "use a virtual-host-style endpoint for directory buckets");
  if (c.user == nullptr)
    return MakeError("AccessDenied", "CreateSession needs a request signed with your credentials");
  if (c.auth.express_session)
    return MakeError("AccessDenied",
                     "CreateSession must be signed with your own credentials, not "
                     "with session credentials");
  SessionMode mode = SessionMode::kReadWrite;
  if (auto m = c.H("x-amz-create-session-mode")) {
    const std::string_view v = Trim(*m);
    if (v == "ReadOnly") {
      mode = SessionMode::kReadOnly;
    } else if (v != "ReadWrite") {
      return MakeError("InvalidArgument",
                       "x-amz-create-session-mode must be ReadWrite or "
                       "ReadOnly, not \"" +
                           std::string(v) + "\"");
    }
  }
  // A session's encryption settings would apply to every object written with
  // it; Strata keeps none, so it refuses them rather than ignore them.
  for (const auto& h : c.req.headers) {
    if (StartsWith(ToLower(h.name), "x-amz-server-side-encryption"))
      return MakeError("NotImplemented", "CreateSession with server-side encryption settings (" +
                                             std::string(h.name) + ") is not supported");
  }
  if (!IsDirectoryBucketName(c.bucket)) {
    STRATA_RETURN_IF_ERROR(CheckBucket(c));
    return MakeError("InvalidRequest",
                     "CreateSession is only supported on directory buckets "
                     "(names ending in --zone-id--x-s3)");
  }
  // A session for a directory bucket that does not exist yet is granted: with
  // a custom endpoint, SDKs sign CreateBucket itself with session credentials
  // of the new bucket. It carries no more than the user's own rights.
  if (!engine->GetBucket(c.bucket).ok())
    STRATA_RETURN_IF_ERROR(DirectoryBucketZone(c.bucket).status());
  SessionClaims claims;
  claims.user_access_key = c.user->access_key;
  claims.bucket = c.bucket;
  claims.expires_ns = NowUnixNanos() + kSessionLifetimeNs;
  claims.mode = mode;
  const SessionCredentials cred = IssueSession(claims, c.user->secret_key);
  XmlWriter x("CreateSessionResult");
  x.Open("Credentials")
      .Elem("SessionToken", cred.token)
      .Elem("SecretAccessKey", cred.secret_key)
      .Elem("AccessKeyId", cred.access_key)
      .Elem("Expiration", FormatIso8601(cred.expires_ns))
      .Close("Credentials");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::ListDirectoryBuckets(Ctx& c) {
  if (c.user == nullptr)
    return MakeError("AccessDenied", "Anonymous access is not allowed; sign the request");
  uint64_t max = 1000;
  if (c.Has("max-directory-buckets")) {
    auto m = ParseUint64(c.Q("max-directory-buckets"));
    if (!m || *m > 1000)
      return MakeError("InvalidArgument",
                       "max-directory-buckets must be an integer from 0 to 1000");
    max = *m;
  }
  std::string after;
  if (c.Has("continuation-token")) {
    auto t = Base64Decode(c.Q("continuation-token"));
    if (!t || t->empty() || !IsDirectoryBucketName(*t))
      return MakeError("InvalidArgument", "The continuation token provided is incorrect");
    after = std::move(*t);
  }
  STRATA_ASSIGN_OR_RETURN(auto buckets, engine->ListBuckets());
  std::sort(buckets.begin(), buckets.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  XmlWriter x("ListAllMyDirectoryBucketsResult");
  x.Open("Buckets");
  uint64_t n = 0;
  std::string last;
  bool more = false;
  for (const auto& b : buckets) {
    if (!IsDirectoryBucketName(b.name) || b.name <= after) continue;
    if (!c.user->admin && b.owner != c.user->access_key) continue;
    if (n == max) {
      more = true;
      break;
    }
    x.Open("Bucket")
        .Elem("Name", b.name)
        .Elem("CreationDate", FormatIso8601(b.created_ns))
        .Close("Bucket");
    last = b.name;
    ++n;
  }
  x.Close("Buckets");
  // With max-directory-buckets=0 nothing is listed and no token is given, so
  // a paginator cannot loop on an empty page.
  if (more && n > 0) x.Elem("ContinuationToken", Base64Encode(last));
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
