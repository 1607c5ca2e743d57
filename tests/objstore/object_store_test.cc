// One behavioural suite run against every ObjectStore backend: the in-memory
// store, the local engine (file://), and the S3 client against a real
// `strata server` — path style, virtual-host style, under a key prefix, and
// with its HTTP transport injecting 5% 503s and 2% dropped connections.

#include <strata/objstore/object_store.h>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/objstore/fault_injection.h>
#include <strata/objstore/s3_client.h>

#include "objstore/strata_server.h"
#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

using strata::testing::SharedServer;
using strata::testing::StrataServer;
using strata::testing::TempDir;

// Deterministic bytes by position, so large objects are checked piece by
// piece without holding them.
void PatternAt(uint64_t seed, uint64_t offset, size_t n, char* out) {
  for (size_t i = 0; i < n;) {
    const uint64_t block = (offset + i) / 8;
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + block * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    const size_t in_block = (offset + i) % 8;
    const size_t k = std::min(n - i, 8 - in_block);
    std::memcpy(out + i, reinterpret_cast<const char*>(&z) + in_block, k);
    i += k;
  }
}

std::string Pattern(uint64_t seed, size_t n) {
  std::string s(n, '\0');
  PatternAt(seed, 0, n, s.data());
  return s;
}

// A non-rewindable source producing the pattern, in uneven pieces.
class PatternSource final : public ByteSource {
 public:
  PatternSource(uint64_t seed, uint64_t size) : seed_(seed), size_(size) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t k = static_cast<size_t>(std::min<uint64_t>({n, size_ - pos_, 100003}));
    PatternAt(seed_, pos_, k, buf);
    pos_ += k;
    return k;
  }

 private:
  uint64_t seed_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Checks streamed bytes against the pattern without keeping them.
struct PatternSink {
  explicit PatternSink(uint64_t s, uint64_t start = 0) : seed(s), pos(start) {}
  uint64_t seed;
  uint64_t pos = 0;
  bool mismatch = false;
  std::string scratch;
  ByteSink sink() {
    return [this](const char* p, size_t n) {
      scratch.resize(n);
      PatternAt(seed, pos, n, scratch.data());
      if (std::memcmp(scratch.data(), p, n) != 0) mismatch = true;
      pos += n;
      return Status::Ok();
    };
  }
};

std::string Crc32cB64(std::string_view data) {
  uint32_t c = Crc32c(0, data.data(), data.size());
  std::string raw(4, '\0');
  for (int i = 3; i >= 0; --i) {
    raw[static_cast<size_t>(i)] = static_cast<char>(c & 0xff);
    c >>= 8;
  }
  return Base64Encode(raw);
}

std::string S3Url(const StrataServer& server, const std::string& bucket, const std::string& extra) {
  return "s3://" + bucket + "?endpoint=" + server.endpoint() + "&access_key=" +
         StrataServer::kUser + "&secret_key=" + StrataServer::kPassword +
         "&part_size=5242880&multipart_threshold=8388608" + extra;
}

