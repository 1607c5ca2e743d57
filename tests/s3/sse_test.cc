// Server-side encryption through the S3 frontend (in memory, as frontend_test):
// SSE-S3, SSE-KMS and SSE-C on PUT/GET/HEAD, ranged reads across cipher
// blocks, multipart, copies between schemes, bucket default encryption, the
// errors S3 answers (AWS S3 User Guide "Protecting data with server-side
// encryption", API Reference PutObject/GetObject/PutBucketEncryption), and a
// walk of the data directory proving that encrypted bytes are not on disk in
// the clear while the same construction written unencrypted is found.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/clock.h>
#include <strata/core/http_server.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>
#include <strata/s3/kms.h>

#include "s3/frontend_fixture.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

using s3test::First;
inline std::string H(const http::RecordedResponse& r, std::string_view name) {
  return s3test::Header(r, name);
}

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr char kAk[] = "AKIDSSETEST";
constexpr char kSecret[] = "sse-test-secret";

// Distinct, recognisable bytes: "<tag>:<offset>|" repeated (never a run a
// cipher could produce by chance).
std::string Pattern(const std::string& tag, size_t n) {
  std::string s;
  while (s.size() < n) s += tag + ":" + std::to_string(s.size()) + "|";
  s.resize(n);
  return s;
}

struct CustKey {
  std::string raw;
  Headers headers(bool copy_source = false) const {
    // S3: x-amz-copy-source-server-side-encryption-customer-{algorithm,key,key-MD5}.
    const std::string pre = copy_source ? "x-amz-copy-source-" : "x-amz-";
    return {{pre + "server-side-encryption-customer-algorithm", "AES256"},
            {pre + "server-side-encryption-customer-key", Base64Encode(raw)},
            {pre + "server-side-encryption-customer-key-MD5", Base64Encode(Md5(raw))}};
  }
};

Headers Join(Headers a, const Headers& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class SseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, s3test::OpenTestEngine(dir_.Join("data")));
    FrontendOptions fo;
    fo.users.push_back(User{"alice", kAk, kSecret, false});
    KmsOptions ko;
    ko.key_ids = {"alpha", "beta"};
    ASSERT_OK_AND_ASSIGN(fo.kms, KeyManager::FromMasterKey(std::string(32, '\x42'), ko));
    frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
    ASSERT_EQ(Send("PUT", "/bkt").status, 200);
  }

  http::RecordedResponse Send(const std::string& method, const std::string& target, Headers h = {},
                              const std::string& body = "") {
    return s3test::SendSigned(frontend_.get(), method, target, std::move(h), body,
                              {.access_key = kAk, .secret = kSecret});
  }

  static void ExpectError(const http::RecordedResponse& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(First(r.body, "Code"), code) << r.body;
  }

  std::string Upload(const std::string& key, Headers create, const Headers& part_headers,
                     const std::vector<std::string>& parts) {
    auto init = Send("POST", "/bkt/" + key + "?uploads", std::move(create));
    EXPECT_EQ(init.status, 200) << init.body;
    const std::string id = First(init.body, "UploadId");
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < parts.size(); ++i) {
      auto p =
          Send("PUT", "/bkt/" + key + "?partNumber=" + std::to_string(i + 1) + "&uploadId=" + id,
               part_headers, parts[i]);
      EXPECT_EQ(p.status, 200) << p.body;
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + H(p, "ETag") +
             "</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    auto done = Send("POST", "/bkt/" + key + "?uploadId=" + id, {}, xml);
    EXPECT_EQ(done.status, 200) << done.body;
    return id;
  }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<Frontend> frontend_;
  const Headers sse_s3_ = {{"x-amz-server-side-encryption", "AES256"}};
  const CustKey cust_{std::string(32, 'k')};
  const CustKey other_{std::string(32, 'o')};
};

