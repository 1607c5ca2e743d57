// TransferManager over the in-memory store and fault-injecting wrappers:
// single PUT vs multipart, parallel ranged downloads, resume of an interrupted
// upload, atomic downloads, a source replaced mid-download, retries under
// injected faults, and many objects sharing the pool.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/file_util.h>
#include <strata/objstore/fault_injection.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/transfer.h>

#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

using strata::testing::ReadFileOrEmpty;
using strata::testing::TempDir;
using strata::testing::WriteFile;

constexpr uint64_t kMiB = 1 << 20;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  for (; i < n; ++i) s[i] = static_cast<char>(rng());
  return s;
}

// Delegates to a base store, with hooks that can fail or change things.
class ScriptedStore final : public ObjectStore {
 public:
  explicit ScriptedStore(ObjectStore* base) : base_(base) {}

  std::function<Status(int part_number)> before_upload_part;
  std::function<Status(const ReadOptions&)> before_get;
  std::atomic<int> upload_parts{0}, gets{0}, puts{0}, creates{0};

  std::string url() const override { return base_->url(); }
  Result<ObjectInfo> Put(std::string_view key, ByteSource& body, const WriteOptions& o) override {
    ++puts;
    return base_->Put(key, body, o);
  }
  Status Get(std::string_view key, const ReadOptions& o, const ByteSink& sink, ObjectInfo* info) override {
    ++gets;
    if (before_get) STRATA_RETURN_IF_ERROR(before_get(o));
    return base_->Get(key, o, sink, info);
  }
  Result<ObjectInfo> Head(std::string_view key) override { return base_->Head(key); }
  Status Delete(std::string_view key) override { return base_->Delete(key); }
  Result<ListPage> List(std::string_view p, std::string_view d, std::string_view t, int m) override {
    return base_->List(p, d, t, m);
  }
  Result<std::string> CreateMultipart(std::string_view key, const WriteOptions& o) override {
    ++creates;
    return base_->CreateMultipart(key, o);
  }
  Result<UploadedPart> UploadPart(std::string_view key, std::string_view id, int n, ByteSource& body,
                                  uint64_t size) override {
    ++upload_parts;
    if (before_upload_part) STRATA_RETURN_IF_ERROR(before_upload_part(n));
    return base_->UploadPart(key, id, n, body, size);
  }
  Result<ObjectInfo> CompleteMultipart(std::string_view key, std::string_view id,
                                       const std::vector<UploadedPart>& parts) override {
    return base_->CompleteMultipart(key, id, parts);
  }
  Status AbortMultipart(std::string_view key, std::string_view id) override {
    return base_->AbortMultipart(key, id);
  }
  Result<std::vector<UploadedPart>> ListParts(std::string_view key, std::string_view id) override {
    return base_->ListParts(key, id);
  }
  Result<ObjectInfo> Copy(std::string_view s, std::string_view d) override { return base_->Copy(s, d); }

 private:
  ObjectStore* base_;
};

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}

class TransferTest : public ::testing::Test {
 protected:
  TransferOptions Opts(int concurrency = 4) {
    TransferOptions o;
    o.concurrency = concurrency;
    o.part_size = 5 * kMiB;
    o.multipart_threshold = 5 * kMiB;
    o.state_dir = dir_.Join("state");
    o.fsync = false;
    return o;
  }
  std::string MakeFile(const std::string& name, size_t size, uint64_t seed) {
    const std::string p = dir_.Join(name);
    EXPECT_TRUE(WriteFile(p, RandomBytes(size, seed)));
    return p;
  }

  TempDir dir_{"strata-transfer-test"};
  std::unique_ptr<ObjectStore> mem_ = NewMemObjectStore("transfer");
};

