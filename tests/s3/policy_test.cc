// The policy language (parse + evaluate, no HTTP) and the ACL model, checked
// against AWS's IAM JSON policy reference: Effect, Principal, Action and
// Resource with wildcards, NotAction/NotResource, the condition operators
// and how a missing key behaves, and the meaning of "public".
#include "s3/policy.h"

#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "s3/acl.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

class MapConditions : public ConditionValues {
 public:
  std::map<std::string, std::string> m;
  std::optional<std::string> Get(std::string_view k) const override {
    auto it = m.find(std::string(k));
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
};

struct Req {
  std::string action = "s3:GetObject";
  std::string resource = "arn:aws:s3:::bkt/key";
  std::string user_id;  // "" anonymous
  std::string user_name;
  MapConditions cond;
  PolicyRequest Get() const {
    PolicyRequest r;
    r.action = action;
    r.resource = resource;
    r.anonymous = user_id.empty();
    r.user_id = user_id;
    r.user_name = user_name;
    r.conditions = &cond;
    return r;
  }
};

std::shared_ptr<const Policy> Bucket(const std::string& json, const std::string& bucket = "bkt") {
  auto p = Policy::Parse(json, PolicyKind::kBucket, bucket);
  EXPECT_TRUE(p.ok()) << json << ": " << (p.ok() ? "" : p.error().ToString());
  return p.ok() ? *p : nullptr;
}

std::shared_ptr<const Policy> Identity(const std::string& json) {
  auto p = Policy::Parse(json, PolicyKind::kIdentity);
  EXPECT_TRUE(p.ok()) << json << ": " << (p.ok() ? "" : p.error().ToString());
  return p.ok() ? *p : nullptr;
}

void ExpectMalformed(const std::string& json, PolicyKind kind = PolicyKind::kBucket,
                     const std::string& bucket = "bkt") {
  auto p = Policy::Parse(json, kind, bucket);
  ASSERT_FALSE(p.ok()) << "accepted: " << json;
  EXPECT_NE(p.error().message().find("MalformedPolicy"), std::string::npos) << p.error().ToString();
}

TEST(PolicyParse, AcceptsTheDocumentsOfTheS3Examples) {
  // The S3 user guide's "Granting read-only permission to a public anonymous user".
  Bucket(R"({"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow",
      "Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],
      "Resource":["arn:aws:s3:::bkt/*"]}]})");
  // A single statement object, Principal {"AWS": [...]}, CanonicalUser.
  Bucket(
      R"({"Statement":{"Effect":"Deny","Principal":{"AWS":["arn:aws:iam::111122223333:user/bob"]},
      "NotAction":"s3:Get*","NotResource":"arn:aws:s3:::bkt/public/*"}})");
  Bucket(R"({"Version":"2008-10-17","Id":"x","Statement":[{"Effect":"Allow",
      "Principal":{"CanonicalUser":"AKID"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]})");
  Identity(R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket",
      "Resource":"arn:aws:s3:::bkt","Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*"]}}}]})");
}

TEST(PolicyParse, RefusesMalformedDocuments) {
  ExpectMalformed("not json");
  ExpectMalformed("[]");
  ExpectMalformed(R"({"Version":"2012-10-17"})");                 // no Statement
  ExpectMalformed(R"({"Version":"2020-01-01","Statement":[]})");  // bad version
  ExpectMalformed(R"({"Statement":[]})");                         // empty list
  ExpectMalformed(
      R"({"Statement":[{"Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Maybe","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]})");  // no
                                                                                               // Principal
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Resource":"arn:aws:s3:::bkt"}]})");  // no
                                                                                               // Action
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*"}]})");  // no Resource
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","NotAction":"s3:Get*","Resource":"arn:aws:s3:::bkt"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"iam:CreateUser","Resource":"arn:aws:s3:::bkt"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::other/*"}]})");  // not this bucket
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"bkt/*"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt","Condition":{"StringSortOf":{"s3:prefix":"a"}}}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt","Condition":{"StringEquals":{"s3:no-such-key":"a"}}}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt","Condition":{"IpAddress":{"aws:SourceIp":"300.1.1.1/8"}}}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt","Condition":{"Bool":{"aws:SecureTransport":"yes"}}}]})");
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt","Extra":1}]})");
  // A user policy names no Principal.
  ExpectMalformed(
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}]})",
      PolicyKind::kIdentity);
}

