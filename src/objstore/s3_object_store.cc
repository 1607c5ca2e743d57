// The S3 client (s3_client.h) and the ObjectStore over it.

#include "objstore/s3_object_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <strata/core/checksum.h>
#include <strata/core/http_client.h>
#include <strata/core/log.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

namespace strata::objstore {
namespace {

constexpr log::Logger kLog("objstore");
constexpr uint64_t kMaxSinglePut = 5ull << 30;  // S3's limit for PutObject / UploadPart / CopyObject
constexpr size_t kMaxXmlBody = 32 << 20;
constexpr size_t kMaxErrorBody = 64 << 10;

// ---------------------------------------------------------------------------
// A small XML reader for S3 responses: elements, text, entities, CDATA;
// attributes, comments, processing instructions and DOCTYPE are skipped.

struct XmlNode {
  std::string name;  // local name (a namespace prefix is dropped)
  std::string text;  // character data, entities decoded
  std::vector<XmlNode> children;

  const XmlNode* Child(std::string_view n) const {
    for (const XmlNode& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  std::string Text(std::string_view child) const {
    const XmlNode* c = Child(child);
    return c != nullptr ? c->text : std::string();
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string_view s) : s_(s) {}

  Result<XmlNode> Document() {
    for (;;) {
      SkipSpace();
      if (Starts("<?")) {
        STRATA_RETURN_IF_ERROR(SkipPast("?>"));
      } else if (Starts("<!--")) {
        STRATA_RETURN_IF_ERROR(SkipPast("-->"));
      } else if (Starts("<!")) {
        STRATA_RETURN_IF_ERROR(SkipPast(">"));
      } else {
        break;
      }
    }
    if (!Starts("<")) return Bad("no root element");
    return Element(0);
  }

 private:
  Status Bad(std::string_view why) const {
    return Status::IOError("malformed XML in the S3 response (" + std::string(why) + " at byte " +
                           std::to_string(i_) + ")");
  }
  bool Starts(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
  void SkipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  Status SkipPast(std::string_view end) {
    size_t p = s_.find(end, i_);
    if (p == std::string_view::npos) return Bad("unterminated markup");
    i_ = p + end.size();
    return Status::Ok();
  }
  std::string Name() {
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != '\r' && s_[i_] != '\n' &&
           s_[i_] != '/' && s_[i_] != '>') {
      ++i_;
    }
    std::string_view n = s_.substr(start, i_ - start);
    if (size_t colon = n.find(':'); colon != std::string_view::npos) n = n.substr(colon + 1);
    return std::string(n);
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Status Text(std::string& out) {
    while (i_ < s_.size() && s_[i_] != '<') {
      if (s_[i_] != '&') {
        out.push_back(s_[i_++]);
        continue;
      }
      size_t semi = s_.find(';', i_);
      if (semi == std::string_view::npos || semi - i_ > 12) return Bad("bad entity");
      std::string_view e = s_.substr(i_ + 1, semi - i_ - 1);
      i_ = semi + 1;
      if (e == "lt") out.push_back('<');
      else if (e == "gt") out.push_back('>');
      else if (e == "amp") out.push_back('&');
      else if (e == "quot") out.push_back('"');
      else if (e == "apos") out.push_back('\'');
      else if (!e.empty() && e[0] == '#') {
        uint32_t cp = 0;
        const bool hex = e.size() > 1 && (e[1] == 'x' || e[1] == 'X');
        std::string_view digits = e.substr(hex ? 2 : 1);
        if (digits.empty()) return Bad("bad character reference");
        for (char c : digits) {
          int v = (c >= '0' && c <= '9')           ? c - '0'
                  : (hex && c >= 'a' && c <= 'f')  ? c - 'a' + 10
                  : (hex && c >= 'A' && c <= 'F')  ? c - 'A' + 10
                                                   : -1;
          if (v < 0 || cp > 0x10FFFF) return Bad("bad character reference");
          cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        }
        AppendUtf8(out, cp);
      } else {
        return Bad("unknown entity");
      }
    }
    return Status::Ok();
  }

  Result<XmlNode> Element(int depth) {
    if (depth > 64) return Bad("nesting too deep");
    XmlNode node;
    ++i_;  // '<'
    node.name = Name();
    if (node.name.empty()) return Bad("empty element name");
    // Attributes: skipped, quotes respected.
    for (;;) {
      if (i_ >= s_.size()) return Bad("unterminated start tag");
      char c = s_[i_];
      if (c == '"' || c == '\'') {
        size_t end = s_.find(c, i_ + 1);
        if (end == std::string_view::npos) return Bad("unterminated attribute");
        i_ = end + 1;
      } else if (c == '/' && Starts("/>")) {
        i_ += 2;
        return node;
      } else if (c == '>') {
        ++i_;
        break;
      } else {
        ++i_;
      }
    }
    for (;;) {
      if (i_ >= s_.size()) return Bad("unterminated element <" + node.name + ">");
      if (Starts("</")) {
        i_ += 2;
        std::string end = Name();
        SkipSpace();
        if (end != node.name || !Starts(">")) return Bad("mismatched end tag </" + end + ">");
        ++i_;
        return node;
      }
      if (Starts("<!--")) {
        STRATA_RETURN_IF_ERROR(SkipPast("-->"));
      } else if (Starts("<![CDATA[")) {
        size_t end = s_.find("]]>", i_);
        if (end == std::string_view::npos) return Bad("unterminated CDATA");
        node.text.append(s_.substr(i_ + 9, end - i_ - 9));
        i_ = end + 3;
      } else if (Starts("<?")) {
        STRATA_RETURN_IF_ERROR(SkipPast("?>"));
      } else if (Starts("<")) {
        STRATA_ASSIGN_OR_RETURN(XmlNode child, Element(depth + 1));
        node.children.push_back(std::move(child));
      } else {
        STRATA_RETURN_IF_ERROR(Text(node.text));
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

Result<XmlNode> ParseXml(std::string_view s) { return XmlReader(s).Document(); }

// ---------------------------------------------------------------------------

std::string Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string Quote(std::string_view etag) { return "\"" + Unquote(etag) + "\""; }

void AddParam(std::string& q, std::string_view name, std::string_view value, bool bare = false) {
  if (!q.empty()) q.push_back('&');
  q.append(UriEncode(name, false));
  if (!bare) q.append("=").append(UriEncode(value, false));
}

bool IsTransport(const Status& s) {
  return s.code() == StatusCode::kIOError || s.code() == StatusCode::kUnavailable;
}

Status WithSuffix(const Status& s, std::string_view suffix) {
  return Status(s.code(), s.message() + std::string(suffix));
}

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
                                  ") differs from the ETag " + md5_want + " (" +
                                  std::string(what) + ")");
      }
    }
    return Status::Ok();
  }
};

const ChecksumAlgorithm kResponseChecksums[] = {ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc32,
                                                ChecksumAlgorithm::kCrc64Nvme, ChecksumAlgorithm::kSha256,
                                                ChecksumAlgorithm::kSha1};

bool IsHexMd5(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

bool StreamableChecksum(ChecksumAlgorithm a) {
  return a != ChecksumAlgorithm::kNone && a != ChecksumAlgorithm::kMd5;
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
      return static_cast<uint64_t>(snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v)));
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
          return Status::InvalidArgument("upload body is longer than the " +
                                         std::to_string(size_) + " bytes its size said");
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
    case 404: return StatusCode::kNotFound;
    case 412: return StatusCode::kPreconditionFailed;
    case 409: return StatusCode::kConflict;
    case 401:
    case 403: return StatusCode::kPermissionDenied;
    case 400:
    case 405:
    case 411:
    case 413:
    case 416: return StatusCode::kInvalidArgument;
    case 501: return StatusCode::kNotSupported;
    case 507: return StatusCode::kResourceExhausted;
    case 429: return StatusCode::kUnavailable;
    default: break;
  }
  if (http_status >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

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
    case 404: return has_key ? "NoSuchKey" : "NoSuchBucket";
    case 412: return "PreconditionFailed";
    case 403: return "AccessDenied";
    case 409: return "Conflict";
    case 400: return "BadRequest";
    case 416: return "InvalidRange";
    case 501: return "NotImplemented";
    case 503: return "ServiceUnavailable";
    default: return "HTTP" + std::to_string(status);
  }
}

// ---- ~/.aws files.

// "[name]" sections of an INI file; keys indented under "key =" (e.g. "s3 =")
// are stored as "key.subkey".
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

IniFile ReadIni(const std::string& path) {
  IniFile out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line, section, parent;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view l = line;
    const bool indented = !l.empty() && (l[0] == ' ' || l[0] == '\t');
    l = Trim(l);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    if (l.front() == '[' && l.back() == ']') {
      section = std::string(Trim(l.substr(1, l.size() - 2)));
      parent.clear();
      out[section];
      continue;
    }
    const size_t eq = l.find('=');
    if (eq == std::string_view::npos || section.empty()) continue;
    std::string k = ToLower(Trim(l.substr(0, eq)));
    std::string v(Trim(l.substr(eq + 1)));
    if (indented && !parent.empty()) {
      out[section][parent + "." + k] = v;
    } else {
      out[section][k] = v;
      parent = v.empty() ? k : std::string();
    }
  }
  return out;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string HomeFile(const char* env_override, const char* rel) {
  std::string p = Env(env_override);
  if (!p.empty()) return p;
  std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + rel;
}

}  // namespace

// ---------------------------------------------------------------------------

struct S3Client::Impl {
  explicit Impl(S3Options o) : options(std::move(o)), http(options.http) {}

