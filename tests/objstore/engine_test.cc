#include <strata/objstore/local_engine.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

#include "objstore/data_file.h"
#include "objstore/local_engine_internal.h"
#include "objstore/record.h"
#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

namespace fs = std::filesystem;
using ::strata::testing::TempDir;

// Deterministic, position-addressable test bytes.
char ByteAt(uint64_t i, uint32_t seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  x ^= x >> 29;
  return static_cast<char>(x * 0xBF58476D1CE4E5B9ull >> 56);
}
std::string Bytes(uint64_t n, uint32_t seed = 1, uint64_t start = 0) {
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; ++i) s[i] = ByteAt(start + i, seed);
  return s;
}

// Serves `data` in reads of at most `chunk` bytes (odd sizes exercise buffering).
class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string data, size_t chunk = 7777)
      : data_(std::move(data)), chunk_(chunk) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t m = std::min({n, chunk_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, m);
    pos_ += m;
    return m;
  }

 private:
  std::string data_;
  size_t chunk_;
  size_t pos_ = 0;
};

// Generates `size` bytes on the fly without holding them.
class GeneratedSource : public ByteSource {
 public:
  GeneratedSource(uint64_t size, uint32_t seed, size_t chunk = 100003)
      : size_(size), seed_(seed), chunk_(chunk) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t m = static_cast<size_t>(std::min<uint64_t>({n, chunk_, size_ - pos_}));
    for (size_t i = 0; i < m; ++i) buf[i] = ByteAt(pos_ + i, seed_);
    pos_ += m;
    return m;
  }

 private:
  uint64_t size_;
  uint32_t seed_;
  size_t chunk_;
  uint64_t pos_ = 0;
};

class FailingSource : public ByteSource {
 public:
  Result<size_t> Read(char* buf, size_t n) override {
    if (calls_++ < 3) {
      size_t m = std::min<size_t>(n, 100000);
      std::memset(buf, 'x', m);
      return m;
    }
    return Status::IOError("connection reset by peer");
  }

 private:
  int calls_ = 0;
};

// Collects what a Stream hands out, reading file pieces with pread as sendfile would.
class CollectSink : public ChunkSink {
 public:
  Status WriteMemory(const char* data, size_t n) override {
    out.append(data, n);
    ++memory_calls;
    return Status::Ok();
  }
  Status WriteFile(int fd, uint64_t offset, uint64_t n) override {
    size_t old = out.size();
    out.resize(old + n);
    ssize_t r = ::pread(fd, out.data() + old, n, static_cast<off_t>(offset));
    if (r != static_cast<ssize_t>(n)) return Status::IOError("short pread in test sink");
    ++file_calls;
    return Status::Ok();
  }
  std::string out;
  int memory_calls = 0;
  int file_calls = 0;
};

class LocalEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.data_dir = dir_.Join("store");
    options_.sync = false;  // durability is the crash test's job; keep unit tests fast
    ASSERT_NO_FATAL_FAILURE(Reopen());
    ASSERT_OK(engine_->CreateBucket("b", "alice"));
  }

  void Reopen() {
    engine_.reset();
    ASSERT_OK_AND_ASSIGN(engine_, LocalEngine::Open(options_));
  }

  Result<ObjectMeta> Put(std::string_view key, std::string data, PutOptions o = {},
                         std::string_view bucket = "b") {
    StringSource src(std::move(data));
    return engine_->PutObject(bucket, key, src, std::move(o));
  }

  Result<std::string> Get(std::string_view key, std::string_view bucket = "b") {
    STRATA_ASSIGN_OR_RETURN(auto r, engine_->OpenObject(bucket, key));
    CollectSink sink;
    STRATA_RETURN_IF_ERROR(r->Stream(0, UINT64_MAX, sink));
    if (sink.out.size() != r->meta().size) return Status::Internal("size mismatch");
    return sink.out;
  }

  std::vector<std::string> DataFiles() {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(options_.data_dir + "/data")) {
      if (e.is_regular_file()) out.push_back(e.path().string());
    }
    return out;
  }
  size_t TmpFiles() {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(options_.data_dir + "/tmp")) n += e.exists();
    return n;
  }

  uint64_t Bodies() { return internal::CountBodyRecordsForTest(*engine_); }

  static std::string Md5Hex(std::string_view s) { return HexEncode(Md5(s)); }

  TempDir dir_;
  EngineOptions options_;
  std::unique_ptr<LocalEngine> engine_;
};

// ---- buckets ------------------------------------------------------------------

TEST_F(LocalEngineTest, BucketLifecycle) {
  EXPECT_STATUS_CODE(engine_->CreateBucket("b", "bob"), StatusCode::kAlreadyExists);
  ASSERT_OK(engine_->CreateBucket("zeta", "bob"));
  ASSERT_OK(engine_->CreateBucket("alpha", "carol"));
  ASSERT_OK_AND_ASSIGN(auto list, engine_->ListBuckets());
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].name, "alpha");
  EXPECT_EQ(list[1].name, "b");
  EXPECT_EQ(list[2].name, "zeta");
  ASSERT_OK_AND_ASSIGN(BucketInfo info, engine_->GetBucket("b"));
  EXPECT_EQ(info.owner, "alice");
  EXPECT_FALSE(info.public_read);
  EXPECT_GT(info.created_ns, 0);

  ASSERT_OK(engine_->SetBucketPublicRead("b", true));
  ASSERT_OK(Put("k", "v"));
  Status st = engine_->DeleteBucket("b");
  EXPECT_EQ(st.code(), StatusCode::kPreconditionFailed);
  EXPECT_NE(st.message().find("bucket \"b\" is not empty"), std::string::npos) << st.ToString();

  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(info, engine_->GetBucket("b"));
  EXPECT_TRUE(info.public_read);
  EXPECT_EQ(info.owner, "alice");

  ASSERT_OK(engine_->DeleteObject("b", "k"));
  ASSERT_OK(engine_->DeleteBucket("b"));
  ASSERT_OK(engine_->DeleteBucket("zeta"));
  auto missing = engine_->GetBucket("b");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.error().message(), "bucket \"b\" does not exist");
  EXPECT_STATUS_CODE(engine_->DeleteBucket("b"), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->SetBucketPublicRead("b", true), StatusCode::kNotFound);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(list, engine_->ListBuckets());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "alpha");
}

TEST_F(LocalEngineTest, OpenRejectsBadOptions) {
  EngineOptions o;
  EXPECT_STATUS_CODE(LocalEngine::Open(o), StatusCode::kInvalidArgument);  // no data_dir
  o.data_dir = dir_.Join("other");
  o.block_size = 0;
  EXPECT_STATUS_CODE(LocalEngine::Open(o), StatusCode::kInvalidArgument);
  o.block_size = 4096;
  o.inline_threshold = 1ull << 30;
  EXPECT_STATUS_CODE(LocalEngine::Open(o), StatusCode::kInvalidArgument);
  // The directory is locked by the open engine.
  EXPECT_FALSE(LocalEngine::Open(options_).has_value());
}

TEST_F(LocalEngineTest, MissingBucketAndObjectErrorsNameThem) {
  auto r = Put("k", "v", {}, "nope");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.error().message(), "bucket \"nope\" does not exist");
  auto h = engine_->HeadObject("b", "missing");
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(h.error().message(), "object \"missing\" does not exist in bucket \"b\"");
  EXPECT_STATUS_CODE(engine_->OpenObject("b", "missing"), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->ListObjects("nope", {}), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->DeleteObject("nope", "k"), StatusCode::kNotFound);
  EXPECT_OK(engine_->DeleteObject("b", "missing"));  // S3: deleting a missing key is fine
}

// ---- put / get ----------------------------------------------------------------

TEST_F(LocalEngineTest, SmallObjectIsInlineAndRoundTrips) {
  PutOptions o;
  o.meta.content_type = "text/plain";
  o.meta.user_meta["color"] = "blue";
  o.meta.headers["cache-control"] = "no-cache";
  o.meta.owner = "alice";
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("hello.txt", "hello world", o));
  EXPECT_EQ(m.key, "hello.txt");
  EXPECT_EQ(m.size, 11u);
  EXPECT_EQ(m.etag, Md5Hex("hello world"));
  EXPECT_GT(m.mtime_ns, 0);
  EXPECT_TRUE(DataFiles().empty());

  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "hello.txt"));
  EXPECT_EQ(h.key, "hello.txt");
  EXPECT_EQ(h.etag, m.etag);
  EXPECT_EQ(h.mtime_ns, m.mtime_ns);
  EXPECT_EQ(h.content_type, "text/plain");
  EXPECT_EQ(h.user_meta.at("color"), "blue");
  EXPECT_EQ(h.headers.at("cache-control"), "no-cache");
  EXPECT_EQ(h.owner, "alice");

  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "hello.txt"));
  CollectSink sink;
  ASSERT_OK(r->Stream(6, 5, sink));
  EXPECT_EQ(sink.out, "world");
  EXPECT_EQ(sink.file_calls, 0);
  ASSERT_OK_AND_ASSIGN(std::string part, r->ReadRange(0, 5));
  EXPECT_EQ(part, "hello");
  EXPECT_EQ(engine_->GetStats().objects_put, 1u);
}

TEST_F(LocalEngineTest, EmptyObject) {
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("empty", ""));
  EXPECT_EQ(m.size, 0u);
  EXPECT_EQ(m.etag, "d41d8cd98f00b204e9800998ecf8427e");
  ASSERT_OK_AND_ASSIGN(std::string data, Get("empty"));
  EXPECT_EQ(data, "");
}

