// PostObject (browser-based uploads with a POST policy) driven through the real
// HTTP parser without a socket (http::ServeInMemory), over a LocalEngine in a
// temporary directory. Forms are built and signed here as the AWS docs
// describe ("Browser-Based Uploads Using POST (AWS Signature Version 4)",
// "Creating a POST Policy"): the policy is base64 JSON, the signature is the
// hex HMAC-SHA256 of that base64 text with the SigV4 signing key of the access
// key in x-amz-credential. Expected statuses, codes and documents are S3's.
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

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
using s3test::Header;

using Headers = std::vector<std::pair<std::string, std::string>>;
using FieldList = std::vector<std::pair<std::string, std::string>>;

constexpr char kAk[] = "AKIDPOSTTEST";
constexpr char kSecret[] = "post-object-test-secret";
constexpr char kBoundary[] = "----StrataFormBoundary7MA4YWxkTrZu0gW";

// "20240102T030405Z" and "20240102" for now.
std::pair<std::string, std::string> AmzDate() {
  std::string iso = FormatIso8601(NowUnixNanos());  // 2024-01-02T03:04:05.000Z
  std::string d = iso.substr(0, 4) + iso.substr(5, 2) + iso.substr(8, 2);
  std::string t = iso.substr(11, 2) + iso.substr(14, 2) + iso.substr(17, 2);
  return {d + "T" + t + "Z", d};
}

struct FilePart {
  std::string filename = "upload.bin";
  std::string content_type = "application/octet-stream";
  std::string data;
};

std::string FormBody(const FieldList& fields, const std::optional<FilePart>& file,
                     const FieldList& after = {}) {
  std::string b;
  auto field = [&](const std::string& name, const std::string& value) {
    b += fmt::format("--{}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{}\r\n", kBoundary,
                     name, value);
  };
  for (const auto& [n, v] : fields) field(n, v);
  if (file) {
    b += fmt::format(
        "--{}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\n"
        "Content-Type: {}\r\n\r\n",
        kBoundary, file->filename, file->content_type);
    b += file->data;
    b += "\r\n";
  }
  for (const auto& [n, v] : after) field(n, v);
  b += fmt::format("--{}--\r\n", kBoundary);
  return b;
}

class PostObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, s3test::OpenTestEngine(dir_.Join("data")));
    FrontendOptions fo;
    fo.users.push_back(User{"alice", kAk, kSecret, false});
    fo.users.push_back(User{"bob", "AKIDBOB", "bob-secret", false});
    frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
    // The bucket, created with a signed PUT.
    auto r = s3test::SendSigned(frontend_.get(), "PUT", "/photos", {}, "",
                                {.access_key = kAk, .secret = kSecret});
    ASSERT_EQ(r.status, 200) << r.body;
  }

  http::RecordedResponse Raw(const std::string& wire) {
    Frontend* f = frontend_.get();
    return http::ServeInMemory(http::FrontendHandler(f), wire,
                               http::WithFrontendErrors(http::ServerOptions{}, f));
  }

  // A signed GET of an object (to check what was stored).
  http::RecordedResponse GetObject(const std::string& path) {
    return s3test::SendSigned(frontend_.get(), "GET", path, {}, "",
                              {.access_key = kAk, .secret = kSecret});
  }

  http::RecordedResponse Post(const std::string& body, const std::string& target = "/photos",
                              std::string content_type = "") {
    if (content_type.empty())
      content_type = fmt::format("multipart/form-data; boundary={}", kBoundary);
    Headers h = {{"Host", "127.0.0.1:9000"}, {"Content-Type", content_type}};
    return Raw(http::FormatRequest("POST", target, h, body));
  }

  // The policy document with the given conditions (JSON array elements), and
  // the credential fields; expires_in_s may be negative (already expired).
  FieldList SignedFields(const std::string& key, const std::string& conditions,
                         const FieldList& extra = {}, int64_t expires_in_s = 600,
                         const std::string& access_key = kAk, const std::string& secret = kSecret) {
    auto [amz_date, date] = AmzDate();
    const std::string credential = fmt::format("{}/{}/us-east-1/s3/aws4_request", access_key, date);
    const std::string expiration = FormatIso8601(NowUnixNanos() + expires_in_s * 1'000'000'000LL);
    std::string conds = fmt::format(
        "[{{\"bucket\": \"photos\"}}, {{\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}}, "
        "{{\"x-amz-credential\": \"{}\"}}, {{\"x-amz-date\": \"{}\"}}{}{}]",
        credential, amz_date, conditions.empty() ? "" : ", ", conditions);
    const std::string policy_json =
        fmt::format("{{\"expiration\": \"{}\", \"conditions\": {}}}", expiration, conds);
    const std::string policy = Base64Encode(policy_json);
    const std::string sig =
        sigv4::SignHex(sigv4::DeriveSigningKey(secret, date, "us-east-1", "s3"), policy);
    FieldList f = {{"key", key}};
    for (const auto& e : extra) f.push_back(e);
    f.insert(f.end(), {{"x-amz-algorithm", "AWS4-HMAC-SHA256"},
                       {"x-amz-credential", credential},
                       {"x-amz-date", amz_date},
                       {"policy", policy},
                       {"x-amz-signature", sig}});
    return f;
  }

  static void ExpectError(const http::RecordedResponse& r, int status, const std::string& code,
                          const std::string& message_part = "") {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(First(r.body, "Code"), code) << r.body;
    EXPECT_FALSE(First(r.body, "RequestId").empty()) << r.body;
    if (!message_part.empty()) {
      EXPECT_NE(First(r.body, "Message").find(message_part), std::string::npos) << r.body;
    }
  }

  void ExpectAbsent(const std::string& path) {
    auto g = GetObject(path);
    EXPECT_EQ(g.status, 404) << path << ": " << g.body;
  }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<Frontend> frontend_;
};

