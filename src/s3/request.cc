// What the handlers read from a request: the body (BodySource: aws-chunked
// decoding, x-amz-content-sha256, Content-MD5 and x-amz-checksum-* checks),
// small XML bodies, the declared size, Range and x-amz-copy-source headers,
// copy-source conditions, and the object metadata and conditions a write
// carries in its headers (PutOptions).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/frontend_internal.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

// The algorithms a client may send as x-amz-checksum-* headers or trailers.
constexpr ChecksumAlgorithm kHeaderChecksums[] = {
    ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme,
    ChecksumAlgorithm::kSha1, ChecksumAlgorithm::kSha256};

const char* const kStoredHeaders[] = {"content-encoding", "content-disposition", "cache-control",
                                      "expires", "content-language"};

}  // namespace

BodySource::BodySource(http::Request& req, const AuthResult& auth, bool aws_chunked)
    : req_(req), auth_(auth) {
  if (aws_chunked) {
    chunked_ = std::make_unique<AwsChunkedDecoder>(
        [this](char* p, size_t n) { return req_.ReadBody(p, n); }, auth_);
  } else if (auth_.payload_mode == PayloadMode::kSignedHex) {
    sha_ = Hasher::Create(ChecksumAlgorithm::kSha256);
  }
}

Result<size_t> BodySource::Read(char* buf, size_t n) {
  if (done_) return size_t{0};
  Result<size_t> r = chunked_ ? chunked_->Read(buf, n) : req_.ReadBody(buf, n);
  if (!r.ok()) {
    const Status& st = r.error();
    if (st.code() == StatusCode::kIOError)
      return MakeError("IncompleteBody",
                       "You did not provide the number of bytes specified by "
                       "the Content-Length HTTP header (" +
                           st.message() + ")");
    return st;
  }
  if (*r == 0) {
    done_ = true;
    if (sha_ != nullptr) {
      std::string got = HexEncode(sha_->Digest());
      if (got != auth_.payload_sha256_hex)
        return MakeError("XAmzContentSHA256Mismatch",
                         "The provided 'x-amz-content-sha256' header does not match what was "
                         "computed.");
    }
    return size_t{0};
  }
  if (sha_ != nullptr) sha_->Update(buf, *r);
  total_ += *r;
  return r;
}

std::optional<std::string> BodySource::Trailer(std::string_view name) const {
  if (!chunked_) return std::nullopt;
  for (const auto& [k, v] : chunked_->trailers())
    if (IEquals(k, name)) return v;
  return std::nullopt;
}

Result<std::optional<ByteRange>> ParseRange(std::string_view h, uint64_t size) {
  h = Trim(h);
  if (!StartsWith(h, "bytes=")) return std::optional<ByteRange>();
  std::string_view spec = h.substr(6);
  if (spec.find(',') != std::string_view::npos) return std::optional<ByteRange>();
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::optional<ByteRange>();
  std::string_view a = Trim(spec.substr(0, dash)), b = Trim(spec.substr(dash + 1));
  auto invalid = [&] {
    return MakeError("InvalidRange", "The requested range is not satisfiable");
  };
  if (a.empty()) {  // suffix: last N bytes
    auto n = ParseUint64(b);
    if (!n) return std::optional<ByteRange>();
    if (*n == 0 || size == 0) return invalid();
    uint64_t len = std::min(*n, size);
    return std::optional<ByteRange>(ByteRange{size - len, len});
  }
  auto start = ParseUint64(a);
  if (!start) return std::optional<ByteRange>();
  if (*start >= size) return invalid();
  uint64_t end = size - 1;
  if (!b.empty()) {
    auto e = ParseUint64(b);
    if (!e || *e < *start) return std::optional<ByteRange>();
    end = std::min(*e, size - 1);
  }
  return std::optional<ByteRange>(ByteRange{*start, end - *start + 1});
}