TEST_F(LocalEngineTest, LargeObjectStreamsThroughDataFile) {
  constexpr uint64_t kSize = 20 * 1024 * 1024 + 12345;
  GeneratedSource src(kSize, 7);
  PutOptions o;
  o.checksum_algorithm = ChecksumAlgorithm::kCrc32c;
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, engine_->PutObject("b", "big", src, o));
  const std::string expected = Bytes(kSize, 7);
  EXPECT_EQ(m.size, kSize);
  EXPECT_EQ(m.etag, Md5Hex(expected));
  uint32_t crc = Crc32c(0, expected.data(), expected.size());
  std::string be = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                    static_cast<char>(crc >> 8), static_cast<char>(crc)};
  EXPECT_EQ(m.checksum, Base64Encode(be));
  EXPECT_EQ(DataFiles().size(), 1u);
  EXPECT_EQ(TmpFiles(), 0u);

  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "big"));
  CollectSink sink;
  ASSERT_OK(r->Stream(0, kSize, sink));
  EXPECT_GT(sink.file_calls, 1);  // handed out window by window
  EXPECT_EQ(sink.memory_calls, 0);
  EXPECT_TRUE(sink.out == expected);
}

TEST_F(LocalEngineTest, RangedReadsAcrossBlockBoundaries) {
  options_.block_size = 4096;
  options_.inline_threshold = 1024;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  const std::string data = Bytes(50000, 3);
  ASSERT_OK(Put("obj", data));
  ASSERT_EQ(DataFiles().size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "obj"));
  struct Range {
    uint64_t off, len;
  };
  for (Range rg : std::vector<Range>{{0, 1},
                                     {4095, 2},
                                     {4096, 4096},
                                     {100, 30000},
                                     {49999, 1},
                                     {8191, 8194},
                                     {0, 50000},
                                     {40000, 999999}}) {
    CollectSink sink;
    ASSERT_OK(r->Stream(rg.off, rg.len, sink)) << rg.off;
    uint64_t n = std::min<uint64_t>(rg.len, data.size() - rg.off);
    EXPECT_EQ(sink.out, data.substr(rg.off, n)) << rg.off << "+" << rg.len;
    ASSERT_OK_AND_ASSIGN(std::string got, r->ReadRange(rg.off, rg.len));
    EXPECT_EQ(got, data.substr(rg.off, n));
  }
  CollectSink at_end;
  ASSERT_OK(r->Stream(50000, 10, at_end));
  EXPECT_TRUE(at_end.out.empty());
  EXPECT_STATUS_CODE(r->Stream(50001, 1, at_end), StatusCode::kInvalidArgument);
}

TEST_F(LocalEngineTest, OverwriteRemovesOldDataFile) {
  ASSERT_OK(Put("k", Bytes(200000, 1)));
  auto first = DataFiles();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_OK(Put("k", Bytes(300000, 2)));
  auto second = DataFiles();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0], second[0]);
  ASSERT_OK(Put("k", "small now"));
  EXPECT_TRUE(DataFiles().empty());
  ASSERT_OK_AND_ASSIGN(std::string data, Get("k"));
  EXPECT_EQ(data, "small now");
  ASSERT_OK(Put("k", Bytes(100000, 3)));
  ASSERT_OK(engine_->DeleteObject("b", "k"));
  EXPECT_TRUE(DataFiles().empty());
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "k"), StatusCode::kNotFound);
}

TEST_F(LocalEngineTest, NestedKeysCoexist) {
  const std::string ab = Bytes(100000, 1), abc = Bytes(120000, 2);
  ASSERT_OK(Put("a/b", ab));
  ASSERT_OK(Put("a/b/c", abc));
  ASSERT_OK(Put("a/b/", "dir marker"));
  ASSERT_OK_AND_ASSIGN(std::string got, Get("a/b"));
  EXPECT_TRUE(got == ab);
  ASSERT_OK_AND_ASSIGN(got, Get("a/b/c"));
  EXPECT_TRUE(got == abc);
  ASSERT_OK_AND_ASSIGN(got, Get("a/b/"));
  EXPECT_EQ(got, "dir marker");
  ASSERT_OK_AND_ASSIGN(ListResult l, engine_->ListObjects("b", {}));
  ASSERT_EQ(l.objects.size(), 3u);
  EXPECT_EQ(l.objects[0].key, "a/b");
  EXPECT_EQ(l.objects[1].key, "a/b/");
  EXPECT_EQ(l.objects[2].key, "a/b/c");
}

TEST_F(LocalEngineTest, KeyValidationAndOddBytes) {
  EXPECT_STATUS_CODE(Put("", "x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(Put(std::string(1025, 'k'), "x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(Put(std::string("a\0b", 3), "x"), StatusCode::kInvalidArgument);
  ASSERT_OK(Put(std::string(1024, 'k'), "max"));
  const std::string odd = "dir/\x01\x02\x7f/\xc3\xa9t\xc3\xa9 \xe2\x82\xac";
  ASSERT_OK(Put(odd, "odd"));
  ASSERT_OK(Put("dir/\x01", "one"));
  ASSERT_OK_AND_ASSIGN(std::string got, Get(odd));
  EXPECT_EQ(got, "odd");
  ListOptions lo;
  lo.prefix = "dir/";
  ASSERT_OK_AND_ASSIGN(ListResult l, engine_->ListObjects("b", lo));
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(l.objects[0].key, "dir/\x01");
  EXPECT_EQ(l.objects[1].key, odd);
}

TEST_F(LocalEngineTest, IncompleteBodyIsRejected) {
  for (size_t size : {100u, 200000u}) {
    PutOptions o;
    o.expected_size = size + 1;
    auto r = Put("short", std::string(size, 'x'), o);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(StartsWith(r.error().message(), "IncompleteBody: ")) << r.error().ToString();
    o.expected_size = size - 1;
    r = Put("long", std::string(size, 'x'), o);
    ASSERT_FALSE(r.has_value());
    EXPECT_TRUE(StartsWith(r.error().message(), "IncompleteBody: ")) << r.error().ToString();
    o.expected_size = size;
    EXPECT_OK(Put("exact", std::string(size, 'x'), o));
  }
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "short"), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "long"), StatusCode::kNotFound);
  EXPECT_EQ(DataFiles().size(), 1u);  // only "exact"
  EXPECT_EQ(TmpFiles(), 0u);
}

TEST_F(LocalEngineTest, SourceErrorAbortsWriteAndCleansUp) {
  FailingSource src;
  auto r = engine_->PutObject("b", "k", src, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kIOError);
  EXPECT_EQ(r.error().message(), "connection reset by peer");
  EXPECT_TRUE(DataFiles().empty());
  EXPECT_EQ(TmpFiles(), 0u);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(engine_->GetStats().orphans_removed_at_open, 0u);  // nothing was left behind
}

TEST_F(LocalEngineTest, BeforeCommitSeesDigestAndCanRejectOrAmend) {
  for (size_t size : {5000u, 300000u}) {
    const std::string data = Bytes(size, 9);
    const std::string key = "k" + std::to_string(size);
    PutOptions o;
    o.checksum_algorithm = ChecksumAlgorithm::kSha256;
    WriteDigest seen;
    o.before_commit = [&](const WriteDigest& d, ObjectMeta& meta) {
      seen = d;
      EXPECT_EQ(meta.size, d.size);
      EXPECT_EQ(meta.checksum, Base64Encode(d.checksum));
      return Status::InvalidArgument("BadDigest: Content-MD5 does not match");
    };
    auto r = Put(key, data, o);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(), "BadDigest: Content-MD5 does not match");
    EXPECT_EQ(seen.size, size);
    EXPECT_EQ(seen.md5, Md5(data));
    EXPECT_EQ(seen.checksum, Sha256(data));
    EXPECT_STATUS_CODE(engine_->HeadObject("b", key), StatusCode::kNotFound);
    EXPECT_TRUE(DataFiles().empty());

    o.before_commit = [](const WriteDigest&, ObjectMeta& meta) {
      meta.content_type = "application/x-amended";
      return Status::Ok();
    };
    ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put(key, data, o));
    EXPECT_EQ(m.content_type, "application/x-amended");
    EXPECT_EQ(m.checksum_algorithm, ChecksumAlgorithm::kSha256);
    ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", key));
    EXPECT_EQ(h.content_type, "application/x-amended");
    EXPECT_EQ(h.checksum, Base64Encode(Sha256(data)));
  }
}

// ---- listing ------------------------------------------------------------------

TEST_F(LocalEngineTest, ListPaginatesWithStartAfter) {
  std::vector<std::string> keys;
  for (int i = 0; i < 95; ++i) {
    char k[16];
    std::snprintf(k, sizeof(k), "k%03d", i);
    keys.push_back(k);
    ASSERT_OK(Put(k, k));
  }
  ListOptions lo;
  lo.max_keys = 10;
  std::vector<std::string> seen;
  int pages = 0;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(ListResult l, engine_->ListObjects("b", lo));
    ++pages;
    for (const ObjectMeta& m : l.objects) {
      seen.push_back(m.key);
      EXPECT_EQ(m.size, 4u);
      EXPECT_EQ(m.etag, Md5Hex(m.key));
    }
    if (!l.truncated) {
      EXPECT_TRUE(l.next_marker.empty());
      break;
    }
    EXPECT_EQ(l.next_marker, l.objects.back().key);
    lo.start_after = l.next_marker;
  }
  EXPECT_EQ(pages, 10);
  EXPECT_EQ(seen, keys);

  lo = {};
  lo.max_keys = 0;
  ASSERT_OK_AND_ASSIGN(ListResult zero, engine_->ListObjects("b", lo));
  EXPECT_TRUE(zero.objects.empty());
  EXPECT_TRUE(zero.truncated);

  lo = {};
  lo.prefix = "k09";
  lo.start_after = "k091";
  ASSERT_OK_AND_ASSIGN(ListResult tail, engine_->ListObjects("b", lo));
  ASSERT_EQ(tail.objects.size(), 3u);
  EXPECT_EQ(tail.objects[0].key, "k092");
  EXPECT_FALSE(tail.truncated);
}

