// CheckpointManager: local-first saves, background uploads published by a
// manifest written last, loads (local, verified; remote, parallel or one
// stream), keep-last-N, recovery, and kill -9 in the middle of an upload.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/cache/checkpoint.h>
#include <strata/objstore/fault_injection.h>

#include "testutil/testutil.h"

namespace strata::cache {
namespace {

using objstore::FaultInjectionObjectStore;
using objstore::FaultOptions;
using objstore::ObjectStore;

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

bool RemoteHasManifest(ObjectStore& store, const std::string& prefix, uint64_t step) {
  return store.Head(prefix + CheckpointManager::StepName(step) + "/MANIFEST.json").ok();
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = objstore::NewMemObjectStore("ckpt"); }

  CheckpointOptions Options(ObjectStore* store) {
    CheckpointOptions o;
    o.local_dir = dir_.Join("local");
    o.store = store;
    o.prefix = "run/";
    o.part_size = 5 << 20;
    o.multipart_threshold = 5 << 20;
    o.upload_concurrency = 4;
    o.attempts = 2;
    o.keep_local = 0;
    return o;
  }

  std::unique_ptr<CheckpointManager> OpenManager(const CheckpointOptions& o) {
    auto m = CheckpointManager::Open(o);
    EXPECT_OK(m);
    return m.ok() ? std::move(*m) : nullptr;
  }

  std::unique_ptr<ObjectStore> store_;
  testing::TempDir dir_{"strata-ckpt"};
};

TEST_F(CheckpointTest, SaveIsDurableLocallyThenPublishedWithAManifest) {
  auto m = OpenManager(Options(store_.get()));
  const std::string model = Bytes(12 << 20, 1);  // multipart
  const std::string opt = Bytes(1000, 2);
  const std::string src = dir_.Join("extra.bin");
  ASSERT_TRUE(testing::WriteFile(src, Bytes(77777, 3)));
  ASSERT_OK(m->Save(10, {CheckpointItem::Blob("model.bin", model),
                         CheckpointItem::Blob("optim/rank0.bin", opt),
                         CheckpointItem::File("extra.bin", src)}));
  // Durable locally the moment Save returns.
  const std::string local = dir_.Join("local/step-000000000010");
  EXPECT_EQ(testing::ReadFileOrEmpty(local + "/model.bin"), model);
  EXPECT_EQ(testing::ReadFileOrEmpty(local + "/optim/rank0.bin"), opt);
  EXPECT_TRUE(std::filesystem::exists(local + "/MANIFEST.json"));
  ASSERT_OK(m->Wait());
  EXPECT_TRUE(RemoteHasManifest(*store_, "run/", 10));
  EXPECT_FALSE(std::filesystem::exists(local + "/.upload"));
  ASSERT_OK_AND_ASSIGN(auto remote_model, store_->GetBytes("run/step-000000000010/model.bin"));
  EXPECT_EQ(remote_model, model);

  ASSERT_OK_AND_ASSIGN(auto list, m->List());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list[0].local);
  EXPECT_TRUE(list[0].remote);
  EXPECT_FALSE(list[0].uploading);
  EXPECT_EQ(list[0].bytes, model.size() + opt.size() + 77777);
  ASSERT_EQ(list[0].files.size(), 3u);
  for (const auto& f : list[0].files) {
    EXPECT_EQ(f.sha256.size(), 64u) << f.name;
    EXPECT_FALSE(f.etag.empty()) << f.name;
  }
  ASSERT_OK_AND_ASSIGN(std::string back, m->ReadFile(10, "optim/rank0.bin"));
  EXPECT_EQ(back, opt);
  ASSERT_OK_AND_ASSIGN(auto latest, m->Latest());
  EXPECT_EQ(latest, std::optional<uint64_t>(10));
  EXPECT_STATUS_CODE(m->Save(10, {CheckpointItem::Blob("x", "y")}), StatusCode::kAlreadyExists);
}

