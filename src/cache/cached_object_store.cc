#include <strata/cache/cached_object_store.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <optional>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>
#include <strata/core/thread_pool.h>

#include "cache/block_file.h"
#include "cache/policy.h"
#include "cache/tiers.h"

namespace strata::cache {

using objstore::ByteSink;
using objstore::ByteSource;
using objstore::ListPage;
using objstore::ObjectInfo;
using objstore::ObjectStore;
using objstore::ReadOptions;
using objstore::UploadedPart;
using objstore::WriteOptions;

namespace {

constexpr log::Logger kLog("cache");
constexpr size_t kMaxStreams = 1024;  // Get() readahead streams remembered (one per key)

// A fetch of one block from the backend, shared by everyone who wants it.
struct Pending {
  bool done = false;     // guarded by Impl::pending_mu
  Status status;         // set before done
  std::shared_ptr<const std::string> data;
  bool staged = false;   // done, not admitted by any tier, kept until read to its end
};

// Sequential-read detection for one reader (or one key's successive Gets).
struct StreamState {
  std::string etag;
  uint64_t next_offset = 0;
  uint64_t window = 0;         // readahead bytes beyond the current read
  uint64_t prefetched_to = 0;  // blocks below this index were already requested
};

}  // namespace

struct CachedReader::State {
  StreamState stream;
};

struct CachedObjectStore::Impl {
  ObjectStore* base = nullptr;
  std::unique_ptr<ObjectStore> owned;
  CacheOptions options;
  std::unique_ptr<FrequencySketch> sketch;
  std::unique_ptr<RamTier> ram;
  std::vector<std::unique_ptr<DiskTier>> disks;

  struct Meta {
    ObjectInfo info;
    int64_t at_ns = 0;
  };
  std::mutex meta_mu;
  std::unordered_map<std::string, Meta> meta;  // guarded by meta_mu

  struct KeyState {
    uint64_t priority = kNoFurtherUse;
    int pins = 0;
  };
  std::mutex keys_mu;
  std::unordered_map<std::string, KeyState> keys;  // guarded by keys_mu

  std::mutex pending_mu;
  std::condition_variable pending_cv;  // with pending_mu: a Pending became done
  std::unordered_map<BlockId, std::shared_ptr<Pending>, BlockIdHash> pending;  // guarded by pending_mu
  std::deque<std::pair<BlockId, std::shared_ptr<Pending>>> staged_order;     // guarded by pending_mu
  uint64_t staged_bytes = 0;                                                 // guarded by pending_mu

  // Disk writes of blocks the RAM tier already holds (disk_fill_behind):
  // queued here and written by one low-priority filler thread, so neither a
  // waiting read nor the fetch threads spend time on them, and on a busy
  // machine they take only CPU nobody else wants. A full queue drops the
  // write (the block stays in RAM; counted).
  struct FillJob {
    DiskTier* disk;
    BlockId id;
    std::string key, etag;
    uint64_t index;
    std::shared_ptr<const std::string> data;
    AdmitInfo admit;
  };
  std::mutex fills_mu;
  std::condition_variable fills_cv;       // with fills_mu: a job arrived, or stop
  std::condition_variable fills_idle_cv;  // with fills_mu: queue empty and no job running
  // Big blocks are written at once (O_DIRECT: little CPU). Small ones cost a
  // file create each, which on a busy ext4 can take longer than fetching
  // the block: they wait until no fetch has started for kFillIdleMs (or
  // the queue is half full, or someone waits for the fills).
  std::deque<FillJob> fill_queue;         // guarded by fills_mu: big blocks
  std::deque<FillJob> small_fill_queue;   // guarded by fills_mu
  uint64_t fill_queue_bytes = 0;          // guarded by fills_mu: both queues
  int fills_running = 0;                  // guarded by fills_mu
  int fills_forced = 0;                   // guarded by fills_mu: WaitForDiskFills callers
  bool fills_stop = false;                // guarded by fills_mu
  std::atomic<int64_t> last_fetch_ms{0};  // steady clock, when a backend fetch last started
  static constexpr int64_t kFillIdleMs = 50;
  static constexpr size_t kSmallFill = 256 << 10;

  static int64_t SteadyMs() { return MonotonicNanos() / 1'000'000; }
  std::thread filler;  // runs FillLoop; not joinable without disk_fill_behind
  metrics::Counter* m_fill_dropped = nullptr;

