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
//   * Progress for other processes: with a progress file, a background thread
//     rewrites it atomically (temp + rename) every progress_interval_ms and
//     once more when the warmer is destroyed: shards and bytes done and in
//     total, the rate over the last 30 s, the ETA, and the state (running,
//     finished, stopped). A reader (the server's console) sees a whole file
//     or the previous one; a process killed with -9 leaves "running" with an
//     `updated_us` that stops moving. Bytes count what the consumer finished;
//     a shard's size is known once the warmer has HEADed it, so until every
//     key was seen the byte totals use the mean known size (bytes_exact false).
//
// Ownership: the cache must outlive the warmer. Thread-safety: Next() is
// called by one consumer thread; stats() and progress() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/cache/cached_object_store.h>
#include <strata/core/result.h>

namespace strata::cache {

struct WarmerOptions {
  size_t lookahead = 3;    // shards kept warm ahead of the one being consumed
  int concurrency = 2;     // shards fetched at once
  std::string state_file;  // "" = the position is not persisted
  std::string progress_file;        // "" = no progress published (WarmProgress as JSON)
  int progress_interval_ms = 1000;  // the progress file is rewritten this often
  std::string label;  // what is warmed, for the progress file (e.g. the list and store)
};

// What a warmer publishes in its progress file.
struct WarmProgress {
  std::string state;  // "running" | "finished" (every shard done) | "stopped" (ended early)
  std::string label;
  std::string host;
  int64_t pid = 0;
  int64_t started_us = 0, updated_us = 0;  // since the Unix epoch
  int64_t interval_ms = 0;                 // how often a running warmer rewrites the file
  uint64_t objects_total = 0;              // shards in the order (epochs x keys)
  uint64_t objects_done = 0;   // finished by the consumer (a resume counts the earlier run's)
  uint64_t objects_ready = 0;  // warm ahead of the consumer, not yet handed out
  uint64_t resumed_from = 0;   // position this process started at
  uint64_t bytes_done = 0, bytes_total = 0;
  bool bytes_exact = false;                   // every shard's size known (else the mean fills in)
  double bytes_per_s = 0, objects_per_s = 0;  // over the last 30 s
  double eta_s = -1;                          // -1: unknown (no rate yet)
  uint64_t hits = 0, fetched = 0, uncached = 0, failures = 0;
};

std::string WarmProgressJson(const WarmProgress& p);
// Parses a progress file's text; Corruption for anything else.
Result<WarmProgress> ParseWarmProgress(std::string_view json);

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
  uint64_t failures = 0;        // shards whose fetch failed (Next() returned the error)
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
  // What the progress file says now (also without a progress file).
  WarmProgress progress() const;

  struct Impl;

 private:
  explicit Warmer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::cache
