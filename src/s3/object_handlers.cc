// Object operations: PutObject (and the append extension,
// x-amz-write-offset-bytes), CopyObject, RenameObject (extension), GetObject
// and HeadObject (conditional, ranged, by part, checksums), DeleteObject,
// tagging and ACLs.
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/public_access.h"
#include "s3/sse.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

// Streams engine chunks to the HTTP response.
class ResponseSink final : public objstore::ChunkSink {
 public:
  explicit ResponseSink(http::ResponseWriter& w) : w_(w) {}
  Status WriteMemory(const char* data, size_t n) override { return w_.Write(data, n); }
  Status WriteFile(int fd, uint64_t offset, uint64_t n) override {
    return w_.SendFile(fd, offset, n);
  }

 private:
  http::ResponseWriter& w_;
};

}  // namespace

Status Frontend::Impl::PutObject(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  STRATA_ASSIGN_OR_RETURN(o.expected_size, ExpectedSize(c, opts.max_put_size));
  BodySource body(c.req, c.auth, IsAwsChunked(c));
  const std::optional<std::string_view> off = c.H("x-amz-write-offset-bytes");
  // An append's checksum header covers the appended bytes only: it is checked,
  // and the engine combines the whole object's CRC.
  STRATA_RETURN_IF_ERROR(SetupChecksum(c, o, body, !off));
  STRATA_RETURN_IF_ERROR(SseForWrite(c, o));
  STRATA_RETURN_IF_ERROR(ObjectLockForWrite(c, o, true));
  Result<ObjectMeta> r = Status::Internal("unset");
  if (off) {
    auto v = ParseUint64(Trim(*off));
    if (!v)
      return MakeError("InvalidArgument",
                       "x-amz-write-offset-bytes must be a non-negative integer");
    r = engine->AppendObject(c.bucket, c.key, *v, body, std::move(o));
    if (!r.ok() && r.error().code() == StatusCode::kPreconditionFailed &&
        r.error().message().find("offset") != std::string::npos)
      return MakeError("InvalidWriteOffset", r.error().message());
  } else {
    r = engine->PutObject(c.bucket, c.key, body, std::move(o));
  }
  if (!r.ok()) return r.error();
  bytes_in->Inc(r->size);
  c.w.AddHeader("ETag", QuoteETag(r->etag));
  AddVersionId(c, *r);
  SseResponseHeaders(c, *r);
  if (r->checksum_algorithm != ChecksumAlgorithm::kNone && !r->checksum.empty()) {
    c.w.AddHeader(ChecksumHeaderName(r->checksum_algorithm), r->checksum);
    c.w.AddHeader("x-amz-checksum-type", "FULL_OBJECT");
  }
  if (c.H("x-amz-write-offset-bytes")) c.w.AddHeader("x-amz-object-size", std::to_string(r->size));
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::CopyObject(Ctx& c) {
  std::string sb, sk, sv;
  STRATA_RETURN_IF_ERROR(ParseCopySource(*c.H("x-amz-copy-source"), sb, sk, &sv));
  STRATA_RETURN_IF_ERROR(AuthorizeCopySource(c, sb, sk));  // auth.cc
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(ObjectMeta src_meta_v, HeadCopySource(sb, sk, sv));
  const ObjectMeta* src_meta = &src_meta_v;
  STRATA_RETURN_IF_ERROR(CheckCopySourceConditions(c, *src_meta));
  std::string directive(c.H("x-amz-metadata-directive").value_or("COPY"));
  if (directive != "COPY" && directive != "REPLACE")
    return MakeError("InvalidArgument", "Unknown metadata directive.");
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  std::optional<ObjectMeta> replace;
  if (directive == "REPLACE") {
    replace = o.meta;
  } else if (sb == c.bucket && sk == c.key && !HasSseHeaders(c) && !c.H("x-amz-storage-class")) {
    return MakeError(
        "InvalidRequest",
        "This copy request is illegal because it is trying to copy an object to itself "
        "without changing the object's metadata, storage class, website redirect "
        "location or encryption attributes.");
  }
  std::string tagging_directive(c.H("x-amz-tagging-directive").value_or("COPY"));
  if (replace && tagging_directive == "COPY") replace->tags = src_meta->tags;
  if (!replace && tagging_directive == "REPLACE") {
    replace = *src_meta;
    replace->tags = o.meta.tags;
  }
  if (auto ca = c.H("x-amz-checksum-algorithm"))
    o.checksum_algorithm = ParseChecksumAlgorithm(Trim(*ca));
  else
    o.checksum_algorithm = src_meta->checksum_algorithm;
  ChecksumAlgorithm alg = o.checksum_algorithm;
  // The copy's storage class and ACL are the request's (STANDARD and private
  // without the headers), whatever the metadata directive, as S3: a COPY
  // directive copies the metadata, never the source's ACL.
  std::optional<std::string> acl;
  if (auto it = o.meta.internal.find(kAclConfig); it != o.meta.internal.end()) acl = it->second;
  o.before_commit = [alg, sc = o.meta.storage_class, acl](const objstore::WriteDigest& d,
                                                          ObjectMeta& meta) {
    meta.storage_class = sc;
    if (acl) {
      meta.internal[kAclConfig] = *acl;
    } else {
      meta.internal.erase(kAclConfig);
    }
    if (alg != ChecksumAlgorithm::kNone && !d.checksum.empty()) {
      meta.checksum_algorithm = alg;
      meta.checksum = Base64Encode(d.checksum);
      meta.checksum_composite = false;
    } else {
      meta.checksum_algorithm = ChecksumAlgorithm::kNone;
      meta.checksum.clear();
    }
    meta.parts.clear();
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(SseForWrite(c, o));
  STRATA_RETURN_IF_ERROR(ObjectLockForWrite(c, o, false));
  o.source_key = SseReader(c, true);
  o.source_version_id = sv;
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m,
                          engine->CopyObject(sb, sk, c.bucket, c.key, replace, std::move(o)));
  SseResponseHeaders(c, m);
  AddVersionId(c, m);
  if (src_meta->version_order != 0 || !sv.empty())
    c.w.AddHeader("x-amz-copy-source-version-id",
                  src_meta->version_id.empty() ? "null" : src_meta->version_id);
  XmlWriter x("CopyObjectResult");
  x.Elem("LastModified", FormatIso8601(m.mtime_ns)).Elem("ETag", QuoteETag(m.etag));
  if (m.checksum_algorithm != ChecksumAlgorithm::kNone && !m.checksum.empty())
    x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(m.checksum_algorithm)), m.checksum);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::RenameObject(Ctx& c) {
  auto src = c.H("x-amz-rename-source");
  if (!src) return MakeError("InvalidRequest", "RenameObject needs the x-amz-rename-source header");
  std::string sb, sk;
  std::string with_bucket = std::string(*src);
  // Accept "/bucket/key", "bucket/key" and a bare key (same bucket).
  Status parsed = ParseCopySource(with_bucket, sb, sk);
  if (!parsed.ok() || sb != c.bucket) {
    auto decoded = UriDecode(*src, false);
    if (!decoded) return MakeError("InvalidArgument", "Invalid rename source encoding");
    sb = c.bucket;
    sk = StartsWith(*decoded, "/") ? decoded->substr(1) : *decoded;
    if (StartsWith(sk, c.bucket + "/")) sk = sk.substr(c.bucket.size() + 1);
  }
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  // Source conditions.
  STRATA_ASSIGN_OR_RETURN(ObjectMeta sm, engine->HeadObject(c.bucket, sk));
  if (auto im = c.H("x-amz-rename-source-if-match"); im && !ETagListMatches(*im, sm.etag))
    return MakeError("PreconditionFailed", "x-amz-rename-source-if-match did not hold");
  if (auto inm = c.H("x-amz-rename-source-if-none-match"); inm && ETagListMatches(*inm, sm.etag))
    return MakeError("PreconditionFailed", "x-amz-rename-source-if-none-match did not hold");
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine->RenameObject(c.bucket, sk, c.key, std::move(o)));
  (void)m;
  c.w.SetStatus(200);
  return c.w.Send("");
}