TEST_F(SseTest, SseS3PutGetHeadReturnTheHeaderAndKeepTheMd5Etag) {
  const std::string body = "hello, encrypted world";
  auto put = Send("PUT", "/bkt/a", sse_s3_, body);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(H(put, "x-amz-server-side-encryption"), "AES256");
  // SSE-S3 keeps the MD5 ETag (S3: "objects encrypted by SSE-S3 ... have ETags that are an MD5
  // digest").
  EXPECT_EQ(H(put, "ETag"), "\"" + HexEncode(Md5(body)) + "\"");
  auto get = Send("GET", "/bkt/a");
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(get.body, body);
  EXPECT_EQ(H(get, "x-amz-server-side-encryption"), "AES256");
  auto head = Send("HEAD", "/bkt/a");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(H(head, "x-amz-server-side-encryption"), "AES256");
  EXPECT_EQ(H(head, "Content-Length"), std::to_string(body.size()));
  // An unencrypted object answers no SSE header.
  ASSERT_EQ(Send("PUT", "/bkt/plain", {}, body).status, 200);
  EXPECT_EQ(H(Send("HEAD", "/bkt/plain"), "x-amz-server-side-encryption"), "");
}

TEST_F(SseTest, RangedGetsAcrossCipherBlocks) {
  const uint64_t mib = 1 << 20;
  const std::string body = Pattern("range", 2 * mib + mib / 2 + 17);
  ASSERT_EQ(Send("PUT", "/bkt/big", sse_s3_, body).status, 200);
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, 0},
                                                       {mib - 5, mib + 5},
                                                       {mib - 1, mib},
                                                       {10, 2 * mib + 100},
                                                       {body.size() - 3, body.size() - 1},
                                                       {2 * mib, body.size() - 1}};
  for (auto [a, b] : ranges) {
    auto r = Send("GET", "/bkt/big",
                  {{"Range", "bytes=" + std::to_string(a) + "-" + std::to_string(b)}});
    ASSERT_EQ(r.status, 206) << a << "-" << b << " " << r.body.substr(0, 200);
    EXPECT_EQ(r.body, body.substr(a, b - a + 1)) << a << "-" << b;
  }
  auto all = Send("GET", "/bkt/big");
  EXPECT_EQ(all.body, body);
}

TEST_F(SseTest, SseKmsWithKeyIdAndDefaultKey) {
  auto put = Send("PUT", "/bkt/k",
                  {{"x-amz-server-side-encryption", "aws:kms"},
                   {"x-amz-server-side-encryption-aws-kms-key-id", "beta"}},
                  "kms data");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(H(put, "x-amz-server-side-encryption"), "aws:kms");
  EXPECT_EQ(H(put, "x-amz-server-side-encryption-aws-kms-key-id"), "beta");
  // S3: the ETag of an SSE-KMS object is not the MD5 of its data.
  EXPECT_NE(H(put, "ETag"), "\"" + HexEncode(Md5("kms data")) + "\"");
  auto get = Send("GET", "/bkt/k");
  EXPECT_EQ(get.body, "kms data");
  EXPECT_EQ(H(get, "x-amz-server-side-encryption-aws-kms-key-id"), "beta");
  EXPECT_EQ(H(get, "ETag"), H(put, "ETag"));
  // Without a key id: the default key. The ARN form names a key too.
  auto def = Send("PUT", "/bkt/d", {{"x-amz-server-side-encryption", "aws:kms"}}, "x");
  EXPECT_EQ(H(def, "x-amz-server-side-encryption-aws-kms-key-id"), "alpha");
  auto arn = Send("PUT", "/bkt/e",
                  {{"x-amz-server-side-encryption", "aws:kms"},
                   {"x-amz-server-side-encryption-aws-kms-key-id",
                    "arn:aws:kms:us-east-1:123456789012:key/beta"}},
                  "y");
  EXPECT_EQ(arn.status, 200) << arn.body;
  EXPECT_EQ(Send("GET", "/bkt/e").body, "y");
}

