// CachedObjectStore: a read cache in front of any ObjectStore (a decorator, as
// ClickHouse's cached object storage is), with a RAM tier and one or more disk
// tiers.
//
// What it promises:
//   * Block-granular (CacheOptions::block_size, 4 MiB by default), keyed by
//     object key + ETag + block index, so a changed object is never served
//     stale: every Get first learns the current ETag (a HEAD, or the metadata
//     cache when metadata_ttl_ms > 0, see there) and every backend ranged GET
//     carries If-Match with that ETag, so blocks of two versions never mix.
//     A CachedReader pins one version; when the object changes under it, its
//     reads fail with kPreconditionFailed instead of mixing versions.
//   * Byte limits that hold under concurrent load: bytes are reserved before a
//     block is written, the tier evicts first, and the disk tiers count the
//     real on-disk bytes (st_blocks of every block file and temp file, and the
//     directory itself), never the logical length. Disk tiers also keep a
//     free-space floor on their filesystem.
//   * Crash-safe block files: written to a temp file and renamed into place,
//     with a header carrying a magic, the key, ETag, block index, length and
//     CRC32C of the data. Every read from disk verifies all of it; a torn,
//     truncated or corrupt block is deleted and fetched again, never served.
//     Temp files left by a crash are removed when the tier opens.
//   * Eviction: SIEVE (default), LRU, or kPriority (Belady: the block whose
//     key's next use, set with SetKeyPriority, is furthest away goes first;
//     the Warmer drives it). Admission control (TinyLFU: a count-min sketch of
//     block accesses; a new block displaces the eviction victim only if it was
//     used more often) keeps a one-off scan from flushing the cache.
//   * Sequential reads (successive Gets of one key, or one CachedReader) are
//     detected: a readahead window that doubles up to max_readahead is fetched
//     in the background, and the blocks of one large read are fetched in
//     parallel. Read-ahead blocks a full cache does not admit wait in a bounded
//     staging area until they are read.
//   * Metrics per tier in the core registry (strata_cache_*{cache,tier}):
//     hits, misses, resident bytes, capacity, evictions, filled bytes,
//     admission rejects, corrupt blocks.
//
// Several disk tiers are peers (one per drive, say): a block lives on exactly
// one of them, chosen by rendezvous hashing weighted by capacity. The RAM tier
// holds copies of the hottest blocks in front of them.
//
// Writes (Put, multipart, Copy, Delete, Rename) go straight to the backend and
// drop the metadata and the blocks of the key's other versions.
//
// A disk tier directory belongs to one process at a time (flock on LOCK); a
// second opener gets kUnavailable naming the directory.
//
// Thread-safety: all methods are thread-safe. The base store must be too.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {

enum class EvictionPolicy {
  kSieve,     // NSDI'24; a hit sets a bit, eviction sweeps a hand over a FIFO
  kLru,       // a hit moves the block to the front
  kPriority,  // Belady with known future: evict the largest SetKeyPriority value
};

enum class AdmissionPolicy {
  kAll,      // every fetched block enters the cache (evicting as needed)
  kTinyLfu,  // once full, a block enters only if used more often than the victim
};

// "sieve" / "lru" / "priority" (or "belady") -> policy; false if unknown.
bool ParseEvictionPolicy(std::string_view name, EvictionPolicy* out);
std::string_view EvictionPolicyName(EvictionPolicy p);

struct DiskTierOptions {
  std::string dir;              // created if missing; blocks live in DIR/blocks
  uint64_t capacity_bytes = 0;  // real on-disk bytes (st_blocks), headers included
  // The tier stops filling (and evicts) when the filesystem's free space would
  // drop below max(min_free_ratio * filesystem size, min_free_bytes).
  double min_free_ratio = 0.05;
  uint64_t min_free_bytes = 0;
};

struct CacheOptions {
  // Bytes per cached block (and per backend ranged GET). 4 MiB: the range
  // size S3 guidance gives (8-16 MB) halved so a 16 MiB shard is fetched as
  // four parallel GETs; Mountpoint's disk cache uses 1 MiB, JuiceFS 4 MiB.
  uint64_t block_size = 4ull << 20;
  uint64_t ram_capacity_bytes = 256ull << 20;  // 0: no RAM tier
  std::vector<DiskTierOptions> disk_tiers;      // empty: RAM only
  EvictionPolicy policy = EvictionPolicy::kSieve;
  AdmissionPolicy admission = AdmissionPolicy::kTinyLfu;
  // 0: every Get HEADs the backend first (a changed object is never served
  // stale). > 0: a HEAD result is trusted for this long (Mountpoint uses 60 s),
  // so a rewrite by another client can be missed for up to that long; the
  // backend GETs still carry If-Match, so versions never mix.
  int64_t metadata_ttl_ms = 0;
  int fetch_threads = 16;               // backend GETs in flight, all reads together
  int parallel_fetches_per_read = 8;    // blocks one read fetches at once
  bool readahead = true;
  uint64_t max_readahead_bytes = 64ull << 20;  // window doubles from one block up to this
  uint64_t staging_bytes = 256ull << 20;       // fetched-but-not-admitted blocks awaiting a read
  bool fsync_blocks = false;  // fsync each block file (CRC already catches torn blocks)
  // A fetched block the RAM tier took is written to its disk tier later, by
  // a low-priority filler thread (one: file creates in one directory
  // serialise on its lock anyway), not before the reads waiting for it are
  // woken: a cold read does not wait on (or compete with) the disk write.
  // At most fill_queue_bytes wait; beyond that a disk write is dropped (the
  // block stays in RAM). Closing the cache writes what is queued;
  // WaitForDiskFills() waits for it.
  bool disk_fill_behind = true;
  uint64_t fill_queue_bytes = 256ull << 20;
  std::string name = "default";  // the `cache` label of the metrics
};

