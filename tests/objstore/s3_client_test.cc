// S3Client specifics: bucket calls, cross-bucket copies, presigning, error
// mapping, credential resolution, retries under injected faults, and integrity
// checks — against a real `strata server`, and against a scripted fake server
// for the failures a healthy server never shows.

#include <strata/objstore/s3_client.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/http_client.h>
#include <strata/core/http_server.h>
#include <strata/core/strings.h>

#include "objstore/strata_server.h"
#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

using strata::testing::SharedServer;
using strata::testing::StrataServer;
using strata::testing::TempDir;

std::string Bytes(uint64_t seed, size_t n) {
  std::string s(n, '\0');
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

// Not rewindable: the client must not assume it can read it twice.
class OnceSource final : public ByteSource {
 public:
  explicit OnceSource(std::string_view data) : data_(data) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

std::string UniqueBucket() {
  static std::atomic<int> n{0};
  return "c" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StrataServer& server = SharedServer();
    ASSERT_TRUE(server.ok()) << server.error();
    endpoint_ = server.endpoint();
    ASSERT_OK_AND_ASSIGN(client_, S3Client::Create(Options()));
  }

  S3Options Options() const {
    S3Options o;
    o.endpoint = endpoint_;
    o.credentials = {StrataServer::kUser, StrataServer::kPassword, ""};
    return o;
  }

  std::string endpoint_;
  std::shared_ptr<S3Client> client_;
};

TEST_F(S3ClientTest, BucketOperations) {
  const std::string b = UniqueBucket();
  EXPECT_STATUS_CODE(client_->HeadBucket(b), StatusCode::kNotFound);
  ASSERT_OK(client_->CreateBucket(b));
  // The test server is in us-east-1, where re-creating your own bucket
  // answers 200 (AWS's legacy behaviour there; elsewhere 409).
  ASSERT_OK(client_->CreateBucket(b));
  ASSERT_OK(client_->HeadBucket(b));
  ASSERT_OK_AND_ASSIGN(auto buckets, client_->ListBuckets());
  bool found = false;
  for (const auto& e : buckets) {
    if (e.name == b) {
      found = true;
      EXPECT_GT(e.created_ns, 0);
    }
  }
  EXPECT_TRUE(found);
  auto store = client_->OpenBucket(b);
  ASSERT_OK(store->PutBytes("k", "v"));
  Status not_empty = client_->DeleteBucket(b);
  EXPECT_EQ(not_empty.code(), StatusCode::kPreconditionFailed) << not_empty.ToString();
  EXPECT_TRUE(StartsWith(not_empty.message(), "BucketNotEmpty: ")) << not_empty.message();
  ASSERT_OK(store->Delete("k"));
  ASSERT_OK(client_->DeleteBucket(b));
  EXPECT_STATUS_CODE(client_->HeadBucket(b), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(client_->DeleteBucket(b), StatusCode::kNotFound);
}

TEST_F(S3ClientTest, CrossBucketCopyAndUploadPartCopy) {
  const std::string a = UniqueBucket(), b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(a));
  ASSERT_OK(client_->CreateBucket(b));
  auto sa = client_->OpenBucket(a);
  auto sb = client_->OpenBucket(b);
  const std::string data = Bytes(1, 7 << 20);
  WriteOptions wo;
  wo.content_type = "text/csv";
  wo.user_meta = {{"origin", "a"}};
  ASSERT_OK_AND_ASSIGN(ObjectInfo src, sa->PutBytes("dir/src", data, wo));

  ASSERT_OK_AND_ASSIGN(ObjectInfo copied, client_->CopyObject(a, "dir/src", b, "copy"));
  EXPECT_EQ(copied.size, data.size());
  EXPECT_EQ(copied.etag, HexEncode(Md5(data)));
  ASSERT_OK_AND_ASSIGN(std::string got, sb->GetBytes("copy"));
  EXPECT_TRUE(got == data);
  ASSERT_OK_AND_ASSIGN(ObjectInfo head, sb->Head("copy"));
  EXPECT_EQ(head.content_type, "text/csv");
  EXPECT_EQ(head.user_meta["origin"], "a");

  CopyOptions co;
  co.new_metadata = WriteOptions{};
  co.new_metadata->content_type = "application/json";
  co.new_metadata->user_meta = {{"origin", "replaced"}};
  ASSERT_OK(client_->CopyObject(a, "dir/src", b, "replaced", co));
  ASSERT_OK_AND_ASSIGN(head, sb->Head("replaced"));
  EXPECT_EQ(head.content_type, "application/json");
  EXPECT_EQ(head.user_meta["origin"], "replaced");

  co = CopyOptions{};
  co.source_if_match = HexEncode(Md5("something else"));
  EXPECT_STATUS_CODE(client_->CopyObject(a, "dir/src", b, "nope", co), StatusCode::kPreconditionFailed);
  EXPECT_STATUS_CODE(client_->CopyObject(a, "missing", b, "nope"), StatusCode::kNotFound);

  // An object assembled from two copied ranges (5 MiB + the rest) of the source.
  ASSERT_OK_AND_ASSIGN(std::string id, sb->CreateMultipart("assembled"));
  ASSERT_OK_AND_ASSIGN(UploadedPart p1, client_->UploadPartCopy(b, "assembled", id, 1, a, "dir/src",
                                                                std::make_pair(0ull, 5ull << 20),
                                                                src.etag));
  ASSERT_OK_AND_ASSIGN(UploadedPart p2,
                       client_->UploadPartCopy(b, "assembled", id, 2, a, "dir/src",
                                               std::make_pair(5ull << 20, data.size() - (5 << 20))));
  EXPECT_EQ(p1.size, 5u << 20);
  EXPECT_EQ(p1.etag, HexEncode(Md5(data.substr(0, 5 << 20))));
  ASSERT_OK_AND_ASSIGN(ObjectInfo done, sb->CompleteMultipart("assembled", id, {p1, p2}));
  EXPECT_EQ(done.size, data.size());
  ASSERT_OK_AND_ASSIGN(got, sb->GetBytes("assembled"));
  EXPECT_TRUE(got == data);
}

TEST_F(S3ClientTest, PresignedUrls) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  ASSERT_OK(client_->OpenBucket(b)->PutBytes("a key+with spaces", "presigned!"));
  ASSERT_OK_AND_ASSIGN(std::string url, client_->Presign("GET", b, "a key+with spaces", 300));
  ASSERT_OK_AND_ASSIGN(http::ParsedUrl u, http::ParseHttpUrl(url));
  http::HttpClient http;
  http::ClientRequest r;
  r.host = u.host;
  r.port = u.port;
  r.target = u.target;
  ASSERT_OK_AND_ASSIGN(auto resp, http.Send(r));
  EXPECT_EQ(resp->status(), 200);
  ASSERT_OK_AND_ASSIGN(std::string body, resp->ReadAll());
  EXPECT_EQ(body, "presigned!");
  // Tampering breaks it.
  r.target = u.target;
  r.target.replace(r.target.find("spaces"), 6, "spacez");
  ASSERT_OK_AND_ASSIGN(resp, http.Send(r));
  EXPECT_EQ(resp->status(), 403);
  EXPECT_STATUS_CODE(client_->Presign("GET", b, "k", 0), StatusCode::kInvalidArgument);
}

