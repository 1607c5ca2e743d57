// The strict router, walked as a table: every sub-resource the Amazon S3 API
// Reference defines, on a bucket and on an object, against GET, HEAD, PUT,
// POST and DELETE. Each request must get the operation S3 defines for it
// (when Strata implements it), 501 NotImplemented (when S3 defines it and
// Strata does not) or 405 MethodNotAllowed / 501 (when S3 defines no such
// operation), and must leave the object's bytes and metadata and the bucket's
// existence as they were, unless the operation is one that changes them.
//
// The lists below come from the API reference's operation list (each
// operation's "Request Syntax": method, path, sub-resource), not from the
// routing table.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

#include "s3/frontend_fixture.h"

namespace strata::s3 {
namespace {

using namespace s3test;  // NOLINT: the fixture and its helpers

enum class On { kBucket, kObject };

// Sub-resources S3 defines (bucket level, object level).
const std::vector<std::string> kBucketSubs = {"abac",
                                              "accelerate",
                                              "acl",
                                              "analytics",
                                              "cors",
                                              "delete",
                                              "encryption",
                                              "intelligent-tiering",
                                              "inventory",
                                              "lifecycle",
                                              "list-type=2",
                                              "location",
                                              "logging",
                                              "metadataConfiguration",
                                              "metadataInventoryTable",
                                              "metadataJournalTable",
                                              "metadataTable",
                                              "metrics",
                                              "notification",
                                              "object-lock",
                                              "ownershipControls",
                                              "policy",
                                              "policyStatus",
                                              "publicAccessBlock",
                                              "replication",
                                              "requestPayment",
                                              "session",
                                              "tagging",
                                              "uploads",
                                              "versioning",
                                              "versions",
                                              "website"};
const std::vector<std::string> kObjectSubs = {
    "acl",          "attributes",   "encryption", "legal-hold",           "partNumber=1",
    "renameObject", "restore",      "retention",  "select&select-type=2", "tagging",
    "torrent",      "uploadId=abc", "uploads"};

// (method, sub) pairs the API reference defines, per resource.
const std::set<std::pair<std::string, std::string>> kBucketOps = {
    {"GET", "abac"},
    {"GET", "accelerate"},
    {"GET", "acl"},
    {"GET", "analytics"},
    {"GET", "cors"},
    {"GET", "encryption"},
    {"GET", "intelligent-tiering"},
    {"GET", "inventory"},
    {"GET", "lifecycle"},
    {"GET", "location"},
    {"GET", "logging"},
    {"GET", "metadataConfiguration"},
    {"GET", "metadataTable"},
    {"GET", "metrics"},
    {"GET", "notification"},
    {"GET", "object-lock"},
    {"GET", "ownershipControls"},
    {"GET", "policy"},
    {"GET", "policyStatus"},
    {"GET", "publicAccessBlock"},
    {"GET", "replication"},
    {"GET", "requestPayment"},
    {"GET", "tagging"},
    {"GET", "versioning"},
    {"GET", "website"},
    {"GET", "uploads"},
    {"GET", "versions"},
    {"GET", "session"},
    {"GET", "list-type=2"},
    {"PUT", "abac"},
    {"PUT", "accelerate"},
    {"PUT", "acl"},
    {"PUT", "analytics"},
    {"PUT", "cors"},
    {"PUT", "encryption"},
    {"PUT", "intelligent-tiering"},
    {"PUT", "inventory"},
    {"PUT", "lifecycle"},
    {"PUT", "logging"},
    {"PUT", "metrics"},
    {"PUT", "notification"},
    {"PUT", "object-lock"},
    {"PUT", "ownershipControls"},
    {"PUT", "policy"},
    {"PUT", "publicAccessBlock"},
    {"PUT", "replication"},
    {"PUT", "requestPayment"},
    {"PUT", "tagging"},
    {"PUT", "versioning"},
    {"PUT", "website"},
    {"PUT", "metadataInventoryTable"},
    {"PUT", "metadataJournalTable"},
    {"DELETE", "analytics"},
    {"DELETE", "cors"},
    {"DELETE", "encryption"},
    {"DELETE", "intelligent-tiering"},
    {"DELETE", "inventory"},
    {"DELETE", "lifecycle"},
    {"DELETE", "metadataConfiguration"},
    {"DELETE", "metadataTable"},
    {"DELETE", "metrics"},
    {"DELETE", "ownershipControls"},
    {"DELETE", "policy"},
    {"DELETE", "publicAccessBlock"},
    {"DELETE", "replication"},
    {"DELETE", "tagging"},
    {"DELETE", "website"},
    {"POST", "delete"},
    {"POST", "metadataConfiguration"},
    {"POST", "metadataTable"}};
const std::set<std::pair<std::string, std::string>> kObjectOps = {{"GET", "acl"},
                                                                  {"GET", "attributes"},
                                                                  {"GET", "legal-hold"},
                                                                  {"GET", "retention"},
                                                                  {"GET", "tagging"},
                                                                  {"GET", "torrent"},
                                                                  {"GET", "uploadId=abc"},
                                                                  {"PUT", "acl"},
                                                                  {"PUT", "legal-hold"},
                                                                  {"PUT", "retention"},
                                                                  {"PUT", "tagging"},
                                                                  {"PUT", "renameObject"},
                                                                  {"PUT", "encryption"},
                                                                  {"PUT", "uploadId=abc"},
                                                                  {"PUT", "partNumber=1"},
                                                                  {"DELETE", "tagging"},
                                                                  {"DELETE", "uploadId=abc"},
                                                                  {"POST", "uploads"},
                                                                  {"POST", "uploadId=abc"},
                                                                  {"POST", "restore"},
                                                                  {"POST", "select&select-type=2"}};

// What Strata implements, and the status each answers in this test's setup
// (an existing bucket without configurations; an object; no uploads; bodies
// that are not the operation's document).
struct Implemented {
  std::set<int> statuses;
  bool changes_tags = false;
};
const std::map<std::tuple<On, std::string, std::string>, Implemented> kImplemented = {
    {{On::kBucket, "GET", "location"}, {{200}}},
    {{On::kBucket, "GET", "versioning"}, {{200}}},
    // An empty body is not a VersioningConfiguration.
    {{On::kBucket, "PUT", "versioning"}, {{400}}},
    {{On::kBucket, "GET", "versions"}, {{200}}},
    {{On::kBucket, "GET", "uploads"}, {{200}}},
    {{On::kBucket, "GET", "acl"}, {{200}}},
    {{On::kBucket, "GET", "list-type=2"}, {{200}}},
    // CreateSession: S3 Express, refused on a general purpose bucket (400).
    {{On::kBucket, "GET", "session"}, {{400}}},
    // Configurations a bucket here never has: S3's "not configured" 404.
    {{On::kBucket, "GET", "policy"}, {{404}}},
    {{On::kBucket, "GET", "cors"}, {{404}}},
    {{On::kBucket, "GET", "lifecycle"}, {{404}}},
    {{On::kBucket, "GET", "tagging"}, {{404}}},
    {{On::kBucket, "GET", "encryption"}, {{404}}},
    {{On::kBucket, "GET", "object-lock"}, {{404}}},
    // Object Lock (object_lock_handlers.cc): not a configuration document, or
    // no Content-MD5: 400.
    {{On::kBucket, "PUT", "object-lock"}, {{400}}},
    {{On::kBucket, "PUT", "tagging"}, {{400}}},  // MalformedXML
    // Access control (access_handlers.cc): no ACL in headers or body is
    // MissingSecurityHeader, a body that is no ACL MalformedACLError; no
    // policy status or public access block yet: 404; a body that is no policy
    // MalformedPolicy, none a PublicAccessBlockConfiguration MalformedXML.
    {{On::kBucket, "PUT", "acl"}, {{400}}},
    {{On::kBucket, "GET", "policyStatus"}, {{404}}},
    {{On::kBucket, "GET", "publicAccessBlock"}, {{404}}},
    {{On::kBucket, "PUT", "policy"}, {{400}}},
    {{On::kBucket, "PUT", "publicAccessBlock"}, {{400}}},
    {{On::kBucket, "PUT", "encryption"}, {{400}}},
    {{On::kBucket, "PUT", "cors"}, {{400}}},       // MalformedXML
    {{On::kBucket, "PUT", "lifecycle"}, {{400}}},  // no Content-MD5 / not a configuration
    {{On::kBucket, "DELETE", "publicAccessBlock"}, {{204}}},
    // Deleting a configuration that does not exist succeeds.
    {{On::kBucket, "DELETE", "policy"}, {{204}}},
    {{On::kBucket, "DELETE", "cors"}, {{204}}},
    {{On::kBucket, "DELETE", "lifecycle"}, {{204}}},
    {{On::kBucket, "DELETE", "tagging"}, {{204}}},
    {{On::kBucket, "DELETE", "encryption"}, {{204}}},
    {{On::kBucket, "POST", "delete"}, {{400}}},  // the body is no Delete document
    {{On::kObject, "GET", "acl"}, {{200}}},
    {{On::kObject, "GET", "tagging"}, {{200}}},
    // GetObjectAttributes without x-amz-object-attributes: InvalidRequest.
    {{On::kObject, "GET", "attributes"}, {{400}}},
    // Retention and legal hold on a bucket without Object Lock: InvalidRequest.
    {{On::kObject, "GET", "retention"}, {{400}}},
    {{On::kObject, "PUT", "retention"}, {{400}}},
    {{On::kObject, "GET", "legal-hold"}, {{400}}},
    {{On::kObject, "PUT", "legal-hold"}, {{400}}},
    {{On::kObject, "GET", "uploadId=abc"}, {{400, 404}}},
    {{On::kObject, "PUT", "acl"}, {{400}}},
    {{On::kObject, "PUT", "tagging"}, {{400}}},            // MalformedXML
    {{On::kObject, "PUT", "renameObject"}, {{400}}},       // no x-amz-rename-source
    {{On::kObject, "PUT", "uploadId=abc"}, {{400}}},       // no partNumber
    {{On::kObject, "PUT", "partNumber=1"}, {{400, 404}}},  // no uploadId
    // partNumber on GET is a parameter of GetObject: the part (here the whole object).
    {{On::kObject, "GET", "partNumber=1"}, {{206}}},
    {{On::kObject, "DELETE", "tagging"}, {{204}, true}},
    {{On::kObject, "DELETE", "uploadId=abc"}, {{400, 404}}},
    {{On::kObject, "POST", "uploads"}, {{200}}},
    {{On::kObject, "POST", "uploadId=abc"}, {{400, 404}}},
};

class RouterWalkTest : public FrontendTest {
 protected:
  void SetUp() override {
    FrontendTest::SetUp();
    CreateBucket("bkt");
    CreateBucket("walk-empty");
  }