TEST_F(LocalEngineTest, DelimiterListingSeeksPastCommonPrefixes) {
  for (int i = 0; i < 3000; ++i) ASSERT_OK(Put("big/" + std::to_string(i), "x"));
  for (const char* k : {"a", "c/1", "c/2", "c/3/4", "z"}) ASSERT_OK(Put(k, "y"));

  ListOptions lo;
  lo.delimiter = "/";
  uint64_t before = internal::ListIteratorSteps(*engine_);
  ASSERT_OK_AND_ASSIGN(ListResult l, engine_->ListObjects("b", lo));
  uint64_t steps = internal::ListIteratorSteps(*engine_) - before;
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(l.objects[0].key, "a");
  EXPECT_EQ(l.objects[1].key, "z");
  EXPECT_EQ(l.common_prefixes, (std::vector<std::string>{"big/", "c/"}));
  EXPECT_FALSE(l.truncated);
  EXPECT_LE(steps, 10u) << "a page with a delimiter must not iterate the keys under a prefix";

  // Prefixes count toward max_keys and the marker resumes after a prefix.
  lo.max_keys = 2;
  ASSERT_OK_AND_ASSIGN(l, engine_->ListObjects("b", lo));
  EXPECT_EQ(l.objects.size(), 1u);
  EXPECT_EQ(l.common_prefixes, std::vector<std::string>{"big/"});
  EXPECT_TRUE(l.truncated);
  EXPECT_EQ(l.next_marker, "big/");
  lo.start_after = l.next_marker;
  ASSERT_OK_AND_ASSIGN(l, engine_->ListObjects("b", lo));
  EXPECT_EQ(l.common_prefixes, std::vector<std::string>{"c/"});
  ASSERT_EQ(l.objects.size(), 1u);
  EXPECT_EQ(l.objects[0].key, "z");
  EXPECT_FALSE(l.truncated);

  // Inside the big prefix a page costs a page.
  lo = {};
  lo.prefix = "big/";
  lo.delimiter = "/";
  lo.max_keys = 5;
  before = internal::ListIteratorSteps(*engine_);
  ASSERT_OK_AND_ASSIGN(l, engine_->ListObjects("b", lo));
  steps = internal::ListIteratorSteps(*engine_) - before;
  EXPECT_EQ(l.objects.size(), 5u);
  EXPECT_TRUE(l.truncated);
  EXPECT_LE(steps, 7u);

  // Nested prefixes under c/.
  lo = {};
  lo.prefix = "c/";
  lo.delimiter = "/";
  ASSERT_OK_AND_ASSIGN(l, engine_->ListObjects("b", lo));
  ASSERT_EQ(l.objects.size(), 2u);
  EXPECT_EQ(l.objects[1].key, "c/2");
  EXPECT_EQ(l.common_prefixes, std::vector<std::string>{"c/3/"});

  // Multi-character delimiter.
  lo = {};
  lo.delimiter = "g/";
  lo.max_keys = 1000;
  ASSERT_OK_AND_ASSIGN(l, engine_->ListObjects("b", lo));
  EXPECT_EQ(l.common_prefixes, std::vector<std::string>{"big/"});
  EXPECT_EQ(l.objects.size(), 5u);
}

// ---- conditional writes -------------------------------------------------------

TEST_F(LocalEngineTest, ConditionalWrites) {
  PutOptions none;
  none.if_none_match_star = true;
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("k", "one", none));
  EXPECT_STATUS_CODE(Put("k", "two", none), StatusCode::kPreconditionFailed);
  EXPECT_STATUS_CODE(Put("k", Bytes(200000), none), StatusCode::kPreconditionFailed);

  PutOptions match;
  match.if_match = "0123456789abcdef0123456789abcdef";
  EXPECT_STATUS_CODE(Put("k", "two", match), StatusCode::kPreconditionFailed);
  match.if_match = m.etag;
  ASSERT_OK_AND_ASSIGN(ObjectMeta m2, Put("k", "two", match));
  match.if_match = "\"" + m2.etag + "\"";  // tolerate quotes
  ASSERT_OK(Put("k", "three", match));
  match.if_match = "*";
  EXPECT_OK(Put("k", "four", match));
  EXPECT_STATUS_CODE(Put("missing", "x", match), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(std::string data, Get("k"));
  EXPECT_EQ(data, "four");
  EXPECT_TRUE(DataFiles().empty());
}

// Runs a conditional PutObject that stalls in before_commit until released.
class StalledWriter {
 public:
  StalledWriter(LocalEngine* engine, std::string key, std::string data, PutOptions o) {
    auto release = release_.get_future().share();
    o.before_commit = [this, release](const WriteDigest&, ObjectMeta&) {
      entered_.set_value();
      release.wait();
      return Status::Ok();
    };
    thread_ = std::thread([this, engine, key, data, o = std::move(o)]() mutable {
      StringSource src(data);
      result_.emplace(engine->PutObject("b", key, src, std::move(o)));
    });
    entered_.get_future().wait();
  }
  Result<ObjectMeta> Finish() {
    release_.set_value();
    thread_.join();
    return std::move(*result_);
  }

 private:
  std::promise<void> entered_, release_;
  std::thread thread_;
  std::optional<Result<ObjectMeta>> result_;
};

TEST_F(LocalEngineTest, ConditionalWriteConflictsWithConcurrentWrite) {
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("k", "same"));
  {
    // Condition still holds at commit (same content -> same ETag), but the
    // object was rewritten meanwhile: 409.
    PutOptions o;
    o.if_match = m.etag;
    StalledWriter w(engine_.get(), "k", Bytes(150000), o);
    ASSERT_OK(Put("k", "same"));
    EXPECT_STATUS_CODE(w.Finish(), StatusCode::kConflict);
  }
  {
    // Created and deleted while we uploaded: If-None-Match still holds -> 409.
    PutOptions o;
    o.if_none_match_star = true;
    StalledWriter w(engine_.get(), "fresh", "mine", o);
    ASSERT_OK(Put("fresh", "theirs"));
    ASSERT_OK(engine_->DeleteObject("b", "fresh"));
    EXPECT_STATUS_CODE(w.Finish(), StatusCode::kConflict);
  }
  {
    // Created meanwhile: the condition itself fails -> 412.
    PutOptions o;
    o.if_none_match_star = true;
    StalledWriter w(engine_.get(), "fresh2", "mine", o);
    ASSERT_OK(Put("fresh2", "theirs"));
    EXPECT_STATUS_CODE(w.Finish(), StatusCode::kPreconditionFailed);
    ASSERT_OK_AND_ASSIGN(std::string data, Get("fresh2"));
    EXPECT_EQ(data, "theirs");
  }
  {
    // Writes to other keys do not disturb a conditional write.
    PutOptions o;
    o.if_none_match_star = true;
    StalledWriter w(engine_.get(), "fresh3", "mine", o);
    for (int i = 0; i < 300; ++i) ASSERT_OK(Put("other" + std::to_string(i), "x"));
    EXPECT_OK(w.Finish());
  }
  EXPECT_TRUE(DataFiles().empty());  // the losers' files are gone
  EXPECT_EQ(TmpFiles(), 0u);
}

TEST_F(LocalEngineTest, ConcurrentWritersToOneKeyLeaveOneFile) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        GeneratedSource src(70000 + t * 1000 + i, t);
        if (!engine_->PutObject("b", "hot", src, {}).has_value()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(DataFiles().size(), 1u);
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, engine_->HeadObject("b", "hot"));
  ASSERT_OK_AND_ASSIGN(std::string data, Get("hot"));
  EXPECT_EQ(Md5Hex(data), m.etag);
}

// ---- readers ------------------------------------------------------------------

TEST_F(LocalEngineTest, ReaderSurvivesConcurrentDeleteAndOverwrite) {
  const std::string data = Bytes(3 * 1024 * 1024 + 5, 4);
  ASSERT_OK(Put("k", data));
  ASSERT_OK_AND_ASSIGN(auto reader, engine_->OpenObject("b", "k"));
  ASSERT_OK(engine_->DeleteObject("b", "k"));
  ASSERT_OK(Put("k", Bytes(2000000, 5)));
  ASSERT_OK(engine_->DeleteObject("b", "k"));
  EXPECT_TRUE(DataFiles().empty());  // unlinked, still open by the reader
  CollectSink sink;
  ASSERT_OK(reader->Stream(0, UINT64_MAX, sink));
  EXPECT_TRUE(sink.out == data);
  EXPECT_EQ(reader->meta().etag, Md5Hex(data));
}

class CorruptionTest : public LocalEngineTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    SetDataFileMmapForTest(GetParam());
    LocalEngineTest::SetUp();
  }
  void TearDown() override { SetDataFileMmapForTest(true); }
};

