// Versioning: Get/PutBucketVersioning, ListObjectVersions, and the helpers the
// object handlers use for versionId and the x-amz-version-id /
// x-amz-delete-marker headers. The engine keeps the versions (local_engine.h,
// "Versioning"); the bucket's state is its "versioning" config.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;

bool Frontend::Impl::Versioned(Ctx& c) {
  auto b = RequestBucket(c);
  return b.ok() && (*b)->Config(kVersioningConfig) != nullptr;
}

void Frontend::Impl::AddVersionId(Ctx& c, const ObjectMeta& m) {
  if (m.version_order == 0 && m.version_id.empty() && !Versioned(c)) return;
  c.w.AddHeader("x-amz-version-id", m.version_id.empty() ? "null" : m.version_id);
}

Status Frontend::Impl::NoSuchVersionOrMarker(Ctx& c, const Status& st, std::string_view version_id,
                                             bool head) {
  if (!st.IsNotFound()) return st;
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  auto v = engine->HeadVersion(c.bucket, c.key, version_id);
  if (v.ok() && v->delete_marker) {
    c.w.AddHeader("x-amz-delete-marker", "true");
    c.w.AddHeader("x-amz-version-id", v->version_id.empty() ? "null" : v->version_id);
    if (!version_id.empty()) {
      // S3: a delete marker has no bytes to GET; HEAD answers 405 too.
      c.w.AddHeader("Last-Modified", FormatHttpDate(v->mtime_ns));
      (void)head;
      return MakeError("MethodNotAllowed",
                       "The specified method is not allowed against this resource.");
    }
    return MakeError("NoSuchKey", "The specified key does not exist.");
  }
  if (!version_id.empty())
    return MakeError("NoSuchVersion", "The specified version does not exist.");
  return st;
}

Status Frontend::Impl::GetBucketVersioning(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
  XmlWriter x("VersioningConfiguration");
  if (const std::string* s = b->Config(kVersioningConfig)) x.Elem("Status", *s);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::PutBucketVersioning(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(VersioningRequest v, ParseVersioning(body));
  if (v.status != "Enabled" && v.status != "Suspended")
    return MalformedXml("Status must be Enabled or Suspended");
  if (v.mfa_delete == "Enabled")
    return MakeError("NotImplemented",
                     "Strata does not implement MFA delete; versioning was not changed.");
  if (!v.mfa_delete.empty() && v.mfa_delete != "Disabled")
    return MakeError("MalformedXML", "MfaDelete must be Enabled or Disabled");
  if (IsDirectoryBucketName(c.bucket))
    return MakeError("NotImplemented", "Directory buckets do not support versioning.");
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
  if (b.Config(kObjectLockConfig) != nullptr && v.status != "Enabled")
    return MakeError("InvalidBucketState",
                     "An Object Lock configuration is present on this bucket, so the versioning "
                     "state cannot be changed.");
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kVersioningConfig, v.status));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::ListObjectVersions(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  objstore::VersionListOptions lo;
  lo.prefix = c.Q("prefix");
  lo.delimiter = c.Q("delimiter");
  lo.key_marker = c.Q("key-marker");
  lo.version_id_marker = c.Q("version-id-marker");
  if (!lo.version_id_marker.empty() && lo.key_marker.empty())
    return MakeError("InvalidArgument",
                     "A version-id marker cannot be specified without a key marker.");
  std::string max_keys_s = c.Q("max-keys");
  if (!max_keys_s.empty()) {
    auto mk = ParseInt64(max_keys_s);
    if (!mk || *mk < 0)
      return MakeError("InvalidArgument", "max-keys must be a non-negative integer");
    lo.max_keys = static_cast<int>(std::min<int64_t>(*mk, 1000));
  }
  std::string encoding = c.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return MakeError("InvalidArgument", "Invalid Encoding Method specified in Request");
  const bool url = encoding == "url";
  auto enc = [url](std::string_view s) { return url ? UriEncode(s, true) : std::string(s); };
  objstore::VersionListResult r;
  if (lo.max_keys > 0) {
    auto listed = engine->ListObjectVersions(c.bucket, lo);
    if (!listed.ok() && listed.error().code() == StatusCode::kInvalidArgument)
      return MakeError("InvalidArgument", "Invalid version id specified");
    if (!listed.ok()) return listed.error();
    r = std::move(*listed);
  }
  XmlWriter x("ListVersionsResult");
  x.Elem("Name", c.bucket).Elem("Prefix", enc(lo.prefix));
  x.Elem("KeyMarker", enc(lo.key_marker)).Elem("VersionIdMarker", lo.version_id_marker);
  if (r.truncated) {
    x.Elem("NextKeyMarker", enc(r.next_key_marker));
    if (!r.next_version_id_marker.empty()) x.Elem("NextVersionIdMarker", r.next_version_id_marker);
  }
  x.Elem("MaxKeys", static_cast<uint64_t>(lo.max_keys));
  if (!lo.delimiter.empty()) x.Elem("Delimiter", enc(lo.delimiter));
  if (url) x.Elem("EncodingType", "url");
  x.Elem("IsTruncated", r.truncated);
  for (const ObjectMeta& o : r.versions) {
    const char* tag = o.delete_marker ? "DeleteMarker" : "Version";
    x.Open(tag)
        .Elem("Key", enc(o.key))
        .Elem("VersionId", o.version_id.empty() ? "null" : o.version_id)
        .Elem("IsLatest", o.is_latest)
        .Elem("LastModified", FormatIso8601(o.mtime_ns));
    if (!o.delete_marker) x.Elem("ETag", QuoteETag(o.etag)).Elem("Size", o.size);
    x.Open("Owner").Elem("ID", o.owner).Elem("DisplayName", DisplayName(c, o.owner)).Close("Owner");
    if (!o.delete_marker) x.Elem("StorageClass", ReportedStorageClass(c.bucket, o.storage_class));
    x.Close(tag);
  }
  for (const std::string& cp : r.common_prefixes)
    x.Open("CommonPrefixes").Elem("Prefix", enc(cp)).Close("CommonPrefixes");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