  void StopFiller() {
    if (!filler.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(fills_mu);
      fills_stop = true;
    }
    fills_cv.notify_all();
    filler.join();
  }

  void FillLoop() {
    // Below the readers and the fetch threads (a thread's nice value is its own on Linux).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    std::unique_lock<std::mutex> lock(fills_mu);
    for (;;) {
      // Drains the queues before stopping: blocks read before close reach the disk.
      fills_cv.wait(lock, [&] { return fills_stop || !fill_queue.empty() || !small_fill_queue.empty(); });
      std::deque<FillJob>* q = nullptr;
      if (!fill_queue.empty()) {
        q = &fill_queue;
      } else if (!small_fill_queue.empty()) {
        const int64_t quiet = SteadyMs() - last_fetch_ms.load(std::memory_order_relaxed);
        if (fills_stop || fills_forced > 0 || quiet >= kFillIdleMs ||
            fill_queue_bytes * 2 > options.fill_queue_bytes) {
          q = &small_fill_queue;
        } else {
          fills_cv.wait_for(lock, std::chrono::milliseconds(kFillIdleMs - quiet));
          continue;
        }
      } else {
        return;  // stopping, nothing left
      }
      FillJob job = std::move(q->front());
      q->pop_front();
      fill_queue_bytes -= job.data->size();
      ++fills_running;
      lock.unlock();
      job.disk->Insert(BlockRef{job.id, job.key, job.etag, job.index}, job.data, job.admit);
      job = FillJob{};
      lock.lock();
      if (--fills_running == 0 && fill_queue.empty() && small_fill_queue.empty()) fills_idle_cv.notify_all();
    }
  }

  // false when the queue is full (the write is dropped).
  bool QueueFill(DiskTier* disk, const BlockRef& ref, const std::shared_ptr<const std::string>& data,
                 const AdmitInfo& admit) {
    {
      std::lock_guard<std::mutex> lock(fills_mu);
      if (fill_queue_bytes + data->size() > options.fill_queue_bytes &&
          !(fill_queue.empty() && small_fill_queue.empty())) {
        m_fill_dropped->Inc();
        return false;
      }
      (data->size() < kSmallFill ? small_fill_queue : fill_queue)
          .push_back(FillJob{disk, ref.id, std::string(ref.key), std::string(ref.etag), ref.index, data, admit});
      fill_queue_bytes += data->size();
    }
    fills_cv.notify_one();
    return true;
  }

  std::mutex streams_mu;
  std::unordered_map<std::string, StreamState> streams;  // guarded by streams_mu
  std::deque<std::string> stream_order;                   // guarded by streams_mu

  std::atomic<uint64_t> backend_gets{0}, backend_bytes{0}, heads{0}, readahead_blocks{0},
      staged_hits{0};
  metrics::Counter* m_backend_gets = nullptr;
  metrics::Counter* m_backend_bytes = nullptr;
  metrics::Counter* m_heads = nullptr;
  metrics::Counter* m_readahead = nullptr;

  // Declared last so it is destroyed first: fetch tasks use everything above.
  std::unique_ptr<ThreadPool> pool;

  ~Impl() {
    pool.reset();    // no fetch queues a fill after this
    StopFiller();    // writes what is queued
  }