INSTANTIATE_TEST_SUITE_P(MmapAndPread, CorruptionTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Mmap" : "Pread"; });

TEST_P(CorruptionTest, CorruptedDataFileYieldsCorruptionNotBytes) {
  options_.block_size = 4096;
  options_.inline_threshold = 100;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  const std::string data = Bytes(3 * 4096 + 10, 6);
  ASSERT_OK(Put("victim", data));
  std::string path = internal::FirstDataFilePath(*engine_, "b", "victim");
  ASSERT_FALSE(path.empty());
  {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, 4096 + 17), 1);
    c ^= 0x20;
    ASSERT_EQ(::pwrite(fd, &c, 1, 4096 + 17), 1);
    ::close(fd);
  }
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "victim"));
  CollectSink sink;
  Status st = r->Stream(0, UINT64_MAX, sink);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("\"victim\""), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("block 1"), std::string::npos) << st.ToString();
  EXPECT_TRUE(sink.out.empty()) << "unverified bytes were handed out";
  EXPECT_STATUS_CODE(r->ReadRange(4000, 200), StatusCode::kCorruption);
  // Blocks that are intact stay readable.
  CollectSink ok_sink;
  ASSERT_OK(r->Stream(8192, 100, ok_sink));
  EXPECT_EQ(ok_sink.out, data.substr(8192, 100));
  ASSERT_OK_AND_ASSIGN(std::string head, r->ReadRange(0, 4096));
  EXPECT_EQ(head, data.substr(0, 4096));

  // A truncated file (lost footer) is corruption too.
  ASSERT_OK(Put("cut", data));
  path = internal::FirstDataFilePath(*engine_, "b", "cut");
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(data.size())), 0);
  ASSERT_OK_AND_ASSIGN(r, engine_->OpenObject("b", "cut"));
  EXPECT_STATUS_CODE(r->ReadRange(0, 10), StatusCode::kCorruption);
}

TEST_P(CorruptionTest, LargeFileStopsBeforeTheBadWindow) {
  const uint64_t kMiB = 1 << 20;
  const std::string data = Bytes(9 * kMiB + 77, 12);
  ASSERT_OK(Put("large", data));
  const std::string path = internal::FirstDataFilePath(*engine_, "b", "large");
  {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, 6 * kMiB + 5), 1);
    c ^= 0x01;
    ASSERT_EQ(::pwrite(fd, &c, 1, 6 * kMiB + 5), 1);
    ::close(fd);
  }
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "large"));
  CollectSink sink;
  Status st = r->Stream(0, UINT64_MAX, sink);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("block 6"), std::string::npos) << st.ToString();
  // Only whole verified windows before the bad block were handed out.
  EXPECT_EQ(sink.out.size(), 4 * kMiB);
  EXPECT_TRUE(sink.out == data.substr(0, 4 * kMiB));
  CollectSink tail;
  ASSERT_OK(r->Stream(7 * kMiB, UINT64_MAX, tail));
  EXPECT_TRUE(tail.out == data.substr(7 * kMiB));
  ASSERT_OK_AND_ASSIGN(std::string head, r->ReadRange(kMiB - 10, 2 * kMiB));
  EXPECT_TRUE(head == data.substr(kMiB - 10, 2 * kMiB));
  EXPECT_STATUS_CODE(r->ReadRange(6 * kMiB, 10), StatusCode::kCorruption);
}

// ---- persistence and crash leftovers -------------------------------------------

TEST_F(LocalEngineTest, ReopenKeepsEverything) {
  const std::string big = Bytes(1500000, 8);
  PutOptions o;
  o.meta.tags["team"] = "ml";
  ASSERT_OK(Put("small", "tiny", o));
  ASSERT_OK(Put("big", big));
  ASSERT_OK_AND_ASSIGN(std::string upload, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(engine_->GetStats().orphans_removed_at_open, 0u);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("small"));
  EXPECT_EQ(got, "tiny");
  ASSERT_OK_AND_ASSIGN(got, Get("big"));
  EXPECT_TRUE(got == big);
  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "small"));
  EXPECT_EQ(h.tags.at("team"), "ml");
  ASSERT_OK_AND_ASSIGN(auto uploads, engine_->ListMultipartUploads("b", ""));
  ASSERT_EQ(uploads.size(), 1u);
  EXPECT_EQ(uploads[0].upload_id, upload);
}

TEST_F(LocalEngineTest, OpenRemovesOrphans) {
  ASSERT_OK(Put("keep", Bytes(100000, 1)));
  // A crash mid-write leaves a tmp file; one between rename and commit leaves a
  // data file named by a G record.
  ASSERT_TRUE(testing::WriteFile(options_.data_dir + "/tmp/0123456789abcdef0123456789abcdef",
                                 "partial"));
  const std::string id = "fedcba9876543210fedcba9876543210";
  const std::string orphan = internal::DataFilePathForTest(*engine_, id);
  fs::create_directories(fs::path(orphan).parent_path());
  ASSERT_TRUE(testing::WriteFile(orphan, "orphan"));
  ASSERT_OK(internal::AddGarbageRecordForTest(*engine_, id));
  ASSERT_EQ(DataFiles().size(), 2u);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(engine_->GetStats().orphans_removed_at_open, 2u);
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_EQ(TmpFiles(), 0u);
  EXPECT_EQ(DataFiles().size(), 1u);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("keep"));
  EXPECT_EQ(got.size(), 100000u);

  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(engine_->GetStats().orphans_removed_at_open, 0u);  // records are gone too
}

// ---- multipart ----------------------------------------------------------------

class MultipartTest : public LocalEngineTest {
 protected:
  Result<PartInfo> Upload(const std::string& id, int n, std::string data, PutOptions o = {},
                          std::string_view key = "mp") {
    StringSource src(std::move(data));
    return engine_->UploadPart("b", key, id, n, src, std::move(o));
  }
  CompleteOptions Small() {
    CompleteOptions c;
    c.min_part_size = 1000;
    return c;
  }
};

TEST_F(MultipartTest, CompleteConcatenatesPartsByReference) {
  options_.block_size = 4096;
  options_.inline_threshold = 2000;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  PutOptions create;
  create.meta.content_type = "video/mp4";
  create.meta.user_meta["k"] = "v";
  create.meta.owner = "alice";
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", create));
  EXPECT_EQ(id.size(), 32u);
  const std::string p1 = Bytes(10000, 1), p2 = Bytes(1500, 2), p3 = Bytes(9000, 3),
                    p4 = Bytes(700, 4);
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, p1));
  ASSERT_OK_AND_ASSIGN(PartInfo i2, Upload(id, 2, p2));  // inline part
  ASSERT_OK_AND_ASSIGN(PartInfo i3, Upload(id, 3, p3));
  ASSERT_OK_AND_ASSIGN(PartInfo i4, Upload(id, 4, p4));
  EXPECT_EQ(i1.etag, Md5Hex(p1));
  EXPECT_EQ(i2.size, 1500u);
  const size_t files_before = DataFiles().size();
  EXPECT_EQ(files_before, 2u);

  ASSERT_OK_AND_ASSIGN(auto parts, engine_->ListParts("b", "mp", id));
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2].number, 3);
  EXPECT_EQ(parts[2].etag, i3.etag);

  ASSERT_OK_AND_ASSIGN(PutOptions stored, engine_->GetUpload("b", "mp", id));
  EXPECT_EQ(stored.meta.content_type, "video/mp4");
  ASSERT_OK_AND_ASSIGN(auto uploads, engine_->ListMultipartUploads("b", "m"));
  ASSERT_EQ(uploads.size(), 1u);
  EXPECT_EQ(uploads[0].key, "mp");
  EXPECT_EQ(uploads[0].owner, "alice");
  ASSERT_OK_AND_ASSIGN(uploads, engine_->ListMultipartUploads("b", "x"));
  EXPECT_TRUE(uploads.empty());

  // Part 3 is left out: its file becomes garbage.
  std::vector<CompletePart> cps = {{1, i1.etag, ""}, {2, "\"" + i2.etag + "\"", ""},
                                   {4, i4.etag, ""}};
  ASSERT_OK_AND_ASSIGN(ObjectMeta m,
                       engine_->CompleteMultipartUpload("b", "mp", id, cps, Small()));
  const std::string whole = p1 + p2 + p4;
  EXPECT_EQ(m.size, whole.size());
  EXPECT_EQ(m.etag, HexEncode(Md5(Md5(p1) + Md5(p2) + Md5(p4))) + "-3");
  EXPECT_EQ(m.content_type, "video/mp4");
  ASSERT_EQ(m.parts.size(), 3u);
  EXPECT_EQ(m.parts[1].number, 2);
  EXPECT_EQ(m.parts[1].size, 1500u);
  EXPECT_EQ(m.parts[2].number, 4);
  EXPECT_EQ(DataFiles().size(), 1u);  // part 1 kept by reference, part 3 collected

  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "mp"));
  EXPECT_EQ(h.etag, m.etag);
  EXPECT_EQ(h.user_meta.at("k"), "v");
  EXPECT_EQ(h.parts.size(), 3u);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("mp"));
  EXPECT_TRUE(got == whole);
  // Ranges across extent boundaries (file -> inline -> inline).
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "mp"));
  for (auto [off, len] : std::vector<std::pair<uint64_t, uint64_t>>{
           {9990, 20}, {9000, 2000}, {11499, 2}, {4095, 8000}, {0, whole.size()}}) {
    CollectSink sink;
    ASSERT_OK(r->Stream(off, len, sink));
    EXPECT_EQ(sink.out, whole.substr(off, len)) << off;
  }

  // The upload is gone.
  EXPECT_STATUS_CODE(Upload(id, 5, "x"), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->ListParts("b", "mp", id), StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(uploads, engine_->ListMultipartUploads("b", ""));
  EXPECT_TRUE(uploads.empty());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(got, Get("mp"));
  EXPECT_TRUE(got == whole);
}

