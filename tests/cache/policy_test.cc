// Eviction policies, the TinyLFU sketch and the block file format, below the
// cache.
#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/checksum.h>

#include "cache/block_file.h"
#include "cache/policy.h"
#include "testutil/testutil.h"

namespace strata::cache {
namespace {

class PolicyTest : public ::testing::Test {
 protected:
  Entry* Add(Policy& p, uint64_t n, uint64_t priority = CachedObjectStore::kNoFurtherUse) {
    auto e = std::make_unique<Entry>();
    e->id = BlockId{0, n};
    e->index = n;
    e->priority = priority;
    e->seq = n;
    e->in_policy = true;
    Entry* raw = e.get();
    entries_.push_back(std::move(e));
    p.Insert(raw);
    return raw;
  }
  static bool Any(const Entry*) { return true; }
  std::vector<std::unique_ptr<Entry>> entries_;
};

TEST_F(PolicyTest, SieveKeepsVisitedAndSweepsTheHand) {
  auto p = MakePolicy(EvictionPolicy::kSieve);
  Entry* e1 = Add(*p, 1);
  Entry* e2 = Add(*p, 2);
  Entry* e3 = Add(*p, 3);
  Add(*p, 4);
  p->Touch(e1);
  p->Touch(e3);
  // The hand starts at the oldest (1): visited, cleared; 2 is the victim.
  Entry* v = p->Victim(Any);
  ASSERT_EQ(v, e2);
  p->Erase(v);
  EXPECT_FALSE(e1->visited);
  // The hand stays where it was: 3 (visited) is skipped and cleared, 4 goes.
  Add(*p, 5);
  v = p->Victim(Any);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->index, 4u);
  p->Erase(v);
  // The hand goes on toward the newest (it does not restart at the tail as
  // LRU-like CLOCK variants would): 5 is unvisited and goes before 1 and 3.
  v = p->Victim(Any);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->index, 5u);
  EXPECT_EQ(p->size(), 3u);
}

TEST_F(PolicyTest, SieveOneHitWondersGoFirst) {
  // The SIEVE paper's point: new, never-reused entries leave before reused old ones.
  auto p = MakePolicy(EvictionPolicy::kSieve);
  std::vector<Entry*> hot;
  for (int i = 0; i < 4; ++i) hot.push_back(Add(*p, i));
  for (Entry* e : hot) p->Touch(e);
  for (int i = 10; i < 14; ++i) Add(*p, i);
  for (int round = 0; round < 4; ++round) {
    Entry* v = p->Victim(Any);
    ASSERT_NE(v, nullptr);
    EXPECT_GE(v->index, 10u) << "a reused entry was evicted before a one-hit wonder";
    p->Erase(v);
  }
}

TEST_F(PolicyTest, SieveSkipsWhatCannotBeEvicted) {
  auto p = MakePolicy(EvictionPolicy::kSieve);
  Entry* e1 = Add(*p, 1);
  Entry* e2 = Add(*p, 2);
  e1->pinned = true;
  auto evictable = [](const Entry* e) { return !e->pinned; };
  EXPECT_EQ(p->Victim(evictable), e2);
  e2->pinned = true;
  EXPECT_EQ(p->Victim(evictable), nullptr);
}

TEST_F(PolicyTest, LruEvictsLeastRecentlyUsed) {
  auto p = MakePolicy(EvictionPolicy::kLru);
  Entry* e1 = Add(*p, 1);
  Entry* e2 = Add(*p, 2);
  Entry* e3 = Add(*p, 3);
  p->Touch(e1);
  EXPECT_EQ(p->Victim(Any), e2);
  p->Touch(e2);
  EXPECT_EQ(p->Victim(Any), e3);
  p->Erase(e3);
  EXPECT_EQ(p->Victim(Any), e1);
  p->Erase(e1);
  EXPECT_EQ(p->Victim(Any), e2);
  p->Erase(e2);
  EXPECT_EQ(p->Victim(Any), nullptr);
  EXPECT_EQ(p->size(), 0u);
}

