// S3ObjectStore: the ObjectStore over a bucket/prefix of an S3 service, on the
// requests of S3Client::Impl. Put streams one request from a rewindable body of
// known size, else sends a multipart upload of in-memory parts; Get checks the
// stored checksum (or the MD5 ETag) and resumes a broken body with ranged GETs
// pinned to the first response's ETag.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_client_impl.h"
#include "objstore/s3_xml.h"

namespace strata::objstore {
namespace {

// Whole-object integrity checks while a GET streams.
struct Verifier {
  std::unique_ptr<Hasher> crc;  // the stored x-amz-checksum-*
  ChecksumAlgorithm crc_alg = ChecksumAlgorithm::kNone;
  std::string crc_want;         // base64
  std::unique_ptr<Hasher> md5;  // single-part ETag
  std::string md5_want;         // hex

  void Update(const char* p, size_t n) {
    if (crc) crc->Update(p, n);
    if (md5) md5->Update(p, n);
  }
  Status Check(std::string_view what) {
    if (crc) {
      std::string got = Base64Encode(crc->Digest());
      if (got != crc_want) {
        return Status::Corruption("BadDigest: " + std::string(ChecksumAlgorithmName(crc_alg)) +
                                  " of the bytes received (" + got + ") differs from the stored " +
                                  crc_want + " (" + std::string(what) + ")");
      }
    }
    if (md5) {
      std::string got = HexEncode(md5->Digest());
      if (got != md5_want) {
        return Status::Corruption("BadDigest: MD5 of the bytes received (" + got +
                                  ") differs from the ETag " + md5_want + " (" + std::string(what) +
                                  ")");
      }
    }
    return Status::Ok();
  }
};

bool IsHexMd5(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

// Reads up to `want` bytes (fewer only at the end of the source).
Result<size_t> Fill(ByteSource& src, std::string& buf, size_t want) {
  size_t got = buf.size();
  buf.resize(want);
  while (got < want) {
    auto r = src.Read(buf.data() + got, want - got);
    if (!r.ok()) {
      buf.resize(got);
      return r.error();
    }
    if (*r == 0) break;
    got += *r;
  }
  buf.resize(got);
  return got;
}

}  // namespace

class S3ObjectStore final : public ObjectStore {
 public:
  S3ObjectStore(std::shared_ptr<S3Client> client, std::string bucket, std::string prefix)
      : client_(std::move(client)),
        s3_(*client_->impl_),
        bucket_(std::move(bucket)),
        prefix_(std::move(prefix)) {}

  std::string url() const override {
    std::string u = "s3://" + bucket_;
    if (!prefix_.empty()) u += "/" + prefix_;
    std::string q;
    if (!s3_.options.endpoint.empty()) AddParam(q, "endpoint", s3_.options.endpoint);
    AddParam(q, "region", s3_.options.region);
    if (s3_.options.path_style)
      AddParam(q, "path_style", *s3_.options.path_style ? "true" : "false");
    return u + "?" + q;
  }

  Result<ObjectInfo> Put(std::string_view key, ByteSource& body,
                         const WriteOptions& options) override {
    const std::string full = Full(key);
    auto* rewindable = dynamic_cast<RewindableSource*>(&body);
    if (options.size && rewindable != nullptr && *options.size <= s3_.options.multipart_threshold) {
      http::HeaderList h;
      S3Client::Impl::AddWriteHeaders(h, options, /*conditions=*/true);
      STRATA_ASSIGN_OR_RETURN(auto r, s3_.SendPut("PutObject", bucket_, full, "", std::move(h), {},
                                                  &body, *options.size, options.checksum));
      return MakeInfo(key, *options.size, r, options);
    }
    return PutBuffered(key, body, options);
  }