void Frontend::Impl::AddObjectHeaders(Ctx& c, const ObjectMeta& m, bool with_checksum) {
  http::ResponseWriter& w = c.w;
  w.AddHeader("ETag", QuoteETag(m.etag));
  w.AddHeader("Last-Modified", FormatHttpDate(m.mtime_ns));
  w.AddHeader("Accept-Ranges", "bytes");
  // S3 sends x-amz-storage-class for every class but STANDARD.
  if (IsDirectoryBucketName(c.bucket) || !m.storage_class.empty())
    w.AddHeader("x-amz-storage-class", ReportedStorageClass(c.bucket, m.storage_class));
  auto override_or = [&](const char* param, const char* header, std::string_view stored) {
    std::string v = c.Q(param);
    if (!v.empty())
      w.AddHeader(header, v);
    else if (!stored.empty())
      w.AddHeader(header, stored);
  };
  override_or("response-content-type", "Content-Type",
              m.content_type.empty() ? std::string_view("binary/octet-stream")
                                     : std::string_view(m.content_type));
  auto stored = [&](const char* name) -> std::string_view {
    auto it = m.headers.find(name);
    return it == m.headers.end() ? std::string_view() : std::string_view(it->second);
  };
  override_or("response-content-encoding", "Content-Encoding", stored("content-encoding"));
  override_or("response-content-disposition", "Content-Disposition", stored("content-disposition"));
  override_or("response-cache-control", "Cache-Control", stored("cache-control"));
  override_or("response-expires", "Expires", stored("expires"));
  override_or("response-content-language", "Content-Language", stored("content-language"));
  for (const auto& [k, v] : m.user_meta) w.AddHeader("x-amz-meta-" + k, v);
  if (!m.tags.empty()) w.AddHeader("x-amz-tagging-count", std::to_string(m.tags.size()));
  if (!m.parts.empty()) w.AddHeader("x-amz-mp-parts-count", std::to_string(m.parts.size()));
  AddExpirationHeader(c, m);
  AddObjectLockHeaders(c, m);
  if (with_checksum && m.checksum_algorithm != ChecksumAlgorithm::kNone && !m.checksum.empty()) {
    std::string v = m.checksum;
    if (m.checksum_composite) v += "-" + std::to_string(m.parts.size());
    w.AddHeader(ChecksumHeaderName(m.checksum_algorithm), v);
    w.AddHeader("x-amz-checksum-type", m.checksum_composite ? "COMPOSITE" : "FULL_OBJECT");
  }
}

