// CachedObjectStore over the in-memory store: correctness of every read path,
// staleness, limits under concurrent load, crash safety, admission, readahead.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/cache/cached_object_store.h>
#include <strata/core/metrics.h>
#include <strata/objstore/fault_injection.h>

#include "testutil/testutil.h"

namespace strata::cache {
namespace {

using objstore::FaultInjectionObjectStore;
using objstore::FaultOptions;
using objstore::ObjectStore;
using objstore::ReadOptions;

constexpr uint64_t kBlock = 64 * 1024;

std::string Content(std::string_view key, size_t size, int version) {
  std::mt19937_64 rng(std::hash<std::string_view>{}(key) * 31 + static_cast<uint64_t>(version));
  std::string s(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, size - i));
  }
  return s;
}

std::vector<std::string> BlockFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/blocks", ec)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

class CachedObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = objstore::NewMemObjectStore("cache-test"); }

  CacheOptions Options(uint64_t ram, uint64_t disk) {
    CacheOptions o;
    o.block_size = kBlock;
    o.ram_capacity_bytes = ram;
    if (disk > 0) o.disk_tiers.push_back({dir_.path(), disk, 0.0, 0});
    o.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return o;
  }

  std::unique_ptr<CachedObjectStore> OpenCache(const CacheOptions& o, ObjectStore* base = nullptr) {
    auto r = CachedObjectStore::Open(base ? base : base_.get(), o);
    EXPECT_OK(r);
    return r.ok() ? std::move(*r) : nullptr;
  }

  std::string Put(const std::string& key, size_t size, int version = 1) {
    std::string data = Content(key, size, version);
    EXPECT_OK(base_->PutBytes(key, data));
    return data;
  }

  std::unique_ptr<ObjectStore> base_;
  testing::TempDir dir_{"strata-cache"};
};

TEST_F(CachedObjectStoreTest, ReadsMatchTheBackendAtEveryBlockEdge) {
  auto cache = OpenCache(Options(1 << 20, 8 << 20));
  std::map<std::string, std::string> objects;
  for (size_t size : {size_t{0}, size_t{1}, kBlock - 1, kBlock, kBlock + 1, 3 * kBlock + kBlock / 2}) {
    const std::string key = "obj-" + std::to_string(size);
    objects[key] = Put(key, size);
  }
  std::mt19937_64 rng(7);
  for (int round = 0; round < 3; ++round) {
    for (const auto& [key, data] : objects) {
      ASSERT_OK_AND_ASSIGN(std::string whole, cache->GetBytes(key));
      EXPECT_EQ(whole, data) << key;
      for (int i = 0; i < 20; ++i) {
        const uint64_t off = data.empty() ? 0 : rng() % (data.size() + 2);
        const uint64_t len = rng() % (2 * kBlock + 3);
        ReadOptions ro;
        ro.offset = off;
        ro.length = len;
        ASSERT_OK_AND_ASSIGN(std::string part, cache->GetBytes(key, ro));
        const std::string want = off >= data.size() ? "" : data.substr(off, len);
        ASSERT_EQ(part, want) << key << " @" << off << "+" << len;
      }
    }
  }
  // Everything fitted: each block came from the backend once.
  const CacheStats s = cache->stats();
  uint64_t blocks = 0;
  for (const auto& [key, data] : objects) blocks += (data.size() + kBlock - 1) / kBlock;
  EXPECT_EQ(s.backend_gets, blocks);
  EXPECT_GT(s.tiers[0].hits, 0u);
}