  S3Options options;
  http::HttpClient http;
  std::string scheme;
  std::string host;
  uint16_t port = 0;
  std::string base_path;  // endpoint path ("" or "/x")
  bool path_style = true;
  std::atomic<uint64_t> requests{0}, retries{0}, resumed_gets{0};
  std::atomic<int> strata_server{-1};  // from the Server header: -1 unknown, 0 no, 1 yes

  // One S3 request. Views must outlive Execute.
  struct Call {
    std::string op;      // for messages: "GET", "PutObject", ...
    std::string method;
    std::string bucket;
    std::string key;     // full key, not encoded
    bool has_key = false;
    std::string query;   // encoded, without '?'
    http::HeaderList headers;
    std::string_view body;
    ByteSource* source = nullptr;
    uint64_t source_size = 0;
    ChecksumAlgorithm trailer = ChecksumAlgorithm::kNone;
    bool idempotent = true;
    int attempts = 0;    // filled by Execute
  };

  // Called for 2xx responses; sets *retry when a failure may be repeated.
  using OnOk = std::function<Status(http::ClientResponse&, bool* retry)>;

  std::string Describe(const Call& c) const {
    std::string s = c.method + " s3://" + c.bucket;
    if (c.has_key) s += "/" + c.key;
    return s;
  }

