#include "s3/sigv4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

#include "s3/errors.h"

namespace strata::s3 {
namespace {

constexpr int64_t kSec = 1'000'000'000;
// 2013-05-24T00:00:00Z, the date of the AWS documentation examples.
constexpr int64_t kExampleNow = 1369353600LL * kSec;
constexpr char kAk[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

CredentialLookup Lookup() {
  return [](std::string_view ak) -> std::optional<std::string> {
    if (ak == kAk) return std::string(kSecret);
    if (ak == "AKOTHER") return std::string("other-secret");
    return std::nullopt;
  };
}

// An owned request; View() gives the SigV4Request over it.
struct TestReq {
  std::string method = "GET";
  std::string path = "/";
  std::string query;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t now = kExampleNow;

  SigV4Request View() const {
    SigV4Request r;
    r.method = method;
    r.path = path;
    r.query = query;
    for (const auto& [k, v] : headers) r.headers.emplace_back(k, v);
    r.now_ns = now;
    return r;
  }
  std::string Get(const std::string& name) const {
    for (const auto& [k, v] : headers) {
      if (IEquals(k, name)) return v;
    }
    return std::string();
  }
  void Set(const std::string& name, const std::string& value) {
    for (auto& [k, v] : headers) {
      if (IEquals(k, name)) {
        v = value;
        return;
      }
    }
    headers.emplace_back(name, value);
  }
};

// ---- An independent, deliberately plain implementation of the SigV4 spec,
// used to sign test requests.

std::string RefSigningKey(const std::string& secret, const std::string& date,
                          const std::string& region, const std::string& service = "s3") {
  std::string k = HmacSha256("AWS4" + secret, date);
  k = HmacSha256(k, region);
  k = HmacSha256(k, service);
  return HmacSha256(k, "aws4_request");
}

std::string RefCanonicalQuery(const std::string& query, bool presigned) {
  std::vector<std::pair<std::string, std::string>> params;
  std::stringstream ss(query);
  std::string piece;
  while (std::getline(ss, piece, '&')) {
    if (piece.empty()) continue;
    auto eq = piece.find('=');
    std::string n = piece.substr(0, eq);
    std::string v = eq == std::string::npos ? "" : piece.substr(eq + 1);
    if (presigned && n == "X-Amz-Signature") continue;
    params.emplace_back(UriEncode(*UriDecode(n, true), false), UriEncode(*UriDecode(v, true), false));
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (auto& [n, v] : params) out += (out.empty() ? "" : "&") + n + "=" + v;
  return out;
}

std::string RefHeaderValue(const std::string& v) {
  std::istringstream in(v);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

// Signs with the signed headers given (lower-case, sorted).
std::string RefSignature(const TestReq& r, const std::vector<std::string>& signed_headers,
                         const std::string& payload_hash, const std::string& secret,
                         const std::string& amz_date, const std::string& region,
                         bool presigned = false, const std::string* canonical_uri = nullptr,
                         const std::string& service = "s3") {
  std::map<std::string, std::vector<std::string>> hs;
  for (auto& [k, v] : r.headers) hs[ToLower(k)].push_back(RefHeaderValue(v));
  std::string canon = r.method + "\n" + (canonical_uri ? *canonical_uri : r.path) + "\n" +
                      RefCanonicalQuery(r.query, presigned) + "\n";
  std::string sh;
  for (auto& h : signed_headers) {
    std::string joined;
    for (auto& v : hs[h]) joined += (joined.empty() ? "" : ",") + v;
    canon += h + ":" + joined + "\n";
    sh += (sh.empty() ? "" : ";") + h;
  }
  canon += "\n" + sh + "\n" + payload_hash;
  const std::string scope = amz_date.substr(0, 8) + "/" + region + "/" + service + "/aws4_request";
  const std::string sts =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + HexEncode(Sha256(canon));
  return HexEncode(HmacSha256(RefSigningKey(secret, amz_date.substr(0, 8), region, service), sts));
}

std::string AuthHeader(const std::string& ak, const std::string& amz_date,
                       const std::string& region, const std::vector<std::string>& signed_headers,
                       const std::string& sig, const std::string& service = "s3") {
  std::string sh;
  for (auto& h : signed_headers) sh += (sh.empty() ? "" : ";") + h;
  return "AWS4-HMAC-SHA256 Credential=" + ak + "/" + amz_date.substr(0, 8) + "/" + region + "/" +
         service + "/aws4_request, SignedHeaders=" + sh + ", Signature=" + sig;
}

// Signs r in place with header auth.
void SignHeaderAuth(TestReq& r, const std::vector<std::string>& signed_headers,
                    const std::string& secret = kSecret, const std::string& ak = kAk,
                    const std::string& region = "us-east-1") {
  std::string amz_date, payload;
  for (auto& [k, v] : r.headers) {
    if (IEquals(k, "x-amz-date")) amz_date = v;
    if (IEquals(k, "x-amz-content-sha256")) payload = v;
  }
  const std::string sig = RefSignature(r, signed_headers, payload, secret, amz_date, region);
  r.Set("Authorization", AuthHeader(ak, amz_date, region, signed_headers, sig));
}

void ExpectError(const Result<AuthResult>& r, StatusCode code, std::string_view s3_code) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), code) << r.error().ToString();
  EXPECT_TRUE(StartsWith(r.error().message(), std::string(s3_code) + ": "))
      << r.error().message();
}

TestReq AwsGetObjectExample() {
  TestReq r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
       "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
      {"Range", "bytes=0-9"},
      {"x-amz-content-sha256", kEmptySha},
      {"x-amz-date", "20130524T000000Z"},
  };
  return r;
}

// ---- AWS documentation examples ("Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk" and
// "Authenticating Requests: Using Query Parameters").

TEST(SigV4Test, AwsExampleGetObject) {
  TestReq r = AwsGetObjectExample();
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  EXPECT_EQ(res->access_key, kAk);
  EXPECT_EQ(res->payload_mode, PayloadMode::kSignedHex);
  EXPECT_EQ(res->payload_sha256_hex, kEmptySha);
  EXPECT_FALSE(res->presigned);
  // Our independent signer agrees with the documentation's signature.
  EXPECT_EQ(RefSignature(r, {"host", "range", "x-amz-content-sha256", "x-amz-date"}, kEmptySha,
                         kSecret, "20130524T000000Z", "us-east-1"),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4Test, AwsExamplePutObject) {
  TestReq r;
  r.method = "PUT";
  r.path = "/test%24file.text";
  r.headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
       "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
  };
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  EXPECT_EQ(res->payload_mode, PayloadMode::kSignedHex);
  EXPECT_EQ(res->payload_sha256_hex, HexEncode(Sha256("Welcome to Amazon S3.")));
}

TEST(SigV4Test, AwsExampleGetBucketLifecycle) {
  TestReq r;
  r.path = "/";
  r.query = "lifecycle";
  r.headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
       "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-content-sha256", kEmptySha},
  };
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
}