TEST_F(CachedObjectStoreTest, ObjectRewrittenBehindTheCacheIsNeverServedStale) {
  auto cache = OpenCache(Options(1 << 20, 8 << 20));
  const std::string v1 = Put("k", 3 * kBlock);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  ASSERT_EQ(got, v1);
  // Another client rewrites it: same size, other bytes.
  const std::string v2 = Put("k", 3 * kBlock, 2);
  ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k"));
  EXPECT_EQ(got, v2);
  ReadOptions ro;
  ro.offset = kBlock + 10;
  ro.length = 100;
  ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k", ro));
  EXPECT_EQ(got, v2.substr(kBlock + 10, 100));
  // And after a restart, with v1's blocks still on disk.
  cache.reset();
  const std::string v3 = Put("k", 3 * kBlock, 3);
  cache = OpenCache(Options(1 << 20, 8 << 20));
  ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k"));
  EXPECT_EQ(got, v3);
  // Deleted: NotFound, not a cached copy.
  ASSERT_OK(base_->Delete("k"));
  EXPECT_STATUS_CODE(cache->GetBytes("k"), StatusCode::kNotFound);
}

TEST_F(CachedObjectStoreTest, ChangeBetweenHeadAndBlockGetIsRetriedNotMixed) {
  // With a metadata TTL the cache trusts an old ETag; the If-Match on the
  // block GETs catches the rewrite and the read starts over on the new version.
  CacheOptions o = Options(1 << 20, 0);
  o.metadata_ttl_ms = 3600 * 1000;
  auto cache = OpenCache(o);
  Put("k", 4 * kBlock);
  ASSERT_OK(cache->Head("k"));  // remembers v1's ETag
  const std::string v2 = Put("k", 4 * kBlock, 2);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_EQ(got, v2);
}

TEST_F(CachedObjectStoreTest, WritesThroughTheCacheDropOldVersions) {
  // Disk only: with a RAM tier in front, a read can return (from RAM) while
  // the disk copy is still being written.
  auto cache = OpenCache(Options(0, 8 << 20));
  Put("k", 2 * kBlock);
  ASSERT_OK(cache->GetBytes("k"));
  EXPECT_EQ(cache->stats().tiers[0].blocks, 2u);
  const std::string v2 = Content("k", kBlock, 9);
  ASSERT_OK(cache->PutBytes("k", v2));
  EXPECT_EQ(cache->stats().tiers[0].blocks, 0u);
  EXPECT_EQ(BlockFiles(dir_.path()).size(), 0u);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_EQ(got, v2);
  EXPECT_EQ(cache->stats().tiers[0].blocks, 1u);
  ASSERT_OK(cache->Delete("k"));
  EXPECT_EQ(cache->stats().tiers[0].blocks, 0u);
  EXPECT_STATUS_CODE(cache->GetBytes("k"), StatusCode::kNotFound);
}

TEST_F(CachedObjectStoreTest, ReaderIsPinnedToItsVersion) {
  auto cache = OpenCache(Options(1 << 20, 0));
  const std::string v1 = Put("k", 4 * kBlock);
  ASSERT_OK_AND_ASSIGN(auto reader, cache->OpenReader("k"));
  std::string buf(100, '\0');
  ASSERT_OK_AND_ASSIGN(size_t n, reader->ReadAt(5, buf.data(), buf.size()));
  ASSERT_EQ(n, 100u);
  EXPECT_EQ(buf, v1.substr(5, 100));
  Put("k", 4 * kBlock, 2);
  // Block 0 is cached: still v1 (consistent with what this reader saw).
  ASSERT_OK_AND_ASSIGN(n, reader->ReadAt(200, buf.data(), buf.size()));
  EXPECT_EQ(buf, v1.substr(200, 100));
  // Block 3 is not: the backend refuses v1's ETag; never v2's bytes.
  EXPECT_STATUS_CODE(reader->ReadAt(3 * kBlock + 1, buf.data(), buf.size()),
                     StatusCode::kPreconditionFailed);
  // Past the end: 0 bytes.
  ASSERT_OK_AND_ASSIGN(n, reader->ReadAt(4 * kBlock, buf.data(), buf.size()));
  EXPECT_EQ(n, 0u);
}

