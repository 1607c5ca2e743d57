// The S3 client's transport: requests built, signed (SigV4) and sent over the
// pooled HTTP client, retried with backoff as s3_client.h describes, S3 errors
// mapped to Status; aws-chunked upload bodies; and S3Client's own calls
// (buckets, server-side copies, presigned URLs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_client_impl.h"
#include "objstore/s3_xml.h"

namespace strata::objstore {
namespace {

bool RetriableS3Error(int http_status, std::string_view code) {
  if (code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable" ||
      code == "RequestTimeout" || code == "RequestTimeoutException" || code == "Throttling" ||
      code == "ThrottlingException") {
    return true;
  }
  return http_status == 429 || http_status == 500 || http_status == 502 || http_status == 503 ||
         http_status == 504;
}

std::string DefaultCodeForStatus(int status, bool has_key) {
  switch (status) {
    case 404:
      return has_key ? "NoSuchKey" : "NoSuchBucket";
    case 412:
      return "PreconditionFailed";
    case 403:
      return "AccessDenied";
    case 409:
      return "Conflict";
    case 400:
      return "BadRequest";
    case 416:
      return "InvalidRange";
    case 501:
      return "NotImplemented";
    case 503:
      return "ServiceUnavailable";
    default:
      return "HTTP" + std::to_string(status);
  }
}

}  // namespace

void AddParam(std::string& q, std::string_view name, std::string_view value, bool bare) {
  if (!q.empty()) q.push_back('&');
  q.append(UriEncode(name, false));
  if (!bare) q.append("=").append(UriEncode(value, false));
}

StatusCode CodeForS3Error(int http_status, std::string_view code) {
  static const std::map<std::string_view, StatusCode> kByCode = {
      {"NoSuchKey", StatusCode::kNotFound},
      {"NoSuchBucket", StatusCode::kNotFound},
      {"NoSuchUpload", StatusCode::kNotFound},
      {"NotFound", StatusCode::kNotFound},
      {"PreconditionFailed", StatusCode::kPreconditionFailed},
      {"ConditionalRequestConflict", StatusCode::kConflict},
      {"OperationAborted", StatusCode::kConflict},
      {"BucketAlreadyOwnedByYou", StatusCode::kAlreadyExists},
      {"BucketAlreadyExists", StatusCode::kAlreadyExists},
      {"BucketNotEmpty", StatusCode::kPreconditionFailed},
      {"AccessDenied", StatusCode::kPermissionDenied},
      {"InvalidAccessKeyId", StatusCode::kPermissionDenied},
      {"SignatureDoesNotMatch", StatusCode::kPermissionDenied},
      {"RequestTimeTooSkewed", StatusCode::kPermissionDenied},
      {"ExpiredToken", StatusCode::kPermissionDenied},
      {"InvalidToken", StatusCode::kPermissionDenied},
      {"BadDigest", StatusCode::kCorruption},
      {"XAmzContentSHA256Mismatch", StatusCode::kCorruption},
      {"NotImplemented", StatusCode::kNotSupported},
      {"XNotImplemented", StatusCode::kNotSupported},
      {"SlowDown", StatusCode::kUnavailable},
      {"ServiceUnavailable", StatusCode::kUnavailable},
      {"InternalError", StatusCode::kUnavailable},
      {"RequestTimeout", StatusCode::kUnavailable},
      {"InsufficientStorage", StatusCode::kResourceExhausted},
  };
  if (auto it = kByCode.find(code); it != kByCode.end()) return it->second;
  switch (http_status) {
    case 404:
      return StatusCode::kNotFound;
    case 412:
      return StatusCode::kPreconditionFailed;
    case 409:
      return StatusCode::kConflict;
    case 401:
    case 403:
      return StatusCode::kPermissionDenied;
    case 400:
    case 405:
    case 411:
    case 413:
    case 416:
      return StatusCode::kInvalidArgument;
    case 501:
      return StatusCode::kNotSupported;
    case 507:
      return StatusCode::kResourceExhausted;
    case 429:
      return StatusCode::kUnavailable;
    default:
      break;
  }
  if (http_status >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

// An upload body as the HTTP client pulls it: the caller's ByteSource, counted,
// and for aws-chunked uploads framed as
//   hex(len)\r\n<data>\r\n ... 0\r\n<x-amz-checksum-alg>:<base64>\r\n\r\n
// (STREAMING-UNSIGNED-PAYLOAD-TRAILER), the checksum computed on the way.
class UploadBody final : public http::BodySource {
 public:
  static constexpr uint64_t kChunk = 256 * 1024;

  UploadBody(ByteSource* src, uint64_t size, ChecksumAlgorithm trailer)
      : src_(src), size_(size), trailer_(trailer) {
    if (trailer_ != ChecksumAlgorithm::kNone) hasher_ = Hasher::Create(trailer_);
  }

  bool aws_chunked() const { return trailer_ != ChecksumAlgorithm::kNone; }
  ChecksumAlgorithm trailer() const { return trailer_; }
  uint64_t size() const { return size_; }
  bool touched() const { return touched_; }
  bool source_failed() const { return source_failed_; }
  const std::string& checksum() const { return checksum_; }

  uint64_t wire_size() const {
    if (!aws_chunked()) return size_;
    auto hexlen = [](uint64_t v) {
      char b[24];
      return static_cast<uint64_t>(
          snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v)));
    };
    const uint64_t full = size_ / kChunk, rem = size_ % kChunk;
    uint64_t n = full * (hexlen(kChunk) + 2 + kChunk + 2);
    if (rem > 0) n += hexlen(rem) + 2 + rem + 2;
    const uint64_t digest = Hasher::Create(trailer_)->Digest().size();
    const uint64_t b64 = (digest + 2) / 3 * 4;
    n += 3 + ChecksumHeaderName(trailer_).size() + 1 + b64 + 2 + 2;
    return n;
  }

  Result<size_t> Read(char* buf, size_t n) override {
    if (!aws_chunked()) {
      if (consumed_ >= size_) {
        if (n == 0) return size_t{0};
        return ReadSource(buf, 1);  // must be 0: the HTTP client's check for a long body
      }
      STRATA_ASSIGN_OR_RETURN(size_t r, ReadSource(buf, std::min<uint64_t>(n, size_ - consumed_)));
      if (r == 0) return TooShort();
      consumed_ += r;
      return r;
    }
    size_t out = 0;
    while (out < n) {
      if (pending_pos_ < pending_.size()) {
        size_t k = std::min(n - out, pending_.size() - pending_pos_);
        std::memcpy(buf + out, pending_.data() + pending_pos_, k);
        pending_pos_ += k;
        out += k;
        continue;
      }
      if (final_queued_) break;
      if (chunk_left_ > 0) {
        STRATA_ASSIGN_OR_RETURN(size_t r,
                                ReadSource(buf + out, std::min<uint64_t>(n - out, chunk_left_)));
        if (r == 0) return TooShort();
        hasher_->Update(buf + out, r);
        consumed_ += r;
        chunk_left_ -= r;
        out += r;
        if (chunk_left_ == 0) SetPending("\r\n");
        continue;
      }
      const uint64_t remaining = size_ - consumed_;
      if (remaining == 0) {
        char probe;
        STRATA_ASSIGN_OR_RETURN(size_t extra, ReadSource(&probe, 1));
        if (extra > 0) {
          source_failed_ = true;
          return Status::InvalidArgument("upload body is longer than the " + std::to_string(size_) +
                                         " bytes its size said");
        }
        checksum_ = Base64Encode(hasher_->Digest());
        SetPending("0\r\n" + ChecksumHeaderName(trailer_) + ":" + checksum_ + "\r\n\r\n");
        final_queued_ = true;
      } else {
        chunk_left_ = std::min(kChunk, remaining);
        char line[24];
        snprintf(line, sizeof(line), "%llx\r\n", static_cast<unsigned long long>(chunk_left_));
        SetPending(line);
      }
    }
    return out;
  }

  bool Rewind() override {
    if (!touched_) return true;
    auto* rw = dynamic_cast<RewindableSource*>(src_);
    if (rw == nullptr || !rw->Rewind()) return false;
    touched_ = false;
    consumed_ = 0;
    chunk_left_ = 0;
    pending_.clear();
    pending_pos_ = 0;
    final_queued_ = false;
    checksum_.clear();
    if (trailer_ != ChecksumAlgorithm::kNone) hasher_ = Hasher::Create(trailer_);
    return true;
  }

 private:
  void SetPending(std::string s) {
    pending_ = std::move(s);
    pending_pos_ = 0;
  }
  Result<size_t> ReadSource(char* buf, size_t n) {
    touched_ = true;
    auto r = src_->Read(buf, n);
    if (!r.ok()) source_failed_ = true;
    return r;
  }
  Status TooShort() {
    source_failed_ = true;
    return Status::InvalidArgument("upload body ended after " + std::to_string(consumed_) +
                                   " bytes; its size said " + std::to_string(size_));
  }

  ByteSource* src_;
  uint64_t size_;
  ChecksumAlgorithm trailer_;
  std::unique_ptr<Hasher> hasher_;
  uint64_t consumed_ = 0;
  uint64_t chunk_left_ = 0;
  std::string pending_;
  size_t pending_pos_ = 0;
  bool final_queued_ = false;
  bool touched_ = false;
  bool source_failed_ = false;
  std::string checksum_;
};

// ---- S3Client::Impl: sending and retrying -------------------------------------

void S3Client::Impl::Backoff(int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double cap = std::min<double>(options.retry.max_delay_ms,
                                      options.retry.base_delay_ms * std::pow(2.0, attempt - 1));
  std::uniform_real_distribution<double> u(0.0, std::max(0.0, cap));
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(u(rng) * 1000)));
}