// strata mv deletes a source only while it is the version it copied.
TEST_F(S3ClientTest, DeleteObjectIfMatch) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  auto sb = client_->OpenBucket(b);
  ASSERT_OK_AND_ASSIGN(ObjectInfo first, sb->PutBytes("k", "first"));
  ASSERT_OK_AND_ASSIGN(ObjectInfo second, sb->PutBytes("k", "second"));
  EXPECT_STATUS_CODE(client_->DeleteObject(b, "k", first.etag), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(std::string got, sb->GetBytes("k"));
  EXPECT_EQ(got, "second");
  ASSERT_OK(client_->DeleteObject(b, "k", second.etag));
  EXPECT_STATUS_CODE(sb->Head("k"), StatusCode::kNotFound);
  ASSERT_OK(sb->PutBytes("u", "x").status());
  ASSERT_OK(client_->DeleteObject(b, "u"));
  EXPECT_STATUS_CODE(sb->Head("u"), StatusCode::kNotFound);
}

TEST_F(S3ClientTest, ErrorsCarryTheS3Code) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  auto store = client_->OpenBucket(b);
  auto missing = store->GetBytes("nope");
  ASSERT_STATUS_CODE(missing, StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(missing.error().message(), "NoSuchKey: ")) << missing.error().message();
  EXPECT_NE(missing.error().message().find("s3://" + b + "/nope"), std::string::npos);

  const std::string absent = UniqueBucket();
  auto no_bucket = client_->OpenBucket(absent)->GetBytes("k");
  ASSERT_STATUS_CODE(no_bucket, StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(no_bucket.error().message(), "NoSuchBucket: "))
      << no_bucket.error().message();
  // (Strata's server answers a PUT into a missing bucket with NoSuchKey, naming the bucket.)
  auto put_no_bucket = client_->OpenBucket(absent)->PutBytes("k", "v");
  ASSERT_STATUS_CODE(put_no_bucket, StatusCode::kNotFound);
  EXPECT_NE(put_no_bucket.error().message().find(absent), std::string::npos);

  S3Options wrong = Options();
  wrong.credentials.secret_key = "not-the-secret-at-all";
  ASSERT_OK_AND_ASSIGN(auto bad, S3Client::Create(wrong));
  auto denied = bad->OpenBucket(b)->Head("k");
  ASSERT_STATUS_CODE(denied, StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(denied.error().message(), "SignatureDoesNotMatch: ") ||
              StartsWith(denied.error().message(), "AccessDenied: "))
      << denied.error().message();
  auto denied_put = bad->OpenBucket(b)->PutBytes("k", "v");
  ASSERT_STATUS_CODE(denied_put, StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(denied_put.error().message(), "SignatureDoesNotMatch: "))
      << denied_put.error().message();

  S3Options anon = Options();
  anon.credentials = {};
  ASSERT_OK_AND_ASSIGN(auto anonymous, S3Client::Create(anon));
  EXPECT_STATUS_CODE(anonymous->OpenBucket(b)->PutBytes("k", "v"), StatusCode::kPermissionDenied);
  // Not worth repeating: one request each.
  EXPECT_EQ(bad->stats().retries, 0u);
}