TEST(SigV4Test, AwsExampleListObjects) {
  TestReq r;
  r.path = "/";
  r.query = "max-keys=2&prefix=J";
  r.headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
       "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-content-sha256", kEmptySha},
  };
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  // Parameter order does not matter.
  r.query = "prefix=J&max-keys=2";
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
  // But values do.
  r.query = "prefix=K&max-keys=2";
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
}

TestReq AwsPresignedExample() {
  TestReq r;
  r.path = "/test.txt";
  r.query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"
      "east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
      "SignedHeaders=host&X-Amz-Signature="
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  return r;
}

TEST(SigV4Test, AwsExamplePresignedUrl) {
  TestReq r = AwsPresignedExample();
  r.now = kExampleNow + 3600 * kSec;
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  EXPECT_TRUE(res->presigned);
  EXPECT_EQ(res->payload_mode, PayloadMode::kUnsigned);
  EXPECT_EQ(res->access_key, kAk);
  // Valid up to the last second of X-Amz-Expires.
  r.now = kExampleNow + 86400 * kSec;
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
}

TEST(SigV4Test, PresignedUrlExpired) {
  TestReq r = AwsPresignedExample();
  r.now = kExampleNow + 86401 * kSec;
  auto res = VerifySigV4(r.View(), Lookup());
  ExpectError(res, StatusCode::kPermissionDenied, "AccessDenied");
  EXPECT_NE(res.error().message().find("Request has expired"), std::string::npos);
}

TEST(SigV4Test, PresignedUrlNotYetValid) {
  TestReq r = AwsPresignedExample();
  r.now = kExampleNow - 3600 * kSec;
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied, "AccessDenied");
  r.now = kExampleNow - 60 * kSec;  // within the clock skew allowance
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
}

