// Routing: the request target (query, bucket and key, path- or virtual-host
// style), authentication, and the table that maps (method, resource,
// sub-resource) to the operation's handler. See router.h for how rows match.
#include "s3/router.h"

#include <optional>
#include <string>
#include <string_view>

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
// clang-format off
constexpr RouteRow kRoutes[] = {
    // The service: GET / lists the caller's buckets.
    {M::kGet, kSvc, nullptr, nullptr, nullptr, "ListBuckets", kNameAuth, &I::ListBuckets},
    {M::kAny, kSvc, nullptr, nullptr, nullptr, "ListBuckets", kName, &I::MethodNotAllowed},

    // Buckets.
    {M::kGet, kBkt, "location", nullptr, nullptr, "GetBucketLocation", kAuth, &I::GetBucketLocation},
    {M::kGet, kBkt, "versioning", nullptr, nullptr, "GetBucketVersioning", kAuth, &I::GetBucketVersioning},
    {M::kGet, kBkt, "uploads", nullptr, nullptr, "ListMultipartUploads", kAuth, &I::ListUploads},
    {M::kGet, kBkt, "acl", nullptr, nullptr, "GetBucketAcl", kAuth, &I::GetBucketAcl},
    // Configurations Strata never holds: the "does not exist" answer of S3.
    {M::kGet, kBkt, "policy", nullptr, nullptr, "GetBucketPolicy", kAuth, &I::GetAbsentBucketConfig},
    {M::kGet, kBkt, "cors", nullptr, nullptr, "GetBucketCors", kAuth, &I::GetAbsentBucketConfig},
    {M::kGet, kBkt, "lifecycle", nullptr, nullptr, "GetBucketLifecycle", kAuth, &I::GetAbsentBucketConfig},
    {M::kGet, kBkt, "tagging", nullptr, nullptr, "GetBucketTagging", kAuth, &I::GetAbsentBucketConfig},
    {M::kGet, kBkt, "encryption", nullptr, nullptr, "GetBucketEncryption", kAuth, &I::GetBucketEncryption},
    {M::kGet, kBkt, "object-lock", nullptr, nullptr, "GetObjectLockConfiguration", kAuth, &I::GetAbsentBucketConfig},
    {M::kGet, kBkt, "website", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "logging", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "notification", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "replication", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "requestPayment", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "accelerate", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "ownershipControls", nullptr, nullptr, "GetBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kGet, kBkt, "list-type", "2", nullptr, "ListObjectsV2", kAuth, &I::ListObjectsV2},
    {M::kGet, kBkt, nullptr, nullptr, nullptr, "ListObjects", kAuth, &I::ListObjectsV1},
    {M::kHead, kBkt, nullptr, nullptr, nullptr, "HeadBucket", kAuth, &I::HeadBucket},
    {M::kPut, kBkt, "acl", nullptr, nullptr, "PutBucketAcl", kAuth, &I::PutBucketAcl},
    {M::kPut, kBkt, "encryption", nullptr, nullptr, "PutBucketEncryption", kAuth, &I::PutBucketEncryption},
    {M::kPut, kBkt, "versioning", nullptr, nullptr, "PutBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kPut, kBkt, "tagging", nullptr, nullptr, "PutBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kPut, kBkt, "policy", nullptr, nullptr, "PutBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kPut, kBkt, "cors", nullptr, nullptr, "PutBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    {M::kPut, kBkt, "lifecycle", nullptr, nullptr, "PutBucketConfig", kAuth, &I::BucketConfigNotImplemented},
    // Anonymous callers are turned away by the handler, before any lookup.
    {M::kPut, kBkt, nullptr, nullptr, nullptr, "CreateBucket", kName, &I::CreateBucket},
    {M::kDelete, kBkt, "policy", nullptr, nullptr, "DeleteBucketConfig", kAuth, &I::DeleteBucketConfig},
    {M::kDelete, kBkt, "cors", nullptr, nullptr, "DeleteBucketConfig", kAuth, &I::DeleteBucketConfig},
    {M::kDelete, kBkt, "lifecycle", nullptr, nullptr, "DeleteBucketConfig", kAuth, &I::DeleteBucketConfig},
    {M::kDelete, kBkt, "tagging", nullptr, nullptr, "DeleteBucketConfig", kAuth, &I::DeleteBucketConfig},
    {M::kDelete, kBkt, "encryption", nullptr, nullptr, "DeleteBucketEncryption", kAuth, &I::DeleteBucketEncryption},
    {M::kDelete, kBkt, nullptr, nullptr, nullptr, "DeleteBucket", kAuth, &I::DeleteBucket},
    {M::kPost, kBkt, "delete", nullptr, nullptr, "DeleteObjects", kAuth, &I::DeleteObjects},
    {M::kAny, kBkt, nullptr, nullptr, nullptr, "Bucket", kAuth, &I::MethodNotAllowed},

    // Objects.
    {M::kGet, kObj, "uploadId", nullptr, nullptr, "ListParts", kAuth, &I::ListParts},
    {M::kGet, kObj, "tagging", nullptr, nullptr, "GetObjectTagging", kAuth, &I::Tagging},
    {M::kGet, kObj, "acl", nullptr, nullptr, "GetObjectAcl", kAuth, &I::GetObjectAcl},
    {M::kGet, kObj, nullptr, nullptr, nullptr, "GetObject", kAuth, &I::GetObject},
    {M::kHead, kObj, "uploadId", nullptr, nullptr, "ListParts", kAuth, &I::ListParts},
    {M::kHead, kObj, "tagging", nullptr, nullptr, "GetObjectTagging", kAuth, &I::Tagging},
    {M::kHead, kObj, "acl", nullptr, nullptr, "GetObjectAcl", kAuth, &I::GetObjectAcl},
    {M::kHead, kObj, nullptr, nullptr, nullptr, "HeadObject", kAuth, &I::HeadObject},
    {M::kPut, kObj, "tagging", nullptr, nullptr, "PutObjectTagging", kAuth, &I::Tagging},
    {M::kPut, kObj, "acl", nullptr, nullptr, "PutObjectAcl", kAuth, &I::PutObjectAcl},
    {M::kPut, kObj, "uploadId", nullptr, kCopySource, "UploadPartCopy", kAuth, &I::UploadPart},
    {M::kPut, kObj, "uploadId", nullptr, nullptr, "UploadPart", kAuth, &I::UploadPart},
    {M::kPut, kObj, "partNumber", nullptr, kCopySource, "UploadPartCopy", kAuth, &I::UploadPart},
    {M::kPut, kObj, "partNumber", nullptr, nullptr, "UploadPart", kAuth, &I::UploadPart},
    {M::kPut, kObj, "renameObject", nullptr, nullptr, "RenameObject", kAuth, &I::RenameObject},
    {M::kPut, kObj, nullptr, nullptr, kCopySource, "CopyObject", kAuth, &I::CopyObject},
    {M::kPut, kObj, nullptr, nullptr, nullptr, "PutObject", kAuth, &I::PutObject},
    {M::kDelete, kObj, "uploadId", nullptr, nullptr, "AbortMultipartUpload", kAuth, &I::AbortUpload},
    {M::kDelete, kObj, "tagging", nullptr, nullptr, "DeleteObjectTagging", kAuth, &I::Tagging},
    {M::kDelete, kObj, nullptr, nullptr, nullptr, "DeleteObject", kAuth, &I::DeleteObject},
    {M::kPost, kObj, "uploads", nullptr, nullptr, "CreateMultipartUpload", kAuth, &I::CreateUpload},
    {M::kPost, kObj, "uploadId", nullptr, nullptr, "CompleteMultipartUpload", kAuth, &I::CompleteUpload},
    {M::kAny, kObj, nullptr, nullptr, nullptr, "Object", kAuth, &I::MethodNotAllowed},
};
// clang-format on

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
  for (const RouteRow& row : kRoutes) {
    if (Matches(row, method, resource, query, req)) return &row;
  }
  return nullptr;  // unreachable: every resource ends in a kAny row
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
  STRATA_RETURN_IF_ERROR(Authenticate(c));

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
  return (this->*row->handler)(c);
}

Status Frontend::Impl::MethodNotAllowed(Ctx& c) {
  (void)c;
  return MakeError("MethodNotAllowed",
                   "The specified method is not allowed against this resource.");
}

}  // namespace strata::s3
