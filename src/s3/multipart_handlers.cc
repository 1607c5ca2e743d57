// Multipart uploads: Create, UploadPart and UploadPartCopy, Complete (with
// the FULL_OBJECT CRC combined from the part CRCs), Abort, ListParts and
// ListMultipartUploads.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

// A source reading a range of a stored object (UploadPartCopy, CopyObject).
class ObjectRangeSource final : public objstore::ByteSource {
 public:
  ObjectRangeSource(objstore::ObjectReader* reader, uint64_t offset, uint64_t length)
      : reader_(reader), pos_(offset), end_(offset + length) {}
  Result<size_t> Read(char* buf, size_t n) override {
    if (pos_ >= end_) return size_t{0};
    uint64_t want = std::min<uint64_t>(n, end_ - pos_);
    STRATA_ASSIGN_OR_RETURN(std::string data, reader_->ReadRange(pos_, want));
    if (data.empty()) return Status::Corruption("object shorter than its metadata says");
    std::memcpy(buf, data.data(), data.size());
    pos_ += data.size();
    return data.size();
  }

 private:
  objstore::ObjectReader* reader_;
  uint64_t pos_;
  uint64_t end_;
};

}  // namespace

Status Frontend::Impl::CreateUpload(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  if (auto ca = c.H("x-amz-checksum-algorithm")) {
    o.checksum_algorithm = ParseChecksumAlgorithm(Trim(*ca));
    if (o.checksum_algorithm == ChecksumAlgorithm::kNone)
      return MakeError("InvalidRequest",
                       "unknown x-amz-checksum-algorithm \"" + std::string(*ca) + "\"");
  }
  // FULL_OBJECT (CRC only) is stored in meta so Complete can combine part CRCs.
  if (auto ct = c.H("x-amz-checksum-type"); ct && IEquals(Trim(*ct), "FULL_OBJECT"))
    o.meta.checksum_composite = false;
  else
    o.meta.checksum_composite = o.checksum_algorithm != ChecksumAlgorithm::kNone;
  ChecksumAlgorithm alg = o.checksum_algorithm;
  bool composite = o.meta.checksum_composite;
  STRATA_RETURN_IF_ERROR(SseForWrite(c, o));
  // The upload's metadata carries the lock (and the default retention, counted
  // from now) to the completed object.
  STRATA_RETURN_IF_ERROR(ObjectLockForWrite(c, o, false));
  ObjectMeta sse_view;  // what the SSE response headers are made from
  sse_view.internal = o.meta.internal;
  STRATA_ASSIGN_OR_RETURN(std::string id,
                          engine->CreateMultipartUpload(c.bucket, c.key, std::move(o)));
  SseResponseHeaders(c, sse_view);
  if (alg != ChecksumAlgorithm::kNone) {
    c.w.AddHeader("x-amz-checksum-algorithm", ChecksumAlgorithmName(alg));
    c.w.AddHeader("x-amz-checksum-type", composite ? "COMPOSITE" : "FULL_OBJECT");
  }
  XmlWriter x("InitiateMultipartUploadResult");
  x.Elem("Bucket", c.bucket).Elem("Key", c.key).Elem("UploadId", id);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::UploadPart(Ctx& c) {
  std::string upload_id = c.Q("uploadId");
  auto pn = ParseUint64(c.Q("partNumber"));
  if (!pn || *pn < 1 || *pn > 10000)
    return MakeError("InvalidArgument",
                     "Part number must be an integer between 1 and 10000, inclusive");
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions upload, engine->GetUpload(c.bucket, c.key, upload_id));
  PutOptions o;
  o.checksum_algorithm = upload.checksum_algorithm;
  STRATA_RETURN_IF_ERROR(SseForPart(c, upload, o));
  if (auto src = c.H("x-amz-copy-source")) {
    std::string sb, sk, sv;
    STRATA_RETURN_IF_ERROR(ParseCopySource(*src, sb, sk, &sv));
    STRATA_RETURN_IF_ERROR(AuthorizeCopySource(c, sb, sk));  // auth.cc
    STRATA_RETURN_IF_ERROR(HeadCopySource(sb, sk, sv).status());
    STRATA_ASSIGN_OR_RETURN(auto reader, engine->OpenVersion(sb, sk, sv, SseReader(c, true)));
    if (!sv.empty()) c.w.AddHeader("x-amz-copy-source-version-id", sv);
    const ObjectMeta& sm = reader->meta();
    STRATA_RETURN_IF_ERROR(CheckCopySourceConditions(c, sm));
    uint64_t start = 0, length = sm.size;
    if (auto rh = c.H("x-amz-copy-source-range")) {
      STRATA_ASSIGN_OR_RETURN(ByteRange r, ParseCopySourceRange(*rh, sm.size));
      start = r.start;
      length = r.length;
    }
    if (length > opts.max_put_size)
      return MakeError("EntityTooLarge", "a copied part can be at most 5 GiB");
    ObjectRangeSource body(reader.get(), start, length);
    o.expected_size = length;
    STRATA_ASSIGN_OR_RETURN(
        objstore::PartInfo p,
        engine->UploadPart(c.bucket, c.key, upload_id, static_cast<int>(*pn), body, std::move(o)));
    SseResponseHeaders(c, upload.meta);
    XmlWriter x("CopyPartResult");
    x.Elem("LastModified", FormatIso8601(p.mtime_ns)).Elem("ETag", QuoteETag(p.etag));
    if (!p.checksum.empty() && p.checksum_algorithm != ChecksumAlgorithm::kNone)
      x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(p.checksum_algorithm)), p.checksum);
    SendXml(c, 200, x.Finish());
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(o.expected_size, ExpectedSize(c, opts.max_put_size));
  BodySource body(c.req, c.auth, IsAwsChunked(c));
  STRATA_RETURN_IF_ERROR(SetupChecksum(c, o, body, false));
  STRATA_ASSIGN_OR_RETURN(
      objstore::PartInfo p,
      engine->UploadPart(c.bucket, c.key, upload_id, static_cast<int>(*pn), body, std::move(o)));
  bytes_in->Inc(p.size);
  c.w.AddHeader("ETag", QuoteETag(p.etag));
  SseResponseHeaders(c, upload.meta);
  // The part's algorithm, which is the header's when the upload has none.
  if (!p.checksum.empty() && p.checksum_algorithm != ChecksumAlgorithm::kNone)
    c.w.AddHeader(ChecksumHeaderName(p.checksum_algorithm), p.checksum);
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::CompleteUpload(Ctx& c) {
  std::string upload_id = c.Q("uploadId");
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  // An upload that is gone may be one this request completed before (a retry
  // after a lost reply): the engine answers that from its completed record.
  PutOptions upload;
  Status missing = Status::Ok();
  if (auto u = engine->GetUpload(c.bucket, c.key, upload_id); u.ok()) {
    upload = std::move(*u);
  } else if (u.error().IsNotFound()) {
    missing = u.error();
  } else {
    return u.error();
  }
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  auto parsed = ParseCompleteMultipart(body);
  if (!parsed.ok()) return missing.ok() ? parsed.error() : missing;
  std::vector<objstore::CompletePart> parts = std::move(*parsed);
  objstore::CompleteOptions co;
  if (auto inm = c.H("if-none-match")) {
    if (Trim(*inm) != "*")
      return MakeError("NotImplemented", "If-None-Match on writes only takes \"*\"");
    co.if_none_match_star = true;
  }
  if (auto im = c.H("if-match")) co.if_match = UnquoteETag(*im);
  // A FULL_OBJECT CRC over the whole object is the CRC-combine of the part CRCs.
  ChecksumAlgorithm alg = upload.checksum_algorithm;
  const bool full_object = IsCrc(alg) && !upload.meta.checksum_composite;
  if (full_object) {
    co.before_commit = [alg](ObjectMeta& meta) -> Status {
      std::vector<std::pair<std::string, uint64_t>> crcs;
      crcs.reserve(meta.parts.size());
      for (const auto& p : meta.parts) crcs.emplace_back(p.checksum, p.size);
      std::optional<std::string> combined = CombinePartCrcs(alg, crcs);
      if (!combined) return MakeError("InvalidPart", "a part has no stored checksum to combine");
      meta.checksum_algorithm = alg;
      meta.checksum = std::move(*combined);
      meta.checksum_composite = false;
      return Status::Ok();
    };
  }
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m,
                          engine->CompleteMultipartUpload(c.bucket, c.key, upload_id, parts, co));
  SseResponseHeaders(c, m);
  AddVersionId(c, m);
  if (auto wanted = c.H(ChecksumHeaderName(alg));
      wanted && full_object && !m.checksum.empty() && Trim(*wanted) != m.checksum) {
    kLog.Warn("CompleteMultipartUpload {}: client's full-object {} {} differs from ours {}",
              c.Resource(), ChecksumAlgorithmName(alg), *wanted, m.checksum);
  }
  XmlWriter x("CompleteMultipartUploadResult");
  x.Elem("Location", "/" + c.bucket + "/" + c.key)
      .Elem("Bucket", c.bucket)
      .Elem("Key", c.key)
      .Elem("ETag", QuoteETag(m.etag));
  if (m.checksum_algorithm != ChecksumAlgorithm::kNone && !m.checksum.empty()) {
    std::string v = m.checksum;
    if (m.checksum_composite) v += "-" + std::to_string(m.parts.size());
    x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(m.checksum_algorithm)), v);
    x.Elem("ChecksumType", m.checksum_composite ? "COMPOSITE" : "FULL_OBJECT");
  }
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::AbortUpload(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_RETURN_IF_ERROR(engine->AbortMultipartUpload(c.bucket, c.key, c.Q("uploadId")));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::ListParts(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  std::string upload_id = c.Q("uploadId");
  STRATA_ASSIGN_OR_RETURN(PutOptions upload, engine->GetUpload(c.bucket, c.key, upload_id));
  STRATA_ASSIGN_OR_RETURN(std::vector<objstore::PartInfo> parts,
                          engine->ListParts(c.bucket, c.key, upload_id));
  int marker = 0;
  if (auto pm = ParseUint64(c.Q("part-number-marker"))) marker = static_cast<int>(*pm);
  int max_parts = 1000;
  if (auto mp = ParseUint64(c.Q("max-parts")); mp && *mp < 1000) max_parts = static_cast<int>(*mp);
  XmlWriter x("ListPartsResult");
  x.Elem("Bucket", c.bucket).Elem("Key", c.key).Elem("UploadId", upload_id);
  x.Open("Initiator")
      .Elem("ID", upload.meta.owner)
      .Elem("DisplayName", upload.meta.owner)
      .Close("Initiator");
  x.Open("Owner")
      .Elem("ID", upload.meta.owner)
      .Elem("DisplayName", upload.meta.owner)
      .Close("Owner");
  x.Elem("StorageClass", ReportedStorageClass(c.bucket, upload.meta.storage_class))
      .Elem("PartNumberMarker", static_cast<uint64_t>(marker));
  if (upload.checksum_algorithm != ChecksumAlgorithm::kNone)
    x.Elem("ChecksumAlgorithm", ChecksumAlgorithmName(upload.checksum_algorithm));
  int n = 0;
  int last = marker;
  bool truncated = false;
  for (const auto& p : parts) {
    if (p.number <= marker) continue;
    if (n == max_parts) {
      truncated = true;
      break;
    }
    ++n;
    last = p.number;
    x.Open("Part")
        .Elem("PartNumber", static_cast<uint64_t>(p.number))
        .Elem("LastModified", FormatIso8601(p.mtime_ns));
    x.Elem("ETag", QuoteETag(p.etag)).Elem("Size", p.size);
    if (!p.checksum.empty() && p.checksum_algorithm != ChecksumAlgorithm::kNone)
      x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(p.checksum_algorithm)), p.checksum);
    x.Close("Part");
  }
  x.Elem("NextPartNumberMarker", static_cast<uint64_t>(last))
      .Elem("MaxParts", static_cast<uint64_t>(max_parts));
  x.Elem("IsTruncated", truncated);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::ListUploads(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  std::string prefix = c.Q("prefix");
  STRATA_ASSIGN_OR_RETURN(auto uploads, engine->ListMultipartUploads(c.bucket, prefix));
  std::string key_marker = c.Q("key-marker");
  // With key-marker, upload-id-marker resumes within that key's uploads.
  std::string id_marker = key_marker.empty() ? "" : c.Q("upload-id-marker");
  int max_uploads = 1000;
  if (auto mu = ParseInt64(c.Q("max-uploads")); mu && *mu >= 0 && *mu < 1000)
    max_uploads = static_cast<int>(*mu);
  std::string encoding = c.Q("encoding-type");
  if (!encoding.empty() && encoding != "url")
    return MakeError("InvalidArgument", "Invalid Encoding Method specified in Request");
  auto enc = [url = encoding == "url"](std::string_view s) {
    return url ? UriEncode(s, true) : std::string(s);
  };
  XmlWriter x("ListMultipartUploadsResult");
  x.Elem("Bucket", c.bucket).Elem("KeyMarker", enc(key_marker)).Elem("UploadIdMarker", id_marker);
  x.Elem("Prefix", enc(prefix)).Elem("MaxUploads", static_cast<uint64_t>(max_uploads));
  if (!encoding.empty()) x.Elem("EncodingType", encoding);
  int n = 0;
  bool truncated = false;
  std::string next_key, next_id;
  for (const auto& u : uploads) {
    if (!key_marker.empty() &&
        (u.key < key_marker ||
         (u.key == key_marker && (id_marker.empty() || u.upload_id <= id_marker))))
      continue;
    if (n == max_uploads) {
      truncated = true;
      break;
    }
    ++n;
    next_key = u.key;
    next_id = u.upload_id;
    x.Open("Upload").Elem("Key", enc(u.key)).Elem("UploadId", u.upload_id);
    x.Open("Initiator").Elem("ID", u.owner).Elem("DisplayName", u.owner).Close("Initiator");
    x.Open("Owner").Elem("ID", u.owner).Elem("DisplayName", u.owner).Close("Owner");
    x.Elem("StorageClass", ReportedStorageClass(c.bucket, u.storage_class))
        .Elem("Initiated", FormatIso8601(u.initiated_ns))
        .Close("Upload");
  }
  if (truncated) x.Elem("NextKeyMarker", enc(next_key)).Elem("NextUploadIdMarker", next_id);
  x.Elem("IsTruncated", truncated);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