TEST(EffectivePartSizeTest, MinimumAndTenThousandParts) {
  EXPECT_EQ(EffectivePartSize(kMiB, kMiB), 5 * kMiB);
  EXPECT_EQ(EffectivePartSize(100 * kMiB, 8 * kMiB), 8 * kMiB);
  const uint64_t huge = 200ull << 30;  // 200 GiB at 8 MiB would be 25,600 parts
  const uint64_t p = EffectivePartSize(huge, 8 * kMiB);
  EXPECT_LE((huge + p - 1) / p, 10'000u);
  EXPECT_EQ(p % kMiB, 0u);
  EXPECT_LT(p, 22 * kMiB);
}

TEST_F(TransferTest, SmallFileIsOnePut) {
  const std::string path = MakeFile("small", 1 * kMiB + 17, 1);
  ScriptedStore store(mem_.get());
  TransferManager tm(Opts());
  ASSERT_OK_AND_ASSIGN(ObjectInfo info, tm.UploadFile(path, store, "a/small"));
  EXPECT_EQ(info.size, kMiB + 17);
  EXPECT_EQ(store.puts.load(), 1);
  EXPECT_EQ(store.creates.load(), 0);
  ASSERT_OK_AND_ASSIGN(std::string got, mem_->GetBytes("a/small"));
  EXPECT_EQ(got, ReadFileOrEmpty(path));
  EXPECT_EQ(tm.progress().bytes_done, kMiB + 17);
  EXPECT_EQ(tm.progress().objects_done, 1u);
}

TEST_F(TransferTest, LargeFileIsMultipartInParallel) {
  const size_t size = 23 * kMiB + 123;
  const std::string path = MakeFile("large", size, 2);
  ScriptedStore store(mem_.get());
  // Parts must really overlap: each one waits until two are in flight.
  std::atomic<int> in_flight{0}, max_in_flight{0};
  store.before_upload_part = [&](int) {
    const int now = ++in_flight;
    int m = max_in_flight.load();
    while (now > m && !max_in_flight.compare_exchange_weak(m, now)) {
    }
    for (int i = 0; i < 200 && max_in_flight.load() < 2; ++i) usleep(1000);
    --in_flight;
    return Status::Ok();
  };
  TransferManager tm(Opts(4));
  ASSERT_OK_AND_ASSIGN(ObjectInfo info, tm.UploadFile(path, store, "large"));
  EXPECT_EQ(store.creates.load(), 1);
  EXPECT_EQ(store.upload_parts.load(), 5);  // 4 x 5 MiB + 3 MiB
  EXPECT_GE(max_in_flight.load(), 2);
  EXPECT_NE(info.etag.find("-5"), std::string::npos) << info.etag;
  ASSERT_OK_AND_ASSIGN(std::string got, mem_->GetBytes("large"));
  EXPECT_TRUE(got == ReadFileOrEmpty(path));
  // The resume state of a finished upload is gone.
  EXPECT_TRUE(DirEntries(dir_.Join("state")).empty());
}

TEST_F(TransferTest, RangedParallelDownload) {
  const std::string data = RandomBytes(31 * kMiB + 5, 3);
  ASSERT_OK(mem_->PutBytes("big", data));
  ScriptedStore store(mem_.get());
  std::mutex mu;
  std::set<uint64_t> offsets;
  store.before_get = [&](const ReadOptions& o) {
    std::lock_guard l(mu);
    offsets.insert(o.offset);
    EXPECT_TRUE(o.if_match.has_value()) << "ranged GETs must be pinned to the ETag";
    return Status::Ok();
  };
  TransferOptions o = Opts(4);
  o.fsync = true;  // also runs the writeback-as-ranges-land path
  TransferManager tm(o);
  const std::string out = dir_.Join("out/sub/big");  // parent directories are created
  ASSERT_OK_AND_ASSIGN(ObjectInfo info, tm.DownloadFile(store, "big", out));
  EXPECT_EQ(info.size, data.size());
  EXPECT_EQ(offsets.size(), 7u);  // 6 x 5 MiB + 1 MiB + 5
  EXPECT_TRUE(ReadFileOrEmpty(out) == data);
  EXPECT_EQ(tm.progress().bytes_done, data.size());
  for (const std::string& n : DirEntries(dir_.Join("out/sub"))) EXPECT_EQ(n, "big");
}

TEST_F(TransferTest, SmallDownloadIsOneGetAndKeepsMtime) {
  const std::string data = RandomBytes(300'000, 4);
  ASSERT_OK(mem_->PutBytes("s", data));
  ASSERT_OK_AND_ASSIGN(ObjectInfo listed, mem_->Head("s"));
  ScriptedStore store(mem_.get());
  TransferManager tm(Opts());
  const std::string out = dir_.Join("s");
  ASSERT_OK(tm.DownloadFile(store, "s", out, &listed));
  EXPECT_EQ(store.gets.load(), 1);
  EXPECT_EQ(ReadFileOrEmpty(out), data);
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  if (listed.mtime_ns > 0) {
    EXPECT_EQ(st.st_mtim.tv_sec, listed.mtime_ns / 1'000'000'000);
  }
}

TEST_F(TransferTest, InterruptedUploadResumesWithMissingPartsOnly) {
  const size_t size = 26 * kMiB;  // 6 parts of 5 MiB (the last 1 MiB)
  const std::string path = MakeFile("resume", size, 5);
  TransferOptions o = Opts(2);
  o.attempts = 1;
  {
    ScriptedStore failing(mem_.get());
    failing.before_upload_part = [](int n) {
      return n >= 4 ? Status::Unavailable("injected: connection lost") : Status::Ok();
    };
    TransferManager tm(o);
    auto r = tm.UploadFile(path, failing, "resume");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("resume"), std::string::npos) << r.error().ToString();
  }
  EXPECT_STATUS_CODE(mem_->Head("resume"), StatusCode::kNotFound);
  ASSERT_EQ(DirEntries(dir_.Join("state")).size(), 1u);

  ScriptedStore healthy(mem_.get());
  TransferManager tm(o);
  ASSERT_OK_AND_ASSIGN(ObjectInfo info, tm.UploadFile(path, healthy, "resume"));
  EXPECT_EQ(healthy.creates.load(), 0) << "the interrupted upload should have been resumed";
  EXPECT_EQ(healthy.upload_parts.load(), 3) << "parts 1-3 were stored already";
  EXPECT_EQ(info.size, size);
  ASSERT_OK_AND_ASSIGN(std::string got, mem_->GetBytes("resume"));
  EXPECT_TRUE(got == ReadFileOrEmpty(path));
  EXPECT_TRUE(DirEntries(dir_.Join("state")).empty());
  EXPECT_EQ(tm.progress().bytes_done, size);
}

TEST_F(TransferTest, ChangedFileIsNotResumed) {
  const std::string path = MakeFile("changing", 12 * kMiB, 6);
  TransferOptions o = Opts(2);
  o.attempts = 1;
  {
    ScriptedStore failing(mem_.get());
    failing.before_upload_part = [](int n) { return n == 3 ? Status::Unavailable("injected") : Status::Ok(); };
    TransferManager tm(o);
    ASSERT_FALSE(tm.UploadFile(path, failing, "changing").ok());
  }
  // New contents (and a new mtime): the stored parts must not be reused.
  const std::string fresh = RandomBytes(12 * kMiB, 7);
  ASSERT_TRUE(WriteFile(path, fresh));
  struct timespec ts[2] = {{1'000'000, 0}, {1'000'000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), ts, 0), 0);
  ScriptedStore healthy(mem_.get());
  TransferManager tm(o);
  ASSERT_OK(tm.UploadFile(path, healthy, "changing"));
  EXPECT_EQ(healthy.creates.load(), 1);
  EXPECT_EQ(healthy.upload_parts.load(), 3);
  ASSERT_OK_AND_ASSIGN(std::string got, mem_->GetBytes("changing"));
  EXPECT_TRUE(got == fresh);
}

TEST_F(TransferTest, NoResumeAbortsTheUpload) {
  const std::string path = MakeFile("noresume", 12 * kMiB, 8);
  TransferOptions o = Opts(2);
  o.attempts = 1;
  o.resume = false;
  ScriptedStore failing(mem_.get());
  failing.before_upload_part = [](int n) { return n == 2 ? Status::Unavailable("injected") : Status::Ok(); };
  TransferManager tm(o);
  ASSERT_FALSE(tm.UploadFile(path, failing, "noresume").ok());
  EXPECT_TRUE(DirEntries(dir_.Join("state")).empty());
}

TEST_F(TransferTest, FailedDownloadKeepsTheOldFile) {
  const std::string data = RandomBytes(12 * kMiB, 9);
  ASSERT_OK(mem_->PutBytes("obj", data));
  const std::string out = dir_.Join("keep");
  ASSERT_TRUE(WriteFile(out, "the old contents"));
  TransferOptions o = Opts(3);
  o.attempts = 2;
  auto check_untouched = [&] {
    EXPECT_EQ(ReadFileOrEmpty(out), "the old contents");
    for (const std::string& e : DirEntries(dir_.path())) {
      EXPECT_EQ(e.find(".strata-tmp-"), std::string::npos) << "left behind: " << e;
    }
  };
  {
    SCOPED_TRACE("ranged GETs, some succeed first");
    ScriptedStore broken(mem_.get());
    std::atomic<int> n{0};
    broken.before_get = [&](const ReadOptions&) {
      return ++n > 2 ? Status::Unavailable("injected: server went away") : Status::Ok();
    };
    TransferManager tm(o);
    auto r = tm.DownloadFile(broken, "obj", out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), StatusCode::kUnavailable) << r.error().ToString();
    check_untouched();
  }
  {
    SCOPED_TRACE("one GET cut in the middle of the body");
    FaultOptions f;
    f.drop_rate = 1.0;
    FaultInjectionObjectStore dropping(mem_.get(), f);
    o.multipart_threshold = 64 * kMiB;
    TransferManager tm(o);
    auto r = tm.DownloadFile(dropping, "obj", out);
    ASSERT_FALSE(r.ok());
    check_untouched();
  }
}

