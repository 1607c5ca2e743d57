// Index: one approximate (or exact) nearest-neighbour index over float32
// vectors of a fixed dimension, each carrying a caller-chosen uint64 id.
//
// Implementations (CreateIndex picks one from IndexParams::type):
//   FLAT      exact scan, SIMD batched, queries in parallel
//   IVF_FLAT  k-means coarse quantizer, raw vectors in inverted lists
//   IVF_PQ    k-means + product-quantized residuals (ADC tables); optional
//             re-ranking with raw vectors kept in memory or in a file (pread)
//   HNSW      hierarchical navigable small world graph; optional 8-bit SQ
//   DISKANN   Vamana graph; PQ codes in RAM, vectors + adjacency in a file
//
// The collection layer above owns ids, payloads and segments; an index only
// maps id -> vector. Ids are unique among live vectors (Add of a live id fails
// with kAlreadyExists; Remove then Add replaces). Ids are also what filters see.
// A good choice for a segment is the row offset of the point in the segment:
// a payload bitmap over row offsets is then usable as a filter directly.
//
// Distances follow strata/vector/distance.h: smaller is closer (L2 squared,
// negated inner product for IP and COSINE). COSINE indexes normalise vectors
// on Add and queries on Search.
//
// Thread-safety: const methods (Search, SearchSubset, GetVector, Size, ...) may
// run concurrently with each other. Train, Add, Remove and Load-time methods
// must be externally serialised against everything else (the collection layer
// holds a reader/writer lock per segment). Add and Search parallelise
// internally (IndexParams::num_threads, SearchParams::num_threads).
//
// Errors: Status/Result, never exceptions. Bad input is kInvalidArgument
// (wrong dimension, NaN/Inf components, k == 0), an untrained IVF index is
// kPreconditionFailed, a damaged serialized index kCorruption.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/vector/distance.h>

namespace strata::vector {

enum class IndexType : uint8_t { kFlat = 0, kIvfFlat = 1, kIvfPq = 2, kHnsw = 3, kDiskAnn = 4 };

std::string_view IndexTypeName(IndexType t);  // "FLAT", "IVF_FLAT", "IVF_PQ", "HNSW", "DISKANN"
Result<IndexType> ParseIndexType(std::string_view name);  // case-insensitive
Result<Metric> ParseMetric(std::string_view name);  // "L2"|"EUCLID", "IP"|"DOT", "COSINE"

// Where IVF_PQ keeps the raw vectors it re-ranks with.
enum class RerankStorage : uint8_t {
  kNone = 0,    // PQ distances only (smallest memory, lowest recall)
  kMemory = 1,  // raw vectors in RAM next to the codes
  kDisk = 2,    // raw vectors in a file read with pread (RAM holds codes only)
};

struct IndexParams {
  IndexType type = IndexType::kHnsw;
  uint32_t dim = 0;  // required, 1..65536
  Metric metric = Metric::kL2;

  // HNSW (hnswlib's names: M, ef_construction).
  uint32_t hnsw_m = 16;                 // links per node on upper levels; 2*M on level 0
  uint32_t hnsw_ef_construction = 200;  // beam width while inserting
  bool hnsw_sq8 = false;  // store vectors as 8-bit scalar codes (1/4 of the memory)

  // IVF_FLAT / IVF_PQ.
  uint32_t ivf_nlist = 0;  // coarse centroids; 0 = about 4*sqrt(training set size)

  // Product quantization (IVF_PQ codes, DISKANN's in-RAM codes).
  uint32_t pq_m = 0;      // sub-quantizers, must divide dim; 0 = dim/4 (IVF_PQ), dim/2 (DISKANN)
  uint32_t pq_nbits = 8;  // bits per sub-quantizer code; only 8 is supported
  RerankStorage ivfpq_rerank = RerankStorage::kDisk;

  // DISKANN (Vamana): max degree R, build list size L, pruning alpha.
  uint32_t diskann_r = 64;
  uint32_t diskann_l = 100;
  float diskann_alpha = 1.2f;