// A retried Complete (same upload, same parts) answers the object that upload
// created, while it is still the key's object; otherwise NotFound.
TEST_F(MultipartTest, RetriedCompleteAnswersTheCompletedObject) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, Bytes(2000, 1)));
  const std::vector<CompletePart> parts = {{1, i1.etag, ""}};
  ASSERT_OK_AND_ASSIGN(ObjectMeta first,
                       engine_->CompleteMultipartUpload("b", "mp", id, parts, Small()));
  ASSERT_OK_AND_ASSIGN(ObjectMeta again,
                       engine_->CompleteMultipartUpload("b", "mp", id, parts, Small()));
  EXPECT_EQ(again.etag, first.etag);
  EXPECT_EQ(again.size, 2000u);
  EXPECT_STATUS_CODE(engine_->CompleteMultipartUpload("b", "mp", id, {{1, "0123", ""}}, Small()),
                     StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->CompleteMultipartUpload("b", "other", id, parts, Small()),
                     StatusCode::kNotFound);
  ASSERT_OK(engine_->DeleteObject("b", "mp"));
  EXPECT_STATUS_CODE(engine_->CompleteMultipartUpload("b", "mp", id, parts, Small()),
                     StatusCode::kNotFound);
}

TEST_F(MultipartTest, CompleteValidatesPartList) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, Bytes(2000, 1)));
  ASSERT_OK_AND_ASSIGN(PartInfo i2, Upload(id, 2, Bytes(500, 2)));
  ASSERT_OK_AND_ASSIGN(PartInfo i3, Upload(id, 3, Bytes(2000, 3)));
  auto expect_prefix = [&](std::vector<CompletePart> cps, std::string_view prefix) {
    auto r = engine_->CompleteMultipartUpload("b", "mp", id, cps, Small());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(StartsWith(r.error().message(), prefix)) << r.error().ToString();
  };
  expect_prefix({{2, i2.etag, ""}, {1, i1.etag, ""}}, "InvalidPartOrder: ");
  // A part listed twice is InvalidPart (S3); only a descending list is InvalidPartOrder.
  expect_prefix({{1, i1.etag, ""}, {1, i1.etag, ""}}, "InvalidPart: ");
  expect_prefix({{1, i1.etag, ""}, {7, i1.etag, ""}}, "InvalidPart: ");
  expect_prefix({{1, i2.etag, ""}}, "InvalidPart: ");
  expect_prefix({}, "InvalidPart: ");
  expect_prefix({{1, i1.etag, ""}, {2, i2.etag, ""}, {3, i3.etag, ""}}, "EntityTooSmall: ");
  CompleteOptions strict;  // 5 MiB minimum
  auto r = engine_->CompleteMultipartUpload("b", "mp", id, {{1, i1.etag, ""}, {3, i3.etag, ""}},
                                            strict);
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(StartsWith(r.error().message(), "EntityTooSmall: "));

  EXPECT_STATUS_CODE(Upload(id, 0, "x"), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(Upload(id, 10001, "x"), StatusCode::kInvalidArgument);
  auto wrong = Upload("00000000000000000000000000000000", 1, "x");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message(), "upload \"00000000000000000000000000000000\" does not exist");
  EXPECT_STATUS_CODE(Upload(id, 1, "x", {}, "other-key"), StatusCode::kNotFound);

  // The failed attempts changed nothing: a valid list still completes.
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "mp", id,
                                             {{1, i1.etag, ""}, {2, i2.etag, ""}}, Small()));
  ASSERT_OK_AND_ASSIGN(std::string got, Get("mp"));
  EXPECT_TRUE(got == Bytes(2000, 1) + Bytes(500, 2));
}

TEST_F(MultipartTest, ReuploadedPartReplacesTheOldOne) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK(Upload(id, 1, Bytes(200000, 1)));
  ASSERT_EQ(DataFiles().size(), 1u);
  ASSERT_OK_AND_ASSIGN(PartInfo again, Upload(id, 1, Bytes(150000, 2)));
  EXPECT_EQ(DataFiles().size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto parts, engine_->ListParts("b", "mp", id));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].size, 150000u);
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "mp", id, {{1, again.etag, ""}}, Small()));
  ASSERT_OK_AND_ASSIGN(std::string got, Get("mp"));
  EXPECT_TRUE(got == Bytes(150000, 2));
}

TEST_F(MultipartTest, AbortRemovesEverything) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK(Upload(id, 1, Bytes(200000, 1)));
  ASSERT_OK(Upload(id, 2, Bytes(100, 2)));
  ASSERT_OK(Upload(id, 3, Bytes(300000, 3)));
  EXPECT_EQ(DataFiles().size(), 2u);
  ASSERT_OK(engine_->AbortMultipartUpload("b", "mp", id));
  EXPECT_TRUE(DataFiles().empty());
  EXPECT_STATUS_CODE(engine_->AbortMultipartUpload("b", "mp", id), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->ListParts("b", "mp", id), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->GetUpload("b", "mp", id), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "mp"), StatusCode::kNotFound);
}

TEST_F(MultipartTest, DeleteBucketAbortsUploads) {
  ASSERT_OK(engine_->CreateBucket("tmpb", "alice"));
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("tmpb", "mp", {}));
  StringSource src(Bytes(200000, 1));
  ASSERT_OK(engine_->UploadPart("tmpb", "mp", id, 1, src, {}));
  EXPECT_EQ(DataFiles().size(), 1u);
  ASSERT_OK(engine_->DeleteBucket("tmpb"));
  EXPECT_TRUE(DataFiles().empty());
  ASSERT_OK(engine_->CreateBucket("tmpb", "alice"));
  ASSERT_OK_AND_ASSIGN(auto uploads, engine_->ListMultipartUploads("tmpb", ""));
  EXPECT_TRUE(uploads.empty());
}

TEST_F(MultipartTest, CompositeChecksum) {
  PutOptions create;
  create.checksum_algorithm = ChecksumAlgorithm::kCrc32c;
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", create));
  const std::string p1 = Bytes(3000, 1), p2 = Bytes(80000, 2);
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, p1));  // algorithm comes from the upload
  ASSERT_OK_AND_ASSIGN(PartInfo i2, Upload(id, 2, p2));
  auto crc_raw = [](const std::string& s) {
    uint32_t c = Crc32c(0, s.data(), s.size());
    return std::string{static_cast<char>(c >> 24), static_cast<char>(c >> 16),
                       static_cast<char>(c >> 8), static_cast<char>(c)};
  };
  EXPECT_EQ(i1.checksum, Base64Encode(crc_raw(p1)));
  EXPECT_EQ(i2.checksum, Base64Encode(crc_raw(p2)));
  auto bad = engine_->CompleteMultipartUpload(
      "b", "mp", id, {{1, i1.etag, i2.checksum}, {2, i2.etag, i2.checksum}}, Small());
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(StartsWith(bad.error().message(), "InvalidPart: "));
  ASSERT_OK_AND_ASSIGN(ObjectMeta m,
                       engine_->CompleteMultipartUpload(
                           "b", "mp", id, {{1, i1.etag, i1.checksum}, {2, i2.etag, ""}}, Small()));
  EXPECT_TRUE(m.checksum_composite);
  EXPECT_EQ(m.checksum_algorithm, ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(m.checksum, Base64Encode(crc_raw(crc_raw(p1) + crc_raw(p2))));
  ASSERT_EQ(m.parts.size(), 2u);
  EXPECT_EQ(m.parts[0].checksum, i1.checksum);
}

TEST_F(MultipartTest, CompleteBeforeCommitCanAmendOrAbort) {
  PutOptions create;
  create.checksum_algorithm = ChecksumAlgorithm::kCrc32;
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", create));
  const std::string p1 = Bytes(2000, 1), p2 = Bytes(70000, 2);
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, p1));
  ASSERT_OK_AND_ASSIGN(PartInfo i2, Upload(id, 2, p2));
  CompleteOptions c = Small();
  c.before_commit = [](ObjectMeta& meta) {
    EXPECT_EQ(meta.parts.size(), 2u);
    EXPECT_FALSE(meta.parts[1].checksum.empty());
    return Status::InvalidArgument("InvalidPart: refused by the frontend");
  };
  auto r = engine_->CompleteMultipartUpload("b", "mp", id, {{1, i1.etag, ""}, {2, i2.etag, ""}}, c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "InvalidPart: refused by the frontend");
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "mp"), StatusCode::kNotFound);
  // The upload survives a refused Complete; a full-object CRC can replace the composite one.
  c.before_commit = [&](ObjectMeta& meta) {
    uint32_t whole = Crc32(0, (p1 + p2).data(), p1.size() + p2.size());
    meta.checksum = Base64Encode(std::string{static_cast<char>(whole >> 24),
                                             static_cast<char>(whole >> 16),
                                             static_cast<char>(whole >> 8), static_cast<char>(whole)});
    meta.checksum_composite = false;
    return Status::Ok();
  };
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, engine_->CompleteMultipartUpload(
                                         "b", "mp", id, {{1, i1.etag, ""}, {2, i2.etag, ""}}, c));
  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "mp"));
  EXPECT_FALSE(h.checksum_composite);
  EXPECT_EQ(h.checksum, m.checksum);
  EXPECT_EQ(h.checksum_algorithm, ChecksumAlgorithm::kCrc32);
}

TEST_F(MultipartTest, CompleteHonoursConditions) {
  ASSERT_OK(Put("mp", "existing"));
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, "data"));
  CompleteOptions c = Small();
  c.if_none_match_star = true;
  EXPECT_STATUS_CODE(engine_->CompleteMultipartUpload("b", "mp", id, {{1, i1.etag, ""}}, c),
                     StatusCode::kPreconditionFailed);
  c.if_none_match_star = false;
  c.if_match = Md5Hex("existing");
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "mp", id, {{1, i1.etag, ""}}, c));
  ASSERT_OK_AND_ASSIGN(std::string got, Get("mp"));
  EXPECT_EQ(got, "data");
}

