#include "s3/sigv4.h"

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

namespace strata::s3 {
namespace {

using sigv4::kAlgorithm;
using sigv4::StringToSign;
constexpr std::string_view kTerminator = "aws4_request";
constexpr int64_t kNanosPerSec = 1'000'000'000;

Status Denied(std::string_view code, std::string_view text) {
  std::string m;
  m.reserve(code.size() + 2 + text.size());
  m.append(code).append(": ").append(text);
  return Status::PermissionDenied(std::move(m));
}

Status Malformed(std::string_view code, std::string_view text) {
  std::string m;
  m.reserve(code.size() + 2 + text.size());
  m.append(code).append(": ").append(text);
  return Status::InvalidArgument(std::move(m));
}

Status SignatureMismatch() {
  return Denied("SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided. "
                "Check your key and signing method.");
}

std::optional<std::string_view> FindHeader(const SigV4Request& req, std::string_view name) {
  for (const auto& [k, v] : req.headers) {
    if (IEquals(k, name)) return v;
  }
  return std::nullopt;
}

// Raw query parameter (name as received), its value URI-decoded.
std::optional<std::string> FindQueryParam(std::string_view query, std::string_view name) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view piece = query.substr(start, end - start);
    const size_t eq = piece.find('=');
    const std::string_view k = piece.substr(0, eq);
    if (k == name) {
      if (eq == std::string_view::npos) return std::string();
      auto v = UriDecode(piece.substr(eq + 1), /*plus_as_space=*/true);
      return v ? std::move(*v) : std::string(piece.substr(eq + 1));
    }
    start = end + 1;
  }
  return std::nullopt;
}

bool HasQueryParam(std::string_view query, std::string_view name) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view piece = query.substr(start, end - start);
    if (piece.substr(0, piece.find('=')) == name) return true;
    start = end + 1;
  }
  return false;
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

// "AKID/20130524/us-east-1/s3/aws4_request", split from the end so that the
// access key is everything before the scope.
struct CredentialScope {
  std::string_view access_key, date, region, service, terminator;
  std::string_view scope;  // "date/region/service/aws4_request"
};

std::optional<CredentialScope> ParseCredential(std::string_view cred) {
  size_t cut[4];
  size_t pos = cred.size();
  for (int i = 3; i >= 0; --i) {
    if (pos == 0) return std::nullopt;
    const size_t slash = cred.rfind('/', pos - 1);
    if (slash == std::string_view::npos) return std::nullopt;
    cut[i] = slash;
    pos = slash;
  }
  CredentialScope c;
  c.access_key = cred.substr(0, cut[0]);
  c.date = cred.substr(cut[0] + 1, cut[1] - cut[0] - 1);
  c.region = cred.substr(cut[1] + 1, cut[2] - cut[1] - 1);
  c.service = cred.substr(cut[2] + 1, cut[3] - cut[2] - 1);
  c.terminator = cred.substr(cut[3] + 1);
  c.scope = cred.substr(cut[0] + 1);
  if (c.access_key.empty() || c.date.size() != 8 || c.region.empty() || c.service.empty()) {
    return std::nullopt;
  }
  for (char ch : c.date) {
    if (ch < '0' || ch > '9') return std::nullopt;
  }
  return c;
}

// What both auth styles hand to the common verifier.
struct Parsed {
  CredentialScope cred;
  std::string_view signed_headers;
  std::string_view signature;
  std::string amz_date;  // for the string to sign
  std::string_view payload_hash;
  std::string canonical_query;
};

std::string CanonicalRequest(const SigV4Request& req, std::string_view uri, const Parsed& p) {
  std::string cr;
  cr.reserve(256 + uri.size() + p.canonical_query.size() + p.signed_headers.size() * 4);
  cr.append(req.method).push_back('\n');
  cr.append(uri.empty() ? std::string_view("/") : uri).push_back('\n');
  cr.append(p.canonical_query).push_back('\n');
  // Canonical headers, in SignedHeaders order (clients sort it; we sign what they sent).
  size_t start = 0;
  std::string_view sh = p.signed_headers;
  while (start <= sh.size()) {
    size_t end = sh.find(';', start);
    if (end == std::string_view::npos) end = sh.size();
    const std::string_view name = sh.substr(start, end - start);
    for (char c : name) cr.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
    cr.push_back(':');
    bool first = true;
    for (const auto& [k, v] : req.headers) {
      if (!IEquals(k, name)) continue;
      if (!first) cr.push_back(',');
      first = false;
      cr.append(CanonicalHeaderValue(v));
    }
    cr.push_back('\n');
    start = end + 1;
  }
  cr.push_back('\n');
  cr.append(sh).push_back('\n');
  cr.append(p.payload_hash);
  return cr;
}