TEST_F(CachedObjectStoreTest, IfMatchIsHonoured) {
  auto cache = OpenCache(Options(1 << 20, 0));
  Put("k", 10);
  ASSERT_OK_AND_ASSIGN(auto info, base_->Head("k"));
  ReadOptions ro;
  ro.if_match = info.etag;
  EXPECT_OK(cache->GetBytes("k", ro));
  ro.if_match = "\"nope\"";
  EXPECT_STATUS_CODE(cache->GetBytes("k", ro), StatusCode::kPreconditionFailed);
}

TEST_F(CachedObjectStoreTest, DiskTierSurvivesARestart) {
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 5; ++i) {
    std::string k = "o";  // not "o" + to_string(i): GCC 12 warns falsely (-Wrestrict)
    k += std::to_string(i);
    objects[k] = Put(k, 2 * kBlock + i);
  }
  {
    auto cache = OpenCache(Options(0, 8 << 20));
    for (const auto& [k, v] : objects) ASSERT_OK(cache->GetBytes(k));
  }
  auto cache = OpenCache(Options(0, 8 << 20));
  EXPECT_EQ(cache->stats().tiers[0].blocks, 14u);
  for (const auto& [k, v] : objects) {
    ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes(k));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(cache->stats().backend_gets, 0u);
}

TEST_F(CachedObjectStoreTest, CorruptBlockIsDiscardedAndFetchedAgain) {
  const std::string v = Put("k", 2 * kBlock);
  {
    auto cache = OpenCache(Options(0, 8 << 20));
    ASSERT_OK(cache->GetBytes("k"));
  }
  auto files = BlockFiles(dir_.path());
  ASSERT_EQ(files.size(), 2u);
  const std::string path = dir_.path() + "/blocks/" + files[0];
  std::string bytes = testing::ReadFileOrEmpty(path);
  bytes[bytes.size() / 2] ^= 0x40;
  ASSERT_TRUE(testing::WriteFile(path, bytes));
  auto cache = OpenCache(Options(0, 8 << 20));
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_EQ(got, v);
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.tiers[0].corrupt_blocks, 1u);
  EXPECT_EQ(s.backend_gets, 1u);  // only the bad block came again
  // And it is good on disk now.
  cache.reset();
  cache = OpenCache(Options(0, 8 << 20));
  ASSERT_OK_AND_ASSIGN(got, cache->GetBytes("k"));
  EXPECT_EQ(got, v);
  EXPECT_EQ(cache->stats().backend_gets, 0u);
}

TEST_F(CachedObjectStoreTest, LeftoversOfACrashAreRemovedAtOpen) {
  const std::string v = Put("k", 2 * kBlock);
  {
    auto cache = OpenCache(Options(0, 8 << 20));
    ASSERT_OK(cache->GetBytes("k"));
  }
  auto files = BlockFiles(dir_.path());
  ASSERT_EQ(files.size(), 2u);
  const std::string blocks = dir_.path() + "/blocks/";
  // A temp file a crashed fill left, and a block file cut short.
  ASSERT_TRUE(testing::WriteFile(blocks + files[0] + ".tmp.000000000001", "partial"));
  const std::string torn = testing::ReadFileOrEmpty(blocks + files[1]);
  ASSERT_TRUE(testing::WriteFile(blocks + files[1], torn.substr(0, torn.size() / 2)));
  auto cache = OpenCache(Options(0, 8 << 20));
  EXPECT_EQ(BlockFiles(dir_.path()).size(), 1u);
  EXPECT_EQ(cache->stats().tiers[0].corrupt_blocks, 1u);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_EQ(got, v);
}

TEST_F(CachedObjectStoreTest, OneProcessPerCacheDirectory) {
  auto a = OpenCache(Options(0, 1 << 20));
  auto b = CachedObjectStore::Open(base_.get(), Options(0, 1 << 20));
  EXPECT_STATUS_CODE(b, StatusCode::kUnavailable);
}