// SSE-C: the customer key and its MD5 on the requests that touch an
// object's data or metadata (S3Options::sse_customer_key).
void S3Client::Impl::AddSseCustomerHeaders(std::string_view op, http::HeaderList& h) const {
  auto add = [&](const std::string& key, const std::string& prefix) {
    if (key.empty()) return;
    h.emplace_back(prefix + "algorithm", "AES256");
    h.emplace_back(prefix + "key", Base64Encode(key));
    h.emplace_back(prefix + "key-MD5", Base64Encode(Md5(key)));
  };
  static constexpr std::string_view kObjectOps[] = {
      "PutObject",  "UploadPart", "CreateMultipartUpload", "CompleteMultipartUpload", "GetObject",
      "HeadObject", "CopyObject", "UploadPartCopy"};
  if (std::find(std::begin(kObjectOps), std::end(kObjectOps), op) != std::end(kObjectOps)) {
    add(options.sse_customer_key, "x-amz-server-side-encryption-customer-");
  }
  if (op == "CopyObject" || op == "UploadPartCopy") {
    add(options.sse_copy_source_customer_key, "x-amz-copy-source-server-side-encryption-customer-");
  }
}

Result<std::unique_ptr<http::ClientResponse>> S3Client::Impl::SendOnce(Call& call,
                                                                       UploadBody* body) {
  http::ClientRequest req;
  req.method = call.method;
  req.scheme = scheme;
  req.port = port;
  std::string path = base_path;
  if (call.bucket.empty()) {
    req.host = host;
    path += "/";
  } else if (path_style) {
    req.host = host;
    path += "/" + UriEncode(call.bucket, false);
    if (call.has_key) path += "/" + UriEncode(call.key, true);
  } else {
    req.host = call.bucket + "." + host;
    path += "/";
    if (call.has_key) path += UriEncode(call.key, true);
  }
  req.target = call.query.empty() ? path : path + "?" + call.query;
  req.headers = call.headers;
  AddSseCustomerHeaders(call.op, req.headers);
  req.headers.emplace_back("Host", req.HostHeader());
  req.idempotent = call.idempotent;
  std::string payload;
  if (body != nullptr) {
    req.body_source = body;
    req.content_length = body->wire_size();
    if (body->aws_chunked()) {
      req.headers.emplace_back("Content-Encoding", "aws-chunked");
      req.headers.emplace_back("x-amz-decoded-content-length", std::to_string(body->size()));
      req.headers.emplace_back("x-amz-trailer", ChecksumHeaderName(body->trailer()));
      payload = std::string(sigv4::kStreamingUnsignedPayloadTrailer);
    } else {
      payload = std::string(sigv4::kUnsignedPayload);
    }
  } else {
    req.body = call.body;
    if (call.body.empty()) {
      payload = std::string(sigv4::kEmptySha256Hex);
    } else if (call.body.size() <= 64 * 1024 || options.sign_payload) {
      payload = sigv4::PayloadSha256Hex(call.body);
    } else {
      payload = std::string(sigv4::kUnsignedPayload);
    }
  }
  if (!options.credentials.access_key.empty()) {
    sigv4::SigningParams sp;
    sp.credentials = options.credentials;
    sp.region = options.region;
    sp.service = "s3";
    sp.now_ns = NowUnixNanos();
    sigv4::SignRequest(req.method, path, call.query, req.headers, payload, sp);
  }
  requests.fetch_add(1, std::memory_order_relaxed);
  auto r = http.Send(req);
  if (r.ok()) {
    if (auto server = (*r)->Header("server")) strata_server = StartsWith(*server, "Strata") ? 1 : 0;
  }
  return r;
}

