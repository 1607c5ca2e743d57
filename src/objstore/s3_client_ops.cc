// The requests S3Client and S3ObjectStore share, on full keys: PUT of one body
// (from memory, or streamed aws-chunked with a checksum trailer), HEAD, the
// multipart calls (create, complete with recovery of a lost answer, abort),
// UploadPartCopy and CopyObject (in UploadPartCopy parts above 5 GiB).
#include <algorithm>

#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_client_impl.h"
#include "objstore/s3_xml.h"
#include "objstore/store_common.h"

namespace strata::objstore {
namespace {

bool StreamableChecksum(ChecksumAlgorithm a) {
  return a != ChecksumAlgorithm::kNone && a != ChecksumAlgorithm::kMd5;
}

}  // namespace

// Applies the metadata and conditions of WriteOptions to a request.
void S3Client::Impl::AddWriteHeaders(http::HeaderList& h, const WriteOptions& o, bool conditions) {
  if (!o.content_type.empty()) h.emplace_back("Content-Type", o.content_type);
  for (const auto& [k, v] : o.user_meta) h.emplace_back("x-amz-meta-" + ToLower(k), v);
  const std::pair<const char*, const std::string*> plain[] = {
      {"Cache-Control", &o.cache_control},
      {"Content-Encoding", &o.content_encoding},
      {"Content-Disposition", &o.content_disposition},
      {"Expires", &o.expires},
      {"x-amz-storage-class", &o.storage_class},
      {"x-amz-acl", &o.acl},
      {"x-amz-server-side-encryption", &o.sse},
      {"x-amz-server-side-encryption-aws-kms-key-id", &o.sse_kms_key_id}};
  for (const auto& [name, value] : plain) {
    if (!value->empty()) h.emplace_back(name, *value);
  }
  if (conditions) {
    if (o.if_none_match_star) h.emplace_back("If-None-Match", "*");
    if (o.if_match) h.emplace_back("If-Match", *o.if_match == "*" ? "*" : QuoteETag(*o.if_match));
  }
}

ObjectInfo S3Client::Impl::InfoFromHeaders(const http::ClientResponse& resp,
                                           std::string key) const {
  ObjectInfo i;
  i.key = std::move(key);
  if (auto cr = resp.Header("content-range")) {
    if (size_t slash = cr->rfind('/'); slash != std::string_view::npos) {
      i.size = ParseUint64(Trim(cr->substr(slash + 1))).value_or(0);
    }
  } else {
    i.size = resp.content_length().value_or(0);
  }
  if (auto e = resp.Header("etag")) i.etag = UnquoteETag(*e);
  if (auto lm = resp.Header("last-modified")) i.mtime_ns = ParseHttpDate(*lm).value_or(0);
  if (auto ct = resp.Header("content-type")) i.content_type = std::string(*ct);
  if (auto sc = resp.Header("x-amz-storage-class")) i.storage_class = std::string(Trim(*sc));
  if (auto v = resp.Header("x-amz-version-id")) i.version_id = std::string(Trim(*v));
  if (auto v = resp.Header("cache-control")) i.cache_control = std::string(*v);
  if (auto v = resp.Header("content-encoding")) i.content_encoding = std::string(*v);
  if (auto v = resp.Header("content-disposition")) i.content_disposition = std::string(*v);
  if (auto v = resp.Header("expires")) i.expires = std::string(*v);
  for (const auto& [k, v] : resp.headers()) {
    if (k.size() > 11 && IEquals(std::string_view(k).substr(0, 11), "x-amz-meta-")) {
      i.user_meta[ToLower(std::string_view(k).substr(11))] = v;
    }
  }
  for (ChecksumAlgorithm a : kResponseChecksums) {
    if (auto c = resp.Header(ChecksumHeaderName(a))) {
      i.checksum_algorithm = a;
      i.checksum = std::string(Trim(*c));
      break;
    }
  }
  return i;
}

// PUT of one body (an object, or a part when query names one). mem when
// source is null; else source streamed (aws-chunked with a checksum trailer
// when alg can be streamed).
Result<S3Client::Impl::PutResult> S3Client::Impl::SendPut(std::string op, const std::string& bucket,
                                                          const std::string& key, std::string query,
                                                          http::HeaderList headers,
                                                          std::string_view mem, ByteSource* source,
                                                          uint64_t size, ChecksumAlgorithm alg) {
  if (size > kMaxSinglePut) {
    return Status::InvalidArgument("EntityTooLarge: a single PUT or part is at most 5 GiB; " +
                                   std::to_string(size) + " bytes must go as a multipart upload");
  }
  Call c;
  c.op = std::move(op);
  c.method = "PUT";
  c.bucket = bucket;
  c.key = key;
  c.has_key = true;
  c.query = std::move(query);
  c.headers = std::move(headers);
  PutResult out;
  out.alg = alg;
  if (source == nullptr) {
    c.body = mem;
    if (alg == ChecksumAlgorithm::kMd5) {
      c.headers.emplace_back("Content-MD5", Base64Encode(Md5(mem)));
    } else if (alg != ChecksumAlgorithm::kNone) {
      auto h = Hasher::Create(alg);
      h->Update(mem.data(), mem.size());
      out.checksum = Base64Encode(h->Digest());
      c.headers.emplace_back(ChecksumHeaderName(alg), out.checksum);
    }
  } else {
    c.source = source;
    c.source_size = size;
    if (StreamableChecksum(alg)) c.trailer = alg;
  }
  std::string etag, server_checksum;
  STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    if (auto e = resp.Header("etag")) etag = UnquoteETag(*e);
    if (alg != ChecksumAlgorithm::kNone) {
      if (auto v = resp.Header(ChecksumHeaderName(alg))) server_checksum = std::string(Trim(*v));
    }
    auto drained = resp.ReadAll(kMaxXmlBody);
    *retry = !drained.ok() && IsTransport(drained.error());
    return drained.status();
  }));
  out.etag = std::move(etag);
  if (!server_checksum.empty()) out.checksum = server_checksum;
  if (out.checksum.empty() && source == nullptr && alg == ChecksumAlgorithm::kMd5) {
    out.checksum = Base64Encode(Md5(mem));
  }
  if (alg == ChecksumAlgorithm::kMd5 || out.checksum.empty()) out.alg = ChecksumAlgorithm::kNone;
  return out;
}