TEST_F(S3ClientTest, RenameOnlyWhereTheServiceHasIt) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  const std::string base = "s3://" + b + "?endpoint=" + endpoint_ + "&access_key=" +
                           StrataServer::kUser + "&secret_key=" + StrataServer::kPassword;
  ASSERT_OK_AND_ASSIGN(auto detect, OpenObjectStore(base));  // recognises Strata's server
  ASSERT_OK(detect->PutBytes("a", "1"));
  ASSERT_OK(detect->Rename("a", "b"));
  ASSERT_OK_AND_ASSIGN(auto off, OpenObjectStore(base + "&rename_object=false"));
  EXPECT_STATUS_CODE(off->Rename("b", "c"), StatusCode::kNotSupported);
  ASSERT_OK_AND_ASSIGN(std::string got, off->GetBytes("b"));
  EXPECT_EQ(got, "1");
  EXPECT_STATUS_CODE(off->Head("c"), StatusCode::kNotFound);
}

TEST_F(S3ClientTest, GivesUpOnAnUnreachableEndpoint) {
  S3Options o = Options();
  o.endpoint = "http://127.0.0.1:" + std::to_string(StrataServer::FreePort());
  o.retry.max_attempts = 3;
  o.retry.base_delay_ms = 1;
  ASSERT_OK_AND_ASSIGN(auto c, S3Client::Create(o));
  auto r = c->OpenBucket("b")->Head("k");
  ASSERT_STATUS_CODE(r, StatusCode::kUnavailable);
  EXPECT_NE(r.error().message().find("gave up after 3 attempts"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(c->stats().retries, 2u);
}

TEST_F(S3ClientTest, SurvivesInjectedErrorsAndDroppedConnections) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  S3Options o = Options();
  o.http.faults = {0.05, 0.02, 1234};
  o.part_size = 5 << 20;
  o.multipart_threshold = 8 << 20;
  o.retry.base_delay_ms = 1;
  ASSERT_OK_AND_ASSIGN(auto faulty, S3Client::Create(o));
  auto store = faulty->OpenBucket(b, "faults/");
  std::mt19937 rng(99);
  std::vector<std::pair<std::string, std::string>> objects;
  for (int i = 0; i < 60; ++i) {
    const std::string key = "obj/" + std::to_string(i);
    const size_t size = rng() % (3 << 20);
    std::string data = Bytes(static_cast<uint64_t>(i), size);
    if (i % 3 == 0) {
      ASSERT_OK(store->PutBytes(key, data)) << key;
    } else if (i % 3 == 1) {
      StringSource src(data);
      WriteOptions wo;
      wo.size = data.size();
      ASSERT_OK(store->Put(key, src, wo)) << key;
    } else {
      OnceSource src(data);  // buffered by the client, so still retried
      ASSERT_OK(store->Put(key, src)) << key;
    }
    objects.emplace_back(key, std::move(data));
  }
  // Multipart objects, streamed and buffered.
  const std::string big = Bytes(7, 17 << 20);
  {
    OnceSource src(big);
    ASSERT_OK(store->Put("big/once", src));
    ASSERT_OK(store->PutBytes("big/bytes", big));
  }
  for (const auto& [key, data] : objects) {
    ASSERT_OK_AND_ASSIGN(std::string got, store->GetBytes(key));
    EXPECT_TRUE(got == data) << key;
  }
  for (const char* key : {"big/once", "big/bytes"}) {
    ASSERT_OK_AND_ASSIGN(std::string got, store->GetBytes(key));
    EXPECT_TRUE(got == big) << key;
  }
  size_t listed = 0;
  ASSERT_OK(store->ListAll("", [&](const ObjectInfo&) {
    ++listed;
    return Status::Ok();
  }));
  EXPECT_EQ(listed, objects.size() + 2);
  std::vector<std::string> keys;
  for (const auto& kv : objects) keys.push_back(kv.first);
  ASSERT_OK_AND_ASSIGN(auto deleted, store->DeleteMany(keys));
  for (const Status& s : deleted) EXPECT_OK(s);

  const S3Client::Stats st = faulty->stats();
  EXPECT_GT(st.http.injected_errors, 0u);
  EXPECT_GT(st.http.injected_drops, 0u);
  EXPECT_GE(st.retries, st.http.injected_errors);
  // Every object intact, seen by a client without faults.
  auto clean = client_->OpenBucket(b, "faults/");
  ASSERT_OK_AND_ASSIGN(std::string got, clean->GetBytes("big/once"));
  EXPECT_TRUE(got == big);
}

TEST_F(S3ClientTest, BrokenDownloadsResumeFromTheNextByte) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  const std::string data = Bytes(3, 12 << 20);
  ASSERT_OK(client_->OpenBucket(b)->PutBytes("k", data));
  S3Options o = Options();
  o.http.faults = {0, 0.6, 77};  // most requests are cut: before they are sent or mid-body
  o.retry.base_delay_ms = 1;
  ASSERT_OK_AND_ASSIGN(auto faulty, S3Client::Create(o));
  auto store = faulty->OpenBucket(b);
  for (int i = 0; i < 12; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string got, store->GetBytes("k"));
    EXPECT_TRUE(got == data);
  }
  EXPECT_GT(faulty->stats().resumed_gets, 0u)
      << "drops " << faulty->stats().http.injected_drops << " requests " << faulty->stats().requests;
}

