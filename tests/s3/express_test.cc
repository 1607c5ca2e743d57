// S3 Express One Zone: directory bucket names and CreateBucketConfiguration,
// session tokens, and the frontend driven in memory (http::ServeInMemory over
// a LocalEngine in a temporary directory) the way boto3 drives it: CreateSession
// signed for "s3express", then requests signed with the session credentials
// and x-amz-s3session-token. Expected values come from the Amazon S3 API
// Reference (CreateBucket, CreateSession, ListDirectoryBuckets, ListObjectsV2
// for directory buckets, the error code list), not from the frontend's code.
#include "s3/express.h"

#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/clock.h>
#include <strata/core/http_server.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>

#include "s3/errors.h"
#include "s3/frontend_fixture.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

using s3test::All;
using s3test::First;

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr char kAk[] = "AKIDEXPRESSALICE";
constexpr char kSecret[] = "express-alice-secret";
constexpr char kBobAk[] = "AKIDEXPRESSBOB";
constexpr char kBobSecret[] = "express-bob-secret";
constexpr char kDir[] = "bucket-base-name--usw2-az1--x-s3";
constexpr int64_t kSec = 1'000'000'000;

// The configuration of AWS's directory bucket examples.
constexpr char kDirConfig[] =
    "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Location><Type>AvailabilityZone</Type><Name>usw2-az1</Name></Location>"
    "<Bucket><Type>Directory</Type><DataRedundancy>SingleAvailabilityZone</DataRedundancy>"
    "</Bucket></CreateBucketConfiguration>";

std::string StatusCodeOf(const Result<std::string>& r) {
  return r.ok() ? "ok" : ToS3Error(r.error()).code;
}

// ---- Names and configurations (the CreateBucket API Reference and the
// directory bucket naming rules).

TEST(DirectoryBucketNameTest, ZoneIdComesFromTheName) {
  ASSERT_OK_AND_ASSIGN(std::string zone, DirectoryBucketZone(kDir));
  EXPECT_EQ(zone, "usw2-az1");
  ASSERT_OK_AND_ASSIGN(zone, DirectoryBucketZone("doc-example-bucket--use1-az4--x-s3"));
  EXPECT_EQ(zone, "use1-az4");
  EXPECT_TRUE(IsDirectoryBucketName(kDir));
  EXPECT_FALSE(IsDirectoryBucketName("bucket-base-name"));
  EXPECT_FALSE(IsDirectoryBucketName("bucket--x-s3x"));
}

TEST(DirectoryBucketNameTest, BadNames) {
  for (const char* bad : {
           "plain-bucket",                // no suffix
           "--usw2-az1--x-s3",            // no base name
           "bucket--x-s3",                // no zone id
           "Bucket--usw2-az1--x-s3",      // upper case
           "my.bucket--usw2-az1--x-s3",   // dots
           "bucket---usw2-az1--x-s3",     // base ends with '-'
           "xn--bucket--usw2-az1--x-s3",  // reserved prefix
           "a-very-long-directory-bucket-name-that-goes-on-and-on--usw2-az1--x-s3",  // > 63
       }) {
    auto r = DirectoryBucketZone(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ToS3Error(r.error()).code, "InvalidBucketName") << bad;
  }
}