Result<ByteRange> ParseCopySourceRange(std::string_view h, uint64_t size) {
  auto malformed = [] {
    return MakeError("InvalidArgument",
                     "The x-amz-copy-source-range value must be of the form bytes=first-last "
                     "where first and last are the zero-based offsets of the first and last "
                     "bytes to copy");
  };
  h = Trim(h);
  if (!StartsWith(h, "bytes=")) return malformed();
  std::string_view spec = h.substr(6);
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return malformed();
  auto first = ParseUint64(spec.substr(0, dash));
  auto last = ParseUint64(spec.substr(dash + 1));
  if (!first || !last || *last < *first) return malformed();
  if (*last >= size)
    return MakeError("InvalidRange",
                     fmt::format("The requested range {} is not satisfiable: the source object "
                                 "is {} bytes",
                                 h, size));
  return ByteRange{*first, *last - *first + 1};
}

bool IsAwsChunked(const Ctx& c) {
  return c.auth.payload_mode == PayloadMode::kStreamingSigned ||
         c.auth.payload_mode == PayloadMode::kStreamingSignedTrailer ||
         c.auth.payload_mode == PayloadMode::kStreamingUnsignedTrailer;
}

Result<std::optional<uint64_t>> ExpectedSize(const Ctx& c, uint64_t max) {
  std::optional<uint64_t> size;
  if (IsAwsChunked(c)) {
    auto h = c.H("x-amz-decoded-content-length");
    if (h) {
      size = ParseUint64(Trim(*h));
      if (!size) return MakeError("InvalidArgument", "malformed x-amz-decoded-content-length");
    } else if (c.auth.payload_mode == PayloadMode::kStreamingSigned) {
      return MakeError(
          "MissingContentLength",
          "You must provide the x-amz-decoded-content-length header for aws-chunked uploads.");
    }
  } else if (c.req.content_length) {
    size = c.req.content_length;
  } else if (!c.req.chunked) {
    return MakeError("MissingContentLength", "You must provide the Content-Length HTTP header.");
  }
  if (size && *size > max)
    return MakeError(
        "EntityTooLarge",
        fmt::format("Your proposed upload exceeds the maximum allowed size ({} bytes)", max));
  return size;
}

Status ParseCopySource(std::string_view h, std::string& bucket, std::string& key,
                       std::string* version_id) {
  if (version_id) version_id->clear();
  if (size_t q = h.find('?'); q != std::string_view::npos) {
    std::string_view v = h.substr(q + 1);
    if (!StartsWith(v, "versionId=") || v.size() == 10)
      return MakeError("InvalidArgument",
                       "x-amz-copy-source may only carry ?versionId= after the key");
    auto id = UriDecode(v.substr(10), true);
    if (!id) return MakeError("InvalidArgument", "Invalid copy source version id encoding");
    // A caller that cannot copy a named version must not silently copy the current one.
    if (!version_id && *id != "null")
      return MakeError("NotImplemented",
                       "this operation cannot copy a named version; nothing was changed");
    if (version_id) *version_id = *id;
    h = h.substr(0, q);
  }
  auto decoded = UriDecode(h, false);
  if (!decoded) return MakeError("InvalidArgument", "Invalid copy source encoding");
  std::string_view s(*decoded);
  if (StartsWith(s, "/")) s.remove_prefix(1);
  size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size())
    return MakeError("InvalidArgument",
                     "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  bucket = std::string(s.substr(0, slash));
  key = std::string(s.substr(slash + 1));
  return Status::Ok();
}