TEST_F(S3ClientTest, UnrewindableBodiesAreNotRetried) {
  const std::string b = UniqueBucket();
  ASSERT_OK(client_->CreateBucket(b));
  S3Options o = Options();
  o.http.faults = {0, 1.0, 5};  // every request is cut
  o.retry.base_delay_ms = 1;
  ASSERT_OK_AND_ASSIGN(auto faulty, S3Client::Create(o));
  auto store = faulty->OpenBucket(b);
  ASSERT_OK_AND_ASSIGN(std::string id, client_->OpenBucket(b)->CreateMultipart("k"));
  const std::string data = Bytes(1, 1 << 20);
  Status last;
  // The cut may strike before any byte was read (then a retry is allowed);
  // once a body was read, it is never sent again.
  for (int i = 0; i < 10; ++i) {
    OnceSource once(data);
    last = store->UploadPart("k", id, 1, once, data.size()).status();
    if (last.message().find("not retried") != std::string::npos) break;
  }
  EXPECT_NE(last.message().find("not retried"), std::string::npos) << last.ToString();
  // A rewindable body is simply sent again, until a request gets through (a
  // cut after the body was sent spares an UploadPart: its response is empty).
  const uint64_t retries_before = faulty->stats().retries;
  StringSource rewindable(data);
  ASSERT_OK_AND_ASSIGN(UploadedPart part, store->UploadPart("k", id, 1, rewindable, data.size()));
  EXPECT_EQ(part.etag, HexEncode(Md5(data)));
  EXPECT_GT(faulty->stats().retries, retries_before);
}