// The response's S3 error as a Status; *retry when it is worth repeating.
Status S3Client::Impl::ErrorFrom(http::ClientResponse& resp, const Call& call, bool* retry) {
  std::string code, message;
  if (resp.status() != 304 && resp.content_length().value_or(1) > 0) {
    auto body = resp.ReadAll(kMaxErrorBody);
    if (body.ok() && !body->empty()) {
      if (std::optional<S3XmlError> x = ParseErrorXml(*body)) {
        code = std::move(x->code);
        message = std::move(x->message);
      }
    }
  }
  if (code.empty()) {
    if (auto h = resp.Header("x-amz-error-code")) code = std::string(*h);
  }
  if (code.empty()) code = DefaultCodeForStatus(resp.status(), call.has_key);
  if (message.empty()) {
    if (code == "NoSuchKey")
      message = "The specified key does not exist.";
    else if (code == "NoSuchBucket")
      message = "The specified bucket does not exist.";
    else
      message = "HTTP " + std::to_string(resp.status()) + " " + resp.reason();
  }
  *retry = RetriableS3Error(resp.status(), code);
  return Status(CodeForS3Error(resp.status(), code),
                code + ": " + message + " (" + Describe(call) + ")");
}

// An <Error> document in a 200 response (CompleteMultipartUpload, CopyObject).
Status S3Client::Impl::ErrorInBody(const S3XmlError& x, const Call& call, bool* retry) {
  const std::string code = x.code;
  *retry = RetriableS3Error(500, code);
  return Status(CodeForS3Error(500, code), code + ": " + x.message + " (" + Describe(call) + ")");
}