// The keys live with the server: after a restart without the key id (or with
// another master key) the object is refused, never served as ciphertext.
TEST_F(SseTest, ObjectsNeedTheServersKeys) {
  ASSERT_EQ(Send("PUT", "/bkt/k",
                 {{"x-amz-server-side-encryption", "aws:kms"},
                  {"x-amz-server-side-encryption-aws-kms-key-id", "beta"}},
                 "kms data")
                .status,
            200);
  ASSERT_EQ(Send("PUT", "/bkt/s", sse_s3_, "s3 data").status, 200);
  FrontendOptions fo;
  fo.users.push_back(User{"alice", kAk, kSecret, false});
  KmsOptions only_alpha;
  only_alpha.key_ids = {"alpha"};
  ASSERT_OK_AND_ASSIGN(fo.kms, KeyManager::FromMasterKey(std::string(32, '\x42'), only_alpha));
  frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
  ExpectError(Send("GET", "/bkt/k"), 400, "KMS.NotFoundException");
  EXPECT_EQ(Send("GET", "/bkt/s").body, "s3 data");
  ASSERT_OK_AND_ASSIGN(fo.kms, KeyManager::FromMasterKey(std::string(32, '\x43'), only_alpha));
  frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
  ExpectError(Send("GET", "/bkt/s"), 403, "AccessDenied");
}

TEST_F(SseTest, BadSseRequestsAreRefusedAndStoreNothing) {
  ExpectError(Send("PUT", "/bkt/x", {{"x-amz-server-side-encryption", "AES128"}}, "x"), 400,
              "InvalidArgument");
  ExpectError(Send("PUT", "/bkt/x",
                   {{"x-amz-server-side-encryption", "aws:kms"},
                    {"x-amz-server-side-encryption-aws-kms-key-id", "no-such-key"}},
                   "x"),
              400, "KMS.NotFoundException");
  ExpectError(Send("PUT", "/bkt/x",
                   {{"x-amz-server-side-encryption", "AES256"},
                    {"x-amz-server-side-encryption-aws-kms-key-id", "alpha"}},
                   "x"),
              400, "InvalidArgument");
  ExpectError(Send("PUT", "/bkt/x", Join(sse_s3_, cust_.headers()), "x"), 400, "InvalidArgument");
  Headers bad_md5 = cust_.headers();
  bad_md5[2].second = Base64Encode(Md5("something else"));
  ExpectError(Send("PUT", "/bkt/x", bad_md5, "x"), 400, "InvalidArgument");
  Headers short_key = {
      {"x-amz-server-side-encryption-customer-algorithm", "AES256"},
      {"x-amz-server-side-encryption-customer-key", Base64Encode("short")},
      {"x-amz-server-side-encryption-customer-key-MD5", Base64Encode(Md5("short"))}};
  ExpectError(Send("PUT", "/bkt/x", short_key, "x"), 400, "InvalidArgument");
  ExpectError(Send("GET", "/bkt/x"), 404, "NoSuchKey");
}