// ---- Credentials and URLs.

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ResolveS3UrlTest, UrlEnvironmentAndProfiles) {
  TempDir dir;
  ASSERT_TRUE(strata::testing::WriteFile(dir.Join("credentials"),
                                         "[default]\naws_access_key_id = DEFAULTKEY\n"
                                         "aws_secret_access_key = defaultsecret\n"
                                         "[work]\naws_access_key_id=WORKKEY\n"
                                         "aws_secret_access_key=worksecret\n"
                                         "aws_session_token=worktoken\n"));
  ASSERT_TRUE(strata::testing::WriteFile(dir.Join("config"),
                                         "[default]\nregion = eu-west-1\n"
                                         "[profile work]\nregion = ap-south-1\n"
                                         "s3 =\n  endpoint_url = http://work.example:9000\n"));
  ScopedEnv creds("AWS_SHARED_CREDENTIALS_FILE", dir.Join("credentials"));
  ScopedEnv config("AWS_CONFIG_FILE", dir.Join("config"));
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                        "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                        "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"}) {
    ::unsetenv(v);
  }

  ASSERT_OK_AND_ASSIGN(auto r, ResolveS3Url("s3://bucket/some/prefix"));
  EXPECT_EQ(r.second.bucket, "bucket");
  EXPECT_EQ(r.second.prefix, "some/prefix/");
  EXPECT_EQ(r.first.credentials.access_key, "DEFAULTKEY");
  EXPECT_EQ(r.first.credentials.secret_key, "defaultsecret");
  EXPECT_EQ(r.first.region, "eu-west-1");
  EXPECT_EQ(r.first.endpoint, "");

  {
    ScopedEnv profile("AWS_PROFILE", "work");
    ASSERT_OK_AND_ASSIGN(r, ResolveS3Url("s3://b"));
    EXPECT_EQ(r.first.credentials.access_key, "WORKKEY");
    EXPECT_EQ(r.first.credentials.session_token, "worktoken");
    EXPECT_EQ(r.first.region, "ap-south-1");
    EXPECT_EQ(r.first.endpoint, "http://work.example:9000");
    EXPECT_EQ(r.second.prefix, "");
  }
  {
    ScopedEnv ak("AWS_ACCESS_KEY_ID", "ENVKEY");
    ScopedEnv sk("AWS_SECRET_ACCESS_KEY", "envsecret");
    ScopedEnv region("AWS_REGION", "us-west-2");
    ScopedEnv ep("AWS_ENDPOINT_URL", "http://generic:1");
    ScopedEnv ep_s3("AWS_ENDPOINT_URL_S3", "http://s3specific:2");
    ASSERT_OK_AND_ASSIGN(r, ResolveS3Url("s3://b"));
    EXPECT_EQ(r.first.credentials.access_key, "ENVKEY");
    EXPECT_EQ(r.first.region, "us-west-2");
    EXPECT_EQ(r.first.endpoint, "http://s3specific:2");
    // The URL wins over everything.
    ASSERT_OK_AND_ASSIGN(
        r, ResolveS3Url("s3://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1"
                        "&access_key=URLKEY&secret_key=urlsecret&path_style=false"
                        "&max_retries=2&timeout_ms=1500&fault_error_rate=0.05&fault_seed=9"));
    EXPECT_EQ(r.first.credentials.access_key, "URLKEY");
    EXPECT_EQ(r.first.endpoint, "http://127.0.0.1:9000");
    EXPECT_EQ(r.first.region, "us-east-1");
    EXPECT_EQ(r.first.path_style, std::optional<bool>(false));
    EXPECT_EQ(r.first.retry.max_attempts, 3);
    EXPECT_EQ(r.first.http.io_timeout_ms, 1500);
    EXPECT_DOUBLE_EQ(r.first.http.faults.error_rate, 0.05);
    EXPECT_EQ(r.first.http.faults.seed, 9u);
  }
  EXPECT_STATUS_CODE(ResolveS3Url("s3://b?path_style=maybe"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ResolveS3Url("s3://b?max_retries=x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(ResolveS3Url("s3://b?unknown=1"), StatusCode::kInvalidArgument);
}

TEST(ResolveS3UrlTest, StoreUrlHidesCredentials) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore("s3://bkt/pre?endpoint=http://127.0.0.1:1"
                                                   "&access_key=AK&secret_key=SECRET"));
  EXPECT_EQ(store->url().find("SECRET"), std::string::npos) << store->url();
  EXPECT_TRUE(StartsWith(store->url(), "s3://bkt/pre/?endpoint=")) << store->url();
}