std::string NewBucketName() {
  static std::atomic<int> n{0};
  return "t" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

std::shared_ptr<S3Client> AdminClient(const StrataServer& server) {
  S3Options o;
  o.endpoint = server.endpoint();
  o.credentials = {StrataServer::kUser, StrataServer::kPassword, ""};
  auto c = S3Client::Create(o);
  return c.ok() ? *c : nullptr;
}

class ObjectStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& backend = GetParam();
    const std::string bucket = NewBucketName();
    std::string url;
    if (backend == "mem") {
      url = "mem://" + bucket;
    } else if (backend == "local") {
      // One directory per test process, removed when the process exits (each
      // test uses its own bucket in it).
      static TempDir dir("strata-objstore-local");
      url = "file://" + dir.path() + "?bucket=" + bucket + "&sync=false";
    } else {
      StrataServer& server = SharedServer();
      ASSERT_TRUE(server.ok()) << server.error();
      auto admin = AdminClient(server);
      ASSERT_NE(admin, nullptr);
      ASSERT_OK(admin->CreateBucket(bucket));
      if (backend == "s3") {
        url = S3Url(server, bucket, "");
      } else if (backend == "s3_vhost") {
        url = "s3://" + bucket + "?endpoint=http://localhost:" + std::to_string(server.port()) +
              "&path_style=false&access_key=" + StrataServer::kUser +
              "&secret_key=" + StrataServer::kPassword +
              "&part_size=5242880&multipart_threshold=8388608";
      } else if (backend == "s3_prefix") {
        url = S3Url(server, bucket + "/some/prefix", "");
      } else if (backend == "s3_faults") {
        url = S3Url(server, bucket, "&fault_error_rate=0.05&fault_drop_rate=0.02&fault_seed=" +
                                        std::to_string(std::hash<std::string>()(
                                            ::testing::UnitTest::GetInstance()
                                                ->current_test_info()
                                                ->name())));
      }
    }
    ASSERT_FALSE(url.empty()) << "unknown backend " << backend;
    ASSERT_OK_AND_ASSIGN(store_, OpenObjectStore(url));
  }

  std::unique_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreTest, PutGetHeadDelete) {
  WriteOptions wo;
  wo.content_type = "text/plain";
  wo.user_meta = {{"owner", "alice"}, {"Mixed-Case", "v"}};
  const std::string data = "hello, object store";
  ASSERT_OK_AND_ASSIGN(ObjectInfo put, store_->PutBytes("dir/hello.txt", data, wo));
  EXPECT_EQ(put.key, "dir/hello.txt");
  EXPECT_EQ(put.size, data.size());
  EXPECT_EQ(put.etag, HexEncode(Md5(data)));
  EXPECT_EQ(put.checksum_algorithm, ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(put.checksum, Crc32cB64(data));

  ASSERT_OK_AND_ASSIGN(ObjectInfo head, store_->Head("dir/hello.txt"));
  EXPECT_EQ(head.key, "dir/hello.txt");
  EXPECT_EQ(head.size, data.size());
  EXPECT_EQ(head.etag, put.etag);
  EXPECT_EQ(head.content_type, "text/plain");
  EXPECT_EQ(head.user_meta["owner"], "alice");
  EXPECT_EQ(head.user_meta["mixed-case"], "v");
  EXPECT_EQ(head.checksum, Crc32cB64(data));
  EXPECT_GT(head.mtime_ns, 0);

  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("dir/hello.txt"));
  EXPECT_EQ(got, data);

  // Overwrite, then delete.
  ASSERT_OK(store_->PutBytes("dir/hello.txt", "v2"));
  ASSERT_OK_AND_ASSIGN(got, store_->GetBytes("dir/hello.txt"));
  EXPECT_EQ(got, "v2");
  ASSERT_OK(store_->Delete("dir/hello.txt"));
  EXPECT_STATUS_CODE(store_->Head("dir/hello.txt"), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(store_->GetBytes("dir/hello.txt"), StatusCode::kNotFound);
  EXPECT_OK(store_->Delete("dir/hello.txt"));  // missing: still OK
  EXPECT_OK(store_->Delete("never/existed"));
}

TEST_P(ObjectStoreTest, EmptyObject) {
  ASSERT_OK(store_->PutBytes("empty", ""));
  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("empty"));
  EXPECT_EQ(got, "");
  ASSERT_OK_AND_ASSIGN(ObjectInfo head, store_->Head("empty"));
  EXPECT_EQ(head.size, 0u);
  EXPECT_EQ(head.etag, HexEncode(Md5("")));
  ReadOptions ro;
  ro.offset = 0;
  ro.length = 10;
  ASSERT_OK_AND_ASSIGN(got, store_->GetBytes("empty", ro));
  EXPECT_EQ(got, "");
}

TEST_P(ObjectStoreTest, RangedGets) {
  const std::string data = Pattern(1, 1 << 20);
  ASSERT_OK(store_->PutBytes("r", data));
  struct Case {
    uint64_t offset;
    std::optional<uint64_t> length;
  } cases[] = {{0, 1}, {0, 1000}, {12345, 54321}, {1000, std::nullopt},
               {(1 << 20) - 1, std::nullopt}, {(1 << 20) - 10, 100}, {5, 0},
               {1 << 20, std::nullopt}, {(1 << 20) + 5, 10}};
  for (const Case& c : cases) {
    ReadOptions ro;
    ro.offset = c.offset;
    ro.length = c.length;
    ObjectInfo info;
    bool info_before_bytes = true;
    std::string got;
    ASSERT_OK(store_->Get(
        "r", ro,
        [&](const char* p, size_t n) {
          if (info.size != data.size()) info_before_bytes = false;
          got.append(p, n);
          return Status::Ok();
        },
        &info))
        << c.offset;
    EXPECT_TRUE(info_before_bytes);
    EXPECT_EQ(info.size, data.size()) << "info carries the whole size, offset " << c.offset;
    std::string want = c.offset >= data.size() ? "" : data.substr(c.offset, c.length.value_or(std::string::npos));
    EXPECT_TRUE(got == want) << "offset " << c.offset << " got " << got.size() << " bytes, want "
                             << want.size();
  }
}