TEST_F(CheckpointTest, BadItemsAreRefusedBeforeAnythingIsWritten) {
  auto m = OpenManager(Options(nullptr));
  EXPECT_STATUS_CODE(m->Save(1, {CheckpointItem::Blob("../escape", "x")}), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(m->Save(1, {CheckpointItem::Blob("/abs", "x")}), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(m->Save(1, {CheckpointItem::Blob("MANIFEST.json", "x")}), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(m->Save(1, {CheckpointItem::Blob("a", "x"), CheckpointItem::Blob("a", "y")}),
                     StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(m->Save(1, {CheckpointItem::File("a", dir_.Join("nope"))}), StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(auto list, m->List());
  EXPECT_TRUE(list.empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir_.Join("local")));
}

TEST_F(CheckpointTest, AFailedUploadPublishesNothingAndIsRetried) {
  FaultOptions f;
  f.error_rate = 1.0;  // every request fails
  FaultInjectionObjectStore flaky(store_.get(), f);
  auto m = OpenManager(Options(&flaky));
  const std::string model = Bytes(11 << 20, 4);
  ASSERT_OK(m->Save(3, {CheckpointItem::Blob("model.bin", model), CheckpointItem::Blob("small", "abc")}));
  EXPECT_STATUS_CODE(m->Wait(), StatusCode::kUnavailable);
  EXPECT_FALSE(RemoteHasManifest(*store_, "run/", 3));
  EXPECT_STATUS_CODE(m->List(), StatusCode::kUnavailable);
  ASSERT_OK_AND_ASSIGN(auto list, m->List(/*remote=*/false));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list[0].local);
  EXPECT_TRUE(list[0].uploading);
  EXPECT_FALSE(list[0].remote);
  // Half the requests fail: some files or parts land, the manifest must not.
  f.error_rate = 0.5;
  f.seed = 9;
  flaky.SetOptions(f);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(m->Retry());
    if (m->Wait().ok()) break;
    EXPECT_FALSE(RemoteHasManifest(*store_, "run/", 3));
  }
  flaky.SetOptions(FaultOptions{});
  ASSERT_OK(m->Retry());
  ASSERT_OK(m->Wait());
  EXPECT_TRUE(RemoteHasManifest(*store_, "run/", 3));
  ASSERT_OK_AND_ASSIGN(auto remote_model, store_->GetBytes("run/step-000000000003/model.bin"));
  EXPECT_EQ(remote_model, model);
}

TEST_F(CheckpointTest, LoadChecksTheLocalCopyAndFallsBackToTheRemoteOne) {
  auto m = OpenManager(Options(store_.get()));
  const std::string model = Bytes(9 << 20, 5);
  ASSERT_OK(m->Save(7, {CheckpointItem::Blob("model.bin", model)}));
  ASSERT_OK(m->Wait());
  ASSERT_OK_AND_ASSIGN(auto ck, m->Load(7));
  EXPECT_FALSE(ck.from_remote);
  EXPECT_EQ(testing::ReadFileOrEmpty(ck.PathOf("model.bin")), model);
  // One flipped byte in the local copy.
  std::string bad = model;
  bad[12345] ^= 1;
  ASSERT_TRUE(testing::WriteFile(ck.PathOf("model.bin"), bad));
  EXPECT_STATUS_CODE(m->Load(7, {LoadOptions::Source::kLocal, 4}), StatusCode::kCorruption);
  ASSERT_OK_AND_ASSIGN(ck, m->Load(7));
  EXPECT_TRUE(ck.from_remote);
  EXPECT_EQ(testing::ReadFileOrEmpty(ck.PathOf("model.bin")), model);
  // Now the local copy is good again.
  ASSERT_OK_AND_ASSIGN(ck, m->Load(7));
  EXPECT_FALSE(ck.from_remote);
}

TEST_F(CheckpointTest, RemoteLoadsOneStreamOrParallel) {
  auto m = OpenManager(Options(store_.get()));
  const std::string a = Bytes(13 << 20, 6), b = Bytes(100, 7);
  ASSERT_OK(m->Save(5, {CheckpointItem::Blob("a", a), CheckpointItem::Blob("dir/b", b)}));
  ASSERT_OK(m->Wait());
  for (int conc : {1, 8}) {
    ASSERT_OK(m->Remove(5, /*local=*/true, /*remote=*/false));
    EXPECT_STATUS_CODE(m->Load(5, {LoadOptions::Source::kLocal, conc}), StatusCode::kNotFound);
    ASSERT_OK_AND_ASSIGN(auto ck, m->Load(5, {LoadOptions::Source::kAuto, conc}));
    EXPECT_TRUE(ck.from_remote);
    EXPECT_EQ(testing::ReadFileOrEmpty(ck.PathOf("a")), a) << conc;
    EXPECT_EQ(testing::ReadFileOrEmpty(ck.PathOf("dir/b")), b) << conc;
  }
  // A remote object damaged behind our back is caught by the manifest's CRC.
  std::string bad = a;
  bad[5] ^= 1;
  ASSERT_OK(store_->PutBytes("run/step-000000000005/a", bad));
  ASSERT_OK(m->Remove(5, true, false));
  EXPECT_STATUS_CODE(m->Load(5), StatusCode::kCorruption);
  EXPECT_STATUS_CODE(m->Load(99), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, KeepsTheNewestNLocallyAndRemotelySeparately) {
  CheckpointOptions o = Options(store_.get());
  o.keep_local = 2;
  o.keep_remote = 3;
  auto m = OpenManager(o);
  for (uint64_t s = 1; s <= 5; ++s) {
    ASSERT_OK(m->Save(s * 100, {CheckpointItem::Blob("w", Bytes(1000, s))}));
    ASSERT_OK(m->Wait());
  }
  ASSERT_OK_AND_ASSIGN(auto list, m->List());
  std::vector<uint64_t> local, remote;
  for (const auto& c : list) {
    if (c.local) local.push_back(c.step);
    if (c.remote) remote.push_back(c.step);
  }
  EXPECT_EQ(local, (std::vector<uint64_t>{400, 500}));
  EXPECT_EQ(remote, (std::vector<uint64_t>{300, 400, 500}));
  // Deleted remote checkpoints leave no files behind.
  EXPECT_STATUS_CODE(store_->Head("run/step-000000000100/w"), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, ACheckpointNotYetUploadedIsNeverDeletedLocally) {
  FaultOptions f;
  f.error_rate = 1.0;
  FaultInjectionObjectStore down(store_.get(), f);
  CheckpointOptions o = Options(&down);
  o.keep_local = 1;
  auto m = OpenManager(o);
  for (uint64_t s = 1; s <= 3; ++s) {
    ASSERT_OK(m->Save(s, {CheckpointItem::Blob("w", "x")}));
    (void)m->Wait();
  }
  ASSERT_OK_AND_ASSIGN(auto list, m->List(/*remote=*/false));
  EXPECT_EQ(list.size(), 3u);
  EXPECT_STATUS_CODE(m->Remove(1, true, false), StatusCode::kPreconditionFailed);
  ASSERT_OK(m->Remove(1, true, false, /*force=*/true));
  down.SetOptions(FaultOptions{});
  ASSERT_OK(m->Retry());
  ASSERT_OK(m->Wait());
  ASSERT_OK_AND_ASSIGN(list, m->List());
  // 2 and 3 published; locally only the newest stays now.
  ASSERT_EQ(list.size(), 2u);
  EXPECT_FALSE(list[0].local);
  EXPECT_TRUE(list[0].remote);
  EXPECT_TRUE(list[1].local && list[1].remote);
}

TEST_F(CheckpointTest, LeftoversOfAnInterruptedSaveAreRemovedAtOpen) {
  const std::string local = dir_.Join("local");
  std::filesystem::create_directories(local + "/.step-000000000007.partial-0000beef");
  ASSERT_TRUE(testing::WriteFile(local + "/.step-000000000007.partial-0000beef/model.bin", "half"));
  std::filesystem::create_directories(local + "/step-000000000008");  // no manifest
  auto m = OpenManager(Options(nullptr));
  EXPECT_FALSE(std::filesystem::exists(local + "/.step-000000000007.partial-0000beef"));
  EXPECT_FALSE(std::filesystem::exists(local + "/step-000000000008"));
  EXPECT_EQ(m->recovery_report().size(), 2u);
  ASSERT_OK_AND_ASSIGN(auto list, m->List());
  EXPECT_TRUE(list.empty());
}

TEST_F(CheckpointTest, RemoveDeletesTheManifestFirst) {
  auto m = OpenManager(Options(store_.get()));
  ASSERT_OK(m->Save(1, {CheckpointItem::Blob("a", "1"), CheckpointItem::Blob("b", "2")}));
  ASSERT_OK(m->Wait());
  ASSERT_OK(m->Remove(1, false, true));
  EXPECT_FALSE(RemoteHasManifest(*store_, "run/", 1));
  ASSERT_OK_AND_ASSIGN(auto page, store_->List("run/", "", ""));
  EXPECT_TRUE(page.objects.empty());
  ASSERT_OK_AND_ASSIGN(auto list, m->List());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list[0].local);
  EXPECT_FALSE(list[0].remote);
}

// kill -9 a process while it uploads a checkpoint, then check the remote side
// has no checkpoint, the next start reports or resumes it, and the resumed
// upload publishes the right bytes.
TEST(CheckpointCrashTest, KillMidUploadNeverPublishesAPartialCheckpoint) {
  testing::TempDir dir("strata-ckpt-crash");
  const std::string url = "file://" + dir.Join("store") + "?bucket=ckpt";
  const std::string local = dir.Join("local");
  const std::string model = Bytes(40 << 20, 11);
  CheckpointOptions o;
  o.local_dir = local;
  o.prefix = "job/";
  o.part_size = 5 << 20;
  o.multipart_threshold = 5 << 20;
  o.upload_concurrency = 2;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto base = objstore::OpenObjectStore(url);
    if (!base.ok()) ::_exit(2);
    FaultOptions f;
    f.total_bytes_per_sec = 8 << 20;  // ~5 s for the whole upload
    FaultInjectionObjectStore slow(base->get(), f);
    CheckpointOptions co = o;
    co.store = &slow;
    auto m = CheckpointManager::Open(co);
    if (!m.ok()) ::_exit(3);
    if (!(*m)->Save(42, {CheckpointItem::Blob("model.bin", model),
                         CheckpointItem::Blob("meta.json", "{\"step\": 42}")})
             .ok()) {
      ::_exit(4);
    }
    (void)(*m)->Wait();
    ::_exit(0);
  }
  // Kill it once the local copy is durable and the upload is well under way.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(local + "/step-000000000042/MANIFEST.json") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed: " << status;

  ASSERT_OK_AND_ASSIGN(auto store, objstore::OpenObjectStore(url));
  EXPECT_FALSE(RemoteHasManifest(*store, "job/", 42)) << "a partial checkpoint was published";
  {
    CheckpointOptions co = o;
    co.store = store.get();
    co.resume = false;
    ASSERT_OK_AND_ASSIGN(auto m, CheckpointManager::Open(co));
    bool reported = false;
    for (const auto& line : m->recovery_report()) {
      if (line.find("step 42") != std::string::npos && line.find("interrupted") != std::string::npos) {
        reported = true;
      }
    }
    EXPECT_TRUE(reported) << "the interrupted upload was not reported";
    ASSERT_OK_AND_ASSIGN(auto list, m->List());
    ASSERT_EQ(list.size(), 1u);
    EXPECT_TRUE(list[0].local && list[0].uploading && !list[0].remote);
    ASSERT_OK(m->Wait());
    EXPECT_FALSE(RemoteHasManifest(*store, "job/", 42));
  }
  CheckpointOptions co = o;
  co.store = store.get();
  ASSERT_OK_AND_ASSIGN(auto m, CheckpointManager::Open(co));
  ASSERT_OK(m->Wait());
  EXPECT_TRUE(RemoteHasManifest(*store, "job/", 42));
  ASSERT_OK(m->Remove(42, /*local=*/true, /*remote=*/false));
  ASSERT_OK_AND_ASSIGN(auto ck, m->Load(42));
  EXPECT_TRUE(ck.from_remote);
  EXPECT_TRUE(testing::ReadFileOrEmpty(ck.PathOf("model.bin")) == model);
  EXPECT_EQ(testing::ReadFileOrEmpty(ck.PathOf("meta.json")), "{\"step\": 42}");
}

}  // namespace
}  // namespace strata::cache