// ---- A scripted fake S3 server.

class FakeS3 {
 public:
  using Handler = std::function<void(http::Request&, http::ResponseWriter&, int n)>;
  explicit FakeS3(Handler h) : handler_(std::move(h)) {
    http::ServerOptions o;
    o.threads = 2;
    server_ = std::make_unique<http::Server>(o, [this](http::Request& req, http::ResponseWriter& w) {
      (void)req.ReadAllBody(64 << 20);
      handler_(req, w, requests++);
    });
    started = server_->Start().ok();
  }
  ~FakeS3() { server_->Stop(100); }
  std::shared_ptr<S3Client> Client(
      S3Options::EtagCheck verify_md5 = S3Options::EtagCheck::kWhenNoChecksum) {
    S3Options o;
    o.endpoint = "http://127.0.0.1:" + std::to_string(server_->port());
    o.credentials = {"AK", "SECRETSECRET", ""};
    o.retry.base_delay_ms = 1;
    o.verify_md5 = verify_md5;
    return *S3Client::Create(o);
  }
  std::atomic<int> requests{0};
  bool started = false;

 private:
  Handler handler_;
  std::unique_ptr<http::Server> server_;
};

std::string Crc32cB64(std::string_view d) {
  uint32_t c = Crc32c(0, d.data(), d.size());
  std::string raw = {static_cast<char>(c >> 24), static_cast<char>(c >> 16),
                     static_cast<char>(c >> 8), static_cast<char>(c)};
  return Base64Encode(raw);
}