TEST(SigV4Test, PresignedUrlTampered) {
  TestReq r = AwsPresignedExample();
  r.path = "/test2.txt";
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
  r = AwsPresignedExample();
  r.query += "&response-content-type=text%2Fhtml";  // an unsigned extra parameter
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
  r = AwsPresignedExample();
  r.Set("Host", "evil.example.com");
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
}

TEST(SigV4Test, PresignedUrlParameterErrors) {
  TestReq r = AwsPresignedExample();
  auto replace = [&](const std::string& from, const std::string& to) {
    TestReq c = AwsPresignedExample();
    c.query.replace(c.query.find(from), from.size(), to);
    return c;
  };
  ExpectError(VerifySigV4(replace("X-Amz-Expires=86400", "X-Amz-Expires=abc").View(), Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("&X-Amz-Expires=86400", "").View(), Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("X-Amz-Algorithm=AWS4-HMAC-SHA256",
                                  "X-Amz-Algorithm=AWS4-HMAC-SHA1").View(),
                          Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("X-Amz-Date=20130524T000000Z", "X-Amz-Date=2013-05-24").View(),
                          Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("%2F20130524%2F", "%2F20130525%2F").View(), Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=range").View(),
                          Lookup()),
              StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  ExpectError(VerifySigV4(replace("AKIAIOSFODNN7EXAMPLE", "AKUNKNOWN").View(), Lookup()),
              StatusCode::kPermissionDenied, "InvalidAccessKeyId");
}

// S3 refuses an X-Amz-Expires over a week, or negative, with 403 Forbidden and
// AuthorizationQueryParametersError (ceph s3-tests, written against AWS:
// test_object_raw_get_x_amz_expires_out_max_range / _out_positive_range);
// malformed query parameters stay 400.
TEST(SigV4Test, PresignedExpiresOutOfRangeIsForbidden) {
  auto with_expires = [](const std::string& v) {
    TestReq c = AwsPresignedExample();
    const std::string from = "X-Amz-Expires=86400";
    c.query.replace(c.query.find(from), from.size(), "X-Amz-Expires=" + v);
    return c;
  };
  for (const std::string v : {"604801", "-1", "-7", "31536000"}) {
    auto res = VerifySigV4(with_expires(v).View(), Lookup());
    ExpectError(res, StatusCode::kPermissionDenied, "AuthorizationQueryParametersError");
    const S3Error e = ToS3Error(res.error());
    EXPECT_EQ(e.http_status, 403) << v;
    EXPECT_EQ(e.code, "AuthorizationQueryParametersError") << v;
  }
  auto week = VerifySigV4(with_expires("604800").View(), Lookup());
  // A week is allowed: only the signature (made for 86400) no longer matches.
  ExpectError(week, StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  // A malformed value is still a 400.
  auto bad = VerifySigV4(with_expires("abc").View(), Lookup());
  ExpectError(bad, StatusCode::kInvalidArgument, "AuthorizationQueryParametersError");
  EXPECT_EQ(ToS3Error(bad.error()).http_status, 400);
}

// S3 Express One Zone: CreateSession, ListDirectoryBuckets and session-signed
// requests are signed with the service name "s3express".
TEST(SigV4Test, S3ExpressServiceIsAccepted) {
  TestReq r;
  r.method = "GET";
  r.path = "/bucket--usw2-az1--x-s3";
  r.query = "session";
  r.headers = {{"Host", "127.0.0.1:9000"},
               {"x-amz-content-sha256", kEmptySha},
               {"x-amz-date", "20130524T000000Z"}};
  const std::vector<std::string> sh = {"host", "x-amz-content-sha256", "x-amz-date"};
  const std::string sig = RefSignature(r, sh, kEmptySha, kSecret, "20130524T000000Z", "us-west-2",
                                       false, nullptr, "s3express");
  r.Set("Authorization", AuthHeader(kAk, "20130524T000000Z", "us-west-2", sh, sig, "s3express"));
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  EXPECT_EQ(res->service, "s3express");
  EXPECT_EQ(res->access_key, kAk);
  // Signed for s3express but claiming s3 in the scope: the key differs.
  r.Set("Authorization", AuthHeader(kAk, "20130524T000000Z", "us-west-2", sh, sig, "s3"));
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
  // A plain S3 request reports its service too.
  TestReq plain = AwsGetObjectExample();
  auto p = VerifySigV4(plain.View(), Lookup());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->service, "s3");
}

TEST(SigV4Test, PresignedWithPayloadHashAndExtraHeaders) {
  TestReq r;
  r.method = "PUT";
  r.path = "/bucket/key";
  const std::string body_sha = HexEncode(Sha256("hello"));
  r.query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
            "eu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&"
            "X-Amz-SignedHeaders=content-type%3Bhost&X-Amz-Content-Sha256=" +
            body_sha;
  r.headers = {{"Host", "localhost:9000"}, {"Content-Type", "text/plain"}};
  const std::string sig = RefSignature(r, {"content-type", "host"}, body_sha, kSecret,
                                       "20130524T000000Z", "eu-west-1", /*presigned=*/true);
  r.query += "&X-Amz-Signature=" + sig;
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value()) << res.error().ToString();
  EXPECT_EQ(res->payload_mode, PayloadMode::kSignedHex);
  EXPECT_EQ(res->payload_sha256_hex, body_sha);
  r.Set("Content-Type", "text/html");
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
}