  // Build-time parallelism: 0 = all hardware threads.
  uint32_t num_threads = 0;
  // Seed for sampling, k-means and HNSW levels (builds are reproducible
  // single-threaded).
  uint64_t seed = 42;
  // File for disk-resident parts (IVF_PQ raw vectors with kDisk, DISKANN graph
  // and vectors). Empty: a temporary file under $TMPDIR, deleted with the index.
  std::string disk_path;
};

// A filter says which ids a search may return. The collection layer passes
// its payload-filter bitmap; indexes consult Contains() on every candidate they
// would return, and use Cardinality()/Enumerate() (when available) to plan.
class IdFilter {
 public:
  virtual ~IdFilter() = default;
  virtual bool Contains(uint64_t id) const = 0;
  // Exact number of ids that pass, when the filter knows it cheaply; -1 otherwise.
  virtual int64_t Cardinality() const { return -1; }
  // Appends every passing id; false when the filter cannot enumerate (then
  // exact filtered search scans the index's ids instead).
  virtual bool Enumerate(std::vector<uint64_t>* ids) const { return false; }
};

// A dense bitset over ids [0, universe): the natural filter when ids are row offsets.
class BitsetIdFilter final : public IdFilter {
 public:
  explicit BitsetIdFilter(uint64_t universe) : universe_(universe), words_((universe + 63) / 64) {}
  void Set(uint64_t id);  // ids >= universe are ignored
  bool Contains(uint64_t id) const override {
    return id < universe_ && ((words_[id >> 6] >> (id & 63)) & 1);
  }
  int64_t Cardinality() const override { return count_; }
  bool Enumerate(std::vector<uint64_t>* ids) const override;

 private:
  uint64_t universe_;
  std::vector<uint64_t> words_;
  int64_t count_ = 0;
};

// How a filtered search runs; kAuto lets the index's planner choose.
enum class FilterStrategy : uint8_t {
  kAuto = 0,
  kGraph = 1,  // traverse the whole graph, return only matching ids (HNSW, DISKANN)
  kAcorn = 2,  // ACORN-1: also expand two hops through non-matching neighbours (HNSW)
  kExact = 3,  // exact search over the matching ids (SearchSubset)
};

struct SearchParams {
  uint32_t ef = 0;          // HNSW beam width; 0 = max(64, ef_construction, k)
  uint32_t nprobe = 0;      // IVF lists scanned; 0 = max(1, nlist/16)
  uint32_t rerank = 0;      // IVF_PQ: PQ candidates re-scored exactly; 0 = 8*k (needs raw vectors)
  uint32_t search_l = 0;    // DISKANN candidate list size; 0 = ef if set, else max(100, k)
  uint32_t beam_width = 0;  // DISKANN nodes read per step; 0 = 4
  const IdFilter* filter = nullptr;  // not owned; must outlive the call
  FilterStrategy filter_strategy = FilterStrategy::kAuto;
  // kAuto: when the estimated number of matching ids is at most this, search
  // exactly over them. 0 = the index's default: HNSW 4096 or selectivity
  // under 2%; IVF 2048 or under 1%; disk-backed 1024 (docs/vector.md).
  uint32_t exact_threshold = 0;
  // Queries run in parallel on this many threads; 0 = all hardware threads.
  uint32_t num_threads = 1;
};

struct Neighbor {
  uint64_t id;
  float distance;
};
inline constexpr uint64_t kNoId = ~uint64_t{0};

// nq rows of k neighbours, closest first. A row with fewer than k results
// (a selective filter, a small index) is padded with {kNoId, +inf}.
struct SearchResults {
  size_t nq = 0;
  size_t k = 0;
  std::vector<Neighbor> neighbors;  // nq * k, row-major
  // The work the call did, summed over its queries, as counts that do not
  // depend on machine load: distances computed (an exact scan counts one per
  // row it scores) and graph link lists read (HNSW level 0: nodes expanded
  // and, in a two-hop walk, the non-matching neighbours looked through).
  // HNSW and exact scans count; the other indexes leave their own walks out.
  uint64_t distances = 0;
  uint64_t link_reads = 0;