TEST_P(ObjectStoreTest, LargeObjectsByteForByte) {
  constexpr uint64_t kSize = 23 * (1 << 20) + 12345;  // several parts, odd tail
  // A source that cannot rewind, size unknown: the S3 client sends parts from memory.
  {
    PatternSource src(7, kSize);
    ASSERT_OK_AND_ASSIGN(ObjectInfo info, store_->Put("big/streamed", src));
    EXPECT_EQ(info.size, kSize);
  }
  // A rewindable source of known size: one streamed request where it fits.
  const std::string data = Pattern(8, 7 * (1 << 20) + 3);
  {
    StringSource src(data);
    WriteOptions wo;
    wo.size = data.size();
    ASSERT_OK_AND_ASSIGN(ObjectInfo info, store_->Put("big/rewindable", src, wo));
    EXPECT_EQ(info.etag, HexEncode(Md5(data)));
    EXPECT_EQ(info.checksum, Crc32cB64(data));
  }
  // And a known size beyond the threshold (multipart from a rewindable source).
  const std::string data2 = Pattern(9, 11 * (1 << 20) + 1);
  ASSERT_OK(store_->PutBytes("big/bytes", data2));

  PatternSink check{7};
  ObjectInfo info;
  ASSERT_OK(store_->Get("big/streamed", {}, check.sink(), &info));
  EXPECT_EQ(check.pos, kSize);
  EXPECT_FALSE(check.mismatch);
  EXPECT_EQ(info.size, kSize);
  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("big/rewindable"));
  EXPECT_TRUE(got == data);
  ASSERT_OK_AND_ASSIGN(got, store_->GetBytes("big/bytes"));
  EXPECT_TRUE(got == data2);
  // A range deep inside.
  ReadOptions ro;
  ro.offset = 17 * (1 << 20) + 11;
  ro.length = 3 * (1 << 20);
  PatternSink range{7, ro.offset};
  ASSERT_OK(store_->Get("big/streamed", ro, range.sink()));
  EXPECT_EQ(range.pos, ro.offset + *ro.length);
  EXPECT_FALSE(range.mismatch);
}

TEST_P(ObjectStoreTest, ChecksumAlgorithms) {
  const std::string data = Pattern(21, 6 * (1 << 20) + 99);
  uint64_t crc = Crc64Nvme(0, data.data(), data.size());
  std::string raw(8, '\0');
  for (int i = 7; i >= 0; --i) {
    raw[static_cast<size_t>(i)] = static_cast<char>(crc & 0xff);
    crc >>= 8;
  }
  const std::string want = Base64Encode(raw);
  WriteOptions wo;
  wo.checksum = ChecksumAlgorithm::kCrc64Nvme;
  ASSERT_OK_AND_ASSIGN(ObjectInfo a, store_->PutBytes("crc64/bytes", data, wo));
  EXPECT_EQ(a.checksum_algorithm, ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_EQ(a.checksum, want);
  StringSource src(data);
  wo.size = data.size();
  ASSERT_OK_AND_ASSIGN(ObjectInfo b, store_->Put("crc64/streamed", src, wo));
  EXPECT_EQ(b.checksum, want);
  wo.size.reset();
  ASSERT_OK_AND_ASSIGN(std::string id, store_->CreateMultipart("crc64/mp", wo));
  StringSource p1(std::string_view(data).substr(0, 5 << 20));
  StringSource p2(std::string_view(data).substr(5 << 20));
  ASSERT_OK_AND_ASSIGN(UploadedPart u1, store_->UploadPart("crc64/mp", id, 1, p1, 5 << 20));
  ASSERT_OK_AND_ASSIGN(UploadedPart u2,
                       store_->UploadPart("crc64/mp", id, 2, p2, data.size() - (5 << 20)));
  ASSERT_OK_AND_ASSIGN(ObjectInfo c, store_->CompleteMultipart("crc64/mp", id, {u1, u2}));
  EXPECT_EQ(c.checksum, want) << "full-object CRC64NVME of a multipart upload";
  for (const char* k : {"crc64/bytes", "crc64/streamed", "crc64/mp"}) {
    ASSERT_OK_AND_ASSIGN(ObjectInfo h, store_->Head(k));
    EXPECT_EQ(h.checksum_algorithm, ChecksumAlgorithm::kCrc64Nvme) << k;
    EXPECT_EQ(h.checksum, want) << k;
    ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes(k));
    EXPECT_TRUE(got == data) << k;
  }
  // SHA-256, and no checksum at all.
  WriteOptions sha;
  sha.checksum = ChecksumAlgorithm::kSha256;
  ASSERT_OK(store_->PutBytes("sha", "abc", sha));
  ASSERT_OK_AND_ASSIGN(ObjectInfo h, store_->Head("sha"));
  EXPECT_EQ(h.checksum_algorithm, ChecksumAlgorithm::kSha256);
  EXPECT_EQ(h.checksum, Base64Encode(Sha256("abc")));
  WriteOptions none;
  none.checksum = ChecksumAlgorithm::kNone;
  ASSERT_OK(store_->PutBytes("none", "abc", none));
  ASSERT_OK_AND_ASSIGN(h, store_->Head("none"));
  EXPECT_EQ(h.checksum, "");
}