// ---- Failures of header auth.

TEST(SigV4Test, WrongSecret) {
  TestReq r = AwsGetObjectExample();
  SignHeaderAuth(r, {"host", "range", "x-amz-content-sha256", "x-amz-date"}, "not-the-secret");
  auto res = VerifySigV4(r.View(), Lookup());
  ExpectError(res, StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  EXPECT_NE(res.error().message().find("Check your key and signing method"), std::string::npos);
}

TEST(SigV4Test, UnknownAccessKey) {
  TestReq r = AwsGetObjectExample();
  SignHeaderAuth(r, {"host", "range", "x-amz-content-sha256", "x-amz-date"}, kSecret, "AKNOBODY");
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "InvalidAccessKeyId");
}

TEST(SigV4Test, TamperedRequest) {
  {
    TestReq r = AwsGetObjectExample();
    r.Set("Range", "bytes=0-99");
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    TestReq r = AwsGetObjectExample();
    r.method = "DELETE";
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    TestReq r = AwsGetObjectExample();
    r.path = "/test.txT";
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    TestReq r = AwsGetObjectExample();
    r.query = "versionId=1";
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    TestReq r = AwsGetObjectExample();
    r.Set("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    // A second Range header is joined into the signed value.
    TestReq r = AwsGetObjectExample();
    r.headers.emplace_back("range", "bytes=20-29");
    ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  {
    // Unsigned headers may change freely.
    TestReq r = AwsGetObjectExample();
    r.headers.emplace_back("User-Agent", "anything");
    EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
  }
}

TEST(SigV4Test, SignatureIsCaseInsensitiveHex) {
  TestReq r = AwsGetObjectExample();
  std::string auth = r.Get("Authorization");
  const size_t at = auth.find("Signature=") + 10;
  for (size_t i = at; i < auth.size(); ++i) auth[i] = static_cast<char>(toupper(auth[i]));
  r.Set("Authorization", auth);
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
}

TEST(SigV4Test, ClockSkew) {
  TestReq r = AwsGetObjectExample();
  r.now = kExampleNow + 14 * 60 * kSec;
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
  r.now = kExampleNow - 14 * 60 * kSec;
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
  r.now = kExampleNow + 16 * 60 * kSec;
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "RequestTimeTooSkewed");
  r.now = kExampleNow - 16 * 60 * kSec;
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied,
              "RequestTimeTooSkewed");
  // A custom allowance.
  r.now = kExampleNow + 16 * 60 * kSec;
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup(), 3600 * kSec).has_value());
}

TEST(SigV4Test, DateHeaderWhenNoXAmzDate) {
  TestReq r;
  r.path = "/bucket/key";
  r.headers = {{"Host", "localhost"},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-content-sha256", kEmptySha}};
  const std::string sig = RefSignature(r, {"date", "host", "x-amz-content-sha256"}, kEmptySha,
                                       kSecret, "20130524T000000Z", "us-east-1");
  r.Set("Authorization", AuthHeader(kAk, "20130524T000000Z", "us-east-1",
                                    {"date", "host", "x-amz-content-sha256"}, sig));
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());

  TestReq none = r;
  none.headers.erase(none.headers.begin() + 1);  // drop Date
  ExpectError(VerifySigV4(none.View(), Lookup()), StatusCode::kPermissionDenied, "AccessDenied");
}

