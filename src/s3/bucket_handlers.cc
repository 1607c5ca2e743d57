// Bucket operations: ListBuckets, Create/Delete/HeadBucket (and the Object
// Lock flag of CreateBucket), location, bucket tagging, ListObjects v1 and
// v2, and multi-object delete.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;

// max-buckets (1..10000; all when absent), continuation-token (opaque: the
// last name of the previous page, base64), prefix and bucket-region (one
// region here), as the current ListBuckets has them.
Status Frontend::Impl::ListBuckets(Ctx& c) {
  size_t max_buckets = SIZE_MAX;
  if (c.Has("max-buckets")) {
    auto mb = ParseInt64(c.Q("max-buckets"));
    if (!mb || *mb < 1 || *mb > 10000)
      return MakeError("InvalidArgument", "max-buckets must be an integer from 1 to 10000");
    max_buckets = static_cast<size_t>(*mb);
  }
  std::string after;
  if (std::string token = c.Q("continuation-token"); !token.empty()) {
    auto t = Base64Decode(token);
    if (!t || t->empty())
      return MakeError("InvalidArgument", "The continuation token provided is incorrect");
    after = *t;
  }
  const std::string prefix = c.Q("prefix");
  const bool region_matches = !c.Has("bucket-region") || c.Q("bucket-region") == opts.region;
  STRATA_ASSIGN_OR_RETURN(auto buckets, engine->ListBuckets());
  std::sort(buckets.begin(), buckets.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  XmlWriter x("ListAllMyBucketsResult");
  x.Open("Owner").Elem("ID", c.user->access_key).Elem("DisplayName", c.user->name).Close("Owner");
  x.Open("Buckets");
  size_t n = 0;
  std::string last, next;
  for (const auto& b : buckets) {
    if (!region_matches) break;
    if (!c.user->admin && b.owner != c.user->access_key) continue;
    if (IsDirectoryBucketName(b.name)) continue;  // S3 Express: ListDirectoryBuckets lists them
    if (!StartsWith(b.name, prefix) || (!after.empty() && b.name <= after)) continue;
    if (n == max_buckets) {
      next = Base64Encode(last);
      break;
    }
    ++n;
    last = b.name;
    x.Open("Bucket")
        .Elem("Name", b.name)
        .Elem("CreationDate", FormatIso8601(b.created_ns))
        .Elem("BucketRegion", opts.region)
        .Close("Bucket");
  }
  x.Close("Buckets");
  if (!next.empty()) x.Elem("ContinuationToken", next);
  if (c.Has("prefix")) x.Elem("Prefix", prefix);
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
  STRATA_ASSIGN_OR_RETURN(auto directory, DirectoryBucketDocument(c, body));  // S3 Express
  STRATA_ASSIGN_OR_RETURN(std::optional<Acl> acl, NewBucketAcl(c));
  const bool object_lock =
      IEquals(Trim(c.H("x-amz-bucket-object-lock-enabled").value_or("")), "true");
  if (object_lock && directory)
    return MakeError("InvalidRequest", "Directory buckets do not support Object Lock");
  if (auto existing = engine->GetBucket(c.bucket); existing.ok()) {
    if (existing->owner == c.user->access_key) {
      // AWS's legacy us-east-1 behaviour: re-creating your own bucket there
      // succeeds and changes nothing; elsewhere it is 409.
      if (opts.region == "us-east-1") {
        c.w.AddHeader("Location", "/" + c.bucket);
        c.w.SetStatus(200);
        return c.w.Send("");
      }
      return MakeError(
          "BucketAlreadyOwnedByYou",
          "Your previous request to create the named bucket succeeded and you already own it.");
    }
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
  if (directory)
    STRATA_RETURN_IF_ERROR(
        engine->SetBucketConfig(c.bucket, kDirectoryBucketConfigName, *directory));
  STRATA_RETURN_IF_ERROR(StoreNewBucketAcl(c, acl));
  if (object_lock) {
    // Object Lock needs versioning, and keeps it Enabled (version_handlers.cc).
    STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kVersioningConfig, "Enabled"));
    STRATA_RETURN_IF_ERROR(
        engine->SetBucketConfig(c.bucket, kObjectLockConfig, EncodeObjectLock(ObjectLockConfig{})));
  }
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

namespace {

constexpr char kBucketTaggingConfig[] = "tagging";

// Stored as "key=value&..." with both sides URI-encoded (keys are unique).
std::string EncodeBucketTags(const std::map<std::string, std::string>& tags) {
  std::string out;
  for (const auto& [k, v] : tags) {
    if (!out.empty()) out += '&';
    out += UriEncode(k, true) + "=" + UriEncode(v, true);
  }
  return out;
}

std::map<std::string, std::string> DecodeBucketTags(std::string_view stored) {
  std::map<std::string, std::string> tags;
  for (std::string_view kv : Split(stored, '&')) {
    const size_t eq = kv.find('=');
    if (kv.empty() || eq == std::string_view::npos) continue;
    auto k = UriDecode(kv.substr(0, eq), false);
    auto v = UriDecode(kv.substr(eq + 1), false);
    if (k && v) tags[*k] = *v;
  }
  return tags;
}

}  // namespace

Status Frontend::Impl::PutBucketTagging(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(auto tags, ParseTagging(body, 50));
  for (const auto& kv : tags)
    if (StartsWith(kv.first, "aws:"))
      return MakeError("InvalidTag", "System tags cannot be added/updated by requester");
  if (!HasIntegrityHeader(c))
    return MakeError("InvalidRequest", "Missing required header for this request: Content-MD5");
  // An empty TagSet leaves the bucket without tags, as DeleteBucketTagging.
  std::optional<std::string> stored;
  if (!tags.empty()) stored = EncodeBucketTags(tags);
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kBucketTaggingConfig, stored));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::GetBucketTagging(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* b, RequestBucket(c));
  const std::string* stored = b->Config(kBucketTaggingConfig);
  if (stored == nullptr) return MakeError("NoSuchTagSet", "The TagSet does not exist");
  XmlWriter x("Tagging");
  x.Open("TagSet");
  for (const auto& [k, v] : DecodeBucketTags(*stored))
    x.Open("Tag").Elem("Key", k).Elem("Value", v).Close("Tag");
  x.Close("TagSet");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::DeleteBucketTagging(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->SetBucketConfig(c.bucket, kBucketTaggingConfig, std::nullopt));
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
  if (!v2 && c.Has("list-type") && c.Q("list-type") != "1")
    return MakeError("InvalidArgument", "Invalid List Type specified in Request: use 1 or 2");
  std::string encoding = c.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return MakeError("InvalidArgument", "Invalid Encoding Method specified in Request");
  bool url = encoding == "url";
  auto enc = [url](std::string_view s) { return url ? UriEncode(s, true) : std::string(s); };
  std::string token, start_after, marker;
  if (v2) {
    token = c.Q("continuation-token");
    start_after = c.Q("start-after");
    // An empty token is no token (what SDKs send on a first page).
    if (!token.empty()) {
      auto t = Base64Decode(token);
      if (!t || t->empty())
        return MakeError("InvalidArgument", "The continuation token provided is incorrect");
      lo.start_after = *t;
    } else {
      lo.start_after = start_after;
    }
  } else {
    marker = c.Q("marker");
    lo.start_after = marker;
  }
  // max-keys=0 asks for no keys: an empty, complete answer (S3: not truncated).
  objstore::ListResult r;
  if (lo.max_keys > 0) {
    STRATA_ASSIGN_OR_RETURN(r, engine->ListObjects(c.bucket, lo));
  }
  bool fetch_owner = !v2 || c.Q("fetch-owner") == "true";
  XmlWriter x("ListBucketResult");
  // v1 answers Prefix as sent even with encoding-type=url (botocore decodes
  // only Delimiter, Marker, NextMarker, keys and common prefixes there).
  x.Elem("Name", c.bucket).Elem("Prefix", v2 ? enc(lo.prefix) : lo.prefix);
  if (v2) {
    if (!token.empty()) x.Elem("ContinuationToken", token);
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
    x.Elem("StorageClass", ReportedStorageClass(c.bucket, o.storage_class)).Close("Contents");
  }
  for (const std::string& cp : r.common_prefixes)
    x.Open("CommonPrefixes").Elem("Prefix", enc(cp)).Close("CommonPrefixes");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