TEST_F(MultipartTest, SmallPartsBecomeOneInlineObject) {
  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  ASSERT_OK_AND_ASSIGN(PartInfo i1, Upload(id, 1, "hello "));
  ASSERT_OK_AND_ASSIGN(PartInfo i2, Upload(id, 2, "world"));
  CompleteOptions c;
  c.min_part_size = 1;
  ASSERT_OK(engine_->CompleteMultipartUpload("b", "mp", id, {{1, i1.etag, ""}, {2, i2.etag, ""}},
                                             c));
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "mp"));
  CollectSink sink;
  ASSERT_OK(r->Stream(0, UINT64_MAX, sink));
  EXPECT_EQ(sink.out, "hello world");
  EXPECT_EQ(sink.memory_calls, 1);
}

// ---- append, rename, copy, tags -------------------------------------------------

TEST_F(LocalEngineTest, AppendBuildsAnObject) {
  options_.block_size = 4096;
  options_.inline_threshold = 1000;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  PutOptions o;
  o.checksum_algorithm = ChecksumAlgorithm::kCrc32c;
  o.meta.content_type = "text/log";
  std::string expected;
  auto append = [&](uint64_t offset, const std::string& data) {
    StringSource src(data);
    return engine_->AppendObject("b", "log", offset, src, o);
  };
  EXPECT_STATUS_CODE(append(5, "x"), StatusCode::kNotFound);
  std::vector<std::string> chunks = {"first line\n", Bytes(600, 1), Bytes(700, 2),
                                     Bytes(20000, 3), "tail", Bytes(5000, 4)};
  std::string last_etag;
  for (const std::string& c : chunks) {
    ASSERT_OK_AND_ASSIGN(ObjectMeta m, append(expected.size(), c));
    expected += c;
    EXPECT_EQ(m.size, expected.size());
    EXPECT_NE(m.etag, last_etag);
    last_etag = m.etag;
    uint32_t crc = Crc32c(0, expected.data(), expected.size());
    std::string be = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                      static_cast<char>(crc >> 8), static_cast<char>(crc)};
    EXPECT_EQ(m.checksum, Base64Encode(be)) << "after " << expected.size() << " bytes";
    EXPECT_EQ(m.content_type, "text/log");
  }
  EXPECT_STATUS_CODE(append(3, "x"), StatusCode::kPreconditionFailed);
  EXPECT_STATUS_CODE(append(expected.size() + 1, "x"), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("log"));
  EXPECT_TRUE(got == expected);
  ASSERT_OK_AND_ASSIGN(auto r, engine_->OpenObject("b", "log"));
  ASSERT_OK_AND_ASSIGN(std::string mid, r->ReadRange(1000, 3000));
  EXPECT_EQ(mid, expected.substr(1000, 3000));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(got, Get("log"));
  EXPECT_TRUE(got == expected);
  ASSERT_OK(engine_->DeleteObject("b", "log"));
  EXPECT_TRUE(DataFiles().empty());
}

TEST_F(LocalEngineTest, SmallAppendsExtendOneBodyRecord) {
  std::string expected;
  for (int i = 0; i < 6; ++i) {
    const std::string chunk = Bytes(400, 20 + i);
    StringSource src(chunk);
    ASSERT_OK(engine_->AppendObject("b", "small", expected.size(), src, {}));
    expected += chunk;
    ASSERT_OK_AND_ASSIGN(std::string got, Get("small"));
    EXPECT_TRUE(got == expected) << i;
    // 400 bytes sit in the record; from 800 on one body record is rewritten.
    EXPECT_EQ(Bodies(), i == 0 ? 0u : 1u) << i;
  }
  EXPECT_TRUE(DataFiles().empty());
  ASSERT_OK(engine_->DeleteObject("b", "small"));
  EXPECT_EQ(Bodies(), 0u);
}

TEST_F(LocalEngineTest, BodyRecordsDoNotLeak) {
  ASSERT_OK(Put("k", Bytes(5000, 1)));
  EXPECT_EQ(Bodies(), 1u);
  ASSERT_OK(Put("k", Bytes(6000, 2)));
  EXPECT_EQ(Bodies(), 1u);
  ASSERT_OK(Put("k", "tiny"));
  EXPECT_EQ(Bodies(), 0u);
  ASSERT_OK(Put("k", Bytes(7000, 3)));
  ASSERT_OK_AND_ASSIGN(auto reader, engine_->OpenObject("b", "k"));
  ASSERT_OK(engine_->RenameObject("b", "k", "k2", {}));
  EXPECT_EQ(Bodies(), 1u);
  ASSERT_OK(Put("k2", Bytes(300000, 4)));
  EXPECT_EQ(Bodies(), 0u);
  ASSERT_OK_AND_ASSIGN(std::string old, reader->ReadRange(0, UINT64_MAX));
  EXPECT_TRUE(old == Bytes(7000, 3));  // the reader pinned the replaced body
  PutOptions fail;
  fail.before_commit = [](const WriteDigest&, ObjectMeta&) { return Status::Conflict("no"); };
  EXPECT_STATUS_CODE(Put("k3", Bytes(9000, 5), fail), StatusCode::kConflict);
  EXPECT_EQ(Bodies(), 0u);

  ASSERT_OK_AND_ASSIGN(std::string id, engine_->CreateMultipartUpload("b", "mp", {}));
  for (int n = 1; n <= 3; ++n) {
    StringSource src(Bytes(3000, n));
    ASSERT_OK(engine_->UploadPart("b", "mp", id, n, src, {}));
  }
  StringSource again(Bytes(3100, 9));
  ASSERT_OK_AND_ASSIGN(PartInfo p2, engine_->UploadPart("b", "mp", id, 2, again, {}));
  EXPECT_EQ(Bodies(), 3u);
  ASSERT_OK_AND_ASSIGN(auto parts, engine_->ListParts("b", "mp", id));
  CompleteOptions c;
  c.min_part_size = 100;
  ASSERT_OK(engine_->CompleteMultipartUpload(
      "b", "mp", id, {{1, parts[0].etag, ""}, {2, p2.etag, ""}}, c));
  EXPECT_EQ(Bodies(), 2u);  // part 3 dropped, parts 1-2 referenced by the object
  ASSERT_OK_AND_ASSIGN(std::string got, Get("mp"));
  EXPECT_TRUE(got == Bytes(3000, 1) + Bytes(3100, 9));
  ASSERT_OK(engine_->DeleteObject("b", "mp"));
  EXPECT_EQ(Bodies(), 0u);

  ASSERT_OK_AND_ASSIGN(id, engine_->CreateMultipartUpload("b", "mp", {}));
  StringSource one(Bytes(3000, 1));
  ASSERT_OK(engine_->UploadPart("b", "mp", id, 1, one, {}));
  ASSERT_OK(engine_->AbortMultipartUpload("b", "mp", id));
  EXPECT_EQ(Bodies(), 0u);
}

TEST_F(LocalEngineTest, RenameMovesTheRecord) {
  const std::string data = Bytes(100000, 1);
  ASSERT_OK(Put("src", data));
  ASSERT_OK(Put("dst", Bytes(90000, 2)));
  ASSERT_EQ(DataFiles().size(), 2u);
  PutOptions none;
  none.if_none_match_star = true;
  EXPECT_STATUS_CODE(engine_->RenameObject("b", "src", "dst", none), StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, engine_->RenameObject("b", "src", "dst", {}));
  EXPECT_EQ(m.key, "dst");
  EXPECT_EQ(m.etag, Md5Hex(data));
  EXPECT_EQ(DataFiles().size(), 1u);  // the replaced dst is collected, src's file moves along
  EXPECT_STATUS_CODE(engine_->HeadObject("b", "src"), StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("dst"));
  EXPECT_TRUE(got == data);
  auto missing = engine_->RenameObject("b", "src", "x", {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "object \"src\" does not exist in bucket \"b\"");
  ASSERT_OK(engine_->RenameObject("b", "dst", "fresh", none));
  ASSERT_OK_AND_ASSIGN(got, Get("fresh"));
  EXPECT_TRUE(got == data);
}

TEST_F(LocalEngineTest, CopyObjectKeepsOrReplacesMetadata) {
  ASSERT_OK(engine_->CreateBucket("other", "bob"));
  const std::string data = Bytes(2500000, 5);
  PutOptions o;
  o.meta.content_type = "image/png";
  o.meta.user_meta["a"] = "1";
  o.checksum_algorithm = ChecksumAlgorithm::kCrc32;
  ASSERT_OK(Put("src", data, o));
  ASSERT_OK_AND_ASSIGN(ObjectMeta c, engine_->CopyObject("b", "src", "other", "copy",
                                                        std::nullopt, {}));
  EXPECT_EQ(c.etag, Md5Hex(data));
  EXPECT_EQ(c.content_type, "image/png");
  EXPECT_EQ(c.user_meta.at("a"), "1");
  EXPECT_EQ(c.checksum_algorithm, ChecksumAlgorithm::kCrc32);
  ASSERT_OK_AND_ASSIGN(ObjectMeta src_meta, engine_->HeadObject("b", "src"));
  EXPECT_EQ(c.checksum, src_meta.checksum);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("copy", "other"));
  EXPECT_TRUE(got == data);

  ObjectMeta replace;
  replace.content_type = "text/plain";
  ASSERT_OK_AND_ASSIGN(c, engine_->CopyObject("b", "src", "b", "src", replace, {}));
  EXPECT_EQ(c.content_type, "text/plain");
  EXPECT_TRUE(c.user_meta.empty());
  ASSERT_OK_AND_ASSIGN(got, Get("src"));
  EXPECT_TRUE(got == data);
  EXPECT_EQ(DataFiles().size(), 2u);
  EXPECT_STATUS_CODE(engine_->CopyObject("b", "nope", "b", "x", std::nullopt, {}),
                     StatusCode::kNotFound);
  PutOptions none;
  none.if_none_match_star = true;
  EXPECT_STATUS_CODE(engine_->CopyObject("b", "src", "other", "copy", std::nullopt, none),
                     StatusCode::kPreconditionFailed);
}

