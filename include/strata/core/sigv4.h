// AWS Signature Version 4: the building blocks shared by the S3 frontend's
// verifier (src/s3/sigv4.h) and the clients that sign requests (the S3 object
// store, benchmarks), plus the client-side signer itself.
//
// Pure logic: no sockets, no clock reads (callers pass now_ns), so every rule
// can be unit-tested against the AWS documentation examples.
//
// Thread-safety: all functions are thread-safe. Derived signing keys are cached
// per thread (no lock on the request path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::sigv4 {

inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

// The hex SHA-256 of the empty string (bodiless requests, chunk signatures).
inline constexpr std::string_view kEmptySha256Hex =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// x-amz-content-sha256 values a signer may choose instead of a hex digest.
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingUnsignedPayloadTrailer =
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

// Signing key = HMAC chain over "AWS4"+secret, date (YYYYMMDD), region, service,
// "aws4_request". Cached per thread (a handful of entries).
std::string DeriveSigningKey(std::string_view secret, std::string_view date,
                             std::string_view region, std::string_view service);

// Lower-case hex HMAC-SHA256(signing_key, string_to_sign).
std::string SignHex(std::string_view signing_key, std::string_view string_to_sign);

// Equal-length strings compared without data-dependent early exit.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// SigV4 canonical query string from a raw query: each name and value decoded
// ('+' as space) and re-encoded with UriEncode(keep_slash=false), sorted by name
// then value, joined with '&'. X-Amz-Signature is dropped when drop_signature.
std::string CanonicalQueryString(std::string_view raw_query, bool drop_signature);

// A header value as SigV4 canonicalises it: trimmed, inner whitespace runs
// collapsed to one space.
std::string CanonicalHeaderValue(std::string_view value);

// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical_request)>".
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);

// Lower-case hex SHA-256 of a payload, for x-amz-content-sha256.
std::string PayloadSha256Hex(std::string_view payload);

// ---- Client-side signing.

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // STS temporary credentials; "" if none
};

struct SigningParams {
  Credentials credentials;
  std::string region = "us-east-1";
  std::string service = "s3";
  int64_t now_ns = 0;  // Unix nanoseconds: the request time (x-amz-date)
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// What a signer produced (the streaming signed modes chain chunk signatures
// from it).
struct Signature {
  std::string signature;  // lower-case hex
  std::string amz_date;   // "20130524T000000Z"
  std::string scope;      // "20130524/us-east-1/s3/aws4_request"
};

// Header authentication. `path` is the canonical URI exactly as it is sent
// (already percent-encoded, as S3 wants it: no double encoding); `raw_query`
// the query as sent, without '?'. `headers` must contain Host. Adds (replacing
// any already there) x-amz-date, x-amz-content-sha256 = payload_hash,
// x-amz-security-token when the credentials carry one, and Authorization.
// Every header present is signed except hop-by-hop ones (Connection, Expect,
// Transfer-Encoding, User-Agent, ...), which proxies may change. payload_hash:
// a hex SHA-256 of the body (PayloadSha256Hex), kUnsignedPayload, or a
// streaming mode such as kStreamingUnsignedPayloadTrailer.
Signature SignRequest(std::string_view method, std::string_view path, std::string_view raw_query,
                      HeaderList& headers, std::string_view payload_hash,
                      const SigningParams& params);

// Query authentication (a presigned URL). Returns the full query string to
// send: raw_query plus X-Amz-Algorithm, -Credential, -Date, -Expires,
// -SignedHeaders (host only), -Security-Token (if any) and -Signature. The
// payload is UNSIGNED-PAYLOAD. expires_sec: 1..604800.
std::string PresignQuery(std::string_view method, std::string_view host, std::string_view path,
                         std::string_view raw_query, int64_t expires_sec,
                         const SigningParams& params);

}  // namespace strata::sigv4
