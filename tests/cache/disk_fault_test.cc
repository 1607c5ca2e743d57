// Faults injected at the file layer (core/fault_injection.h) under the cache:
// a full disk (ENOSPC after a short write) or a failing device (EIO) while a
// block file or a checkpoint file is written. Reads are still served (from the
// backend), saves and loads fail with an error naming the file, nothing
// partial is left that could be taken for data, what was stored before stays
// readable, and writes succeed again once the fault clears.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/cache/cached_object_store.h>
#include <strata/cache/checkpoint.h>
#include <strata/core/fault_injection.h>

#include "testutil/testutil.h"

namespace strata::cache {
namespace {

constexpr uint64_t kBlock = 64 * 1024;

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class CacheBlockFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = objstore::NewMemObjectStore("cache-fault"); }
  void TearDown() override { fault::ClearFaults(); }
  // Disk tier only, so every fetched block is written to a block file at once.
  std::unique_ptr<CachedObjectStore> OpenCache() {
    CacheOptions o;
    o.block_size = kBlock;
    o.ram_capacity_bytes = 0;
    o.disk_tiers.push_back({dir_.path(), 8 << 20, 0.0, 0});
    o.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    auto r = CachedObjectStore::Open(base_.get(), o);
    EXPECT_OK(r);
    return r.ok() ? std::move(*r) : nullptr;
  }
  std::unique_ptr<objstore::ObjectStore> base_;
  testing::TempDir dir_{"strata-cache-fault"};
  const std::string blocks_ = dir_.path() + "/blocks";
};

TEST_F(CacheBlockFaultTest, EnospcShortWriteOfEveryBlockFileStillServesReads) {
  const std::string v = Bytes(3 * kBlock, 1);
  ASSERT_OK(base_->PutBytes("k", v));
  {
    auto cache = OpenCache();
    const uint64_t before = fault::FaultsInjected();
    fault::InjectWriteFault({.path_contains = blocks_, .err = ENOSPC, .written_first = 100});
    ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
    EXPECT_TRUE(got == v);
    EXPECT_EQ(before + 3, fault::FaultsInjected());
    EXPECT_EQ(0u, cache->stats().tiers[0].blocks);
    EXPECT_TRUE(Entries(blocks_).empty()) << "a partial block file was left";
    // The disk has room again: the next read fills the tier.
    fault::ClearFaults();
    ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k"));
    EXPECT_TRUE(got == v);
    EXPECT_EQ(3u, cache->stats().tiers[0].blocks);
  }
  auto cache = OpenCache();
  EXPECT_EQ(3u, cache->stats().tiers[0].blocks);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_TRUE(got == v);
  EXPECT_EQ(0u, cache->stats().backend_gets);
}

TEST_F(CacheBlockFaultTest, EioOnOneBlockFileKeepsTheOthers) {
  const std::string v = Bytes(3 * kBlock, 2);
  ASSERT_OK(base_->PutBytes("k", v));
  auto cache = OpenCache();
  fault::InjectWriteFault({.path_contains = blocks_, .skip = 1, .err = EIO, .times = 1});
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_TRUE(got == v);
  EXPECT_EQ(2u, cache->stats().tiers[0].blocks);
  EXPECT_EQ(2u, Entries(blocks_).size());
  const uint64_t gets = cache->stats().backend_gets;
  ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k"));
  EXPECT_TRUE(got == v);
  EXPECT_EQ(gets + 1, cache->stats().backend_gets);  // only the block that failed
  EXPECT_EQ(3u, cache->stats().tiers[0].blocks);
}

class CheckpointFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = objstore::NewMemObjectStore("ckpt-fault"); }
  void TearDown() override { fault::ClearFaults(); }
  CheckpointOptions Options(objstore::ObjectStore* store) {
    CheckpointOptions o;
    o.local_dir = dir_.Join("local");
    o.store = store;
    o.prefix = "run/";
    o.keep_local = 0;
    o.attempts = 1;
    return o;
  }
  // Saves step 1, then fails step 2 with `f`; checks nothing of step 2 is
  // left and step 1 is intact (also after reopening), then saves step 2.
  void CheckFailedSave(fault::WriteFault f, StatusCode want) {
    const CheckpointOptions o = Options(nullptr);
    const std::string m1 = Bytes(3 << 20, 1), m2 = Bytes(3 << 20, 2), opt = Bytes(5000, 3);
    {
      ASSERT_OK_AND_ASSIGN(auto m, CheckpointManager::Open(o));
      ASSERT_OK(m->Save(1, {CheckpointItem::Blob("model.bin", m1),
                            CheckpointItem::Blob("optim/rank0.bin", opt)}));
      const std::string file = f.path_contains;
      fault::InjectWriteFault(std::move(f));
      Status st = m->Save(
          2, {CheckpointItem::Blob("model.bin", m2), CheckpointItem::Blob("optim/rank0.bin", opt)});
      ASSERT_FALSE(st.ok());
      EXPECT_EQ(want, st.code()) << st.ToString();
      EXPECT_NE(std::string::npos, st.ToString().find(file)) << st.ToString();
      EXPECT_NE(std::string::npos, st.ToString().find("step 2")) << st.ToString();
      EXPECT_EQ(std::vector<std::string>{"step-000000000001"}, Entries(o.local_dir));
      ASSERT_OK_AND_ASSIGN(auto list, m->List(false));
      ASSERT_EQ(1u, list.size());
      EXPECT_EQ(1u, list[0].step);
    }
    fault::ClearFaults();
    ASSERT_OK_AND_ASSIGN(auto m, CheckpointManager::Open(o));
    EXPECT_TRUE(m->recovery_report().empty());
    ASSERT_OK_AND_ASSIGN(std::string got, m->ReadFile(1, "model.bin"));
    EXPECT_TRUE(got == m1);
    ASSERT_OK(m->Save(
        2, {CheckpointItem::Blob("model.bin", m2), CheckpointItem::Blob("optim/rank0.bin", opt)}));
    ASSERT_OK_AND_ASSIGN(got, m->ReadFile(2, "model.bin"));
    EXPECT_TRUE(got == m2);
  }
  std::unique_ptr<objstore::ObjectStore> store_;
  testing::TempDir dir_{"strata-ckpt-fault"};
};

TEST_F(CheckpointFaultTest, EnospcShortWriteOfAnItemFailsTheSave) {
  CheckFailedSave({.path_contains = "model.bin", .err = ENOSPC, .written_first = 4096, .times = 1},
                  StatusCode::kResourceExhausted);
}

TEST_F(CheckpointFaultTest, EioWritingTheManifestFailsTheSave) {
  CheckFailedSave({.path_contains = "MANIFEST.json", .err = EIO, .times = 1}, StatusCode::kIOError);
}

TEST_F(CheckpointFaultTest, EnospcWhileDownloadingLeavesNoLocalCopy) {
  const std::string model = Bytes(2 << 20, 4);
  CheckpointOptions o = Options(store_.get());
  ASSERT_OK_AND_ASSIGN(auto m, CheckpointManager::Open(o));
  ASSERT_OK(m->Save(7, {CheckpointItem::Blob("model.bin", model)}));
  ASSERT_OK(m->Wait());
  ASSERT_OK(m->Remove(7, /*local=*/true, /*remote=*/false));
  fault::InjectWriteFault(
      {.path_contains = o.local_dir, .err = ENOSPC, .written_first = 1000, .times = 1});
  auto r = m->Load(7);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(StatusCode::kResourceExhausted, r.error().code()) << r.error().ToString();
  EXPECT_NE(std::string::npos, r.error().ToString().find("model.bin")) << r.error().ToString();
  EXPECT_TRUE(Entries(o.local_dir).empty()) << "a partial download was left";
  ASSERT_OK_AND_ASSIGN(LoadedCheckpoint loaded, m->Load(7));  // the fault has cleared
  EXPECT_TRUE(loaded.from_remote);
  ASSERT_OK_AND_ASSIGN(std::string got, m->ReadFile(7, "model.bin"));
  EXPECT_TRUE(got == model);
}

}  // namespace
}  // namespace strata::cache