TEST_F(PolicyTest, PriorityEvictsFurthestNextUse) {
  auto p = MakePolicy(EvictionPolicy::kPriority);
  Entry* a = Add(*p, 1, 10);
  Entry* b = Add(*p, 2, 30);
  Entry* c = Add(*p, 3, 20);
  EXPECT_EQ(p->Victim(Any), b);
  p->SetPriority(b, 5);
  EXPECT_EQ(p->Victim(Any), c);
  p->SetPriority(a, CachedObjectStore::kNoFurtherUse);  // consumed
  EXPECT_EQ(p->Victim(Any), a);
  p->Erase(a);
  EXPECT_EQ(p->Victim(Any), c);
}

TEST(FrequencySketchTest, CountsAndAges) {
  FrequencySketch s(100);
  BlockId a{1, 2}, b{3, 4};
  EXPECT_EQ(s.Estimate(a), 0u);
  for (int i = 0; i < 5; ++i) s.Increment(a);
  s.Increment(b);
  EXPECT_GE(s.Estimate(a), 5u);
  EXPECT_GE(s.Estimate(b), 1u);
  EXPECT_LT(s.Estimate(b), 5u);
  // Counters saturate at 15 and halve after 10x the expected entries.
  for (int i = 0; i < 50; ++i) s.Increment(a);
  EXPECT_EQ(s.Estimate(a), 15u);
  for (uint64_t i = 0; i < 2000; ++i) s.Increment(BlockId{i + 100, i});
  EXPECT_LT(s.Estimate(a), 15u);
}

TEST(BlockFileTest, RoundTripAndEveryKindOfDamageIsCaught) {
  testing::TempDir dir("strata-blockfile");
  const std::string data(10000, 'x');
  BlockHeader h;
  h.key = "shards/000.tar";
  h.etag = "abc";
  h.index = 3;
  h.id = MakeBlockId(h.key, h.etag, h.index);
  h.data_len = data.size();
  h.data_crc = Crc32c(0, data.data(), data.size());
  ASSERT_OK_AND_ASSIGN(uint64_t disk_bytes, WriteBlockFile(dir.path(), h, data, true));
  EXPECT_GE(disk_bytes, data.size());
  const std::string path = dir.Join(BlockIdHex(h.id) + ".blk");
  ASSERT_OK_AND_ASSIGN(std::string back, ReadBlockFile(path, h.id, h.key, h.etag, h.index));
  EXPECT_EQ(back, data);

  // Asked for another block (a hash collision or a renamed file).
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, "other-etag", h.index), StatusCode::kCorruption);
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, 4), StatusCode::kCorruption);

  const std::string good = testing::ReadFileOrEmpty(path);
  // One flipped data bit.
  std::string bad = good;
  bad[bad.size() - 7] ^= 0x10;
  ASSERT_TRUE(testing::WriteFile(path, bad));
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, h.index), StatusCode::kCorruption);
  // Torn: the tail missing.
  ASSERT_TRUE(testing::WriteFile(path, good.substr(0, good.size() - 4096)));
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, h.index), StatusCode::kCorruption);
  // A header bit flipped.
  bad = good;
  bad[20] ^= 1;
  ASSERT_TRUE(testing::WriteFile(path, bad));
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, h.index), StatusCode::kCorruption);
  // Zeros where the file should be (what a power loss can leave).
  ASSERT_TRUE(testing::WriteFile(path, std::string(good.size(), '\0')));
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, h.index), StatusCode::kCorruption);
  ::unlink(path.c_str());
  EXPECT_STATUS_CODE(ReadBlockFile(path, h.id, h.key, h.etag, h.index), StatusCode::kNotFound);
}

TEST(BlockFileTest, IdHexRoundTrips) {
  const BlockId id = MakeBlockId("k", "e", 7);
  BlockId back;
  ASSERT_TRUE(ParseBlockIdHex(BlockIdHex(id), &back));
  EXPECT_EQ(back, id);
  EXPECT_FALSE(ParseBlockIdHex("xyz", &back));
  EXPECT_FALSE(MakeBlockId("k", "e", 7) == MakeBlockId("k", "e2", 7));
}

}  // namespace
}  // namespace strata::cache