TEST_F(LocalEngineTest, TagsAreRewrittenWithoutTouchingData) {
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("k", Bytes(100000, 1)));
  ASSERT_OK(engine_->SetObjectTags("b", "k", {{"env", "prod"}, {"team", "ml"}}));
  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "k"));
  EXPECT_EQ(h.tags.size(), 2u);
  EXPECT_EQ(h.tags.at("env"), "prod");
  EXPECT_EQ(h.etag, m.etag);
  EXPECT_EQ(h.mtime_ns, m.mtime_ns);
  ASSERT_OK(engine_->SetObjectTags("b", "k", {}));
  ASSERT_OK_AND_ASSIGN(h, engine_->HeadObject("b", "k"));
  EXPECT_TRUE(h.tags.empty());
  ASSERT_OK_AND_ASSIGN(std::string got, Get("k"));
  EXPECT_TRUE(got == Bytes(100000, 1));
  EXPECT_STATUS_CODE(engine_->SetObjectTags("b", "missing", {}), StatusCode::kNotFound);
}

TEST_F(LocalEngineTest, BucketConfigsAreDurableAndRemovable) {
  ASSERT_OK(engine_->SetBucketConfig("b", "policy", std::string("{\"Version\":\"2012-10-17\"}")));
  ASSERT_OK(engine_->SetBucketConfig("b", "encryption", std::string("AES256")));
  ASSERT_OK(engine_->SetBucketPublicRead("b", true));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(BucketInfo info, engine_->GetBucket("b"));
  EXPECT_TRUE(info.public_read);
  EXPECT_EQ(info.owner, "alice");
  ASSERT_TRUE(info.configs);
  ASSERT_EQ(info.configs->size(), 2u);
  ASSERT_NE(info.Config("encryption"), nullptr);
  EXPECT_EQ(*info.Config("encryption"), "AES256");
  ASSERT_OK(engine_->SetBucketConfig("b", "policy", std::nullopt));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(info, engine_->GetBucket("b"));
  EXPECT_EQ(info.Config("policy"), nullptr);
  EXPECT_NE(info.Config("encryption"), nullptr);
  EXPECT_STATUS_CODE(engine_->SetBucketConfig("missing", "policy", std::string("x")),
                     StatusCode::kNotFound);
}

TEST_F(LocalEngineTest, UpdateObjectMetaKeepsBytesAndRefusesAtomically) {
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("k", Bytes(200000, 3)));
  ASSERT_OK(engine_->UpdateObjectMeta("b", "k", [](ObjectMeta& meta) {
    meta.internal["acl"] = "private";
    return Status::Ok();
  }));
  EXPECT_STATUS_CODE(engine_->UpdateObjectMeta("b", "k",
                                               [](ObjectMeta& meta) {
                                                 meta.internal["acl"] = "public-read";
                                                 return Status::InvalidArgument("no");
                                               }),
                     StatusCode::kInvalidArgument);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(ObjectMeta h, engine_->HeadObject("b", "k"));
  EXPECT_EQ(h.internal.at("acl"), "private");
  EXPECT_EQ(h.etag, m.etag);
  ASSERT_OK_AND_ASSIGN(std::string got, Get("k"));
  EXPECT_TRUE(got == Bytes(200000, 3));
  EXPECT_STATUS_CODE(engine_->UpdateObjectMeta("b", "missing", [](ObjectMeta&) { return Status::Ok(); }),
                     StatusCode::kNotFound);
}

// Records written before the internal map / bucket configs existed (version 1)
// still decode.
TEST(RecordTest, VersionOneRecordsDecode) {
  ObjectMeta meta;
  meta.size = 0;
  meta.etag = "d41d8cd98f00b204e9800998ecf8427e";
  meta.tags["t"] = "v";
  std::string v4;
  EncodeObject(meta, {}, &v4);
  // v4 = [4] summary [order 0, id "", marker 0] [storage class ""] rest ...;
  // v3 lacks the storage class byte, v2 the 3 bytes before it too.
  const size_t vfields = 1 + 1 + 1 + 1 + meta.etag.size() + 1 + 1 + 1;
  ASSERT_EQ(v4.substr(vfields, 4), std::string(4, '\0'));
  std::string v3 = v4;
  v3.erase(vfields + 3, 1);
  v3[0] = 3;
  ObjectMeta got3;
  got3.storage_class = "stale";
  ASSERT_OK(DecodeObject(v3, &got3, nullptr));
  EXPECT_EQ(got3.etag, meta.etag);
  EXPECT_EQ(got3.storage_class, "");  // STANDARD
  EXPECT_EQ(got3.tags.at("t"), "v");
  std::string v2 = v3;
  v2.erase(vfields, 3);
  v2[0] = 2;
  ObjectMeta got2;
  ASSERT_OK(DecodeObject(v2, &got2, nullptr));
  EXPECT_EQ(got2.etag, meta.etag);
  EXPECT_EQ(got2.version_order, 0u);
  ASSERT_GE(v2.size(), 3u);
  // v2 = [2] summary rest [internal map: 0] [pieces: 0]; v1 lacks the map.
  ASSERT_EQ(v2[v2.size() - 2], '\0');
  std::string v1 = v2;
  v1.erase(v1.size() - 2, 1);
  v1[0] = 1;
  ObjectMeta got;
  std::vector<Piece> pieces;
  ASSERT_OK(DecodeObject(v1, &got, &pieces));
  EXPECT_EQ(got.etag, meta.etag);
  EXPECT_EQ(got.tags.at("t"), "v");
  EXPECT_TRUE(got.internal.empty());
  v1[0] = 5;  // a version from the future is refused, not misread
  EXPECT_STATUS_CODE(DecodeObject(v1, &got, &pieces), StatusCode::kCorruption);
  // The storage class is part of the summary (listings read it).
  meta.storage_class = "STANDARD_IA";
  std::string with_class;
  EncodeObject(meta, {}, &with_class);
  ObjectMeta summary;
  ASSERT_OK(DecodeObjectSummary(with_class, &summary));
  EXPECT_EQ(summary.storage_class, "STANDARD_IA");

  BucketRecord b;
  b.created_ns = 42;
  b.owner = "alice";
  b.public_read = true;
  std::string bv2;
  EncodeBucket(b, &bv2);
  std::string bv1 = bv2;
  bv1.pop_back();  // drop the empty configs map
  bv1[0] = 1;
  BucketRecord bgot;
  ASSERT_OK(DecodeBucket(bv1, &bgot));
  EXPECT_EQ(bgot.owner, "alice");
  EXPECT_TRUE(bgot.public_read);
}