TEST(DirectoryBucketNameTest, CreateBucketConfiguration) {
  ASSERT_OK_AND_ASSIGN(DirectoryBucketConfig cfg, ParseCreateBucketType(kDir, kDirConfig));
  EXPECT_EQ(cfg.location_type, "AvailabilityZone");
  EXPECT_EQ(cfg.location_name, "usw2-az1");
  EXPECT_EQ(cfg.data_redundancy, "SingleAvailabilityZone");
  ASSERT_OK_AND_ASSIGN(DirectoryBucketConfig back,
                       DirectoryBucketConfig::FromDocument(cfg.Document()));
  EXPECT_EQ(back.location_name, "usw2-az1");
  // A general purpose bucket: no configuration, or a LocationConstraint only.
  ASSERT_OK_AND_ASSIGN(cfg, ParseCreateBucketType("general", ""));
  EXPECT_TRUE(cfg.location_type.empty());
  ASSERT_OK_AND_ASSIGN(
      cfg, ParseCreateBucketType("general",
                                 "<CreateBucketConfiguration><LocationConstraint>"
                                 "eu-west-1</LocationConstraint></CreateBucketConfiguration>"));
  EXPECT_TRUE(cfg.location_type.empty());

  auto code = [](std::string_view bucket, std::string_view xml) {
    auto r = ParseCreateBucketType(bucket, xml);
    return r.ok() ? std::string("ok") : ToS3Error(r.error()).code;
  };
  auto config = [](const std::string& location, const std::string& bucket) {
    return "<CreateBucketConfiguration>" + location + bucket + "</CreateBucketConfiguration>";
  };
  const std::string az = "<Location><Type>AvailabilityZone</Type><Name>usw2-az1</Name></Location>";
  const std::string dir = "<Bucket><Type>Directory</Type></Bucket>";
  EXPECT_EQ(code(kDir, config(az, dir)), "ok");  // DataRedundancy defaults
  // --x-s3 names are reserved for directory buckets.
  EXPECT_EQ(code(kDir, ""), "InvalidBucketName");
  EXPECT_EQ(code(kDir, config(az, "")), "InvalidBucketName");
  // Directory needs a directory bucket name.
  EXPECT_EQ(code("general", config(az, dir)), "InvalidBucketName");
  EXPECT_EQ(code("general--x-s3", config(az, dir)), "InvalidBucketName");
  // Location only with Directory.
  EXPECT_EQ(code("general", config(az, "")), "InvalidArgument");
  EXPECT_EQ(code(kDir, config("", dir)), "InvalidArgument");
  EXPECT_EQ(
      code(kDir, config("<Location><Type>Region</Type><Name>usw2-az1</Name></Location>", dir)),
      "InvalidArgument");
  EXPECT_EQ(code(kDir, config("<Location><Type>AvailabilityZone</Type><Name>usw2-az2</Name>"
                              "</Location>",
                              dir)),
            "InvalidArgument");  // zone differs from the name's
  EXPECT_EQ(code(kDir, config(az,
                              "<Bucket><Type>Directory</Type><DataRedundancy>SingleLocalZone"
                              "</DataRedundancy></Bucket>")),
            "InvalidArgument");
  EXPECT_EQ(code(kDir, config(az, "<Bucket><Type>General</Type></Bucket>")), "InvalidArgument");
  EXPECT_EQ(code(kDir,
                 "<CreateBucketConfiguration><LocationConstraint>us-west-2"
                 "</LocationConstraint>" +
                     az + dir + "</CreateBucketConfiguration>"),
            "InvalidArgument");
  EXPECT_EQ(code(kDir, "<CreateBucketConfiguration>"), "MalformedXML");
}

// ---- Session tokens.

TEST(SessionTokenTest, IssueThenVerify) {
  SessionClaims claims{kAk, kDir, "", 1000 * kSec, SessionMode::kReadOnly};
  const SessionCredentials cred = IssueSession(claims, kSecret);
  EXPECT_TRUE(StartsWith(cred.access_key, "ASIA"));
  EXPECT_EQ(cred.expires_ns, 1000 * kSec);
  ASSERT_OK_AND_ASSIGN(SessionClaims back, ReadSessionToken(cred.token));
  EXPECT_EQ(back.user_access_key, kAk);
  EXPECT_EQ(back.bucket, kDir);
  EXPECT_EQ(back.access_key, cred.access_key);
  EXPECT_EQ(back.mode, SessionMode::kReadOnly);
  ASSERT_OK_AND_ASSIGN(std::string secret, VerifySessionToken(cred.token, kSecret, 999 * kSec));
  EXPECT_EQ(secret, cred.secret_key);
  // Each session has its own keys.
  const SessionCredentials other = IssueSession(claims, kSecret);
  EXPECT_NE(other.access_key, cred.access_key);
  EXPECT_NE(other.secret_key, cred.secret_key);
}

TEST(SessionTokenTest, ExpiredForgedAndForeignTokensAreRefused) {
  const SessionCredentials cred =
      IssueSession(SessionClaims{kAk, kDir, "", 1000 * kSec, SessionMode::kReadWrite}, kSecret);
  EXPECT_EQ(StatusCodeOf(VerifySessionToken(cred.token, kSecret, 1000 * kSec)), "ExpiredToken");
  EXPECT_EQ(StatusCodeOf(VerifySessionToken(cred.token, kBobSecret, 10 * kSec)), "InvalidToken");
  // Another bucket, a later expiry or another user in the payload break the seal.
  const std::string seal = cred.token.substr(cred.token.find('.'));
  std::string payload = *Base64Decode(cred.token.substr(0, cred.token.find('.')));
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {kDir, "other--usw2-az1--x-s3"}, {"\n1000\n", "\n9000\n"}, {kAk, kBobAk}}) {
    std::string p = payload;
    p.replace(p.find(from), from.size(), to);
    EXPECT_EQ(StatusCodeOf(VerifySessionToken(Base64Encode(p) + seal, kSecret, 10 * kSec)),
              "InvalidToken")
        << to;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "garbage", "a.b", "Zm9v.YmFy", cred.token + "x"})
    EXPECT_EQ(StatusCodeOf(VerifySessionToken(bad, kSecret, 10 * kSec)), "InvalidToken") << bad;
  EXPECT_EQ(HttpStatusForCode("ExpiredToken"), 400);
  EXPECT_EQ(HttpStatusForCode("InvalidToken"), 400);
}

