// The client-side SigV4 signer (core/sigv4.h) against the AWS documentation
// examples ("Signature Calculations for the Authorization Header: Transferring
// Payload in a Single Chunk" and "Authenticating Requests: Using Query
// Parameters"). The verifier side is tested in tests/s3/sigv4_test.cc.

#include <strata/core/sigv4.h>

#include <gtest/gtest.h>

#include <strata/core/strings.h>

namespace strata::sigv4 {
namespace {

constexpr int64_t kExampleNow = 1369353600LL * 1'000'000'000;  // 2013-05-24T00:00:00Z

SigningParams Params() {
  SigningParams p;
  p.credentials = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  p.region = "us-east-1";
  p.service = "s3";
  p.now_ns = kExampleNow;
  return p;
}

std::string Get(const HeaderList& h, std::string_view name) {
  for (const auto& [k, v] : h) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

TEST(SigV4SignerTest, AwsExampleGetObject) {
  HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  Signature s = SignRequest("GET", "/test.txt", "", h, kEmptySha256Hex, Params());
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s.amz_date, "20130524T000000Z");
  EXPECT_EQ(s.scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(Get(h, "x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(Get(h, "x-amz-content-sha256"), kEmptySha256Hex);
  EXPECT_EQ(Get(h, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4SignerTest, AwsExamplePutObject) {
  HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"},
                  {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                  {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                  // Hop-by-hop headers are left out of the signature.
                  {"User-Agent", "strata"},
                  {"Expect", "100-continue"}};
  Signature s = SignRequest("PUT", "/test%24file.text", "", h,
                            PayloadSha256Hex("Welcome to Amazon S3."), Params());
  EXPECT_EQ(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  EXPECT_NE(Get(h, "authorization").find("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
                                         "x-amz-storage-class,"),
            std::string::npos);
}

TEST(SigV4SignerTest, AwsExampleListObjects) {
  HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"}};
  Signature s = SignRequest("GET", "/", "max-keys=2&prefix=J", h, kEmptySha256Hex, Params());
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  // Parameter order does not matter.
  HeaderList h2 = {{"Host", "examplebucket.s3.amazonaws.com"}};
  EXPECT_EQ(SignRequest("GET", "/", "prefix=J&max-keys=2", h2, kEmptySha256Hex, Params()).signature,
            s.signature);
}

TEST(SigV4SignerTest, AwsExamplePresignedUrl) {
  const std::string q =
      PresignQuery("GET", "examplebucket.s3.amazonaws.com", "/test.txt", "", 86400, Params());
  EXPECT_EQ(q,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2F"
            "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&"
            "X-Amz-SignedHeaders=host&X-Amz-Signature="
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST(SigV4SignerTest, SessionTokenIsSignedAndSent) {
  SigningParams p = Params();
  p.credentials.session_token = "TOKEN/with+chars";
  HeaderList h = {{"Host", "b.s3.amazonaws.com"}};
  Signature s = SignRequest("GET", "/k", "", h, kUnsignedPayload, p);
  EXPECT_EQ(Get(h, "x-amz-security-token"), "TOKEN/with+chars");
  EXPECT_NE(Get(h, "authorization").find("x-amz-security-token"), std::string::npos);
  EXPECT_EQ(Get(h, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  // Re-signing replaces instead of duplicating.
  SignRequest("GET", "/k", "", h, kUnsignedPayload, p);
  int auths = 0;
  for (const auto& [k, v] : h) auths += IEquals(k, "authorization");
  EXPECT_EQ(auths, 1);
  const std::string q = PresignQuery("PUT", "b.s3.amazonaws.com", "/k", "", 60, p);
  EXPECT_NE(q.find("X-Amz-Security-Token=TOKEN%2Fwith%2Bchars"), std::string::npos) << q;
}

}  // namespace
}  // namespace strata::sigv4