  void Backoff(int attempt) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const double cap = std::min<double>(options.retry.max_delay_ms,
                                        options.retry.base_delay_ms * std::pow(2.0, attempt - 1));
    std::uniform_real_distribution<double> u(0.0, std::max(0.0, cap));
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(u(rng) * 1000)));
  }

  Result<std::unique_ptr<http::ClientResponse>> SendOnce(Call& call, UploadBody* body) {
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
  Status ErrorFrom(http::ClientResponse& resp, const Call& call, bool* retry) {
    std::string code, message;
    if (resp.status() != 304 && resp.content_length().value_or(1) > 0) {
      auto body = resp.ReadAll(kMaxErrorBody);
      if (body.ok() && !body->empty()) {
        if (auto x = ParseXml(*body); x.ok() && x->name == "Error") {
          code = x->Text("Code");
          message = x->Text("Message");
        }
      }
    }
    if (code.empty()) {
      if (auto h = resp.Header("x-amz-error-code")) code = std::string(*h);
    }
    if (code.empty()) code = DefaultCodeForStatus(resp.status(), call.has_key);
    if (message.empty()) {
      if (code == "NoSuchKey") message = "The specified key does not exist.";
      else if (code == "NoSuchBucket") message = "The specified bucket does not exist.";
      else message = "HTTP " + std::to_string(resp.status()) + " " + resp.reason();
    }
    *retry = RetriableS3Error(resp.status(), code);
    return Status(CodeForS3Error(resp.status(), code),
                  code + ": " + message + " (" + Describe(call) + ")");
  }

  // An <Error> document in a 200 response (CompleteMultipartUpload, CopyObject).
  Status ErrorInBody(const XmlNode& x, const Call& call, bool* retry) {
    const std::string code = x.Text("Code");
    *retry = RetriableS3Error(500, code);
    return Status(CodeForS3Error(500, code),
                  code + ": " + x.Text("Message") + " (" + Describe(call) + ")");
  }

  // Sends call, retrying as the policy allows.
  Status Execute(Call& call, const OnOk& on_ok) {
    std::optional<UploadBody> body;
    if (call.source != nullptr) body.emplace(call.source, call.source_size, call.trailer);
    Status last;
    const int max_attempts = std::max(1, options.retry.max_attempts);
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
      call.attempts = attempt + 1;
      if (attempt > 0) {
        if (body && !body->Rewind()) {
          return WithSuffix(last, " (not retried: the upload body cannot be read again; pass a "
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

  // Reads a 2xx XML body; transport failures are retriable.
  static Result<XmlNode> ReadXml(http::ClientResponse& resp, bool* retry) {
    auto body = resp.ReadAll(kMaxXmlBody);
    if (!body.ok()) {
      *retry = IsTransport(body.error());
      return body.error();
    }
    auto x = ParseXml(*body);
    if (!x.ok()) *retry = true;  // a truncated document from a broken connection
    return x;
  }

  // Applies the metadata and conditions of WriteOptions to a request.
  static void AddWriteHeaders(http::HeaderList& h, const WriteOptions& o, bool conditions) {
    if (!o.content_type.empty()) h.emplace_back("Content-Type", o.content_type);
    for (const auto& [k, v] : o.user_meta) h.emplace_back("x-amz-meta-" + ToLower(k), v);
    if (conditions) {
      if (o.if_none_match_star) h.emplace_back("If-None-Match", "*");
      if (o.if_match) h.emplace_back("If-Match", *o.if_match == "*" ? "*" : Quote(*o.if_match));
    }
  }

  ObjectInfo InfoFromHeaders(const http::ClientResponse& resp, std::string key) const {
    ObjectInfo i;
    i.key = std::move(key);
    if (auto cr = resp.Header("content-range")) {
      if (size_t slash = cr->rfind('/'); slash != std::string_view::npos) {
        i.size = ParseUint64(Trim(cr->substr(slash + 1))).value_or(0);
      }
    } else {
      i.size = resp.content_length().value_or(0);
    }
    if (auto e = resp.Header("etag")) i.etag = Unquote(*e);
    if (auto lm = resp.Header("last-modified")) i.mtime_ns = ParseHttpDate(*lm).value_or(0);
    if (auto ct = resp.Header("content-type")) i.content_type = std::string(*ct);
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

  // ---- Operations shared by S3Client and S3ObjectStore (full keys).

  struct PutResult {
    std::string etag;
    ChecksumAlgorithm alg = ChecksumAlgorithm::kNone;
    std::string checksum;
  };

  // PUT of one body (an object, or a part when query names one). mem when
  // source is null; else source streamed (aws-chunked with a checksum trailer
  // when alg can be streamed).
  Result<PutResult> SendPut(std::string op, const std::string& bucket, const std::string& key,
                            std::string query, http::HeaderList headers, std::string_view mem,
                            ByteSource* source, uint64_t size, ChecksumAlgorithm alg) {
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
      if (auto e = resp.Header("etag")) etag = Unquote(*e);
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

  Result<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                          const std::optional<std::string>& if_match) {
    Call c;
    c.op = "HeadObject";
    c.method = "HEAD";
    c.bucket = bucket;
    c.key = key;
    c.has_key = true;
    c.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
    if (if_match) c.headers.emplace_back("If-Match", Quote(*if_match));
    ObjectInfo info;
    STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool*) {
      info = InfoFromHeaders(resp, key);
      return Status::Ok();
    }));
    return info;
  }

  Result<std::string> CreateMultipart(const std::string& bucket, const std::string& key,
                                      const WriteOptions& o) {
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
      c.headers.emplace_back("x-amz-checksum-algorithm", std::string(ChecksumAlgorithmName(o.checksum)));
      const bool crc = o.checksum == ChecksumAlgorithm::kCrc32 ||
                       o.checksum == ChecksumAlgorithm::kCrc32c ||
                       o.checksum == ChecksumAlgorithm::kCrc64Nvme;
      c.headers.emplace_back("x-amz-checksum-type", crc ? "FULL_OBJECT" : "COMPOSITE");
    }
    std::string id;
    STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
      STRATA_ASSIGN_OR_RETURN(XmlNode x, ReadXml(resp, retry));
      if (x.name == "Error") return ErrorInBody(x, c, retry);
      id = x.Text("UploadId");
      if (id.empty()) return Status::IOError("CreateMultipartUpload response has no UploadId");
      return Status::Ok();
    }));
    return id;
  }

  Result<ObjectInfo> CompleteMultipart(const std::string& bucket, const std::string& key,
                                       std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts,
                                       ChecksumAlgorithm alg, const WriteOptions* conditions) {
    std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
    const std::string tag = alg != ChecksumAlgorithm::kNone && alg != ChecksumAlgorithm::kMd5
                                ? "Checksum" + std::string(ChecksumAlgorithmName(alg))
                                : "";
    uint64_t total = 0;
    std::vector<std::string> etags;
    for (const UploadedPart& p : parts) {
      xml += "<Part><PartNumber>" + std::to_string(p.number) + "</PartNumber><ETag>" +
             XmlEscape(Quote(p.etag)) + "</ETag>";
      if (!tag.empty() && !p.checksum.empty()) xml += "<" + tag + ">" + p.checksum + "</" + tag + ">";
      xml += "</Part>";
      total += p.size;
      etags.push_back(Unquote(p.etag));
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
    if (conditions != nullptr) AddWriteHeaders(c.headers, *conditions, /*conditions=*/true);
    ObjectInfo info;
    info.key = key;
    info.size = total;
    Status s = Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
      STRATA_ASSIGN_OR_RETURN(XmlNode x, ReadXml(resp, retry));
      if (x.name == "Error") return ErrorInBody(x, c, retry);
      info.etag = Unquote(x.Text("ETag"));
      for (ChecksumAlgorithm a : kResponseChecksums) {
        std::string v = x.Text("Checksum" + std::string(ChecksumAlgorithmName(a)));
        if (!v.empty()) {
          info.checksum_algorithm = a;
          info.checksum = v;
        }
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

  Status AbortMultipart(const std::string& bucket, const std::string& key, std::string_view id) {
    Call c;
    c.op = "AbortMultipartUpload";
    c.method = "DELETE";
    c.bucket = bucket;
    c.key = key;
    c.has_key = true;
    AddParam(c.query, "uploadId", id);
    return Execute(c, nullptr);
  }

  Result<UploadedPart> UploadPartCopy(const std::string& dst_bucket, const std::string& dst_key,
                                      std::string_view upload_id, int part_number,
                                      const std::string& src_bucket, const std::string& src_key,
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
    if (source_if_match) c.headers.emplace_back("x-amz-copy-source-if-match", Quote(*source_if_match));
    UploadedPart part;
    part.number = part_number;
    part.size = size;
    STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
      STRATA_ASSIGN_OR_RETURN(XmlNode x, ReadXml(resp, retry));
      if (x.name == "Error") return ErrorInBody(x, c, retry);
      part.etag = Unquote(x.Text("ETag"));
      for (ChecksumAlgorithm a : kResponseChecksums) {
        std::string v = x.Text("Checksum" + std::string(ChecksumAlgorithmName(a)));
        if (!v.empty()) part.checksum = v;
      }
      return Status::Ok();
    }));
    return part;
  }

  Result<ObjectInfo> CopyObject(const std::string& src_bucket, const std::string& src_key,
                                const std::string& dst_bucket, const std::string& dst_key,
                                const CopyOptions& o) {
    STRATA_ASSIGN_OR_RETURN(ObjectInfo src, Head(src_bucket, src_key, o.source_if_match));
    ObjectInfo out = src;
    out.key = dst_key;
    if (o.new_metadata) {
      out.content_type = o.new_metadata->content_type;
      out.user_meta = o.new_metadata->user_meta;
    }
    if (src.size > kMaxSinglePut) {
      // Too big for CopyObject: a multipart upload of copied ranges.
      WriteOptions wo;
      if (o.new_metadata) {
        wo = *o.new_metadata;
      } else {
        wo.content_type = src.content_type;
        wo.user_meta = src.user_meta;
      }
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
    c.headers.emplace_back("x-amz-copy-source-if-match", Quote(src.etag));
    if (o.new_metadata) {
      c.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
      AddWriteHeaders(c.headers, *o.new_metadata, /*conditions=*/false);
    }
    STRATA_RETURN_IF_ERROR(Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
      STRATA_ASSIGN_OR_RETURN(XmlNode x, ReadXml(resp, retry));
      if (x.name == "Error") return ErrorInBody(x, c, retry);
      out.etag = Unquote(x.Text("ETag"));
      out.mtime_ns = ParseIso8601(x.Text("LastModified")).value_or(NowUnixNanos());
      out.checksum_algorithm = ChecksumAlgorithm::kNone;
      out.checksum.clear();
      for (ChecksumAlgorithm a : kResponseChecksums) {
        std::string v = x.Text("Checksum" + std::string(ChecksumAlgorithmName(a)));
        if (!v.empty()) {
          out.checksum_algorithm = a;
          out.checksum = v;
        }
      }
      return Status::Ok();
    }));
    return out;
  }
};