// ---- The frontend.

class ExpressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, s3test::OpenTestEngine(dir_.Join("data")));
    FrontendOptions fo;
    fo.users.push_back(User{"alice", kAk, kSecret, false});
    fo.users.push_back(User{"bob", kBobAk, kBobSecret, false});
    frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
  }

  struct Call {
    std::string method = "GET";
    std::string target = "/";
    std::string body = {};
    Headers headers = {};
    std::string service = "s3";
    std::string access_key = kAk;
    std::string secret = kSecret;
    std::string session_token = {};  // sent as x-amz-s3session-token
    bool anonymous = false;
  };

  http::RecordedResponse Send(Call call) {
    Headers h = std::move(call.headers);
    if (!call.session_token.empty()) h.emplace_back("x-amz-s3session-token", call.session_token);
    s3test::Signer s{.access_key = call.anonymous ? "" : call.access_key,
                     .secret = call.secret,
                     .region = "us-west-2",
                     .service = call.service};
    return s3test::SendSigned(frontend_.get(), call.method, call.target, std::move(h), call.body,
                              s);
  }

  // What botocore does first for a directory bucket: CreateSession signed for s3express.
  SessionCredentials NewSession(const std::string& bucket, Headers h = {},
                                const std::string& ak = kAk, const std::string& secret = kSecret) {
    auto r = Send({.target = "/" + bucket + "?session",
                   .headers = std::move(h),
                   .service = "s3express",
                   .access_key = ak,
                   .secret = secret});
    EXPECT_EQ(r.status, 200) << r.body;
    SessionCredentials c;
    c.access_key = First(r.body, "AccessKeyId");
    c.secret_key = First(r.body, "SecretAccessKey");
    c.token = First(r.body, "SessionToken");
    return c;
  }

  // A request as botocore's S3ExpressAuth signs it.
  http::RecordedResponse WithSession(const SessionCredentials& s, Call call) {
    call.service = "s3express";
    call.access_key = s.access_key;
    call.secret = s.secret_key;
    call.session_token = s.token;
    return Send(std::move(call));
  }

  void CreateDirectoryBucket(const std::string& bucket = kDir) {
    const SessionCredentials s = NewSession(bucket);
    std::string config = kDirConfig;
    auto r = WithSession(s, {.method = "PUT", .target = "/" + bucket, .body = config});
    ASSERT_EQ(r.status, 200) << r.body;
  }

  static void ExpectError(const http::RecordedResponse& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(First(r.body, "Code"), code) << r.body;
  }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<Frontend> frontend_;
};