TEST_F(SseTest, SseCNeedsItsKeyOnEveryRead) {
  const std::string body = Pattern("ssec", 3000);
  auto put = Send("PUT", "/bkt/c", cust_.headers(), body);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(H(put, "x-amz-server-side-encryption-customer-algorithm"), "AES256");
  EXPECT_EQ(H(put, "x-amz-server-side-encryption-customer-key-MD5"), Base64Encode(Md5(cust_.raw)));
  EXPECT_NE(H(put, "ETag"), "\"" + HexEncode(Md5(body)) + "\"");
  // Without the key: 400 InvalidRequest (GET and HEAD); a wrong key: 403.
  ExpectError(Send("GET", "/bkt/c"), 400, "InvalidRequest");
  EXPECT_EQ(Send("HEAD", "/bkt/c").status, 400);
  ExpectError(Send("GET", "/bkt/c", other_.headers()), 403, "AccessDenied");
  Headers bad_md5 = cust_.headers();
  bad_md5[2].second = Base64Encode(Md5(other_.raw));
  ExpectError(Send("GET", "/bkt/c", bad_md5), 400, "InvalidArgument");
  auto get = Send("GET", "/bkt/c", cust_.headers());
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(get.body, body);
  EXPECT_EQ(H(get, "x-amz-server-side-encryption-customer-algorithm"), "AES256");
  EXPECT_EQ(H(get, "x-amz-server-side-encryption-customer-key-MD5"), Base64Encode(Md5(cust_.raw)));
  auto range = Send("GET", "/bkt/c", Join(cust_.headers(), {{"Range", "bytes=100-199"}}));
  EXPECT_EQ(range.body, body.substr(100, 100));
  EXPECT_EQ(Send("HEAD", "/bkt/c", cust_.headers()).status, 200);
  // A key on an object stored without SSE-C is refused as well.
  ASSERT_EQ(Send("PUT", "/bkt/p", {}, "plain").status, 200);
  ExpectError(Send("GET", "/bkt/p", cust_.headers()), 400, "InvalidRequest");
  // An empty SSE-C object still needs its key.
  ASSERT_EQ(Send("PUT", "/bkt/empty", cust_.headers(), "").status, 200);
  ExpectError(Send("GET", "/bkt/empty"), 400, "InvalidRequest");
}

TEST_F(SseTest, MultipartWithSseS3) {
  const std::string p1 = Pattern("mp1", 5 << 20), p2 = Pattern("mp2", 1234);
  Upload("m", sse_s3_, {}, {p1, p2});
  auto get = Send("GET", "/bkt/m");
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(get.body, p1 + p2);
  EXPECT_EQ(H(get, "x-amz-server-side-encryption"), "AES256");
  auto r = Send("GET", "/bkt/m", {{"Range", "bytes=5242870-5242889"}});
  EXPECT_EQ(r.body, (p1 + p2).substr(5242870, 20));
}

TEST_F(SseTest, MultipartWithSseCPartsCarryTheKey) {
  auto init = Send("POST", "/bkt/mc?uploads", cust_.headers());
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(H(init, "x-amz-server-side-encryption-customer-algorithm"), "AES256");
  const std::string id = First(init.body, "UploadId");
  const std::string p1 = Pattern("c1", 5 << 20), p2 = Pattern("c2", 999);
  ExpectError(Send("PUT", "/bkt/mc?partNumber=1&uploadId=" + id, {}, p1), 400, "InvalidRequest");
  ExpectError(Send("PUT", "/bkt/mc?partNumber=1&uploadId=" + id, other_.headers(), p1), 403,
              "AccessDenied");
  auto u1 = Send("PUT", "/bkt/mc?partNumber=1&uploadId=" + id, cust_.headers(), p1);
  auto u2 = Send("PUT", "/bkt/mc?partNumber=2&uploadId=" + id, cust_.headers(), p2);
  ASSERT_EQ(u1.status, 200) << u1.body;
  ASSERT_EQ(u2.status, 200) << u2.body;
  EXPECT_EQ(H(u1, "x-amz-server-side-encryption-customer-algorithm"), "AES256");
  EXPECT_EQ(H(u1, "x-amz-server-side-encryption-customer-key-MD5"), Base64Encode(Md5(cust_.raw)));
  std::string xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                    H(u1, "ETag") + "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                    H(u2, "ETag") + "</ETag></Part></CompleteMultipartUpload>";
  ASSERT_EQ(Send("POST", "/bkt/mc?uploadId=" + id, {}, xml).status, 200);
  ExpectError(Send("GET", "/bkt/mc"), 400, "InvalidRequest");
  auto get = Send("GET", "/bkt/mc", cust_.headers());
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(get.body, p1 + p2);
}