TEST_F(CachedObjectStoreTest, LimitsHoldUnderConcurrentLoad) {
  // 40 objects of 4 blocks (10 MiB) through a 1 MiB disk tier and a 512 KiB
  // RAM tier, 8 readers, while a sampler measures the real on-disk bytes.
  const uint64_t disk_cap = 1 << 20, ram_cap = 512 << 10;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 40; ++i) {
    const std::string k = "obj/" + std::to_string(i);
    objects[k] = Put(k, 4 * kBlock - 7 * i);
  }
  for (EvictionPolicy policy : {EvictionPolicy::kSieve, EvictionPolicy::kLru}) {
    CacheOptions o = Options(ram_cap, disk_cap);
    o.policy = policy;
    o.admission = AdmissionPolicy::kAll;  // maximum churn
    o.fetch_threads = 8;
    auto cache = OpenCache(o);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> max_disk{0}, max_ram{0}, samples{0}, reads{0};
    std::atomic<int> failures{0};
    std::thread sampler([&] {
      while (!stop.load()) {
        auto d = cache->MeasureDiskUsage(0);
        if (d.ok()) max_disk = std::max<uint64_t>(max_disk.load(), *d);
        const CacheStats s = cache->stats();
        max_ram = std::max<uint64_t>(max_ram.load(), s.tiers[0].used_bytes);
        max_disk = std::max<uint64_t>(max_disk.load(), s.tiers[1].used_bytes);
        ++samples;
      }
    });
    std::vector<std::thread> readers;
    for (int t = 0; t < 8; ++t) {
      readers.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
        while (std::chrono::steady_clock::now() < deadline) {
          auto it = objects.begin();
          std::advance(it, rng() % objects.size());
          ReadOptions ro;
          ro.offset = rng() % it->second.size();
          ro.length = rng() % (3 * kBlock);
          auto got = cache->GetBytes(it->first, ro);
          if (!got.ok() || *got != it->second.substr(ro.offset, *ro.length)) ++failures;
          ++reads;
        }
      });
    }
    for (auto& t : readers) t.join();
    stop = true;
    sampler.join();
    cache->WaitForDiskFills();
    const CacheStats s = cache->stats();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_LE(max_disk.load(), disk_cap) << EvictionPolicyName(policy);
    EXPECT_LE(max_ram.load(), ram_cap) << EvictionPolicyName(policy);
    EXPECT_GT(s.tiers[1].evictions, 0u) << "the test did not fill the cache";
    EXPECT_GT(samples.load(), 10u);
    // At rest, the accounting is exactly what is on disk.
    ASSERT_OK_AND_ASSIGN(uint64_t on_disk, cache->MeasureDiskUsage(0));
    EXPECT_EQ(on_disk, cache->stats().tiers[1].used_bytes);
    std::printf("%s: %llu reads, %llu samples, max disk %llu / %llu, max ram %llu / %llu\n",
                std::string(EvictionPolicyName(policy)).c_str(),
                static_cast<unsigned long long>(reads.load()),
                static_cast<unsigned long long>(samples.load()),
                static_cast<unsigned long long>(max_disk.load()),
                static_cast<unsigned long long>(disk_cap),
                static_cast<unsigned long long>(max_ram.load()),
                static_cast<unsigned long long>(ram_cap));
    cache.reset();
    std::filesystem::remove_all(dir_.path() + "/blocks");
  }
}

TEST_F(CachedObjectStoreTest, BlocksTheRamTierTookReachTheDiskBehindTheRead) {
  const std::string v = Put("k", 3 * kBlock + 5);
  {
    auto cache = OpenCache(Options(1 << 20, 8 << 20));
    ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
    EXPECT_EQ(got, v);
    cache->WaitForDiskFills();
    const CacheStats s = cache->stats();
    EXPECT_EQ(s.tiers[0].blocks, 4u);
    EXPECT_EQ(s.tiers[1].blocks, 4u);
    EXPECT_EQ(BlockFiles(dir_.path()).size(), 4u);
  }
  {
    // Closing right after a read still leaves every block on disk.
    auto cache = OpenCache(Options(0, 8 << 20));
    ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
    EXPECT_EQ(got, v);
    EXPECT_EQ(cache->stats().backend_gets, 0u);
  }
  std::filesystem::remove_all(dir_.path() + "/blocks");
  {
    auto cache = OpenCache(Options(1 << 20, 8 << 20));
    ASSERT_OK(cache->GetBytes("k"));
  }
  auto cache = OpenCache(Options(0, 8 << 20));
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
  EXPECT_EQ(got, v);
  EXPECT_EQ(cache->stats().backend_gets, 0u);
}