Result<ObjectInfo> S3Client::Impl::Head(const std::string& bucket, const std::string& key,
                                        const std::optional<std::string>& if_match) {
  Call c;
  c.op = "HeadObject";
  c.method = "HEAD";
  c.bucket = bucket;
  c.key = key;
  c.has_key = true;
  c.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
  if (if_match) c.headers.emplace_back("If-Match", QuoteETag(*if_match));
  ObjectInfo info;
  STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool*) {
    info = InfoFromHeaders(resp, key);
    return Status::Ok();
  }));
  return info;
}

Result<std::string> S3Client::Impl::CreateMultipart(const std::string& bucket,
                                                    const std::string& key, const WriteOptions& o) {
  Call c;
  c.op = "CreateMultipartUpload";
  c.method = "POST";
  c.bucket = bucket;
  c.key = key;
  c.has_key = true;
  c.query = "uploads";
  c.idempotent = false;
  AddWriteHeaders(c.headers, o, /*conditions=*/false);
  if (o.checksum != ChecksumAlgorithm::kNone && o.checksum != ChecksumAlgorithm::kMd5) {
    c.headers.emplace_back("x-amz-checksum-algorithm",
                           std::string(ChecksumAlgorithmName(o.checksum)));
    const bool crc = o.checksum == ChecksumAlgorithm::kCrc32 ||
                     o.checksum == ChecksumAlgorithm::kCrc32c ||
                     o.checksum == ChecksumAlgorithm::kCrc64Nvme;
    c.headers.emplace_back("x-amz-checksum-type", crc ? "FULL_OBJECT" : "COMPOSITE");
  }
  std::string id;
  STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    InitiateMultipartXml x;
    STRATA_RETURN_IF_ERROR(ReadXml(resp, c, retry, ParseInitiateMultipartXml, &x));
    id = std::move(x.upload_id);
    if (id.empty()) return Status::IOError("CreateMultipartUpload response has no UploadId");
    return Status::Ok();
  }));
  return id;
}