TEST_F(SseTest, CopyBetweenEncryptionSchemes) {
  const std::string body = Pattern("copy", 200000);
  ASSERT_EQ(Send("PUT", "/bkt/none", {}, body).status, 200);
  // none -> SSE-S3
  auto c1 = Send("PUT", "/bkt/s3", Join(sse_s3_, {{"x-amz-copy-source", "/bkt/none"}}));
  ASSERT_EQ(c1.status, 200) << c1.body;
  EXPECT_EQ(H(c1, "x-amz-server-side-encryption"), "AES256");
  EXPECT_EQ(H(Send("HEAD", "/bkt/s3"), "x-amz-server-side-encryption"), "AES256");
  EXPECT_EQ(Send("GET", "/bkt/s3").body, body);
  // SSE-S3 -> SSE-C
  auto c2 = Send("PUT", "/bkt/c", Join(cust_.headers(), {{"x-amz-copy-source", "/bkt/s3"}}));
  ASSERT_EQ(c2.status, 200) << c2.body;
  ExpectError(Send("GET", "/bkt/c"), 400, "InvalidRequest");
  EXPECT_EQ(Send("GET", "/bkt/c", cust_.headers()).body, body);
  // SSE-C -> SSE-KMS needs the copy-source key.
  Headers to_kms = {{"x-amz-copy-source", "/bkt/c"},
                    {"x-amz-server-side-encryption", "aws:kms"},
                    {"x-amz-server-side-encryption-aws-kms-key-id", "alpha"}};
  ExpectError(Send("PUT", "/bkt/k", to_kms), 400, "InvalidRequest");
  ExpectError(Send("PUT", "/bkt/k", Join(to_kms, other_.headers(true))), 403, "AccessDenied");
  auto c3 = Send("PUT", "/bkt/k", Join(to_kms, cust_.headers(true)));
  ASSERT_EQ(c3.status, 200) << c3.body;
  EXPECT_EQ(H(c3, "x-amz-server-side-encryption-aws-kms-key-id"), "alpha");
  auto gk = Send("GET", "/bkt/k");
  EXPECT_EQ(gk.body, body);
  EXPECT_EQ(H(gk, "x-amz-server-side-encryption"), "aws:kms");
  // SSE-KMS -> none
  auto c4 = Send("PUT", "/bkt/back", {{"x-amz-copy-source", "/bkt/k"}});
  ASSERT_EQ(c4.status, 200) << c4.body;
  auto gb = Send("GET", "/bkt/back");
  EXPECT_EQ(gb.body, body);
  EXPECT_EQ(H(gb, "x-amz-server-side-encryption"), "");
  EXPECT_EQ(H(gb, "ETag"), "\"" + HexEncode(Md5(body)) + "\"");
  // Copying an object onto itself to encrypt it is allowed (it changes the encryption).
  auto self = Send("PUT", "/bkt/none", Join(sse_s3_, {{"x-amz-copy-source", "/bkt/none"}}));
  EXPECT_EQ(self.status, 200) << self.body;
  EXPECT_EQ(H(Send("HEAD", "/bkt/none"), "x-amz-server-side-encryption"), "AES256");
}

TEST_F(SseTest, UploadPartCopyFromSseCSource) {
  const std::string body = Pattern("upc", 6 << 20);
  ASSERT_EQ(Send("PUT", "/bkt/src", cust_.headers(), body).status, 200);
  auto init = Send("POST", "/bkt/dst?uploads", sse_s3_);
  const std::string id = First(init.body, "UploadId");
  const std::string t = "/bkt/dst?partNumber=1&uploadId=" + id;
  ExpectError(Send("PUT", t, {{"x-amz-copy-source", "/bkt/src"}}), 400, "InvalidRequest");
  auto p = Send("PUT", t, Join({{"x-amz-copy-source", "/bkt/src"}}, cust_.headers(true)));
  ASSERT_EQ(p.status, 200) << p.body;
  std::string xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                    First(p.body, "ETag") + "</ETag></Part></CompleteMultipartUpload>";
  ASSERT_EQ(Send("POST", "/bkt/dst?uploadId=" + id, {}, xml).status, 200);
  EXPECT_EQ(Send("GET", "/bkt/dst").body, body);
}