// A bucket's default encryption applies to form uploads as to PutObject: the
// stored object is SSE-S3 and its bytes on disk are not the plaintext.
TEST_F(PostObjectTest, BucketDefaultEncryptionApplies) {
  FrontendOptions fo;
  fo.users.push_back(User{"alice", kAk, kSecret, false});
  ASSERT_OK_AND_ASSIGN(fo.kms, KeyManager::FromMasterKey(std::string(32, '\x17'), KmsOptions{}));
  frontend_ = std::make_unique<Frontend>(engine_.get(), fo);
  ASSERT_OK(engine_->SetBucketConfig("photos", "encryption", std::string("AES256\n\n")));
  const std::string secret = "post-object-plaintext-" + std::string(200, 'q');
  FieldList f = SignedFields("enc.txt", R"({"key": "enc.txt"})");
  auto r = Post(FormBody(f, FilePart{"enc.txt", "text/plain", secret}));
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Header(r, "x-amz-server-side-encryption"), "AES256");
  auto g = GetObject("/photos/enc.txt");
  ASSERT_EQ(g.status, 200) << g.body;
  EXPECT_EQ(g.body, secret);
  EXPECT_EQ(Header(g, "x-amz-server-side-encryption"), "AES256");
  ASSERT_OK_AND_ASSIGN(auto meta, engine_->HeadObject("photos", "enc.txt"));
  EXPECT_FALSE(meta.internal.empty()) << "no encryption parameters stored";
  auto plain = engine_->OpenObject("photos", "enc.txt");
  EXPECT_FALSE(plain.ok()) << "readable without its data key";
}

TEST_F(PostObjectTest, ValidUploadAnswers204AndStoresDataAndMetadata) {
  FieldList f =
      SignedFields("user/eric/cat.jpg",
                   R"(["starts-with", "$key", "user/eric/"], {"Content-Type": "image/jpeg"}, )"
                   R"({"x-amz-meta-color": "black"}, ["starts-with", "$Cache-Control", ""])",
                   {{"Content-Type", "image/jpeg"},
                    {"x-amz-meta-color", "black"},
                    {"Cache-Control", "max-age=60"}});
  auto r = Post(FormBody(f, FilePart{"cat.jpg", "image/jpeg", "hello"}));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Header(r, "ETag"), "\"5d41402abc4b2a76b9719d911017c592\"");  // md5("hello")
  EXPECT_EQ(Header(r, "Location"), "http://127.0.0.1:9000/photos/user/eric/cat.jpg");

  auto g = GetObject("/photos/user/eric/cat.jpg");
  ASSERT_EQ(g.status, 200) << g.body;
  EXPECT_EQ(g.body, "hello");
  EXPECT_EQ(Header(g, "Content-Type"), "image/jpeg");
  EXPECT_EQ(Header(g, "x-amz-meta-color"), "black");
  EXPECT_EQ(Header(g, "Cache-Control"), "max-age=60");
}

