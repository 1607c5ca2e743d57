// The S3 frontend driven through the real HTTP parser without a socket
// (http::ServeInMemory) over a LocalEngine in a temporary directory. Requests
// are signed with core's SigV4 signer, as the S3 client signs them. Expected
// values come from the Amazon S3 API Reference (status codes, headers, XML
// elements, error codes), not from the frontend's code. The last tests check
// the routing table itself.
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <tuple>
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

#include "s3/frontend_fixture.h"
#include "s3/router.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

using namespace s3test;  // NOLINT: the fixture and its helpers

TEST_F(FrontendTest, CreateBucketAnswersLocationAndHeadBucketFindsIt) {
  auto r = Put("/photos", "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Header(r, "Location"), "/photos");
  EXPECT_FALSE(Header(r, "x-amz-request-id").empty());
  auto head = Send({"HEAD", "/photos"});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(Header(head, "x-amz-bucket-region"), "us-east-1");
  auto list = Get("/");
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(All(list.body, "Name"), std::vector<std::string>{"photos"}) << list.body;
}

TEST_F(FrontendTest, PutGetHeadDeleteObject) {
  CreateBucket("bkt");
  // The ETag of an object uploaded by PutObject is the MD5 of its data, quoted.
  const std::string etag = "\"5d41402abc4b2a76b9719d911017c592\"";  // md5("hello")
  auto put = Put("/bkt/greeting.txt", "hello", {{"Content-Type", "text/plain"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Header(put, "ETag"), etag);

  auto get = Get("/bkt/greeting.txt");
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_EQ(get.body, "hello");
  EXPECT_EQ(Header(get, "Content-Length"), "5");
  EXPECT_EQ(Header(get, "ETag"), etag);
  EXPECT_EQ(Header(get, "Content-Type"), "text/plain");
  EXPECT_FALSE(Header(get, "Last-Modified").empty());

  auto head = Send({"HEAD", "/bkt/greeting.txt"});
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(Header(head, "Content-Length"), "5");
  EXPECT_EQ(Header(head, "ETag"), etag);
  EXPECT_TRUE(head.body.empty());

  // DeleteObject answers 204 No Content; the key is gone afterwards.
  auto del = Send({"DELETE", "/bkt/greeting.txt"});
  EXPECT_EQ(del.status, 204) << del.body;
  ExpectError(Get("/bkt/greeting.txt"), 404, "NoSuchKey", "/bkt/greeting.txt");
}

TEST_F(FrontendTest, RangedGetAnswersPartialContent) {
  CreateBucket("bkt");
  ASSERT_EQ(Put("/bkt/digits", "0123456789").status, 200);

  auto r = Get("/bkt/digits", {{"Range", "bytes=2-5"}});
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.body, "2345");
  EXPECT_EQ(Header(r, "Content-Range"), "bytes 2-5/10");
  EXPECT_EQ(Header(r, "Content-Length"), "4");

  auto suffix = Get("/bkt/digits", {{"Range", "bytes=-3"}});
  EXPECT_EQ(suffix.status, 206);
  EXPECT_EQ(suffix.body, "789");
  EXPECT_EQ(Header(suffix, "Content-Range"), "bytes 7-9/10");

  auto open_end = Get("/bkt/digits", {{"Range", "bytes=8-"}});
  EXPECT_EQ(open_end.status, 206);
  EXPECT_EQ(open_end.body, "89");

  // A range past the end: 416 InvalidRange.
  auto bad = Get("/bkt/digits", {{"Range", "bytes=20-30"}});
  EXPECT_EQ(bad.status, 416);
  EXPECT_EQ(First(bad.body, "Code"), "InvalidRange");
}

TEST_F(FrontendTest, ListObjectsV2PrefixDelimiterMaxKeysContinuation) {
  CreateBucket("bkt");
  for (const char* k : {"a/1", "a/2", "b/1", "c"})
    ASSERT_EQ(Put(std::string("/bkt/") + k, k).status, 200);

  auto prefix = Get("/bkt?list-type=2&prefix=a%2F");
  ASSERT_EQ(prefix.status, 200) << prefix.body;
  EXPECT_NE(prefix.body.find("<ListBucketResult"), std::string::npos);
  EXPECT_EQ(All(prefix.body, "Key"), (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(First(prefix.body, "KeyCount"), "2");
  EXPECT_EQ(First(prefix.body, "Prefix"), "a/");
  EXPECT_EQ(First(prefix.body, "IsTruncated"), "false");

  auto delim = Get("/bkt?list-type=2&delimiter=%2F");
  ASSERT_EQ(delim.status, 200) << delim.body;
  EXPECT_EQ(All(delim.body, "Key"), std::vector<std::string>{"c"});
  EXPECT_EQ(CommonPrefixes(delim.body), (std::vector<std::string>{"a/", "b/"})) << delim.body;
  EXPECT_EQ(First(delim.body, "Delimiter"), "/");

  auto page1 = Get("/bkt?list-type=2&max-keys=2");
  ASSERT_EQ(page1.status, 200) << page1.body;
  EXPECT_EQ(All(page1.body, "Key"), (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(First(page1.body, "MaxKeys"), "2");
  EXPECT_EQ(First(page1.body, "IsTruncated"), "true");
  std::string token = First(page1.body, "NextContinuationToken");
  ASSERT_FALSE(token.empty()) << page1.body;

  auto page2 = Get("/bkt?list-type=2&max-keys=2&continuation-token=" + UriEncode(token, false));
  ASSERT_EQ(page2.status, 200) << page2.body;
  EXPECT_EQ(All(page2.body, "Key"), (std::vector<std::string>{"b/1", "c"}));
  EXPECT_EQ(First(page2.body, "ContinuationToken"), token);
  EXPECT_EQ(First(page2.body, "IsTruncated"), "false");
  EXPECT_TRUE(First(page2.body, "NextContinuationToken").empty());
}

TEST_F(FrontendTest, MultipartUploadEtagIsMd5OfPartMd5sDashCount) {
  CreateBucket("bkt");
  auto init = Send({"POST", "/bkt/big?uploads"});
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(First(init.body, "Bucket"), "bkt");
  EXPECT_EQ(First(init.body, "Key"), "big");
  const std::string id = First(init.body, "UploadId");
  ASSERT_FALSE(id.empty()) << init.body;

  // Every part but the last is at least 5 MiB.
  const std::string p1(5 << 20, 'x'), p2 = "tail";
  auto u1 = Send({"PUT", "/bkt/big?partNumber=1&uploadId=" + id, {}, p1, kAk, kSecret, true});
  ASSERT_EQ(u1.status, 200) << u1.body;
  EXPECT_EQ(Header(u1, "ETag"), "\"" + HexEncode(Md5(p1)) + "\"");
  auto u2 = Put("/bkt/big?partNumber=2&uploadId=" + id, p2);
  ASSERT_EQ(u2.status, 200) << u2.body;

  auto parts = Get("/bkt/big?uploadId=" + id);
  ASSERT_EQ(parts.status, 200) << parts.body;
  EXPECT_EQ(All(parts.body, "PartNumber"), (std::vector<std::string>{"1", "2"}));

  const std::string complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                               Header(u1, "ETag") +
                               "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                               Header(u2, "ETag") + "</ETag></Part></CompleteMultipartUpload>";
  auto done = Send({"POST", "/bkt/big?uploadId=" + id, {}, complete});
  ASSERT_EQ(done.status, 200) << done.body;
  const std::string etag = First(done.body, "ETag");
  // XmlEscape writes the quotes as entities.
  const std::string want = HexEncode(Md5(Md5(p1) + Md5(p2))) + "-2";
  EXPECT_TRUE(etag == "&quot;" + want + "&quot;" || etag == "\"" + want + "\"") << etag;
  EXPECT_EQ(First(done.body, "Key"), "big");

  auto head = Send({"HEAD", "/bkt/big"});
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(std::regex_match(Header(head, "ETag"), std::regex("\"[0-9a-f]{32}-2\"")))
      << Header(head, "ETag");
  EXPECT_EQ(Header(head, "ETag"), "\"" + want + "\"");
  EXPECT_EQ(Header(head, "Content-Length"), std::to_string(p1.size() + p2.size()));
  auto tail = Get("/bkt/big", {{"Range", "bytes=-4"}});
  EXPECT_EQ(tail.body, "tail");
}

TEST_F(FrontendTest, MultipartErrors) {
  CreateBucket("bkt");
  // An upload id that was never created: 404 NoSuchUpload.
  auto none = Send({"POST", "/bkt/k?uploadId=nope", {}, "<CompleteMultipartUpload/>"});
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_EQ(First(none.body, "Code"), "NoSuchUpload");

  auto init = Send({"POST", "/bkt/k?uploads"});
  const std::string id = First(init.body, "UploadId");
  ASSERT_FALSE(id.empty());
  auto u1 = Put("/bkt/k?partNumber=1&uploadId=" + id, "small");
  auto u2 = Put("/bkt/k?partNumber=2&uploadId=" + id, "last");
  ASSERT_EQ(u1.status, 200);
  ASSERT_EQ(u2.status, 200);

  // A body that is not XML: 400 MalformedXML.
  auto bad = Send({"POST", "/bkt/k?uploadId=" + id, {}, "this is not <xml"});
  ExpectError(bad, 400, "MalformedXML", "/bkt/k");

  // A part under 5 MiB that is not the last: 400 EntityTooSmall.
  const std::string complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                               Header(u1, "ETag") +
                               "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                               Header(u2, "ETag") + "</ETag></Part></CompleteMultipartUpload>";
  auto small = Send({"POST", "/bkt/k?uploadId=" + id, {}, complete});
  EXPECT_EQ(small.status, 400) << small.body;
  EXPECT_EQ(First(small.body, "Code"), "EntityTooSmall");

  // AbortMultipartUpload answers 204; the upload is gone.
  EXPECT_EQ(Send({"DELETE", "/bkt/k?uploadId=" + id}).status, 204);
  EXPECT_EQ(First(Get("/bkt/k?uploadId=" + id).body, "Code"), "NoSuchUpload");
}

TEST_F(FrontendTest, CopyObject) {
  CreateBucket("src");
  CreateBucket("dst");
  auto put = Put("/src/a", "copied bytes", {{"x-amz-meta-color", "blue"}});
  ASSERT_EQ(put.status, 200);
  auto copy = Put("/dst/b", "", {{"x-amz-copy-source", "/src/a"}});
  ASSERT_EQ(copy.status, 200) << copy.body;
  EXPECT_NE(copy.body.find("<CopyObjectResult"), std::string::npos) << copy.body;
  EXPECT_FALSE(First(copy.body, "LastModified").empty());
  const std::string etag = First(copy.body, "ETag");
  EXPECT_NE(etag.find(HexEncode(Md5("copied bytes"))), std::string::npos) << etag;

  auto get = Get("/dst/b");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "copied bytes");
  EXPECT_EQ(Header(get, "ETag"), Header(put, "ETag"));
  // x-amz-metadata-directive defaults to COPY: the metadata comes along.
  EXPECT_EQ(Header(get, "x-amz-meta-color"), "blue");

  auto missing = Put("/dst/c", "", {{"x-amz-copy-source", "/src/nothing"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(First(missing.body, "Code"), "NoSuchKey");
}

TEST_F(FrontendTest, DeleteObjectsReportsEachKey) {
  CreateBucket("bkt");
  ASSERT_EQ(Put("/bkt/one", "1").status, 200);
  ASSERT_EQ(Put("/bkt/two", "2").status, 200);
  const std::string body =
      "<Delete><Object><Key>one</Key></Object><Object><Key>two</Key></Object>"
      "<Object><Key>never-was</Key></Object></Delete>";
  auto r = Send({"POST", "/bkt?delete", {{"Content-MD5", Base64Encode(Md5(body))}}, body});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<DeleteResult"), std::string::npos);
  // Deleting a key that does not exist succeeds, as in S3.
  std::vector<std::string> deleted = All(r.body, "Key");
  EXPECT_EQ(std::set<std::string>(deleted.begin(), deleted.end()),
            (std::set<std::string>{"one", "two", "never-was"}));
  EXPECT_EQ(Get("/bkt/one").status, 404);
  EXPECT_EQ(Get("/bkt/two").status, 404);

  // Quiet mode lists only errors.
  ASSERT_EQ(Put("/bkt/three", "3").status, 200);
  const std::string quiet = "<Delete><Quiet>true</Quiet><Object><Key>three</Key></Object></Delete>";
  auto q = Send({"POST", "/bkt?delete", {}, quiet});
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_TRUE(All(q.body, "Key").empty()) << q.body;
  EXPECT_EQ(Get("/bkt/three").status, 404);
}

TEST_F(FrontendTest, ErrorDocuments) {
  ExpectError(Get("/nobucket/k"), 404, "NoSuchBucket", "/nobucket/k");
  ExpectError(Get("/nobucket"), 404, "NoSuchBucket", "/nobucket");
  CreateBucket("bkt");
  ExpectError(Get("/bkt/missing"), 404, "NoSuchKey", "/bkt/missing");

  Call wrong_secret{"GET", "/bkt/k"};
  wrong_secret.secret = "not-the-secret";
  ExpectError(Send(wrong_secret), 403, "SignatureDoesNotMatch", "/bkt/k");

  Call unknown_key{"GET", "/bkt/k"};
  unknown_key.access_key = "AKIDNOBODY";
  ExpectError(Send(unknown_key), 403, "InvalidAccessKeyId", "/bkt/k");

  ASSERT_EQ(Put("/bkt/k", "x").status, 200);
  ExpectError(Send({"DELETE", "/bkt"}), 409, "BucketNotEmpty", "/bkt");
  EXPECT_EQ(Send({"DELETE", "/bkt/k"}).status, 204);
  EXPECT_EQ(Send({"DELETE", "/bkt"}).status, 204);
  // HEAD answers carry no body.
  auto head = Send({"HEAD", "/bkt"});
  EXPECT_EQ(head.status, 404);
  EXPECT_TRUE(head.body.empty());
  ExpectError(Get("/bkt"), 404, "NoSuchBucket", "/bkt");
}

TEST_F(FrontendTest, BadInput) {
  ExpectError(Put("/Bad_Bucket", ""), 400, "InvalidBucketName", "/Bad_Bucket");
  ExpectError(Put("/ab", ""), 400, "InvalidBucketName", "/ab");
  CreateBucket("bkt");
  // A key over 1024 bytes: KeyTooLongError.
  auto long_key = Put("/bkt/" + std::string(1100, 'k'), "x");
  EXPECT_EQ(long_key.status, 400);
  EXPECT_EQ(First(long_key.body, "Code"), "KeyTooLongError");
  // A method S3 does not serve on an object: 405 MethodNotAllowed.
  auto patch = Send({"PATCH", "/bkt/k"});
  EXPECT_EQ(patch.status, 405);
  EXPECT_EQ(First(patch.body, "Code"), "MethodNotAllowed");
}

// ---------------------------------------------------------------------------
// The routing table.

std::string_view MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kHead:
      return "HEAD";
    case Method::kPut:
      return "PUT";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
    case Method::kOther:
      return "PATCH";
    case Method::kAny:
      return "PATCH";  // a method no other row names
  }
  return "";
}

TEST(RouteTableTest, EachMethodResourceSubResourceAppearsOnce) {
  std::set<std::tuple<int, int, std::string, std::string, std::string>> seen;
  for (const RouteRow& row : RouteTable()) {
    auto key = std::make_tuple(static_cast<int>(row.method), static_cast<int>(row.resource),
                               std::string(row.sub ? row.sub : ""),
                               std::string(row.sub_value ? row.sub_value : ""),
                               std::string(row.header ? row.header : ""));
    EXPECT_TRUE(seen.insert(key).second)
        << "duplicate row " << MethodName(row.method) << " " << row.op;
    EXPECT_TRUE(row.handler != nullptr) << row.op;
    EXPECT_NE(row.op, nullptr);
    EXPECT_TRUE(row.sub_value == nullptr || row.sub != nullptr) << row.op;
  }
}

TEST(RouteTableTest, EveryRowIsReachable) {
  for (const RouteRow& row : RouteTable()) {
    std::multimap<std::string, std::string> query;
    if (row.sub != nullptr) query.emplace(row.sub, row.sub_value ? row.sub_value : "");
    http::Request req;
    if (row.header != nullptr) req.headers.push_back({row.header, "/src/key"});
    const Method method = ParseMethod(MethodName(row.method));
    const RouteRow* got = FindRoute(method, row.resource, query, req);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got, &row) << MethodName(row.method) << " " << (row.sub ? row.sub : "-") << " "
                         << row.op << " is shadowed by " << got->op;
  }
}

TEST(RouteTableTest, EveryResourceEndsInAMethodNotAllowedRow) {
  http::Request req;
  for (Resource r : {Resource::kService, Resource::kBucket, Resource::kObject}) {
    const RouteRow* row = FindRoute(Method::kOther, r, {}, req);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->method, Method::kAny);
    EXPECT_TRUE(row->handler == &Frontend::Impl::MethodNotAllowed);
  }
}

TEST(RouteTableTest, SubResourcesSelectTheirRowNeverTheFallback) {
  http::Request req;
  const std::multimap<std::string, std::string> retention{{"retention", ""}};
  EXPECT_STREQ(FindRoute(Method::kPut, Resource::kObject, retention, req)->op,
               "PutObjectRetention");
  EXPECT_STREQ(FindRoute(Method::kGet, Resource::kObject, retention, req)->op,
               "GetObjectRetention");
  const std::multimap<std::string, std::string> encryption{{"encryption", ""}};
  EXPECT_STREQ(FindRoute(Method::kPut, Resource::kBucket, encryption, req)->op,
               "PutBucketEncryption");
  // HEAD with a sub-resource is that sub-resource's GET, never a write.
  const std::multimap<std::string, std::string> tagging{{"tagging", ""}};
  EXPECT_STREQ(FindRoute(Method::kHead, Resource::kObject, tagging, req)->op, "GetObjectTagging");
  // A parameter no row reads is refused before any handler runs; a
  // sub-resource of another method is MethodNotAllowed.
  const RouteRow* put = FindRoute(Method::kPut, Resource::kObject, {}, req);
  ASSERT_STREQ(put->op, "PutObject");
  EXPECT_EQ(CheckQuery(*put, {{"frobnicate", ""}}).message().substr(0, 14), "NotImplemented");
  const RouteRow* del = FindRoute(Method::kDelete, Resource::kBucket, {}, req);
  ASSERT_STREQ(del->op, "DeleteBucket");
  EXPECT_EQ(CheckQuery(*del, {{"location", ""}}).message().substr(0, 16), "MethodNotAllowed");
  EXPECT_TRUE(CheckQuery(*put, {{"X-Amz-Signature", "ab"}, {"x-id", "PutObject"}}).ok());
  const RouteRow* get = FindRoute(Method::kGet, Resource::kObject, {}, req);
  EXPECT_TRUE(CheckQuery(*get, {{"versionId", "null"}}).ok());
  // Any version id reaches the handler, which resolves it (or refuses a malformed one).
  EXPECT_TRUE(CheckQuery(*get, {{"versionId", "3HL4kqtJlcpXroDTDmJ"}}).ok());
  const std::multimap<std::string, std::string> v1{{"list-type", "1"}};
  EXPECT_STREQ(FindRoute(Method::kGet, Resource::kBucket, v1, req)->op, "ListObjects");
  // The earlier row wins when several sub-resources are named.
  const std::multimap<std::string, std::string> both{{"acl", ""}, {"versioning", ""}};
  EXPECT_STREQ(FindRoute(Method::kPut, Resource::kBucket, both, req)->op, "PutBucketAcl");
  req.headers.push_back({"x-amz-copy-source", "/bkt/k"});
  EXPECT_STREQ(FindRoute(Method::kPut, Resource::kObject, {}, req)->op, "CopyObject");
  const std::multimap<std::string, std::string> part{{"partNumber", "1"}, {"uploadId", "x"}};
  EXPECT_STREQ(FindRoute(Method::kPut, Resource::kObject, part, req)->op, "UploadPartCopy");
}

}  // namespace
}  // namespace strata::s3