TEST_F(SseTest, BucketDefaultEncryption) {
  ExpectError(Send("GET", "/bkt?encryption"), 404,
              "ServerSideEncryptionConfigurationNotFoundError");
  const std::string kms_doc =
      "<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Rule>"
      "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm>"
      "<KMSMasterKeyID>beta</KMSMasterKeyID></ApplyServerSideEncryptionByDefault>"
      "<BucketKeyEnabled>true</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>";
  auto put = Send("PUT", "/bkt?encryption", {}, kms_doc);
  ASSERT_EQ(put.status, 200) << put.body;
  auto get = Send("GET", "/bkt?encryption");
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(First(get.body, "SSEAlgorithm"), "aws:kms");
  EXPECT_EQ(First(get.body, "KMSMasterKeyID"), "beta");
  EXPECT_EQ(First(get.body, "BucketKeyEnabled"), "true");
  auto obj = Send("PUT", "/bkt/defaulted", {}, "by default");
  EXPECT_EQ(H(obj, "x-amz-server-side-encryption"), "aws:kms");
  EXPECT_EQ(H(obj, "x-amz-server-side-encryption-aws-kms-key-id"), "beta");
  EXPECT_EQ(H(Send("HEAD", "/bkt/defaulted"), "x-amz-server-side-encryption"), "aws:kms");
  // Explicit headers win over the default.
  EXPECT_EQ(H(Send("PUT", "/bkt/explicit", sse_s3_, "e"), "x-amz-server-side-encryption"),
            "AES256");
  // Bad documents are refused and change nothing.
  ExpectError(Send("PUT", "/bkt?encryption", {}, "<nope"), 400, "MalformedXML");
  std::string unknown = kms_doc;
  unknown.replace(unknown.find(">beta<"), 6, ">gamma<");
  ExpectError(Send("PUT", "/bkt?encryption", {}, unknown), 400, "KMS.NotFoundException");
  EXPECT_EQ(First(Send("GET", "/bkt?encryption").body, "KMSMasterKeyID"), "beta");
  auto del = Send("DELETE", "/bkt?encryption");
  EXPECT_EQ(del.status, 204);
  ExpectError(Send("GET", "/bkt?encryption"), 404,
              "ServerSideEncryptionConfigurationNotFoundError");
  EXPECT_EQ(H(Send("PUT", "/bkt/after", {}, "a"), "x-amz-server-side-encryption"), "");
  // The bucket still exists and still holds its objects.
  EXPECT_EQ(Send("GET", "/bkt/defaulted").body, "by default");
}

// Every file under the data directory (data files, RocksDB WAL/SST/MANIFEST).
std::string ReadAllFiles(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    all.push_back('\n');
  }
  return all;
}