Status Frontend::Impl::GetObject(Ctx& c) { return ServeObject(c, false); }

Status Frontend::Impl::HeadObject(Ctx& c) { return ServeObject(c, true); }

Result<std::unique_ptr<objstore::ObjectReader>> Frontend::Impl::OpenRequestedVersion(Ctx& c,
                                                                                     bool head) {
  const std::string version_id = c.Q("versionId");
  auto opened = engine->OpenVersion(c.bucket, c.key, version_id, SseReader(c, false));
  if (!opened.ok() && opened.error().IsNotFound()) {
    STRATA_RETURN_IF_ERROR(CheckBucket(c));
    if (!version_id.empty() || Versioned(c))
      return NoSuchVersionOrMarker(c, opened.error(), version_id, head);
  }
  return opened;
}

Status Frontend::Impl::ServeObject(Ctx& c, bool head) {
  // Open first so metadata and bytes come from the same version.
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<objstore::ObjectReader> reader,
                          OpenRequestedVersion(c, head));
  const ObjectMeta& m = reader->meta();
  AddVersionId(c, m);

  // Conditional reads (RFC 9110 13.2.2 order).
  int64_t mtime_s = m.mtime_ns / 1'000'000'000;
  auto im = c.H("if-match");
  auto inm = c.H("if-none-match");
  auto ims = c.H("if-modified-since");
  auto ius = c.H("if-unmodified-since");
  if (im && !ETagListMatches(*im, m.etag))
    return MakeError("PreconditionFailed",
                     "At least one of the pre-conditions you specified did not hold");
  if (!im && ius) {
    if (auto t = ParseHttpDate(*ius); t && mtime_s > *t / 1'000'000'000)
      return MakeError("PreconditionFailed",
                       "At least one of the pre-conditions you specified did not hold");
  }
  bool not_modified = false;
  if (inm) {
    not_modified = ETagListMatches(*inm, m.etag);
  } else if (ims) {
    if (auto t = ParseHttpDate(*ims); t && mtime_s <= *t / 1'000'000'000) not_modified = true;
  }
  if (not_modified) {
    c.w.SetStatus(304);
    c.w.AddHeader("ETag", QuoteETag(m.etag));
    c.w.AddHeader("Last-Modified", FormatHttpDate(m.mtime_ns));
    return c.w.Send("");
  }

  // Which bytes: a part, a range, or all.
  uint64_t start = 0, length = m.size;
  bool partial = false;
  std::string part_s = c.Q("partNumber");
  auto range_h = c.H("range");
  if (!part_s.empty()) {
    auto pn = ParseUint64(part_s);
    if (!pn || *pn < 1 || *pn > 10000)
      return MakeError("InvalidArgument",
                       "Part number must be an integer between 1 and 10000, inclusive");
    if (range_h)
      return MakeError("InvalidRequest",
                       "Cannot specify both Range header and partNumber query parameter");
    // Past the last part S3 answers 400 InvalidPart (a single-part object has part 1).
    const uint64_t count = m.parts.empty() ? 1 : m.parts.size();
    if (*pn > count)
      return MakeError("InvalidPart", fmt::format("part {} was requested, but the object has {} "
                                                  "part{}",
                                                  *pn, count, count == 1 ? "" : "s"));
    if (!m.parts.empty()) {
      for (size_t i = 0; i + 1 < *pn; ++i) start += m.parts[i].size;
      length = m.parts[*pn - 1].size;
    }
    partial = true;
  } else if (range_h) {
    auto r = ParseRange(*range_h, m.size);
    if (!r.ok()) {
      c.w.AddHeader("Content-Range", "bytes */" + std::to_string(m.size));
      return r.error();
    }
    if (*r) {
      start = (*r)->start;
      length = (*r)->length;
      partial = true;
    }
  }
  bool checksum_mode = IEquals(c.H("x-amz-checksum-mode").value_or(""), "ENABLED");
  AddObjectHeaders(c, m, checksum_mode && (!partial || (!part_s.empty() && m.parts.empty())));
  SseResponseHeaders(c, m);
  if (partial) {
    c.w.SetStatus(206);
    c.w.AddHeader("Content-Range",
                  length == 0 ? "bytes */0"
                              : fmt::format("bytes {}-{}/{}", start, start + length - 1, m.size));
  }
  STRATA_RETURN_IF_ERROR(c.w.BeginBody(length));
  if (head || length == 0) return Status::Ok();
  ResponseSink sink(c.w);
  return reader->Stream(start, length, sink);
}

Status Frontend::Impl::DeleteObject(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  const std::string version_id = c.Q("versionId");
  if (auto im = c.H("if-match")) {
    auto m = engine->HeadVersion(c.bucket, c.key, version_id);
    if (!m.ok() || m->delete_marker || !ETagListMatches(*im, m->etag))
      return MakeError("PreconditionFailed",
                       "At least one of the pre-conditions you specified did not hold");
  }
  auto r = version_id.empty() ? engine->DeleteCurrent(c.bucket, c.key)
                              : DeleteVersionChecked(c, c.key, version_id);
  if (!r.ok()) return r.error();
  if (r->delete_marker) c.w.AddHeader("x-amz-delete-marker", "true");
  if (r->delete_marker || !version_id.empty())
    c.w.AddHeader("x-amz-version-id", r->version_id.empty() ? "null" : r->version_id);
  c.w.SetStatus(204);
  return Status::Ok();
}

Result<ObjectMeta> Frontend::Impl::HeadCopySource(const std::string& sb, const std::string& sk,
                                                  const std::string& sv) {
  auto src = engine->HeadVersion(sb, sk, sv);
  if (src.ok() && src->delete_marker) {
    // S3: copying a delete marker is refused; the current one being a marker is NoSuchKey.
    if (!sv.empty())
      return MakeError("InvalidRequest",
                       "The source of a copy request may not specifically refer to a delete "
                       "marker by version id.");
    return MakeError("NoSuchKey", "The specified source key does not exist");
  }
  if (!src.ok() && src.error().IsNotFound()) {
    if (!engine->GetBucket(sb).ok())
      return MakeError("NoSuchBucket", "The specified source bucket does not exist");
    if (!sv.empty()) return MakeError("NoSuchVersion", "The specified version does not exist.");
    return MakeError("NoSuchKey", "The specified source key does not exist");
  }
  return src;
}

Result<ObjectMeta> Frontend::Impl::HeadForSubresource(Ctx& c) {
  const std::string version_id = c.Q("versionId");
  auto m = engine->HeadVersion(c.bucket, c.key, version_id);
  if (m.ok() && m->delete_marker) {
    c.w.AddHeader("x-amz-delete-marker", "true");
    c.w.AddHeader("x-amz-version-id", m->version_id.empty() ? "null" : m->version_id);
    if (!version_id.empty())
      return MakeError("MethodNotAllowed",
                       "The specified method is not allowed against this resource.");
    return MakeError("NoSuchKey", "The specified key does not exist.");
  }
  if (!m.ok() && m.error().IsNotFound() && !version_id.empty()) {
    STRATA_RETURN_IF_ERROR(CheckBucket(c));
    return MakeError("NoSuchVersion", "The specified version does not exist.");
  }
  if (m.ok() && !version_id.empty()) AddVersionId(c, *m);
  return m;
}

Status Frontend::Impl::GetObjectTagging(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(ObjectMeta meta, HeadForSubresource(c));
  if (c.Q("versionId").empty()) AddVersionId(c, meta);
  XmlWriter x("Tagging");
  x.Open("TagSet");
  for (const auto& [k, v] : meta.tags) x.Open("Tag").Elem("Key", k).Elem("Value", v).Close("Tag");
  x.Close("TagSet");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::PutObjectTagging(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(auto tags, ParseTagging(body));
  return SetTagsOfVersion(c, std::move(tags), 200);
}

Status Frontend::Impl::DeleteObjectTagging(Ctx& c) { return SetTagsOfVersion(c, {}, 204); }

Status Frontend::Impl::SetTagsOfVersion(Ctx& c, std::map<std::string, std::string> tags,
                                        int status) {
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, HeadForSubresource(c));
  STRATA_RETURN_IF_ERROR(
      engine->UpdateVersionMeta(c.bucket, c.key, c.Q("versionId"), [&](ObjectMeta& meta) {
        meta.tags = std::move(tags);
        return Status::Ok();
      }));
  if (c.Q("versionId").empty()) AddVersionId(c, m);
  c.w.SetStatus(status);
  return Status::Ok();
}

}  // namespace strata::s3