TEST_F(PostObjectTest, FieldNamesAreCaseInsensitive) {
  // The JS SDK's createPresignedPost sends X-Amz-Algorithm, Policy, ...
  FieldList f = SignedFields("mixed-case", R"({"key": "mixed-case"})");
  for (auto& [n, v] : f) {
    if (n == "policy") n = "Policy";
    if (n == "x-amz-signature") n = "X-Amz-Signature";
    if (n == "x-amz-credential") n = "X-Amz-Credential";
  }
  auto r = Post(FormBody(f, FilePart{"a", "text/plain", "abc"}));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(GetObject("/photos/mixed-case").body, "abc");
}

TEST_F(PostObjectTest, FilenameVariableIsReplacedBeforeConditionsAreChecked) {
  FieldList f = SignedFields("uploads/${filename}", R"(["starts-with", "$key", "uploads/"])");
  auto r = Post(FormBody(f, FilePart{"holiday.png", "image/png", "PNGDATA"}));
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(GetObject("/photos/uploads/holiday.png").body, "PNGDATA");
  auto r2 = Post(FormBody(f, FilePart{"notes 2026.txt", "text/plain", "n"}));
  ASSERT_EQ(r2.status, 204) << r2.body;
  EXPECT_EQ(GetObject("/photos/uploads/notes%202026.txt").body, "n");
  // The expanded key must still satisfy the policy.
  FieldList g = SignedFields("${filename}", R"(["starts-with", "$key", "uploads/"])");
  ExpectError(Post(FormBody(g, FilePart{"x.txt", "text/plain", "x"})), 403, "AccessDenied",
              "Invalid according to Policy");
  ExpectAbsent("/photos/x.txt");
}

TEST_F(PostObjectTest, SuccessActionStatus201ReturnsPostResponse) {
  FieldList f = SignedFields("doc.txt", R"({"key": "doc.txt"}, {"success_action_status": "201"})",
                             {{"success_action_status", "201"}});
  auto r = Post(FormBody(f, FilePart{"doc.txt", "text/plain", "hello"}));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_NE(r.body.find("<PostResponse"), std::string::npos) << r.body;
  EXPECT_EQ(First(r.body, "Bucket"), "photos");
  EXPECT_EQ(First(r.body, "Key"), "doc.txt");
  EXPECT_EQ(First(r.body, "ETag"), "&quot;5d41402abc4b2a76b9719d911017c592&quot;") << r.body;
  EXPECT_EQ(First(r.body, "Location"), "http://127.0.0.1:9000/photos/doc.txt");

  FieldList f200 =
      SignedFields("doc200.txt", R"({"key": "doc200.txt"}, {"success_action_status": "200"})",
                   {{"success_action_status", "200"}});
  auto r200 = Post(FormBody(f200, FilePart{"d", "text/plain", "x"}));
  EXPECT_EQ(r200.status, 200) << r200.body;
  EXPECT_TRUE(r200.body.empty());
}

TEST_F(PostObjectTest, SuccessActionRedirectAnswers303WithBucketKeyAndETag) {
  FieldList f = SignedFields(
      "r.txt", R"({"key": "r.txt"}, {"success_action_redirect": "https://example.com/done?x=1"})",
      {{"success_action_redirect", "https://example.com/done?x=1"}});
  auto r = Post(FormBody(f, FilePart{"r.txt", "text/plain", "hello"}));
  ASSERT_EQ(r.status, 303) << r.body;
  EXPECT_EQ(Header(r, "Location"),
            "https://example.com/"
            "done?x=1&bucket=photos&key=r.txt&etag=%225d41402abc4b2a76b9719d911017c592%22");
  EXPECT_EQ(GetObject("/photos/r.txt").body, "hello");
}

TEST_F(PostObjectTest, ExpiredPolicyIsRefused) {
  FieldList f = SignedFields("late.txt", R"({"key": "late.txt"})", {}, /*expires_in_s=*/-60);
  ExpectError(Post(FormBody(f, FilePart{"l", "text/plain", "late"})), 403, "AccessDenied",
              "Policy expired");
  ExpectAbsent("/photos/late.txt");
}