  // The object every object-level request is tried on, written afresh.
  void PutTheObject() {
    auto r = Put("/bkt/obj", body_,
                 {{"Content-Type", "text/x-walk"},
                  {"x-amz-meta-color", "blue"},
                  {"x-amz-tagging", "team=storage"}});
    ASSERT_EQ(r.status, 200) << r.body;
    etag_ = Header(r, "ETag");
  }

  void ExpectObjectUnchanged(const std::string& what, bool tags_may_change) {
    auto get = Get("/bkt/obj");
    ASSERT_EQ(get.status, 200) << what << ": the object is gone";
    EXPECT_EQ(get.body, body_) << what << ": the object's bytes changed";
    EXPECT_EQ(Header(get, "ETag"), etag_) << what;
    EXPECT_EQ(Header(get, "Content-Type"), "text/x-walk") << what;
    EXPECT_EQ(Header(get, "x-amz-meta-color"), "blue") << what;
    if (!tags_may_change) EXPECT_EQ(Header(get, "x-amz-tagging-count"), "1") << what;
    auto list = Get("/bkt?list-type=2");
    EXPECT_EQ(All(list.body, "Key"), std::vector<std::string>{"obj"}) << what;
  }

  // The answer must be the implemented operation's, 501, or (for pairs S3
  // does not define) 405 or 501.
  static std::string Short(const std::string& body) { return body.substr(0, 300); }

