// Private to the S3 client: S3Client::Impl (endpoint, signing, the HTTP
// connection pool, retries, and the requests S3Client and S3ObjectStore share)
// and the helpers its files share. s3_client.cc: sending, signing, retries,
// error mapping and S3Client's own calls; s3_client_ops.cc: the object and
// multipart requests on full keys; s3_object_store.cc: the ObjectStore over a
// bucket/prefix; s3_url.cc: s3:// URLs, the environment and ~/.aws;
// s3_xml.cc: the response documents.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/http_client.h>
#include <strata/core/log.h>
#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_xml.h"

namespace strata::objstore {

inline constexpr log::Logger kLog("objstore");
inline constexpr uint64_t kMaxSinglePut =
    5ull << 30;  // S3's limit for PutObject / UploadPart / CopyObject
inline constexpr size_t kMaxXmlBody = 32 << 20;
inline constexpr size_t kMaxErrorBody = 64 << 10;

// Appends name=value (URI-encoded; just name when bare) to a query string.
void AddParam(std::string& q, std::string_view name, std::string_view value, bool bare = false);

inline bool IsTransport(const Status& s) {
  return s.code() == StatusCode::kIOError || s.code() == StatusCode::kUnavailable;
}

inline Status WithSuffix(const Status& s, std::string_view suffix) {
  return Status(s.code(), s.message() + std::string(suffix));
}

// The StatusCode of an S3 error code (or, when the code is unknown, of the HTTP status).
StatusCode CodeForS3Error(int http_status, std::string_view code);

// An upload body as the HTTP client pulls it (s3_client.cc).
class UploadBody;

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
    std::string op;  // for messages: "GET", "PutObject", ...
    std::string method;
    std::string bucket;
    std::string key;  // full key, not encoded
    bool has_key = false;
    std::string query;  // encoded, without '?'
    http::HeaderList headers;
    std::string_view body;
    ByteSource* source = nullptr;
    uint64_t source_size = 0;
    ChecksumAlgorithm trailer = ChecksumAlgorithm::kNone;
    bool idempotent = true;
    int attempts = 0;  // filled by Execute
  };

  // Called for 2xx responses; sets *retry when a failure may be repeated.
  using OnOk = std::function<Status(http::ClientResponse&, bool* retry)>;

  std::string Describe(const Call& c) const {
    std::string s = c.method + " s3://" + c.bucket;
    if (c.has_key) s += "/" + c.key;
    return s;
  }

  void Backoff(int attempt);
  void AddSseCustomerHeaders(std::string_view op, http::HeaderList& h) const;
  Result<std::unique_ptr<http::ClientResponse>> SendOnce(Call& call, UploadBody* body);
  // The response's S3 error as a Status; *retry when it is worth repeating.
  Status ErrorFrom(http::ClientResponse& resp, const Call& call, bool* retry);
  // An <Error> document in a 200 response (CompleteMultipartUpload, CopyObject).
  Status ErrorInBody(const S3XmlError& x, const Call& call, bool* retry);
  // Sends call, retrying as the policy allows.
  Status Execute(Call& call, const OnOk& on_ok);

  // Reads a 2xx XML body into *out with parse; transport failures are
  // retriable, and so is a malformed document (truncated by a broken
  // connection); an <Error> document becomes its Status.
  template <class T>
  Status ReadXml(http::ClientResponse& resp, const Call& call, bool* retry,
                 Status (*parse)(std::string_view, T*), T* out) {
    auto body = resp.ReadAll(kMaxXmlBody);
    if (!body.ok()) {
      *retry = IsTransport(body.error());
      return body.error();
    }
    if (Status s = parse(*body, out); !s.ok()) {
      *retry = true;
      return s;
    }
    if (out->error) return ErrorInBody(*out->error, call, retry);
    return Status::Ok();
  }

  // Applies the metadata and conditions of WriteOptions to a request.
  static void AddWriteHeaders(http::HeaderList& h, const WriteOptions& o, bool conditions);
  ObjectInfo InfoFromHeaders(const http::ClientResponse& resp, std::string key) const;

  // ---- Operations shared by S3Client and S3ObjectStore (full keys), s3_client_ops.cc.

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
                            ByteSource* source, uint64_t size, ChecksumAlgorithm alg);
  Result<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                          const std::optional<std::string>& if_match);
  Result<std::string> CreateMultipart(const std::string& bucket, const std::string& key,
                                      const WriteOptions& o);
  Result<ObjectInfo> CompleteMultipart(const std::string& bucket, const std::string& key,
                                       std::string_view upload_id,
                                       const std::vector<UploadedPart>& parts,
                                       ChecksumAlgorithm alg, const WriteOptions* conditions);
  Status AbortMultipart(const std::string& bucket, const std::string& key, std::string_view id);
  Result<UploadedPart> UploadPartCopy(const std::string& dst_bucket, const std::string& dst_key,
                                      std::string_view upload_id, int part_number,
                                      const std::string& src_bucket, const std::string& src_key,
                                      std::optional<std::pair<uint64_t, uint64_t>> range,
                                      const std::optional<std::string>& source_if_match);
  Result<ObjectInfo> CopyObject(const std::string& src_bucket, const std::string& src_key,
                                const std::string& dst_bucket, const std::string& dst_key,
                                const CopyOptions& o);
};

}  // namespace strata::objstore