Status CheckCopySourceConditions(const Ctx& c, const ObjectMeta& src) {
  int64_t mtime_s = src.mtime_ns / 1'000'000'000;
  auto im = c.H("x-amz-copy-source-if-match");
  auto inm = c.H("x-amz-copy-source-if-none-match");
  auto ims = c.H("x-amz-copy-source-if-modified-since");
  auto ius = c.H("x-amz-copy-source-if-unmodified-since");
  auto fail = [] {
    return MakeError("PreconditionFailed",
                     "At least one of the pre-conditions you specified did not hold");
  };
  if (im && !ETagListMatches(*im, src.etag)) return fail();
  if (!im && ius) {
    if (auto t = ParseHttpDate(*ius); t && mtime_s > *t / 1'000'000'000) return fail();
  }
  if (inm && ETagListMatches(*inm, src.etag)) return fail();
  if (!inm && ims) {
    if (auto t = ParseHttpDate(*ims); t && mtime_s <= *t / 1'000'000'000) return fail();
  }
  return Status::Ok();
}

Result<std::string> Frontend::Impl::ReadXmlBody(Ctx& c) {
  AuthResult auth = c.auth;
  bool aws_chunked = auth.payload_mode == PayloadMode::kStreamingSigned ||
                     auth.payload_mode == PayloadMode::kStreamingSignedTrailer ||
                     auth.payload_mode == PayloadMode::kStreamingUnsignedTrailer;
  BodySource src(c.req, c.auth, aws_chunked);
  std::string body;
  char buf[16384];
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(size_t n, src.Read(buf, sizeof(buf)));
    if (n == 0) break;
    if (body.size() + n > opts.max_xml_body)
      return MakeError("MalformedXML", "the XML document is larger than the 2 MiB allowed");
    body.append(buf, n);
  }
  if (auto md5 = c.H("content-md5")) {
    auto want = Base64Decode(Trim(*md5));
    if (!want || want->size() != 16)
      return MakeError("InvalidDigest", "The Content-MD5 you specified is not valid.");
    if (*want != Md5(body))
      return MakeError("BadDigest",
                       "The Content-MD5 you specified did not match what we received.");
  }
  for (ChecksumAlgorithm a : kHeaderChecksums) {
    std::string hname = ChecksumHeaderName(a);
    std::optional<std::string> v;
    if (auto h = c.H(hname)) v = std::string(Trim(*h));
    if (!v) v = src.Trailer(hname);
    if (!v) continue;
    auto h = Hasher::Create(a);
    h->Update(body.data(), body.size());
    if (Base64Encode(h->Digest()) != *v)
      return MakeError("BadDigest",
                       fmt::format("The {} you specified did not match the calculated checksum.",
                                   ChecksumAlgorithmName(a)));
  }
  return body;
}

std::string_view ReportedStorageClass(std::string_view bucket, std::string_view stored) {
  if (IsDirectoryBucketName(bucket)) return "EXPRESS_ONEZONE";
  return stored.empty() ? std::string_view("STANDARD") : stored;
}

Result<std::string> StorageClassFromHeader(const Ctx& c) {
  const auto h = c.H("x-amz-storage-class");
  if (!h || IsDirectoryBucketName(c.bucket)) return std::string();
  const std::string_view sc = Trim(*h);
  if (sc == "STANDARD") return std::string();
  for (const char* kept :
       {"REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR"})
    if (sc == kept) return std::string(sc);
  if (sc == "GLACIER" || sc == "DEEP_ARCHIVE")
    return MakeError("NotImplemented",
                     "Strata does not implement the archive storage classes GLACIER and "
                     "DEEP_ARCHIVE (their objects need RestoreObject); nothing was written");
  return MakeError("InvalidStorageClass", "The storage class you specified is not valid");
}

bool HasIntegrityHeader(const Ctx& c) {
  if (c.H("content-md5")) return true;
  for (ChecksumAlgorithm a : kHeaderChecksums)
    if (c.H(ChecksumHeaderName(a))) return true;
  const auto t = c.H("x-amz-trailer");
  return t && StartsWith(ToLower(Trim(*t)), "x-amz-checksum-");
}

Result<PutOptions> Frontend::Impl::PutOptionsFromHeaders(Ctx& c) {
  PutOptions o;
  ObjectMeta& m = o.meta;
  m.owner = c.user != nullptr ? c.user->access_key : "";
  size_t meta_bytes = 0;
  for (const auto& h : c.req.headers) {
    if (h.name.size() > 11 && IEquals(h.name.substr(0, 11), "x-amz-meta-")) {
      m.user_meta[ToLower(h.name.substr(11))] = std::string(h.value);
      meta_bytes += h.name.size() + h.value.size();
    }
  }
  if (meta_bytes > 2048)
    return MakeError("MetadataTooLarge",
                     "Your metadata headers exceed the maximum allowed metadata size (2 KiB)");
  if (auto ct = c.H("content-type")) m.content_type = std::string(*ct);
  for (const char* name : kStoredHeaders)
    if (auto v = c.H(name)) m.headers[name] = std::string(*v);
  // aws-chunked is transport framing, not a stored encoding.
  // The rest of the value is kept as sent ("deflate, gzip" stays so).
  if (auto ce = m.headers.find("content-encoding"); ce != m.headers.end()) {
    std::string kept;
    bool dropped = false;
    for (std::string_view part : Split(ce->second, ',')) {
      if (IEquals(Trim(part), "aws-chunked")) {
        dropped = true;
        continue;
      }
      if (!kept.empty()) kept += ",";
      kept += part;
    }
    if (dropped) kept = std::string(Trim(kept));
    if (kept.empty())
      m.headers.erase(ce);
    else if (dropped)
      ce->second = kept;
  }
  if (auto tagging = c.H("x-amz-tagging")) {
    for (std::string_view kv : Split(*tagging, '&')) {
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      auto k = UriDecode(kv.substr(0, eq), true);
      auto v = eq == std::string_view::npos ? std::optional<std::string>("")
                                            : UriDecode(kv.substr(eq + 1), true);
      if (!k || !v || k->empty()) return MakeError("InvalidTag", "malformed x-amz-tagging header");
      m.tags[*k] = *v;
    }
  }
  if (auto inm = c.H("if-none-match")) {
    if (Trim(*inm) != "*")
      return MakeError("NotImplemented", "If-None-Match on writes only takes \"*\"");
    o.if_none_match_star = true;
  }
  if (auto im = c.H("if-match")) o.if_match = UnquoteETag(*im);
  STRATA_ASSIGN_OR_RETURN(m.storage_class, StorageClassFromHeader(c));
  STRATA_RETURN_IF_ERROR(ObjectAclFromHeaders(c, o.meta));  // access_handlers.cc
  return o;
}

// Decides which checksum the engine computes and checks the client's value
// before commit: a header value, or a trailer after the body.
Status Frontend::Impl::SetupChecksum(Ctx& c, PutOptions& o, BodySource& body, bool single_part) {
  ChecksumAlgorithm alg = o.checksum_algorithm;
  std::optional<std::string> header_value;
  for (ChecksumAlgorithm a : kHeaderChecksums) {
    if (auto h = c.H(ChecksumHeaderName(a))) {
      if (header_value)
        return MakeError(
            "InvalidRequest",
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
      alg = a;
      header_value = std::string(Trim(*h));
    }
  }
  std::string trailer_name;
  if (auto t = c.H("x-amz-trailer")) {
    trailer_name = ToLower(Trim(*t));
    if (!StartsWith(trailer_name, "x-amz-checksum-"))
      return MakeError("InvalidRequest", "unsupported x-amz-trailer \"" + trailer_name + "\"");
    ChecksumAlgorithm a = ParseChecksumAlgorithm(trailer_name.substr(15));
    if (a == ChecksumAlgorithm::kNone)
      return MakeError("InvalidRequest", "unknown checksum algorithm in x-amz-trailer");
    alg = a;
  }
  if (alg == ChecksumAlgorithm::kNone) {
    if (auto sdk = c.H("x-amz-sdk-checksum-algorithm")) alg = ParseChecksumAlgorithm(Trim(*sdk));
  }
  o.checksum_algorithm = alg;
  std::optional<std::string> md5;
  if (auto h = c.H("content-md5")) {
    auto v = Base64Decode(Trim(*h));
    if (!v || v->size() != 16)
      return MakeError("InvalidDigest", "The Content-MD5 you specified is not valid.");
    md5 = *v;
  }
  auto previous = std::move(o.before_commit);
  o.before_commit = [alg, header_value, trailer_name, md5, &body, single_part, previous](
                        const objstore::WriteDigest& d, ObjectMeta& meta) -> Status {
    if (md5 && *md5 != d.md5)
      return MakeError("BadDigest",
                       "The Content-MD5 you specified did not match what we received.");
    std::optional<std::string> want = header_value;
    if (!want && !trailer_name.empty()) {
      want = body.Trailer(trailer_name);
      if (!want)
        return MakeError("IncompleteBody",
                         "the body ended without the promised " + trailer_name + " trailer");
    }
    if (alg != ChecksumAlgorithm::kNone && alg != ChecksumAlgorithm::kMd5) {
      std::string got = Base64Encode(d.checksum);
      if (want && *want != got)
        return MakeError("BadDigest",
                         fmt::format("The {} you specified did not match the calculated checksum.",
                                     ChecksumAlgorithmName(alg)));
      if (single_part) {
        meta.checksum_algorithm = alg;
        meta.checksum = got;
        meta.checksum_composite = false;
      }
    }
    if (previous) return previous(d, meta);
    return Status::Ok();
  };
  return Status::Ok();
}

}  // namespace strata::s3