TEST_F(PostObjectTest, EachConditionFailureIsAccessDeniedAndStoresNothing) {
  struct Case {
    const char* name;
    std::string key;
    std::string conditions;
    FieldList extra;
  };
  const std::vector<Case> cases = {
      {"key starts-with", "other/a.txt", R"(["starts-with", "$key", "user/"])", {}},
      {"key exact", "b.txt", R"({"key": "c.txt"})", {}},
      {"key eq array", "b.txt", R"(["eq", "$key", "c.txt"])", {}},
      {"content-type exact",
       "ct.txt",
       R"({"key": "ct.txt"}, {"Content-Type": "image/jpeg"})",
       {{"Content-Type", "text/html"}}},
      {"content-type starts-with",
       "ct2.txt",
       R"({"key": "ct2.txt"}, ["starts-with", "$Content-Type", "image/"])",
       {{"Content-Type", "text/html"}}},
      {"meta value",
       "m.txt",
       R"({"key": "m.txt"}, {"x-amz-meta-uuid": "14365123651274"})",
       {{"x-amz-meta-uuid", "0"}}},
      {"meta missing", "m2.txt", R"({"key": "m2.txt"}, {"x-amz-meta-uuid": "14365123651274"})", {}},
      {"success_action_status",
       "s.txt",
       R"({"key": "s.txt"}, {"success_action_status": "201"})",
       {{"success_action_status", "200"}}},
      {"success_action_redirect",
       "s2.txt",
       R"({"key": "s2.txt"}, {"success_action_redirect": "https://a.example/"})",
       {{"success_action_redirect", "https://b.example/"}}},
      {"acl",
       "acl.txt",
       R"({"key": "acl.txt"}, {"acl": "bucket-owner-read"})",
       {{"acl", "private"}}},
      {"extra field", "e.txt", R"({"key": "e.txt"})", {{"x-amz-meta-unlisted", "v"}}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    FieldList f = SignedFields(tc.key, tc.conditions, tc.extra);
    ExpectError(Post(FormBody(f, FilePart{"f", "text/plain", "data"})), 403, "AccessDenied",
                "Invalid according to Policy");
    ExpectAbsent("/photos/" + tc.key);
  }
  // The bucket condition names another bucket.
  {
    FieldList f = SignedFields("bkt.txt", R"({"key": "bkt.txt"})");
    // SignedFields says {"bucket": "photos"}; post to another bucket the user owns.
    Headers h = {{"Host", "127.0.0.1:9000"}};
    sigv4::SigningParams sp;
    sp.credentials.access_key = kAk;
    sp.credentials.secret_key = kSecret;
    sp.now_ns = NowUnixNanos();
    sigv4::SignRequest("PUT", "/albums", "", h, sigv4::PayloadSha256Hex(""), sp);
    h.emplace_back("Content-Length", "0");
    ASSERT_EQ(Raw(http::FormatRequest("PUT", "/albums", h, "")).status, 200);
    ExpectError(Post(FormBody(f, FilePart{"f", "text/plain", "d"}), "/albums"), 403, "AccessDenied",
                "Invalid according to Policy");
    ExpectAbsent("/albums/bkt.txt");
  }
  // x-ignore- fields need no condition.
  FieldList ok =
      SignedFields("ignored.txt", R"({"key": "ignored.txt"})", {{"x-ignore-submit", "Upload"}});
  EXPECT_EQ(Post(FormBody(ok, FilePart{"f", "text/plain", "d"})).status, 204);
}

TEST_F(PostObjectTest, ContentLengthRangeIsEnforced) {
  const std::string cond = R"(["starts-with", "$key", ""], ["content-length-range", 10, 20])";
  ExpectError(Post(FormBody(SignedFields("small", cond), FilePart{"f", "t/p", "123456789"})), 400,
              "EntityTooSmall");
  ExpectAbsent("/photos/small");
  ExpectError(
      Post(FormBody(SignedFields("large", cond), FilePart{"f", "t/p", std::string(21, 'x')})), 400,
      "EntityTooLarge");
  ExpectAbsent("/photos/large");
  EXPECT_EQ(
      Post(FormBody(SignedFields("lo", cond), FilePart{"f", "t/p", std::string(10, 'x')})).status,
      204);
  EXPECT_EQ(
      Post(FormBody(SignedFields("hi", cond), FilePart{"f", "t/p", std::string(20, 'x')})).status,
      204);
  EXPECT_EQ(GetObject("/photos/hi").body, std::string(20, 'x'));
}

TEST_F(PostObjectTest, WrongSignatureOrKeyIsRefused) {
  FieldList f = SignedFields("sig.txt", R"({"key": "sig.txt"})");
  for (auto& [n, v] : f)
    if (n == "x-amz-signature") v[0] = v[0] == 'a' ? 'b' : 'a';
  ExpectError(Post(FormBody(f, FilePart{"f", "t/p", "d"})), 403, "SignatureDoesNotMatch");
  ExpectAbsent("/photos/sig.txt");

  // Signed with the wrong secret.
  FieldList w = SignedFields("sig.txt", R"({"key": "sig.txt"})", {}, 600, kAk, "not-the-secret");
  ExpectError(Post(FormBody(w, FilePart{"f", "t/p", "d"})), 403, "SignatureDoesNotMatch");
  // The policy changed after signing.
  FieldList t = SignedFields("sig.txt", R"({"key": "sig.txt"})");
  FieldList other = SignedFields("sig.txt", R"(["starts-with", "$key", ""])");
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].first == "policy") {
      ASSERT_NE(t[i].second, other[i].second);
      t[i].second = other[i].second;
    }
  ExpectError(Post(FormBody(t, FilePart{"f", "t/p", "d"})), 403, "SignatureDoesNotMatch");
  // An unknown access key.
  FieldList u = SignedFields("sig.txt", R"({"key": "sig.txt"})", {}, 600, "AKIDNOBODY", "x");
  ExpectError(Post(FormBody(u, FilePart{"f", "t/p", "d"})), 403, "InvalidAccessKeyId");
  ExpectAbsent("/photos/sig.txt");
}