Status CheckSignedHeaders(std::string_view sh, std::string_view code) {
  if (sh.empty()) return Malformed(code, "SignedHeaders is empty; it must list at least host.");
  bool host = false;
  size_t start = 0;
  while (start <= sh.size()) {
    size_t end = sh.find(';', start);
    if (end == std::string_view::npos) end = sh.size();
    const std::string_view name = sh.substr(start, end - start);
    if (name.empty()) return Malformed(code, "SignedHeaders contains an empty header name.");
    if (IEquals(name, "host")) host = true;
    start = end + 1;
  }
  if (!host) {
    return Malformed(code, "SignedHeaders must include host: the Host header has to be signed.");
  }
  return Status::Ok();
}

Result<PayloadMode> ParsePayloadHash(std::string_view v) {
  if (v == "UNSIGNED-PAYLOAD") return PayloadMode::kUnsigned;
  if (v == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") return PayloadMode::kStreamingSigned;
  if (v == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") {
    return PayloadMode::kStreamingSignedTrailer;
  }
  if (v == "STREAMING-UNSIGNED-PAYLOAD-TRAILER") return PayloadMode::kStreamingUnsignedTrailer;
  if (IsHex64(v)) return PayloadMode::kSignedHex;
  if (StartsWith(v, "STREAMING-AWS4-ECDSA-P256-SHA256")) {
    return Malformed("NotImplemented",
                     "SigV4a (STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD) is not supported; sign "
                     "with AWS4-HMAC-SHA256.");
  }
  return Malformed("InvalidArgument",
                   "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER), "
                   "STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid sha256 value.");
}

// Signature check shared by header and query auth. `uri` alternatives: the
// path as received, and, when a client put characters in the request line
// that SigV4 encodes (e.g. '$', '!', ' ' as raw bytes), the SigV4 encoding of
// the decoded path. Both name the same key, so accepting either is safe.
Result<AuthResult> VerifyCommon(const SigV4Request& req, const CredentialLookup& lookup,
                                const Parsed& p, PayloadMode mode, bool presigned) {
  std::optional<std::string> secret = lookup(p.cred.access_key);
  if (!secret) {
    return Denied("InvalidAccessKeyId",
                  "The AWS Access Key Id you provided does not exist in our records.");
  }
  std::string key = DeriveSigningKey(*secret, p.cred.date, p.cred.region, p.cred.service);

  std::string sig = SignHex(key, StringToSign(p.amz_date, p.cred.scope,
                                               CanonicalRequest(req, req.path, p)));
  const std::string provided = ToLower(p.signature);
  bool ok = ConstantTimeEquals(sig, provided);
  if (!ok) {
    if (auto decoded = UriDecode(req.path)) {
      std::string reencoded = UriEncode(*decoded, /*keep_slash=*/true);
      if (reencoded != req.path) {
        sig = SignHex(key, StringToSign(p.amz_date, p.cred.scope,
                                        CanonicalRequest(req, reencoded, p)));
        ok = ConstantTimeEquals(sig, provided);
      }
    }
  }
  if (!ok) return SignatureMismatch();

  AuthResult r;
  r.access_key = std::string(p.cred.access_key);
  r.service = std::string(p.cred.service);
  r.payload_mode = mode;
  r.presigned = presigned;
  if (mode == PayloadMode::kSignedHex) r.payload_sha256_hex = ToLower(p.payload_hash);
  if (mode == PayloadMode::kStreamingSigned || mode == PayloadMode::kStreamingSignedTrailer) {
    r.seed_signature = provided;
    r.signing_key = std::move(key);
    r.scope = std::string(p.cred.scope);
    r.amz_date = p.amz_date;
  }
  return r;
}

Status CheckScope(const CredentialScope& c, std::string_view amz_date, std::string_view code) {
  if (c.terminator != kTerminator) {
    return Malformed(code, "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/"
                           "REGION/SERVICE/aws4_request\".");
  }
  // One endpoint serves both signing names: "s3" and, for S3 Express One Zone
  // (directory buckets, CreateSession, ListDirectoryBuckets), "s3express".
  if (c.service != "s3" && c.service != kS3ExpressService) {
    return Malformed(code, "incorrect service \"" + std::string(c.service) +
                               "\" in the Credential. This endpoint belongs to \"s3\" and "
                               "\"s3express\".");
  }
  if (amz_date.substr(0, 8) != c.date) {
    return Malformed(code, "Invalid credential date \"" + std::string(c.date) +
                               "\". Date is not the same as X-Amz-Date: \"" +
                               std::string(amz_date.substr(0, 8)) + "\".");
  }
  return Status::Ok();
}

Result<AuthResult> VerifyHeaderAuth(const SigV4Request& req, std::string_view auth,
                                    const CredentialLookup& lookup, int64_t max_skew_ns) {
  constexpr std::string_view kCode = "AuthorizationHeaderMalformed";
  std::string_view rest = auth.substr(kAlgorithm.size());
  if (rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) {
    return Malformed(kCode, "The authorization header is malformed; expected "
                            "\"AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., "
                            "Signature=...\".");
  }
  std::optional<std::string_view> credential, signed_headers, signature;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(',', start);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view part = Trim(rest.substr(start, end - start));
    start = end + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return Malformed(kCode, "The authorization header is malformed; \"" + std::string(part) +
                                  "\" is not a key=value pair.");
    }
    const std::string_view k = Trim(part.substr(0, eq)), v = Trim(part.substr(eq + 1));
    if (k == "Credential") credential = v;
    else if (k == "SignedHeaders") signed_headers = v;
    else if (k == "Signature") signature = v;
  }
  if (!credential || !signed_headers || !signature) {
    return Malformed(kCode, "The authorization header is malformed; it must contain "
                            "Credential, SignedHeaders and Signature.");
  }
  Parsed p;
  auto cred = ParseCredential(*credential);
  if (!cred) {
    return Malformed(kCode, "The authorization header is malformed; the Credential is "
                            "mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/"
                            "aws4_request\".");
  }
  p.cred = *cred;
  p.signed_headers = *signed_headers;
  p.signature = *signature;
  if (!IsHex64(p.signature)) {
    return Malformed(kCode, "The authorization header is malformed; Signature must be 64 hex "
                            "characters.");
  }
  STRATA_RETURN_IF_ERROR(CheckSignedHeaders(p.signed_headers, kCode));

  // Request time: X-Amz-Date, else Date.
  int64_t t;
  if (auto xd = FindHeader(req, "x-amz-date")) {
    auto parsed = ParseAmzDate(Trim(*xd));
    if (!parsed) {
      return Denied("AccessDenied", "X-Amz-Date \"" + std::string(*xd) +
                                        "\" is not in the ISO 8601 basic format "
                                        "YYYYMMDD'T'HHMMSS'Z'.");
    }
    t = *parsed;
    p.amz_date = std::string(Trim(*xd));
  } else if (auto d = FindHeader(req, "date")) {
    auto parsed = ParseHttpDate(*d);
    if (!parsed) {
      return Denied("AccessDenied", "AWS authentication requires a valid Date or x-amz-date "
                                    "header.");
    }
    t = *parsed;
    p.amz_date = FormatAmzDate(t);
  } else {
    return Denied("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header.");
  }
  STRATA_RETURN_IF_ERROR(CheckScope(p.cred, p.amz_date, kCode));
  const int64_t skew = req.now_ns > t ? req.now_ns - t : t - req.now_ns;
  if (skew > max_skew_ns) {
    return Denied("RequestTimeTooSkewed",
                  "The difference between the request time (" + p.amz_date +
                      ") and the server's time (" + FormatAmzDate(req.now_ns) +
                      ") is too large. Check the client's clock.");
  }

  auto content_sha = FindHeader(req, "x-amz-content-sha256");
  if (!content_sha) {
    return Malformed("InvalidRequest",
                     "Missing required header for this request: x-amz-content-sha256.");
  }
  p.payload_hash = Trim(*content_sha);
  STRATA_ASSIGN_OR_RETURN(PayloadMode mode, ParsePayloadHash(p.payload_hash));
  p.canonical_query = CanonicalQueryString(req.query, /*drop_signature=*/false);
  return VerifyCommon(req, lookup, p, mode, /*presigned=*/false);
}