TEST_F(CachedObjectStoreTest, FreeSpaceFloorStopsTheDiskTier) {
  CacheOptions o = Options(0, 8 << 20);
  o.disk_tiers[0].min_free_bytes = 1ull << 62;  // more than any disk has
  auto cache = OpenCache(o);
  const std::string v = Put("k", 3 * kBlock);
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("k"));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(cache->stats().tiers[0].blocks, 0u);
  EXPECT_EQ(cache->stats().backend_gets, 6u);
}

TEST_F(CachedObjectStoreTest, OneOffScanDoesNotFlushTheCache) {
  // 8 blocks of RAM; a hot set of 6 single-block objects read 3 times, then
  // a scan of 64 other objects read once, then the hot set again.
  for (int i = 0; i < 6; ++i) Put("hot" + std::to_string(i), kBlock);
  for (int i = 0; i < 64; ++i) Put("scan" + std::to_string(i), kBlock);
  auto run = [&](AdmissionPolicy admission, EvictionPolicy policy) {
    CacheOptions o = Options(8 * kBlock, 0);
    o.admission = admission;
    o.policy = policy;
    auto cache = OpenCache(o);
    for (int r = 0; r < 3; ++r) {
      for (int i = 0; i < 6; ++i) EXPECT_OK(cache->GetBytes("hot" + std::to_string(i)));
    }
    for (int i = 0; i < 64; ++i) EXPECT_OK(cache->GetBytes("scan" + std::to_string(i)));
    const uint64_t before = cache->stats().backend_gets;
    for (int i = 0; i < 6; ++i) EXPECT_OK(cache->GetBytes("hot" + std::to_string(i)));
    return cache->stats().backend_gets - before;  // hot-set misses
  };
  EXPECT_EQ(run(AdmissionPolicy::kTinyLfu, EvictionPolicy::kSieve), 0u);
  EXPECT_EQ(run(AdmissionPolicy::kTinyLfu, EvictionPolicy::kLru), 0u);
  // Without admission control the scan flushes LRU completely.
  EXPECT_EQ(run(AdmissionPolicy::kAll, EvictionPolicy::kLru), 6u);
}

TEST_F(CachedObjectStoreTest, SequentialReadsReadAheadWithAGrowingWindow) {
  const std::string v = Put("big", 32 * kBlock);
  CacheOptions o = Options(64 << 20, 0);
  o.max_readahead_bytes = 8 * kBlock;
  auto cache = OpenCache(o);
  std::string got;
  for (uint64_t off = 0; off < v.size(); off += kBlock / 4) {
    ReadOptions ro;
    ro.offset = off;
    ro.length = kBlock / 4;
    ASSERT_OK_AND_ASSIGN(std::string part, cache->GetBytes("big", ro));
    got += part;
  }
  EXPECT_EQ(got, v);
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.backend_gets, 32u) << "a block was fetched twice";
  EXPECT_EQ(s.readahead_blocks, 31u) << "every block after the first is read ahead";

  // A reader does the same on its own stream; a random reader does not.
  ASSERT_OK(base_->PutBytes("big2", v));
  ASSERT_OK_AND_ASSIGN(auto reader, cache->OpenReader("big2"));
  std::string buf(kBlock / 2, '\0');
  for (uint64_t off = 0; off < 4 * kBlock; off += buf.size()) {
    ASSERT_OK_AND_ASSIGN(size_t n, reader->ReadAt(off, buf.data(), buf.size()));
    ASSERT_EQ(n, buf.size());
  }
  EXPECT_GT(cache->stats().readahead_blocks, 31u);
  const uint64_t ra = cache->stats().readahead_blocks;
  for (uint64_t off : {20 * kBlock, 5 * kBlock, 27 * kBlock}) {
    ASSERT_OK(reader->ReadAt(off, buf.data(), buf.size()));
  }
  EXPECT_EQ(cache->stats().readahead_blocks, ra);
}