TEST_F(PostObjectTest, OnlyTheBucketOwnerMaySignForIt) {
  FieldList f = SignedFields("bob.txt", R"({"key": "bob.txt"})", {}, 600, "AKIDBOB", "bob-secret");
  ExpectError(Post(FormBody(f, FilePart{"f", "t/p", "d"})), 403, "AccessDenied");
  ExpectAbsent("/photos/bob.txt");
}

TEST_F(PostObjectTest, WithoutPolicyTheRequestIsAnonymous) {
  ExpectError(Post(FormBody({{"key", "anon.txt"}}, FilePart{"f", "t/p", "d"})), 403,
              "AccessDenied");
  ExpectAbsent("/photos/anon.txt");
}

TEST_F(PostObjectTest, LargeFileStreamsIntact) {
  // 1.5 MiB, larger than one socket read, with near-delimiters inside: CRLF,
  // the boundary not after a CRLF, a delimiter missing its last byte. (A real
  // delimiter cannot occur: the form chooses a boundary its data lacks.)
  std::string data;
  const std::string b(kBoundary);
  uint32_t x = 12345;
  while (data.size() < 3 * 512 * 1024) {
    x = x * 1103515245 + 12345;
    switch (x % 7) {
      case 0:
        data += "\r\n--" + b.substr(0, b.size() - 1) + "X";
        break;
      case 1:
        data += "X--" + b + "\r\n";
        break;  // not after a CRLF
      case 2:
        data += "\r\n\r\n";
        break;
      default:
        data.push_back(static_cast<char>(x >> 16));
        break;
    }
  }
  data += "\r\n";  // the file itself ends in CRLF
  FieldList f = SignedFields("big.bin", R"({"key": "big.bin"})");
  auto r = Post(FormBody(f, FilePart{"big.bin", "application/octet-stream", data}));
  ASSERT_EQ(r.status, 204) << r.body;
  auto g = GetObject("/photos/big.bin");
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(Header(g, "Content-Length"), std::to_string(data.size()));
  EXPECT_EQ(g.body.size(), data.size()) << g.body.substr(0, 200);
  EXPECT_TRUE(g.body == data);
  EXPECT_EQ(Header(r, "ETag"), Header(g, "ETag"));
}

TEST_F(PostObjectTest, QuotedBoundaryAndChunkedTransferEncoding) {
  // A body without Content-Length (Transfer-Encoding: chunked) and a quoted
  // boundary parameter, as RFC 2046 allows.
  FieldList f = SignedFields("chunked.bin", R"({"key": "chunked.bin"})");
  const std::string data(300 * 1024 + 5, 'c');
  const std::string form = FormBody(f, FilePart{"c", "t/p", data});
  std::string wire;
  for (size_t i = 0; i < form.size(); i += 70000) {
    const std::string piece = form.substr(i, 70000);
    wire += fmt::format("{:x}\r\n{}\r\n", piece.size(), piece);
  }
  wire += "0\r\n\r\n";
  Headers h = {{"Host", "127.0.0.1:9000"},
               {"Content-Type",
                fmt::format("multipart/form-data; charset=utf-8; boundary=\"{}\"", kBoundary)},
               {"Transfer-Encoding", "chunked"}};
  auto r = Raw(http::FormatRequest("POST", "/photos", h, wire));
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(GetObject("/photos/chunked.bin").body, data);
}