  Result<ObjectInfo> PutBytes(std::string_view key, std::string_view data,
                              const WriteOptions& options) override {
    if (options.size && *options.size != data.size()) {
      return Status::InvalidArgument("PutBytes: size says " + std::to_string(*options.size) +
                                     " bytes but the data has " + std::to_string(data.size()));
    }
    if (data.size() <= s3_.options.multipart_threshold) return PutMemory(key, data, options);
    // Multipart over views of the caller's bytes: no copy.
    const uint64_t part = std::max<uint64_t>(s3_.options.part_size, 5ull << 20);
    return Multipart(
        key, options,
        [&, off = uint64_t{0}](std::string& buf, std::string_view* view) mutable -> Status {
          (void)buf;
          *view = off < data.size() ? data.substr(off, std::min<uint64_t>(part, data.size() - off))
                                    : std::string_view();
          off += view->size();
          return Status::Ok();
        });
  }

  Status Get(std::string_view key, const ReadOptions& options, const ByteSink& sink,
             ObjectInfo* info) override {
    const std::string full = Full(key);
    if (options.length && *options.length == 0) {
      STRATA_ASSIGN_OR_RETURN(ObjectInfo i, s3_.Head(bucket_, full, options.if_match));
      if (info != nullptr) *info = Relative(std::move(i));
      return Status::Ok();
    }
    const bool whole = options.offset == 0 && !options.length;
    std::optional<uint64_t> end;  // exclusive
    if (options.length) end = options.offset + *options.length;
    uint64_t pos = options.offset;
    std::optional<std::string> pin = options.if_match;  // If-Match of every request
    const bool user_pin = options.if_match.has_value();
    Verifier verify;
    bool first = true;
    Status last;
    const int max_attempts = std::max(1, s3_.options.retry.max_attempts);
    int attempt = 0;
    for (;;) {
      if (attempt > 0) {
        if (attempt >= max_attempts) {
          return WithSuffix(last, " (gave up after " + std::to_string(max_attempts) + " attempts)");
        }
        s3_.retries.fetch_add(1, std::memory_order_relaxed);
        s3_.Backoff(attempt);
      }
      ++attempt;
      S3Client::Impl::Call c;
      c.op = "GetObject";
      c.method = "GET";
      c.bucket = bucket_;
      c.key = full;
      c.has_key = true;
      if (pos > 0 || end) {
        std::string range = "bytes=" + std::to_string(pos) + "-";
        if (end) range += std::to_string(*end - 1);
        c.headers.emplace_back("Range", range);
      }
      if (pin) c.headers.emplace_back("If-Match", *pin == "*" ? "*" : QuoteETag(*pin));
      if (whole && first && s3_.options.verify_checksum) {
        c.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
      }
      auto r = s3_.SendOnce(c, nullptr);
      if (!r.ok()) {
        last = r.error();
        if (IsTransport(last)) continue;
        return last;
      }
      http::ClientResponse& resp = **r;
      if (resp.status() == 416 && first) {
        // The range starts at or past the end: no bytes (the interface's rule).
        (void)resp.ReadAll(kMaxErrorBody);
        STRATA_ASSIGN_OR_RETURN(ObjectInfo i, s3_.Head(bucket_, full, options.if_match));
        if (options.offset < i.size) {
          return Status::InvalidArgument("InvalidRange: offset " + std::to_string(options.offset) +
                                         " of \"" + std::string(key) + "\" was refused");
        }
        if (info != nullptr) *info = Relative(std::move(i));
        return Status::Ok();
      }
      if (resp.status() < 200 || resp.status() >= 300) {
        bool retry = false;
        Status s = s3_.ErrorFrom(resp, c, &retry);
        if (resp.status() == 412 && !first && !user_pin) {
          return Status::Conflict("\"" + std::string(key) +
                                  "\" was replaced while it was being "
                                  "read; read it again (" +
                                  s.message() + ")");
        }
        last = s;
        if (retry) continue;
        return s;
      }
      if (first) {
        if ((pos > 0 || end) && resp.status() != 206) {
          return Status::Internal("the server ignored the Range of " + c.op + " " + full);
        }
        ObjectInfo i = s3_.InfoFromHeaders(resp, full);
        if (!pin && !i.etag.empty()) pin = i.etag;
        if (whole && resp.status() == 200) {
          if (s3_.options.verify_checksum && !i.checksum.empty() &&
              i.checksum.find('-') == std::string::npos &&
              !IEquals(resp.Header("x-amz-checksum-type").value_or(""), "COMPOSITE")) {
            verify.crc_alg = i.checksum_algorithm;
            verify.crc = Hasher::Create(i.checksum_algorithm);
            verify.crc_want = i.checksum;
          }
          const auto md5_check = s3_.options.verify_md5;
          if ((md5_check == S3Options::EtagCheck::kAlways ||
               (md5_check == S3Options::EtagCheck::kWhenNoChecksum && !verify.crc)) &&
              IsHexMd5(i.etag) && !resp.Header("x-amz-server-side-encryption-customer-algorithm") &&
              !IEquals(resp.Header("x-amz-server-side-encryption").value_or(""), "aws:kms")) {
            verify.md5 = Hasher::Create(ChecksumAlgorithm::kMd5);
            verify.md5_want = ToLower(i.etag);
          }
        }
        if (info != nullptr) *info = Relative(std::move(i));
        first = false;
      } else {
        s3_.resumed_gets.fetch_add(1, std::memory_order_relaxed);
      }
      bool sink_failed = false;
      const uint64_t before = pos;
      Status s = resp.ReadTo([&](const char* p, size_t n) -> Status {
        verify.Update(p, n);
        pos += n;
        Status st = sink(p, n);
        if (!st.ok()) sink_failed = true;
        return st;
      });
      if (s.ok()) {
        if (end && pos < *end && resp.status() == 206) {
          // The object ended before the range: that is all there is.
        }
        return verify.Check("GET s3://" + bucket_ + "/" + full);
      }
      if (sink_failed || !IsTransport(s)) return s;
      last = s;
      if (pos > before) attempt = 1;  // progress: the next resume starts a fresh budget
    }
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_ASSIGN_OR_RETURN(ObjectInfo i, s3_.Head(bucket_, Full(key), std::nullopt));
    return Relative(std::move(i));
  }

