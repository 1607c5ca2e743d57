// Eviction policies and the TinyLFU frequency sketch (private to cache).
//
// A policy orders the resident entries of one tier. It never owns them and
// does no locking: the tier calls it under its own mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <strata/cache/cached_object_store.h>

#include "cache/block_file.h"

namespace strata::cache {

// MurmurHash3's 64-bit finalizer: spreads the bits of block ids and stripe keys.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// One resident block of a tier. Fields are guarded by the tier's mutex.
struct Entry {
  BlockId id;
  std::string key;
  std::string etag;
  uint64_t index = 0;
  uint64_t data_len = 0;
  uint64_t charged = 0;  // bytes counted against the tier's capacity
  uint64_t priority = CachedObjectStore::kNoFurtherUse;
  uint64_t seq = 0;      // insertion order (ties in kPriority)
  int readers = 0;       // disk reads in progress: not evictable
  bool pinned = false;
  bool bad = false;      // found corrupt; erased when the last reader leaves
  bool in_policy = false;
  std::shared_ptr<const std::string> data;  // RAM tier payload
  // Intrusive list (SIEVE, LRU): prev = newer, next = older.
  Entry* prev = nullptr;
  Entry* next = nullptr;
  bool visited = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual void Insert(Entry* e) = 0;
  virtual void Touch(Entry* e) = 0;
  virtual void Erase(Entry* e) = 0;
  // The entry to evict next among those `evictable` accepts (not removed), or
  // nullptr when none is.
  virtual Entry* Victim(const std::function<bool(const Entry*)>& evictable) = 0;
  // Changes e->priority (kPriority reorders; the others only store it).
  virtual void SetPriority(Entry* e, uint64_t priority) { e->priority = priority; }
  virtual size_t size() const = 0;
};

std::unique_ptr<Policy> MakePolicy(EvictionPolicy p);

// Count-min sketch of block accesses with 4 rows of counters (kept in
// bytes, capped at 15 as TinyLFU's 4-bit ones) and periodic halving (aging), as
// TinyLFU. Thread-safe.
class FrequencySketch {
 public:
  // Sized for `expected_entries` resident blocks; ages after 10x that many
  // increments.
  explicit FrequencySketch(uint64_t expected_entries);
  void Increment(const BlockId& id);
  uint32_t Estimate(const BlockId& id) const;

 private:
  size_t Slot(const BlockId& id, int row) const;
  mutable std::mutex mu_;
  std::vector<uint8_t> table_;  // guarded by mu_; 4 rows of width_
  size_t width_;                // power of two
  uint64_t additions_ = 0;      // guarded by mu_
  uint64_t sample_size_;
};

}  // namespace strata::cache