TEST_F(LocalEngineTest, SyncModeWorks) {
  options_.sync = true;
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK(Put("durable", Bytes(300000, 2)));
  ASSERT_OK(Put("small", "x"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_OK_AND_ASSIGN(std::string got, Get("durable"));
  EXPECT_TRUE(got == Bytes(300000, 2));
}

// ---- versioning (S3 semantics: AWS S3 API reference, "Using versioning") ----

class VersioningTest : public LocalEngineTest {
 protected:
  void Enable(std::string_view state = "Enabled") {
    ASSERT_OK(engine_->SetBucketConfig("b", "versioning", std::string(state)));
  }
  Result<std::string> GetVersion(std::string_view key, std::string_view id) {
    STRATA_ASSIGN_OR_RETURN(auto r, engine_->OpenVersion("b", key, id, DataKeyFn()));
    CollectSink sink;
    STRATA_RETURN_IF_ERROR(r->Stream(0, UINT64_MAX, sink));
    return sink.out;
  }
  std::vector<std::string> Ids(std::string_view prefix = "") {
    VersionListOptions o;
    o.prefix = std::string(prefix);
    auto r = engine_->ListObjectVersions("b", o);
    EXPECT_TRUE(r.ok());
    std::vector<std::string> out;
    if (!r.ok()) return out;
    for (const ObjectMeta& m : r->versions)
      out.push_back(m.key + "@" + (m.version_id.empty() ? "null" : m.version_id) +
                    (m.delete_marker ? "(dm)" : "") + (m.is_latest ? "*" : ""));
    return out;
  }
};

TEST_F(VersioningTest, UnversionedBucketKeepsNothingExtra) {
  ASSERT_OK(Put("k", "one").status());
  ASSERT_OK_AND_ASSIGN(ObjectMeta m, Put("k", "two"));
  EXPECT_EQ(m.version_id, "");
  EXPECT_EQ(m.version_order, 0u);
  EXPECT_EQ(Ids(), std::vector<std::string>{"k@null*"});
  ASSERT_OK_AND_ASSIGN(DeleteResult d, engine_->DeleteCurrent("b", "k"));
  EXPECT_FALSE(d.delete_marker);
  EXPECT_TRUE(Ids().empty());
  ASSERT_OK(engine_->DeleteBucket("b"));
}

TEST_F(VersioningTest, EveryWriteKeepsAVersionAndMarkersUndo) {
  ASSERT_OK(Put("k", std::string(100000, 'a')).status());  // before versioning: the null version
  Enable();
  ASSERT_OK_AND_ASSIGN(ObjectMeta v1, Put("k", std::string(100000, 'b')));
  ASSERT_OK_AND_ASSIGN(ObjectMeta v2, Put("k", "small"));
  ASSERT_EQ(v1.version_id.size(), 16u);
  EXPECT_LT(v2.version_id, v1.version_id);  // newer sorts first
  EXPECT_EQ(Ids(),
            (std::vector<std::string>{"k@" + v2.version_id + "*", "k@" + v1.version_id, "k@null"}));
  ASSERT_OK_AND_ASSIGN(std::string null_bytes, GetVersion("k", "null"));
  EXPECT_EQ(null_bytes, std::string(100000, 'a'));
  ASSERT_OK_AND_ASSIGN(std::string b1, GetVersion("k", v1.version_id));
  EXPECT_EQ(b1, std::string(100000, 'b'));
  ASSERT_OK_AND_ASSIGN(DeleteResult d, engine_->DeleteCurrent("b", "k"));
  EXPECT_TRUE(d.delete_marker);
  EXPECT_TRUE(engine_->HeadObject("b", "k").error().IsNotFound());
  ASSERT_OK_AND_ASSIGN(ObjectMeta latest, engine_->HeadVersion("b", "k", ""));
  EXPECT_TRUE(latest.delete_marker);
  EXPECT_TRUE(GetVersion("k", d.version_id).error().IsNotFound());
  ASSERT_OK_AND_ASSIGN(ListResult lr, engine_->ListObjects("b", ListOptions()));
  EXPECT_TRUE(lr.objects.empty());
  // Removing the marker undoes the delete.
  ASSERT_OK_AND_ASSIGN(DeleteResult u, engine_->DeleteVersion("b", "k", d.version_id));
  EXPECT_TRUE(u.delete_marker);
  ASSERT_OK_AND_ASSIGN(std::string cur, Get("k"));
  EXPECT_EQ(cur, "small");
  // Deleting the current version makes the previous one current.
  ASSERT_OK(engine_->DeleteVersion("b", "k", v2.version_id).status());
  ASSERT_OK_AND_ASSIGN(cur, Get("k"));
  EXPECT_EQ(cur, std::string(100000, 'b'));
  EXPECT_EQ(engine_->DeleteVersion("b", "k", "zz").status().code(), StatusCode::kInvalidArgument);
  // Data files are freed only with the last version that references them.
  EXPECT_EQ(DataFiles().size(), 2u);
  ASSERT_OK(engine_->DeleteVersion("b", "k", v1.version_id).status());
  ASSERT_OK(engine_->DeleteVersion("b", "k", "null").status());
  EXPECT_TRUE(DataFiles().empty());
  EXPECT_TRUE(Ids().empty());
  EXPECT_TRUE(engine_->HeadObject("b", "k").error().IsNotFound());
  ASSERT_OK(engine_->DeleteBucket("b"));
}

// The lifecycle worker's conditional expiry in a versioned bucket adds a
// delete marker, as S3's Expiration does there; the expired version stays
// readable by id (its data is not freed).
TEST_F(VersioningTest, ExpiryIfUnchangedAddsADeleteMarker) {
  Enable();
  ASSERT_OK_AND_ASSIGN(ObjectMeta v1, Put("k", std::string(100000, 'e')));
  ASSERT_OK_AND_ASSIGN(ObjectMeta seen, engine_->HeadObject("b", "k"));
  ASSERT_OK(engine_->DeleteObjectIfUnchanged("b", "k", seen.etag, seen.mtime_ns));
  EXPECT_TRUE(engine_->HeadObject("b", "k").error().IsNotFound());
  ASSERT_OK_AND_ASSIGN(ObjectMeta latest, engine_->HeadVersion("b", "k", ""));
  EXPECT_TRUE(latest.delete_marker);
  ASSERT_OK_AND_ASSIGN(std::string bytes, GetVersion("k", v1.version_id));
  EXPECT_EQ(bytes, std::string(100000, 'e'));
  // Changed since it was read: nothing happens.
  ASSERT_OK_AND_ASSIGN(ObjectMeta v2, Put("k", "new"));
  EXPECT_EQ(engine_->DeleteObjectIfUnchanged("b", "k", seen.etag, seen.mtime_ns).code(),
            StatusCode::kPreconditionFailed);
  ASSERT_OK_AND_ASSIGN(std::string cur, Get("k"));
  EXPECT_EQ(cur, "new");
}

// DeleteVersionIf (S3 Object Lock's delete check): the guard sees the
// version's full metadata, internal entries included; a refusal changes nothing.
TEST_F(VersioningTest, DeleteVersionIfRefusalKeepsTheVersion) {
  Enable();
  ASSERT_OK_AND_ASSIGN(ObjectMeta v1, Put("k", "kept"));
  ASSERT_OK(engine_->UpdateVersionMeta("b", "k", v1.version_id, [](ObjectMeta& m) {
    m.internal["lock"] = "on";
    return Status::Ok();
  }));
  ASSERT_OK_AND_ASSIGN(ObjectMeta v2, Put("k", "newer"));
  std::vector<std::string> seen;
  auto guard = [&seen](const ObjectMeta& m) {
    seen.push_back(m.version_id);
    auto it = m.internal.find("lock");
    return it != m.internal.end() && it->second == "on" ? Status::PermissionDenied("locked")
                                                        : Status::Ok();
  };
  EXPECT_EQ(engine_->DeleteVersionIf("b", "k", v1.version_id, guard).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Ids(), (std::vector<std::string>{"k@" + v2.version_id + "*", "k@" + v1.version_id}));
  ASSERT_OK_AND_ASSIGN(std::string b1, GetVersion("k", v1.version_id));
  EXPECT_EQ(b1, "kept");
  ASSERT_OK(engine_->DeleteVersionIf("b", "k", v2.version_id, guard).status());
  EXPECT_EQ(seen, (std::vector<std::string>{v1.version_id, v2.version_id}));
  ASSERT_OK_AND_ASSIGN(std::string cur, Get("k"));
  EXPECT_EQ(cur, "kept");  // the refused version is current again
}

TEST_F(VersioningTest, SuspendedWritesReplaceTheNullVersion) {
  Enable();
  ASSERT_OK_AND_ASSIGN(ObjectMeta v1, Put("k", "one"));
  Enable("Suspended");
  ASSERT_OK(Put("k", std::string(100000, 'x')).status());
  ASSERT_OK(Put("k", std::string(100000, 'y')).status());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"k@null*", "k@" + v1.version_id}));
  EXPECT_EQ(DataFiles().size(), 1u);  // the replaced null version's file is gone
  ASSERT_OK_AND_ASSIGN(DeleteResult d, engine_->DeleteCurrent("b", "k"));
  EXPECT_TRUE(d.delete_marker);
  EXPECT_EQ(d.version_id, "");
  EXPECT_EQ(Ids(), (std::vector<std::string>{"k@null(dm)*", "k@" + v1.version_id}));
  EXPECT_TRUE(DataFiles().empty());
  // Survives a reopen.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Ids(), (std::vector<std::string>{"k@null(dm)*", "k@" + v1.version_id}));
  ASSERT_OK(engine_->DeleteVersion("b", "k", "null").status());
  ASSERT_OK_AND_ASSIGN(std::string cur, Get("k"));
  EXPECT_EQ(cur, "one");
}

TEST_F(VersioningTest, ListingPagesMarkersAndDelimiter) {
  ASSERT_OK(Put("a/old", "legacy").status());
  Enable();
  std::vector<std::string> all;
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i < 3; ++i) ASSERT_OK(Put("a/k" + std::to_string(k), "x").status());
  }
  ASSERT_OK(Put("b/z", "x").status());
  const std::vector<std::string> full = Ids();
  ASSERT_EQ(full.size(), 17u);
  EXPECT_EQ(full[0], "a/k0@" + full[0].substr(5, 16) + "*");
  EXPECT_EQ(full[15], "a/old@null*");
  // Pages of 4 with key-marker/version-id-marker give the same sequence.
  std::vector<std::string> paged;
  VersionListOptions o;
  o.max_keys = 4;
  for (int guard = 0; guard < 10; ++guard) {
    ASSERT_OK_AND_ASSIGN(VersionListResult r, engine_->ListObjectVersions("b", o));
    for (const ObjectMeta& m : r.versions)
      paged.push_back(m.key + "@" + (m.version_id.empty() ? "null" : m.version_id) +
                      (m.is_latest ? "*" : ""));
    if (!r.truncated) break;
    o.key_marker = r.next_key_marker;
    o.version_id_marker = r.next_version_id_marker;
  }
  EXPECT_EQ(paged, full);
  VersionListOptions d;
  d.delimiter = "/";
  ASSERT_OK_AND_ASSIGN(VersionListResult r, engine_->ListObjectVersions("b", d));
  EXPECT_EQ(r.common_prefixes, (std::vector<std::string>{"a/", "b/"}));
  EXPECT_TRUE(r.versions.empty());
}

TEST_F(VersioningTest, ListVersionsPageCostDoesNotGrowWithTheBucket) {
  Enable();
  for (int i = 0; i < 3000; ++i) ASSERT_OK(Put("k" + std::to_string(i % 300), "x").status());
  VersionListOptions o;
  o.max_keys = 10;
  o.key_marker = "k150";
  const uint64_t before = internal::ListIteratorSteps(*engine_);
  ASSERT_OK_AND_ASSIGN(VersionListResult r, engine_->ListObjectVersions("b", o));
  EXPECT_EQ(r.versions.size(), 10u);
  EXPECT_LT(internal::ListIteratorSteps(*engine_) - before, 40u);
}

TEST(RecordTest, Version2ObjectRecordsStillDecode) {
  // A version-2 record: size 5, mtime 1, etag "e", owner "", no checksum,
  // empty rest (content type, checksum, 3 maps, 0 parts, internal map), no pieces.
  const std::string v2(
      "\x02\x05\x01\x01"
      "e\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00",
      16);
  ObjectMeta m;
  std::vector<Piece> pieces;
  ASSERT_OK(DecodeObject(v2, &m, &pieces));
  EXPECT_EQ(m.size, 5u);
  EXPECT_EQ(m.etag, "e");
  EXPECT_EQ(m.version_order, 0u);
  EXPECT_EQ(m.version_id, "");
  EXPECT_FALSE(m.delete_marker);
}
}  // namespace
}  // namespace strata::objstore