TEST(FakeS3Test, DownloadsAreVerified) {
  const std::string body = "the bytes on the wire";
  std::string crc = Crc32cB64(body), etag = HexEncode(Md5(body));
  FakeS3 fake([&](http::Request& req, http::ResponseWriter& w, int) {
    w.AddHeader("ETag", "\"" + etag + "\"");
    if (req.Header("range") == std::optional<std::string_view>("bytes=0-4")) {
      w.SetStatus(206);
      w.AddHeader("Content-Range", "bytes 0-4/" + std::to_string(body.size()));
      (void)w.Send(body.substr(0, 5));
      return;
    }
    if (req.Header("x-amz-checksum-mode")) w.AddHeader("x-amz-checksum-crc32c", crc);
    (void)w.Send(body);
  });
  ASSERT_TRUE(fake.started);
  auto store = fake.Client()->OpenBucket("b");
  ASSERT_OK_AND_ASSIGN(std::string got, store->GetBytes("k"));
  EXPECT_EQ(got, body);

  crc = Crc32cB64("something else");
  auto bad = store->GetBytes("k");
  ASSERT_STATUS_CODE(bad, StatusCode::kCorruption);
  EXPECT_NE(bad.error().message().find("CRC32C"), std::string::npos) << bad.error().message();

  // A wrong ETag MD5: by default checked only when there is no stored checksum.
  crc = Crc32cB64(body);
  etag = HexEncode(Md5("not the body"));
  EXPECT_OK(store->GetBytes("k").status());
  auto strict = fake.Client(S3Options::EtagCheck::kAlways)->OpenBucket("b");
  EXPECT_STATUS_CODE(strict->GetBytes("k"), StatusCode::kCorruption);
  crc.clear();
  auto md5_bad = store->GetBytes("k");
  ASSERT_STATUS_CODE(md5_bad, StatusCode::kCorruption);
  EXPECT_NE(md5_bad.error().message().find("MD5"), std::string::npos);
  // Ranged reads cannot be checked against whole-object values.
  ReadOptions ro;
  ro.offset = 0;
  ro.length = 5;
  ASSERT_OK_AND_ASSIGN(got, store->GetBytes("k", ro));
  EXPECT_EQ(got, "the b");
  // A server that ignores Range is not trusted to have sent the right bytes.
  ro.offset = 1;
  ro.length = 3;
  EXPECT_STATUS_CODE(store->GetBytes("k", ro), StatusCode::kInternal);
  // MD5 checking can be turned off (e.g. servers with non-MD5 ETags).
  auto lenient = fake.Client(S3Options::EtagCheck::kNever)->OpenBucket("b");
  EXPECT_OK(lenient->GetBytes("k").status());
  // Multipart ETags are not MD5s of the bytes.
  etag = HexEncode(Md5("x")) + "-3";
  EXPECT_OK(store->GetBytes("k").status());
}

TEST(FakeS3Test, RetriesSlowDownAndErrorsInsideA200) {
  FakeS3 fake([](http::Request& req, http::ResponseWriter& w, int n) {
    if (n < 2) {
      w.SetStatus(503);
      (void)w.Send("<Error><Code>SlowDown</Code><Message>Reduce your rate.</Message></Error>");
      return;
    }
    if (req.method == "POST" && n == 2) {
      // S3 may report a CompleteMultipartUpload failure inside a 200.
      (void)w.Send("<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code>"
                   "<Message>try again</Message></Error>");
      return;
    }
    if (req.method == "POST") {
      (void)w.Send("<?xml version=\"1.0\"?><CompleteMultipartUploadResult "
                   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><ETag>&quot;abc-1&quot;</ETag>"
                   "<ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></CompleteMultipartUploadResult>");
      return;
    }
    w.SetStatus(400);
    (void)w.Send("<Error><Code>InvalidArgument</Code><Message>nope &amp; never</Message></Error>");
  });
  ASSERT_TRUE(fake.started);
  auto client = fake.Client();
  auto store = client->OpenBucket("b");
  ASSERT_OK_AND_ASSIGN(ObjectInfo info,
                       store->CompleteMultipart("k", "id", {UploadedPart{1, "e", 5, ""}}));
  EXPECT_EQ(info.etag, "abc-1");
  EXPECT_EQ(info.checksum, "AAAAAA==");
  EXPECT_EQ(fake.requests.load(), 4);
  EXPECT_EQ(client->stats().retries, 3u);
  // A 400 is final, and its message is kept.
  auto r = store->Head("k");
  ASSERT_STATUS_CODE(r, StatusCode::kInvalidArgument);
  auto g = store->GetBytes("k");
  ASSERT_STATUS_CODE(g, StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWith(g.error().message(), "InvalidArgument: nope & never")) << g.error().message();
  EXPECT_EQ(fake.requests.load(), 6);
}

}  // namespace
}  // namespace strata::objstore