// ---------------------------------------------------------------------------

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
    if (s3_.options.path_style) AddParam(q, "path_style", *s3_.options.path_style ? "true" : "false");
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
    return Multipart(key, options, [&, off = uint64_t{0}](std::string& buf,
                                                          std::string_view* view) mutable -> Status {
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
      if (pin) c.headers.emplace_back("If-Match", *pin == "*" ? "*" : Quote(*pin));
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
          return Status::Conflict("\"" + std::string(key) + "\" was replaced while it was being "
                                  "read; read it again (" + s.message() + ")");
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
              IsHexMd5(i.etag) &&
              !resp.Header("x-amz-server-side-encryption-customer-algorithm") &&
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
      std::string xml = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
      std::map<std::string, std::vector<size_t>> index;  // full key -> positions
      for (size_t i = start; i < stop; ++i) {
        const std::string full = Full(keys[i]);
        if (!IsValidUtf8(full) || std::any_of(full.begin(), full.end(), [](char ch) {
              return static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r';
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
        STRATA_ASSIGN_OR_RETURN(XmlNode x, S3Client::Impl::ReadXml(resp, retry));
        if (x.name == "Error") return s3_.ErrorInBody(x, c, retry);
        for (const XmlNode& e : x.children) {
          if (e.name != "Error") continue;
          const std::string code = e.Text("Code");
          Status st(CodeForS3Error(500, code), code + ": " + e.Text("Message") + " (DELETE s3://" +
                                                   bucket_ + "/" + e.Text("Key") + ")");
          if (auto it = index.find(e.Text("Key")); it != index.end()) {
            for (size_t i : it->second) out[i] = st;
          }
        }
        return Status::Ok();
      }));
    }
    return out;
  }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, int max_keys) override {
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
      STRATA_ASSIGN_OR_RETURN(XmlNode x, S3Client::Impl::ReadXml(resp, retry));
      if (x.name == "Error") return s3_.ErrorInBody(x, c, retry);
      const bool url_encoded = x.Text("EncodingType") == "url";
      auto dec = [&](const std::string& s) {
        if (!url_encoded) return s;
        auto d = UriDecode(s, /*plus_as_space=*/true);
        return d ? *d : s;
      };
      page = ListPage();
      for (const XmlNode& n : x.children) {
        if (n.name == "Contents") {
          ObjectInfo i;
          i.key = dec(n.Text("Key"));
          i.size = ParseUint64(n.Text("Size")).value_or(0);
          i.etag = Unquote(n.Text("ETag"));
          i.mtime_ns = ParseIso8601(n.Text("LastModified")).value_or(0);
          for (ChecksumAlgorithm a : kResponseChecksums) {
            if (n.Text("ChecksumAlgorithm") == ChecksumAlgorithmName(a)) i.checksum_algorithm = a;
          }
          page.objects.push_back(Relative(std::move(i)));
        } else if (n.name == "CommonPrefixes") {
          std::string p = dec(n.Text("Prefix"));
          page.common_prefixes.push_back(p.substr(std::min(prefix_.size(), p.size())));
        }
      }
      if (x.Text("IsTruncated") == "true") {
        page.next_token = x.Text("NextContinuationToken");
        if (page.next_token.empty()) {
          return Status::IOError("ListObjectsV2 response is truncated but has no "
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

  Result<UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                  int part_number, ByteSource& body, uint64_t size) override {
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
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info,
                            s3_.CompleteMultipart(bucket_, Full(key), upload_id, parts, alg,
                                                  o ? &*o : nullptr));
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
        STRATA_ASSIGN_OR_RETURN(XmlNode x, S3Client::Impl::ReadXml(resp, retry));
        if (x.name == "Error") return s3_.ErrorInBody(x, c, retry);
        std::vector<UploadedPart> page;
        for (const XmlNode& n : x.children) {
          if (n.name != "Part") continue;
          UploadedPart p;
          p.number = static_cast<int>(ParseUint64(n.Text("PartNumber")).value_or(0));
          p.etag = Unquote(n.Text("ETag"));
          p.size = ParseUint64(n.Text("Size")).value_or(0);
          for (ChecksumAlgorithm a : kResponseChecksums) {
            std::string v = n.Text("Checksum" + std::string(ChecksumAlgorithmName(a)));
            if (!v.empty()) p.checksum = v;
          }
          page.push_back(std::move(p));
        }
        out.insert(out.end(), page.begin(), page.end());
        truncated = x.Text("IsTruncated") == "true";
        marker = x.Text("NextPartNumberMarker");
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
    c.headers.emplace_back("x-amz-rename-source", "/" + bucket_ + "/" + UriEncode(Full(src_key), true));
    Status s = s3_.Execute(c, nullptr);
    if (s.code() == StatusCode::kNotSupported ||
        (s.code() == StatusCode::kInvalidArgument && s.message().find("renameObject") != std::string::npos)) {
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
  Result<ObjectInfo> Multipart(std::string_view key, const WriteOptions& options,
                               const std::function<Status(std::string& buf, std::string_view* view)>& next_part) {
    const std::string full = Full(key);
    STRATA_ASSIGN_OR_RETURN(std::string id, s3_.CreateMultipart(bucket_, full, options));
    auto abort = [&](Status s) -> Status {
      Status a = s3_.AbortMultipart(bucket_, full, id);
      if (!a.ok()) kLog.Warn("could not abort multipart upload {} of {}: {}", id, full, a.ToString());
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
        return abort(Status::InvalidArgument("TooManyParts: the body needs more than 10000 parts; "
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
                                           " bytes; its size said " + std::to_string(*options.size)));
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

// ---------------------------------------------------------------------------

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;

Result<std::shared_ptr<S3Client>> S3Client::Create(S3Options options) {
  if (options.endpoint.empty()) {
    options.endpoint = "https://s3." + (options.region.empty() ? "us-east-1" : options.region) +
                       ".amazonaws.com";
  }
  if (options.region.empty()) options.region = "us-east-1";
  STRATA_ASSIGN_OR_RETURN(http::ParsedUrl u, http::ParseHttpUrl(options.endpoint));
  if (u.target.find('?') != std::string::npos) {
    return Status::InvalidArgument("S3 endpoint \"" + options.endpoint + "\" must not have a query");
  }
  if (options.credentials.access_key.empty() != options.credentials.secret_key.empty()) {
    return Status::InvalidArgument("S3 credentials need both an access key and a secret key");
  }
  const bool aws = u.host.size() > 14 && u.host.compare(u.host.size() - 14, 14, ".amazonaws.com") == 0;
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

std::unique_ptr<ObjectStore> S3Client::OpenBucket(std::string bucket, std::string prefix) {
  return std::make_unique<S3ObjectStore>(shared_from_this(), std::move(bucket), std::move(prefix));
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
    STRATA_ASSIGN_OR_RETURN(XmlNode x, Impl::ReadXml(resp, retry));
    if (x.name == "Error") return impl_->ErrorInBody(x, c, retry);
    out.clear();
    if (const XmlNode* bs = x.Child("Buckets")) {
      for (const XmlNode& b : bs->children) {
        if (b.name != "Bucket") continue;
        out.push_back({b.Text("Name"), ParseIso8601(b.Text("CreationDate")).value_or(0)});
      }
    }
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
    xml = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
          "<LocationConstraint>" + XmlEscape(impl_->options.region) +
          "</LocationConstraint></CreateBucketConfiguration>";
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

// ---------------------------------------------------------------------------

Result<std::pair<S3Options, S3Location>> ResolveS3Url(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(StoreUrl u, ParseStoreUrl(url));
  if (u.scheme != "s3") {
    return Status::InvalidArgument("\"" + std::string(url) + "\" is not an s3:// URL");
  }
  if (u.host.empty()) {
    return Status::InvalidArgument("s3:// URL \"" + std::string(url) + "\" names no bucket");
  }
  S3Options o;
  S3Location loc{u.host, NormalizePrefix(u.path)};
  auto& p = u.params;
  auto take = [&](const char* name) -> std::optional<std::string> {
    auto it = p.find(name);
    if (it == p.end()) return std::nullopt;
    std::string v = it->second;
    p.erase(it);
    return v;
  };
  auto bad = [&](const std::string& name, const std::string& v) {
    return Status::InvalidArgument("bad value \"" + v + "\" for " + name + " in \"" +
                                   std::string(url) + "\"");
  };

  const std::string profile =
      take("profile").value_or(Env("AWS_PROFILE").empty() ? "default" : Env("AWS_PROFILE"));
  IniFile creds_file = ReadIni(HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
  IniFile config_file = ReadIni(HomeFile("AWS_CONFIG_FILE", ".aws/config"));
  const auto& cred_section = creds_file[profile];
  const auto& conf_section = config_file[profile == "default" ? "default" : "profile " + profile];
  auto file_value = [&](const char* key) -> std::string {
    if (auto it = cred_section.find(key); it != cred_section.end()) return it->second;
    if (auto it = conf_section.find(key); it != conf_section.end()) return it->second;
    return "";
  };

  // Credentials: URL, environment, profile.
  auto ak = take("access_key");
  auto sk = take("secret_key");
  auto token = take("session_token");
  if (ak || sk) {
    o.credentials.access_key = ak.value_or("");
    o.credentials.secret_key = sk.value_or("");
    o.credentials.session_token = token.value_or("");
  } else if (!Env("AWS_ACCESS_KEY_ID").empty()) {
    o.credentials.access_key = Env("AWS_ACCESS_KEY_ID");
    o.credentials.secret_key = Env("AWS_SECRET_ACCESS_KEY");
    o.credentials.session_token = token.value_or(Env("AWS_SESSION_TOKEN"));
  } else {
    o.credentials.access_key = file_value("aws_access_key_id");
    o.credentials.secret_key = file_value("aws_secret_access_key");
    o.credentials.session_token = token.value_or(file_value("aws_session_token"));
  }

  // Region and endpoint.
  if (auto r = take("region")) {
    o.region = *r;
  } else if (!Env("AWS_REGION").empty()) {
    o.region = Env("AWS_REGION");
  } else if (!Env("AWS_DEFAULT_REGION").empty()) {
    o.region = Env("AWS_DEFAULT_REGION");
  } else if (auto it = conf_section.find("region"); it != conf_section.end()) {
    o.region = it->second;
  }
  if (auto e = take("endpoint")) {
    o.endpoint = *e;
  } else if (!Env("AWS_ENDPOINT_URL_S3").empty()) {
    o.endpoint = Env("AWS_ENDPOINT_URL_S3");
  } else if (!Env("AWS_ENDPOINT_URL").empty()) {
    o.endpoint = Env("AWS_ENDPOINT_URL");
  } else if (auto it = conf_section.find("s3.endpoint_url"); it != conf_section.end()) {
    o.endpoint = it->second;
  } else if (auto it2 = conf_section.find("endpoint_url"); it2 != conf_section.end()) {
    o.endpoint = it2->second;
  }

  // Everything else.
  auto flag = [&](const char* name, bool& field) -> Status {
    if (auto v = take(name)) {
      auto b = ParseBool(*v);
      if (!b) return bad(name, *v);
      field = *b;
    }
    return Status::Ok();
  };
  auto number = [&](const char* name, auto& field) -> Status {
    if (auto v = take(name)) {
      auto n = ParseUint64(*v);
      if (!n) return bad(name, *v);
      field = static_cast<std::remove_reference_t<decltype(field)>>(*n);
    }
    return Status::Ok();
  };
  auto rate = [&](const char* name, double& field) -> Status {
    if (auto v = take(name)) {
      char* end = nullptr;
      double d = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || d < 0 || d > 1) return bad(name, *v);
      field = d;
    }
    return Status::Ok();
  };
  if (auto v = take("path_style")) {
    auto b = ParseBool(*v);
    if (!b) return bad("path_style", *v);
    o.path_style = *b;
  }
  if (auto v = take("verify_md5")) {
    const std::string m = ToLower(*v);
    if (m == "always" || m == "true") o.verify_md5 = S3Options::EtagCheck::kAlways;
    else if (m == "never" || m == "false") o.verify_md5 = S3Options::EtagCheck::kNever;
    else if (m == "when_no_checksum") o.verify_md5 = S3Options::EtagCheck::kWhenNoChecksum;
    else return bad("verify_md5", *v + " (always|never|when_no_checksum)");
  }
  STRATA_RETURN_IF_ERROR(flag("verify_checksum", o.verify_checksum));
  STRATA_RETURN_IF_ERROR(flag("sign_payload", o.sign_payload));
  STRATA_RETURN_IF_ERROR(flag("tls_verify", o.http.tls_verify));
  if (auto v = take("rename_object")) {
    auto b = ParseBool(*v);
    if (!b) return bad("rename_object", *v);
    o.rename_object = *b;
  }
  if (auto v = take("ca_file")) o.http.tls_ca_file = *v;
  STRATA_RETURN_IF_ERROR(number("part_size", o.part_size));
  STRATA_RETURN_IF_ERROR(number("multipart_threshold", o.multipart_threshold));
  STRATA_RETURN_IF_ERROR(number("connect_timeout_ms", o.http.connect_timeout_ms));
  STRATA_RETURN_IF_ERROR(number("timeout_ms", o.http.io_timeout_ms));
  STRATA_RETURN_IF_ERROR(number("max_idle_connections", o.http.max_idle_per_host));
  if (auto v = take("max_retries")) {
    auto n = ParseUint64(*v);
    if (!n || *n > 100) return bad("max_retries", *v);
    o.retry.max_attempts = static_cast<int>(*n) + 1;
  }
  STRATA_RETURN_IF_ERROR(rate("fault_error_rate", o.http.faults.error_rate));
  STRATA_RETURN_IF_ERROR(rate("fault_drop_rate", o.http.faults.drop_rate));
  STRATA_RETURN_IF_ERROR(number("fault_seed", o.http.faults.seed));
  if (o.part_size < (5ull << 20) || o.part_size > kMaxSinglePut) {
    return bad("part_size", std::to_string(o.part_size) + " (5 MiB to 5 GiB)");
  }
  if (!p.empty()) {
    return Status::InvalidArgument("unknown parameter \"" + p.begin()->first + "\" in \"" +
                                   std::string(url) + "\"");
  }
  return std::make_pair(std::move(o), std::move(loc));
}

Result<std::unique_ptr<ObjectStore>> OpenS3Url(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(auto resolved, ResolveS3Url(url));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<S3Client> client,
                          S3Client::Create(std::move(resolved.first)));
  return client->OpenBucket(std::move(resolved.second.bucket), std::move(resolved.second.prefix));
}

}  // namespace strata::objstore
