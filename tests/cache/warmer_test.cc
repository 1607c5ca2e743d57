// Warmer: order, background warming, Belady eviction, restart, shards that do
// not fit, failures, the progress file.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/cache/warmer.h>
#include <strata/objstore/fault_injection.h>

#include "testutil/testutil.h"

namespace strata::cache {
namespace {

using objstore::ObjectStore;

constexpr uint64_t kBlock = 64 * 1024;

WarmerOptions Opts(size_t lookahead, int concurrency, std::string state = "") {
  WarmerOptions o;
  o.lookahead = lookahead;
  o.concurrency = concurrency;
  o.state_file = std::move(state);
  return o;
}

std::string Content(const std::string& key, size_t size) {
  std::mt19937_64 rng(std::hash<std::string>{}(key));
  std::string s(size, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string ReadAll(CachedReader& r) {
  std::string out;
  EXPECT_OK(r.Read(0, r.info().size, [&](const char* p, size_t n) {
    out.append(p, n);
    return Status::Ok();
  }));
  return out;
}

class WarmerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = objstore::NewMemObjectStore("warmer-test");
    for (int i = 0; i < 8; ++i) {
      std::string k = "shard-";  // not "shard-" + to_string(i): GCC 12 warns falsely
      k += std::to_string(i);
      data_[k] = Content(k, 2 * kBlock + 100 * i);
      ASSERT_OK(base_->PutBytes(k, data_[k]));
      keys_.push_back(k);
    }
  }
  std::unique_ptr<CachedObjectStore> Cache(uint64_t ram, uint64_t disk, EvictionPolicy policy,
                                           ObjectStore* base = nullptr) {
    CacheOptions o;
    o.block_size = kBlock;
    o.ram_capacity_bytes = ram;
    if (disk) o.disk_tiers.push_back({dir_.path(), disk, 0.0, 0});
    o.policy = policy;
    o.name = "warmer";
    auto c = CachedObjectStore::Open(base ? base : base_.get(), o);
    EXPECT_OK(c);
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<ObjectStore> base_;
  std::map<std::string, std::string> data_;
  std::vector<std::string> keys_;
  testing::TempDir dir_{"strata-warmer"};
};

TEST(EpochOrderTest, DeterministicPermutationsPerEpoch) {
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back(fmt::format("k{}", i));
  auto a = EpochOrder(keys, 3, 7);
  auto b = EpochOrder(keys, 3, 7);
  ASSERT_EQ(a.size(), 150u);
  EXPECT_EQ(a, b);
  for (int e = 0; e < 3; ++e) {
    std::vector<std::string> epoch(a.begin() + 50 * e, a.begin() + 50 * (e + 1));
    EXPECT_NE(epoch, keys) << "epoch " << e << " was not shuffled";
    std::sort(epoch.begin(), epoch.end());
    auto sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(epoch, sorted) << "epoch " << e << " is not a permutation";
  }
  EXPECT_NE(std::vector<std::string>(a.begin(), a.begin() + 50),
            std::vector<std::string>(a.begin() + 50, a.begin() + 100));
  EXPECT_EQ(EpochOrder(keys, 2, 0), [&] {
    auto two = keys;
    two.insert(two.end(), keys.begin(), keys.end());
    return two;
  }());
}

TEST_F(WarmerTest, HandsOutEveryShardInOrderWithItsBytes) {
  auto cache = Cache(0, 64 << 20, EvictionPolicy::kPriority);
  const auto order = EpochOrder(keys_, 2, 3);
  ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, Opts(3, 2)));
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
    ASSERT_TRUE(shard.has_value());
    EXPECT_EQ(shard->position, i);
    EXPECT_EQ(shard->info.key, order[i]);
    EXPECT_TRUE(shard->cached);
    EXPECT_EQ(ReadAll(*shard->reader), data_[order[i]]);
  }
  ASSERT_OK_AND_ASSIGN(auto end, warmer->Next());
  EXPECT_FALSE(end.has_value());
  const WarmerStats s = warmer->stats();
  EXPECT_EQ(s.handed_out, 16u);
  EXPECT_EQ(s.fetched, 8u);  // the second epoch is all hits: everything fits
  EXPECT_EQ(s.hits, 8u);
  EXPECT_EQ(s.uncached, 0u);
}