TEST(SigV4Test, MalformedAuthorizationHeader) {
  const std::string good_sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  const std::string cred = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string sh = "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date";
  const std::vector<std::string> bad = {
      "AWS4-HMAC-SHA256",
      "AWS4-HMAC-SHA256 ",
      "AWS4-HMAC-SHA256Credential=x",
      "AWS4-HMAC-SHA256 " + cred + ", " + sh,                            // no Signature
      "AWS4-HMAC-SHA256 " + sh + ", Signature=" + good_sig,              // no Credential
      "AWS4-HMAC-SHA256 " + cred + ", Signature=" + good_sig,            // no SignedHeaders
      "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature=abc",        // short signature
      "AWS4-HMAC-SHA256 " + cred + ", " + sh + ", Signature",            // not key=value
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3, " + sh +
          ", Signature=" + good_sig,  // short scope
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws5_request, " +
          sh + ", Signature=" + good_sig,
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request, " +
          sh + ", Signature=" + good_sig,  // wrong service
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130525/us-east-1/s3/aws4_request, " +
          sh + ", Signature=" + good_sig,  // date differs from X-Amz-Date
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2013052x/us-east-1/s3/aws4_request, " +
          sh + ", Signature=" + good_sig,
      "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=range;x-amz-date, Signature=" + good_sig,
      "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;;range, Signature=" + good_sig,
      "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=, Signature=" + good_sig,
      "Bearer abc",
  };
  for (const auto& a : bad) {
    TestReq r = AwsGetObjectExample();
    r.Set("Authorization", a);
    auto res = VerifySigV4(r.View(), Lookup());
    ASSERT_FALSE(res.has_value()) << a;
    EXPECT_EQ(res.error().code(), StatusCode::kInvalidArgument) << a << " -> "
                                                                 << res.error().ToString();
    EXPECT_TRUE(StartsWith(res.error().message(), "AuthorizationHeaderMalformed: "))
        << a << " -> " << res.error().message();
  }
}

TEST(SigV4Test, AuthorizationHeaderSpacing) {
  // SDKs differ in the separators they use; all are accepted.
  TestReq r = AwsGetObjectExample();
  std::string a = r.Get("Authorization");
  for (std::string sep : {", ", ",", " , "}) {
    std::string b = a;
    size_t pos = 0;
    while ((pos = b.find(",", pos)) != std::string::npos) {
      b.replace(pos, 1, sep);
      pos += sep.size();
    }
    r.Set("Authorization", b);
    EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value()) << b;
  }
}

TEST(SigV4Test, MissingOrInvalidContentSha) {
  TestReq r = AwsGetObjectExample();
  r.headers.erase(r.headers.begin() + 3);
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kInvalidArgument, "InvalidRequest");
  r = AwsGetObjectExample();
  r.Set("x-amz-content-sha256", "not-a-hash");
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kInvalidArgument, "InvalidArgument");
}

TEST(SigV4Test, BadXAmzDate) {
  TestReq r = AwsGetObjectExample();
  r.Set("x-amz-date", "2013-05-24T00:00:00Z");
  ExpectError(VerifySigV4(r.View(), Lookup()), StatusCode::kPermissionDenied, "AccessDenied");
}

TEST(SigV4Test, AnonymousAndUnsupportedSchemes) {
  TestReq r;
  r.path = "/bucket/key";
  r.headers = {{"Host", "localhost"}};
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->payload_mode, PayloadMode::kAnonymous);
  EXPECT_EQ(res->access_key, "");

  TestReq v2 = r;
  v2.Set("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=");
  ExpectError(VerifySigV4(v2.View(), Lookup()), StatusCode::kInvalidArgument, "InvalidRequest");

  TestReq v2q = r;
  v2q.query = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1141889120&Signature=vjbyPxyb";
  ExpectError(VerifySigV4(v2q.View(), Lookup()), StatusCode::kInvalidArgument, "InvalidRequest");

  TestReq both = AwsPresignedExample();
  both.Set("Authorization", AwsGetObjectExample().Get("Authorization"));
  ExpectError(VerifySigV4(both.View(), Lookup()), StatusCode::kInvalidArgument,
              "InvalidArgument");
}