TEST_F(ExpressTest, CreateSessionReturnsFiveMinuteCredentials) {
  CreateDirectoryBucket();
  const int64_t before = NowUnixNanos();
  auto r = Send({.target = std::string("/") + kDir + "?session", .service = "s3express"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<CreateSessionResult"), std::string::npos) << r.body;
  EXPECT_FALSE(First(r.body, "SessionToken").empty());
  EXPECT_FALSE(First(r.body, "SecretAccessKey").empty());
  EXPECT_FALSE(First(r.body, "AccessKeyId").empty());
  auto exp = ParseIso8601(First(r.body, "Expiration"));
  ASSERT_TRUE(exp.has_value()) << r.body;
  EXPECT_GE(*exp, before + 299 * kSec);
  EXPECT_LE(*exp, NowUnixNanos() + 300 * kSec);
}

TEST_F(ExpressTest, DirectoryBucketLifecycleWithSessionCredentials) {
  CreateDirectoryBucket();
  auto head = Send({.method = "HEAD", .target = std::string("/") + kDir});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("x-amz-bucket-location-type").value_or(""), "AvailabilityZone");
  EXPECT_EQ(head.Header("x-amz-bucket-location-name").value_or(""), "usw2-az1");

  const SessionCredentials s = NewSession(kDir);
  const std::string obj = std::string("/") + kDir + "/photos/2024/a.jpg";
  auto put = WithSession(s, {.method = "PUT", .target = obj, .body = "hello express"});
  ASSERT_EQ(put.status, 200) << put.body;
  auto get = WithSession(s, {.target = obj});
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(get.body, "hello express");
  // Directory buckets hold one storage class, which S3 names on reads and listings.
  EXPECT_EQ(get.Header("x-amz-storage-class").value_or(""), "EXPRESS_ONEZONE");
  auto flat = WithSession(s, {.target = std::string("/") + kDir + "?list-type=2"});
  EXPECT_EQ(First(flat.body, "StorageClass"), "EXPRESS_ONEZONE") << flat.body;
  auto list = WithSession(
      s, {.target = std::string("/") + kDir + "?list-type=2&prefix=photos%2F&delimiter=%2F"});
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(All(list.body, "Prefix").back(), "photos/2024/");
  auto del = WithSession(s, {.method = "DELETE", .target = obj});
  EXPECT_EQ(del.status, 204) << del.body;
  auto gone = WithSession(s, {.target = obj});
  ExpectError(gone, 404, "NoSuchKey");
  auto rb = WithSession(s, {.method = "DELETE", .target = std::string("/") + kDir});
  EXPECT_EQ(rb.status, 204) << rb.body;
  ExpectError(Send({.method = "GET", .target = std::string("/") + kDir + "?list-type=2"}), 404,
              "NoSuchBucket");
}

TEST_F(ExpressTest, CreateBucketChecksNameAndConfiguration) {
  // A --x-s3 name without Directory, and Directory without a --x-s3 name.
  ExpectError(Send({.method = "PUT", .target = std::string("/") + kDir}), 400, "InvalidBucketName");
  ExpectError(Send({.method = "PUT", .target = "/general-bucket", .body = kDirConfig}), 400,
              "InvalidBucketName");
  std::string wrong_zone = kDirConfig;
  wrong_zone.replace(wrong_zone.find("<Name>usw2-az1"), 14, "<Name>usw2-az2");
  ExpectError(Send({.method = "PUT", .target = std::string("/") + kDir, .body = wrong_zone}), 400,
              "InvalidArgument");
  // Nothing was created.
  EXPECT_FALSE(engine_->GetBucket(kDir).ok());
  EXPECT_FALSE(engine_->GetBucket("general-bucket").ok());
  // Plain SigV4 (no session) creates one too: the Regional endpoint way.
  auto r = Send({.method = "PUT",
                 .target = std::string("/") + kDir,
                 .body = kDirConfig,
                 .service = "s3express"});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_OK_AND_ASSIGN(objstore::BucketInfo b, engine_->GetBucket(kDir));
  ASSERT_NE(b.Config(kDirectoryBucketConfigName), nullptr);
}

TEST_F(ExpressTest, ExpiredForgedAndMisusedSessionsAreRefused) {
  CreateDirectoryBucket();
  CreateDirectoryBucket("other--usw2-az1--x-s3");
  const std::string obj = std::string("/") + kDir + "/k";
  // Expired: a token made with alice's secret, five minutes past.
  SessionCredentials old = IssueSession(
      SessionClaims{kAk, kDir, "", NowUnixNanos() - kSec, SessionMode::kReadWrite}, kSecret);
  ExpectError(WithSession(old, {.method = "PUT", .target = obj, .body = "x"}), 400, "ExpiredToken");
  // Forged: a token sealed with another secret, or altered.
  SessionCredentials forged = IssueSession(
      SessionClaims{kAk, kDir, "", NowUnixNanos() + 60 * kSec, SessionMode::kReadWrite},
      "not-alice-secret");
  ExpectError(WithSession(forged, {.method = "PUT", .target = obj, .body = "x"}), 400,
              "InvalidToken");
  SessionCredentials s = NewSession(kDir);
  SessionCredentials altered = s;
  altered.token[altered.token.size() - 3] ^= 1;
  ExpectError(WithSession(altered, {.method = "PUT", .target = obj, .body = "x"}), 400,
              "InvalidToken");
  // The right token, signed with the wrong secret.
  SessionCredentials wrong_secret = s;
  wrong_secret.secret_key = kSecret;
  ExpectError(WithSession(wrong_secret, {.target = obj}), 403, "SignatureDoesNotMatch");
  // The session's keys without its token are no user's keys.
  ExpectError(Send({.target = obj,
                    .service = "s3express",
                    .access_key = s.access_key,
                    .secret = s.secret_key}),
              403, "InvalidAccessKeyId");
  // Bound to its bucket.
  ExpectError(WithSession(s, {.target = "/other--usw2-az1--x-s3/k"}), 403, "AccessDenied");
  // ReadOnly sessions read only.
  SessionCredentials ro = NewSession(kDir, {{"x-amz-create-session-mode", "ReadOnly"}});
  ExpectError(WithSession(ro, {.method = "PUT", .target = obj, .body = "x"}), 403, "AccessDenied");
  ExpectError(WithSession(ro, {.target = obj}), 404, "NoSuchKey");
  // Nothing was written by any of these.
  EXPECT_FALSE(engine_->HeadObject(kDir, "k").ok());
  // Sessions are not made with sessions, nor anonymously, nor by another user
  // for a bucket not theirs.
  ExpectError(WithSession(s, {.target = std::string("/") + kDir + "?session"}), 403,
              "AccessDenied");
  ExpectError(Send({.target = std::string("/") + kDir + "?session", .anonymous = true}), 403,
              "AccessDenied");
  ExpectError(Send({.target = std::string("/") + kDir + "?session",
                    .service = "s3express",
                    .access_key = kBobAk,
                    .secret = kBobSecret}),
              403, "AccessDenied");
  ExpectError(Send({.target = std::string("/") + kDir + "?session",
                    .headers = {{"x-amz-create-session-mode", "Admin"}},
                    .service = "s3express"}),
              400, "InvalidArgument");
  // On an object: refused (the AWS SDK for JavaScript's "/bucket//?session").
  ExpectError(Send({.target = std::string("/") + kDir + "//?session", .service = "s3express"}), 400,
              "InvalidRequest");
  // CreateSession is for directory buckets only.
  ASSERT_EQ(Send({.method = "PUT", .target = "/general-bucket"}).status, 200);
  ExpectError(Send({.target = "/general-bucket?session", .service = "s3express"}), 400,
              "InvalidRequest");
  ExpectError(Send({.target = "/missing-bucket?session", .service = "s3express"}), 404,
              "NoSuchBucket");
}

TEST_F(ExpressTest, ListDirectoryBuckets) {
  CreateDirectoryBucket("aaa--usw2-az1--x-s3");
  CreateDirectoryBucket("bbb--usw2-az1--x-s3");
  CreateDirectoryBucket("ccc--usw2-az1--x-s3");
  ASSERT_EQ(Send({.method = "PUT", .target = "/general-bucket"}).status, 200);
  ASSERT_EQ(Send({.method = "PUT",
                  .target = "/bob--usw2-az1--x-s3",
                  .body = kDirConfig,
                  .service = "s3express",
                  .access_key = kBobAk,
                  .secret = kBobSecret})
                .status,
            200);
  // As botocore sends it: GET / signed for s3express.
  auto r = Send({.target = "/", .service = "s3express"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<ListAllMyDirectoryBucketsResult"), std::string::npos) << r.body;
  EXPECT_EQ(All(r.body, "Name"),
            (std::vector<std::string>{"aaa--usw2-az1--x-s3", "bbb--usw2-az1--x-s3",
                                      "ccc--usw2-az1--x-s3"}));
  EXPECT_EQ(First(r.body, "ContinuationToken"), "");
  // As other SDKs send it: ?x-id=ListDirectoryBuckets.
  auto x = Send({.target = "/?x-id=ListDirectoryBuckets"});
  ASSERT_EQ(x.status, 200) << x.body;
  EXPECT_EQ(All(x.body, "Name").size(), 3u);
  // Plain ListBuckets is still ListBuckets, of general purpose buckets only.
  auto lb = Send({.target = "/"});
  ASSERT_EQ(lb.status, 200);
  EXPECT_NE(lb.body.find("<ListAllMyBucketsResult"), std::string::npos);
  EXPECT_EQ(All(lb.body, "Name"), std::vector<std::string>{"general-bucket"}) << lb.body;
  // Pages.
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 5; ++page) {
    std::string target = "/?max-directory-buckets=2";
    if (!token.empty()) target += "&continuation-token=" + UriEncode(token, false);
    auto p = Send({.target = target, .service = "s3express"});
    ASSERT_EQ(p.status, 200) << p.body;
    for (auto& n : All(p.body, "Name")) seen.push_back(n);
    token = First(p.body, "ContinuationToken");
    if (token.empty()) break;
  }
  EXPECT_EQ(seen.size(), 3u);
  ExpectError(Send({.target = "/?max-directory-buckets=1001", .service = "s3express"}), 400,
              "InvalidArgument");
  ExpectError(Send({.target = "/?continuation-token=%21%21", .service = "s3express"}), 400,
              "InvalidArgument");
  // Only the caller's own.
  auto b =
      Send({.target = "/", .service = "s3express", .access_key = kBobAk, .secret = kBobSecret});
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(All(b.body, "Name"), std::vector<std::string>{"bob--usw2-az1--x-s3"}) << b.body;
  ExpectError(Send({.target = "/?x-id=ListDirectoryBuckets", .anonymous = true}), 403,
              "AccessDenied");
}

TEST_F(ExpressTest, WhatDirectoryBucketsDoNotSupport) {
  CreateDirectoryBucket();
  const SessionCredentials s = NewSession(kDir);
  const std::string b = std::string("/") + kDir;
  // ListObjects (v1) is not supported on directory buckets.
  ExpectError(WithSession(s, {.target = b}), 501, "NotImplemented");
  ExpectError(WithSession(s, {.target = b + "?acl"}), 501, "NotImplemented");
  ExpectError(WithSession(s, {.target = b + "?versioning"}), 501, "NotImplemented");
  // "/" is the only delimiter, and prefixes end in it.
  ExpectError(WithSession(s, {.target = b + "?list-type=2&delimiter=-"}), 400, "InvalidArgument");
  ExpectError(WithSession(s, {.target = b + "?list-type=2&prefix=photos"}), 400, "InvalidArgument");
  EXPECT_EQ(WithSession(s, {.target = b + "?list-type=2&prefix=photos%2F"}).status, 200);
  // One storage class.
  ExpectError(WithSession(s, {.method = "PUT",
                              .target = b + "/k",
                              .body = "x",
                              .headers = {{"x-amz-storage-class", "STANDARD"}}}),
              400, "InvalidStorageClass");
  EXPECT_FALSE(engine_->HeadObject(kDir, "k").ok());
  EXPECT_EQ(WithSession(s, {.method = "PUT",
                            .target = b + "/k",
                            .body = "x",
                            .headers = {{"x-amz-storage-class", "EXPRESS_ONEZONE"}}})
                .status,
            200);
  // Session encryption settings are refused, not ignored.
  ExpectError(Send({.target = b + "?session",
                    .headers = {{"x-amz-server-side-encryption", "aws:kms"}},
                    .service = "s3express"}),
              501, "NotImplemented");
  // General purpose buckets keep ListObjects v1.
  ASSERT_EQ(Send({.method = "PUT", .target = "/general-bucket"}).status, 200);
  EXPECT_EQ(Send({.target = "/general-bucket"}).status, 200);
}

// The issue's defect, end to end: a presigned URL valid for more than a week,
// or for a negative time, is refused with 403 (it was 400).
TEST_F(ExpressTest, PresignedExpiresOutOfRangeIs403) {
  ASSERT_EQ(Send({.method = "PUT", .target = "/general-bucket"}).status, 200);
  ASSERT_EQ(Send({.method = "PUT", .target = "/general-bucket/k", .body = "v"}).status, 200);
  sigv4::SigningParams sp;
  sp.credentials = {kAk, kSecret, ""};
  sp.now_ns = NowUnixNanos();
  const std::string q =
      sigv4::PresignQuery("GET", "127.0.0.1:9000", "/general-bucket/k", "", 600, sp);
  auto get = [&](const std::string& query) {
    return http::ServeInMemory(
        http::FrontendHandler(frontend_.get()),
        http::FormatRequest("GET", "/general-bucket/k?" + query, {{"Host", "127.0.0.1:9000"}}),
        http::WithFrontendErrors(http::ServerOptions{}, frontend_.get()));
  };
  EXPECT_EQ(get(q).status, 200);
  for (const std::string v : {"604801", "-1"}) {
    std::string t = q;
    t.replace(t.find("X-Amz-Expires=600"), 17, "X-Amz-Expires=" + v);
    auto r = get(t);
    ExpectError(r, 403, "AuthorizationQueryParametersError");
  }
}

}  // namespace
}  // namespace strata::s3
