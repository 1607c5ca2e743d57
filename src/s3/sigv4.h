// AWS Signature Version 4 verification for the S3 frontend.
//
// Pure logic over views of the request: no sockets, no clock reads (the caller
// passes now_ns), so every rule can be unit-tested. VerifySigV4 handles header
// auth (Authorization: AWS4-HMAC-SHA256 ...) and presigned query auth
// (X-Amz-Algorithm=...); a request with neither is anonymous.
//
// Errors are Statuses whose message starts with the S3 error code and ": "
// ("SignatureDoesNotMatch: ..."), so ToS3Error maps them without a table.
// kPermissionDenied for authentication failures, kInvalidArgument for
// malformed requests.
//
// Thread-safety: all functions are thread-safe. Derived signing keys are cached
// per thread (no lock on the request path).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/sigv4.h>

namespace strata::s3 {

struct Credentials {
  std::string access_key;
  std::string secret_key;
};

// Looks up a secret by access key; nullopt if unknown. Called once per
// authenticated request, possibly from several threads at once.
using CredentialLookup = std::function<std::optional<std::string>(std::string_view access_key)>;

// What the verifier needs from an HTTP request. Views must outlive the call.
struct SigV4Request {
  std::string_view method;
  std::string_view path;   // raw, percent-encoded as received, without the query
  std::string_view query;  // raw, without the leading '?'
  std::vector<std::pair<std::string_view, std::string_view>> headers;  // as received
  int64_t now_ns = 0;                                                   // Unix nanoseconds
};

enum class PayloadMode {
  kSignedHex,                 // x-amz-content-sha256 is a hex SHA-256 the frontend must check
  kUnsigned,                  // UNSIGNED-PAYLOAD (and presigned URLs without a payload hash)
  kStreamingSigned,           // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
  kStreamingSignedTrailer,    // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  kStreamingUnsignedTrailer,  // STREAMING-UNSIGNED-PAYLOAD-TRAILER
  kAnonymous,                 // no authentication at all
};

// The signing name of S3 Express One Zone requests (CreateSession,
// ListDirectoryBuckets, requests signed with session credentials).
inline constexpr std::string_view kS3ExpressService = "s3express";

struct AuthResult {
  std::string access_key;  // empty for kAnonymous
  std::string service;     // the credential scope's service: "s3" or "s3express"
  PayloadMode payload_mode = PayloadMode::kAnonymous;
  std::string payload_sha256_hex;  // kSignedHex: lower-case hex the body must hash to
  bool presigned = false;          // authenticated by query parameters
  // Set by the frontend, not the verifier: signed with S3 Express session
  // credentials (CreateSession), which confine the request to one bucket.
  bool express_session = false;
  // For the streaming signed modes (AwsChunkedDecoder): the request's signature
  // seeds the chunk signature chain.
  std::string seed_signature;  // hex
  std::string signing_key;     // raw 32 bytes
  std::string scope;           // "20130524/us-east-1/s3/aws4_request"
  std::string amz_date;        // "20130524T000000Z"
};

inline constexpr int64_t kDefaultMaxSkewNs = 15LL * 60 * 1'000'000'000;
inline constexpr int64_t kMaxPresignedExpiresSec = 604800;  // one week, as S3

// Verifies the request's signature. Region: whatever the client signed with
// (taken from the credential scope); service must be "s3" or "s3express".
// A presigned URL's X-Amz-Expires outside 0..604800 is refused with 403
// AuthorizationQueryParametersError (kPermissionDenied), as S3 refuses it.
Result<AuthResult> VerifySigV4(const SigV4Request& req, const CredentialLookup& lookup,
                               int64_t max_skew_ns = kDefaultMaxSkewNs);

// ---- Building blocks, shared with AwsChunkedDecoder; they live in core
// (<strata/core/sigv4.h>) with the client-side signer.
using sigv4::CanonicalHeaderValue;
using sigv4::CanonicalQueryString;
using sigv4::ConstantTimeEquals;
using sigv4::DeriveSigningKey;
using sigv4::kEmptySha256Hex;
using sigv4::SignHex;

}  // namespace strata::s3