TEST_F(WarmerTest, WarmsAheadWithoutBeingAsked) {
  objstore::FaultOptions f;
  f.first_byte_latency_us = 5000;
  objstore::FaultInjectionObjectStore slow(base_.get(), f);
  auto cache = Cache(0, 64 << 20, EvictionPolicy::kPriority, &slow);
  ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), keys_, Opts(3, 2)));
  ASSERT_OK_AND_ASSIGN(auto first, warmer->Next());
  ASSERT_TRUE(first.has_value());
  // While the consumer "computes" on shard 0, shards 1..3 become resident,
  // and shard 4 (beyond the lookahead) does not.
  auto resident = [&](int i) {
    auto info = base_->Head(keys_[i]);
    return info.ok() && cache->IsResident(*info);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(resident(1) && resident(2) && resident(3)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(resident(1) && resident(2) && resident(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(resident(4)) << "the warmer went past its lookahead";
  const uint64_t gets_before = cache->stats().backend_gets;
  for (int i = 1; i <= 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
    ASSERT_TRUE(shard.has_value());
    EXPECT_TRUE(shard->was_cached || shard->cached);
    EXPECT_EQ(ReadAll(*shard->reader), data_[keys_[i]]);
  }
  // Reading the warmed shards cost no backend GET of theirs (only warming of
  // the shards after them).
  EXPECT_LE(cache->stats().backend_gets - gets_before, 3u * 3u);
}

TEST_F(WarmerTest, BeladyKeepsTheShardNeededSoonest) {
  // One-block shards, a RAM tier of three blocks, lookahead 1. Order
  // s0 s1 s2 s3 s0: when s3 is warmed, s1 and s2 (consumed, never needed
  // again) go before s0 (needed next). LRU would evict s0, the oldest.
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) {
    const std::string k = "one-" + std::to_string(i);
    ASSERT_OK(base_->PutBytes(k, Content(k, kBlock)));
    keys.push_back(k);
  }
  const std::vector<std::string> order = {keys[0], keys[1], keys[2], keys[3], keys[0]};
  auto run = [&](EvictionPolicy policy) {
    auto cache = Cache(3 * kBlock, 0, policy);
    auto warmer = Warmer::Start(cache.get(), order, Opts(1, 1));
    EXPECT_OK(warmer);
    std::vector<bool> was_cached;
    for (;;) {
      auto shard = (*warmer)->Next();
      EXPECT_OK(shard);
      if (!shard.ok() || !shard->has_value()) break;
      was_cached.push_back((*shard)->was_cached);
      ReadAll(*(*shard)->reader);
    }
    return was_cached;
  };
  const auto belady = run(EvictionPolicy::kPriority);
  ASSERT_EQ(belady.size(), 5u);
  EXPECT_TRUE(belady[4]) << "s0 was evicted although it was needed next";
  const auto lru = run(EvictionPolicy::kLru);
  ASSERT_EQ(lru.size(), 5u);
  EXPECT_FALSE(lru[4]);
}

TEST_F(WarmerTest, ResumesWhereItStoppedAfterARestart) {
  auto cache = Cache(0, 64 << 20, EvictionPolicy::kPriority);
  const std::string state = dir_.Join("warm.state");
  const auto order = EpochOrder(keys_, 2, 11);
  {
    ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, Opts(2, 2, state)));
    for (int i = 0; i < 5; ++i) ASSERT_OK(warmer->Next());
    EXPECT_EQ(warmer->position(), 4u);
  }
  ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, Opts(2, 2, state)));
  ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
  ASSERT_TRUE(shard.has_value());
  EXPECT_EQ(shard->position, 4u) << "the shard in progress is handed out again";
  EXPECT_EQ(shard->info.key, order[4]);
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto s, warmer->Next());
    if (!s) break;
  }
  EXPECT_EQ(warmer->position(), order.size());
  warmer.reset();
  // Another list: refused, not silently resumed at a wrong place.
  EXPECT_STATUS_CODE(Warmer::Start(cache.get(), EpochOrder(keys_, 2, 12), Opts(2, 2, state)),
                     StatusCode::kInvalidArgument);
  ASSERT_TRUE(testing::WriteFile(state, "garbage"));
  EXPECT_STATUS_CODE(Warmer::Start(cache.get(), order, Opts(2, 2, state)), StatusCode::kCorruption);
}

TEST_F(WarmerTest, ShardsThatDoNotFitAreStillServed) {
  auto cache = Cache(kBlock, 0, EvictionPolicy::kPriority);  // smaller than one shard
  ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), keys_, Opts(2, 2)));
  for (const auto& k : keys_) {
    ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
    ASSERT_TRUE(shard.has_value());
    EXPECT_FALSE(shard->cached);
    EXPECT_EQ(ReadAll(*shard->reader), data_[k]);
  }
  EXPECT_EQ(warmer->stats().uncached, keys_.size());
}

TEST_F(WarmerTest, AMissingShardIsReportedAndTheRestGoesOn) {
  auto cache = Cache(0, 64 << 20, EvictionPolicy::kPriority);
  std::vector<std::string> order = {keys_[0], "missing", keys_[1]};
  ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, Opts(2, 2)));
  ASSERT_OK(warmer->Next());
  auto bad = warmer->Next();
  EXPECT_STATUS_CODE(bad, StatusCode::kNotFound);
  EXPECT_NE(bad.error().message().find("missing"), std::string::npos) << bad.error().ToString();
  ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
  ASSERT_TRUE(shard.has_value());
  EXPECT_EQ(shard->info.key, keys_[1]);
}