Result<AuthResult> VerifyQueryAuth(const SigV4Request& req, const CredentialLookup& lookup,
                                   int64_t max_skew_ns) {
  constexpr std::string_view kCode = "AuthorizationQueryParametersError";
  auto algorithm = FindQueryParam(req.query, "X-Amz-Algorithm");
  auto credential = FindQueryParam(req.query, "X-Amz-Credential");
  auto date = FindQueryParam(req.query, "X-Amz-Date");
  auto expires = FindQueryParam(req.query, "X-Amz-Expires");
  auto signed_headers = FindQueryParam(req.query, "X-Amz-SignedHeaders");
  auto signature = FindQueryParam(req.query, "X-Amz-Signature");
  if (!algorithm || !credential || !date || !expires || !signed_headers || !signature) {
    return Malformed(kCode, "Query-string authentication version 4 requires the "
                            "X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, "
                            "X-Amz-SignedHeaders, and X-Amz-Expires parameters.");
  }
  if (*algorithm != kAlgorithm) {
    return Malformed(kCode, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\".");
  }
  Parsed p;
  auto cred = ParseCredential(*credential);
  if (!cred) {
    return Malformed(kCode, "Error parsing the X-Amz-Credential parameter; expecting "
                            "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".");
  }
  p.cred = *cred;
  p.signed_headers = *signed_headers;
  p.signature = *signature;
  if (!IsHex64(p.signature)) {
    return Malformed(kCode, "X-Amz-Signature must be 64 hex characters.");
  }
  STRATA_RETURN_IF_ERROR(CheckSignedHeaders(p.signed_headers, kCode));
  auto t = ParseAmzDate(*date);
  if (!t) {
    return Malformed(kCode, "X-Amz-Date must be in the ISO8601 Long Format "
                            "\"yyyyMMdd'T'HHmmss'Z'\".");
  }
  p.amz_date = *date;
  STRATA_RETURN_IF_ERROR(CheckScope(p.cred, p.amz_date, kCode));
  auto exp = ParseInt64(*expires);
  if (!exp) return Malformed(kCode, "X-Amz-Expires should be a number.");
  // Out-of-range lifetimes are refused as S3 refuses them: 403 Forbidden with
  // AuthorizationQueryParametersError (the code's other uses are 400s), hence
  // Denied rather than Malformed.
  if (*exp < 0) return Denied(kCode, "X-Amz-Expires must be non-negative.");
  if (*exp > kMaxPresignedExpiresSec) {
    return Denied(kCode, "X-Amz-Expires must be less than a week (in seconds); that is, the given "
                         "X-Amz-Expires must be less than 604800 seconds.");
  }
  if (*t - req.now_ns > max_skew_ns) {
    return Denied("AccessDenied", "Request is not valid yet: X-Amz-Date " + p.amz_date +
                                      " is in the future.");
  }
  if (req.now_ns > *t + *exp * kNanosPerSec) {
    return Denied("AccessDenied", "Request has expired");
  }

  // Presigned URLs carry no payload hash unless the signer put one in the query.
  PayloadMode mode = PayloadMode::kUnsigned;
  std::optional<std::string> content_sha = FindQueryParam(req.query, "X-Amz-Content-Sha256");
  std::string payload_hash = content_sha ? *content_sha : std::string("UNSIGNED-PAYLOAD");
  if (content_sha) {
    STRATA_ASSIGN_OR_RETURN(mode, ParsePayloadHash(payload_hash));
    if (mode != PayloadMode::kSignedHex && mode != PayloadMode::kUnsigned) {
      return Malformed(kCode, "X-Amz-Content-Sha256 in a presigned URL must be UNSIGNED-PAYLOAD "
                              "or a hex SHA-256.");
    }
  }
  p.payload_hash = payload_hash;
  p.canonical_query = CanonicalQueryString(req.query, /*drop_signature=*/true);
  return VerifyCommon(req, lookup, p, mode, /*presigned=*/true);
}

}  // namespace

