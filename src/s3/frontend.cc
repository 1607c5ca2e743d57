#include <strata/s3/frontend.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <unordered_map>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>

#include "s3/aws_chunked.h"
#include "s3/errors.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace strata::s3 {

using objstore::ObjectMeta;
using objstore::PutOptions;

namespace {

constexpr log::Logger kLog("s3");
constexpr uint64_t kMaxKeyBytes = 1024;

bool IsIpv4(std::string_view s) {
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace

bool IsValidBucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  if (name.find("..") != std::string_view::npos || name.find(".-") != std::string_view::npos ||
      name.find("-.") != std::string_view::npos)
    return false;
  if (IsIpv4(name)) return false;
  if (StartsWith(name, "xn--") || StartsWith(name, "sthree-")) return false;
  if (name.size() >= 8 && name.substr(name.size() - 8) == "-s3alias") return false;
  if (name.size() >= 6 && name.substr(name.size() - 6) == "--ol-s3") return false;
  return true;
}

namespace {

// Per-request state.
struct Ctx {
  Ctx(http::Request& r, http::ResponseWriter& wr, std::string id)
      : req(r), w(wr), request_id(std::move(id)) {}
  http::Request& req;
  http::ResponseWriter& w;
  std::string request_id;
  std::string bucket;
  std::string key;
  bool has_key = false;
  std::multimap<std::string, std::string> query;  // decoded
  AuthResult auth;
  const User* user = nullptr;  // nullptr: anonymous
  std::string op = "Unknown";

  bool Has(std::string_view name) const { return query.find(std::string(name)) != query.end(); }
  std::string Q(std::string_view name) const {
    auto it = query.find(std::string(name));
    return it == query.end() ? std::string() : it->second;
  }
  std::optional<std::string_view> H(std::string_view name) const { return req.Header(name); }
  std::string Resource() const { return has_key ? "/" + bucket + "/" + key : "/" + bucket; }
};

std::string Quote(std::string_view etag) { return "\"" + std::string(etag) + "\""; }

std::string Unquote(std::string_view v) {
  v = Trim(v);
  if (StartsWith(v, "W/")) v.remove_prefix(2);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return std::string(v);
}

// ETag lists in If-Match / If-None-Match: `"a", "b"` or `*`.
bool EtagListMatches(std::string_view header, std::string_view etag) {
  for (std::string_view part : Split(header, ',')) {
    std::string t = Unquote(part);
    if (t == "*" || t == etag) return true;
  }
  return false;
}

// The request body as the engine's ByteSource, decoding aws-chunked framing and
// checking x-amz-content-sha256 when the payload is signed.
class BodySource final : public objstore::ByteSource {
 public:
  BodySource(http::Request& req, const AuthResult& auth, bool aws_chunked)
      : req_(req), auth_(auth) {
    if (aws_chunked) {
      chunked_ = std::make_unique<AwsChunkedDecoder>(
          [this](char* p, size_t n) { return req_.ReadBody(p, n); }, auth_);
    } else if (auth_.payload_mode == PayloadMode::kSignedHex) {
      sha_ = Hasher::Create(ChecksumAlgorithm::kSha256);
    }
  }

  Result<size_t> Read(char* buf, size_t n) override {
    if (done_) return size_t{0};
    Result<size_t> r = chunked_ ? chunked_->Read(buf, n) : req_.ReadBody(buf, n);
    if (!r.ok()) {
      const Status& st = r.error();
      if (st.code() == StatusCode::kIOError)
        return MakeError("IncompleteBody", "You did not provide the number of bytes specified by "
                                           "the Content-Length HTTP header (" + st.message() + ")");
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

  uint64_t total() const { return total_; }
  // Trailer value by lower-case name, after the body ended.
  std::optional<std::string> Trailer(std::string_view name) const {
    if (!chunked_) return std::nullopt;
    for (const auto& [k, v] : chunked_->trailers())
      if (IEquals(k, name)) return v;
    return std::nullopt;
  }

 private:
  http::Request& req_;
  const AuthResult& auth_;
  std::unique_ptr<AwsChunkedDecoder> chunked_;
  std::unique_ptr<Hasher> sha_;
  bool done_ = false;
  uint64_t total_ = 0;
};

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

struct ByteRange {
  uint64_t start = 0;
  uint64_t length = 0;
};

// Parses a single "bytes=" range against size. nullopt: header absent or ignorable
// (multiple ranges -> whole object, as S3). Error: unsatisfiable.
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

// The algorithms a client may send as x-amz-checksum-* headers or trailers.
constexpr ChecksumAlgorithm kHeaderChecksums[] = {
    ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme,
    ChecksumAlgorithm::kSha1, ChecksumAlgorithm::kSha256};

const char* const kStoredHeaders[] = {"content-encoding", "content-disposition", "cache-control",
                                      "expires", "content-language"};

}  // namespace

struct Frontend::Impl {
  objstore::LocalEngine* engine;
  FrontendOptions opts;
  std::unordered_map<std::string, const User*> users_by_key;
  std::atomic<uint64_t> request_seq{0};
  uint64_t id_prefix = 0;
  metrics::Histogram* latency = nullptr;
  metrics::Counter* bytes_in = nullptr;
  metrics::Counter* bytes_out = nullptr;
  std::mutex counters_mu;
  std::map<std::string, metrics::Counter*, std::less<>> counters;  // guarded by counters_mu

  void Handle(http::Request& req, http::ResponseWriter& w);
  Status Route(Ctx& c);
  void SendError(Ctx& c, const Status& st, std::string_view fallback_not_found);
  void SendXml(Ctx& c, int status, const std::string& xml);
  metrics::Counter& RequestCounter(std::string_view op, int status);
  metrics::Counter& RequestCounterSlow(std::string_view op, int status);

  Status Authenticate(Ctx& c);
  Status Authorize(Ctx& c, bool write);

  // Bucket operations.
  Status ListBuckets(Ctx& c);
  Status CreateBucket(Ctx& c);
  Status DeleteBucket(Ctx& c);
  Status HeadBucket(Ctx& c);
  Status ListObjects(Ctx& c, bool v2);
  Status ListUploads(Ctx& c);
  Status DeleteObjects(Ctx& c);
  Status BucketAcl(Ctx& c, bool put);
  // Object operations.
  Status PutObject(Ctx& c);
  Status CopyObject(Ctx& c);
  Status RenameObject(Ctx& c);
  Status GetObject(Ctx& c, bool head);
  Status DeleteObject(Ctx& c);
  Status Tagging(Ctx& c);
  Status CreateUpload(Ctx& c);
  Status UploadPart(Ctx& c);
  Status CompleteUpload(Ctx& c);
  Status AbortUpload(Ctx& c);
  Status ListParts(Ctx& c);

