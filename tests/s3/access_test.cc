// Authorization through the S3 frontend (in memory, real HTTP parsing, SigV4
// signed by core's signer): the users x actions x resources matrix with
// allow, deny and no statement, each request really done or refused (the
// store is checked afterwards); bucket policy, PublicAccessBlock and ACL
// operations; users added, changed and removed while the frontend serves.
// Expected outcomes follow AWS's policy evaluation logic (explicit deny, then
// allow, else implicit deny; a bucket owner needs no Allow) and the S3 API
// Reference's status codes.
#include <sys/stat.h>

#include <map>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/clock.h>
#include <strata/core/http_server.h>
#include <strata/core/sigv4.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>
#include <strata/s3/user_store.h>

#include "s3/frontend_fixture.h"
#include "testutil/testutil.h"

namespace strata::s3 {
namespace {

using s3test::First;

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Who {
  std::string name;  // "" anonymous
  std::string ak;
  std::string sk;
};

const Who kOwner{"olivia", "AKOLIVIA", "olivia-secret-1"};
const Who kAlice{"alice", "AKALICE", "alice-secret-12"};  // user policy allows shared/
const Who kNora{"nora", "AKNORA", "nora-secret-123"};     // no statement anywhere
const Who kDave{"dave", "AKDAVE", "dave-secret-123"};     // denied by the bucket policy
const Who kAnon{"", "", ""};

class AccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, s3test::OpenTestEngine(dir_.Join("data")));
    User root{"root", "AKROOT", "root-secret-123", true, ""};
    ASSERT_OK_AND_ASSIGN(store_, UserStore::Open({root}, dir_.Join("users")));
    for (const Who* w : {&kOwner, &kAlice, &kNora, &kDave}) {
      User u;
      u.name = w->name;
      u.access_key = w->ak;
      u.secret_key = w->sk;
      ASSERT_OK(store_->Add(u).status());
    }
    FrontendOptions fo;
    fo.user_store = store_.get();
    frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
  }

  http::RecordedResponse Send(const Who& who, const std::string& method, const std::string& target,
                              std::string body = "", Headers h = {}) {
    return s3test::SendSigned(frontend_.get(), method, target, std::move(h), body,
                              {.access_key = who.ak, .secret = who.sk});
  }

  bool Exists(const std::string& bucket, const std::string& key) {
    return engine_->HeadObject(bucket, key).ok();
  }
  std::string Body(const std::string& bucket, const std::string& key) {
    auto r = engine_->OpenObject(bucket, key);
    if (!r.ok()) return "<missing>";
    auto s = (*r)->ReadRange(0, (*r)->meta().size);
    return s.ok() ? *s : "<unreadable>";
  }
  void PutAs(const Who& w, const std::string& target, const std::string& body) {
    auto r = Send(w, "PUT", target, body);
    ASSERT_EQ(r.status, 200) << target << ": " << r.body;
  }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<UserStore> store_;
  std::unique_ptr<Frontend> frontend_;
};

// The bucket policy of the matrix: everyone may read shared/; dave is denied
// everything; the owner is denied deleting under shared/ (an explicit deny
// binds the owner too).
std::string MatrixPolicy(const std::string& id) {
  return R"({"Version":"2012-10-17","Id":")" + id + R"(","Statement":[
    {"Sid":"PublicReadShared","Effect":"Allow","Principal":"*","Action":"s3:GetObject",
     "Resource":"arn:aws:s3:::mtx/shared/*"},
    {"Sid":"NoDave","Effect":"Deny","Principal":{"AWS":"arn:aws:iam::000000000000:user/dave"},
     "Action":"s3:*","Resource":["arn:aws:s3:::mtx","arn:aws:s3:::mtx/*"]},
    {"Sid":"KeepShared","Effect":"Deny","Principal":{"AWS":"AKOLIVIA"},"Action":"s3:DeleteObject",
     "Resource":"arn:aws:s3:::mtx/shared/*"}]})";
}