Result<AuthResult> VerifySigV4(const SigV4Request& req, const CredentialLookup& lookup,
                               int64_t max_skew_ns) {
  const std::optional<std::string_view> auth = FindHeader(req, "authorization");
  const bool query_v4 = HasQueryParam(req.query, "X-Amz-Algorithm");
  const bool query_v2 = HasQueryParam(req.query, "AWSAccessKeyId") &&
                        HasQueryParam(req.query, "Signature");
  if (auth && (query_v4 || query_v2)) {
    return Malformed("InvalidArgument",
                     "Only one auth mechanism allowed; only the X-Amz-Algorithm query "
                     "parameter, Signature query string parameter or the Authorization header "
                     "should be specified.");
  }
  if (auth) {
    const std::string_view a = Trim(*auth);
    if (StartsWith(a, kAlgorithm)) return VerifyHeaderAuth(req, a, lookup, max_skew_ns);
    if (StartsWith(a, "AWS ")) {
      return Malformed("InvalidRequest",
                       "The authorization mechanism you have provided (Signature Version 2) is "
                       "not supported. Please use AWS4-HMAC-SHA256.");
    }
    return Malformed("AuthorizationHeaderMalformed",
                     "The authorization header is malformed; unsupported algorithm. Please use "
                     "AWS4-HMAC-SHA256.");
  }
  if (query_v4) return VerifyQueryAuth(req, lookup, max_skew_ns);
  if (query_v2) {
    return Malformed("InvalidRequest",
                     "The authorization mechanism you have provided (Signature Version 2 "
                     "query string) is not supported. Please use AWS4-HMAC-SHA256.");
  }
  AuthResult anonymous;
  anonymous.payload_mode = PayloadMode::kAnonymous;
  return anonymous;
}

}  // namespace strata::s3