  // ---- placement and admission -----------------------------------------
  DiskTier* DiskFor(const BlockId& id) const {
    if (disks.empty()) return nullptr;
    if (disks.size() == 1) return disks[0].get();
    // Rendezvous hashing weighted by capacity: a tier's share of blocks is
    // its share of capacity, and adding a tier moves only the blocks it wins.
    DiskTier* best = nullptr;
    double best_score = -1;
    for (size_t i = 0; i < disks.size(); ++i) {
      const uint64_t h = Mix64(id.lo ^ Mix64(id.hi + i * 0x9e3779b97f4a7c15ull));
      const double u = (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
      const double score = static_cast<double>(disks[i]->capacity()) / -std::log(u);
      if (score > best_score) {
        best_score = score;
        best = disks[i].get();
      }
    }
    return best;
  }

  AdmitInfo AdmitFor(std::string_view key, const BlockId& id) {
    AdmitInfo a;
    a.freq = sketch->Estimate(id);
    std::lock_guard<std::mutex> lock(keys_mu);
    auto it = keys.find(std::string(key));
    if (it != keys.end()) {
      a.priority = it->second.priority;
      a.pinned = it->second.pins > 0;
    }
    return a;
  }

  bool Resident(const BlockId& id) const {
    if (ram && ram->Contains(id)) return true;
    DiskTier* d = DiskFor(id);
    return d != nullptr && d->Contains(id);
  }

  // `fetched_by_caller`: the caller started this block's fetch itself, so
  // finding it in a tier now is still a miss for every tier.
  std::shared_ptr<const std::string> LookupTiers(const BlockRef& ref, bool fetched_by_caller) {
    const bool count = !fetched_by_caller;
    DiskTier* disk = DiskFor(ref.id);
    std::shared_ptr<const std::string> d;
    if (ram) d = ram->Lookup(ref, count);
    if (!d && disk != nullptr) {
      d = disk->Lookup(ref, count);
      if (d && ram) ram->Insert(ref, d, AdmitFor(ref.key, ref.id));  // promote
    }
    if (d && fetched_by_caller) {
      if (ram) ram->CountMiss();
      if (disk) disk->CountMiss();
    }
    return d;
  }

  // Offers a fetched block to the tiers. Once the RAM tier holds it, the
  // disk write (a file create and a copy: most of a cold read's CPU) goes to
  // the filler (disk_fill_behind) instead of delaying the readers waiting for
  // the block; the block is resident meanwhile.
  bool InsertTiers(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
                   const AdmitInfo& admit) {
    bool stored = false;
    if (ram) stored = ram->Insert(ref, data, admit);
    if (DiskTier* disk = DiskFor(ref.id)) {
      if (!(stored && filler.joinable() && QueueFill(disk, ref, data, admit))) {
        stored |= disk->Insert(ref, data, admit);
      }
    }
    return stored;
  }

  // ---- fetching ----------------------------------------------------------
  uint64_t BlockLen(const ObjectInfo& info, uint64_t index) const {
    const uint64_t start = index * options.block_size;
    return std::min(options.block_size, info.size - start);
  }

  void DropStagedLocked(const BlockId& id, const std::shared_ptr<Pending>& p) {
    auto it = pending.find(id);
    if (it != pending.end() && it->second == p) pending.erase(it);
    if (p->staged) {
      p->staged = false;
      staged_bytes -= p->data ? p->data->size() : 0;
    }
  }

  void TrimStagingLocked() {
    while (staged_bytes > options.staging_bytes && !staged_order.empty()) {
      auto [id, p] = staged_order.front();
      staged_order.pop_front();
      if (p->staged) DropStagedLocked(id, p);
    }
    // Entries already taken linger in the deque until they reach its front;
    // keep it from growing without bound under a small staging_bytes.
    while (staged_order.size() > 4096 && !staged_order.front().second->staged) {
      staged_order.pop_front();
    }
  }

  // Requires pending_mu. Registers a fetch of the block; `*task` runs it.
  std::shared_ptr<Pending> NewFetchLocked(const ObjectInfo& info, uint64_t index, const BlockId& id,
                                          std::function<void()>* task) {
    auto p = std::make_shared<Pending>();
    pending.emplace(id, p);
    last_fetch_ms.store(SteadyMs(), std::memory_order_relaxed);
    // Admission weighs the block's past accesses, taken before this one counts.
    AdmitInfo admit = AdmitFor(info.key, id);
    *task = [this, p, id, index, admit, key = info.key, etag = info.etag, len = BlockLen(info, index)] {
      RunFetch(p, id, key, etag, index, len, admit);
    };
    return p;
  }

  // Requires pending_mu. Starts a backend GET of the block on the pool.
  std::shared_ptr<Pending> StartFetchLocked(const ObjectInfo& info, uint64_t index,
                                            const BlockId& id) {
    std::function<void()> task;
    auto p = NewFetchLocked(info, index, id, &task);
    pool->Submit(std::move(task));
    return p;
  }

  void RunFetch(const std::shared_ptr<Pending>& p, const BlockId& id, const std::string& key,
                const std::string& etag, uint64_t index, uint64_t len, const AdmitInfo& admit) {
    auto data = std::make_shared<std::string>();
    data->reserve(len);
    ReadOptions ro;
    ro.offset = index * options.block_size;
    ro.length = len;
    // An empty ETag: the caller vouches that the key is never rewritten.
    if (!etag.empty()) ro.if_match = etag;
    Status st = base->Get(key, ro, [&](const char* b, size_t n) {
      data->append(b, n);
      return Status::Ok();
    });
    backend_gets.fetch_add(1, std::memory_order_relaxed);
    backend_bytes.fetch_add(data->size(), std::memory_order_relaxed);
    m_backend_gets->Inc();
    m_backend_bytes->Inc(data->size());
    if (st.ok() && data->size() != len) {
      st = Status::IOError(fmt::format("backend returned {} bytes for block {} of \"{}\", not {}",
                                       data->size(), index, key, len));
    }
    if (st.code() == StatusCode::kPreconditionFailed) {
      std::lock_guard<std::mutex> lock(meta_mu);
      meta.erase(key);
    }
    std::shared_ptr<const std::string> shared = std::move(data);
    // Offered to the tiers before anyone is woken, so a read that returned
    // (or a Prefetch) leaves the block resident if the tiers took it.
    const bool stored = st.ok() && InsertTiers(BlockRef{id, key, etag, index}, shared, admit);
    {
      std::lock_guard<std::mutex> lock(pending_mu);
      p->status = st;
      if (st.ok()) p->data = shared;
      p->done = true;
      if (!st.ok() || stored) {
        auto it = pending.find(id);
        if (it != pending.end() && it->second == p) pending.erase(it);
      } else {
        // Kept out of the tiers: hold it for the reader (read ahead, or a
        // sequential reader in the middle of it) until read to its end, so
        // a full cache does not make every small read fetch it again.
        p->staged = true;
        staged_bytes += shared->size();
        staged_order.emplace_back(id, p);
        TrimStagingLocked();
      }
    }
    pending_cv.notify_all();
  }

  void WaitForDiskFills() {
    std::unique_lock<std::mutex> lock(fills_mu);
    ++fills_forced;
    fills_cv.notify_all();
    fills_idle_cv.wait(lock, [&] { return fill_queue.empty() && small_fill_queue.empty() && fills_running == 0; });
    --fills_forced;
  }

  // Makes sure the block is resident or being fetched; true if this call
  // started the fetch.
  bool EnsureStarted(const ObjectInfo& info, uint64_t index) {
    const BlockId id = MakeBlockId(info.key, info.etag, index);
    if (Resident(id)) return false;
    std::lock_guard<std::mutex> lock(pending_mu);
    if (pending.count(id)) return false;
    StartFetchLocked(info, index, id);
    return true;
  }

  // The block's data, from a tier, a fetch in flight, staging, or a new
  // fetch. `to_end`: the caller reads the block through its last byte, so a
  // staged copy can go.
  Result<std::shared_ptr<const std::string>> AcquireBlock(const ObjectInfo& info, uint64_t index,
                                                          bool count_access, bool to_end,
                                                          bool started_by_caller) {
    const BlockId id = MakeBlockId(info.key, info.etag, index);
    const BlockRef ref{id, info.key, info.etag, index};
    if (auto d = LookupTiers(ref, started_by_caller)) {
      if (count_access) sketch->Increment(id);
      return d;
    }
    std::shared_ptr<Pending> p;
    {
      std::unique_lock<std::mutex> lock(pending_mu);
      auto it = pending.find(id);
      if (it != pending.end()) {
        p = it->second;
      } else {
        // Nobody fetches it yet and this caller must wait for it anyway: fetch
        // it in this thread (no hand-off to the pool and back: two thread
        // wake-ups less on every cold small read). Others wait on p as usual.
        std::function<void()> task;
        p = NewFetchLocked(info, index, id, &task);
        lock.unlock();
        task();
        lock.lock();
      }
      pending_cv.wait(lock, [&] { return p->done; });
      if (p->staged) {
        staged_hits.fetch_add(1, std::memory_order_relaxed);
        if (to_end) DropStagedLocked(id, p);
      }
    }
    if (count_access) sketch->Increment(id);
    if (!p->status.ok()) return p->status;
    return p->data;
  }

  // ---- reading -----------------------------------------------------------
  void ReadAhead(const ObjectInfo& info, uint64_t off, uint64_t end, StreamState* s) {
    const uint64_t bs = options.block_size;
    const bool sequential = s->etag == info.etag && off == s->next_offset && off > 0;
    if (!sequential) {
      s->etag = info.etag;
      s->window = 0;
      s->prefetched_to = 0;
    } else {
      s->window = s->window == 0 ? bs : std::min(s->window * 2, options.max_readahead_bytes);
    }
    s->next_offset = end;
    if (s->window == 0 || end >= info.size) return;
    const uint64_t last_block = (info.size - 1) / bs;
    const uint64_t to = std::min(last_block, (end + s->window - 1) / bs);
    for (uint64_t b = std::max(s->prefetched_to, (end - 1) / bs + 1); b <= to; ++b) {
      EnsureStarted(info, b);
      readahead_blocks.fetch_add(1, std::memory_order_relaxed);
      m_readahead->Inc();
    }
    s->prefetched_to = std::max(s->prefetched_to, to + 1);
  }

  Status ReadVersion(const ObjectInfo& info, uint64_t off, std::optional<uint64_t> len,
                     const ByteSink& sink, StreamState* stream) {
    if (off >= info.size) return Status::Ok();
    const uint64_t end = len ? std::min(info.size, off + std::min(*len, info.size - off)) : info.size;
    if (end <= off) return Status::Ok();
    const uint64_t bs = options.block_size;
    const uint64_t first = off / bs, last = (end - 1) / bs;
    if (stream != nullptr && options.readahead) ReadAhead(info, off, end, stream);
    const uint64_t parallel = std::max(1, options.parallel_fetches_per_read);
    // Blocks this read started fetching (a later tier hit on them is a miss).
    std::vector<bool> started(last - first + 1, false);
    uint64_t next_start = first + 1;
    for (uint64_t b = first; b <= last; ++b) {
      // Keep up to `parallel` blocks of this read in flight: the ones after b
      // start here, b itself in AcquireBlock.
      while (next_start <= last && next_start < b + parallel) {
        started[next_start - first] = EnsureStarted(info, next_start);
        ++next_start;
      }
      const uint64_t bstart = b * bs;
      STRATA_ASSIGN_OR_RETURN(
          std::shared_ptr<const std::string> data,
          AcquireBlock(info, b, /*count_access=*/true, /*to_end=*/end >= bstart + BlockLen(info, b),
                       started[b - first]));
      const uint64_t from = std::max(off, bstart) - bstart;
      const uint64_t to = std::min(end, bstart + bs) - bstart;
      if (to > data->size()) {
        return Status::Internal(fmt::format("cache block {} of \"{}\" has {} bytes, needed {}", b,
                                            info.key, data->size(), to));
      }
      STRATA_RETURN_IF_ERROR(sink(data->data() + from, to - from));
    }
    return Status::Ok();
  }

  Result<ObjectInfo> GetMeta(std::string_view key, bool force) {
    const std::string k(key);
    if (options.metadata_ttl_ms > 0 && !force) {
      std::lock_guard<std::mutex> lock(meta_mu);
      auto it = meta.find(k);
      if (it != meta.end() && MonotonicNanos() - it->second.at_ns < options.metadata_ttl_ms * 1000000) {
        return it->second.info;
      }
    }
    heads.fetch_add(1, std::memory_order_relaxed);
    m_heads->Inc();
    STRATA_ASSIGN_OR_RETURN(ObjectInfo info, base->Head(key));
    info.key = k;
    RememberMeta(info);
    return info;
  }

  void RememberMeta(const ObjectInfo& info) {
    if (options.metadata_ttl_ms <= 0) return;
    std::lock_guard<std::mutex> lock(meta_mu);
    meta[info.key] = Meta{info, MonotonicNanos()};
  }

  // After a write through this store: the key's other versions are garbage.
  void Changed(std::string_view key, std::string_view new_etag) {
    {
      std::lock_guard<std::mutex> lock(meta_mu);
      meta.erase(std::string(key));
    }
    if (ram) ram->EraseKey(key, new_etag);
    for (auto& d : disks) d->EraseKey(key, new_etag);
  }

  void ApplyKeyState(std::string_view key) {
    uint64_t prio = kNoFurtherUse;
    bool pinned = false;
    {
      std::lock_guard<std::mutex> lock(keys_mu);
      auto it = keys.find(std::string(key));
      if (it != keys.end()) {
        prio = it->second.priority;
        pinned = it->second.pins > 0;
        if (!pinned && prio == kNoFurtherUse) keys.erase(it);
      }
    }
    if (ram) ram->SetKeyState(key, prio, pinned);
    for (auto& d : disks) d->SetKeyState(key, prio, pinned);
  }
};

// ---------------------------------------------------------------------------

bool ParseEvictionPolicy(std::string_view name, EvictionPolicy* out) {
  const std::string n = ToLower(name);
  if (n == "sieve") *out = EvictionPolicy::kSieve;
  else if (n == "lru") *out = EvictionPolicy::kLru;
  else if (n == "priority" || n == "belady") *out = EvictionPolicy::kPriority;
  else return false;
  return true;
}

std::string_view EvictionPolicyName(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::kLru:
      return "lru";
    case EvictionPolicy::kPriority:
      return "priority";
    case EvictionPolicy::kSieve:
    default:
      return "sieve";
  }
}

// ---------------------------------------------------------------------------
// CachedReader

CachedReader::CachedReader(CachedObjectStore* store, ObjectInfo info)
    : store_(store), info_(std::move(info)), state_(std::make_unique<State>()) {}
CachedReader::~CachedReader() = default;

const ObjectInfo& CachedReader::info() const { return info_; }

Status CachedReader::Read(uint64_t offset, uint64_t length, const ByteSink& sink) {
  return store_->impl_->ReadVersion(info_, offset, length, sink, &state_->stream);
}

Result<size_t> CachedReader::ReadAt(uint64_t offset, char* buf, size_t n) {
  size_t got = 0;
  STRATA_RETURN_IF_ERROR(Read(offset, n, [&](const char* p, size_t k) {
    std::memcpy(buf + got, p, k);
    got += k;
    return Status::Ok();
  }));
  return got;
}

// ---------------------------------------------------------------------------
// CachedObjectStore

CachedObjectStore::CachedObjectStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CachedObjectStore::~CachedObjectStore() = default;

Result<std::unique_ptr<CachedObjectStore>> CachedObjectStore::Open(
    std::unique_ptr<ObjectStore> base, CacheOptions options) {
  ObjectStore* raw = base.get();
  STRATA_ASSIGN_OR_RETURN(auto cache, Open(raw, std::move(options)));
  cache->impl_->owned = std::move(base);
  return cache;
}

Result<std::unique_ptr<CachedObjectStore>> CachedObjectStore::Open(ObjectStore* base,
                                                                   CacheOptions options) {
  if (base == nullptr) return Status::InvalidArgument("CachedObjectStore needs a base store");
  if (options.block_size < 4096 || options.block_size > (1ull << 30)) {
    return Status::InvalidArgument("cache block_size must be between 4 KiB and 1 GiB");
  }
  if (options.fetch_threads < 1) options.fetch_threads = 1;
  auto impl = std::make_unique<Impl>();
  impl->base = base;
  impl->options = std::move(options);
  const CacheOptions& o = impl->options;
  uint64_t total = o.ram_capacity_bytes;
  for (const auto& d : o.disk_tiers) total += d.capacity_bytes;
  impl->sketch = std::make_unique<FrequencySketch>(std::max<uint64_t>(1, total / o.block_size));
  if (o.ram_capacity_bytes > 0) {
    impl->ram = std::make_unique<RamTier>(o.ram_capacity_bytes, impl->options, impl->sketch.get());
  }
  for (size_t i = 0; i < o.disk_tiers.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(auto t, DiskTier::Open(static_cast<int>(i), o.disk_tiers[i],
                                                   impl->options, impl->sketch.get()));
    impl->disks.push_back(std::move(t));
  }
  auto& r = metrics::Registry::Global();
  const std::string l = fmt::format("cache=\"{}\"", o.name);
  impl->m_backend_gets =
      &r.GetCounter("strata_cache_backend_gets_total", "Ranged GETs the cache sent to its backend", l);
  impl->m_backend_bytes =
      &r.GetCounter("strata_cache_backend_bytes_total", "Bytes the cache read from its backend", l);
  impl->m_heads = &r.GetCounter("strata_cache_heads_total", "HEADs the cache sent to learn ETags", l);
  impl->m_readahead =
      &r.GetCounter("strata_cache_readahead_blocks_total", "Blocks requested by readahead", l);
  impl->m_fill_dropped = &r.GetCounter("strata_cache_fill_dropped_total",
                                       "Disk-tier writes dropped because the fill queue was full", l);
  impl->pool = std::make_unique<ThreadPool>(static_cast<size_t>(o.fetch_threads));
  if (o.disk_fill_behind && impl->ram && !impl->disks.empty()) {
    Impl* i = impl.get();
    impl->filler = std::thread([i] { i->FillLoop(); });
  }
  return std::unique_ptr<CachedObjectStore>(new CachedObjectStore(std::move(impl)));
}

const CacheOptions& CachedObjectStore::options() const { return impl_->options; }

Result<uint64_t> CachedObjectStore::MeasureDiskUsage(size_t tier) const {
  if (tier >= impl_->disks.size()) {
    return Status::InvalidArgument(fmt::format("the cache has {} disk tiers", impl_->disks.size()));
  }
  return impl_->disks[tier]->MeasureOnDisk();
}
ObjectStore* CachedObjectStore::base() const { return impl_->base; }

std::string CachedObjectStore::url() const { return impl_->base->url(); }

Result<ObjectInfo> CachedObjectStore::Put(std::string_view key, ByteSource& body,
                                          const WriteOptions& options) {
  auto r = impl_->base->Put(key, body, options);
  impl_->Changed(key, r.ok() ? std::string_view(r->etag) : std::string_view());
  return r;
}

Status CachedObjectStore::Get(std::string_view key, const ReadOptions& options,
                              const ByteSink& sink, ObjectInfo* info) {
  Impl& im = *impl_;
  const std::string k(key);
  for (int attempt = 0;; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(ObjectInfo meta, im.GetMeta(key, attempt > 0));
    if (options.if_match && *options.if_match != "*" && UnquoteETag(*options.if_match) != meta.etag) {
      return Status::PreconditionFailed("object \"" + k + "\" changed: its ETag is " + meta.etag +
                                        ", not " + *options.if_match + " (If-Match)");
    }
    if (info) *info = meta;
    // Successive partial reads of one key share a readahead stream.
    const bool partial = options.length.has_value() || options.offset > 0;
    StreamState stream;
    if (partial) {
      std::lock_guard<std::mutex> lock(im.streams_mu);
      auto it = im.streams.find(k);
      if (it != im.streams.end()) stream = it->second;
    }
    bool sent = false;
    Status st = im.ReadVersion(meta, options.offset, options.length,
                               [&](const char* p, size_t n) {
                                 sent = true;
                                 return sink(p, n);
                               },
                               partial ? &stream : nullptr);
    if (partial) {
      std::lock_guard<std::mutex> lock(im.streams_mu);
      auto [it, inserted] = im.streams.insert_or_assign(k, stream);
      if (inserted) {
        im.stream_order.push_back(k);
        while (im.stream_order.size() > kMaxStreams) {
          im.streams.erase(im.stream_order.front());
          im.stream_order.pop_front();
        }
      }
    }
    // The object changed between the HEAD and the block GETs: once more with
    // the new version, unless bytes of the old one already went out.
    if (st.code() == StatusCode::kPreconditionFailed && !sent && !options.if_match && attempt == 0) {
      continue;
    }
    if (st.code() == StatusCode::kPreconditionFailed) {
      return Status::PreconditionFailed("object \"" + k + "\" changed while it was being read (" +
                                        st.message() + "); read it again");
    }
    return st;
  }
}

Result<ObjectInfo> CachedObjectStore::Head(std::string_view key) {
  auto r = impl_->base->Head(key);
  if (r.ok()) {
    ObjectInfo i = *r;
    i.key = std::string(key);
    impl_->RememberMeta(i);
  }
  return r;
}

Status CachedObjectStore::Delete(std::string_view key) {
  Status st = impl_->base->Delete(key);
  impl_->Changed(key, "");
  return st;
}

Result<std::vector<Status>> CachedObjectStore::DeleteMany(const std::vector<std::string>& keys) {
  auto r = impl_->base->DeleteMany(keys);
  for (const auto& k : keys) impl_->Changed(k, "");
  return r;
}

Result<ListPage> CachedObjectStore::List(std::string_view prefix, std::string_view delimiter,
                                         std::string_view token, int max_keys) {
  return impl_->base->List(prefix, delimiter, token, max_keys);
}

Result<std::string> CachedObjectStore::CreateMultipart(std::string_view key,
                                                       const WriteOptions& options) {
  return impl_->base->CreateMultipart(key, options);
}

Result<UploadedPart> CachedObjectStore::UploadPart(std::string_view key, std::string_view upload_id,
                                                   int part_number, ByteSource& body,
                                                   uint64_t size) {
  return impl_->base->UploadPart(key, upload_id, part_number, body, size);
}

Result<ObjectInfo> CachedObjectStore::CompleteMultipart(std::string_view key,
                                                        std::string_view upload_id,
                                                        const std::vector<UploadedPart>& parts) {
  auto r = impl_->base->CompleteMultipart(key, upload_id, parts);
  impl_->Changed(key, r.ok() ? std::string_view(r->etag) : std::string_view());
  return r;
}

Status CachedObjectStore::AbortMultipart(std::string_view key, std::string_view upload_id) {
  return impl_->base->AbortMultipart(key, upload_id);
}

Result<std::vector<UploadedPart>> CachedObjectStore::ListParts(std::string_view key,
                                                               std::string_view upload_id) {
  return impl_->base->ListParts(key, upload_id);
}

Result<ObjectInfo> CachedObjectStore::Copy(std::string_view src_key, std::string_view dst_key) {
  auto r = impl_->base->Copy(src_key, dst_key);
  impl_->Changed(dst_key, r.ok() ? std::string_view(r->etag) : std::string_view());
  return r;
}

Status CachedObjectStore::Rename(std::string_view src_key, std::string_view dst_key) {
  Status st = impl_->base->Rename(src_key, dst_key);
  impl_->Changed(src_key, "");
  impl_->Changed(dst_key, "");
  return st;
}

Result<std::unique_ptr<CachedReader>> CachedObjectStore::OpenReader(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(ObjectInfo info, impl_->GetMeta(key, false));
  return std::unique_ptr<CachedReader>(new CachedReader(this, std::move(info)));
}

std::unique_ptr<CachedReader> CachedObjectStore::OpenReader(const ObjectInfo& info) {
  return std::unique_ptr<CachedReader>(new CachedReader(this, info));
}

Result<bool> CachedObjectStore::Prefetch(const ObjectInfo& info) {
  Impl& im = *impl_;
  if (info.size == 0) return true;
  const uint64_t bs = im.options.block_size;
  const uint64_t nblocks = (info.size + bs - 1) / bs;
  const uint64_t parallel = std::max(1, im.options.parallel_fetches_per_read);
  std::vector<bool> started(nblocks, false);
  uint64_t next_start = 1;
  for (uint64_t b = 0; b < nblocks; ++b) {
    while (next_start < nblocks && next_start < b + parallel) {
      started[next_start] = im.EnsureStarted(info, next_start);
      ++next_start;
    }
    auto d = im.AcquireBlock(info, b, /*count_access=*/false, /*to_end=*/true, started[b]);
    if (!d.ok()) return d.error();
  }
  return IsResident(info);
}

bool CachedObjectStore::IsResident(const ObjectInfo& info) const {
  const uint64_t bs = impl_->options.block_size;
  const uint64_t nblocks = (info.size + bs - 1) / bs;
  for (uint64_t b = 0; b < nblocks; ++b) {
    if (!impl_->Resident(MakeBlockId(info.key, info.etag, b))) return false;
  }
  return true;
}

void CachedObjectStore::SetKeyPriority(std::string_view key, uint64_t next_use) {
  {
    std::lock_guard<std::mutex> lock(impl_->keys_mu);
    impl_->keys[std::string(key)].priority = next_use;
  }
  impl_->ApplyKeyState(key);
}

void CachedObjectStore::Pin(std::string_view key) {
  {
    std::lock_guard<std::mutex> lock(impl_->keys_mu);
    ++impl_->keys[std::string(key)].pins;
  }
  impl_->ApplyKeyState(key);
}

void CachedObjectStore::Unpin(std::string_view key) {
  {
    std::lock_guard<std::mutex> lock(impl_->keys_mu);
    auto it = impl_->keys.find(std::string(key));
    if (it != impl_->keys.end() && it->second.pins > 0) --it->second.pins;
  }
  impl_->ApplyKeyState(key);
}

void CachedObjectStore::Invalidate(std::string_view key) { impl_->Changed(key, ""); }

void CachedObjectStore::WaitForDiskFills() { impl_->WaitForDiskFills(); }

CacheStats CachedObjectStore::stats() const {
  CacheStats s;
  if (impl_->ram) s.tiers.push_back(impl_->ram->Stats());
  for (const auto& d : impl_->disks) s.tiers.push_back(d->Stats());
  s.backend_gets = impl_->backend_gets.load();
  s.backend_bytes = impl_->backend_bytes.load();
  s.heads = impl_->heads.load();
  s.readahead_blocks = impl_->readahead_blocks.load();
  s.staged_hits = impl_->staged_hits.load();
  return s;
}

}  // namespace strata::cache