enum class Action {
  kGetObject,
  kPutObject,
  kDeleteObject,
  kListBucket,
  kGetBucketPolicy,
  kPutBucketPolicy
};
enum class Res { kBucket, kShared, kElsewhere };

const char* Name(Action a) {
  switch (a) {
    case Action::kGetObject:
      return "GetObject";
    case Action::kPutObject:
      return "PutObject";
    case Action::kDeleteObject:
      return "DeleteObject";
    case Action::kListBucket:
      return "ListBucket";
    case Action::kGetBucketPolicy:
      return "GetBucketPolicy";
    case Action::kPutBucketPolicy:
      return "PutBucketPolicy";
  }
  return "?";
}

TEST_F(AccessTest, UsersTimesActionsTimesResources) {
  ASSERT_EQ(Send(kOwner, "PUT", "/mtx").status, 200);
  ASSERT_EQ(Send(kOwner, "PUT", "/mtx?policy", MatrixPolicy("v0")).status, 204);
  // alice: her user policy allows object reads and writes under shared/ and
  // listing; dave's allows everything (the bucket policy's deny must win).
  ASSERT_OK(store_->SetPolicy("alice", R"({"Version":"2012-10-17","Statement":[
      {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],
       "Resource":"arn:aws:s3:::mtx/shared/*"},
      {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::mtx"}]})"));
  ASSERT_OK(store_->SetPolicy(
      "dave", R"({"Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]})"));

  const std::vector<const Who*> users = {&kOwner, &kAlice, &kNora, &kDave, &kAnon};
  const std::vector<Action> actions = {Action::kGetObject,       Action::kPutObject,
                                       Action::kDeleteObject,    Action::kListBucket,
                                       Action::kGetBucketPolicy, Action::kPutBucketPolicy};
  // Expected: allowed?  AWS: owner everything but the explicit deny; alice her
  // Allows; nora and anonymous only the public statement; dave nothing.
  auto expect = [](const Who& w, Action a, Res r) {
    const bool object =
        a == Action::kGetObject || a == Action::kPutObject || a == Action::kDeleteObject;
    if (&w == &kDave) return false;
    if (&w == &kOwner) return !(a == Action::kDeleteObject && r == Res::kShared);
    if (object && r == Res::kShared && a == Action::kGetObject) return true;  // public statement
    if (&w == &kAlice) return (object && r == Res::kShared) || a == Action::kListBucket;
    return false;
  };
  int policy_version = 0;
  int cases = 0;
  for (const Who* w : users) {
    for (Action a : actions) {
      const bool object =
          a == Action::kGetObject || a == Action::kPutObject || a == Action::kDeleteObject;
      for (Res r : object ? std::vector<Res>{Res::kShared, Res::kElsewhere}
                          : std::vector<Res>{Res::kBucket}) {
        const std::string key = r == Res::kShared ? "shared/doc" : "private/doc";
        // Known state before each request (written by root, who may do anything).
        const Who root{"root", "AKROOT", "root-secret-123"};
        ASSERT_EQ(Send(root, "PUT", "/mtx/shared/doc", "shared-v0").status, 200);
        ASSERT_EQ(Send(root, "PUT", "/mtx/private/doc", "private-v0").status, 200);
        const bool allowed = expect(*w, a, r);
        std::string what = std::string(w->name.empty() ? "anonymous" : w->name) + " " + Name(a) +
                           " " + (r == Res::kBucket ? "mtx" : "mtx/" + key);
        ++cases;
        http::RecordedResponse resp;
        const std::string before = Body("mtx", key);
        switch (a) {
          case Action::kGetObject:
            resp = Send(*w, "GET", "/mtx/" + key);
            if (allowed) {
              EXPECT_EQ(resp.body, before) << what;
            }
            break;
          case Action::kPutObject:
            resp = Send(*w, "PUT", "/mtx/" + key, "written-by-" + w->name);
            EXPECT_EQ(Body("mtx", key), allowed ? "written-by-" + w->name : before) << what;
            break;
          case Action::kDeleteObject:
            resp = Send(*w, "DELETE", "/mtx/" + key);
            EXPECT_EQ(Exists("mtx", key), !allowed) << what;
            break;
          case Action::kListBucket:
            resp = Send(*w, "GET", "/mtx?list-type=2");
            if (allowed) {
              EXPECT_EQ(First(resp.body, "KeyCount"), "2") << what << resp.body;
            }
            break;
          case Action::kGetBucketPolicy:
            resp = Send(*w, "GET", "/mtx?policy");
            if (allowed) {
              EXPECT_NE(resp.body.find("PublicReadShared"), std::string::npos) << what;
            }
            break;
          case Action::kPutBucketPolicy: {
            const std::string id = "v" + std::to_string(++policy_version);
            resp = Send(*w, "PUT", "/mtx?policy", MatrixPolicy(id));
            auto b = engine_->GetBucket("mtx");
            ASSERT_TRUE(b.ok());
            ASSERT_NE(b->Config("policy"), nullptr);
            EXPECT_EQ(b->Config("policy")->find("\"Id\":\"" + id + "\"") != std::string::npos,
                      allowed)
                << what;
            break;
          }
        }
        if (allowed) {
          EXPECT_LT(resp.status, 300) << what << ": " << resp.status << " " << resp.body;
        } else {
          EXPECT_EQ(resp.status, 403) << what << ": " << resp.body;
          EXPECT_EQ(First(resp.body, "Code"), "AccessDenied") << what;
        }
      }
    }
  }
  EXPECT_EQ(cases, 5 * (3 * 2 + 3));
}