  const Neighbor* Row(size_t q) const { return neighbors.data() + q * k; }
  size_t Count(size_t q) const;  // results in row q before the padding
};

class Index {
 public:
  virtual ~Index() = default;
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  virtual const IndexParams& params() const = 0;
  IndexType type() const { return params().type; }
  uint32_t dim() const { return params().dim; }
  Metric metric() const { return params().metric; }

  // IVF indexes need k-means centroids (and PQ codebooks) before Add; the
  // others are always trained. Add on an untrained index trains on its own
  // batch when that batch is large enough.
  virtual bool IsTrained() const = 0;
  virtual Status Train(size_t n, const float* data) = 0;

  // Adds n vectors (n * dim floats, row-major) with their ids. All-or-nothing
  // validation: a bad vector or a duplicate id rejects the whole batch.
  // DISKANN builds its graph here; a second Add rebuilds over all vectors.
  virtual Status Add(size_t n, const float* data, const uint64_t* ids) = 0;

  // k nearest live vectors for each of nq queries.
  virtual Status Search(size_t nq, const float* queries, size_t k, const SearchParams& params,
                        SearchResults* out) const = 0;

  // Checked forms for callers holding sized buffers (the REST layer): a size
  // that is not a whole number of dim()-vectors is kInvalidArgument.
  Status Add(std::span<const float> data, std::span<const uint64_t> ids);
  Status Search(std::span<const float> queries, size_t k, const SearchParams& params,
                SearchResults* out) const;

  // Exact k nearest among the given ids (unknown or removed ids are skipped):
  // the planner's other branch when a filter matches few vectors.
  virtual Status SearchSubset(size_t nq, const float* queries, size_t k, const uint64_t* ids,
                              size_t n_ids, SearchResults* out,
                              uint32_t num_threads = 1) const = 0;

  // Fraction of live vectors the filter passes (exact from Cardinality() when
  // known, else sampled). What a planner above uses to pick a strategy.
  virtual double EstimateSelectivity(const IdFilter& filter) const = 0;

  // Marks ids deleted (searches skip them at once; space is reclaimed by
  // rebuilding, i.e. segment compaction). Unknown ids are ignored;
  // *removed (optional) counts the ids that were live.
  virtual Status Remove(size_t n, const uint64_t* ids, size_t* removed = nullptr) = 0;

  virtual bool Contains(uint64_t id) const = 0;
  // Copies the stored vector (normalised for COSINE; decoded for SQ8 HNSW; read
  // from the raw-vector file for IVF_PQ/DISKANN). kNotFound for unknown ids.
  virtual Status GetVector(uint64_t id, float* out) const = 0;
  Status GetVector(uint64_t id, std::vector<float>* out) const;  // resized to dim()

  virtual size_t Size() const = 0;         // live vectors
  virtual size_t MemoryBytes() const = 0;  // heap bytes held in RAM (not the disk part)
  virtual size_t DiskBytes() const = 0;    // bytes of the disk-resident part

  // The whole index as bytes (disk-resident parts included). Deserialize
  // writes those parts to LoadOptions::disk_path (or a temporary file).
  virtual Status Serialize(std::string* out) const = 0;
  // Writes the index to a file (via a temporary name, fsync, rename). An index
  // loaded from it reads its disk-resident part from that file in place.
  virtual Status Save(const std::string& path) const = 0;

  struct LoadOptions {
    std::string disk_path;  // Deserialize only: where to put disk-resident parts
    bool verify_disk_checksum = false;  // Load: also checksum the disk part (reads it all)
  };
  static Result<std::unique_ptr<Index>> Deserialize(std::string_view bytes,
                                                    const LoadOptions& options);
  static Result<std::unique_ptr<Index>> Deserialize(std::string_view bytes) {
    return Deserialize(bytes, LoadOptions());
  }
  static Result<std::unique_ptr<Index>> Load(const std::string& path, const LoadOptions& options);
  static Result<std::unique_ptr<Index>> Load(const std::string& path) {
    return Load(path, LoadOptions());
  }

 protected:
  Index() = default;
};

// Validates params (kInvalidArgument says which field and why) and builds an
// empty index.
Result<std::unique_ptr<Index>> CreateIndex(const IndexParams& params);

}  // namespace strata::vector