// Per key, as S3: a VersionId deletes that version, none deletes the current
// object (a delete marker in a versioned bucket), and the conditions of a conditional delete (ETag,
// LastModifiedTime, Size) must hold, else PreconditionFailed for that key.
Status Frontend::Impl::DeleteObjects(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(DeleteRequest d, ParseDelete(body));
  STRATA_ASSIGN_OR_RETURN(const objstore::BucketInfo* bucket, RequestBucket(c));
  XmlWriter x("DeleteResult");
  for (const DeleteRequest::Object& o : d.objects) {
    const std::string& k = o.key;
    Status st = Status::Ok();
    if (k.empty() || k.size() > kMaxKeyBytes) {
      st = MakeError("InvalidArgument", "invalid key");
    } else if (st = AuthorizeAction(c, *bucket, "s3:DeleteObject", k, true); !st.ok()) {
      // Each key is authorized as its own DeleteObject, as S3 does (auth.cc).
    } else if (o.etag || o.last_modified_time || o.size) {
      st = CheckDeleteConditions(c.bucket, o);
    }
    objstore::DeleteResult dr;
    if (st.ok()) {
      auto r = o.version_id.empty() ? engine->DeleteCurrent(c.bucket, k)
                                    : DeleteVersionChecked(c, k, o.version_id);
      if (r.ok()) dr = *r;
      st = r.status();
      if (st.code() == StatusCode::kInvalidArgument)
        st = MakeError("InvalidArgument", "Invalid version id specified");
    }
    if (st.ok()) {
      if (!d.quiet) {
        x.Open("Deleted").Elem("Key", k);
        if (!o.version_id.empty()) x.Elem("VersionId", o.version_id);
        if (dr.delete_marker) {
          x.Elem("DeleteMarker", true);
          if (o.version_id.empty())
            x.Elem("DeleteMarkerVersionId", dr.version_id.empty() ? "null" : dr.version_id);
        }
        x.Close("Deleted");
      }
    } else {
      S3Error e = ToS3Error(st);
      x.Open("Error").Elem("Key", k);
      if (!o.version_id.empty()) x.Elem("VersionId", o.version_id);
      x.Elem("Code", e.code).Elem("Message", e.message).Close("Error");
    }
  }
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::CheckDeleteConditions(const std::string& bucket,
                                             const DeleteRequest::Object& o) {
  auto failed = [] {
    return MakeError("PreconditionFailed",
                     "At least one of the pre-conditions you specified did not hold");
  };
  auto m = engine->HeadObject(bucket, o.key);
  if (!m.ok()) {
    if (m.error().IsNotFound()) return MakeError("NoSuchKey", "The specified key does not exist.");
    return m.error();
  }
  if (o.etag && *o.etag != "*" && *o.etag != m->etag) return failed();
  if (o.size) {
    auto n = ParseUint64(*o.size);
    if (!n) return MakeError("InvalidArgument", "Size must be a non-negative integer");
    if (*n != m->size) return failed();
  }
  if (o.last_modified_time) {
    auto t = ParseIso8601(*o.last_modified_time);
    if (!t) return MakeError("InvalidArgument", "LastModifiedTime must be an ISO 8601 time");
    if (*t / 1'000'000'000 != m->mtime_ns / 1'000'000'000) return failed();
  }
  return Status::Ok();
}

}  // namespace strata::s3
