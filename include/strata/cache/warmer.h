// Warmer: keeps the next shards of a known read order warm in a
// CachedObjectStore, in the background, and hands each to the consumer as soon
// as it is ready.
//
// What it promises:
//   * Given the ordered list of shard keys a training run will read (one epoch
//     or several; a key may repeat), the `lookahead` shards after the one being
//     consumed are fetched in the background, at most `concurrency` shards at
//     a time (each shard's blocks are themselves fetched in parallel by the
//     cache). Next() blocks until the next shard is warm and returns a reader
//     pinned to its version.
//   * Eviction with a known future (Belady/MIN): the warmer tells the cache
//     each key's next use, so with EvictionPolicy::kPriority the cache evicts
//     consumed shards with no further use first, then the shard whose next use
//     is furthest away, and admits a shard only if it is needed sooner than
//     that victim. The shards in the lookahead window and the one being
//     consumed are pinned. With SIEVE or LRU the warmer only prefetches.
//   * Restart-safe: with a state file, the position (the first shard not yet
//     finished) is written atomically on every Next(); a new Warmer over the
//     same list resumes there, and the shard in progress is handed out again
//     (at-least-once). A state file of another list is refused.
//   * If a shard does not fit (lookahead x shard size above the cache), it is
//     still handed out; its reads go to the backend through the cache.
//
// Ownership: the cache must outlive the warmer. Thread-safety: Next() is
// called by one consumer thread; stats() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <strata/cache/cached_object_store.h>
#include <strata/core/result.h>

namespace strata::cache {

struct WarmerOptions {
  size_t lookahead = 3;    // shards kept warm ahead of the one being consumed
  int concurrency = 2;     // shards fetched at once
  std::string state_file;  // "" = the position is not persisted
};

struct WarmShard {
  uint64_t position = 0;         // index in the order
  objstore::ObjectInfo info;     // key, size, etag
  bool was_cached = false;       // resident before the warmer fetched anything
  bool cached = false;           // resident when handed out
  double wait_seconds = 0;       // how long Next() blocked for it
  std::unique_ptr<CachedReader> reader;
};

struct WarmerStats {
  uint64_t handed_out = 0;
  uint64_t hits = 0;            // shards already resident when their turn to warm came
  uint64_t fetched = 0;         // shards the warmer fetched
  uint64_t uncached = 0;        // shards handed out not resident (did not fit)
  double wait_seconds = 0;      // total time Next() blocked
};

// Each epoch a deterministic permutation of `keys` (seeded by seed + epoch),
// concatenated; seed 0 = the list order every epoch.
std::vector<std::string> EpochOrder(const std::vector<std::string>& keys, int epochs,
                                    uint64_t seed);

class Warmer {
 public:
  static Result<std::unique_ptr<Warmer>> Start(CachedObjectStore* cache,
                                               std::vector<std::string> order,
                                               WarmerOptions options = {});
  ~Warmer();  // stops warming, waits for fetches in flight, unpins
  Warmer(const Warmer&) = delete;
  Warmer& operator=(const Warmer&) = delete;

  // The next shard, once warm (or once its fetch failed: then the error).
  // nullopt after the last one. Calling Next() marks the previous shard done.
  Result<std::optional<WarmShard>> Next();

  // The first shard not yet finished (where a restart resumes).
  uint64_t position() const;
  size_t size() const;
  WarmerStats stats() const;

  struct Impl;

 private:
  explicit Warmer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::cache