  Status Delete(std::string_view key) override {
    S3Client::Impl::Call c;
    c.op = "DeleteObject";
    c.method = "DELETE";
    c.bucket = bucket_;
    c.key = Full(key);
    c.has_key = true;
    return s3_.Execute(c, nullptr);
  }

  Result<std::vector<Status>> DeleteMany(const std::vector<std::string>& keys) override {
    std::vector<Status> out(keys.size());
    for (size_t start = 0; start < keys.size(); start += 1000) {
      const size_t stop = std::min(keys.size(), start + 1000);
      std::string xml =
          "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
      std::map<std::string, std::vector<size_t>> index;  // full key -> positions
      for (size_t i = start; i < stop; ++i) {
        const std::string full = Full(keys[i]);
        if (!IsValidUtf8(full) || std::any_of(full.begin(), full.end(), [](char ch) {
              return static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' &&
                     ch != '\r';
            })) {
          out[i] = Delete(keys[i]);  // not expressible in XML 1.0
          continue;
        }
        index[full].push_back(i);
        xml += "<Object><Key>" + XmlEscape(full) + "</Key></Object>";
      }
      xml += "</Delete>";
      if (index.empty()) continue;
      S3Client::Impl::Call c;
      c.op = "DeleteObjects";
      c.method = "POST";
      c.bucket = bucket_;
      c.query = "delete";
      c.body = xml;
      c.headers.emplace_back("Content-Type", "application/xml");
      c.headers.emplace_back("Content-MD5", Base64Encode(Md5(xml)));
      STRATA_RETURN_IF_ERROR(s3_.Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
        DeleteResultXml x;
        STRATA_RETURN_IF_ERROR(s3_.ReadXml(resp, c, retry, ParseDeleteResultXml, &x));
        for (const S3XmlError& e : x.errors) {
          Status st(CodeForS3Error(500, e.code),
                    e.code + ": " + e.message + " (DELETE s3://" + bucket_ + "/" + e.key + ")");
          if (auto it = index.find(e.key); it != index.end()) {
            for (size_t i : it->second) out[i] = st;
          }
        }
        return Status::Ok();
      }));
    }
    return out;
  }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        int max_keys) override {
    S3Client::Impl::Call c;
    c.op = "ListObjectsV2";
    c.method = "GET";
    c.bucket = bucket_;
    AddParam(c.query, "list-type", "2");
    AddParam(c.query, "encoding-type", "url");
    AddParam(c.query, "max-keys", std::to_string(std::clamp(max_keys, 1, 1000)));
    const std::string full_prefix = Full(prefix);
    if (!full_prefix.empty()) AddParam(c.query, "prefix", full_prefix);
    if (!delimiter.empty()) AddParam(c.query, "delimiter", delimiter);
    if (!token.empty()) AddParam(c.query, "continuation-token", token);
    ListPage page;
    STRATA_RETURN_IF_ERROR(s3_.Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
      ListObjectsXml x;
      STRATA_RETURN_IF_ERROR(s3_.ReadXml(resp, c, retry, ParseListObjectsXml, &x));
      page = ListPage();
      page.objects.reserve(x.objects.size());
      for (ObjectInfo& i : x.objects) page.objects.push_back(Relative(std::move(i)));
      for (const std::string& p : x.common_prefixes) {
        page.common_prefixes.push_back(p.substr(std::min(prefix_.size(), p.size())));
      }
      if (x.truncated) {
        page.next_token = std::move(x.next_token);
        if (page.next_token.empty()) {
          return Status::IOError(
              "ListObjectsV2 response is truncated but has no "
              "NextContinuationToken");
        }
      }
      return Status::Ok();
    }));
    return page;
  }

  Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& options) override {
    STRATA_ASSIGN_OR_RETURN(std::string id, s3_.CreateMultipart(bucket_, Full(key), options));
    std::lock_guard<std::mutex> lock(mu_);
    uploads_[id] = options;
    return id;
  }

  Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                  ByteSource& body, uint64_t size) override {
    const ChecksumAlgorithm alg = UploadChecksum(upload_id);
    std::string query;
    AddParam(query, "partNumber", std::to_string(part_number));
    AddParam(query, "uploadId", upload_id);
    STRATA_ASSIGN_OR_RETURN(auto r, s3_.SendPut("UploadPart", bucket_, Full(key), std::move(query),
                                                {}, {}, &body, size, alg));
    return UploadedPart{part_number, r.etag, size, r.checksum};
  }

  Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts) override {
    std::optional<WriteOptions> o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = uploads_.find(std::string(upload_id)); it != uploads_.end()) o = it->second;
    }
    const ChecksumAlgorithm alg = o ? o->checksum : ChecksumAlgorithm::kCrc32c;
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, s3_.CompleteMultipart(bucket_, Full(key), upload_id,
                                                                   parts, alg, o ? &*o : nullptr));
    {
      std::lock_guard<std::mutex> lock(mu_);
      uploads_.erase(std::string(upload_id));
    }
    if (o) {
      info.content_type = o->content_type;
      info.user_meta = o->user_meta;
    }
    return Relative(std::move(info));
  }

  Status AbortMultipart(std::string_view key, std::string_view upload_id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      uploads_.erase(std::string(upload_id));
    }
    return s3_.AbortMultipart(bucket_, Full(key), upload_id);
  }

  Result<std::vector<UploadedPart>> ListParts(std::string_view key,
                                              std::string_view upload_id) override {
    std::vector<UploadedPart> out;
    std::string marker;
    for (;;) {
      S3Client::Impl::Call c;
      c.op = "ListParts";
      c.method = "GET";
      c.bucket = bucket_;
      c.key = Full(key);
      c.has_key = true;
      AddParam(c.query, "uploadId", upload_id);
      if (!marker.empty()) AddParam(c.query, "part-number-marker", marker);
      bool truncated = false;
      STRATA_RETURN_IF_ERROR(s3_.Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
        ListPartsXml x;
        STRATA_RETURN_IF_ERROR(s3_.ReadXml(resp, c, retry, ParseListPartsXml, &x));
        out.insert(out.end(), x.parts.begin(), x.parts.end());
        truncated = x.truncated;
        marker = std::move(x.next_marker);
        return Status::Ok();
      }));
      if (!truncated || marker.empty()) return out;
    }
  }

  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override {
    STRATA_ASSIGN_OR_RETURN(ObjectInfo i,
                            s3_.CopyObject(bucket_, Full(src_key), bucket_, Full(dst_key), {}));
    return Relative(std::move(i));
  }

  Status Rename(std::string_view src_key, std::string_view dst_key) override {
    // Strata's server (and S3 Express directory buckets) have RenameObject.
    std::optional<bool> use = s3_.options.rename_object;
    if (!use) {
      if (s3_.strata_server.load() < 0) (void)client_->HeadBucket(bucket_);
      use = s3_.strata_server.load() == 1;
    }
    if (!*use) {
      return Status::NotSupported("atomic rename is not supported by " + url() +
                                  " (RenameObject is only used against Strata's server, or with "
                                  "rename_object=true); copy and delete instead");
    }
    S3Client::Impl::Call c;
    c.op = "RenameObject";
    c.method = "PUT";
    c.bucket = bucket_;
    c.key = Full(dst_key);
    c.has_key = true;
    c.query = "renameObject";
    c.headers.emplace_back("x-amz-rename-source",
                           "/" + bucket_ + "/" + UriEncode(Full(src_key), true));
    Status s = s3_.Execute(c, nullptr);
    if (s.code() == StatusCode::kNotSupported ||
        (s.code() == StatusCode::kInvalidArgument &&
         s.message().find("renameObject") != std::string::npos)) {
      return Status::NotSupported("atomic rename is not supported by this S3 service (" +
                                  s.message() + "); copy and delete instead");
    }
    return s;
  }

 private:
  std::string Full(std::string_view key) const { return prefix_ + std::string(key); }

  ObjectInfo Relative(ObjectInfo i) const {
    i.key = i.key.substr(std::min(prefix_.size(), i.key.size()));
    return i;
  }

  ChecksumAlgorithm UploadChecksum(std::string_view upload_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uploads_.find(std::string(upload_id));
    // An upload created elsewhere: CRC32C, this client's default.
    return it != uploads_.end() ? it->second.checksum : ChecksumAlgorithm::kCrc32c;
  }

  ObjectInfo MakeInfo(std::string_view key, uint64_t size, const S3Client::Impl::PutResult& r,
                      const WriteOptions& o) const {
    ObjectInfo i;
    i.key = std::string(key);
    i.size = size;
    i.etag = r.etag;
    i.mtime_ns = NowUnixNanos();
    i.content_type = o.content_type;
    for (const auto& [k, v] : o.user_meta) i.user_meta[ToLower(k)] = v;
    i.checksum_algorithm = r.alg;
    i.checksum = r.checksum;
    return i;
  }

  Result<ObjectInfo> PutMemory(std::string_view key, std::string_view data,
                               const WriteOptions& options) {
    http::HeaderList h;
    S3Client::Impl::AddWriteHeaders(h, options, /*conditions=*/true);
    STRATA_ASSIGN_OR_RETURN(auto r, s3_.SendPut("PutObject", bucket_, Full(key), "", std::move(h),
                                                data, nullptr, data.size(), options.checksum));
    return MakeInfo(key, data.size(), r, options);
  }

  // Reads the body a part at a time: one PUT when it fits in one part, else a
  // multipart upload whose parts are each sent (and retried) from memory.
  Result<ObjectInfo> PutBuffered(std::string_view key, ByteSource& body,
                                 const WriteOptions& options) {
    const size_t part = static_cast<size_t>(std::max<uint64_t>(s3_.options.part_size, 5ull << 20));
    std::string carry;  // one byte read ahead, to tell a full last part from more to come
    bool eof = false;
    auto next = [&](std::string& buf) -> Status {
      buf = std::move(carry);
      carry.clear();
      if (eof) return Status::Ok();
      STRATA_ASSIGN_OR_RETURN(size_t got, Fill(body, buf, part));
      if (got < part) {
        eof = true;
        return Status::Ok();
      }
      carry.resize(1);
      STRATA_ASSIGN_OR_RETURN(size_t more, body.Read(carry.data(), 1));
      carry.resize(more);
      if (more == 0) eof = true;
      return Status::Ok();
    };
    std::string first;
    STRATA_RETURN_IF_ERROR(next(first));
    if (eof && carry.empty()) {
      if (options.size && *options.size != first.size()) {
        return Status::InvalidArgument("body has " + std::to_string(first.size()) +
                                       " bytes; its size said " + std::to_string(*options.size));
      }
      return PutMemory(key, first, options);
    }
    bool first_given = false;
    return Multipart(key, options, [&](std::string& buf, std::string_view* view) -> Status {
      if (!first_given) {
        first_given = true;
        buf.swap(first);
      } else {
        STRATA_RETURN_IF_ERROR(next(buf));
      }
      *view = buf;
      return Status::Ok();
    });
  }

  // A multipart upload of the parts next_part yields (an empty view ends it);
  // aborted on failure.
  Result<ObjectInfo> Multipart(
      std::string_view key, const WriteOptions& options,
      const std::function<Status(std::string& buf, std::string_view* view)>& next_part) {
    const std::string full = Full(key);
    STRATA_ASSIGN_OR_RETURN(std::string id, s3_.CreateMultipart(bucket_, full, options));
    auto abort = [&](Status s) -> Status {
      Status a = s3_.AbortMultipart(bucket_, full, id);
      if (!a.ok())
        kLog.Warn("could not abort multipart upload {} of {}: {}", id, full, a.ToString());
      return s;
    };
    std::vector<UploadedPart> parts;
    std::string buf;
    uint64_t total = 0;
    for (;;) {
      std::string_view view;
      if (Status s = next_part(buf, &view); !s.ok()) return abort(s);
      if (view.empty()) break;
      if (parts.size() == 10000) {
        return abort(
            Status::InvalidArgument("TooManyParts: the body needs more than 10000 parts; "
                                    "raise part_size"));
      }
      std::string query;
      const int number = static_cast<int>(parts.size() + 1);
      AddParam(query, "partNumber", std::to_string(number));
      AddParam(query, "uploadId", id);
      auto r = s3_.SendPut("UploadPart", bucket_, full, std::move(query), {}, view, nullptr,
                           view.size(), options.checksum);
      if (!r.ok()) return abort(r.error());
      parts.push_back(UploadedPart{number, r->etag, view.size(), r->checksum});
      total += view.size();
    }
    if (options.size && *options.size != total) {
      return abort(Status::InvalidArgument("body has " + std::to_string(total) +
                                           " bytes; its size said " +
                                           std::to_string(*options.size)));
    }
    auto done = s3_.CompleteMultipart(bucket_, full, id, parts, options.checksum, &options);
    if (!done.ok()) return abort(done.error());
    ObjectInfo i = Relative(std::move(*done));
    i.content_type = options.content_type;
    for (const auto& [k, v] : options.user_meta) i.user_meta[ToLower(k)] = v;
    return i;
  }

  std::shared_ptr<S3Client> client_;  // keeps s3_ alive
  S3Client::Impl& s3_;
  const std::string bucket_;
  const std::string prefix_;
  std::mutex mu_;
  std::map<std::string, WriteOptions> uploads_;  // upload id -> options; guarded by mu_
};

std::unique_ptr<ObjectStore> S3Client::OpenBucket(std::string bucket, std::string prefix) {
  return std::make_unique<S3ObjectStore>(shared_from_this(), std::move(bucket), std::move(prefix));
}

}  // namespace strata::objstore