TEST_F(CachedObjectStoreTest, ReadAheadBlocksAFullCacheRejectsAreStillServed) {
  // A 2-block cache with TinyLFU: read-ahead blocks (never used before) lose
  // admission, wait in staging, and the reader still gets them without a
  // second backend GET.
  const std::string v = Put("big", 16 * kBlock);
  for (int i = 0; i < 2; ++i) Put("hot" + std::to_string(i), kBlock);
  auto cache = OpenCache(Options(2 * kBlock, 0));
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 2; ++i) ASSERT_OK(cache->GetBytes("hot" + std::to_string(i)));
  }
  const uint64_t before = cache->stats().backend_gets;
  std::string got;
  for (uint64_t off = 0; off < v.size(); off += kBlock / 2) {
    ReadOptions ro;
    ro.offset = off;
    ro.length = kBlock / 2;
    ASSERT_OK_AND_ASSIGN(std::string part, cache->GetBytes("big", ro));
    got += part;
  }
  EXPECT_EQ(got, v);
  EXPECT_EQ(cache->stats().backend_gets - before, 16u);
  EXPECT_GT(cache->stats().staged_hits, 0u);
}

TEST_F(CachedObjectStoreTest, ParallelFetchOfOneLargeRead) {
  // 16 blocks behind 20 ms of first-byte latency: fetched 8 at a time, the
  // read takes ~2 round trips, not 16 (checked loosely: it only must finish
  // and fetch each block once).
  const std::string v = Put("big", 16 * kBlock);
  FaultOptions f;
  f.first_byte_latency_us = 20000;
  FaultInjectionObjectStore slow(base_.get(), f);
  auto cache = OpenCache(Options(64 << 20, 0), &slow);
  ASSERT_OK_AND_ASSIGN(std::string got, cache->GetBytes("big"));
  EXPECT_EQ(got, v);
  EXPECT_EQ(cache->stats().backend_gets, 16u);
  EXPECT_EQ(slow.stats().requests, 17u);  // 16 GETs + 1 HEAD
}

TEST_F(CachedObjectStoreTest, PriorityPolicyEvictsTheFurthestNextUse) {
  for (int i = 0; i < 4; ++i) Put("s" + std::to_string(i), kBlock);
  CacheOptions o = Options(0, 1 << 20);
  // Room for exactly three blocks on disk (each block file: 64 KiB + header,
  // rounded to 4 KiB, plus slack).
  o.disk_tiers[0].capacity_bytes = 3 * (kBlock + 8192) + 4096 * 2;
  o.policy = EvictionPolicy::kPriority;
  auto cache = OpenCache(o);
  cache->SetKeyPriority("s0", 10);
  cache->SetKeyPriority("s1", 30);
  cache->SetKeyPriority("s2", 20);
  cache->SetKeyPriority("s3", 5);
  for (int i = 0; i < 3; ++i) ASSERT_OK(cache->GetBytes("s" + std::to_string(i)));
  ASSERT_EQ(cache->stats().tiers[0].blocks, 3u);
  // s3 (needed soonest) displaces s1 (needed last).
  ASSERT_OK(cache->GetBytes("s3"));
  ASSERT_OK_AND_ASSIGN(auto i1, base_->Head("s1"));
  ASSERT_OK_AND_ASSIGN(auto i3, base_->Head("s3"));
  EXPECT_FALSE(cache->IsResident(i1));
  EXPECT_TRUE(cache->IsResident(i3));
  // A key needed after everything resident is not admitted.
  cache->SetKeyPriority("s1", 100);
  ASSERT_OK(cache->GetBytes("s1"));
  EXPECT_FALSE(cache->IsResident(i1));
  // Pinned keys are never evicted, whatever their priority.
  cache->Pin("s0");
  cache->SetKeyPriority("s0", CachedObjectStore::kNoFurtherUse);
  cache->SetKeyPriority("s1", 1);
  ASSERT_OK(cache->GetBytes("s1"));
  ASSERT_OK_AND_ASSIGN(auto i0, base_->Head("s0"));
  EXPECT_TRUE(cache->IsResident(i0));
  EXPECT_TRUE(cache->IsResident(i1));
  cache->Unpin("s0");
}