TEST_F(TransferTest, SourceChangedDuringDownloadIsDetected) {
  const std::string v1 = RandomBytes(20 * kMiB, 10);
  const std::string v2 = RandomBytes(20 * kMiB, 11);
  ASSERT_OK(mem_->PutBytes("moving", v1));
  const std::string out = dir_.Join("moving");
  ASSERT_TRUE(WriteFile(out, "previous"));
  ScriptedStore store(mem_.get());
  std::once_flag once;
  store.before_get = [&](const ReadOptions&) {
    // The object is replaced right after the download started.
    std::call_once(once, [&] { ASSERT_OK(mem_->PutBytes("moving", v2)); });
    return Status::Ok();
  };
  TransferManager tm(Opts(4));
  auto r = tm.DownloadFile(store, "moving", out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kPreconditionFailed);
  EXPECT_NE(r.error().message().find("source changed during download"), std::string::npos)
      << r.error().ToString();
  EXPECT_EQ(ReadFileOrEmpty(out), "previous");
  // Run again: the new version arrives whole.
  ASSERT_OK(tm.DownloadFile(*mem_, "moving", out));
  EXPECT_TRUE(ReadFileOrEmpty(out) == v2);
}

TEST_F(TransferTest, StaleListingIsNotAnError) {
  // Listed, then replaced before the download began: the current version arrives.
  ASSERT_OK(mem_->PutBytes("relisted", RandomBytes(12 * kMiB, 12)));
  ASSERT_OK_AND_ASSIGN(ObjectInfo listed, mem_->Head("relisted"));
  const std::string v2 = RandomBytes(10 * kMiB + 3, 13);  // shorter: the file must shrink
  ASSERT_OK(mem_->PutBytes("relisted", v2));
  TransferManager tm(Opts(4));
  const std::string out = dir_.Join("relisted");
  ASSERT_OK_AND_ASSIGN(ObjectInfo got, tm.DownloadFile(*mem_, "relisted", out, &listed));
  EXPECT_EQ(got.size, v2.size());
  EXPECT_TRUE(ReadFileOrEmpty(out) == v2);
  EXPECT_EQ(tm.progress().bytes_done, v2.size());
}