TEST_P(ObjectStoreTest, ConditionalWrites) {
  WriteOptions create;
  create.if_none_match_star = true;
  ASSERT_OK_AND_ASSIGN(ObjectInfo v1, store_->PutBytes("c", "one", create));
  EXPECT_STATUS_CODE(store_->PutBytes("c", "two", create), StatusCode::kPreconditionFailed);
  WriteOptions replace;
  replace.if_match = v1.etag;
  ASSERT_OK_AND_ASSIGN(ObjectInfo v2, store_->PutBytes("c", "two", replace));
  EXPECT_STATUS_CODE(store_->PutBytes("c", "three", replace), StatusCode::kPreconditionFailed);
  WriteOptions missing;
  missing.if_match = v1.etag;
  EXPECT_STATUS_CODE(store_->PutBytes("absent", "x", missing), StatusCode::kPreconditionFailed);
  ReadOptions ro;
  ro.if_match = v1.etag;
  EXPECT_STATUS_CODE(store_->GetBytes("c", ro), StatusCode::kPreconditionFailed);
  ro.if_match = v2.etag;
  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("c", ro));
  EXPECT_EQ(got, "two");
}

TEST_P(ObjectStoreTest, BodySizeMismatchStoresNothing) {
  StringSource shorter("12345");
  WriteOptions wo;
  wo.size = 10;
  EXPECT_STATUS_CODE(store_->Put("m", shorter, wo), StatusCode::kInvalidArgument);
  StringSource longer("123456789012");
  EXPECT_STATUS_CODE(store_->Put("m", longer, wo), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(store_->Head("m"), StatusCode::kNotFound);
}

TEST_P(ObjectStoreTest, ListWithDelimiterAndPages) {
  const std::vector<std::string> keys = {"a/1", "a/2", "a/b/3", "b/1", "c", "d", "e/f/g", "ea"};
  for (const auto& k : keys) ASSERT_OK(store_->PutBytes(k, k));

  ASSERT_OK_AND_ASSIGN(ListPage page, store_->List("", "/", ""));
  std::vector<std::string> objs, prefixes;
  for (const auto& o : page.objects) objs.push_back(o.key);
  EXPECT_EQ(objs, (std::vector<std::string>{"c", "d", "ea"}));
  EXPECT_EQ(page.common_prefixes, (std::vector<std::string>{"a/", "b/", "e/"}));
  EXPECT_EQ(page.next_token, "");
  for (const auto& o : page.objects) EXPECT_EQ(o.size, o.key.size());

  ASSERT_OK_AND_ASSIGN(page, store_->List("a/", "/", ""));
  objs.clear();
  for (const auto& o : page.objects) objs.push_back(o.key);
  EXPECT_EQ(objs, (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(page.common_prefixes, (std::vector<std::string>{"a/b/"}));

  // Pages of 3 without a delimiter: every key once, in order.
  std::vector<std::string> all;
  std::string token;
  int pages = 0;
  do {
    ASSERT_OK_AND_ASSIGN(page, store_->List("", "", token, 3));
    EXPECT_LE(page.objects.size(), 3u);
    for (const auto& o : page.objects) all.push_back(o.key);
    token = page.next_token;
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  EXPECT_EQ(all, keys);

  // Pages of 1 with a delimiter: entries (objects and prefixes) once each.
  std::vector<std::string> entries;
  token.clear();
  pages = 0;
  do {
    ASSERT_OK_AND_ASSIGN(page, store_->List("", "/", token, 1));
    for (const auto& o : page.objects) entries.push_back(o.key);
    for (const auto& p : page.common_prefixes) entries.push_back(p);
    token = page.next_token;
    ASSERT_LT(++pages, 20);
  } while (!token.empty());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"a/", "b/", "c", "d", "e/", "ea"}));

  std::vector<std::string> under_e;
  ASSERT_OK(store_->ListAll("e", [&](const ObjectInfo& o) {
    under_e.push_back(o.key);
    return Status::Ok();
  }));
  EXPECT_EQ(under_e, (std::vector<std::string>{"e/f/g", "ea"}));
}

TEST_P(ObjectStoreTest, KeysWithSpecialCharacters) {
  const std::vector<std::string> keys = {"sp ace", "plus+sign", "per%cent", "q?uery", "hash#tag",
                                         "amp&er=sand", "dou//ble", "ünï/cødé ✓", "tilde~_-.x",
                                         "quote\"'<xml>&amp;"};
  for (const auto& k : keys) ASSERT_OK(store_->PutBytes(k, "v:" + k)) << k;
  for (const auto& k : keys) {
    ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes(k));
    EXPECT_EQ(got, "v:" + k);
  }
  std::set<std::string> listed;
  ASSERT_OK(store_->ListAll("", [&](const ObjectInfo& o) {
    listed.insert(o.key);
    return Status::Ok();
  }));
  EXPECT_EQ(listed, std::set<std::string>(keys.begin(), keys.end()));
  ASSERT_OK_AND_ASSIGN(auto statuses, store_->DeleteMany(keys));
  for (const Status& s : statuses) EXPECT_OK(s);
  ASSERT_OK_AND_ASSIGN(ListPage page, store_->List("", "", ""));
  EXPECT_TRUE(page.objects.empty());
}

