// The cache's tiers (private to cache): a RAM tier and disk tiers, each with a
// byte limit, an eviction policy and admission control.
//
// Accounting: used_ is what resident entries are charged (disk: st_blocks of
// the block file, plus the directory), reserved_ what writes in progress may
// still take. A write reserves before it starts and evicts until
// used_ + reserved_ fits the capacity, so the limit holds at every instant,
// whatever the concurrency. Everything in a tier is guarded by its mu_; file
// I/O runs outside it (an entry being read has readers > 0 and is not
// evicted meanwhile).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <strata/cache/cached_object_store.h>
#include <strata/core/metrics.h>

#include "cache/block_file.h"
#include "cache/policy.h"

namespace strata::cache {

struct BlockRef {
  BlockId id;
  std::string_view key;
  std::string_view etag;
  uint64_t index = 0;
};

// What admission weighs for a candidate block.
struct AdmitInfo {
  uint32_t freq = 0;  // sketch estimate of its past accesses
  uint64_t priority = CachedObjectStore::kNoFurtherUse;
  bool pinned = false;
};

class Tier {
 public:
  Tier(std::string name, uint64_t capacity, const CacheOptions& options, FrequencySketch* sketch);
  virtual ~Tier();

  const std::string& name() const { return name_; }
  // The block's data if resident (and, on disk, verified); nullptr otherwise.
  // `count`: record the hit or miss (false when the caller fetched the block
  // itself a moment ago and counts a miss with CountMiss).
  virtual std::shared_ptr<const std::string> Lookup(const BlockRef& ref, bool count = true) = 0;
  void CountMiss();
  // Stores the block if there is room or admission lets it displace a victim.
  virtual bool Insert(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
                      const AdmitInfo& admit) = 0;
  bool Contains(const BlockId& id) const;
  void SetKeyState(std::string_view key, uint64_t priority, bool pinned);
  // Drops the key's blocks, except those of keep_etag ("" = drop all).
  void EraseKey(std::string_view key, std::string_view keep_etag);
  TierStats Stats() const;
  uint64_t capacity() const { return capacity_; }

 protected:
  bool Evictable(const Entry* e) const { return !e->pinned && e->readers == 0 && e->in_policy; }
  // Evicts until `need` more bytes fit (and the disk floor holds). With a
  // candidate, the first victim must lose to it under the admission rules.
  bool MakeRoomLocked(uint64_t need, const AdmitInfo* candidate);
  bool AdmitsLocked(const AdmitInfo& candidate, const Entry& victim) const;
  Entry* AddLocked(const BlockRef& ref, uint64_t data_len, uint64_t charged,
                   const AdmitInfo& admit);
  void EraseLocked(Entry* e, bool eviction);
  virtual void DropPayloadLocked(Entry* e) = 0;
  virtual bool BelowFloorLocked(uint64_t need) { return false; }
  void PublishLocked();

  const std::string name_;
  const uint64_t capacity_;
  const CacheOptions& options_;
  FrequencySketch* sketch_;

  mutable std::mutex mu_;
  std::unordered_map<BlockId, std::unique_ptr<Entry>, BlockIdHash> index_;  // guarded by mu_
  std::unordered_map<std::string, std::vector<Entry*>> by_key_;             // guarded by mu_
  std::unique_ptr<Policy> policy_;                                          // guarded by mu_
  uint64_t used_ = 0;      // guarded by mu_
  uint64_t reserved_ = 0;  // guarded by mu_
  uint64_t seq_ = 0;       // guarded by mu_

  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0}, fill_bytes_{0}, rejects_{0},
      corrupt_{0};
  metrics::Counter* m_hits_;
  metrics::Counter* m_misses_;
  metrics::Counter* m_evictions_;
  metrics::Counter* m_fill_bytes_;
  metrics::Counter* m_rejects_;
  metrics::Counter* m_corrupt_;
  metrics::Gauge* m_used_;
  metrics::Gauge* m_blocks_;
};

class RamTier final : public Tier {
 public:
  RamTier(uint64_t capacity, const CacheOptions& options, FrequencySketch* sketch);
  std::shared_ptr<const std::string> Lookup(const BlockRef& ref, bool count = true) override;
  bool Insert(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
              const AdmitInfo& admit) override;

 private:
  void DropPayloadLocked(Entry* e) override { e->data.reset(); }
};

class DiskTier final : public Tier {
 public:
  // Creates the directory, takes its lock, removes temp files, and indexes
  // the block files found (oldest first); unreadable ones are deleted.
  static Result<std::unique_ptr<DiskTier>> Open(int number, const DiskTierOptions& disk,
                                                const CacheOptions& options,
                                                FrequencySketch* sketch);
  ~DiskTier() override;
  std::shared_ptr<const std::string> Lookup(const BlockRef& ref, bool count = true) override;
  bool Insert(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
              const AdmitInfo& admit) override;
  const std::string& blocks_dir() const { return blocks_dir_; }
  std::string PathOf(const BlockId& id) const;
  // Sum of st_blocks * 512 over the directory and its files, under mu_.
  uint64_t MeasureOnDisk() const;

 private:
  DiskTier(int number, const DiskTierOptions& disk, const CacheOptions& options,
           FrequencySketch* sketch);
  Status Scan();
  void DropPayloadLocked(Entry* e) override;
  bool BelowFloorLocked(uint64_t need) override;
  uint64_t DirBytes() const;

  DiskTierOptions disk_;
  std::string blocks_dir_;
  int lock_fd_ = -1;
  uint64_t fs_block_ = 4096;
  uint64_t dir_bytes_ = 0;                                  // guarded by mu_
  std::unordered_set<BlockId, BlockIdHash> writing_;        // guarded by mu_
};

}  // namespace strata::cache
