// Bucket operations: ListBuckets, Create/Delete/HeadBucket, location,
// versioning (never enabled), the configurations Strata
// does not hold, ListObjects v1 and v2, and multi-object delete.
#include <algorithm>
#include <string>

#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;

Status Frontend::Impl::ListBuckets(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(auto buckets, engine->ListBuckets());
  XmlWriter x("ListAllMyBucketsResult");
  x.Open("Owner").Elem("ID", c.user->access_key).Elem("DisplayName", c.user->name).Close("Owner");
  x.Open("Buckets");
  for (const auto& b : buckets) {
    if (!c.user->admin && b.owner != c.user->access_key) continue;
    x.Open("Bucket")
        .Elem("Name", b.name)
        .Elem("CreationDate", FormatIso8601(b.created_ns))
        .Close("Bucket");
  }
  x.Close("Buckets");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::CreateBucket(Ctx& c) {
  if (c.user == nullptr) return MakeError("AccessDenied", "Anonymous users cannot create buckets");
  if (!IsValidBucketName(c.bucket))
    return MakeError("InvalidBucketName",
                     "The specified bucket is not valid: names are 3-63 characters of lower-case "
                     "letters, digits, '.' and '-', starting and ending with a letter or digit");
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(std::string location, ParseLocationConstraint(body));
  (void)location;  // single-region server: any constraint is accepted
  STRATA_ASSIGN_OR_RETURN(std::optional<Acl> acl, NewBucketAcl(c));
  if (auto existing = engine->GetBucket(c.bucket); existing.ok()) {
    if (existing->owner == c.user->access_key)
      return MakeError(
          "BucketAlreadyOwnedByYou",
          "Your previous request to create the named bucket succeeded and you already own it.");
    return MakeError("BucketAlreadyExists",
                     "The requested bucket name is not available. Please select a different name "
                     "and try again.");
  }
  Status st = engine->CreateBucket(c.bucket, c.user->access_key);
  if (st.code() == StatusCode::kAlreadyExists)
    return MakeError(
        "BucketAlreadyOwnedByYou",
        "Your previous request to create the named bucket succeeded and you already own it.");
  STRATA_RETURN_IF_ERROR(st);
  STRATA_RETURN_IF_ERROR(StoreNewBucketAcl(c, acl));
  c.w.AddHeader("Location", "/" + c.bucket);
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::DeleteBucket(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  Status st = engine->DeleteBucket(c.bucket);
  if (st.code() == StatusCode::kPreconditionFailed)
    return MakeError("BucketNotEmpty", "The bucket you tried to delete is not empty");
  STRATA_RETURN_IF_ERROR(st);
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::HeadBucket(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  c.w.AddHeader("x-amz-bucket-region", opts.region);
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::GetBucketLocation(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  std::string x =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" +
      (opts.region == "us-east-1" ? std::string() : XmlEscape(opts.region)) +
      "</LocationConstraint>";
  SendXml(c, 200, x);
  return Status::Ok();
}

// Versioning is never enabled: an empty configuration.
Status Frontend::Impl::GetBucketVersioning(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  SendXml(c, 200, XmlWriter("VersioningConfiguration").Finish());
  return Status::Ok();
}

namespace {

// Configurations a bucket never has here, by operation: S3's "does not exist" answer.
struct Absent {
  const char* op;
  const char* code;
  const char* msg;
};
const Absent kAbsent[] = {
    {"GetBucketPolicy", "NoSuchBucketPolicy", "The bucket policy does not exist"},
    {"GetBucketCors", "NoSuchCORSConfiguration", "The CORS configuration does not exist"},
    {"GetBucketLifecycle", "NoSuchLifecycleConfiguration",
     "The lifecycle configuration does not exist"},
    {"GetBucketTagging", "NoSuchTagSet", "The TagSet does not exist"},
    {"GetBucketEncryption", "ServerSideEncryptionConfigurationNotFoundError",
     "The server side encryption configuration was not found"},
    {"GetObjectLockConfiguration", "ObjectLockConfigurationNotFoundError",
     "Object Lock configuration does not exist for this bucket"},
};

}  // namespace

Status Frontend::Impl::GetAbsentBucketConfig(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  for (const Absent& a : kAbsent) {
    if (c.op == a.op) return MakeError(a.code, a.msg);
  }
  return Status::Internal("no absent-configuration answer for " + c.op);
}

Status Frontend::Impl::BucketConfigNotImplemented(Ctx& c) {
  (void)c;
  return MakeError("NotImplemented", "This bucket sub-resource is not supported by Strata");
}

// Deleting a configuration that never exists succeeds, as in S3.
Status Frontend::Impl::DeleteBucketConfig(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::ListObjectsV1(Ctx& c) { return ListObjects(c, false); }

Status Frontend::Impl::ListObjectsV2(Ctx& c) { return ListObjects(c, true); }

Status Frontend::Impl::ListObjects(Ctx& c, bool v2) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  objstore::ListOptions lo;
  lo.prefix = c.Q("prefix");
  lo.delimiter = c.Q("delimiter");
  std::string max_keys_s = c.Q("max-keys");
  lo.max_keys = 1000;
  if (!max_keys_s.empty()) {
    auto mk = ParseInt64(max_keys_s);
    if (!mk || *mk < 0)
      return MakeError("InvalidArgument", "max-keys must be a non-negative integer");
    lo.max_keys = static_cast<int>(std::min<int64_t>(*mk, 1000));
  }
  std::string encoding = c.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return MakeError("InvalidArgument", "Invalid Encoding Method specified in Request");
  bool url = encoding == "url";
  auto enc = [url](std::string_view s) { return url ? UriEncode(s, true) : std::string(s); };
  std::string token, start_after, marker;
  if (v2) {
    token = c.Q("continuation-token");
    start_after = c.Q("start-after");
    if (c.Has("continuation-token")) {
      auto t = Base64Decode(token);
      if (!t || token.empty())
        return MakeError("InvalidArgument", "The continuation token provided is incorrect");
      lo.start_after = *t;
    } else {
      lo.start_after = start_after;
    }
  } else {
    marker = c.Q("marker");
    lo.start_after = marker;
  }
  STRATA_ASSIGN_OR_RETURN(objstore::ListResult r, engine->ListObjects(c.bucket, lo));
  bool fetch_owner = !v2 || c.Q("fetch-owner") == "true";
  XmlWriter x("ListBucketResult");
  x.Elem("Name", c.bucket).Elem("Prefix", enc(lo.prefix));
  if (v2) {
    if (c.Has("continuation-token")) x.Elem("ContinuationToken", token);
    if (!start_after.empty()) x.Elem("StartAfter", enc(start_after));
    x.Elem("KeyCount", static_cast<uint64_t>(r.objects.size() + r.common_prefixes.size()));
    if (r.truncated) x.Elem("NextContinuationToken", Base64Encode(r.next_marker));
  } else {
    x.Elem("Marker", enc(marker));
    if (r.truncated && !lo.delimiter.empty()) x.Elem("NextMarker", enc(r.next_marker));
  }
  x.Elem("MaxKeys", static_cast<uint64_t>(lo.max_keys));
  if (!lo.delimiter.empty()) x.Elem("Delimiter", enc(lo.delimiter));
  if (url) x.Elem("EncodingType", "url");
  x.Elem("IsTruncated", r.truncated);
  for (const ObjectMeta& o : r.objects) {
    x.Open("Contents")
        .Elem("Key", enc(o.key))
        .Elem("LastModified", FormatIso8601(o.mtime_ns))
        .Elem("ETag", QuoteETag(o.etag))
        .Elem("Size", o.size);
    if (fetch_owner)
      x.Open("Owner").Elem("ID", o.owner).Elem("DisplayName", o.owner).Close("Owner");
    x.Elem("StorageClass", "STANDARD").Close("Contents");
  }
  for (const std::string& cp : r.common_prefixes)
    x.Open("CommonPrefixes").Elem("Prefix", enc(cp)).Close("CommonPrefixes");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::DeleteObjects(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(DeleteRequest d, ParseDelete(body));
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo bucket, engine->GetBucket(c.bucket));
  XmlWriter x("DeleteResult");
  for (const std::string& k : d.keys) {
    // Each key is authorized as its own DeleteObject, as S3 does.
    Status st = k.empty() || k.size() > kMaxKeyBytes
                    ? MakeError("InvalidArgument", "invalid key")
                    : AuthorizeAction(c, bucket, "s3:DeleteObject", k, true);
    if (st.ok()) st = engine->DeleteObject(c.bucket, k);
    if (st.ok()) {
      if (!d.quiet) x.Open("Deleted").Elem("Key", k).Close("Deleted");
    } else {
      S3Error e = ToS3Error(st);
      x.Open("Error").Elem("Key", k).Elem("Code", e.code).Elem("Message", e.message).Close("Error");
    }
  }
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