TEST_F(TransferTest, RetriesThroughInjectedFaults) {
  FaultOptions f;
  f.error_rate = 0.15;
  f.drop_rate = 0.15;
  f.seed = 42;
  FaultInjectionObjectStore faulty(mem_.get(), f);
  TransferOptions o = Opts(4);
  o.attempts = 12;
  TransferManager tm(o);
  std::vector<std::string> paths;
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    const size_t size = i % 2 ? 11 * kMiB + static_cast<size_t>(i) : 100'000 + static_cast<size_t>(i);
    paths.push_back(MakeFile("f" + std::to_string(i), size, 100 + static_cast<uint64_t>(i)));
    keys.push_back("faulty/f" + std::to_string(i));
  }
  std::atomic<int> failures{0};
  for (size_t i = 0; i < paths.size(); ++i) {
    tm.Run([&, i] {
      if (!tm.UploadFile(paths[i], faulty, keys[i]).ok()) ++failures;
    });
  }
  tm.Wait();
  ASSERT_EQ(failures.load(), 0);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string out = dir_.Join("back" + std::to_string(i));
    tm.Run([&, i, out] {
      if (!tm.DownloadFile(faulty, keys[i], out).ok()) ++failures;
    });
  }
  tm.Wait();
  ASSERT_EQ(failures.load(), 0);
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_TRUE(ReadFileOrEmpty(dir_.Join("back" + std::to_string(i))) == ReadFileOrEmpty(paths[i])) << i;
  }
  EXPECT_GT(faulty.stats().errors + faulty.stats().drops, 0u) << "no fault was injected";
}