TEST_F(AccessTest, AnonymousRequestToAMissingBucketIsNoSuchBucket) {
  // S3 answers 404 NoSuchBucket whoever asks, before any access check.
  for (const auto& [m, t] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/gone/key"}, {"GET", "/gone"}, {"PUT", "/gone/key"}, {"DELETE", "/gone/key"}}) {
    auto r = Send(kAnon, m, t, m == "PUT" ? "x" : "");
    EXPECT_EQ(r.status, 404) << m << " " << t << ": " << r.body;
    EXPECT_EQ(First(r.body, "Code"), "NoSuchBucket") << m << " " << t;
  }
  ASSERT_EQ(Send(kOwner, "PUT", "/gone").status, 200);
  ASSERT_EQ(Send(kOwner, "DELETE", "/gone").status, 204);
  auto r = Send(kAnon, "GET", "/gone/key");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(First(r.body, "Code"), "NoSuchBucket");
  // An existing private bucket still refuses.
  ASSERT_EQ(Send(kOwner, "PUT", "/here").status, 200);
  EXPECT_EQ(Send(kAnon, "GET", "/here/key").status, 403);
}

TEST_F(AccessTest, BucketPolicyOperations) {
  ASSERT_EQ(Send(kOwner, "PUT", "/pbk").status, 200);
  auto none = Send(kOwner, "GET", "/pbk?policy");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(First(none.body, "Code"), "NoSuchBucketPolicy");
  EXPECT_EQ(First(Send(kOwner, "GET", "/pbk?policyStatus").body, "Code"), "NoSuchBucketPolicy");
  // Malformed: 400 MalformedPolicy, nothing stored.
  for (
      const std::string bad :
      {"{", R"({"Statement":[{"Effect":"Allow"}]})",
       R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::elsewhere/*"}]})"}) {
    auto r = Send(kOwner, "PUT", "/pbk?policy", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(First(r.body, "Code"), "MalformedPolicy") << r.body;
  }
  EXPECT_EQ(engine_->GetBucket("pbk")->Config("policy"), nullptr);
  const std::string pub =
      R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pbk/*"}]})";
  ASSERT_EQ(Send(kOwner, "PUT", "/pbk?policy", pub).status, 204);
  auto got = Send(kOwner, "GET", "/pbk?policy");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, pub);
  EXPECT_EQ(First(Send(kOwner, "GET", "/pbk?policyStatus").body, "IsPublic"), "true");
  PutAs(kOwner, "/pbk/obj", "public bytes");
  EXPECT_EQ(Send(kAnon, "GET", "/pbk/obj").body, "public bytes");
  EXPECT_EQ(Send(kAnon, "PUT", "/pbk/anon", "x").status, 403);
  EXPECT_FALSE(Exists("pbk", "anon"));
  // RestrictPublicBuckets: the public policy no longer serves anonymous callers.
  const std::string pab =
      "<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>";
  ASSERT_EQ(Send(kOwner, "PUT", "/pbk?publicAccessBlock", pab).status, 200);
  EXPECT_EQ(First(Send(kOwner, "GET", "/pbk?publicAccessBlock").body, "RestrictPublicBuckets"),
            "true");
  EXPECT_EQ(First(Send(kOwner, "GET", "/pbk?publicAccessBlock").body, "BlockPublicPolicy"),
            "false");
  EXPECT_EQ(Send(kAnon, "GET", "/pbk/obj").status, 403);
  EXPECT_EQ(Send(kNora, "GET", "/pbk/obj").status, 200);  // same account: still allowed
  // BlockPublicPolicy: a public policy is refused, the old one stays.
  ASSERT_EQ(Send(kOwner, "PUT", "/pbk?publicAccessBlock",
                 "<PublicAccessBlockConfiguration><BlockPublicPolicy>true</BlockPublicPolicy>"
                 "</PublicAccessBlockConfiguration>")
                .status,
            200);
  EXPECT_EQ(Send(kAnon, "GET", "/pbk/obj").status, 200);  // Restrict is off again
  const std::string pub2 =
      R"({"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::pbk/*"}]})";
  auto blocked = Send(kOwner, "PUT", "/pbk?policy", pub2);
  EXPECT_EQ(blocked.status, 403) << blocked.body;
  EXPECT_EQ(*engine_->GetBucket("pbk")->Config("policy"), pub);
  ASSERT_EQ(Send(kOwner, "DELETE", "/pbk?publicAccessBlock").status, 204);
  EXPECT_EQ(First(Send(kOwner, "GET", "/pbk?publicAccessBlock").body, "Code"),
            "NoSuchPublicAccessBlockConfiguration");
  EXPECT_EQ(Send(kOwner, "PUT", "/pbk?publicAccessBlock", "<Nope/>").status, 400);
  ASSERT_EQ(Send(kOwner, "DELETE", "/pbk?policy").status, 204);
  EXPECT_EQ(Send(kOwner, "GET", "/pbk?policy").status, 404);
  EXPECT_EQ(Send(kAnon, "GET", "/pbk/obj").status, 403);
}

TEST_F(AccessTest, AclGrantsAndCannedAcls) {
  ASSERT_EQ(Send(kOwner, "PUT", "/acl").status, 200);
  PutAs(kOwner, "/acl/a", "aaa");
  EXPECT_EQ(Send(kNora, "GET", "/acl?list-type=2").status, 403);
  // A READ grant to nora by her id (the ListBuckets Owner ID): she may list.
  auto put = Send(kOwner, "PUT", "/acl?acl", "", {{"x-amz-grant-read", "id=\"AKNORA\""}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Send(kNora, "GET", "/acl?list-type=2").status, 200);
  EXPECT_EQ(Send(kAlice, "GET", "/acl?list-type=2").status, 403);
  EXPECT_EQ(Send(kNora, "PUT", "/acl/n", "x").status, 403);  // READ is not WRITE
  auto acl = Send(kOwner, "GET", "/acl?acl");
  EXPECT_NE(acl.body.find("<ID>AKNORA</ID><DisplayName>nora</DisplayName>"), std::string::npos)
      << acl.body;
  EXPECT_NE(acl.body.find("<Permission>READ</Permission>"), std::string::npos);
  // Unknown id: 400, nothing changed.
  EXPECT_EQ(Send(kOwner, "PUT", "/acl?acl", "", {{"x-amz-grant-read", "id=\"AKNOBODY\""}}).status,
            400);
  EXPECT_EQ(Send(kNora, "GET", "/acl?list-type=2").status, 200);
  // An AccessControlPolicy body granting WRITE to alice.
  const std::string body =
      "<AccessControlPolicy><Owner><ID>AKOLIVIA</ID></Owner><AccessControlList>"
      "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
      "xsi:type=\"CanonicalUser\">"
      "<ID>AKOLIVIA</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>"
      "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
      "xsi:type=\"CanonicalUser\">"
      "<ID>AKALICE</ID></Grantee><Permission>WRITE</Permission></Grant>"
      "</AccessControlList></AccessControlPolicy>";
  ASSERT_EQ(Send(kOwner, "PUT", "/acl?acl", body).status, 200);
  EXPECT_EQ(Send(kAlice, "PUT", "/acl/by-alice", "alice").status, 200);
  EXPECT_EQ(Body("acl", "by-alice"), "alice");
  EXPECT_EQ(Send(kNora, "GET", "/acl?list-type=2").status, 403);  // replaced
  // Canned public-read: anonymous reads; IgnorePublicAcls takes it away;
  // BlockPublicAcls refuses setting it.
  ASSERT_EQ(Send(kOwner, "PUT", "/acl?acl", "", {{"x-amz-acl", "public-read"}}).status, 200);
  EXPECT_EQ(Send(kAnon, "GET", "/acl/a").body, "aaa");
  ASSERT_EQ(Send(kOwner, "PUT", "/acl?publicAccessBlock",
                 "<PublicAccessBlockConfiguration><IgnorePublicAcls>true</IgnorePublicAcls>"
                 "<BlockPublicAcls>true</BlockPublicAcls></PublicAccessBlockConfiguration>")
                .status,
            200);
  EXPECT_EQ(Send(kAnon, "GET", "/acl/a").status, 403);
  EXPECT_EQ(Send(kOwner, "PUT", "/acl?acl", "", {{"x-amz-acl", "public-read-write"}}).status, 403);
  EXPECT_EQ(Send(kOwner, "PUT", "/acl/pub", "x", {{"x-amz-acl", "public-read"}}).status, 403);
  EXPECT_FALSE(Exists("acl", "pub"));
  ASSERT_EQ(Send(kOwner, "DELETE", "/acl?publicAccessBlock").status, 204);
  ASSERT_EQ(Send(kOwner, "PUT", "/acl?acl", "", {{"x-amz-acl", "private"}}).status, 200);
  EXPECT_EQ(Send(kAnon, "GET", "/acl/a").status, 403);
  // An object ACL: one public object in a private bucket.
  PutAs(kOwner, "/acl/open", "open");
  ASSERT_EQ(Send(kOwner, "PUT", "/acl/open?acl", "", {{"x-amz-acl", "public-read"}}).status, 200);
  EXPECT_EQ(Send(kAnon, "GET", "/acl/open").body, "open");
  EXPECT_EQ(Send(kAnon, "GET", "/acl/a").status, 403);
  auto oacl = Send(kOwner, "GET", "/acl/open?acl");
  EXPECT_NE(oacl.body.find("AllUsers"), std::string::npos) << oacl.body;
  ASSERT_EQ(Send(kOwner, "PUT", "/acl/also", "also", {{"x-amz-acl", "public-read"}}).status, 200);
  EXPECT_EQ(Send(kAnon, "GET", "/acl/also").body, "also");
}

TEST_F(AccessTest, MultiObjectDeleteAndCopyAreAuthorizedPerObject) {
  ASSERT_EQ(Send(kOwner, "PUT", "/mdb").status, 200);
  PutAs(kOwner, "/mdb/shared/1", "1");
  PutAs(kOwner, "/mdb/private/2", "2");
  ASSERT_OK(store_->SetPolicy("alice", R"({"Statement":[
      {"Effect":"Allow","Action":["s3:DeleteObject","s3:GetObject"],"Resource":"arn:aws:s3:::mdb/shared/*"}]})"));
  const std::string del =
      "<Delete><Object><Key>shared/1</Key></Object><Object><Key>private/2</Key></Object></Delete>";
  auto r = Send(kAlice, "POST", "/mdb?delete", del);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<Deleted><Key>shared/1</Key></Deleted>"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("<Key>private/2</Key><Code>AccessDenied</Code>"), std::string::npos)
      << r.body;
  EXPECT_FALSE(Exists("mdb", "shared/1"));
  EXPECT_TRUE(Exists("mdb", "private/2"));
  // Copying needs s3:GetObject on the source: alice owns "amb" but cannot read private/2.
  ASSERT_EQ(Send(kAlice, "PUT", "/amb").status, 200);
  auto copy = Send(kAlice, "PUT", "/amb/stolen", "", {{"x-amz-copy-source", "/mdb/private/2"}});
  EXPECT_EQ(copy.status, 403) << copy.body;
  EXPECT_FALSE(Exists("amb", "stolen"));
  PutAs(kOwner, "/mdb/shared/3", "3");
  auto ok = Send(kAlice, "PUT", "/amb/ok", "", {{"x-amz-copy-source", "/mdb/shared/3"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Body("amb", "ok"), "3");
}

TEST_F(AccessTest, UsersChangeWhileServing) {
  const Who eve{"eve", "AKEVE", "eve-secret-1234"};
  auto r = Send(eve, "GET", "/");
  EXPECT_EQ(First(r.body, "Code"), "InvalidAccessKeyId");
  User u;
  u.name = "eve";
  u.access_key = eve.ak;
  u.secret_key = eve.sk;
  ASSERT_OK(store_->Add(u).status());
  EXPECT_EQ(Send(eve, "GET", "/").status, 200);
  ASSERT_EQ(Send(eve, "PUT", "/eves").status, 200);
  // A user policy that denies: effective on the next request.
  ASSERT_OK(store_->SetPolicy(
      "eve", R"({"Statement":[{"Effect":"Deny","Action":"s3:PutObject","Resource":"*"}]})"));
  EXPECT_EQ(Send(eve, "PUT", "/eves/x", "x").status, 403);
  EXPECT_FALSE(Exists("eves", "x"));
  ASSERT_OK(store_->SetPolicy(
      "eve",
      R"({"Statement":[{"Effect":"Deny","Action":"s3:CreateBucket","Resource":"arn:aws:s3:::no-*"}]})"));
  EXPECT_EQ(Send(eve, "PUT", "/no-eve").status, 403);
  EXPECT_FALSE(engine_->GetBucket("no-eve").ok());
  EXPECT_EQ(Send(eve, "PUT", "/yes-eve").status, 200);
  ASSERT_OK(store_->SetPolicy("eve", std::nullopt));
  EXPECT_EQ(Send(eve, "PUT", "/eves/x", "x").status, 200);
  // A malformed user policy is refused and changes nothing.
  EXPECT_FALSE(store_->SetPolicy("eve", R"({"Statement":[{"Effect":"Allow"}]})").ok());
  ASSERT_OK(store_->Remove("eve"));
  EXPECT_EQ(First(Send(eve, "GET", "/").body, "Code"), "InvalidAccessKeyId");
  EXPECT_FALSE(store_->Remove("root").ok());
  ASSERT_OK(store_->Add(u).status());
  EXPECT_FALSE(store_->Add(u).ok());  // the same name twice
  // Persisted: a store reopened from the same file has the users and policies.
  ASSERT_OK(store_->SetPolicy(
      "alice", R"({"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]})"));
  ASSERT_OK_AND_ASSIGN(auto again, UserStore::Open({}, dir_.Join("users")));
  auto alice = again->Find("alice");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->secret_key, kAlice.sk);
  EXPECT_NE(alice->policy.find("s3:GetObject"), std::string::npos);
  EXPECT_TRUE(again->Find("eve").has_value());    // re-added above
  EXPECT_FALSE(again->Find("root").has_value());  // fixed users are never written
  struct stat st;
  ASSERT_EQ(::stat(dir_.Join("users").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);  // it holds secrets
}

}  // namespace
}  // namespace strata::s3