TEST_F(WarmerTest, DestroyedMidRunUnpinsEverything) {
  // A RAM tier of two blocks, filled by the warmer's pinned shards a and b.
  for (const char* k : {"a", "b", "c", "other"}) ASSERT_OK(base_->PutBytes(k, Content(k, kBlock)));
  auto cache = Cache(2 * kBlock, 0, EvictionPolicy::kPriority);
  ASSERT_OK_AND_ASSIGN(auto info_a, base_->Head("a"));
  ASSERT_OK_AND_ASSIGN(auto info_b, base_->Head("b"));
  ASSERT_OK_AND_ASSIGN(auto info_other, base_->Head("other"));
  cache->SetKeyPriority("other", 0);
  {
    ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), {"a", "b", "c"}, Opts(2, 1)));
    ASSERT_OK(warmer->Next());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!cache->IsResident(info_b) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(cache->IsResident(info_a) && cache->IsResident(info_b));
    // Both pinned: even a block needed sooner cannot displace them.
    ASSERT_OK(cache->GetBytes("other"));
    EXPECT_FALSE(cache->IsResident(info_other));
  }
  // Unpinned now: it can.
  ASSERT_OK(cache->GetBytes("other"));
  EXPECT_TRUE(cache->IsResident(info_other));
}

// The progress file another process reads: counts and bytes by the consumer's
// progress, a whole file at every moment, "finished" with exact bytes at the
// end; a resumed run counts the earlier run's shards as done.
TEST_F(WarmerTest, PublishesProgressForOtherProcesses) {
  auto cache = Cache(0, 64 << 20, EvictionPolicy::kPriority);
  const auto order = EpochOrder(keys_, 2, 0);  // 16 positions, 8 distinct keys
  uint64_t total = 0;
  for (const auto& k : order) total += data_[k].size();
  const std::string file = dir_.Join("warm.progress.json");
  const std::string state = dir_.Join("warm.state");
  WarmerOptions o = Opts(2, 2, state);
  o.progress_file = file;
  o.progress_interval_ms = 50;
  o.label = "shards.txt from mem://";
  {
    ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, o));
    for (size_t i = 0; i < 5; ++i) {
      ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
      ASSERT_TRUE(shard.has_value());
    }
    // Four finished (the fifth is being consumed); all keys of epoch 1 seen
    // only partly, so the byte totals are estimates.
    WarmProgress p = warmer->progress();
    EXPECT_EQ(p.state, "running");
    EXPECT_EQ(p.objects_total, 16u);
    EXPECT_EQ(p.objects_done, 4u);
    EXPECT_EQ(p.label, "shards.txt from mem://");
    EXPECT_EQ(p.pid, ::getpid());
    EXPECT_FALSE(p.bytes_exact);
    uint64_t first4 = 0;
    for (size_t i = 0; i < 4; ++i) first4 += data_[order[i]].size();
    EXPECT_EQ(p.bytes_done, first4);  // their sizes are known: exact part
    // The file is rewritten in the background and always parses.
    bool seen = false;
    for (int i = 0; i < 100 && !seen; ++i) {
      auto text = testing::ReadFileOrEmpty(file);
      if (!text.empty()) {
        ASSERT_OK_AND_ASSIGN(WarmProgress f, ParseWarmProgress(text));
        seen = f.objects_done == 4 && f.state == "running";
      }
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(seen) << testing::ReadFileOrEmpty(file);
    // Destroyed early: "stopped".
  }
  ASSERT_OK_AND_ASSIGN(WarmProgress stopped, ParseWarmProgress(testing::ReadFileOrEmpty(file)));
  EXPECT_EQ(stopped.state, "stopped");
  EXPECT_EQ(stopped.objects_done, 4u);
  {
    ASSERT_OK_AND_ASSIGN(auto warmer, Warmer::Start(cache.get(), order, o));
    EXPECT_EQ(warmer->progress().resumed_from, 4u);
    EXPECT_EQ(warmer->progress().objects_done, 4u);
    for (;;) {
      ASSERT_OK_AND_ASSIGN(auto shard, warmer->Next());
      if (!shard) break;
    }
  }
  ASSERT_OK_AND_ASSIGN(WarmProgress done, ParseWarmProgress(testing::ReadFileOrEmpty(file)));
  EXPECT_EQ(done.state, "finished");
  EXPECT_EQ(done.objects_done, 16u);
  EXPECT_EQ(done.resumed_from, 4u);
  EXPECT_TRUE(done.bytes_exact);  // every key HEADed in epoch 2 at the latest
  EXPECT_EQ(done.bytes_total, total);
  EXPECT_EQ(done.bytes_done, total);
  EXPECT_EQ(done.eta_s, 0);
  EXPECT_FALSE(ParseWarmProgress("{\"format\":\"other\"}").ok());
  EXPECT_FALSE(ParseWarmProgress("not json").ok());
}

}  // namespace
}  // namespace strata::cache