TEST_F(CachedObjectStoreTest, PrefetchMakesAnObjectResident) {
  Put("k", 5 * kBlock + 3);
  auto cache = OpenCache(Options(0, 8 << 20));
  ASSERT_OK_AND_ASSIGN(auto info, base_->Head("k"));
  EXPECT_FALSE(cache->IsResident(info));
  ASSERT_OK_AND_ASSIGN(bool resident, cache->Prefetch(info));
  EXPECT_TRUE(resident);
  EXPECT_TRUE(cache->IsResident(info));
  ASSERT_OK(cache->GetBytes("k"));
  EXPECT_EQ(cache->stats().backend_gets, 6u);
}

TEST_F(CachedObjectStoreTest, SeveralDiskTiersShareBlocksByCapacity) {
  testing::TempDir second("strata-cache2");
  CacheOptions o = Options(0, 48 << 20);
  o.disk_tiers.push_back({second.path(), 16 << 20, 0.0, 0});
  auto cache = OpenCache(o);
  Put("big", 200 * kBlock);
  ASSERT_OK(cache->GetBytes("big"));
  const CacheStats s = cache->stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_EQ(s.tiers[0].blocks + s.tiers[1].blocks, 200u);
  // 3:1 by capacity, loosely.
  EXPECT_GT(s.tiers[0].blocks, 120u);
  EXPECT_GT(s.tiers[1].blocks, 25u);
}

TEST_F(CachedObjectStoreTest, MetricsArePerTier) {
  Put("k", kBlock);
  // Counters are process-wide: a name of its own per run (--gtest_repeat).
  static int run = 0;
  const std::string name = "MetricsArePerTier" + std::to_string(++run);
  auto options = [&](uint64_t ram, uint64_t disk) {
    CacheOptions o = Options(ram, disk);
    o.name = name;
    return o;
  };
  {
    auto cache = OpenCache(options(1 << 20, 0));
    ASSERT_OK(cache->GetBytes("k"));
    ASSERT_OK(cache->GetBytes("k"));
  }
  {
    auto cache = OpenCache(options(0, 8 << 20));
    ASSERT_OK(cache->GetBytes("k"));
    ASSERT_OK(cache->GetBytes("k"));
    ASSERT_OK(cache->GetBytes("k"));
  }
  const std::string text = metrics::Registry::Global().ExportPrometheus();
  auto has = [&](const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
  };
  const std::string ram = "{cache=\"" + name + "\",tier=\"ram\"}";
  const std::string disk = "{cache=\"" + name + "\",tier=\"disk0\"}";
  EXPECT_TRUE(has("strata_cache_hits_total" + ram + " 1")) << text;
  EXPECT_TRUE(has("strata_cache_misses_total" + ram + " 1"));
  EXPECT_TRUE(has("strata_cache_fill_bytes_total" + ram + " 65536"));
  EXPECT_TRUE(has("strata_cache_hits_total" + disk + " 2")) << text;
  EXPECT_TRUE(has("strata_cache_misses_total" + disk + " 1"));
  EXPECT_TRUE(has("strata_cache_fill_bytes_total" + disk + " 65536"));
  EXPECT_TRUE(has("strata_cache_capacity_bytes" + disk + " 8388608"));
  EXPECT_TRUE(has("strata_cache_evictions_total" + disk + " 0"));
  EXPECT_TRUE(has("strata_cache_backend_gets_total{cache=\"" + name + "\"} 2"));
}