TEST(SigV4Test, StreamingModesCarrySigningContext) {
  const std::pair<const char*, PayloadMode> modes[] = {
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", PayloadMode::kStreamingSigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", PayloadMode::kStreamingSignedTrailer},
      {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", PayloadMode::kStreamingUnsignedTrailer},
      {"UNSIGNED-PAYLOAD", PayloadMode::kUnsigned},
  };
  for (auto [hash, mode] : modes) {
    TestReq r;
    r.method = "PUT";
    r.path = "/bucket/key";
    r.headers = {{"Host", "localhost:9000"},
                 {"x-amz-date", "20130524T000000Z"},
                 {"x-amz-content-sha256", hash},
                 {"Content-Encoding", "aws-chunked"}};
    SignHeaderAuth(r, {"content-encoding", "host", "x-amz-content-sha256", "x-amz-date"},
                   kSecret, kAk, "us-west-2");
    auto res = VerifySigV4(r.View(), Lookup());
    ASSERT_TRUE(res.has_value()) << hash << ": " << res.error().ToString();
    EXPECT_EQ(res->payload_mode, mode);
    if (mode == PayloadMode::kStreamingSigned || mode == PayloadMode::kStreamingSignedTrailer) {
      EXPECT_EQ(res->scope, "20130524/us-west-2/s3/aws4_request");
      EXPECT_EQ(res->amz_date, "20130524T000000Z");
      EXPECT_EQ(res->signing_key, RefSigningKey(kSecret, "20130524", "us-west-2"));
      const std::string auth = r.Get("Authorization");
      EXPECT_EQ(res->seed_signature, auth.substr(auth.find("Signature=") + 10));
    }
  }
}

TEST(SigV4Test, SigV4aIsNotImplemented) {
  TestReq r = AwsGetObjectExample();
  r.Set("x-amz-content-sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD");
  auto res = VerifySigV4(r.View(), Lookup());
  ASSERT_FALSE(res.has_value());
  EXPECT_TRUE(StartsWith(res.error().message(), "NotImplemented: "));
}

// ---- Canonicalisation rules, checked against the independent signer on
// awkward inputs.

TEST(SigV4Test, CanonicalQueryRules) {
  EXPECT_EQ(CanonicalQueryString("", false), "");
  EXPECT_EQ(CanonicalQueryString("b=2&a=1", false), "a=1&b=2");
  EXPECT_EQ(CanonicalQueryString("a=2&a=1", false), "a=1&a=2");
  EXPECT_EQ(CanonicalQueryString("uploads", false), "uploads=");
  EXPECT_EQ(CanonicalQueryString("acl&versionId=", false), "acl=&versionId=");
  EXPECT_EQ(CanonicalQueryString("prefix=a%2Fb&delimiter=/", false),
            "delimiter=%2F&prefix=a%2Fb");
  EXPECT_EQ(CanonicalQueryString("k=a+b", false), "k=a%20b");
  EXPECT_EQ(CanonicalQueryString("k=a%2Bb", false), "k=a%2Bb");
  EXPECT_EQ(CanonicalQueryString("k=%7e%41", false), "k=~A");
  EXPECT_EQ(CanonicalQueryString("k=caf%C3%A9&&", false), "k=caf%C3%A9");
  EXPECT_EQ(CanonicalQueryString("X-Amz-Signature=abc&X-Amz-Date=1", true), "X-Amz-Date=1");
  EXPECT_EQ(CanonicalQueryString("X-Amz-Signature=abc&X-Amz-Date=1", false),
            "X-Amz-Date=1&X-Amz-Signature=abc");
  // Upper-case names sort before lower-case ones (byte order).
  EXPECT_EQ(CanonicalQueryString("b=1&B=2&a=3", false), "B=2&a=3&b=1");
}

TEST(SigV4Test, CanonicalHeaderValueRules) {
  EXPECT_EQ(CanonicalHeaderValue("  a   b \t c  "), "a b c");
  EXPECT_EQ(CanonicalHeaderValue(""), "");
  EXPECT_EQ(CanonicalHeaderValue("\"quoted  value\""), "\"quoted value\"");
}