TEST_F(TransferTest, ManyObjectsShareThePool) {
  TransferManager tm(Opts(8));
  std::vector<std::string> paths;
  for (int i = 0; i < 120; ++i) {
    const size_t size = i % 40 == 0 ? 12 * kMiB : 1000 + static_cast<size_t>(i);
    paths.push_back(MakeFile("m" + std::to_string(i), size, 1000 + static_cast<uint64_t>(i)));
  }
  uint64_t total = 0;
  for (const auto& p : paths) total += ReadFileOrEmpty(p).size();
  std::atomic<int> calls{0};
  TransferProgress last;
  std::mutex mu;
  tm.set_progress_callback([&](const TransferProgress& p) {
    ++calls;
    std::lock_guard l(mu);
    last = p;
  });
  tm.AddTotal(total, paths.size());
  std::atomic<int> failures{0};
  for (size_t i = 0; i < paths.size(); ++i) {
    tm.Run([&, i] {
      if (!tm.UploadFile(paths[i], *mem_, "many/" + std::to_string(i)).ok()) ++failures;
    });
  }
  tm.Wait();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(calls.load(), 0);
  EXPECT_EQ(last.objects_done, paths.size());
  EXPECT_EQ(last.bytes_done, total);
  EXPECT_EQ(last.bytes_total, total);
  for (size_t i = 0; i < paths.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(std::string got, mem_->GetBytes("many/" + std::to_string(i)));
    EXPECT_TRUE(got == ReadFileOrEmpty(paths[i])) << i;
  }
}

TEST_F(TransferTest, ErrorsNameTheFileAndTheObject) {
  TransferManager tm(Opts());
  auto r = tm.UploadFile(dir_.Join("missing"), *mem_, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("missing"), std::string::npos) << r.error().ToString();
  auto d = tm.DownloadFile(*mem_, "no/such/key", dir_.Join("x"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), StatusCode::kNotFound);
  EXPECT_NE(d.error().message().find("no/such/key"), std::string::npos) << d.error().ToString();
}

// ---------------------------------------------------------------------------
// Resumable downloads (download_journal.h)

class ResumeDownloadTest : public TransferTest {
 protected:
  // Downloads "obj" to out through a store whose ranged GETs fail after `ok`
  // of them succeeded, one request at a time.
  void FailAfter(int ok, const std::string& out, const TransferOptions& o) {
    ScriptedStore broken(mem_.get());
    std::atomic<int> n{0};
    broken.before_get = [&](const ReadOptions&) {
      return ++n > ok ? Status::Unavailable("injected: connection reset") : Status::Ok();
    };
    TransferManager tm(o);
    auto r = tm.DownloadFile(broken, "obj", out);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("run the same command again to resume"), std::string::npos)
        << r.error().ToString();
  }
  TransferOptions OneAtATime() {
    TransferOptions o = Opts(1);
    o.attempts = 1;
    return o;
  }
};

TEST_F(ResumeDownloadTest, RerunFetchesOnlyTheMissingRanges) {
  const std::string data = RandomBytes(30 * kMiB + 17, 21);  // 7 parts of 5 MiB
  ASSERT_OK(mem_->PutBytes("obj", data));
  const std::string out = dir_.Join("out");
  ASSERT_TRUE(WriteFile(out, "the old contents"));
  FailAfter(3, out, OneAtATime());
  EXPECT_EQ(ReadFileOrEmpty(out), "the old contents");
  EXPECT_EQ(ReadFileOrEmpty(out + ".strata-partial").size(), data.size());

  ScriptedStore counting(mem_.get());
  TransferManager tm(OneAtATime());
  ASSERT_OK(tm.DownloadFile(counting, "obj", out));
  EXPECT_EQ(counting.gets.load(), 7 - 3);
  EXPECT_TRUE(ReadFileOrEmpty(out) == data);
  EXPECT_EQ(tm.progress().bytes_done, data.size());
  for (const std::string& e : DirEntries(dir_.path())) {
    EXPECT_EQ(e.find(".strata-"), std::string::npos) << "left behind: " << e;
  }
}

