// Private: what every index implementation shares.
//
// IndexBase implements the public Index contract once (argument checks, NaN
// rejection, cosine normalisation, id bookkeeping, deletes, the filter
// planner, query parallelism, serialization framing, the disk-resident part),
// and leaves each implementation four things: train, add rows, search one
// query, compute exact distances to a list of rows.
//
// Rows are addressed by an internal id (uint32, dense, in Add order, never
// reused); Label(internal) is the caller's id. Removing marks the row in
// deleted_; the row stays until the index is rebuilt.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/vector/index.h>

#include "vector/simd/distance_kernels.h"

namespace strata::vector::internal {

inline unsigned ResolveThreads(uint32_t requested) {
  if (requested != 0) return requested;
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : hc;
}

// fn(i, worker) for i in [0, n) on `threads` threads (the caller is worker 0),
// handing out indices dynamically in chunks of `grain`.
template <class F>
void ParallelFor(size_t n, unsigned threads, F&& fn, size_t grain = 1) {
  if (threads <= 1 || n <= grain) {
    for (size_t i = 0; i < n; ++i) fn(i, 0u);
    return;
  }
  threads = static_cast<unsigned>(std::min<size_t>(threads, (n + grain - 1) / grain));
  std::atomic<size_t> next{0};
  auto worker = [&](unsigned t) {
    for (;;) {
      size_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= n) break;
      size_t end = std::min(n, begin + grain);
      for (size_t i = begin; i < end; ++i) fn(i, t);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
}

// Keeps the first error reported by parallel workers.
class FirstError {
 public:
  void Set(const Status& s) {
    if (s.ok() || failed_.exchange(true)) return;
    status_ = s;  // only the first failing worker gets here
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Call after the workers have joined.
  Status Take() { return failed() ? status_ : Status::Ok(); }

 private:
  std::atomic<bool> failed_{false};
  Status status_;
};

// Max-heap of (distance, internal id): the running top-k.
struct HeapItem {
  float dist;
  uint32_t id;
};
inline bool HeapLess(const HeapItem& a, const HeapItem& b) { return a.dist < b.dist; }

class TopK {
 public:
  explicit TopK(size_t k) : k_(k) { v_.reserve(k + 1); }
  size_t size() const { return v_.size(); }
  bool full() const { return v_.size() >= k_; }
  float worst() const { return v_.empty() ? std::numeric_limits<float>::infinity() : v_[0].dist; }
  // Pushes when it improves the set.
  void Push(float d, uint32_t id) {
    if (v_.size() < k_) {
      v_.push_back({d, id});
      std::push_heap(v_.begin(), v_.end(), HeapLess);
    } else if (d < v_[0].dist) {
      std::pop_heap(v_.begin(), v_.end(), HeapLess);
      v_.back() = {d, id};
      std::push_heap(v_.begin(), v_.end(), HeapLess);
    }
  }
  std::vector<HeapItem>& items() { return v_; }
  void Clear() { v_.clear(); }

 private:
  size_t k_;
  std::vector<HeapItem> v_;
};

// Sorts items ascending and writes k neighbours (padded) to out; a row's id
// is labels[row], or the row itself when labels is nullptr.
void WriteResults(std::vector<HeapItem>& items, size_t k, const uint64_t* labels, Neighbor* out);

// id -> latest internal id for indexes whose ids are not their row numbers:
// open addressing over 4-byte slots (internal + 1; 0 = empty, load <= 0.7)
// that compare through the labels array: under 6 bytes per vector instead of
// an unordered_map's ~40. Never erases: a removed id keeps its slot (the row
// is marked deleted) and re-adding it repoints the slot.
class LabelMap {
 public:
  // Returns the internal id for label, or UINT32_MAX.
  uint32_t Find(uint64_t label, const std::vector<uint64_t>& labels) const;
  // Maps labels[internal] -> internal (replacing an older row of the same id).
  void Insert(uint32_t internal, const std::vector<uint64_t>& labels);
  void Clear() {
    slots_.clear();
    count_ = 0;
  }
  size_t MemoryBytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  size_t Slot(uint64_t label) const {
    return static_cast<size_t>((label * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Grow(const std::vector<uint64_t>& labels);

  std::vector<uint32_t> slots_;
  size_t count_ = 0;
  int shift_ = 64;
};

// Append-only binary writer / bounds-checked reader for serialization. Values
// are little-endian PODs (the only targets are x86-64 and aarch64).
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <class T>
  void Put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_->append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <class T>
  void PutVec(const std::vector<T>& v) {
    Put<uint64_t>(v.size());
    PutRaw(v.data(), v.size() * sizeof(T));
  }
  void PutRaw(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  size_t size() const { return out_->size(); }
  std::string* str() { return out_; }

 private:
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <class T>
  bool Get(T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  template <class T>
  bool GetVec(std::vector<T>* v, uint64_t max_elems = (uint64_t(1) << 40)) {
    uint64_t n;
    if (!Get(&n) || n > max_elems || n > (data_.size() - pos_) / sizeof(T)) return false;
    v->resize(n);
    // An empty vector's data() may be null, and memcpy(nullptr, _, 0) is
    // undefined behaviour (UBSan reported it loading an index with no deletions).
    if (n > 0) std::memcpy(v->data(), data_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  bool GetRaw(void* p, size_t n) {
    if (data_.size() - pos_ < n) return false;
    if (n > 0) std::memcpy(p, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// The disk-resident part of an index: a byte range [base, base + size) of a
// file, read with pread. Either a scratch file the index writes while it is
// built (unlinked at once when anonymous) or a range of a saved index file.
class DiskFile {
 public:
  ~DiskFile();
  // A new, empty, writable file; empty path = anonymous temporary file.
  static Result<std::unique_ptr<DiskFile>> Create(const std::string& path);
  // A read-only range of an existing file.
  static Result<std::unique_ptr<DiskFile>> OpenRange(const std::string& path, uint64_t base,
                                                     uint64_t size);
  Status Read(uint64_t off, void* buf, size_t n) const;
  Status Write(uint64_t off, const void* buf, size_t n);  // writable files only; grows size
  uint64_t size() const { return size_; }
  bool writable() const { return writable_; }
  // Streams the whole range into out / into fd at its current offset.
  Status AppendTo(std::string* out) const;
  Status CopyToFd(int fd) const;
  // CRC32C over the range.
  Result<uint32_t> Checksum() const;
  // A writable copy of this range at path (empty = anonymous temporary).
  Result<std::unique_ptr<DiskFile>> WritableCopy(const std::string& path) const;

 private:
  DiskFile(int fd, uint64_t base, uint64_t size, bool writable)
      : fd_(fd), base_(base), size_(size), writable_(writable) {}
  int fd_;
  uint64_t base_;
  uint64_t size_;
  bool writable_;
};

class IndexBase;

// Matching rows sampled per filtered Search call as entry points of the walk.
inline constexpr size_t kFilterSeeds = 64;

// The live rows passing a filter (all live rows without one), enumerated on
// first use and then shared by the queries of a Search call: the exact scan a
// filtered walk falls back to when it comes up short. Thread-safe.
class LazyMatchingRows {
 public:
  LazyMatchingRows(const IndexBase* index, const IdFilter* filter)
      : index_(index), filter_(filter) {}
  const std::vector<uint32_t>& Get() const;

 private:
  const IndexBase* index_;
  const IdFilter* filter_;
  mutable std::once_flag once_;
  mutable std::vector<uint32_t> rows_;  // written once under once_
};

// SearchResults' work counters, added to by the queries of one call.
struct SearchCounters {
  std::atomic<uint64_t> distances{0};
  std::atomic<uint64_t> link_reads{0};
  void Add(uint64_t d, uint64_t l) {
    distances.fetch_add(d, std::memory_order_relaxed);
    link_reads.fetch_add(l, std::memory_order_relaxed);
  }
};

// How a single query is to be answered (fixed for a whole Search call).
struct QueryContext {
  const SearchParams* params;
  const IdFilter* filter;         // nullptr: no filter
  FilterStrategy strategy;        // kGraph or kAcorn when filtered (kExact never reaches impls)
  double selectivity;             // estimated fraction passing the filter; 1 without one
  // Filtered walks: a sample of matching rows (entry points among the nodes
  // that pass, so the walk starts inside the predicate's subgraph), and the
  // matching rows for an exact fallback. Both null without a filter.
  const std::vector<uint32_t>* seeds = nullptr;
  const LazyMatchingRows* matching = nullptr;
  SearchCounters* counters = nullptr;  // never null inside Search
};

class IndexBase : public Index {
 public:
  explicit IndexBase(const IndexParams& p);
  ~IndexBase() override;

  using Index::Add;
  using Index::GetVector;
  using Index::Search;

  const IndexParams& params() const override { return params_; }
  bool IsTrained() const override { return true; }
  Status Train(size_t n, const float* data) override;
  Status Add(size_t n, const float* data, const uint64_t* ids) override;
  Status Search(size_t nq, const float* queries, size_t k, const SearchParams& params,
                SearchResults* out) const override;
  Status SearchSubset(size_t nq, const float* queries, size_t k, const uint64_t* ids,
                      size_t n_ids, SearchResults* out, uint32_t num_threads) const override;
  double EstimateSelectivity(const IdFilter& filter) const override;
  Status Remove(size_t n, const uint64_t* ids, size_t* removed) override;
  bool Contains(uint64_t id) const override;
  Status GetVector(uint64_t id, float* out) const override;
  size_t Size() const override { return live_; }
  size_t MemoryBytes() const override;
  size_t DiskBytes() const override { return disk_ ? disk_->size() : 0; }
  Status Serialize(std::string* out) const override;
  Status Save(const std::string& path) const override;

  // Framing shared by Deserialize and Load.
  static Result<std::unique_ptr<IndexBase>> ParseRam(std::string_view ram, uint64_t* disk_offset,
                                                     uint64_t* disk_size, uint32_t* disk_crc);
  void AttachDisk(std::unique_ptr<DiskFile> f) { disk_ = std::move(f); }

  // Row bookkeeping, shared with the implementations.
  bool IsDeleted(uint32_t i) const { return (deleted_[i >> 6] >> (i & 63)) & 1; }
  bool Passes(uint32_t i, const IdFilter* filter) const {
    return !IsDeleted(i) && (filter == nullptr || filter->Contains(Label(i)));
  }
  size_t rows() const { return rows_; }
  uint64_t Label(uint32_t i) const { return identity_ ? i : labels_[i]; }
  // For WriteResults: nullptr while ids are row numbers.
  const uint64_t* LabelsPtr() const { return identity_ ? nullptr : labels_.data(); }
  // Live rows whose id passes the filter (all live rows for nullptr),
  // ascending (enumerated or scanned).
  std::vector<uint32_t> MatchingRows(const IdFilter* filter) const;
  // Row of a live or removed id; UINT32_MAX if unknown.
  uint32_t FindRow(uint64_t id) const {
    if (identity_) return id < rows_ ? uint32_t(id) : UINT32_MAX;
    return label_map_.Find(id, labels_);
  }

 protected:
  // n rows (validated; normalised for COSINE) get internal ids first..first+n-1.
  virtual Status TrainImpl(size_t n, const float* data) { return Status::Ok(); }
  virtual Status AddImpl(size_t n, const float* data, uint32_t first) = 0;
  // k nearest passing rows for one prepared query; out gets k entries (padded).
  virtual Status SearchOne(const float* query, size_t k, const QueryContext& ctx,
                           Neighbor* out) const = 0;
  // The whole batch; default: SearchOne per query on `threads` threads.
  virtual Status SearchBatch(size_t nq, const float* queries, size_t k, const QueryContext& ctx,
                             Neighbor* out, unsigned threads) const;
  // Best available distances from query to the given rows (exact for raw
  // vectors; reads the disk part where vectors live there).
  virtual Status ExactDistances(const float* query, const uint32_t* rows, size_t n,
                                float* out) const = 0;
  virtual Status GetVectorImpl(uint32_t row, float* out) const = 0;
  virtual size_t ImplMemoryBytes() const = 0;
  virtual void SerializeBody(Writer* w) const = 0;
  virtual Status DeserializeBody(Reader* r) = 0;
  // The planner's choice between graph strategies for a selectivity in (0, 1].
  virtual FilterStrategy GraphStrategy(double selectivity) const { return FilterStrategy::kGraph; }
  // The planner (kAuto): answer exactly over the matching rows when they are
  // at most SearchParams::exact_threshold (0 = DefaultExactThreshold()), or
  // when the selectivity is below MinGraphSelectivity(), where traversal
  // quality collapses (docs/vector.md, "Filtered search").
  virtual size_t DefaultExactThreshold(const SearchParams& p, size_t k) const;
  virtual double MinGraphSelectivity() const { return 0.0; }
  // The planner for kAuto without an explicit exact_threshold: true when an
  // exact scan of the `matches` expected matching rows is cheaper than the
  // filtered walk. Default: the fixed thresholds above; HNSW: a cost model.
  virtual bool PreferExact(const SearchParams& p, size_t k, double selectivity,
                           double matches) const;

  // Search after the argument checks: the planner, the walk, the fallback.
  Status SearchPlanned(size_t nq, const float* queries, size_t k, const SearchParams& params,
                       unsigned threads, SearchCounters* counters, SearchResults* out) const;
  // Query prepared for search: copied and normalised for COSINE.
  const float* PrepareQuery(const float* q, std::vector<float>* buf) const;
  // Up to `want` live rows passing the filter, spread over the index (for
  // entry points), found by probing rows in a fixed pseudo-random order.
  std::vector<uint32_t> SampleMatchingRows(const IdFilter& filter, double selectivity,
                                           size_t want) const;
  Status ExactOverRows(const float* query, const uint32_t* rows, size_t n, size_t k, Neighbor* out,
                       SearchCounters* counters = nullptr) const;
  Status EnsureWritableDisk();

  IndexParams params_;
  // Ids. While every row's id is its row number (the collection layer's row
  // offsets) identity_ holds and neither labels_ nor label_map_ exists: RAM
  // for ids is zero. The first other id materialises both.
  size_t rows_ = 0;
  bool identity_ = true;
  std::vector<uint64_t> labels_;   // internal -> id (empty while identity_)
  LabelMap label_map_;             // id -> internal (empty while identity_)
  std::vector<uint64_t> deleted_;  // bitset over internal ids
  size_t live_ = 0;
  std::unique_ptr<DiskFile> disk_;  // nullptr when the index keeps everything in RAM
};

// Implementations (one translation unit each).
std::unique_ptr<IndexBase> NewFlatIndex(const IndexParams& p);
std::unique_ptr<IndexBase> NewIvfIndex(const IndexParams& p);  // IVF_FLAT and IVF_PQ
std::unique_ptr<IndexBase> NewHnswIndex(const IndexParams& p);
std::unique_ptr<IndexBase> NewDiskAnnIndex(const IndexParams& p);

// Fills in derived defaults (pq_m, ...) and checks ranges.
Status ValidateParams(IndexParams* p);

}  // namespace strata::vector::internal