TEST(SigV4Test, RandomRequestsAgreeWithReferenceSigner) {
  std::mt19937 rng(42);
  const std::string alphabet = "abcXYZ019-_.~ /+=&%$!*'()@:,;é";
  auto random_text = [&](size_t max) {
    std::string s;
    size_t n = rng() % max;
    for (size_t i = 0; i < n; ++i) {
      // Pick a whole UTF-8 character for 'é'.
      size_t k = rng() % (alphabet.size() - 1);
      if (static_cast<unsigned char>(alphabet[k]) >= 0x80) {
        s += "é";
      } else {
        s += alphabet[k];
      }
    }
    return s;
  };
  for (int iter = 0; iter < 300; ++iter) {
    TestReq r;
    r.method = iter % 2 ? "PUT" : "GET";
    r.path = "/bucket/" + UriEncode(random_text(20), /*keep_slash=*/true);
    std::string q;
    const int nparams = rng() % 4;
    for (int i = 0; i < nparams; ++i) {
      if (!q.empty()) q += "&";
      std::string name = "p";
      name += random_text(6);
      q += UriEncode(name, false);
      if (rng() % 4) {
        q += '=';
        q += UriEncode(random_text(10), false);
      }
    }
    r.query = q;
    r.headers = {{"Host", "localhost:9000"},
                 {"X-Amz-Date", "20130524T000000Z"},
                 {"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"},
                 {"X-Amz-Meta-Note", "  spaced    out\tvalue  "},
                 {"x-amz-meta-multi", "one"},
                 {"X-Amz-Meta-Multi", "two  three"}};
    SignHeaderAuth(r, {"host", "x-amz-content-sha256", "x-amz-date", "x-amz-meta-multi",
                       "x-amz-meta-note"});
    auto res = VerifySigV4(r.View(), Lookup());
    ASSERT_TRUE(res.has_value()) << r.path << "?" << r.query << ": " << res.error().ToString();
    EXPECT_EQ(res->payload_mode, PayloadMode::kUnsigned);
  }
}

TEST(SigV4Test, PathIsUsedAsReceived) {
  // S3 does not double-encode: the signer's encoded path is the canonical URI.
  TestReq r;
  r.path = "/bucket/a%20b/c%2Fd";
  r.headers = {{"Host", "localhost"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", kEmptySha}};
  SignHeaderAuth(r, {"host", "x-amz-content-sha256", "x-amz-date"});
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
  // A differently-encoded path that means something else fails.
  TestReq other = r;
  other.path = "/bucket/a%20b/c/d";
  ExpectError(VerifySigV4(other.View(), Lookup()), StatusCode::kPermissionDenied,
              "SignatureDoesNotMatch");
}

TEST(SigV4Test, RawCharactersInRequestLineMatchTheirSigV4Encoding) {
  // A client that sends '$' or '!' raw in the request line but signs the
  // SigV4 encoding of the same key is accepted.
  TestReq r;
  r.path = "/bucket/a$b!c";
  r.headers = {{"Host", "localhost"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", kEmptySha}};
  const std::string encoded = "/bucket/a%24b%21c";
  const std::string sig = RefSignature(r, {"host", "x-amz-content-sha256", "x-amz-date"},
                                       kEmptySha, kSecret, "20130524T000000Z", "us-east-1",
                                       false, &encoded);
  r.Set("Authorization", AuthHeader(kAk, "20130524T000000Z", "us-east-1",
                                    {"host", "x-amz-content-sha256", "x-amz-date"}, sig));
  EXPECT_TRUE(VerifySigV4(r.View(), Lookup()).has_value());
}

TEST(SigV4Test, SigningKeyCacheKeepsSecretsApart) {
  // Same date and region, two secrets: the per-thread cache must not mix them.
  for (int i = 0; i < 20; ++i) {
    TestReq a = AwsGetObjectExample();
    EXPECT_TRUE(VerifySigV4(a.View(), Lookup()).has_value());
    TestReq b = AwsGetObjectExample();
    SignHeaderAuth(b, {"host", "range", "x-amz-content-sha256", "x-amz-date"}, "other-secret",
                   "AKOTHER");
    EXPECT_TRUE(VerifySigV4(b.View(), Lookup()).has_value());
    // b's signature under a's key fails.
    std::string auth = b.Get("Authorization");
    auth.replace(auth.find("AKOTHER"), 7, kAk);
    b.Set("Authorization", auth);
    ExpectError(VerifySigV4(b.View(), Lookup()), StatusCode::kPermissionDenied,
                "SignatureDoesNotMatch");
  }
  // Many distinct (date, region) triples cycle through the cache.
  for (int i = 0; i < 40; ++i) {
    const std::string region = "region-" + std::to_string(i % 13);
    EXPECT_EQ(DeriveSigningKey(kSecret, "20130524", region, "s3"),
              RefSigningKey(kSecret, "20130524", region));
  }
}

TEST(SigV4Test, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace strata::s3