TEST_F(ResumeDownloadTest, ChangedObjectStartsOver) {
  ASSERT_OK(mem_->PutBytes("obj", RandomBytes(20 * kMiB, 22)));
  const std::string out = dir_.Join("out");
  FailAfter(2, out, OneAtATime());
  const std::string v2 = RandomBytes(20 * kMiB, 23);  // same size, other ETag
  ASSERT_OK(mem_->PutBytes("obj", v2));
  ScriptedStore counting(mem_.get());
  TransferManager tm(OneAtATime());
  ASSERT_OK(tm.DownloadFile(counting, "obj", out));
  EXPECT_EQ(counting.gets.load(), 4);
  EXPECT_TRUE(ReadFileOrEmpty(out) == v2);
}

TEST_F(ResumeDownloadTest, CorruptResumedBytesAreCaughtByTheChecksum) {
  const std::string data = RandomBytes(20 * kMiB, 24);
  WriteOptions w;
  w.checksum = ChecksumAlgorithm::kCrc32c;
  ASSERT_OK(mem_->PutBytes("obj", data, w));
  ASSERT_OK_AND_ASSIGN(ObjectInfo h, mem_->Head("obj"));
  ASSERT_FALSE(h.checksum.empty()) << "the store must keep the full-object CRC this test relies on";
  const std::string out = dir_.Join("out");
  FailAfter(2, out, OneAtATime());
  {
    // A byte of the first (recorded) part flips on disk.
    strata::UniqueFd fd(::open((out + ".strata-partial").c_str(), O_RDWR));
    ASSERT_GE(fd.get(), 0);
    char c = 0;
    ASSERT_EQ(::pread(fd.get(), &c, 1, 1000), 1);
    c = static_cast<char>(c ^ 0x5a);
    ASSERT_EQ(::pwrite(fd.get(), &c, 1, 1000), 1);
  }
  TransferManager tm(OneAtATime());
  auto r = tm.DownloadFile(*mem_, "obj", out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().ToString();
  EXPECT_FALSE(::access(out.c_str(), F_OK) == 0);
  // The bad partial file is gone: the next run fetches everything.
  ASSERT_OK(tm.DownloadFile(*mem_, "obj", out));
  EXPECT_TRUE(ReadFileOrEmpty(out) == data);
}

TEST_F(ResumeDownloadTest, NothingKeptWhenNoPartArrived) {
  ASSERT_OK(mem_->PutBytes("obj", RandomBytes(20 * kMiB, 26)));
  const std::string out = dir_.Join("out");
  ScriptedStore broken(mem_.get());
  broken.before_get = [](const ReadOptions&) { return Status::PermissionDenied("injected"); };
  TransferManager tm(OneAtATime());
  ASSERT_FALSE(tm.DownloadFile(broken, "obj", out).ok());
  for (const std::string& e : DirEntries(dir_.path())) {
    EXPECT_EQ(e.find(".strata-"), std::string::npos) << "left behind: " << e;
  }
}

TEST_F(ResumeDownloadTest, NoResumeLeavesNothingBehind) {
  ASSERT_OK(mem_->PutBytes("obj", RandomBytes(20 * kMiB, 25)));
  const std::string out = dir_.Join("out");
  TransferOptions o = OneAtATime();
  o.resume = false;
  ScriptedStore broken(mem_.get());
  std::atomic<int> n{0};
  broken.before_get = [&](const ReadOptions&) {
    return ++n > 2 ? Status::Unavailable("injected") : Status::Ok();
  };
  TransferManager tm(o);
  ASSERT_FALSE(tm.DownloadFile(broken, "obj", out).ok());
  for (const std::string& e : DirEntries(dir_.path())) {
    EXPECT_EQ(e.find(".strata-"), std::string::npos) << "left behind: " << e;
  }
}

}  // namespace
}  // namespace strata::objstore