TEST(PolicyEval, ActionWildcardsAreCaseInsensitiveResourcesAreNot) {
  auto p = Identity(
      R"({"Statement":[{"Effect":"Allow","Action":"s3:get*","Resource":"arn:aws:s3:::bkt/photos/*.jpg"}]})");
  Req r;
  r.user_id = "AK";
  r.resource = "arn:aws:s3:::bkt/photos/2024/cat.jpg";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.action = "s3:GETOBJECTACL";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.action = "s3:PutObject";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.action = "s3:GetObject";
  r.resource = "arn:aws:s3:::bkt/Photos/cat.jpg";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.resource = "arn:aws:s3:::bkt/photos/cat.png";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  auto q = Identity(
      R"({"Statement":[{"Effect":"Allow","Action":"s3:?etObject","Resource":"arn:aws:s3:::bkt/a?c"}]})");
  r.resource = "arn:aws:s3:::bkt/abc";
  EXPECT_EQ(q->Evaluate(r.Get()), Effect::kAllow);
  r.resource = "arn:aws:s3:::bkt/abbc";
  EXPECT_EQ(q->Evaluate(r.Get()), Effect::kNone);
}

TEST(PolicyEval, ExplicitDenyWinsOverAllowInOnePolicy) {
  auto p = Bucket(R"({"Statement":[
      {"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"},
      {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/keep/*"}]})");
  Req r;
  r.action = "s3:DeleteObject";
  r.resource = "arn:aws:s3:::bkt/keep/a";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.resource = "arn:aws:s3:::bkt/other";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
}

TEST(PolicyEval, NotActionAndNotResourceMatchEverythingElse) {
  auto p = Identity(R"({"Statement":[{"Effect":"Deny","NotAction":["s3:GetObject","s3:ListBucket"],
      "NotResource":"arn:aws:s3:::bkt/scratch/*"}]})");
  Req r;
  r.user_id = "AK";
  r.action = "s3:PutObject";
  r.resource = "arn:aws:s3:::bkt/data";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.resource = "arn:aws:s3:::bkt/scratch/tmp";  // excluded by NotResource
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.resource = "arn:aws:s3:::bkt/data";
  r.action = "s3:GetObject";  // excluded by NotAction
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
}

TEST(PolicyEval, PrincipalsNameUsersByIdOrArnAndStarIncludesAnonymous) {
  auto p = Bucket(R"({"Statement":[
      {"Effect":"Allow","Principal":{"AWS":["AKALICE","arn:aws:iam::123456789012:user/bob"]},
       "Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]})");
  Req r;
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);  // anonymous
  r.user_id = "AKALICE";
  r.user_name = "alice";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.user_id = "AKBOB";
  r.user_name = "bob";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.user_id = "AKCAROL";
  r.user_name = "carol";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  auto star = Bucket(
      R"({"Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]})");
  r.user_id.clear();
  EXPECT_EQ(star->Evaluate(r.Get()), Effect::kAllow);
  // NotPrincipal: everyone but the named one.
  auto notp = Bucket(
      R"({"Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":"AKALICE"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}]})");
  EXPECT_EQ(notp->Evaluate(r.Get()), Effect::kDeny);
  r.user_id = "AKALICE";
  EXPECT_EQ(notp->Evaluate(r.Get()), Effect::kNone);
}

TEST(PolicyEval, SourceIpConditions) {
  auto p = Bucket(R"({"Statement":[
      {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}}},
      {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","192.168.1.7","2001:db8::/32"]}}}]})");
  Req r;
  r.cond.m["aws:sourceip"] = "10.1.2.3";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["aws:sourceip"] = "::ffff:10.9.9.9";  // IPv4 on a dual-stack socket
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["aws:sourceip"] = "2001:db8:1::5";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["aws:sourceip"] = "11.0.0.1";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.cond.m["aws:sourceip"] = "192.168.1.7";  // not allowed, but not denied either
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  // No address known: IpAddress fails, NotIpAddress holds (a negated operator on a missing key).
  r.cond.m.clear();
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  EXPECT_TRUE(IpInCidr("192.168.0.0/16", "192.168.255.1"));
  EXPECT_FALSE(IpInCidr("192.168.0.0/17", "192.168.255.1"));
  EXPECT_TRUE(IpInCidr("0.0.0.0/0", "8.8.8.8"));
  EXPECT_FALSE(IpInCidr("10.0.0.0/8", "not-an-ip"));
}

TEST(PolicyEval, SecureTransportAndBool) {
  // The S3 guide's "deny requests that don't use TLS".
  auto p = Bucket(R"({"Statement":[
      {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"},
      {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"],
       "Condition":{"Bool":{"aws:SecureTransport":"false"}}}]})");
  Req r;
  r.cond.m["aws:securetransport"] = "false";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.cond.m["aws:securetransport"] = "true";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
}

TEST(PolicyEval, PrefixAndAclStringConditions) {
  auto p = Identity(R"({"Statement":[
      {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt",
       "Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*","shared/*"]}}},
      {"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"StringEquals":{"s3:x-amz-acl":"bucket-owner-full-control"}}},
      {"Effect":"Deny","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"StringNotEqualsIgnoreCase":{"s3:x-amz-storage-class":["STANDARD"]}}}]})");
  Req r;
  r.user_id = "AK";
  r.user_name = "alice";
  r.action = "s3:ListBucket";
  r.resource = "arn:aws:s3:::bkt";
  r.cond.m["s3:prefix"] = "shared/docs/";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["s3:prefix"] = "private/";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.cond.m.erase("s3:prefix");  // no prefix: StringLike fails
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  // ${aws:username} in a condition value is not substituted by Strata (only in
  // Resource), so only the literal matches; the shared/ alternative still works.
  r.action = "s3:PutObject";
  r.resource = "arn:aws:s3:::bkt/x";
  r.cond.m["s3:x-amz-acl"] = "bucket-owner-full-control";
  r.cond.m["s3:x-amz-storage-class"] = "standard";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["s3:x-amz-acl"] = "public-read";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.cond.m["s3:x-amz-acl"] = "bucket-owner-full-control";
  r.cond.m["s3:x-amz-storage-class"] = "GLACIER";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.cond.m.erase("s3:x-amz-storage-class");  // missing key: the negated operator holds
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
}

TEST(PolicyEval, IfExistsNullNumericAndResourceVariables) {
  auto p = Identity(R"({"Statement":[
      {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt",
       "Condition":{"NumericLessThanEquals":{"s3:max-keys":"100"}}},
      {"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/home/${aws:username}/*"},
      {"Effect":"Deny","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"StringNotEqualsIfExists":{"s3:x-amz-server-side-encryption":"AES256"}}},
      {"Effect":"Deny","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*",
       "Condition":{"Null":{"s3:x-amz-content-sha256":"true"}}}]})");
  Req r;
  r.user_id = "AK";
  r.user_name = "alice";
  r.action = "s3:ListBucket";
  r.resource = "arn:aws:s3:::bkt";
  r.cond.m["s3:max-keys"] = "50";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.cond.m["s3:max-keys"] = "500";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.action = "s3:GetObject";
  r.resource = "arn:aws:s3:::bkt/home/alice/notes";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kAllow);
  r.resource = "arn:aws:s3:::bkt/home/bob/notes";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.action = "s3:PutObject";
  r.resource = "arn:aws:s3:::bkt/x";
  // Header absent: an ...IfExists condition holds, so the Deny applies.
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.cond.m["s3:x-amz-server-side-encryption"] = "aws:kms";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);
  r.cond.m["s3:x-amz-server-side-encryption"] = "AES256";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
  r.action = "s3:DeleteObject";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kDeny);  // no content sha: Null true
  r.cond.m["s3:x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
  EXPECT_EQ(p->Evaluate(r.Get()), Effect::kNone);
}

TEST(PolicyEval, IsPublicFollowsAwsDefinition) {
  EXPECT_TRUE(
      Bucket(
          R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]})")
          ->IsPublic());
  EXPECT_TRUE(
      Bucket(
          R"({"Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*",
      "Condition":{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}}]})")
          ->IsPublic());
  EXPECT_FALSE(
      Bucket(
          R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*",
      "Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]})")
          ->IsPublic());
  EXPECT_FALSE(
      Bucket(
          R"({"Statement":[{"Effect":"Allow","Principal":{"AWS":"AKALICE"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}]})")
          ->IsPublic());
  EXPECT_FALSE(
      Bucket(
          R"({"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}]})")
          ->IsPublic());
}

TEST(PolicyActions, OperationsMapToTheActionsAwsDocuments) {
  EXPECT_EQ(ActionForOp("ListObjectsV2"), "s3:ListBucket");
  EXPECT_EQ(ActionForOp("ListObjects"), "s3:ListBucket");
  EXPECT_EQ(ActionForOp("HeadBucket"), "s3:ListBucket");
  EXPECT_EQ(ActionForOp("HeadObject"), "s3:GetObject");
  EXPECT_EQ(ActionForOp("ListBuckets"), "s3:ListAllMyBuckets");
  EXPECT_EQ(ActionForOp("UploadPart"), "s3:PutObject");
  EXPECT_EQ(ActionForOp("CompleteMultipartUpload"), "s3:PutObject");
  EXPECT_EQ(ActionForOp("ListParts"), "s3:ListMultipartUploadParts");
  EXPECT_EQ(ActionForOp("ListMultipartUploads"), "s3:ListBucketMultipartUploads");
  EXPECT_EQ(ActionForOp("DeletePublicAccessBlock"), "s3:PutBucketPublicAccessBlock");
  EXPECT_EQ(ActionForOp("GetBucketPolicyStatus"), "s3:GetBucketPolicyStatus");
}

TEST(Acl, CannedAclsGrantHeadersAndXmlRoundTrip) {
  auto exists = [](std::string_view id) { return id == "AKOWNER" || id == "AKNORA"; };
  auto hdr = [](std::map<std::string, std::string> m) {
    return [m](std::string_view n) -> std::optional<std::string_view> {
      auto it = m.find(std::string(n));
      if (it == m.end()) return std::nullopt;
      return std::string_view(it->second);
    };
  };
  ASSERT_OK_AND_ASSIGN(auto pr, AclFromHeaders(hdr({{"x-amz-acl", "public-read"}}), "AKOWNER",
                                               "AKOWNER", true, exists));
  ASSERT_TRUE(pr.has_value());
  EXPECT_TRUE(AclAllows(*pr, kAclRead, "", false));
  EXPECT_FALSE(AclAllows(*pr, kAclWrite, "", false));
  EXPECT_FALSE(AclAllows(*pr, kAclRead, "", true));  // IgnorePublicAcls
  EXPECT_TRUE(AclAllows(*pr, kAclFullControl, "AKOWNER", true));
  EXPECT_TRUE(AclIsPublic(*pr));

  ASSERT_OK_AND_ASSIGN(
      auto g,
      AclFromHeaders(hdr({{"x-amz-grant-read", "id=\"AKNORA\""},
                          {"x-amz-grant-write-acp",
                           "uri=\"http://acs.amazonaws.com/groups/global/AuthenticatedUsers\""}}),
                     "AKOWNER", "AKOWNER", true, exists));
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(AclAllows(*g, kAclRead, "AKNORA", false));
  EXPECT_FALSE(AclAllows(*g, kAclWrite, "AKNORA", false));
  EXPECT_TRUE(AclAllows(*g, kAclWriteAcp, "AKANYONE", false));
  EXPECT_FALSE(AclAllows(*g, kAclWriteAcp, "", false));  // anonymous is not authenticated
  auto back = DecodeAcl(EncodeAcl(*g));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(EncodeAcl(*back), EncodeAcl(*g));

  // Unknown ids, e-mail grants, canned + grants together: refused.
  EXPECT_FALSE(AclFromHeaders(hdr({{"x-amz-grant-read", "id=\"AKNOBODY\""}}), "AKOWNER", "AKOWNER",
                              true, exists)
                   .ok());
  EXPECT_FALSE(AclFromHeaders(hdr({{"x-amz-grant-read", "emailAddress=\"a@b.c\""}}), "AKOWNER",
                              "AKOWNER", true, exists)
                   .ok());
  EXPECT_FALSE(
      AclFromHeaders(hdr({{"x-amz-acl", "private"}, {"x-amz-grant-read", "id=\"AKNORA\""}}),
                     "AKOWNER", "AKOWNER", true, exists)
          .ok());
  EXPECT_FALSE(
      AclFromHeaders(hdr({{"x-amz-acl", "everyone-writes"}}), "AKOWNER", "AKOWNER", true, exists)
          .ok());

  const std::string xml = AclXml(*g, [](std::string_view id) { return std::string(id); });
  ASSERT_OK_AND_ASSIGN(Acl parsed, ParseAclXml(xml, "AKOWNER", exists));
  EXPECT_EQ(EncodeAcl(parsed), EncodeAcl(*g));
  EXPECT_FALSE(ParseAclXml(xml, "AKNORA", exists).ok());  // owner mismatch
  EXPECT_FALSE(ParseAclXml("<AccessControlPolicy><", "AKOWNER", exists).ok());
}

}  // namespace
}  // namespace strata::s3