  // Helpers.
  Result<PutOptions> PutOptionsFromHeaders(Ctx& c);
  Status SetupChecksum(Ctx& c, PutOptions& o, BodySource& body, bool single_part);
  Result<std::string> ReadXmlBody(Ctx& c);
  Status CheckBucket(Ctx& c);
  void AddObjectHeaders(Ctx& c, const ObjectMeta& m, bool with_checksum);
};

Frontend::Frontend(objstore::LocalEngine* engine, FrontendOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->engine = engine;
  impl_->opts = std::move(options);
  for (const User& u : impl_->opts.users) impl_->users_by_key[u.access_key] = &u;
  std::random_device rd;
  impl_->id_prefix = (uint64_t{rd()} << 32) ^ rd();
  auto& reg = metrics::Registry::Global();
  impl_->latency = &reg.GetHistogram("strata_s3_request_duration_seconds",
                                     "S3 request latency, from parsed head to last byte");
  impl_->bytes_in = &reg.GetCounter("strata_s3_received_bytes_total", "S3 object bytes received");
  impl_->bytes_out = &reg.GetCounter("strata_s3_sent_bytes_total", "S3 response bytes sent");
}

Frontend::~Frontend() = default;

void Frontend::Handle(http::Request& req, http::ResponseWriter& w) { impl_->Handle(req, w); }

void Frontend::HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) {
  std::string id = fmt::format("{:016X}{:08X}", impl_->id_prefix,
                               impl_->request_seq.fetch_add(1) & 0xffffffff);
  S3Error e{status, status == 431 ? "RequestHeaderSectionTooLarge" : "InvalidRequest",
            std::string(message)};
  w.AddHeader("x-amz-request-id", id);
  w.AddHeader("x-amz-id-2", id);
  w.AddHeader("Content-Type", "application/xml");
  (void)w.Send(ErrorXml(e, "", id));
  impl_->RequestCounter("Malformed", status).Inc();
}

metrics::Counter& Frontend::Impl::RequestCounter(std::string_view op, int status) {
  // Per-thread memo: the hot path formats no label string and takes no lock.
  thread_local std::map<std::pair<std::string, int>, metrics::Counter*, std::less<>> memo;
  thread_local const Impl* memo_owner = nullptr;
  if (memo_owner != this) {
    memo.clear();
    memo_owner = this;
  }
  std::pair<std::string, int> mk(op, status);
  if (auto it = memo.find(mk); it != memo.end()) return *it->second;
  metrics::Counter& c = RequestCounterSlow(op, status);
  memo.emplace(std::move(mk), &c);
  return c;
}

metrics::Counter& Frontend::Impl::RequestCounterSlow(std::string_view op, int status) {
  std::string labels = fmt::format("op=\"{}\",code=\"{}\"", op, status);
  std::lock_guard<std::mutex> lock(counters_mu);
  auto it = counters.find(labels);
  if (it != counters.end()) return *it->second;
  auto& c = metrics::Registry::Global().GetCounter("strata_s3_requests_total",
                                                   "S3 requests by operation and HTTP status",
                                                   labels);
  counters.emplace(labels, &c);
  return c;
}

void Frontend::Impl::Handle(http::Request& req, http::ResponseWriter& w) {
  auto t0 = std::chrono::steady_clock::now();
  Ctx c(req, w, fmt::format("{:016X}{:08X}", id_prefix, request_seq.fetch_add(1) & 0xffffffff));
  w.AddHeader("x-amz-request-id", c.request_id);
  w.AddHeader("x-amz-id-2", c.request_id);
  Status st = Route(c);
  if (!st.ok()) {
    // A missing bucket under an object operation is NoSuchBucket, not NoSuchKey
    // (looked up on the error path only).
    std::string_view nf =
        c.has_key && (c.bucket.empty() || engine->GetBucket(c.bucket).ok()) ? "NoSuchKey" : "NoSuchBucket";
    if (c.op == "AbortMultipartUpload" || c.op == "UploadPart" || c.op == "ListParts" ||
        c.op == "CompleteMultipartUpload")
      nf = "NoSuchUpload";
    SendError(c, st, nf);
  }
  latency->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  bytes_out->Inc(w.bytes_sent());
  RequestCounter(c.op, w.status()).Inc();
}

void Frontend::Impl::SendError(Ctx& c, const Status& st, std::string_view fallback_not_found) {
  S3Error e = ToS3Error(st, fallback_not_found);
  if (c.w.headers_sent()) {
    // Mid-stream failure (e.g. a corrupt block): the only honest signal left is
    // to cut the connection so the client sees a short body.
    kLog.Error("{} {} failed after the response started: {}", c.op, c.Resource(), st.ToString());
    c.w.CloseAfter();
    return;
  }
  if (e.http_status >= 500) kLog.Error("{} {}: {}", c.op, c.Resource(), st.ToString());
  c.w.SetStatus(e.http_status);
  if (c.req.method == "HEAD") {
    c.w.AddHeader("x-amz-error-code", e.code);
    (void)c.w.Send("");
    return;
  }
  c.w.AddHeader("Content-Type", "application/xml");
  // The request body may be unread (e.g. auth failed on a PUT): don't make the
  // client push it all just to see the error.
  if (!c.req.body_done()) c.w.CloseAfter();
  (void)c.w.Send(ErrorXml(e, c.Resource(), c.request_id));
}

void Frontend::Impl::SendXml(Ctx& c, int status, const std::string& xml) {
  c.w.SetStatus(status);
  c.w.AddHeader("Content-Type", "application/xml");
  (void)c.w.Send(xml);
}

Status Frontend::Impl::Authenticate(Ctx& c) {
  SigV4Request sr;
  sr.method = c.req.method;
  sr.path = c.req.path;
  sr.query = c.req.query;
  sr.headers.reserve(c.req.headers.size());
  for (const auto& h : c.req.headers) sr.headers.emplace_back(h.name, h.value);
  sr.now_ns = NowUnixNanos();
  auto lookup = [this](std::string_view ak) -> std::optional<std::string> {
    auto it = users_by_key.find(std::string(ak));
    if (it == users_by_key.end()) return std::nullopt;
    return it->second->secret_key;
  };
  STRATA_ASSIGN_OR_RETURN(c.auth, VerifySigV4(sr, lookup, opts.max_clock_skew_ns));
  if (c.auth.payload_mode != PayloadMode::kAnonymous) {
    auto it = users_by_key.find(c.auth.access_key);
    if (it == users_by_key.end())
      return MakeError("InvalidAccessKeyId",
                       "The AWS Access Key Id you provided does not exist in our records.");
    c.user = it->second;
  }
  return Status::Ok();
}

// Admins see everything; other users own their buckets; anonymous callers may
// read public-read buckets.
Status Frontend::Impl::Authorize(Ctx& c, bool write) {
  if (c.user != nullptr && c.user->admin) return Status::Ok();
  if (c.bucket.empty()) {
    if (c.user == nullptr) return MakeError("AccessDenied", "Anonymous access is not allowed; sign the request");
    return Status::Ok();
  }
  auto b = engine->GetBucket(c.bucket);
  if (!b.ok()) {
    if (c.user == nullptr) return MakeError("AccessDenied", "Access Denied");
    return Status::Ok();  // let the operation report NoSuchBucket (or create it)
  }
  if (c.user != nullptr && b->owner == c.user->access_key) return Status::Ok();
  if (!write && b->public_read) return Status::Ok();
  return MakeError("AccessDenied", c.user == nullptr
                                       ? "Anonymous access to this bucket is not allowed; sign the request"
                                       : "Access Denied: the bucket belongs to another user");
}

Status Frontend::Impl::CheckBucket(Ctx& c) {
  auto b = engine->GetBucket(c.bucket);
  if (!b.ok())
    return MakeError("NoSuchBucket", "The specified bucket does not exist");
  return Status::Ok();
}

Status Frontend::Impl::Route(Ctx& c) {
  http::Request& req = c.req;
  // Query parameters.
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
  // Bucket and key: virtual-host style first, then path style.
  auto path = UriDecode(req.path, false);
  if (!path || path->empty() || (*path)[0] != '/')
    return MakeError("InvalidRequest", "malformed request path");
  std::string_view p(*path);
  p.remove_prefix(1);
  if (auto host = req.Header("host")) {
    std::string_view h = *host;
    if (size_t colon = h.rfind(':'); colon != std::string_view::npos && h.find(']') == std::string_view::npos)
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

  STRATA_RETURN_IF_ERROR(Authenticate(c));

  std::string_view m = req.method;
  if (c.bucket.empty()) {
    c.op = "ListBuckets";
    if (m != "GET") return MakeError("MethodNotAllowed", "The specified method is not allowed against this resource.");
    STRATA_RETURN_IF_ERROR(Authorize(c, false));
    return ListBuckets(c);
  }
  if (c.has_key && c.key.size() > kMaxKeyBytes)
    return MakeError("KeyTooLongError", "Your key is too long (the limit is 1024 bytes)");
  if (c.has_key && !IsValidUtf8(c.key))
    return MakeError("InvalidArgument", "object keys must be valid UTF-8");

  if (!c.has_key) {
    bool write = m != "GET" && m != "HEAD";
    if (m == "PUT" && !c.Has("acl") && !c.Has("versioning") && !c.Has("tagging") &&
        !c.Has("policy") && !c.Has("cors") && !c.Has("lifecycle")) {
      c.op = "CreateBucket";
      if (c.user == nullptr) return MakeError("AccessDenied", "Anonymous users cannot create buckets");
      return CreateBucket(c);
    }
    STRATA_RETURN_IF_ERROR(Authorize(c, write));
    if (m == "GET" || m == "HEAD") {
      if (m == "HEAD") {
        c.op = "HeadBucket";
        return HeadBucket(c);
      }
      if (c.Has("location")) {
        c.op = "GetBucketLocation";
        STRATA_RETURN_IF_ERROR(CheckBucket(c));
        std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint "
                        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" +
                        (opts.region == "us-east-1" ? std::string() : XmlEscape(opts.region)) +
                        "</LocationConstraint>";
        SendXml(c, 200, x);
        return Status::Ok();
      }
      if (c.Has("versioning")) {
        c.op = "GetBucketVersioning";
        STRATA_RETURN_IF_ERROR(CheckBucket(c));
        SendXml(c, 200, XmlWriter("VersioningConfiguration").Finish());
        return Status::Ok();
      }
      if (c.Has("uploads")) {
        c.op = "ListMultipartUploads";
        return ListUploads(c);
      }
      if (c.Has("acl")) {
        c.op = "GetBucketAcl";
        return BucketAcl(c, false);
      }
      struct Absent {
        const char* param;
        const char* op;
        const char* code;
        const char* msg;
      };
      static const Absent kAbsent[] = {
          {"policy", "GetBucketPolicy", "NoSuchBucketPolicy", "The bucket policy does not exist"},
          {"cors", "GetBucketCors", "NoSuchCORSConfiguration", "The CORS configuration does not exist"},
          {"lifecycle", "GetBucketLifecycle", "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist"},
          {"tagging", "GetBucketTagging", "NoSuchTagSet", "The TagSet does not exist"},
          {"encryption", "GetBucketEncryption", "ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found"},
          {"object-lock", "GetObjectLockConfiguration", "ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket"},
      };
      for (const Absent& a : kAbsent) {
        if (c.Has(a.param)) {
          c.op = a.op;
          STRATA_RETURN_IF_ERROR(CheckBucket(c));
          return MakeError(a.code, a.msg);
        }
      }
      if (c.Has("website") || c.Has("logging") || c.Has("notification") || c.Has("replication") ||
          c.Has("requestPayment") || c.Has("accelerate") || c.Has("ownershipControls")) {
        c.op = "GetBucketConfig";
        return MakeError("NotImplemented", "This bucket sub-resource is not supported by Strata");
      }
      c.op = c.Q("list-type") == "2" ? "ListObjectsV2" : "ListObjects";
      return ListObjects(c, c.Q("list-type") == "2");
    }
    if (m == "DELETE") {
      if (c.Has("policy") || c.Has("cors") || c.Has("lifecycle") || c.Has("tagging") ||
          c.Has("encryption")) {
        c.op = "DeleteBucketConfig";
        STRATA_RETURN_IF_ERROR(CheckBucket(c));
        c.w.SetStatus(204);
        return Status::Ok();
      }
      c.op = "DeleteBucket";
      return DeleteBucket(c);
    }
    if (m == "POST" && c.Has("delete")) {
      c.op = "DeleteObjects";
      return DeleteObjects(c);
    }
    if (m == "PUT" && c.Has("acl")) {
      c.op = "PutBucketAcl";
      return BucketAcl(c, true);
    }
    if (m == "PUT") {
      c.op = "PutBucketConfig";
      return MakeError("NotImplemented", "This bucket sub-resource is not supported by Strata");
    }
    c.op = "Bucket";
    return MakeError("MethodNotAllowed", "The specified method is not allowed against this resource.");
  }

  // Object operations.
  bool write = m != "GET" && m != "HEAD";
  STRATA_RETURN_IF_ERROR(Authorize(c, write));
  if (m == "GET" || m == "HEAD") {
    if (c.Has("uploadId")) {
      c.op = "ListParts";
      return ListParts(c);
    }
    if (c.Has("tagging")) {
      c.op = "GetObjectTagging";
      return Tagging(c);
    }
    if (c.Has("acl")) {
      c.op = "GetObjectAcl";
      STRATA_ASSIGN_OR_RETURN(ObjectMeta meta, engine->HeadObject(c.bucket, c.key));
      (void)meta;
      return BucketAcl(c, false);
    }
    c.op = m == "GET" ? "GetObject" : "HeadObject";
    return GetObject(c, m == "HEAD");
  }
  if (m == "PUT") {
    if (c.Has("tagging")) {
      c.op = "PutObjectTagging";
      return Tagging(c);
    }
    if (c.Has("acl")) {
      c.op = "PutObjectAcl";
      STRATA_RETURN_IF_ERROR(engine->HeadObject(c.bucket, c.key).status());
      SendXml(c, 200, "");
      return Status::Ok();
    }
    if (c.Has("uploadId") || c.Has("partNumber")) {
      c.op = c.H("x-amz-copy-source") ? "UploadPartCopy" : "UploadPart";
      return UploadPart(c);
    }
    if (c.Has("renameObject")) {
      c.op = "RenameObject";
      return RenameObject(c);
    }
    if (c.H("x-amz-copy-source")) {
      c.op = "CopyObject";
      return CopyObject(c);
    }
    c.op = "PutObject";
    return PutObject(c);
  }
  if (m == "DELETE") {
    if (c.Has("uploadId")) {
      c.op = "AbortMultipartUpload";
      return AbortUpload(c);
    }
    if (c.Has("tagging")) {
      c.op = "DeleteObjectTagging";
      return Tagging(c);
    }
    c.op = "DeleteObject";
    return DeleteObject(c);
  }
  if (m == "POST") {
    if (c.Has("uploads")) {
      c.op = "CreateMultipartUpload";
      return CreateUpload(c);
    }
    if (c.Has("uploadId")) {
      c.op = "CompleteMultipartUpload";
      return CompleteUpload(c);
    }
  }
  c.op = "Object";
  return MakeError("MethodNotAllowed", "The specified method is not allowed against this resource.");
}

// ---------------------------------------------------------------------------
// Buckets

Status Frontend::Impl::ListBuckets(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(auto buckets, engine->ListBuckets());
  XmlWriter x("ListAllMyBucketsResult");
  x.Open("Owner").Elem("ID", c.user->access_key).Elem("DisplayName", c.user->name).Close("Owner");
  x.Open("Buckets");
  for (const auto& b : buckets) {
    if (!c.user->admin && b.owner != c.user->access_key) continue;
    x.Open("Bucket").Elem("Name", b.name).Elem("CreationDate", FormatIso8601(b.created_ns)).Close("Bucket");
  }
  x.Close("Buckets");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::CreateBucket(Ctx& c) {
  if (!IsValidBucketName(c.bucket))
    return MakeError("InvalidBucketName",
                     "The specified bucket is not valid: names are 3-63 characters of lower-case "
                     "letters, digits, '.' and '-', starting and ending with a letter or digit");
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(std::string location, ParseLocationConstraint(body));
  (void)location;  // single-region server: any constraint is accepted
  if (auto existing = engine->GetBucket(c.bucket); existing.ok()) {
    if (existing->owner == c.user->access_key)
      return MakeError("BucketAlreadyOwnedByYou",
                       "Your previous request to create the named bucket succeeded and you already own it.");
    return MakeError("BucketAlreadyExists",
                     "The requested bucket name is not available. Please select a different name and try again.");
  }
  Status st = engine->CreateBucket(c.bucket, c.user->access_key);
  if (st.code() == StatusCode::kAlreadyExists)
    return MakeError("BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.");
  STRATA_RETURN_IF_ERROR(st);
  if (auto acl = c.H("x-amz-acl"); acl && (*acl == "public-read" || *acl == "public-read-write"))
    STRATA_RETURN_IF_ERROR(engine->SetBucketPublicRead(c.bucket, true));
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

Status Frontend::Impl::BucketAcl(Ctx& c, bool put) {
  STRATA_ASSIGN_OR_RETURN(objstore::BucketInfo b, engine->GetBucket(c.bucket));
  if (put) {
    if (c.user == nullptr || (!c.user->admin && b.owner != c.user->access_key))
      return MakeError("AccessDenied", "Only the bucket owner may change its ACL");
    std::string acl(c.H("x-amz-acl").value_or(""));
    if (acl.empty())
      return MakeError("NotImplemented", "Only canned ACLs (x-amz-acl: private|public-read) are supported");
    if (acl != "private" && acl != "public-read" && acl != "public-read-write" &&
        acl != "authenticated-read")
      return MakeError("InvalidArgument", "unsupported canned ACL \"" + acl + "\"");
    STRATA_RETURN_IF_ERROR(engine->SetBucketPublicRead(c.bucket, acl == "public-read" || acl == "public-read-write"));
    c.w.SetStatus(200);
    return c.w.Send("");
  }
  XmlWriter x("AccessControlPolicy");
  x.Open("Owner").Elem("ID", b.owner).Elem("DisplayName", b.owner).Close("Owner");
  x.Open("AccessControlList");
  x.Open("Grant");
  x.Open("Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"")
      .Elem("ID", b.owner)
      .Elem("DisplayName", b.owner)
      .Close("Grantee");
  x.Elem("Permission", "FULL_CONTROL").Close("Grant");
  if (b.public_read) {
    x.Open("Grant");
    x.Open("Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"")
        .Elem("URI", "http://acs.amazonaws.com/groups/global/AllUsers")
        .Close("Grantee");
    x.Elem("Permission", "READ").Close("Grant");
  }
  x.Close("AccessControlList");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::ListObjects(Ctx& c, bool v2) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  objstore::ListOptions lo;
  lo.prefix = c.Q("prefix");
  lo.delimiter = c.Q("delimiter");
  std::string max_keys_s = c.Q("max-keys");
  lo.max_keys = 1000;
  if (!max_keys_s.empty()) {
    auto mk = ParseInt64(max_keys_s);
    if (!mk || *mk < 0) return MakeError("InvalidArgument", "max-keys must be a non-negative integer");
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
        .Elem("ETag", Quote(o.etag))
        .Elem("Size", o.size);
    if (fetch_owner) x.Open("Owner").Elem("ID", o.owner).Elem("DisplayName", o.owner).Close("Owner");
    x.Elem("StorageClass", "STANDARD").Close("Contents");
  }
  for (const std::string& cp : r.common_prefixes)
    x.Open("CommonPrefixes").Elem("Prefix", enc(cp)).Close("CommonPrefixes");
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

Status Frontend::Impl::ListUploads(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  std::string prefix = c.Q("prefix");
  STRATA_ASSIGN_OR_RETURN(auto uploads, engine->ListMultipartUploads(c.bucket, prefix));
  std::string key_marker = c.Q("key-marker");
  int max_uploads = 1000;
  if (auto mu = ParseInt64(c.Q("max-uploads")); mu && *mu >= 0 && *mu < 1000) max_uploads = static_cast<int>(*mu);
  XmlWriter x("ListMultipartUploadsResult");
  x.Elem("Bucket", c.bucket).Elem("KeyMarker", key_marker).Elem("UploadIdMarker", c.Q("upload-id-marker"));
  x.Elem("Prefix", prefix).Elem("MaxUploads", static_cast<uint64_t>(max_uploads));
  int n = 0;
  bool truncated = false;
  std::string next_key, next_id;
  for (const auto& u : uploads) {
    if (!key_marker.empty() && u.key <= key_marker) continue;
    if (n == max_uploads) {
      truncated = true;
      break;
    }
    ++n;
    next_key = u.key;
    next_id = u.upload_id;
    x.Open("Upload").Elem("Key", u.key).Elem("UploadId", u.upload_id);
    x.Open("Initiator").Elem("ID", u.owner).Elem("DisplayName", u.owner).Close("Initiator");
    x.Open("Owner").Elem("ID", u.owner).Elem("DisplayName", u.owner).Close("Owner");
    x.Elem("StorageClass", "STANDARD").Elem("Initiated", FormatIso8601(u.initiated_ns)).Close("Upload");
  }
  if (truncated) x.Elem("NextKeyMarker", next_key).Elem("NextUploadIdMarker", next_id);
  x.Elem("IsTruncated", truncated);
  SendXml(c, 200, x.Finish());
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
      return MakeError("BadDigest", "The Content-MD5 you specified did not match what we received.");
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
      return MakeError("BadDigest", fmt::format("The {} you specified did not match the calculated checksum.",
                                                ChecksumAlgorithmName(a)));
  }
  return body;
}

Status Frontend::Impl::DeleteObjects(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(DeleteRequest d, ParseDelete(body));
  XmlWriter x("DeleteResult");
  for (const std::string& k : d.keys) {
    Status st = k.empty() || k.size() > kMaxKeyBytes
                    ? MakeError("InvalidArgument", "invalid key")
                    : engine->DeleteObject(c.bucket, k);
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

// ---------------------------------------------------------------------------
// Objects

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
    return MakeError("MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (2 KiB)");
  if (auto ct = c.H("content-type")) m.content_type = std::string(*ct);
  for (const char* name : kStoredHeaders)
    if (auto v = c.H(name)) m.headers[name] = std::string(*v);
  // aws-chunked is transport framing, not a stored encoding.
  if (auto ce = m.headers.find("content-encoding"); ce != m.headers.end()) {
    std::string kept;
    for (std::string_view part : Split(ce->second, ',')) {
      part = Trim(part);
      if (part.empty() || IEquals(part, "aws-chunked")) continue;
      if (!kept.empty()) kept += ",";
      kept += part;
    }
    if (kept.empty()) m.headers.erase(ce); else ce->second = kept;
  }
  if (auto tagging = c.H("x-amz-tagging")) {
    for (std::string_view kv : Split(*tagging, '&')) {
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      auto k = UriDecode(kv.substr(0, eq), true);
      auto v = eq == std::string_view::npos ? std::optional<std::string>("") : UriDecode(kv.substr(eq + 1), true);
      if (!k || !v || k->empty()) return MakeError("InvalidTag", "malformed x-amz-tagging header");
      m.tags[*k] = *v;
    }
  }
  if (auto inm = c.H("if-none-match")) {
    if (Trim(*inm) != "*")
      return MakeError("NotImplemented", "If-None-Match on writes only takes \"*\"");
    o.if_none_match_star = true;
  }
  if (auto im = c.H("if-match")) o.if_match = Unquote(*im);
  return o;
}

// Decides which checksum the engine computes and checks the client's value
// before commit: a header value, or a trailer after the body.
Status Frontend::Impl::SetupChecksum(Ctx& c, PutOptions& o, BodySource& body, bool single_part) {
  ChecksumAlgorithm alg = o.checksum_algorithm;
  std::optional<std::string> header_value;
  for (ChecksumAlgorithm a : kHeaderChecksums) {
    if (auto h = c.H(ChecksumHeaderName(a))) {
      if (header_value) return MakeError("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
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
    if (!v || v->size() != 16) return MakeError("InvalidDigest", "The Content-MD5 you specified is not valid.");
    md5 = *v;
  }
  auto previous = std::move(o.before_commit);
  o.before_commit = [alg, header_value, trailer_name, md5, &body, single_part, previous](
                        const objstore::WriteDigest& d, ObjectMeta& meta) -> Status {
    if (md5 && *md5 != d.md5)
      return MakeError("BadDigest", "The Content-MD5 you specified did not match what we received.");
    std::optional<std::string> want = header_value;
    if (!want && !trailer_name.empty()) {
      want = body.Trailer(trailer_name);
      if (!want)
        return MakeError("IncompleteBody", "the body ended without the promised " + trailer_name + " trailer");
    }
    if (alg != ChecksumAlgorithm::kNone && alg != ChecksumAlgorithm::kMd5) {
      std::string got = Base64Encode(d.checksum);
      if (want && *want != got)
        return MakeError("BadDigest", fmt::format("The {} you specified did not match the calculated checksum.",
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

namespace {
bool IsAwsChunked(const Ctx& c) {
  return c.auth.payload_mode == PayloadMode::kStreamingSigned ||
         c.auth.payload_mode == PayloadMode::kStreamingSignedTrailer ||
         c.auth.payload_mode == PayloadMode::kStreamingUnsignedTrailer;
}

// The decoded body length the client promised, for the engine's size check.
Result<std::optional<uint64_t>> ExpectedSize(const Ctx& c, uint64_t max) {
  std::optional<uint64_t> size;
  if (IsAwsChunked(c)) {
    auto h = c.H("x-amz-decoded-content-length");
    if (h) {
      size = ParseUint64(Trim(*h));
      if (!size) return MakeError("InvalidArgument", "malformed x-amz-decoded-content-length");
    } else if (c.auth.payload_mode == PayloadMode::kStreamingSigned) {
      return MakeError("MissingContentLength", "You must provide the x-amz-decoded-content-length header for aws-chunked uploads.");
    }
  } else if (c.req.content_length) {
    size = c.req.content_length;
  } else if (!c.req.chunked) {
    return MakeError("MissingContentLength", "You must provide the Content-Length HTTP header.");
  }
  if (size && *size > max)
    return MakeError("EntityTooLarge", fmt::format("Your proposed upload exceeds the maximum allowed size ({} bytes)", max));
  return size;
}
}  // namespace

Status Frontend::Impl::PutObject(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  STRATA_ASSIGN_OR_RETURN(o.expected_size, ExpectedSize(c, opts.max_put_size));
  BodySource body(c.req, c.auth, IsAwsChunked(c));
  STRATA_RETURN_IF_ERROR(SetupChecksum(c, o, body, true));
  Result<ObjectMeta> r = Status::Internal("unset");
  if (auto off = c.H("x-amz-write-offset-bytes")) {
    auto v = ParseUint64(Trim(*off));
    if (!v) return MakeError("InvalidArgument", "x-amz-write-offset-bytes must be a non-negative integer");
    r = engine->AppendObject(c.bucket, c.key, *v, body, std::move(o));
    if (!r.ok() && r.error().code() == StatusCode::kPreconditionFailed &&
        r.error().message().find("offset") != std::string::npos)
      return MakeError("InvalidWriteOffset", r.error().message());
  } else {
    r = engine->PutObject(c.bucket, c.key, body, std::move(o));
  }
  if (!r.ok()) return r.error();
  bytes_in->Inc(r->size);
  c.w.AddHeader("ETag", Quote(r->etag));
  if (r->checksum_algorithm != ChecksumAlgorithm::kNone && !r->checksum.empty()) {
    c.w.AddHeader(ChecksumHeaderName(r->checksum_algorithm), r->checksum);
    c.w.AddHeader("x-amz-checksum-type", "FULL_OBJECT");
  }
  if (c.H("x-amz-write-offset-bytes")) c.w.AddHeader("x-amz-object-size", std::to_string(r->size));
  c.w.SetStatus(200);
  return c.w.Send("");
}

namespace {
// x-amz-copy-source: "/bucket/key" or "bucket/key", URL-encoded, maybe "?versionId=".
Status ParseCopySource(std::string_view h, std::string& bucket, std::string& key) {
  if (size_t q = h.find('?'); q != std::string_view::npos) h = h.substr(0, q);
  auto decoded = UriDecode(h, false);
  if (!decoded) return MakeError("InvalidArgument", "Invalid copy source encoding");
  std::string_view s(*decoded);
  if (StartsWith(s, "/")) s.remove_prefix(1);
  size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size())
    return MakeError("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  bucket = std::string(s.substr(0, slash));
  key = std::string(s.substr(slash + 1));
  return Status::Ok();
}

// x-amz-copy-source-if-* conditions against the source.
Status CheckCopySourceConditions(const Ctx& c, const ObjectMeta& src) {
  int64_t mtime_s = src.mtime_ns / 1'000'000'000;
  auto im = c.H("x-amz-copy-source-if-match");
  auto inm = c.H("x-amz-copy-source-if-none-match");
  auto ims = c.H("x-amz-copy-source-if-modified-since");
  auto ius = c.H("x-amz-copy-source-if-unmodified-since");
  auto fail = [] { return MakeError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold"); };
  if (im && !EtagListMatches(*im, src.etag)) return fail();
  if (!im && ius) {
    if (auto t = ParseHttpDate(*ius); t && mtime_s > *t / 1'000'000'000) return fail();
  }
  if (inm && EtagListMatches(*inm, src.etag)) return fail();
  if (!inm && ims) {
    if (auto t = ParseHttpDate(*ims); t && mtime_s <= *t / 1'000'000'000) return fail();
  }
  return Status::Ok();
}
}  // namespace

Status Frontend::Impl::CopyObject(Ctx& c) {
  std::string sb, sk;
  STRATA_RETURN_IF_ERROR(ParseCopySource(*c.H("x-amz-copy-source"), sb, sk));
  {
    // The caller must be able to read the source bucket.
    Ctx src_ctx(c.req, c.w, c.request_id);
    src_ctx.bucket = sb;
    src_ctx.key = sk;
    src_ctx.has_key = true;
    src_ctx.user = c.user;
    STRATA_RETURN_IF_ERROR(Authorize(src_ctx, false));
  }
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  auto src_meta = engine->HeadObject(sb, sk);
  if (!src_meta.ok()) {
    if (src_meta.error().IsNotFound()) {
      if (!engine->GetBucket(sb).ok()) return MakeError("NoSuchBucket", "The specified source bucket does not exist");
      return MakeError("NoSuchKey", "The specified source key does not exist");
    }
    return src_meta.error();
  }
  STRATA_RETURN_IF_ERROR(CheckCopySourceConditions(c, *src_meta));
  std::string directive(c.H("x-amz-metadata-directive").value_or("COPY"));
  if (directive != "COPY" && directive != "REPLACE")
    return MakeError("InvalidArgument", "Unknown metadata directive.");
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  std::optional<ObjectMeta> replace;
  if (directive == "REPLACE") {
    replace = o.meta;
  } else if (sb == c.bucket && sk == c.key) {
    return MakeError("InvalidRequest",
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
  if (auto ca = c.H("x-amz-checksum-algorithm")) o.checksum_algorithm = ParseChecksumAlgorithm(Trim(*ca));
  else o.checksum_algorithm = src_meta->checksum_algorithm;
  ChecksumAlgorithm alg = o.checksum_algorithm;
  o.before_commit = [alg](const objstore::WriteDigest& d, ObjectMeta& meta) {
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
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine->CopyObject(sb, sk, c.bucket, c.key, replace, std::move(o)));
  XmlWriter x("CopyObjectResult");
  x.Elem("LastModified", FormatIso8601(m.mtime_ns)).Elem("ETag", Quote(m.etag));
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
  if (auto im = c.H("x-amz-rename-source-if-match"); im && !EtagListMatches(*im, sm.etag))
    return MakeError("PreconditionFailed", "x-amz-rename-source-if-match did not hold");
  if (auto inm = c.H("x-amz-rename-source-if-none-match"); inm && EtagListMatches(*inm, sm.etag))
    return MakeError("PreconditionFailed", "x-amz-rename-source-if-none-match did not hold");
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine->RenameObject(c.bucket, sk, c.key, std::move(o)));
  (void)m;
  c.w.SetStatus(200);
  return c.w.Send("");
}

void Frontend::Impl::AddObjectHeaders(Ctx& c, const ObjectMeta& m, bool with_checksum) {
  http::ResponseWriter& w = c.w;
  w.AddHeader("ETag", Quote(m.etag));
  w.AddHeader("Last-Modified", FormatHttpDate(m.mtime_ns));
  w.AddHeader("Accept-Ranges", "bytes");
  auto override_or = [&](const char* param, const char* header, std::string_view stored) {
    std::string v = c.Q(param);
    if (!v.empty()) w.AddHeader(header, v);
    else if (!stored.empty()) w.AddHeader(header, stored);
  };
  override_or("response-content-type", "Content-Type",
              m.content_type.empty() ? std::string_view("binary/octet-stream") : std::string_view(m.content_type));
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
  if (with_checksum && m.checksum_algorithm != ChecksumAlgorithm::kNone && !m.checksum.empty()) {
    std::string v = m.checksum;
    if (m.checksum_composite) v += "-" + std::to_string(m.parts.size());
    w.AddHeader(ChecksumHeaderName(m.checksum_algorithm), v);
    w.AddHeader("x-amz-checksum-type", m.checksum_composite ? "COMPOSITE" : "FULL_OBJECT");
  }
}

Status Frontend::Impl::GetObject(Ctx& c, bool head) {
  // Open first so metadata and bytes come from the same version.
  auto opened = engine->OpenObject(c.bucket, c.key);
  if (!opened.ok()) {
    if (opened.error().IsNotFound()) STRATA_RETURN_IF_ERROR(CheckBucket(c));
    return opened.error();
  }
  std::unique_ptr<objstore::ObjectReader> reader = std::move(*opened);
  const ObjectMeta& m = reader->meta();

  // Conditional reads (RFC 9110 13.2.2 order).
  int64_t mtime_s = m.mtime_ns / 1'000'000'000;
  auto im = c.H("if-match");
  auto inm = c.H("if-none-match");
  auto ims = c.H("if-modified-since");
  auto ius = c.H("if-unmodified-since");
  if (im && !EtagListMatches(*im, m.etag))
    return MakeError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
  if (!im && ius) {
    if (auto t = ParseHttpDate(*ius); t && mtime_s > *t / 1'000'000'000)
      return MakeError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
  }
  bool not_modified = false;
  if (inm) {
    not_modified = EtagListMatches(*inm, m.etag);
  } else if (ims) {
    if (auto t = ParseHttpDate(*ims); t && mtime_s <= *t / 1'000'000'000) not_modified = true;
  }
  if (not_modified) {
    c.w.SetStatus(304);
    c.w.AddHeader("ETag", Quote(m.etag));
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
    if (!pn || *pn < 1 || *pn > 10000) return MakeError("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
    if (range_h) return MakeError("InvalidRequest", "Cannot specify both Range header and partNumber query parameter");
    if (m.parts.empty()) {
      if (*pn != 1) return MakeError("InvalidPartNumber", "The requested partnumber is not satisfiable");
    } else {
      if (*pn > m.parts.size()) return MakeError("InvalidPartNumber", "The requested partnumber is not satisfiable");
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
  if (partial) {
    c.w.SetStatus(206);
    c.w.AddHeader("Content-Range", length == 0 ? "bytes */0"
                                               : fmt::format("bytes {}-{}/{}", start, start + length - 1, m.size));
  }
  STRATA_RETURN_IF_ERROR(c.w.BeginBody(length));
  if (head || length == 0) return Status::Ok();
  ResponseSink sink(c.w);
  return reader->Stream(start, length, sink);
}

Status Frontend::Impl::DeleteObject(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  if (auto im = c.H("if-match")) {
    auto m = engine->HeadObject(c.bucket, c.key);
    if (!m.ok() || !EtagListMatches(*im, m->etag))
      return MakeError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
  }
  STRATA_RETURN_IF_ERROR(engine->DeleteObject(c.bucket, c.key));
  c.w.SetStatus(204);
  return Status::Ok();
}

Status Frontend::Impl::Tagging(Ctx& c) {
  std::string_view m = c.req.method;
  if (m == "GET") {
    STRATA_ASSIGN_OR_RETURN(ObjectMeta meta, engine->HeadObject(c.bucket, c.key));
    XmlWriter x("Tagging");
    x.Open("TagSet");
    for (const auto& [k, v] : meta.tags) x.Open("Tag").Elem("Key", k).Elem("Value", v).Close("Tag");
    x.Close("TagSet");
    SendXml(c, 200, x.Finish());
    return Status::Ok();
  }
  std::map<std::string, std::string> tags;
  if (m == "PUT") {
    STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
    STRATA_ASSIGN_OR_RETURN(tags, ParseTagging(body));
  }
  STRATA_RETURN_IF_ERROR(engine->SetObjectTags(c.bucket, c.key, std::move(tags)));
  c.w.SetStatus(m == "PUT" ? 200 : 204);
  return Status::Ok();
}

Status Frontend::Impl::CreateUpload(Ctx& c) {
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions o, PutOptionsFromHeaders(c));
  if (auto ca = c.H("x-amz-checksum-algorithm")) {
    o.checksum_algorithm = ParseChecksumAlgorithm(Trim(*ca));
    if (o.checksum_algorithm == ChecksumAlgorithm::kNone)
      return MakeError("InvalidRequest", "unknown x-amz-checksum-algorithm \"" + std::string(*ca) + "\"");
  }
  // FULL_OBJECT (CRC only) is stored in meta so Complete can combine part CRCs.
  if (auto ct = c.H("x-amz-checksum-type"); ct && IEquals(Trim(*ct), "FULL_OBJECT"))
    o.meta.checksum_composite = false;
  else
    o.meta.checksum_composite = o.checksum_algorithm != ChecksumAlgorithm::kNone;
  ChecksumAlgorithm alg = o.checksum_algorithm;
  bool composite = o.meta.checksum_composite;
  STRATA_ASSIGN_OR_RETURN(std::string id, engine->CreateMultipartUpload(c.bucket, c.key, std::move(o)));
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
    return MakeError("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions upload, engine->GetUpload(c.bucket, c.key, upload_id));
  PutOptions o;
  o.checksum_algorithm = upload.checksum_algorithm;
  if (auto src = c.H("x-amz-copy-source")) {
    std::string sb, sk;
    STRATA_RETURN_IF_ERROR(ParseCopySource(*src, sb, sk));
    Ctx src_ctx(c.req, c.w, c.request_id);
    src_ctx.bucket = sb;
    src_ctx.key = sk;
    src_ctx.has_key = true;
    src_ctx.user = c.user;
    STRATA_RETURN_IF_ERROR(Authorize(src_ctx, false));
    STRATA_ASSIGN_OR_RETURN(auto reader, engine->OpenObject(sb, sk));
    const ObjectMeta& sm = reader->meta();
    STRATA_RETURN_IF_ERROR(CheckCopySourceConditions(c, sm));
    uint64_t start = 0, length = sm.size;
    if (auto rh = c.H("x-amz-copy-source-range")) {
      auto r = ParseRange(*rh, sm.size);
      if (!r.ok() || !*r)
        return MakeError("InvalidRange", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy");
      start = (*r)->start;
      length = (*r)->length;
    }
    if (length > opts.max_put_size) return MakeError("EntityTooLarge", "a copied part can be at most 5 GiB");
    ObjectRangeSource body(reader.get(), start, length);
    o.expected_size = length;
    STRATA_ASSIGN_OR_RETURN(objstore::PartInfo p, engine->UploadPart(c.bucket, c.key, upload_id, static_cast<int>(*pn), body, std::move(o)));
    XmlWriter x("CopyPartResult");
    x.Elem("LastModified", FormatIso8601(p.mtime_ns)).Elem("ETag", Quote(p.etag));
    if (!p.checksum.empty()) x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(upload.checksum_algorithm)), p.checksum);
    SendXml(c, 200, x.Finish());
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(o.expected_size, ExpectedSize(c, opts.max_put_size));
  BodySource body(c.req, c.auth, IsAwsChunked(c));
  STRATA_RETURN_IF_ERROR(SetupChecksum(c, o, body, false));
  STRATA_ASSIGN_OR_RETURN(objstore::PartInfo p, engine->UploadPart(c.bucket, c.key, upload_id, static_cast<int>(*pn), body, std::move(o)));
  bytes_in->Inc(p.size);
  c.w.AddHeader("ETag", Quote(p.etag));
  if (!p.checksum.empty()) c.w.AddHeader(ChecksumHeaderName(upload.checksum_algorithm), p.checksum);
  c.w.SetStatus(200);
  return c.w.Send("");
}

Status Frontend::Impl::CompleteUpload(Ctx& c) {
  std::string upload_id = c.Q("uploadId");
  STRATA_RETURN_IF_ERROR(CheckBucket(c));
  STRATA_ASSIGN_OR_RETURN(PutOptions upload, engine->GetUpload(c.bucket, c.key, upload_id));
  STRATA_ASSIGN_OR_RETURN(std::string body, ReadXmlBody(c));
  STRATA_ASSIGN_OR_RETURN(std::vector<objstore::CompletePart> parts, ParseCompleteMultipart(body));
  objstore::CompleteOptions co;
  if (auto inm = c.H("if-none-match")) {
    if (Trim(*inm) != "*") return MakeError("NotImplemented", "If-None-Match on writes only takes \"*\"");
    co.if_none_match_star = true;
  }
  if (auto im = c.H("if-match")) co.if_match = Unquote(*im);
  // A FULL_OBJECT CRC over the whole object is the CRC-combine of the part CRCs.
  ChecksumAlgorithm alg = upload.checksum_algorithm;
  bool full_object = alg != ChecksumAlgorithm::kNone && !upload.meta.checksum_composite;
  if (full_object && alg != ChecksumAlgorithm::kCrc32 && alg != ChecksumAlgorithm::kCrc32c &&
      alg != ChecksumAlgorithm::kCrc64Nvme)
    full_object = false;
  if (full_object) {
    co.before_commit = [alg](ObjectMeta& meta) -> Status {
      uint64_t crc = 0;
      bool first = true;
      for (const auto& p : meta.parts) {
        auto raw = Base64Decode(p.checksum);
        if (!raw) return MakeError("InvalidPart", "a part has no stored checksum to combine");
        uint64_t v = 0;
        for (unsigned char ch : *raw) v = (v << 8) | ch;
        if (first) {
          crc = v;
          first = false;
        } else if (alg == ChecksumAlgorithm::kCrc32) {
          crc = Crc32Combine(static_cast<uint32_t>(crc), static_cast<uint32_t>(v), p.size);
        } else if (alg == ChecksumAlgorithm::kCrc32c) {
          crc = Crc32cCombine(static_cast<uint32_t>(crc), static_cast<uint32_t>(v), p.size);
        } else {
          crc = Crc64NvmeCombine(crc, v, p.size);
        }
      }
      int bytes = alg == ChecksumAlgorithm::kCrc64Nvme ? 8 : 4;
      std::string out(bytes, '\0');
      for (int i = bytes - 1; i >= 0; --i) {
        out[i] = static_cast<char>(crc & 0xff);
        crc >>= 8;
      }
      meta.checksum_algorithm = alg;
      meta.checksum = Base64Encode(out);
      meta.checksum_composite = false;
      return Status::Ok();
    };
  }
  STRATA_ASSIGN_OR_RETURN(ObjectMeta m, engine->CompleteMultipartUpload(c.bucket, c.key, upload_id, parts, co));
  if (auto wanted = c.H(ChecksumHeaderName(alg)); wanted && full_object && !m.checksum.empty() &&
                                                  Trim(*wanted) != m.checksum) {
    kLog.Warn("CompleteMultipartUpload {}: client's full-object {} {} differs from ours {}", c.Resource(),
              ChecksumAlgorithmName(alg), *wanted, m.checksum);
  }
  XmlWriter x("CompleteMultipartUploadResult");
  x.Elem("Location", "/" + c.bucket + "/" + c.key).Elem("Bucket", c.bucket).Elem("Key", c.key).Elem("ETag", Quote(m.etag));
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
  STRATA_ASSIGN_OR_RETURN(std::vector<objstore::PartInfo> parts, engine->ListParts(c.bucket, c.key, upload_id));
  int marker = 0;
  if (auto pm = ParseUint64(c.Q("part-number-marker"))) marker = static_cast<int>(*pm);
  int max_parts = 1000;
  if (auto mp = ParseUint64(c.Q("max-parts")); mp && *mp < 1000) max_parts = static_cast<int>(*mp);
  XmlWriter x("ListPartsResult");
  x.Elem("Bucket", c.bucket).Elem("Key", c.key).Elem("UploadId", upload_id);
  x.Open("Initiator").Elem("ID", upload.meta.owner).Elem("DisplayName", upload.meta.owner).Close("Initiator");
  x.Open("Owner").Elem("ID", upload.meta.owner).Elem("DisplayName", upload.meta.owner).Close("Owner");
  x.Elem("StorageClass", "STANDARD").Elem("PartNumberMarker", static_cast<uint64_t>(marker));
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
    x.Open("Part").Elem("PartNumber", static_cast<uint64_t>(p.number)).Elem("LastModified", FormatIso8601(p.mtime_ns));
    x.Elem("ETag", Quote(p.etag)).Elem("Size", p.size);
    if (!p.checksum.empty())
      x.Elem(fmt::format("Checksum{}", ChecksumAlgorithmName(upload.checksum_algorithm)), p.checksum);
    x.Close("Part");
  }
  x.Elem("NextPartNumberMarker", static_cast<uint64_t>(last)).Elem("MaxParts", static_cast<uint64_t>(max_parts));
  x.Elem("IsTruncated", truncated);
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