Result<ObjectInfo> S3Client::Impl::CompleteMultipart(
    const std::string& bucket, const std::string& key, std::string_view upload_id,
    const std::vector<UploadedPart>& parts, ChecksumAlgorithm alg, const WriteOptions* conditions) {
  std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  const std::string tag = alg != ChecksumAlgorithm::kNone && alg != ChecksumAlgorithm::kMd5
                              ? "Checksum" + std::string(ChecksumAlgorithmName(alg))
                              : "";
  uint64_t total = 0;
  std::vector<std::string> etags;
  for (const UploadedPart& p : parts) {
    xml += "<Part><PartNumber>" + std::to_string(p.number) + "</PartNumber><ETag>" +
           XmlEscape(QuoteETag(p.etag)) + "</ETag>";
    if (!tag.empty() && !p.checksum.empty()) xml += "<" + tag + ">" + p.checksum + "</" + tag + ">";
    xml += "</Part>";
    total += p.size;
    etags.push_back(UnquoteETag(p.etag));
  }
  xml += "</CompleteMultipartUpload>";
  Call c;
  c.op = "CompleteMultipartUpload";
  c.method = "POST";
  c.bucket = bucket;
  c.key = key;
  c.has_key = true;
  AddParam(c.query, "uploadId", upload_id);
  c.body = xml;
  c.headers.emplace_back("Content-Type", "application/xml");
  if (conditions != nullptr) {
    // The encryption was chosen by CreateMultipartUpload.
    WriteOptions w = *conditions;
    w.sse.clear();
    w.sse_kms_key_id.clear();
    AddWriteHeaders(c.headers, w, /*conditions=*/true);
  }
  ObjectInfo info;
  info.key = key;
  info.size = total;
  Status s = Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    WriteResultXml x;
    STRATA_RETURN_IF_ERROR(ReadXml(resp, c, retry, ParseWriteResultXml, &x));
    info.etag = std::move(x.etag);
    if (!x.checksum.empty()) {
      info.checksum_algorithm = x.checksum_algorithm;
      info.checksum = std::move(x.checksum);
    }
    return Status::Ok();
  });
  if (!s.ok() && s.code() == StatusCode::kNotFound && c.attempts > 1 &&
      StartsWith(s.message(), "NoSuchUpload")) {
    // An earlier attempt may have completed the upload and lost its answer:
    // the object then carries the ETag these parts make.
    auto want = MultipartEtag(etags);
    auto head = Head(bucket, key, std::nullopt);
    if (want && head.ok() && head->etag == *want) {
      kLog.Debug("CompleteMultipartUpload {}: an earlier attempt committed it", key);
      return *head;
    }
  }
  STRATA_RETURN_IF_ERROR(s);
  info.mtime_ns = NowUnixNanos();
  return info;
}

Status S3Client::Impl::AbortMultipart(const std::string& bucket, const std::string& key,
                                      std::string_view id) {
  Call c;
  c.op = "AbortMultipartUpload";
  c.method = "DELETE";
  c.bucket = bucket;
  c.key = key;
  c.has_key = true;
  AddParam(c.query, "uploadId", id);
  return Execute(c, nullptr);
}

Result<UploadedPart> S3Client::Impl::UploadPartCopy(
    const std::string& dst_bucket, const std::string& dst_key, std::string_view upload_id,
    int part_number, const std::string& src_bucket, const std::string& src_key,
    std::optional<std::pair<uint64_t, uint64_t>> range,
    const std::optional<std::string>& source_if_match) {
  uint64_t size = 0;
  if (range) {
    size = range->second;
    if (size == 0) return Status::InvalidArgument("UploadPartCopy of an empty range");
  } else {
    STRATA_ASSIGN_OR_RETURN(ObjectInfo src, Head(src_bucket, src_key, source_if_match));
    size = src.size;
  }
  Call c;
  c.op = "UploadPartCopy";
  c.method = "PUT";
  c.bucket = dst_bucket;
  c.key = dst_key;
  c.has_key = true;
  AddParam(c.query, "partNumber", std::to_string(part_number));
  AddParam(c.query, "uploadId", upload_id);
  c.headers.emplace_back("x-amz-copy-source", "/" + src_bucket + "/" + UriEncode(src_key, true));
  if (range) {
    c.headers.emplace_back("x-amz-copy-source-range",
                           "bytes=" + std::to_string(range->first) + "-" +
                               std::to_string(range->first + range->second - 1));
  }
  if (source_if_match)
    c.headers.emplace_back("x-amz-copy-source-if-match", QuoteETag(*source_if_match));
  UploadedPart part;
  part.number = part_number;
  part.size = size;
  STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    WriteResultXml x;
    STRATA_RETURN_IF_ERROR(ReadXml(resp, c, retry, ParseWriteResultXml, &x));
    part.etag = std::move(x.etag);
    if (!x.checksum.empty()) part.checksum = std::move(x.checksum);
    return Status::Ok();
  }));
  return part;
}