// Sends call, retrying as the policy allows.
Status S3Client::Impl::Execute(Call& call, const OnOk& on_ok) {
  std::optional<UploadBody> body;
  if (call.source != nullptr) body.emplace(call.source, call.source_size, call.trailer);
  Status last;
  const int max_attempts = std::max(1, options.retry.max_attempts);
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    call.attempts = attempt + 1;
    if (attempt > 0) {
      if (body && !body->Rewind()) {
        return WithSuffix(last,
                          " (not retried: the upload body cannot be read again; pass a "
                          "RewindableSource)");
      }
      retries.fetch_add(1, std::memory_order_relaxed);
      kLog.Debug("retrying {} (attempt {}): {}", Describe(call), attempt + 1, last.ToString());
      Backoff(attempt);
    }
    auto r = SendOnce(call, body ? &*body : nullptr);
    if (!r.ok()) {
      last = r.error();
      if (body && body->source_failed()) return last;
      if (IsTransport(last)) continue;
      return last;
    }
    http::ClientResponse& resp = **r;
    bool retry = false;
    Status s;
    if (resp.status() >= 200 && resp.status() < 300) {
      if (on_ok) {
        s = on_ok(resp, &retry);
      } else {
        auto drained = resp.ReadAll(kMaxXmlBody);
        s = drained.status();
        retry = !s.ok() && IsTransport(s);
      }
    } else {
      s = ErrorFrom(resp, call, &retry);
    }
    if (s.ok()) return s;
    last = s;
    if (!retry) return s;
  }
  return WithSuffix(last, " (gave up after " + std::to_string(max_attempts) + " attempts)");
}

// ---- S3Client -------------------------------------------------------------------

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;

Result<std::shared_ptr<S3Client>> S3Client::Create(S3Options options) {
  if (options.endpoint.empty()) {
    options.endpoint =
        "https://s3." + (options.region.empty() ? "us-east-1" : options.region) + ".amazonaws.com";
  }
  if (options.region.empty()) options.region = "us-east-1";
  STRATA_ASSIGN_OR_RETURN(http::ParsedUrl u, http::ParseHttpUrl(options.endpoint));
  if (u.target.find('?') != std::string::npos) {
    return Status::InvalidArgument("S3 endpoint \"" + options.endpoint +
                                   "\" must not have a query");
  }
  if (options.credentials.access_key.empty() != options.credentials.secret_key.empty()) {
    return Status::InvalidArgument("S3 credentials need both an access key and a secret key");
  }
  const bool aws =
      u.host.size() > 14 && u.host.compare(u.host.size() - 14, 14, ".amazonaws.com") == 0;
  const bool path_style = options.path_style.value_or(!aws);
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->scheme = u.scheme;
  impl->host = u.host;
  impl->port = u.port;
  impl->base_path = u.target == "/" ? "" : u.target;
  while (!impl->base_path.empty() && impl->base_path.back() == '/') impl->base_path.pop_back();
  impl->path_style = path_style;
  return std::shared_ptr<S3Client>(new S3Client(std::move(impl)));
}