  void ExpectAnswer(On on, const std::string& method, const std::string& sub,
                    const http::RecordedResponse& r, const std::string& what) {
    const std::string m = method == "HEAD" ? "GET" : method;
    auto it = kImplemented.find({on, m, sub});
    const auto& defined = on == On::kBucket ? kBucketOps : kObjectOps;
    if (it != kImplemented.end()) {
      EXPECT_TRUE(it->second.statuses.count(r.status))
          << what << " answered " << r.status << " " << Short(r.body);
    } else if (defined.count({m, sub})) {
      EXPECT_EQ(r.status, 501) << what << " answered " << Short(r.body);
      if (method != "HEAD") EXPECT_EQ(First(r.body, "Code"), "NotImplemented") << what;
    } else {
      EXPECT_TRUE(r.status == 405 || r.status == 501)
          << what << " answered " << r.status << " " << Short(r.body);
    }
    if (method == "HEAD") EXPECT_TRUE(r.body.empty()) << what;
  }

  const std::string body_ = std::string(1 << 20, 'o') + "the original object";
  std::string etag_;
};

const char* const kMethods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};

TEST_F(RouterWalkTest, EveryObjectSubResourceUnderEveryMethod) {
  for (const std::string& sub : kObjectSubs) {
    for (const char* method : kMethods) {
      PutTheObject();
      const std::string what = std::string(method) + " /bkt/obj?" + sub;
      auto r = Send({method,
                     "/bkt/obj?" + sub,
                     {},
                     std::string(method) == "GET" || std::string(method) == "HEAD"
                         ? ""
                         : "<NotTheDocument>replacement bytes</NotTheDocument>"});
      ExpectAnswer(On::kObject, method, sub, r, what);
      auto it = kImplemented.find({On::kObject, method, sub});
      ExpectObjectUnchanged(what, it != kImplemented.end() && it->second.changes_tags);
      // No upload was left behind except by CreateMultipartUpload itself.
      if (!(std::string(method) == "POST" && sub == "uploads")) {
        auto uploads = Get("/bkt?uploads");
        EXPECT_TRUE(All(uploads.body, "UploadId").empty()) << what << uploads.body;
      }
      for (const std::string& id : All(Get("/bkt?uploads").body, "UploadId"))
        ASSERT_EQ(Send({"DELETE", "/bkt/obj?uploadId=" + id}).status, 204);
    }
  }
}

TEST_F(RouterWalkTest, EveryBucketSubResourceUnderEveryMethod) {
  for (const std::string& sub : kBucketSubs) {
    for (const char* method : kMethods) {
      const std::string what = std::string(method) + " /walk-empty?" + sub;
      auto r = Send({method,
                     "/walk-empty?" + sub,
                     {},
                     std::string(method) == "GET" || std::string(method) == "HEAD"
                         ? ""
                         : "<NotTheDocument/>"});
      ExpectAnswer(On::kBucket, method, sub, r, what);
      EXPECT_EQ(Send({"HEAD", "/walk-empty"}).status, 200) << what << " deleted the bucket";

      // On a bucket that does not exist: never created.
      const std::string what_new = std::string(method) + " /walk-new?" + sub;
      auto n = Send({method,
                     "/walk-new?" + sub,
                     {},
                     std::string(method) == "GET" || std::string(method) == "HEAD"
                         ? ""
                         : "<NotTheDocument/>"});
      EXPECT_TRUE(n.status == 404 || n.status == 405 || n.status == 501) << what_new << n.body;
      EXPECT_EQ(Send({"HEAD", "/walk-new"}).status, 404) << what_new << " created the bucket";
    }
  }
  // The object in the other bucket is untouched by all of it.
  PutTheObject();
  ExpectObjectUnchanged("bucket walk", false);
}

// Parameters that are no sub-resource and no parameter of the operation
// never reach it: an unknown name is NotImplemented, nothing changes.
TEST_F(RouterWalkTest, UnknownParametersAreRefusedAndChangeNothing) {
  PutTheObject();
  for (const char* method : kMethods) {
    const std::string what = std::string(method) + " ?frobnicate";
    // POST on an object names no operation without a sub-resource: 405 before
    // the parameters; on a bucket it is PostObject, which takes no parameters.
    const bool post = std::string(method) == "POST";
    const int want = 501;
    auto r = Send({method, "/bkt/obj?frobnicate=1", {}, std::string(method) == "PUT" ? "x" : ""});
    EXPECT_EQ(r.status, post ? 405 : want) << what << r.body.substr(0, 300);
    ExpectObjectUnchanged(what, false);
    auto b = Send({method, "/walk-empty?frobnicate", {}, ""});
    EXPECT_EQ(b.status, want) << what << b.body;
    EXPECT_EQ(Send({"HEAD", "/walk-empty"}).status, 200) << what;
    auto n = Send({method, "/walk-new?frobnicate", {}, ""});
    EXPECT_EQ(n.status, want) << what << n.body;
    EXPECT_EQ(Send({"HEAD", "/walk-new"}).status, 404) << what;
  }
}

TEST_F(RouterWalkTest, ParametersOfTheOperationKeepWorking) {
  PutTheObject();
  auto typed = Get("/bkt/obj?response-content-type=text%2Fplain&x-id=GetObject");
  EXPECT_EQ(typed.status, 200) << typed.body;
  EXPECT_EQ(Header(typed, "Content-Type"), "text/plain");
  EXPECT_EQ(Get("/bkt/obj?versionId=null").status, 200);
  EXPECT_EQ(Send({"HEAD", "/bkt/obj?partNumber=1"}).status, 206);
  auto listed = Get("/bkt?prefix=o&max-keys=5&delimiter=%2F&encoding-type=url");
  EXPECT_EQ(All(listed.body, "Key"), std::vector<std::string>{"obj"}) << listed.body;
  // A version id Strata never issued is not silently served as the current object
  // (S3: 400 InvalidArgument "Invalid version id specified").
  auto version = Get("/bkt/obj?versionId=3HL4kqtJlcpXroDTDmJ");
  EXPECT_EQ(version.status, 400) << version.body;
  EXPECT_EQ(First(version.body, "Code"), "InvalidArgument");
  auto del = Send({"DELETE", "/bkt/obj?versionId=3HL4kqtJlcpXroDTDmJ"});
  EXPECT_EQ(del.status, 400) << del.body;
  ExpectObjectUnchanged("DELETE ?versionId", false);
  // A copy source naming such a version is refused, not copied from the current object.
  auto copy =
      Put("/bkt/copy", "", {{"x-amz-copy-source", "/bkt/obj?versionId=3HL4kqtJlcpXroDTDmJ"}});
  EXPECT_EQ(copy.status, 400) << copy.body;
  EXPECT_EQ(Get("/bkt/copy").status, 404);
  auto copy_null = Put("/bkt/copy", "", {{"x-amz-copy-source", "/bkt/obj?versionId=null"}});
  EXPECT_EQ(copy_null.status, 200) << copy_null.body;
}

// The defects of issue 14, one by one.
TEST_F(RouterWalkTest, RetentionAndLegalHoldNeverReplaceTheObject) {
  PutTheObject();
  const std::string retention =
      "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate>"
      "</Retention>";
  // The bucket has no Object Lock: S3 answers InvalidRequest ("Bucket is
  // missing Object Lock Configuration") and changes nothing.
  auto r = Put("/bkt/obj?retention", retention, {{"Content-MD5", Base64Encode(Md5(retention))}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(First(r.body, "Code"), "InvalidRequest") << r.body;
  const std::string hold = "<LegalHold><Status>ON</Status></LegalHold>";
  auto h = Put("/bkt/obj?legal-hold", hold, {{"Content-MD5", Base64Encode(Md5(hold))}});
  EXPECT_EQ(h.status, 400) << h.body;
  EXPECT_EQ(First(h.body, "Code"), "InvalidRequest") << h.body;
  ExpectObjectUnchanged("PUT ?retention / ?legal-hold", false);
  auto head = Send({"HEAD", "/bkt/obj"});
  EXPECT_EQ(Header(head, "x-amz-object-lock-mode"), "") << "a refused retention was kept";
  EXPECT_EQ(Header(head, "x-amz-object-lock-legal-hold"), "") << "a refused hold was kept";
  for (const char* sub : {"retention", "legal-hold"}) {
    auto g = Get(std::string("/bkt/obj?") + sub);
    EXPECT_EQ(g.status, 400) << sub;
    EXPECT_EQ(g.body.find("the original object"), std::string::npos) << sub << ": body returned";
  }
  // GetObjectAttributes answers the attributes, never the object's bytes.
  auto a = Get("/bkt/obj?attributes", {{"x-amz-object-attributes", "ObjectSize,ETag"}});
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(First(a.body, "ObjectSize"), std::to_string(body_.size())) << a.body;
  EXPECT_EQ(a.body.find("the original object"), std::string::npos) << "body returned";
  auto v = Get("/bkt?versions");
  EXPECT_EQ(v.status, 200) << v.body;
  EXPECT_NE(v.body.find("<ListVersionsResult"), std::string::npos) << v.body;
  EXPECT_EQ(v.body.find("ListBucketResult"), std::string::npos) << v.body;
}

TEST_F(RouterWalkTest, BucketConfigurationsNeverCreateOrDeleteBuckets) {
  for (const char* sub : {"encryption", "object-lock", "notification", "website",
                          "publicAccessBlock", "ownershipControls"}) {
    // PublicAccessBlock (access_handlers.cc) and encryption (sse.cc) are
    // implemented: NoSuchBucket on a missing bucket, MalformedXML for a body
    // that is not their document.
    const bool implemented = std::string_view(sub) == "publicAccessBlock" ||
                             std::string_view(sub) == "encryption" ||
                             std::string_view(sub) == "object-lock";
    auto r = Put(std::string("/fresh-bucket?") + sub, "<Configuration/>");
    EXPECT_EQ(r.status, implemented ? 404 : 501) << sub << r.body;
    EXPECT_EQ(Send({"HEAD", "/fresh-bucket"}).status, 404) << sub << " created the bucket";
    auto e = Put(std::string("/walk-empty?") + sub, "<Configuration/>");
    EXPECT_EQ(e.status, implemented ? 400 : 501) << sub << e.body;
    EXPECT_EQ(First(e.body, "Code"), implemented ? "MalformedXML" : "NotImplemented") << sub;
  }
  for (const char* sub : {"publicAccessBlock", "ownershipControls", "website", "replication"}) {
    auto r = Send({"DELETE", std::string("/walk-empty?") + sub});
    EXPECT_EQ(r.status, std::string_view(sub) == "publicAccessBlock" ? 204 : 501) << sub << r.body;
    EXPECT_EQ(Send({"HEAD", "/walk-empty"}).status, 200) << sub << " deleted the bucket";
  }
}

TEST_F(RouterWalkTest, HeadWithASubResourceNeverWrites) {
  PutTheObject();
  auto h = Send({"HEAD", "/bkt/obj?tagging"});
  EXPECT_EQ(h.status, 200);
  EXPECT_TRUE(h.body.empty());
  auto tags = Get("/bkt/obj?tagging");
  EXPECT_EQ(All(tags.body, "Key"), std::vector<std::string>{"team"}) << tags.body;
  // HEAD ?retention runs GetObjectRetention: no Object Lock on this bucket.
  EXPECT_EQ(Send({"HEAD", "/bkt/obj?retention"}).status, 400);
  ExpectObjectUnchanged("HEAD ?tagging", false);
}

}  // namespace
}  // namespace strata::s3