TEST_P(ObjectStoreTest, MultipartUpload) {
  WriteOptions wo;
  wo.content_type = "application/x-test";
  wo.user_meta = {{"kind", "multipart"}};
  ASSERT_OK_AND_ASSIGN(std::string id, store_->CreateMultipart("mp/obj", wo));
  const std::string p1 = Pattern(11, 5 << 20), p2 = Pattern(12, (1 << 20) + 17);
  StringSource s2(p2), s1(p1);
  // Out of order on purpose.
  ASSERT_OK_AND_ASSIGN(UploadedPart u2, store_->UploadPart("mp/obj", id, 2, s2, p2.size()));
  ASSERT_OK_AND_ASSIGN(UploadedPart u1, store_->UploadPart("mp/obj", id, 1, s1, p1.size()));
  EXPECT_EQ(u1.etag, HexEncode(Md5(p1)));
  EXPECT_EQ(u1.checksum, Crc32cB64(p1));
  EXPECT_EQ(u2.size, p2.size());

  ASSERT_OK_AND_ASSIGN(auto listed, store_->ListParts("mp/obj", id));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].number, 1);
  EXPECT_EQ(listed[0].etag, u1.etag);
  EXPECT_EQ(listed[0].size, p1.size());
  EXPECT_EQ(listed[1].number, 2);

  ASSERT_OK_AND_ASSIGN(ObjectInfo info, store_->CompleteMultipart("mp/obj", id, {u1, u2}));
  EXPECT_EQ(info.key, "mp/obj");
  EXPECT_EQ(info.size, p1.size() + p2.size());
  EXPECT_TRUE(info.etag.size() > 2 && info.etag.substr(info.etag.size() - 2) == "-2") << info.etag;
  const std::string whole = p1 + p2;
  EXPECT_EQ(info.checksum, Crc32cB64(whole)) << "a full-object CRC32C";

  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("mp/obj"));
  EXPECT_TRUE(got == whole);
  ASSERT_OK_AND_ASSIGN(ObjectInfo head, store_->Head("mp/obj"));
  EXPECT_EQ(head.etag, info.etag);
  EXPECT_EQ(head.content_type, "application/x-test");
  EXPECT_EQ(head.user_meta["kind"], "multipart");
  EXPECT_EQ(head.checksum, Crc32cB64(whole));
  // The upload is gone.
  EXPECT_STATUS_CODE(store_->ListParts("mp/obj", id), StatusCode::kNotFound);
}