const S3Options& S3Client::options() const { return impl_->options; }

S3Client::Stats S3Client::stats() const {
  Stats s;
  s.requests = impl_->requests.load();
  s.retries = impl_->retries.load();
  s.resumed_gets = impl_->resumed_gets.load();
  s.http = impl_->http.stats();
  return s;
}

Result<std::vector<BucketEntry>> S3Client::ListBuckets() {
  Impl::Call c;
  c.op = "ListBuckets";
  c.method = "GET";
  std::vector<BucketEntry> out;
  STRATA_RETURN_IF_ERROR(impl_->Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    ListBucketsXml x;
    STRATA_RETURN_IF_ERROR(impl_->ReadXml(resp, c, retry, ParseListBucketsXml, &x));
    out = std::move(x.buckets);
    return Status::Ok();
  }));
  return out;
}

Status S3Client::CreateBucket(std::string_view bucket) {
  Impl::Call c;
  c.op = "CreateBucket";
  c.method = "PUT";
  c.bucket = std::string(bucket);
  std::string xml;
  if (impl_->options.region != "us-east-1") {
    xml =
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>" +
        XmlEscape(impl_->options.region) + "</LocationConstraint></CreateBucketConfiguration>";
    c.body = xml;
  }
  return impl_->Execute(c, nullptr);
}

Status S3Client::DeleteBucket(std::string_view bucket) {
  Impl::Call c;
  c.op = "DeleteBucket";
  c.method = "DELETE";
  c.bucket = std::string(bucket);
  return impl_->Execute(c, nullptr);
}

Status S3Client::DeleteObject(std::string_view bucket, std::string_view key,
                              std::optional<std::string> if_match) {
  Impl::Call c;
  c.op = "DeleteObject";
  c.method = "DELETE";
  c.bucket = std::string(bucket);
  c.key = std::string(key);
  c.has_key = true;
  if (if_match) c.headers.emplace_back("If-Match", QuoteETag(*if_match));
  return impl_->Execute(c, nullptr);
}

Status S3Client::HeadBucket(std::string_view bucket) {
  Impl::Call c;
  c.op = "HeadBucket";
  c.method = "HEAD";
  c.bucket = std::string(bucket);
  return impl_->Execute(c, nullptr);
}

Result<ObjectInfo> S3Client::CopyObject(std::string_view src_bucket, std::string_view src_key,
                                        std::string_view dst_bucket, std::string_view dst_key,
                                        const CopyOptions& options) {
  return impl_->CopyObject(std::string(src_bucket), std::string(src_key), std::string(dst_bucket),
                           std::string(dst_key), options);
}

Result<UploadedPart> S3Client::UploadPartCopy(std::string_view dst_bucket, std::string_view dst_key,
                                              std::string_view upload_id, int part_number,
                                              std::string_view src_bucket, std::string_view src_key,
                                              std::optional<std::pair<uint64_t, uint64_t>> range,
                                              std::optional<std::string> source_if_match) {
  return impl_->UploadPartCopy(std::string(dst_bucket), std::string(dst_key), upload_id,
                               part_number, std::string(src_bucket), std::string(src_key), range,
                               source_if_match);
}

Result<std::string> S3Client::Presign(std::string_view method, std::string_view bucket,
                                      std::string_view key, int64_t expires_sec) {
  if (impl_->options.credentials.access_key.empty()) {
    return Status::InvalidArgument("presigning needs credentials");
  }
  if (expires_sec < 1 || expires_sec > 604800) {
    return Status::InvalidArgument("presigned URLs expire after 1 to 604800 seconds");
  }
  http::ClientRequest r;
  r.scheme = impl_->scheme;
  r.port = impl_->port;
  std::string path = impl_->base_path;
  if (impl_->path_style) {
    r.host = impl_->host;
    path += "/" + UriEncode(bucket, false) + "/" + UriEncode(key, true);
  } else {
    r.host = std::string(bucket) + "." + impl_->host;
    path += "/" + UriEncode(key, true);
  }
  sigv4::SigningParams sp;
  sp.credentials = impl_->options.credentials;
  sp.region = impl_->options.region;
  sp.now_ns = NowUnixNanos();
  const std::string host = r.HostHeader();
  std::string q = sigv4::PresignQuery(method, host, path, "", expires_sec, sp);
  return r.scheme + "://" + host + path + "?" + q;
}

}  // namespace strata::objstore