struct TierStats {
  std::string name;  // "ram", "disk0", ...
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;  // charged bytes (disk: real on-disk bytes)
  uint64_t blocks = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t fill_bytes = 0;         // data bytes written into the tier
  uint64_t admission_rejects = 0;  // blocks the admission policy kept out
  uint64_t corrupt_blocks = 0;     // blocks found torn or corrupt and discarded
};

struct CacheStats {
  std::vector<TierStats> tiers;
  uint64_t backend_gets = 0;   // ranged GETs sent to the backend
  uint64_t backend_bytes = 0;  // bytes they returned
  uint64_t heads = 0;          // HEADs sent to learn ETags
  uint64_t readahead_blocks = 0;
  uint64_t staged_hits = 0;    // reads served from the staging area
};

class CachedObjectStore;

// Reads one version of one object through the cache (the version current when
// it was opened). Sequential ReadAt calls trigger readahead. Not thread-safe
// (one reader per consumer); the store must outlive it.
class CachedReader {
 public:
  ~CachedReader();
  const objstore::ObjectInfo& info() const;
  // Streams [offset, offset + length) (clipped at the end) into sink.
  Status Read(uint64_t offset, uint64_t length, const objstore::ByteSink& sink);
  // pread-like: up to n bytes at offset; 0 at or past the end.
  Result<size_t> ReadAt(uint64_t offset, char* buf, size_t n);

 private:
  friend class CachedObjectStore;
  struct State;
  CachedReader(CachedObjectStore* store, objstore::ObjectInfo info);
  CachedObjectStore* store_;
  objstore::ObjectInfo info_;
  std::unique_ptr<State> state_;
};

class CachedObjectStore final : public objstore::ObjectStore {
 public:
  // `base` is not owned and must outlive the cache.
  static Result<std::unique_ptr<CachedObjectStore>> Open(objstore::ObjectStore* base,
                                                         CacheOptions options);
  static Result<std::unique_ptr<CachedObjectStore>> Open(
      std::unique_ptr<objstore::ObjectStore> base, CacheOptions options);
  ~CachedObjectStore() override;

  // --- ObjectStore -------------------------------------------------------
  std::string url() const override;
  Result<objstore::ObjectInfo> Put(std::string_view key, objstore::ByteSource& body,
                                   const objstore::WriteOptions& options = {}) override;
  Status Get(std::string_view key, const objstore::ReadOptions& options,
             const objstore::ByteSink& sink, objstore::ObjectInfo* info = nullptr) override;
  Result<objstore::ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<std::vector<Status>> DeleteMany(const std::vector<std::string>& keys) override;
  Result<objstore::ListPage> List(std::string_view prefix, std::string_view delimiter,
                                  std::string_view token, int max_keys = 1000) override;
  Result<std::string> CreateMultipart(std::string_view key,
                                      const objstore::WriteOptions& options = {}) override;
  Result<objstore::UploadedPart> UploadPart(std::string_view key, std::string_view upload_id,
                                            int part_number, objstore::ByteSource& body,
                                            uint64_t size) override;
  Result<objstore::ObjectInfo> CompleteMultipart(
      std::string_view key, std::string_view upload_id,
      const std::vector<objstore::UploadedPart>& parts) override;
  Status AbortMultipart(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<objstore::UploadedPart>> ListParts(std::string_view key,
                                                        std::string_view upload_id) override;
  Result<objstore::ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override;
  Status Rename(std::string_view src_key, std::string_view dst_key) override;

  // --- Cache -------------------------------------------------------------
  // A reader pinned to the object's current version (one HEAD, or the
  // metadata cache), or to `info` when given (no HEAD). An `info` with an
  // empty etag names an immutable key (written once, never rewritten): its
  // blocks are fetched without If-Match and cached under that key alone.
  Result<std::unique_ptr<CachedReader>> OpenReader(std::string_view key);
  std::unique_ptr<CachedReader> OpenReader(const objstore::ObjectInfo& info);

  // Fetches every block of this version that no tier holds (in parallel) and
  // offers them to the tiers. Returns whether all blocks are resident after.
  Result<bool> Prefetch(const objstore::ObjectInfo& info);
  // Whether every block of this version is in some tier.
  bool IsResident(const objstore::ObjectInfo& info) const;

  // kPriority eviction: the key's next use (smaller = sooner); blocks of the
  // key with the largest value go first. Keys never set count as "no further
  // use" (evicted first). Cheap for keys with no resident blocks.
  static constexpr uint64_t kNoFurtherUse = UINT64_MAX;
  void SetKeyPriority(std::string_view key, uint64_t next_use);
  // Pinned keys' blocks are never evicted (counted: Pin twice, Unpin twice).
  void Pin(std::string_view key);
  void Unpin(std::string_view key);

  // Forgets the key's metadata and drops its blocks (all versions).
  void Invalidate(std::string_view key);

  // Returns once every block fetched so far has been offered to its disk
  // tier (see CacheOptions::disk_fill_behind).
  void WaitForDiskFills();

  CacheStats stats() const;
  // What `du` would say of disk tier i right now: st_blocks of its directory
  // and every file in it (temp files included), taken under the tier's lock
  // so no block is added or evicted meanwhile. Never above its capacity.
  Result<uint64_t> MeasureDiskUsage(size_t tier) const;
  const CacheOptions& options() const;
  objstore::ObjectStore* base() const;

  struct Impl;

 private:
  friend class CachedReader;
  explicit CachedObjectStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};


}  // namespace strata::cache
