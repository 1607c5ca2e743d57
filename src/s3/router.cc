// Routing: the request target (query, bucket and key, path- or virtual-host
// style), authentication, and the table that maps (method, resource,
// sub-resource) to the operation's handler. See router.h for how rows match.
#include "s3/router.h"

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "s3/errors.h"

namespace strata::s3 {

namespace {

using I = Frontend::Impl;
using M = Method;
constexpr Resource kSvc = Resource::kService;
constexpr Resource kBkt = Resource::kBucket;
constexpr Resource kObj = Resource::kObject;
constexpr AuthStep kAuth = AuthStep::kAuthorizeThenName;
constexpr AuthStep kNameAuth = AuthStep::kNameThenAuthorize;
constexpr AuthStep kName = AuthStep::kNameOnly;
constexpr const char* kCopySource = "x-amz-copy-source";

// Rows of one resource together; within a (method, resource), rows with a
// sub-resource first, in the order they are tried, then the fallback row.
// Operations Strata does not implement keep one row each (handler
// NotImplemented), so an implementation replaces exactly that row.
constexpr auto kNI = &I::NotImplemented;
constexpr const char* kGetObjectParams =
    "partNumber versionId response-content-type response-content-language response-expires "
    "response-cache-control response-content-disposition response-content-encoding";
// clang-format off
constexpr RouteRow kRoutes[] = {
    // The service: GET / lists the caller's buckets.
    // S3 Express: botocore sends GET / signed for "s3express" (Route adds the x-id).
    {M::kGet, kSvc, "x-id", "ListDirectoryBuckets", nullptr, "ListDirectoryBuckets", kNameAuth, &I::ListDirectoryBuckets, "continuation-token max-directory-buckets"},
    {M::kGet, kSvc, nullptr, nullptr, nullptr, "ListBuckets", kNameAuth, &I::ListBuckets, "max-buckets continuation-token prefix bucket-region"},
    {M::kAny, kSvc, nullptr, nullptr, nullptr, "ListBuckets", kName, &I::MethodNotAllowed},

    // Buckets: GET.
    {M::kGet, kBkt, "location", nullptr, nullptr, "GetBucketLocation", kAuth, &I::GetBucketLocation},
    {M::kGet, kBkt, "versioning", nullptr, nullptr, "GetBucketVersioning", kAuth, &I::GetBucketVersioning},
    {M::kGet, kBkt, "uploads", nullptr, nullptr, "ListMultipartUploads", kAuth, &I::ListUploads, "prefix key-marker upload-id-marker max-uploads encoding-type"},
    {M::kGet, kBkt, "acl", nullptr, nullptr, "GetBucketAcl", kAuth, &I::GetBucketAcl},
    // Configurations Strata never holds: the "does not exist" answer of S3.
    {M::kGet, kBkt, "policy", nullptr, nullptr, "GetBucketPolicy", kAuth, &I::GetBucketPolicy},
    {M::kGet, kBkt, "cors", nullptr, nullptr, "GetBucketCors", kAuth, &I::GetBucketCors},
    {M::kGet, kBkt, "lifecycle", nullptr, nullptr, "GetBucketLifecycleConfiguration", kAuth, &I::GetBucketLifecycle},
    {M::kGet, kBkt, "tagging", nullptr, nullptr, "GetBucketTagging", kAuth, &I::GetBucketTagging},
    {M::kGet, kBkt, "encryption", nullptr, nullptr, "GetBucketEncryption", kAuth, &I::GetBucketEncryption},
    {M::kGet, kBkt, "object-lock", nullptr, nullptr, "GetObjectLockConfiguration", kAuth, &I::GetObjectLockConfiguration},
    {M::kGet, kBkt, "abac", nullptr, nullptr, "GetBucketAbac", kAuth, kNI},
    {M::kGet, kBkt, "accelerate", nullptr, nullptr, "GetBucketAccelerateConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "analytics", nullptr, nullptr, "GetBucketAnalyticsConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "intelligent-tiering", nullptr, nullptr, "GetBucketIntelligentTieringConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "inventory", nullptr, nullptr, "GetBucketInventoryConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "logging", nullptr, nullptr, "GetBucketLogging", kAuth, kNI},
    {M::kGet, kBkt, "metadataConfiguration", nullptr, nullptr, "GetBucketMetadataConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "metadataTable", nullptr, nullptr, "GetBucketMetadataTableConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "metrics", nullptr, nullptr, "GetBucketMetricsConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "notification", nullptr, nullptr, "GetBucketNotificationConfiguration", kAuth, kNI},
    {M::kGet, kBkt, "ownershipControls", nullptr, nullptr, "GetBucketOwnershipControls", kAuth, kNI},
    {M::kGet, kBkt, "policyStatus", nullptr, nullptr, "GetBucketPolicyStatus", kAuth, &I::GetBucketPolicyStatus},
    {M::kGet, kBkt, "publicAccessBlock", nullptr, nullptr, "GetPublicAccessBlock", kAuth, &I::GetPublicAccessBlock},
    {M::kGet, kBkt, "replication", nullptr, nullptr, "GetBucketReplication", kAuth, kNI},
    {M::kGet, kBkt, "requestPayment", nullptr, nullptr, "GetBucketRequestPayment", kAuth, kNI},
    {M::kGet, kBkt, "website", nullptr, nullptr, "GetBucketWebsite", kAuth, kNI},
    {M::kGet, kBkt, "versions", nullptr, nullptr, "ListObjectVersions", kAuth, &I::ListObjectVersions, "prefix delimiter key-marker version-id-marker max-keys encoding-type"},
    {M::kGet, kBkt, "session", nullptr, nullptr, "CreateSession", kAuth, &I::CreateSession},
    {M::kGet, kBkt, "list-type", "2", nullptr, "ListObjectsV2", kAuth, &I::ListObjectsV2, "prefix delimiter max-keys continuation-token start-after encoding-type fetch-owner"},
    {M::kGet, kBkt, nullptr, nullptr, nullptr, "ListObjects", kAuth, &I::ListObjectsV1, "prefix delimiter max-keys marker encoding-type list-type"},
    {M::kHead, kBkt, nullptr, nullptr, nullptr, "HeadBucket", kAuth, &I::HeadBucket},

    // Buckets: PUT.
    {M::kPut, kBkt, "acl", nullptr, nullptr, "PutBucketAcl", kAuth, &I::PutBucketAcl},
    {M::kPut, kBkt, "abac", nullptr, nullptr, "PutBucketAbac", kAuth, kNI},
    {M::kPut, kBkt, "accelerate", nullptr, nullptr, "PutBucketAccelerateConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "analytics", nullptr, nullptr, "PutBucketAnalyticsConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "cors", nullptr, nullptr, "PutBucketCors", kAuth, &I::PutBucketCors},
    {M::kPut, kBkt, "encryption", nullptr, nullptr, "PutBucketEncryption", kAuth, &I::PutBucketEncryption},
    {M::kPut, kBkt, "intelligent-tiering", nullptr, nullptr, "PutBucketIntelligentTieringConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "inventory", nullptr, nullptr, "PutBucketInventoryConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "lifecycle", nullptr, nullptr, "PutBucketLifecycleConfiguration", kAuth, &I::PutBucketLifecycle},
    {M::kPut, kBkt, "logging", nullptr, nullptr, "PutBucketLogging", kAuth, kNI},
    {M::kPut, kBkt, "metadataInventoryTable", nullptr, nullptr, "UpdateBucketMetadataInventoryTableConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "metadataJournalTable", nullptr, nullptr, "UpdateBucketMetadataJournalTableConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "metrics", nullptr, nullptr, "PutBucketMetricsConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "notification", nullptr, nullptr, "PutBucketNotificationConfiguration", kAuth, kNI},
    {M::kPut, kBkt, "object-lock", nullptr, nullptr, "PutObjectLockConfiguration", kAuth, &I::PutObjectLockConfiguration},
    {M::kPut, kBkt, "ownershipControls", nullptr, nullptr, "PutBucketOwnershipControls", kAuth, kNI},
    {M::kPut, kBkt, "policy", nullptr, nullptr, "PutBucketPolicy", kAuth, &I::PutBucketPolicy},
    {M::kPut, kBkt, "publicAccessBlock", nullptr, nullptr, "PutPublicAccessBlock", kAuth, &I::PutPublicAccessBlock},
    {M::kPut, kBkt, "replication", nullptr, nullptr, "PutBucketReplication", kAuth, kNI},
    {M::kPut, kBkt, "requestPayment", nullptr, nullptr, "PutBucketRequestPayment", kAuth, kNI},
    {M::kPut, kBkt, "tagging", nullptr, nullptr, "PutBucketTagging", kAuth, &I::PutBucketTagging},
    {M::kPut, kBkt, "versioning", nullptr, nullptr, "PutBucketVersioning", kAuth, &I::PutBucketVersioning},
    {M::kPut, kBkt, "website", nullptr, nullptr, "PutBucketWebsite", kAuth, kNI},
    // Anonymous callers are turned away by the handler, before any lookup.
    {M::kPut, kBkt, nullptr, nullptr, nullptr, "CreateBucket", kName, &I::CreateBucket},

    // Buckets: DELETE. Deleting a configuration a bucket never has succeeds, as in S3.
    {M::kDelete, kBkt, "policy", nullptr, nullptr, "DeleteBucketPolicy", kAuth, &I::DeleteBucketPolicy},
    {M::kDelete, kBkt, "cors", nullptr, nullptr, "DeleteBucketCors", kAuth, &I::DeleteBucketCors},
    {M::kDelete, kBkt, "lifecycle", nullptr, nullptr, "DeleteBucketLifecycle", kAuth, &I::DeleteBucketLifecycle},
    {M::kDelete, kBkt, "tagging", nullptr, nullptr, "DeleteBucketTagging", kAuth, &I::DeleteBucketTagging},
    {M::kDelete, kBkt, "encryption", nullptr, nullptr, "DeleteBucketEncryption", kAuth, &I::DeleteBucketEncryption},
    {M::kDelete, kBkt, "analytics", nullptr, nullptr, "DeleteBucketAnalyticsConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "intelligent-tiering", nullptr, nullptr, "DeleteBucketIntelligentTieringConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "inventory", nullptr, nullptr, "DeleteBucketInventoryConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "metadataConfiguration", nullptr, nullptr, "DeleteBucketMetadataConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "metadataTable", nullptr, nullptr, "DeleteBucketMetadataTableConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "metrics", nullptr, nullptr, "DeleteBucketMetricsConfiguration", kAuth, kNI},
    {M::kDelete, kBkt, "ownershipControls", nullptr, nullptr, "DeleteBucketOwnershipControls", kAuth, kNI},
    {M::kDelete, kBkt, "publicAccessBlock", nullptr, nullptr, "DeletePublicAccessBlock", kAuth, &I::DeletePublicAccessBlock},
    {M::kDelete, kBkt, "replication", nullptr, nullptr, "DeleteBucketReplication", kAuth, kNI},
    {M::kDelete, kBkt, "website", nullptr, nullptr, "DeleteBucketWebsite", kAuth, kNI},
    {M::kDelete, kBkt, nullptr, nullptr, nullptr, "DeleteBucket", kAuth, &I::DeleteBucket},

    // Buckets: POST.
    {M::kPost, kBkt, "delete", nullptr, nullptr, "DeleteObjects", kAuth, &I::DeleteObjects},
    {M::kPost, kBkt, "metadataConfiguration", nullptr, nullptr, "CreateBucketMetadataConfiguration", kAuth, kNI},
    {M::kPost, kBkt, "metadataTable", nullptr, nullptr, "CreateBucketMetadataTableConfiguration", kAuth, kNI},
    // Browser-based upload: the form's policy signature authenticates it (post_object.cc).
    {M::kPost, kBkt, nullptr, nullptr, nullptr, "PostObject", kName, &I::PostObject},
    {M::kAny, kBkt, nullptr, nullptr, nullptr, "Bucket", kAuth, &I::MethodNotAllowed},

    // Objects: GET (HEAD with a sub-resource runs these rows too).
    {M::kGet, kObj, "session", nullptr, nullptr, "CreateSession", kAuth, &I::CreateSession},
    {M::kGet, kObj, "uploadId", nullptr, nullptr, "ListParts", kAuth, &I::ListParts, "max-parts part-number-marker"},
    {M::kGet, kObj, "tagging", nullptr, nullptr, "GetObjectTagging", kAuth, &I::GetObjectTagging, "versionId"},
    {M::kGet, kObj, "acl", nullptr, nullptr, "GetObjectAcl", kAuth, &I::GetObjectAcl, "versionId"},
    {M::kGet, kObj, "attributes", nullptr, nullptr, "GetObjectAttributes", kAuth, &I::GetObjectAttributes, "versionId"},
    {M::kGet, kObj, "legal-hold", nullptr, nullptr, "GetObjectLegalHold", kAuth, &I::GetObjectLegalHold, "versionId"},
    {M::kGet, kObj, "retention", nullptr, nullptr, "GetObjectRetention", kAuth, &I::GetObjectRetention, "versionId"},
    {M::kGet, kObj, "torrent", nullptr, nullptr, "GetObjectTorrent", kAuth, kNI},
    {M::kGet, kObj, nullptr, nullptr, nullptr, "GetObject", kAuth, &I::GetObject, kGetObjectParams},
    {M::kHead, kObj, nullptr, nullptr, nullptr, "HeadObject", kAuth, &I::HeadObject, kGetObjectParams},

    // Objects: PUT.
    {M::kPut, kObj, "tagging", nullptr, nullptr, "PutObjectTagging", kAuth, &I::PutObjectTagging, "versionId"},
    {M::kPut, kObj, "acl", nullptr, nullptr, "PutObjectAcl", kAuth, &I::PutObjectAcl, "versionId"},
    {M::kPut, kObj, "uploadId", nullptr, kCopySource, "UploadPartCopy", kAuth, &I::UploadPart, "partNumber"},
    {M::kPut, kObj, "uploadId", nullptr, nullptr, "UploadPart", kAuth, &I::UploadPart, "partNumber"},
    {M::kPut, kObj, "partNumber", nullptr, kCopySource, "UploadPartCopy", kAuth, &I::UploadPart, "uploadId"},
    {M::kPut, kObj, "partNumber", nullptr, nullptr, "UploadPart", kAuth, &I::UploadPart, "uploadId"},
    {M::kPut, kObj, "renameObject", nullptr, nullptr, "RenameObject", kAuth, &I::RenameObject},
    {M::kPut, kObj, "legal-hold", nullptr, nullptr, "PutObjectLegalHold", kAuth, &I::PutObjectLegalHold, "versionId"},
    {M::kPut, kObj, "retention", nullptr, nullptr, "PutObjectRetention", kAuth, &I::PutObjectRetention, "versionId"},
    {M::kPut, kObj, "encryption", nullptr, nullptr, "UpdateObjectEncryption", kAuth, kNI},
    {M::kPut, kObj, nullptr, nullptr, kCopySource, "CopyObject", kAuth, &I::CopyObject},
    {M::kPut, kObj, nullptr, nullptr, nullptr, "PutObject", kAuth, &I::PutObject},

    // Objects: DELETE and POST.
    {M::kDelete, kObj, "uploadId", nullptr, nullptr, "AbortMultipartUpload", kAuth, &I::AbortUpload},
    {M::kDelete, kObj, "tagging", nullptr, nullptr, "DeleteObjectTagging", kAuth, &I::DeleteObjectTagging, "versionId"},
    {M::kDelete, kObj, nullptr, nullptr, nullptr, "DeleteObject", kAuth, &I::DeleteObject, "versionId"},
    {M::kPost, kObj, "uploads", nullptr, nullptr, "CreateMultipartUpload", kAuth, &I::CreateUpload},
    {M::kPost, kObj, "uploadId", nullptr, nullptr, "CompleteMultipartUpload", kAuth, &I::CompleteUpload},
    {M::kPost, kObj, "restore", nullptr, nullptr, "RestoreObject", kAuth, kNI},
    {M::kPost, kObj, "select", nullptr, nullptr, "SelectObjectContent", kAuth, kNI},
    {M::kAny, kObj, nullptr, nullptr, nullptr, "Object", kAuth, &I::MethodNotAllowed},
};
// clang-format on

// Names a space-separated list holds.
bool ListHas(const char* list, std::string_view name) {
  if (list == nullptr) return false;
  for (std::string_view item : Split(list, ' ')) {
    if (item == name) return true;
  }
  return false;
}

// Parameters every row accepts: presigned-URL authentication and the
// operation name some SDKs add (x-id=PutObject).
bool IsGlobalParam(std::string_view name) {
  return name == "x-id" || (name.size() > 6 && IEquals(name.substr(0, 6), "x-amz-"));
}

bool Matches(const RouteRow& row, Method method, Resource resource,
             const std::multimap<std::string, std::string>& query, const http::Request& req) {
  if (row.resource != resource) return false;
  if (row.method != Method::kAny && row.method != method) return false;
  if (row.sub != nullptr) {
    auto it = query.find(std::string(row.sub));
    if (it == query.end()) return false;
    if (row.sub_value != nullptr && it->second != row.sub_value) return false;
  }
  if (row.header != nullptr && !req.Header(row.header)) return false;
  return true;
}

}  // namespace

Method ParseMethod(std::string_view m) {
  if (m == "GET") return Method::kGet;
  if (m == "HEAD") return Method::kHead;
  if (m == "PUT") return Method::kPut;
  if (m == "POST") return Method::kPost;
  if (m == "DELETE") return Method::kDelete;
  return Method::kOther;
}

std::span<const RouteRow> RouteTable() { return kRoutes; }

const RouteRow* FindRoute(Method method, Resource resource,
                          const std::multimap<std::string, std::string>& query,
                          const http::Request& req) {
  // HEAD names no sub-resource operation of its own: it gets the GET answer
  // without the body, so it can never reach a handler that writes.
  if (method == Method::kHead) {
    for (const RouteRow& row : kRoutes) {
      if (row.sub != nullptr && row.method == Method::kGet &&
          Matches(row, Method::kGet, resource, query, req))
        return &row;
    }
  }
  for (const RouteRow& row : kRoutes) {
    if (Matches(row, method, resource, query, req)) return &row;
  }
  return nullptr;  // unreachable: every resource ends in a kAny row
}

bool IsUnimplemented(const RouteRow& row) {
  return row.handler == &Frontend::Impl::NotImplemented ||
         row.handler == &Frontend::Impl::MethodNotAllowed;
}

Status CheckQuery(const RouteRow& row, const std::multimap<std::string, std::string>& query) {
  if (IsUnimplemented(row)) return Status::Ok();
  for ([[maybe_unused]] const auto& [name, value] : query) {
    if (name.empty() || IsGlobalParam(name)) continue;
    if (row.sub != nullptr && name == row.sub) continue;
    if (!ListHas(row.params, name)) {
      for (const RouteRow& other : kRoutes) {
        if (other.resource == row.resource && other.sub != nullptr && name == other.sub)
          return MakeError("MethodNotAllowed",
                           fmt::format("The specified method is not allowed against the "
                                       "\"{}\" sub-resource.",
                                       name));
      }
      return MakeError("NotImplemented",
                       fmt::format("{} with the query parameter \"{}\" is not implemented by "
                                   "Strata; nothing was changed.",
                                   row.op, name));
    }
  }
  return Status::Ok();
}

// Query parameters, then bucket and key: virtual-host style first, then path style.
Status Frontend::Impl::ParseTarget(Ctx& c) {
  http::Request& req = c.req;
  if (!req.query.empty()) {
    for (std::string_view kv : Split(req.query, '&')) {
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      auto k = UriDecode(kv.substr(0, eq), true);
      auto v = eq == std::string_view::npos ? std::optional<std::string>("")
                                            : UriDecode(kv.substr(eq + 1), true);
      if (!k || !v) return MakeError("InvalidArgument", "malformed query string");
      c.query.emplace(std::move(*k), std::move(*v));
    }
  }
  auto path = UriDecode(req.path, false);
  if (!path || path->empty() || (*path)[0] != '/')
    return MakeError("InvalidRequest", "malformed request path");
  std::string_view p(*path);
  p.remove_prefix(1);
  if (auto host = req.Header("host")) {
    std::string_view h = *host;
    if (size_t colon = h.rfind(':');
        colon != std::string_view::npos && h.find(']') == std::string_view::npos)
      h = h.substr(0, colon);
    for (const std::string& d : opts.domains) {
      if (h.size() > d.size() + 1 && h.substr(h.size() - d.size()) == d &&
          h[h.size() - d.size() - 1] == '.') {
        c.bucket = std::string(h.substr(0, h.size() - d.size() - 1));
        break;
      }
    }
  }
  if (c.bucket.empty()) {
    size_t slash = p.find('/');
    c.bucket = std::string(p.substr(0, slash));
    if (slash != std::string_view::npos) {
      c.key = std::string(p.substr(slash + 1));
      c.has_key = true;
    }
  } else {
    c.key = std::string(p);
    c.has_key = !p.empty();
  }
  if (c.has_key && c.key.empty()) c.has_key = false;  // "/bucket/" is the bucket
  return Status::Ok();
}

Status Frontend::Impl::Route(Ctx& c) {
  STRATA_RETURN_IF_ERROR(ParseTarget(c));
  // CORS comes before authentication: a preflight carries no credentials, and
  // a browser reads an actual request's error only with the CORS headers on it.
  if (c.req.method == "OPTIONS" && !c.bucket.empty()) return CorsPreflight(c);
  AddCorsHeaders(c);
  STRATA_RETURN_IF_ERROR(Authenticate(c));
  NoteExpressControlRequest(c);

  Resource resource = Resource::kService;
  if (!c.bucket.empty()) {
    if (c.has_key && c.key.size() > kMaxKeyBytes)
      return MakeError("KeyTooLongError", "Your key is too long (the limit is 1024 bytes)");
    if (c.has_key && !IsValidUtf8(c.key))
      return MakeError("InvalidArgument", "object keys must be valid UTF-8");
    resource = c.has_key ? Resource::kObject : Resource::kBucket;
  }
  const Method method = ParseMethod(c.req.method);
  const RouteRow* row = FindRoute(method, resource, c.query, c.req);
  const bool write = method != Method::kGet && method != Method::kHead;
  c.route_op = row->op;  // Authorize maps it to the IAM action
  switch (row->auth) {
    case AuthStep::kAuthorizeThenName:
      STRATA_RETURN_IF_ERROR(Authorize(c, write));
      c.op = row->op;
      break;
    case AuthStep::kNameThenAuthorize:
      c.op = row->op;
      STRATA_RETURN_IF_ERROR(Authorize(c, write));
      break;
    case AuthStep::kNameOnly:
      c.op = row->op;
      break;
  }
  STRATA_RETURN_IF_ERROR(CheckQuery(*row, c.query));
  STRATA_RETURN_IF_ERROR(CheckDirectoryBucketOp(c));
  return (this->*row->handler)(c);
}

// Nothing is read or changed: the request's body is left unread (SendError
// closes the connection after the answer rather than draining it).
Status Frontend::Impl::NotImplemented(Ctx& c) {
  return MakeError("NotImplemented", c.op + " is not implemented by Strata; nothing was changed.");
}

Status Frontend::Impl::MethodNotAllowed(Ctx& c) {
  (void)c;
  return MakeError("MethodNotAllowed",
                   "The specified method is not allowed against this resource.");
}

}  // namespace strata::s3