TEST_P(ObjectStoreTest, MultipartAbortAndErrors) {
  ASSERT_OK_AND_ASSIGN(std::string id, store_->CreateMultipart("mp/x"));
  const std::string small = Pattern(3, 1 << 20);
  StringSource s1(small), s2(small);
  ASSERT_OK_AND_ASSIGN(UploadedPart u1, store_->UploadPart("mp/x", id, 1, s1, small.size()));
  ASSERT_OK_AND_ASSIGN(UploadedPart u2, store_->UploadPart("mp/x", id, 2, s2, small.size()));
  // A part under 5 MiB that is not the last.
  EXPECT_STATUS_CODE(store_->CompleteMultipart("mp/x", id, {u1, u2}), StatusCode::kInvalidArgument);
  // A wrong ETag.
  UploadedPart bad = u2;
  bad.etag = HexEncode(Md5("other"));
  EXPECT_STATUS_CODE(store_->CompleteMultipart("mp/x", id, {bad}), StatusCode::kInvalidArgument);
  ASSERT_OK(store_->AbortMultipart("mp/x", id));
  EXPECT_STATUS_CODE(store_->ListParts("mp/x", id), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(store_->CompleteMultipart("mp/x", id, {u1}), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(store_->Head("mp/x"), StatusCode::kNotFound);
}

TEST_P(ObjectStoreTest, MultipartConditionalComplete) {
  ASSERT_OK(store_->PutBytes("mp/c", "exists"));
  WriteOptions wo;
  wo.if_none_match_star = true;
  ASSERT_OK_AND_ASSIGN(std::string id, store_->CreateMultipart("mp/c", wo));
  StringSource s("part");
  ASSERT_OK_AND_ASSIGN(UploadedPart u, store_->UploadPart("mp/c", id, 1, s, 4));
  EXPECT_STATUS_CODE(store_->CompleteMultipart("mp/c", id, {u}), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("mp/c"));
  EXPECT_EQ(got, "exists");
  (void)store_->AbortMultipart("mp/c", id);
}

TEST_P(ObjectStoreTest, CopyAndRename) {
  WriteOptions wo;
  wo.content_type = "image/png";
  wo.user_meta = {{"a", "b"}};
  const std::string data = Pattern(5, 300000);
  ASSERT_OK(store_->PutBytes("src", data, wo));
  ASSERT_OK_AND_ASSIGN(ObjectInfo copy, store_->Copy("src", "dst/copy"));
  EXPECT_EQ(copy.key, "dst/copy");
  EXPECT_EQ(copy.size, data.size());
  EXPECT_EQ(copy.etag, HexEncode(Md5(data)));
  ASSERT_OK_AND_ASSIGN(std::string got, store_->GetBytes("dst/copy"));
  EXPECT_TRUE(got == data);
  ASSERT_OK_AND_ASSIGN(ObjectInfo head, store_->Head("dst/copy"));
  EXPECT_EQ(head.content_type, "image/png");
  EXPECT_EQ(head.user_meta["a"], "b");
  EXPECT_STATUS_CODE(store_->Copy("nope", "x"), StatusCode::kNotFound);

  ASSERT_OK(store_->Rename("src", "renamed"));
  EXPECT_STATUS_CODE(store_->Head("src"), StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(got, store_->GetBytes("renamed"));
  EXPECT_TRUE(got == data);
  EXPECT_STATUS_CODE(store_->Rename("src", "again"), StatusCode::kNotFound);
}

TEST_P(ObjectStoreTest, DeleteMany) {
  std::vector<std::string> keys;
  for (int i = 0; i < 25; ++i) {
    keys.push_back("del/" + std::to_string(i));
    ASSERT_OK(store_->PutBytes(keys.back(), "x"));
  }
  keys.push_back("del/missing");
  ASSERT_OK_AND_ASSIGN(auto statuses, store_->DeleteMany(keys));
  ASSERT_EQ(statuses.size(), keys.size());
  for (const Status& s : statuses) EXPECT_OK(s);
  ASSERT_OK_AND_ASSIGN(ListPage page, store_->List("del/", "", ""));
  EXPECT_TRUE(page.objects.empty());
}

TEST_P(ObjectStoreTest, ConcurrentWritersAndReaders) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        const std::string key = "conc/" + std::to_string(t) + "/" + std::to_string(i);
        const std::string data = Pattern(static_cast<uint64_t>(t * 100 + i), 1000 + 7919 * i);
        if (!store_->PutBytes(key, data).ok()) continue;
        auto got = store_->GetBytes(key);
        if (got.ok() && *got == data) ++good;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 48);
}

TEST_P(ObjectStoreTest, SinkErrorStopsTheRead) {
  ASSERT_OK(store_->PutBytes("s", Pattern(1, 2 << 20)));
  int calls = 0;
  Status s = store_->Get("s", {}, [&](const char*, size_t) {
    ++calls;
    return Status::ResourceExhausted("sink is full");
  });
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(calls, 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreTest,
                         ::testing::Values("mem", "local", "s3", "s3_vhost", "s3_prefix",
                                           "s3_faults"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// ---- URLs.

TEST(OpenObjectStoreTest, Urls) {
  EXPECT_STATUS_CODE(OpenObjectStore("ftp://x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("no-scheme"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("mem://"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("file://relative?bucket=b"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("s3://"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("s3://b?bogus=1&access_key=a&secret_key=b"),
                     StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("s3://b?part_size=10"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(OpenObjectStore("s3://b?fault_error_rate=2"), StatusCode::kInvalidArgument);
  TempDir dir;
  EXPECT_STATUS_CODE(OpenObjectStore("file://" + dir.path() + "?bucket=b&what=1"),
                     StatusCode::kInvalidArgument);
}

TEST(OpenObjectStoreTest, MemStoresShareByName) {
  ASSERT_OK_AND_ASSIGN(auto a, OpenObjectStore("mem://shared-x"));
  ASSERT_OK_AND_ASSIGN(auto b, OpenObjectStore("mem://shared-x"));
  ASSERT_OK_AND_ASSIGN(auto p, OpenObjectStore("mem://shared-x/sub"));
  ASSERT_OK(a->PutBytes("k", "v"));
  ASSERT_OK(p->PutBytes("k", "in-prefix"));
  ASSERT_OK_AND_ASSIGN(std::string got, b->GetBytes("k"));
  EXPECT_EQ(got, "v");
  ASSERT_OK_AND_ASSIGN(got, a->GetBytes("sub/k"));
  EXPECT_EQ(got, "in-prefix");
  EXPECT_EQ(p->url(), "mem://shared-x/sub/");
  auto fresh = NewMemObjectStore();
  EXPECT_STATUS_CODE(fresh->Head("k"), StatusCode::kNotFound);
}

TEST(OpenObjectStoreTest, FileStoresShareTheEngineAndPersist) {
  TempDir dir;
  const std::string url = "file://" + dir.path() + "?bucket=data&prefix=p&sync=false";
  {
    ASSERT_OK_AND_ASSIGN(auto a, OpenObjectStore(url));
    ASSERT_OK_AND_ASSIGN(auto b, OpenObjectStore("file://" + dir.path() + "/?bucket=data"));
    ASSERT_OK(a->PutBytes("k", "v"));
    ASSERT_OK_AND_ASSIGN(std::string got, b->GetBytes("p/k"));
    EXPECT_EQ(got, "v");
    EXPECT_EQ(a->url(), "file://" + dir.path() + "?bucket=data&prefix=p%2F");
  }
  // Both closed: the engine was closed too, and reopens with the data.
  ASSERT_OK_AND_ASSIGN(auto c, OpenObjectStore(url));
  ASSERT_OK_AND_ASSIGN(std::string got, c->GetBytes("k"));
  EXPECT_EQ(got, "v");
}

// ---- The fault-injecting wrapper.

TEST(FaultInjectionTest, ErrorsAndDropsNeverLeaveObjects) {
  FaultOptions fo;
  fo.error_rate = 1.0;
  FaultInjectionObjectStore store(NewMemObjectStore(), fo);
  EXPECT_STATUS_CODE(store.PutBytes("k", "v"), StatusCode::kUnavailable);
  EXPECT_STATUS_CODE(store.Head("k"), StatusCode::kUnavailable);
  fo.error_rate = 0;
  fo.drop_rate = 1.0;
  store.SetOptions(fo);
  const std::string data = Pattern(1, 1 << 20);
  for (int i = 0; i < 10; ++i) {
    StringSource src(data);
    WriteOptions wo;
    wo.size = data.size();
    EXPECT_STATUS_CODE(store.Put("k", src, wo), StatusCode::kIOError);
  }
  fo.drop_rate = 0;
  store.SetOptions(fo);
  EXPECT_STATUS_CODE(store.Head("k"), StatusCode::kNotFound);
  ASSERT_OK(store.PutBytes("k", data));
  fo.drop_rate = 1.0;
  store.SetOptions(fo);
  for (int i = 0; i < 10; ++i) {
    std::string got;
    Status s = store.Get("k", {}, [&](const char* p, size_t n) {
      got.append(p, n);
      return Status::Ok();
    });
    EXPECT_EQ(s.code(), StatusCode::kIOError);
    EXPECT_LT(got.size(), data.size());
    EXPECT_TRUE(got == data.substr(0, got.size())) << "the bytes before the cut are right";
  }
  EXPECT_GE(store.stats().drops, 20u);
  EXPECT_GE(store.stats().errors, 2u);
}

TEST(FaultInjectionTest, DeterministicForASeed) {
  auto run = [](uint64_t seed) {
    FaultOptions fo;
    fo.error_rate = 0.3;
    fo.drop_rate = 0.2;
    fo.seed = seed;
    FaultInjectionObjectStore store(NewMemObjectStore(), fo);
    std::string outcomes;
    for (int i = 0; i < 60; ++i) {
      Status s = store.PutBytes("k" + std::to_string(i), Pattern(i, 5000)).status();
      outcomes += s.ok() ? '.' : s.code() == StatusCode::kIOError ? 'D' : 'E';
    }
    return outcomes;
  };
  const std::string a = run(42);
  EXPECT_EQ(a, run(42));
  EXPECT_NE(a, run(43));
  EXPECT_NE(a.find('D'), std::string::npos);
  EXPECT_NE(a.find('E'), std::string::npos);
  EXPECT_NE(a.find('.'), std::string::npos);
}

TEST(FaultInjectionTest, LatencyAndBandwidthSlowRequestsDown) {
  FaultOptions fo;
  fo.first_byte_latency_us = 20'000;
  fo.stream_bytes_per_sec = 10 << 20;
  FaultInjectionObjectStore store(NewMemObjectStore(), fo);
  ASSERT_OK(store.PutBytes("k", Pattern(1, 1 << 20)));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(std::string got, store.GetBytes("k"));
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(got.size(), 1u << 20);
  // Lower bounds only: 20 ms to the first byte, then 1 MiB at 10 MiB/s.
  EXPECT_GE(elapsed, std::chrono::milliseconds(20 + 90));
  EXPECT_EQ(store.stats().bytes, 2u << 20);

  // A total cap is shared by concurrent streams.
  fo.first_byte_latency_us = 0;
  fo.stream_bytes_per_sec = 0;
  fo.total_bytes_per_sec = 20 << 20;
  store.SetOptions(fo);
  const auto t1 = std::chrono::steady_clock::now();
  std::thread other([&] { (void)store.GetBytes("k"); });
  (void)store.GetBytes("k");
  other.join();
  EXPECT_GE(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(90));
}

TEST(FaultInjectionTest, CallersThatRetrySucceed) {
  FaultOptions fo;
  fo.error_rate = 0.2;
  fo.drop_rate = 0.2;
  fo.seed = 7;
  FaultInjectionObjectStore store(NewMemObjectStore(), fo);
  for (int i = 0; i < 30; ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::string data = Pattern(i, 10000 + i);
    int tries = 0;
    while (!store.PutBytes(key, data).ok()) ASSERT_LT(++tries, 50);
    Result<std::string> got = Status::Unavailable("");
    tries = 0;
    while (!(got = store.GetBytes(key)).ok()) ASSERT_LT(++tries, 50);
    EXPECT_TRUE(*got == data);
  }
}

}  // namespace
}  // namespace strata::objstore