// kill -9 a process in the middle of filling the cache, several times, then
// check that whatever it left is either a good block or gone.
TEST(CacheCrashTest, KillDuringFillNeverServesACorruptBlock) {
  testing::TempDir dir("strata-cache-crash");
  auto populate = [](ObjectStore& s, std::map<std::string, std::string>* out) {
    for (int i = 0; i < 24; ++i) {
      const std::string k = "shard-" + std::to_string(i);
      std::string data = Content(k, 5 * kBlock + 1000 * i, 1);
      if (!s.PutBytes(k, data).ok()) return false;
      if (out) (*out)[k] = std::move(data);
    }
    return true;
  };
  CacheOptions o;
  o.block_size = kBlock;
  o.ram_capacity_bytes = 0;
  o.disk_tiers.push_back({dir.path(), 6 << 20, 0.0, 0});
  o.admission = AdmissionPolicy::kAll;
  std::mt19937_64 rng(42);
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: fill (and churn) the cache until killed.
      auto mem = objstore::NewMemObjectStore("crash-child");
      if (!populate(*mem, nullptr)) ::_exit(2);
      FaultOptions f;
      f.stream_bytes_per_sec = 32 << 20;
      FaultInjectionObjectStore slow(mem.get(), f);
      auto cache = CachedObjectStore::Open(&slow, o);
      if (!cache.ok()) ::_exit(3);
      std::mt19937_64 crng(static_cast<uint64_t>(::getpid()));
      for (;;) {
        const std::string k = "shard-" + std::to_string(crng() % 24);
        (void)(*cache)->GetBytes(k);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 300));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited on its own: " << status;
  }
  const auto files = BlockFiles(dir.path());
  ASSERT_FALSE(files.empty()) << "the children never filled anything";
  // What a power loss could add on top: a block file cut short and one
  // zero-filled under their final names.
  std::vector<std::string> blk;
  for (const auto& f : files) {
    if (f.size() > 4 && f.substr(f.size() - 4) == ".blk") blk.push_back(f);
  }
  ASSERT_GE(blk.size(), 2u);
  const std::string b0 = dir.path() + "/blocks/" + blk[0];
  const std::string b1 = dir.path() + "/blocks/" + blk[1];
  const std::string c0 = testing::ReadFileOrEmpty(b0);
  ASSERT_TRUE(testing::WriteFile(b0, c0.substr(0, c0.size() - 100)));
  const std::string c1 = testing::ReadFileOrEmpty(b1);
  ASSERT_TRUE(testing::WriteFile(b1, std::string(c1.size(), '\0')));

  auto mem = objstore::NewMemObjectStore("crash-parent");
  std::map<std::string, std::string> want;
  ASSERT_TRUE(populate(*mem, &want));
  auto cache = CachedObjectStore::Open(mem.get(), o);
  ASSERT_OK(cache);
  for (const auto& f : BlockFiles(dir.path())) {
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << "temp file left behind: " << f;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [k, v] : want) {
      ASSERT_OK_AND_ASSIGN(std::string got, (*cache)->GetBytes(k));
      ASSERT_EQ(got, v) << k;
    }
  }
  const CacheStats s = (*cache)->stats();
  EXPECT_GE(s.tiers[0].corrupt_blocks, 2u);
  std::printf("%zu files survived 6 kills; %llu bad blocks discarded; %llu blocks served from disk\n",
              files.size(), static_cast<unsigned long long>(s.tiers[0].corrupt_blocks),
              static_cast<unsigned long long>(s.tiers[0].hits));
}

}  // namespace
}  // namespace strata::cache