TEST_F(PostObjectTest, FieldsAfterTheFileAreIgnored) {
  FieldList f = SignedFields("after.txt", R"({"key": "after.txt"})");
  auto r = Post(FormBody(f, FilePart{"f", "t/p", "data"}, {{"x-amz-meta-late", "1"}}));
  ASSERT_EQ(r.status, 204) << r.body;
  auto g = GetObject("/photos/after.txt");
  EXPECT_EQ(g.body, "data");
  EXPECT_EQ(Header(g, "x-amz-meta-late"), "");
}

TEST_F(PostObjectTest, MalformedFormsGetClearErrors) {
  // Not multipart/form-data.
  ExpectError(Post("key=a", "/photos", "application/x-www-form-urlencoded"), 412,
              "PreconditionFailed", "multipart/form-data");
  // No file part.
  FieldList f = SignedFields("nofile", R"({"key": "nofile"})");
  ExpectError(Post(FormBody(f, std::nullopt)), 400, "InvalidArgument", "file");
  // No key field.
  ExpectError(Post(FormBody({{"x-amz-meta-a", "b"}}, FilePart{"f", "t/p", "d"})), 400,
              "InvalidArgument", "key");
  // The body ends inside the file part (no closing boundary).
  std::string body = FormBody(f, FilePart{"f", "t/p", "partial data"});
  body = body.substr(0, body.find("partial") + 7);
  ExpectError(Post(body), 400, "MalformedPOSTRequest");
  ExpectAbsent("/photos/nofile");
  // Fields before the file larger than S3 allows.
  FieldList big = SignedFields("big-fields", R"({"key": "big-fields"})",
                               {{"x-ignore-pad", std::string(30 * 1024, 'p')}});
  ExpectError(Post(FormBody(big, FilePart{"f", "t/p", "d"})), 400,
              "MaxPostPreDataLengthExceededError");
  // A policy that is not JSON.
  FieldList bad = SignedFields("badpolicy", R"({"key": "badpolicy"})");
  auto [amz_date, date] = AmzDate();
  for (auto& [n, v] : bad) {
    if (n == "policy") v = Base64Encode("{not json");
    if (n == "x-amz-signature")
      v = sigv4::SignHex(sigv4::DeriveSigningKey(kSecret, date, "us-east-1", "s3"),
                         Base64Encode("{not json"));
  }
  ExpectError(Post(FormBody(bad, FilePart{"f", "t/p", "d"})), 400, "InvalidPolicyDocument");
  ExpectAbsent("/photos/badpolicy");
}

TEST_F(PostObjectTest, UnsupportedFieldsAreRefusedNotDropped) {
  for (const auto& [name, value] : FieldList{{"x-amz-server-side-encryption", "AES256"},
                                             {"acl", "public-read"},
                                             {"x-amz-checksum-crc32", "AAAAAA=="},
                                             {"x-amz-security-token", "tok"}}) {
    SCOPED_TRACE(name);
    FieldList f = SignedFields(
        "unsup.txt", fmt::format(R"({{"key": "unsup.txt"}}, {{"{}": "{}"}})", name, value),
        {{name, value}});
    ExpectError(Post(FormBody(f, FilePart{"f", "t/p", "d"})), 501, "NotImplemented");
    ExpectAbsent("/photos/unsup.txt");
  }
  // Signature Version 2 forms.
  ExpectError(Post(FormBody(
                  {{"key", "v2"}, {"AWSAccessKeyId", kAk}, {"policy", "e30="}, {"signature", "x"}},
                  FilePart{"f", "t/p", "d"})),
              501, "NotImplemented");
}

TEST_F(PostObjectTest, TaggingFieldIsStored) {
  const std::string tagging =
      "<Tagging><TagSet><Tag><Key>team</Key><Value>blue</Value></Tag></TagSet></Tagging>";
  FieldList f = SignedFields("tagged", R"({"key": "tagged"}, ["starts-with", "$tagging", ""])",
                             {{"tagging", tagging}});
  ASSERT_EQ(Post(FormBody(f, FilePart{"f", "t/p", "d"})).status, 204);
  EXPECT_EQ(Header(GetObject("/photos/tagged"), "x-amz-tagging-count"), "1");
}

}  // namespace
}  // namespace strata::s3