Result<ObjectInfo> S3Client::Impl::CopyObject(const std::string& src_bucket,
                                              const std::string& src_key,
                                              const std::string& dst_bucket,
                                              const std::string& dst_key, const CopyOptions& o) {
  STRATA_ASSIGN_OR_RETURN(ObjectInfo src, Head(src_bucket, src_key, o.source_if_match));
  ObjectInfo out = src;
  out.key = dst_key;
  // What the destination gets: the new metadata, or the source's.
  WriteOptions wo = o.new_metadata ? *o.new_metadata : MetadataOf(src);
  if (!o.storage_class.empty()) wo.storage_class = o.storage_class;
  if (!o.acl.empty()) wo.acl = o.acl;
  if (!o.sse.empty()) wo.sse = o.sse;
  if (!o.sse_kms_key_id.empty()) wo.sse_kms_key_id = o.sse_kms_key_id;
  if (o.new_metadata) {
    out.content_type = wo.content_type;
    out.user_meta = wo.user_meta;
    out.cache_control = wo.cache_control;
    out.content_encoding = wo.content_encoding;
    out.content_disposition = wo.content_disposition;
    out.expires = wo.expires;
  }
  if (!wo.storage_class.empty()) out.storage_class = wo.storage_class;
  if (src.size > kMaxSinglePut) {
    // Too big for CopyObject: a multipart upload of copied ranges.
    wo.checksum = ChecksumAlgorithm::kCrc32c;
    STRATA_ASSIGN_OR_RETURN(std::string id, CreateMultipart(dst_bucket, dst_key, wo));
    constexpr uint64_t kCopyPart = 1ull << 30;
    std::vector<UploadedPart> parts;
    for (uint64_t off = 0; off < src.size; off += kCopyPart) {
      auto p = UploadPartCopy(dst_bucket, dst_key, id, static_cast<int>(parts.size() + 1),
                              src_bucket, src_key,
                              std::make_pair(off, std::min(kCopyPart, src.size - off)), src.etag);
      if (!p.ok()) {
        (void)AbortMultipart(dst_bucket, dst_key, id);
        return p.error();
      }
      parts.push_back(std::move(*p));
    }
    auto done = CompleteMultipart(dst_bucket, dst_key, id, parts, wo.checksum, nullptr);
    if (!done.ok()) {
      (void)AbortMultipart(dst_bucket, dst_key, id);
      return done.error();
    }
    out.etag = done->etag;
    out.checksum_algorithm = done->checksum_algorithm;
    out.checksum = done->checksum;
    out.mtime_ns = NowUnixNanos();
    return out;
  }
  Call c;
  c.op = "CopyObject";
  c.method = "PUT";
  c.bucket = dst_bucket;
  c.key = dst_key;
  c.has_key = true;
  c.headers.emplace_back("x-amz-copy-source", "/" + src_bucket + "/" + UriEncode(src_key, true));
  // Pinned to the version we looked at, so size and metadata are its.
  c.headers.emplace_back("x-amz-copy-source-if-match", QuoteETag(src.etag));
  if (o.new_metadata) {
    c.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
    AddWriteHeaders(c.headers, wo, /*conditions=*/false);
  } else {
    // COPY: only what is not metadata (storage class, ACL) is sent.
    WriteOptions placement;
    placement.storage_class = wo.storage_class;
    placement.acl = wo.acl;
    placement.sse = wo.sse;
    placement.sse_kms_key_id = wo.sse_kms_key_id;
    AddWriteHeaders(c.headers, placement, /*conditions=*/false);
  }
  STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    WriteResultXml x;
    STRATA_RETURN_IF_ERROR(ReadXml(resp, c, retry, ParseWriteResultXml, &x));
    out.etag = std::move(x.etag);
    out.mtime_ns = x.mtime_ns.value_or(NowUnixNanos());
    // The last checksum the result names (none: none).
    out.checksum_algorithm = x.checksum_algorithm;
    out.checksum = std::move(x.checksum);
    return Status::Ok();
  }));
  return out;
}

}  // namespace strata::objstore