TEST_F(SseTest, NoPlaintextOnDiskForEncryptedObjects) {
  // Sizes: embedded in the record (100), a body record (4000), a data file (3 MiB + 5).
  const std::vector<size_t> sizes = {100, 4000, (3u << 20) + 5};
  std::vector<Headers> schemes = {
      sse_s3_, {{"x-amz-server-side-encryption", "aws:kms"}}, cust_.headers()};
  for (size_t s = 0; s < schemes.size(); ++s) {
    for (size_t n : sizes) {
      const std::string tag = "secret" + std::to_string(s) + "x" + std::to_string(n);
      ASSERT_EQ(Send("PUT", "/bkt/" + tag, schemes[s], Pattern(tag, n)).status, 200);
      const std::string ctl = "control" + std::to_string(s) + "x" + std::to_string(n);
      ASSERT_EQ(Send("PUT", "/bkt/" + ctl, {}, Pattern(ctl, n)).status, 200);
    }
  }
  // Multipart parts as well.
  Upload("secretmp", sse_s3_, {}, {Pattern("secretmp", 5 << 20), Pattern("secretmq", 300)});
  const std::string disk = ReadAllFiles(dir_.Join("data"));
  for (size_t s = 0; s < schemes.size(); ++s) {
    for (size_t n : sizes) {
      const std::string tag = "secret" + std::to_string(s) + "x" + std::to_string(n);
      const std::string ctl = "control" + std::to_string(s) + "x" + std::to_string(n);
      // A 40-byte run of the pattern from its middle (not the key name, which is metadata).
      const size_t mid = n / 2;
      EXPECT_EQ(disk.find(Pattern(tag, n).substr(mid, 40)), std::string::npos) << tag;
      EXPECT_NE(disk.find(Pattern(ctl, n).substr(mid, 40)), std::string::npos) << ctl;
    }
  }
  EXPECT_EQ(disk.find(Pattern("secretmp", 5 << 20).substr(1 << 20, 40)), std::string::npos);
  EXPECT_EQ(disk.find(Pattern("secretmq", 300).substr(150, 40)), std::string::npos);
}

}  // namespace
}  // namespace strata::s3

namespace strata::s3 {
namespace {

TEST_F(SseTest, AppendsToOrAsEncryptedObjectsAreNotImplemented) {
  ASSERT_EQ(Send("PUT", "/bkt/enc", sse_s3_, "abc").status, 200);
  ExpectError(Send("PUT", "/bkt/enc", {{"x-amz-write-offset-bytes", "3"}}, "def"), 501,
              "NotImplemented");
  ExpectError(Send("PUT", "/bkt/new", Join(sse_s3_, {{"x-amz-write-offset-bytes", "0"}}), "x"), 501,
              "NotImplemented");
  EXPECT_EQ(Send("GET", "/bkt/enc").body, "abc");
  ExpectError(Send("GET", "/bkt/new"), 404, "NoSuchKey");
}

// A frontend built without a key manager cannot keep SSE-S3/SSE-KMS promises:
// it refuses them (501) instead of storing the data in the clear; SSE-C needs
// no server key and works.
TEST(SseWithoutKms, SseS3AndKmsAreRefusedSseCWorks) {
  testing::TempDir dir;
  objstore::EngineOptions eo;
  eo.data_dir = dir.Join("data");
  eo.sync = false;
  ASSERT_OK_AND_ASSIGN(auto engine, objstore::LocalEngine::Open(eo));
  ASSERT_OK(engine->CreateBucket("bkt", kAk));
  FrontendOptions fo;
  fo.users.push_back(User{"alice", kAk, kSecret, false});
  Frontend f(engine.get(), fo);
  auto send = [&](Headers h, const std::string& body, const std::string& method = "PUT") {
    h.emplace_back("Host", "127.0.0.1:9000");
    sigv4::SigningParams sp;
    sp.credentials.access_key = kAk;
    sp.credentials.secret_key = kSecret;
    sp.now_ns = NowUnixNanos();
    sigv4::SignRequest(method, "/bkt/o", "", h, sigv4::PayloadSha256Hex(body), sp);
    h.emplace_back("Content-Length", std::to_string(body.size()));
    return http::ServeInMemory(http::FrontendHandler(&f),
                               http::FormatRequest(method, "/bkt/o", h, body),
                               http::WithFrontendErrors(http::ServerOptions{}, &f));
  };
  auto r = send({{"x-amz-server-side-encryption", "AES256"}}, "secret");
  EXPECT_EQ(r.status, 501) << r.body;
  r = send({{"x-amz-server-side-encryption", "aws:kms"}}, "secret");
  EXPECT_EQ(r.status, 501) << r.body;
  EXPECT_FALSE(engine->HeadObject("bkt", "o").ok());
  CustKey k{std::string(32, 'z')};
  r = send(k.headers(), "secret");
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace strata::s3
