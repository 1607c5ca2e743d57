// HNSW (Malkov & Yashunin), laid out as hnswlib does and built the same way:
//
//  * level 0 is one contiguous array of fixed-size elements:
//      [u32 count | 2M u32 links | vector (dim floats, or dim SQ8 bytes + aux)]
//    so expanding a node touches its links and, right after, its neighbours'
//    vectors (prefetched) with no pointer chasing;
//  * upper levels (a 1/M fraction of nodes) hold their own small link arrays;
//  * visited sets are epoch-stamped uint16 arrays recycled through a pool;
//  * neighbours are chosen with the diversity heuristic (hnswlib's
//    getNeighborsByHeuristic2);
//  * inserts run in parallel; each link list is locked by a bit in its own
//    count word, and a global lock guards the entry point.
//
// Unlike hnswlib, a node's unvisited neighbours are first collected (and all
// their vectors prefetched) and then scored, which keeps more cache misses in
// flight than prefetching one neighbour ahead.
//
// Filters: kGraph walks the whole graph and only returns matching nodes
// (hnswlib's filtered search); kAcorn (ACORN-1) expands only matching nodes,
// reaching them through non-matching neighbours' links (two hops), which
// keeps the walk inside the predicate's subgraph when the filter is selective.
// Both start from the upper levels' entry point *and* from a sample of
// matching nodes (a filter correlated with the data leaves no matching node
// near an unfiltered entry point); when the matching frontier dries up the
// two-hop walk also queues non-matching nodes it passed (a bounded budget);
// and a walk that gathered fewer than ef matching nodes is finished by an
// exact scan of the matching rows. The planner (PreferExact) compares the
// scan's cost with the walk's, estimated from the selectivity and the
// level-0 degree (sel * 2M matching neighbours per node).
//
// SQ8: each component is stored as a byte, x_i ~ o_i + s * c_i (per-dimension
// offset o, one scale s, so code-to-code L2 is exact integer arithmetic).
// Queries stay float: L2 = s^2 * |(q - o)/s - c|^2, IP = <q,o> + s <q,c>.
#include <cmath>
#include <mutex>

#include "vector/index/index_base.h"

namespace strata::vector::internal {
namespace {

inline void Prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Build-time link lists carry their lock in the count word's top bit, so
// taking it touches the cache line the links are on anyway (a separate lock
// array costs a second miss per expanded node). Readers take no lock: they
// snapshot count then ids with relaxed atomic loads; a concurrent prune can
// only make them see other valid node ids, which the search tolerates.
constexpr uint32_t kLockBit = 0x80000000u;

inline std::atomic_ref<uint32_t> Word(const uint32_t* p) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(p));
}

// Copies a link list (count, then ids) without locking; returns the count.
inline uint32_t SnapshotLinks(const uint32_t* links, uint32_t* buf) {
  uint32_t cnt = Word(links).load(std::memory_order_acquire) & ~kLockBit;
  for (uint32_t j = 0; j < cnt; ++j) buf[j] = Word(links + 1 + j).load(std::memory_order_relaxed);
  return cnt;
}

class ListLock {
 public:
  explicit ListLock(uint32_t* links) : links_(links) {
    auto w = Word(links);
    uint32_t v = w.load(std::memory_order_relaxed);
    for (;;) {
      if (!(v & kLockBit) &&
          w.compare_exchange_weak(v, v | kLockBit, std::memory_order_acquire,
                                  std::memory_order_relaxed)) {
        break;
      }
      CpuRelax();
      v = w.load(std::memory_order_relaxed);
    }
    count_ = v & ~kLockBit;
  }
  ~ListLock() { Word(links_).store(count_, std::memory_order_release); }
  uint32_t count() const { return count_; }
  uint32_t id(uint32_t j) const { return Word(links_ + 1 + j).load(std::memory_order_relaxed); }
  void Set(uint32_t j, uint32_t id) { Word(links_ + 1 + j).store(id, std::memory_order_relaxed); }
  void SetCount(uint32_t c) { count_ = c; }

 private:
  uint32_t* links_;
  uint32_t count_;
};

// Epoch-stamped visited set: Reset is O(1) except once every 65535 uses.
struct VisitedList {
  std::vector<uint16_t> mark;
  uint16_t epoch = 0;
  void Reset(size_t n) {
    if (mark.size() < n) {
      mark.assign(n + n / 4 + 1024, 0);
      epoch = 0;
    }
    if (++epoch == 0) {
      std::fill(mark.begin(), mark.end(), 0);
      epoch = 1;
    }
  }
  bool Visited(uint32_t i) const { return mark[i] == epoch; }
  void Set(uint32_t i) { mark[i] = epoch; }
};

class VisitedPool {
 public:
  std::unique_ptr<VisitedList> Get(size_t n) {
    std::unique_ptr<VisitedList> v;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!free_.empty()) {
        v = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!v) v = std::make_unique<VisitedList>();
    v->Reset(n);
    return v;
  }
  void Put(std::unique_ptr<VisitedList> v) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(std::move(v));
  }
  size_t MemoryBytes() const {
    std::lock_guard<std::mutex> g(mu_);
    size_t b = 0;
    for (const auto& v : free_) b += v->mark.capacity() * sizeof(uint16_t);
    return b;
  }
  void Clear() {
    std::lock_guard<std::mutex> g(mu_);
    free_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<VisitedList>> free_;  // guarded by mu_
};

// Min-heap over HeapItem via negated comparisons on a vector.
inline bool HeapGreater(const HeapItem& a, const HeapItem& b) { return a.dist > b.dist; }

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

class HnswIndex final : public IndexBase {
 public:
  explicit HnswIndex(const IndexParams& p)
      : IndexBase(p),
        M_(p.hnsw_m),
        M0_(2 * p.hnsw_m),
        sq8_(p.hnsw_sq8),
        level_mult_(1.0 / std::log(double(std::max<uint32_t>(2, p.hnsw_m)))) {
    links0_bytes_ = sizeof(uint32_t) * (1 + M0_);
    data_bytes_ = sq8_ ? ((p.dim + 3) / 4 * 4 + sizeof(float)) : p.dim * sizeof(float);
    elt_bytes_ = links0_bytes_ + data_bytes_;
  }

  bool IsTrained() const override { return !sq8_ || !sq_offset_.empty(); }

 protected:
  // ------------------------------------------------------------ layout
  uint32_t* Links0(uint32_t i) const {
    return reinterpret_cast<uint32_t*>(level0_.get() + size_t(i) * elt_bytes_);
  }
  const char* Data(uint32_t i) const {
    return level0_.get() + size_t(i) * elt_bytes_ + links0_bytes_;
  }
  char* MutableData(uint32_t i) { return level0_.get() + size_t(i) * elt_bytes_ + links0_bytes_; }
  // Links of node i at level >= 1: [count | M links].
  uint32_t* LinksUpper(uint32_t i, int level) const {
    return upper_[i].get() + size_t(level - 1) * (1 + M_);
  }
  uint32_t* Links(uint32_t i, int level) const {
    return level == 0 ? Links0(i) : LinksUpper(i, level);
  }

  // ------------------------------------------------------------ distances
  struct Query {
    const float* q;           // float path: the query itself
    std::vector<float> qt;    // SQ8 L2: (q - o) / s
    float q_dot_o = 0;        // SQ8 IP: <q, o>
  };

  void PrepareQ(const float* q, Query* out) const {
    out->q = q;
    if (!sq8_) return;
    const size_t d = params_.dim;
    if (params_.metric == Metric::kL2) {
      out->qt.resize(d);
      float inv = 1.0f / sq_scale_;
      for (size_t i = 0; i < d; ++i) out->qt[i] = (q[i] - sq_offset_[i]) * inv;
    } else {
      out->q_dot_o = Kernels().ip(q, sq_offset_.data(), d);
    }
  }

  float DistQ(const DistanceKernels& K, const Query& q, uint32_t node) const {
    const size_t d = params_.dim;
    const char* v = Data(node);
    if (!sq8_) {
      const float* x = reinterpret_cast<const float*>(v);
      return params_.metric == Metric::kL2 ? K.l2(q.q, x, d) : -K.ip(q.q, x, d);
    }
    const uint8_t* c = reinterpret_cast<const uint8_t*>(v);
    if (params_.metric == Metric::kL2) return sq_scale2_ * K.l2_f32_u8(q.qt.data(), c, d);
    return -(q.q_dot_o + sq_scale_ * K.ip_f32_u8(q.q, c, d));
  }

  float DistNodes(const DistanceKernels& K, uint32_t a, uint32_t b) const {
    const size_t d = params_.dim;
    if (!sq8_) {
      const float* x = reinterpret_cast<const float*>(Data(a));
      const float* y = reinterpret_cast<const float*>(Data(b));
      return params_.metric == Metric::kL2 ? K.l2(x, y, d) : -K.ip(x, y, d);
    }
    const uint8_t* x = reinterpret_cast<const uint8_t*>(Data(a));
    const uint8_t* y = reinterpret_cast<const uint8_t*>(Data(b));
    if (params_.metric == Metric::kL2) return sq_scale2_ * float(K.l2_u8(x, y, d));
    return -(sq_o_norm2_ + sq_scale_ * (Aux(a) + Aux(b)) + sq_scale2_ * float(K.ip_u8(x, y, d)));
  }

  // SQ8 IP: <o, c> of node i, stored after its codes.
  float Aux(uint32_t i) const {
    float v;
    std::memcpy(&v, Data(i) + (params_.dim + 3) / 4 * 4, sizeof(float));
    return v;
  }

  void PrefetchData(uint32_t i) const {
    const char* p = Data(i);
    // The first lines of the vector; the stream prefetcher keeps up with the rest.
    const size_t bytes = std::min<size_t>(data_bytes_, 256);
    for (size_t off = 0; off < bytes; off += 64) Prefetch(p + off);
  }

  void StoreVector(uint32_t i, const float* x) {
    char* dst = MutableData(i);
    const size_t d = params_.dim;
    if (!sq8_) {
      std::memcpy(dst, x, d * sizeof(float));
      return;
    }
    uint8_t* c = reinterpret_cast<uint8_t*>(dst);
    float inv = 1.0f / sq_scale_;
    float aux = 0;
    for (size_t t = 0; t < d; ++t) {
      float v = std::nearbyint((x[t] - sq_offset_[t]) * inv);
      v = std::clamp(v, 0.0f, 255.0f);
      c[t] = static_cast<uint8_t>(v);
      aux += sq_offset_[t] * float(c[t]);
    }
    std::memset(dst + d, 0, (d + 3) / 4 * 4 - d);
    std::memcpy(dst + (d + 3) / 4 * 4, &aux, sizeof(float));
  }

  // ------------------------------------------------------------ training (SQ8)
  Status TrainImpl(size_t n, const float* data) override {
    if (!sq8_) return Status::Ok();
    const size_t d = params_.dim;
    std::vector<float> lo(d, std::numeric_limits<float>::infinity());
    std::vector<float> hi(d, -std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < n; ++i) {
      for (size_t t = 0; t < d; ++t) {
        lo[t] = std::min(lo[t], data[i * d + t]);
        hi[t] = std::max(hi[t], data[i * d + t]);
      }
    }
    float range = 0;
    for (size_t t = 0; t < d; ++t) range = std::max(range, hi[t] - lo[t]);
    if (range <= 0) range = 1;
    sq_offset_ = lo;
    sq_scale_ = range / 255.0f;
    sq_scale2_ = sq_scale_ * sq_scale_;
    sq_o_norm2_ = Kernels().ip(lo.data(), lo.data(), d);
    return Status::Ok();
  }

  // ------------------------------------------------------------ build
  int RandomLevel(uint32_t row) const {
    // Deterministic per row (splitmix64), so the graph does not depend on
    // thread scheduling for its levels.
    uint64_t z = params_.seed + 0x9E3779B97F4A7C15ull * (uint64_t(row) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double u = (double(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    int level = int(-std::log(u) * level_mult_);
    return std::min(level, 31);
  }

  void Reserve(size_t n) {
    if (n <= capacity_) return;
    size_t cap = std::max(n, capacity_ + capacity_ / 2);
    if (capacity_ == 0) cap = n;
    char* p = static_cast<char*>(std::aligned_alloc(64, (cap * elt_bytes_ + 63) / 64 * 64));
    if (level0_) std::memcpy(p, level0_.get(), capacity_ * elt_bytes_);
    level0_.reset(p);
    capacity_ = cap;
  }

  Status AddImpl(size_t n, const float* data, uint32_t first) override {
    const size_t total = first + n;
    Reserve(total);
    levels_.resize(total);
    upper_.resize(total);
    for (size_t i = 0; i < n; ++i) {
      uint32_t row = first + uint32_t(i);
      int level = RandomLevel(row);
      levels_[row] = uint8_t(level);
      Links0(row)[0] = 0;
      StoreVector(row, data + i * params_.dim);
      if (level > 0) {
        upper_[row].reset(new uint32_t[size_t(level) * (1 + M_)]);
        for (int l = 1; l <= level; ++l) LinksUpper(row, l)[0] = 0;
      }
    }
    size_t begin = 0;
    if (entry_ == UINT32_MAX) {
      entry_ = first;
      max_level_ = levels_[first];
      begin = 1;
    }
    const unsigned threads = ResolveThreads(params_.num_threads);
    ParallelFor(n - begin, threads, [&](size_t i, unsigned) {
      Insert(first + uint32_t(begin + i), data + (begin + i) * params_.dim);
    });
    return Status::Ok();
  }

  void Insert(uint32_t cur, const float* vec) {
    const DistanceKernels& K = Kernels();
    const int level = levels_[cur];
    std::unique_lock<std::mutex> glock(global_);
    int max_level = max_level_;
    uint32_t ep = entry_;
    if (level <= max_level) glock.unlock();

    Query q;
    if (sq8_) {
      // Build with the stored codes' view of the point, as searches will see it.
      PrepareQ(vec, &q);
    } else {
      q.q = vec;
    }
    float ep_dist = DistQ(K, q, ep);
    for (int l = max_level; l > level; --l) {
      bool changed = true;
      while (changed) {
        changed = false;
        uint32_t buf[512];
        uint32_t cnt = SnapshotLinks(Links(ep, l), buf);
        for (uint32_t j = 0; j < cnt; ++j) {
          float dd = DistQ(K, q, buf[j]);
          if (dd < ep_dist) {
            ep_dist = dd;
            ep = buf[j];
            changed = true;
          }
        }
      }
    }
    std::vector<HeapItem> top;
    for (int l = std::min(level, max_level); l >= 0; --l) {
      SearchLayerBuild(K, q, ep, ep_dist, l, &top);
      uint32_t next = Connect(K, cur, l, &top);
      if (next != UINT32_MAX) {
        ep = next;
        ep_dist = DistQ(K, q, ep);
      }
    }
    if (level > max_level) {
      entry_ = cur;
      max_level_ = level;
    }
  }

  // ef_construction best nodes at `level` (a max-heap in *top), with links
  // read lock-free while other inserts run.
  void SearchLayerBuild(const DistanceKernels& K, const Query& q, uint32_t ep, float ep_dist,
                        int level, std::vector<HeapItem>* top) const {
    const size_t ef = params_.hnsw_ef_construction;
    auto visited = pool_.Get(rows());
    top->clear();
    thread_local std::vector<HeapItem> cand;  // min-heap
    cand.clear();
    top->push_back({ep_dist, ep});
    cand.push_back({ep_dist, ep});
    visited->Set(ep);
    float lower = ep_dist;
    uint32_t buf[1025];
    while (!cand.empty()) {
      HeapItem c = cand.front();
      if (c.dist > lower && top->size() >= ef) break;
      std::pop_heap(cand.begin(), cand.end(), HeapGreater);
      cand.pop_back();
      uint32_t cnt = SnapshotLinks(Links(c.id, level), buf);
      for (uint32_t j = 0; j < cnt; ++j) Prefetch(&visited->mark[buf[j]]);
      uint32_t fresh = 0;
      for (uint32_t j = 0; j < cnt; ++j) {
        uint32_t nb = buf[j];
        if (visited->Visited(nb)) continue;
        visited->Set(nb);
        PrefetchData(nb);
        buf[fresh++] = nb;
      }
      for (uint32_t j = 0; j < fresh; ++j) {
        uint32_t nb = buf[j];
        float dd = DistQ(K, q, nb);
        if (top->size() < ef || dd < lower) {
          cand.push_back({dd, nb});
          std::push_heap(cand.begin(), cand.end(), HeapGreater);
          top->push_back({dd, nb});
          std::push_heap(top->begin(), top->end(), HeapLess);
          if (top->size() > ef) {
            std::pop_heap(top->begin(), top->end(), HeapLess);
            top->pop_back();
          }
          lower = top->front().dist;
        }
      }
    }
    pool_.Put(std::move(visited));
  }

  // hnswlib's getNeighborsByHeuristic2: keep a candidate only if it is closer
  // to the base than to every neighbour kept so far. In: any order; out: kept, closest first.
  void SelectHeuristic(const DistanceKernels& K, std::vector<HeapItem>* cands, size_t m) const {
    std::sort(cands->begin(), cands->end(), HeapLess);
    if (cands->size() <= m) return;
    thread_local std::vector<HeapItem> kept;
    kept.clear();
    for (const HeapItem& c : *cands) {
      if (kept.size() >= m) break;
      bool good = true;
      for (const HeapItem& r : kept) {
        if (DistNodes(K, c.id, r.id) < c.dist) {
          good = false;
          break;
        }
      }
      if (good) kept.push_back(c);
    }
    cands->assign(kept.begin(), kept.end());
  }

  // Links cur to its selected neighbours at `level` and back; returns the
  // closest neighbour (next layer's entry point).
  uint32_t Connect(const DistanceKernels& K, uint32_t cur, int level, std::vector<HeapItem>* top) {
    const size_t max_links = level == 0 ? M0_ : M_;
    // Another insert may have linked cur at this level already and the search found it.
    top->erase(std::remove_if(top->begin(), top->end(),
                              [cur](const HeapItem& h) { return h.id == cur; }),
               top->end());
    SelectHeuristic(K, top, M_);
    {
      ListLock mine(Links(cur, level));
      for (size_t i = 0; i < top->size(); ++i) mine.Set(uint32_t(i), (*top)[i].id);
      mine.SetCount(uint32_t(top->size()));
    }
    thread_local std::vector<HeapItem> cands;
    for (const HeapItem& nbh : *top) {
      uint32_t nb = nbh.id;
      ListLock theirs(Links(nb, level));
      uint32_t cnt = theirs.count();
      bool present = false;
      for (uint32_t j = 0; j < cnt; ++j) present |= theirs.id(j) == cur;
      if (present) continue;
      if (cnt < max_links) {
        theirs.Set(cnt, cur);
        theirs.SetCount(cnt + 1);
        continue;
      }
      cands.clear();
      cands.push_back({nbh.dist, cur});
      for (uint32_t j = 0; j < cnt; ++j) {
        uint32_t other = theirs.id(j);
        cands.push_back({DistNodes(K, nb, other), other});
      }
      SelectHeuristic(K, &cands, max_links);
      for (size_t j = 0; j < cands.size(); ++j) theirs.Set(uint32_t(j), cands[j].id);
      theirs.SetCount(uint32_t(cands.size()));
    }
    return top->empty() ? UINT32_MAX : top->front().id;
  }

  // ------------------------------------------------------------ search
  // Exact over a few thousand rows costs about what one graph search costs
  // (ef * 2M distance evaluations, most of them cache misses); below 2% the
  // predicate subgraph is too sparse even for ACORN's two hops (tests:
  // HnswTest.FilterStrategies).
  size_t DefaultExactThreshold(const SearchParams& p, size_t k) const override {
    return std::max<size_t>(4096, 4 * k);
  }
  double MinGraphSelectivity() const override { return 0.02; }

  // One query's work (SearchResults::distances, link_reads).
  struct WalkCount {
    uint64_t dist = 0, links = 0;
  };

  // Greedy descents run from the closest sampled seeds before the beam walk
  // (see SearchFiltered), each at most kGreedyHops steps.
  static constexpr size_t kGreedySeeds = 8, kGreedyHops = 12;
  // Candidates one expansion may gather (two-hop lists are truncated at 2M,
  // or at this where the query's region is excluded).
  static constexpr uint32_t kMaxFresh = 1024;

  // Cost in random-access distance evaluations (the unit SearchResults
  // counts; a link list read costs kLinkCost of one). The exact scan reads
  // the matching rows in order, prefetched, yet costs about one random-access
  // distance per row (kScanCost, measured in FilteredGuaranteeTest: a
  // 6,000-row scan took 8-12 unfiltered 30k x 128 searches; the vectors
  // stream from memory where the walk's neighbourhood stays in cache).
  // Under kMinTwoHopMatches matching nodes within two hops the predicate's
  // subgraph falls apart and no walk is worth trying.
  bool PreferExact(const SearchParams& p, size_t k, double sel, double matches) const override {
    constexpr double kScanCost = 1.0, kMinTwoHopMatches = 4;
    const double m0 = double(M0_);
    if (sel * m0 * m0 < kMinTwoHopMatches) return true;
    const size_t ef = FilteredEf(std::max<size_t>(p.ef ? p.ef : DefaultEf(), k), sel);
    return matches * kScanCost <= WalkCost(double(ef), sel);
  }

  // A filtered walk with beam ef expands about ef nodes, each scoring about
  // half of the (at most 2M) candidates it gathers (the rest were seen
  // before, as in an unfiltered walk). Two-hop (ACORN), a node's candidates
  // are its sel * 2M matching neighbours and then those of its non-matching
  // neighbours, whose link lists it reads until 2M candidates are gathered:
  // each read adds ~sel * 2M, so (1 - sel) / sel reads, at most 2M (1 - sel).
  // The plain filtered walk expands ef / sel nodes of ~M fresh neighbours.
  // Both first score the seeds and descend greedily from the closest few.
  double WalkCost(double ef, double sel) const {
    constexpr double kLinkCost = 0.25;
    const double m0 = double(M0_);
    const double start = double(kFilterSeeds) + double(kGreedySeeds) * 4 * m0 * 0.5;
    if (GraphStrategy(sel) == FilterStrategy::kAcorn) {
      const double scored = 0.5 * std::min(m0, sel * m0 * (m0 + 1));
      const double reads = 1 + std::min(m0 * (1 - sel), (1 - sel) / sel);
      return ef * (scored + kLinkCost * reads) + start;
    }
    return ef / sel * (0.5 * m0 + kLinkCost) + start;
  }

  FilterStrategy GraphStrategy(double selectivity) const override {
    // ACORN's two-hop expansion pays off once most neighbours are filtered out
    // (Weaviate and Qdrant switch at 40%).
    return selectivity < 0.4 ? FilterStrategy::kAcorn : FilterStrategy::kGraph;
  }

  // The beam when a search names none: Qdrant's default (hnsw_ef =
  // ef_construct), at least 64. With 64 alone, 100k x 128 clustered data
  // (M=16, ef_construct=100) gave unfiltered recall@10 0.946
  // (FilteredRecallFull).
  size_t DefaultEf() const { return std::max<size_t>(64, params_.hnsw_ef_construction); }

  // A filtered walk's beam: ef where the query's own region passes the
  // filter about as often as the whole index does (a filter independent of
  // the data, or a correlated one that keeps the query's region): the seeds,
  // the greedy descents and the truncated two-hop lists find its matching
  // neighbours at the cost of an unfiltered walk (FilteredCostTest).
  static size_t FilteredEf(size_t ef, double sel) { return ef; }

  // The beam where the query's region fails a correlated filter (see
  // LocalRegionExcluded): ef / sel^2, at most 8 ef. Its nearest matching
  // points are then spread over several neighbouring regions; with ef / sel
  // (at most 4 ef) a 37% category filter on clustered 100k x 128 gave
  // recall@10 0.865, 20% 0.905; with ef / sel^2 0.966 and 1.0
  // (FilteredRecallFull).
  static size_t ExcludedEf(size_t ef, double sel) {
    const double inv = 1.0 / std::max(sel, 1e-9);
    return size_t(double(ef) * std::clamp(inv * inv, 1.0, 8.0));
  }

  // True when the descent's node and its level-0 neighbours pass the filter
  // at under half the index-wide selectivity: the filter correlates
  // with the data and leaves out the query's own region. Costs one link
  // list read and 2M filter probes, no distance.
  bool LocalRegionExcluded(uint32_t ep, const IdFilter* filter, double sel, WalkCount* wc) const {
    const uint32_t* links = Links0(ep);
    const uint32_t cnt = links[0];
    ++wc->links;
    uint32_t pass = Passes(ep, filter) ? 1 : 0;
    for (uint32_t j = 1; j <= cnt; ++j) pass += Passes(links[j], filter) ? 1 : 0;
    return double(pass) < 0.5 * sel * double(cnt + 1);
  }

  Status SearchOne(const float* query, size_t k, const QueryContext& ctx,
                   Neighbor* out) const override {
    const DistanceKernels& K = Kernels();
    Query q;
    PrepareQ(query, &q);
    WalkCount wc;
    uint32_t ep = entry_;
    float ep_dist = DistQ(K, q, ep);
    ++wc.dist;
    for (int l = max_level_; l > 0; --l) {
      bool changed = true;
      while (changed) {
        changed = false;
        const uint32_t* links = LinksUpper(ep, l);
        uint32_t cnt = links[0];
        wc.dist += cnt;
        for (uint32_t j = 0; j < cnt; ++j) PrefetchData(links[1 + j]);
        for (uint32_t j = 0; j < cnt; ++j) {
          float dd = DistQ(K, q, links[1 + j]);
          if (dd < ep_dist) {
            ep_dist = dd;
            ep = links[1 + j];
            changed = true;
          }
        }
      }
    }
    size_t ef = std::max<size_t>(ctx.params->ef ? ctx.params->ef : DefaultEf(), k);
    thread_local std::vector<HeapItem> top;
    top.clear();
    if (ctx.filter == nullptr) {
      if (live_ == rows()) {
        SearchLevel0<false>(K, q, ep, ep_dist, ef, &top, &wc);
      } else {
        SearchLevel0<true>(K, q, ep, ep_dist, ef, &top, &wc);
      }
    } else {
      const double sel = ctx.selectivity;
      uint32_t cap = M0_;
      if (LocalRegionExcluded(ep, ctx.filter, sel, &wc)) {
        // Strategy auto: the exact scan of the matching rows. The wide walk
        // below (forced strategies only) loses recall here: FilteredRecallFull
        // gave 0.936 at category 20% and 0.929-0.937 at 37% on 100k x 128
        // and 50k x 768 with it; before this branch those buckets were
        // answered by the scan for every query.
        if (ctx.matching != nullptr && ctx.params->filter_strategy == FilterStrategy::kAuto) {
          ctx.counters->Add(wc.dist, wc.links);
          const std::vector<uint32_t>& match = ctx.matching->Get();
          return ExactOverRows(query, match.data(), match.size(), k, out, ctx.counters);
        }
        ef = ExcludedEf(ef, sel);
        cap = kMaxFresh;  // the walk as it was: every matching node within two hops
      } else {
        ef = FilteredEf(ef, sel);
      }
      if (ctx.strategy == FilterStrategy::kAcorn) {
        SearchFiltered<true>(K, q, ep, ep_dist, ef, cap, ctx, &top, &wc);
      } else {
        SearchFiltered<false>(K, q, ep, ep_dist, ef, cap, ctx, &top, &wc);
      }
    }
    ctx.counters->Add(wc.dist, wc.links);
    // A walk that could not gather ef matching nodes saw too little of the
    // predicate's subgraph to trust: finish exactly over the matching rows
    // (there are few of them, or the planner would not have walked).
    if (ctx.filter != nullptr && top.size() < ef && ctx.matching != nullptr) {
      const std::vector<uint32_t>& match = ctx.matching->Get();
      if (top.size() < match.size()) {
        return ExactOverRows(query, match.data(), match.size(), k, out, ctx.counters);
      }
    }
    WriteResults(top, k, LabelsPtr(), out);
    return Status::Ok();
  }

  // The filtered level-0 walk; *top gets the (up to) ef best matching nodes.
  // kTwoHop (ACORN-1): candidates are matching nodes, found directly or
  // through a non-matching neighbour's links, at most 2M per expanded node
  // (ACORN's truncated two-hop list: scoring every matching node within two
  // hops cost up to sel * (2M)^2 distances per node); non-matching
  // neighbours are remembered (up to kReserve) and, when no matching
  // candidate is left before ef are found, scored and queued (at most
  // kRefills times). Otherwise (hnswlib's filtered walk) every neighbour is a
  // candidate and only matching ones enter *top.
  //
  // Entry: the descent's node and the sampled matching seeds, all scored;
  // then a greedy descent (move to the closest new candidate while it
  // improves) from each of the kGreedySeeds closest seeds. A filter that
  // correlates with the data leaves the query's own region without matches:
  // its nearest matching points lie in several other regions, and a seed is
  // a random point of its region, farther than the best points of the first
  // region the beam fills with, so the beam never expanded it (a beam of 8 ef
  // was needed). Descending first brings each seed's region's best points
  // into the beam.
  template <bool kTwoHop>
  void SearchFiltered(const DistanceKernels& K, const Query& q, uint32_t ep, float ep_dist,
                      size_t ef, uint32_t cap, const QueryContext& ctx, std::vector<HeapItem>* top,
                      WalkCount* wc) const {
    constexpr size_t kReserve = 256, kRefills = 8;
    const IdFilter* filter = ctx.filter;
    auto visited = pool_.Get(rows());
    VisitedList& vis = *visited;
    thread_local std::vector<HeapItem> cand;  // min-heap by dist
    thread_local std::vector<uint32_t> reserve;
    thread_local std::vector<HeapItem> scored_seeds;
    cand.clear();
    reserve.clear();
    scored_seeds.clear();
    top->reserve(ef + 1);
    float lower = std::numeric_limits<float>::infinity();
    auto offer = [&](float dd, uint32_t id, bool match) {
      if (top->size() >= ef && dd >= lower) return;
      cand.push_back({dd, id});
      std::push_heap(cand.begin(), cand.end(), HeapGreater);
      if (!match) return;
      top->push_back({dd, id});
      std::push_heap(top->begin(), top->end(), HeapLess);
      if (top->size() > ef) {
        std::pop_heap(top->begin(), top->end(), HeapLess);
        top->pop_back();
      }
      lower = top->size() >= ef ? top->front().dist : std::numeric_limits<float>::infinity();
    };
    // Scores node c's new candidates (offering each); returns the closest.
    uint32_t fresh[kMaxFresh], nonmatch[kMaxFresh];
    auto expand = [&](uint32_t c) {
      const uint32_t* links = Links0(c);
      const uint32_t cnt = links[0];
      ++wc->links;
      uint32_t nf = 0, nn = 0;
      for (uint32_t j = 1; j <= cnt; ++j) Prefetch(&vis.mark[links[j]]);
      for (uint32_t j = 1; j <= cnt; ++j) {
        uint32_t nb = links[j];
        if (vis.Visited(nb)) continue;
        vis.Set(nb);
        if (kTwoHop && !Passes(nb, filter)) {
          Prefetch(Links0(nb));
          nonmatch[nn++] = nb;
          if (reserve.size() < kReserve) reserve.push_back(nb);
          continue;
        }
        PrefetchData(nb);
        fresh[nf++] = nb;
      }
      if constexpr (kTwoHop) {
        for (uint32_t i = 0; i < nn && nf < cap; ++i) {
          const uint32_t* l2 = Links0(nonmatch[i]);
          ++wc->links;
          for (uint32_t t = 1, c2 = l2[0]; t <= c2 && nf < cap; ++t) {
            uint32_t nb2 = l2[t];
            if (vis.Visited(nb2) || !Passes(nb2, filter)) continue;
            vis.Set(nb2);
            PrefetchData(nb2);
            fresh[nf++] = nb2;
          }
        }
      }
      HeapItem best{std::numeric_limits<float>::infinity(), UINT32_MAX};
      for (uint32_t j = 0; j < nf; ++j) {
        uint32_t nb = fresh[j];
        float dd = DistQ(K, q, nb);
        offer(dd, nb, kTwoHop || Passes(nb, filter));
        if (dd < best.dist) best = {dd, nb};
      }
      wc->dist += nf;
      return best;
    };
    vis.Set(ep);
    offer(ep_dist, ep, Passes(ep, filter));
    if (ctx.seeds != nullptr) {
      for (uint32_t s : *ctx.seeds) PrefetchData(s);
      for (uint32_t s : *ctx.seeds) {
        if (vis.Visited(s)) continue;
        vis.Set(s);
        float dd = DistQ(K, q, s);
        scored_seeds.push_back({dd, s});
        offer(dd, s, true);
      }
      wc->dist += scored_seeds.size();
      const size_t g = std::min(kGreedySeeds, scored_seeds.size());
      std::partial_sort(scored_seeds.begin(), scored_seeds.begin() + g, scored_seeds.end(),
                        HeapLess);
      for (size_t i = 0; i < g; ++i) {
        HeapItem cur = scored_seeds[i];
        for (size_t hop = 0; hop < kGreedyHops; ++hop) {
          HeapItem b = expand(cur.id);
          if (!(b.dist < cur.dist)) break;
          cur = b;
        }
      }
    }
    size_t refills = 0;
    for (;;) {
      if (cand.empty()) {
        if (!kTwoHop || top->size() >= ef || reserve.empty() || refills++ == kRefills) break;
        for (uint32_t r : reserve) PrefetchData(r);
        for (uint32_t r : reserve) offer(DistQ(K, q, r), r, false);
        wc->dist += reserve.size();
        reserve.clear();
        continue;
      }
      HeapItem c = cand.front();
      if (c.dist > lower) break;  // lower is finite only once top holds ef nodes
      std::pop_heap(cand.begin(), cand.end(), HeapGreater);
      cand.pop_back();
      expand(c.id);
      if (!cand.empty()) {
        const char* next = reinterpret_cast<const char*>(Links0(cand.front().id));
        Prefetch(next);
        Prefetch(next + 64);
      }
    }
    pool_.Put(std::move(visited));
  }

  // The unfiltered level-0 walk (kSkipDeleted: deleted rows are walked
  // through but not returned).
  template <bool kSkipDeleted>
  void SearchLevel0(const DistanceKernels& K, const Query& q, uint32_t ep, float ep_dist, size_t ef,
                    std::vector<HeapItem>* top, WalkCount* wc) const {
    auto visited = pool_.Get(rows());
    VisitedList& vis = *visited;
    thread_local std::vector<HeapItem> cand;  // min-heap by dist
    cand.clear();
    top->reserve(ef + 1);
    float lower = std::numeric_limits<float>::infinity();
    if (!kSkipDeleted || Passes(ep, nullptr)) {
      top->push_back({ep_dist, ep});
      lower = ep_dist;
    }
    cand.push_back({ep_dist, ep});
    vis.Set(ep);
    uint32_t fresh[1024];
    while (!cand.empty()) {
      HeapItem c = cand.front();
      if (c.dist > lower && (top->size() >= ef || !kSkipDeleted)) break;
      std::pop_heap(cand.begin(), cand.end(), HeapGreater);
      cand.pop_back();
      const uint32_t* links = Links0(c.id);
      uint32_t cnt = links[0];
      uint32_t nf = 0;
      ++wc->links;
      for (uint32_t j = 1; j <= cnt; ++j) Prefetch(&vis.mark[links[j]]);
      for (uint32_t j = 1; j <= cnt; ++j) {
        uint32_t nb = links[j];
        if (vis.Visited(nb)) continue;
        vis.Set(nb);
        PrefetchData(nb);
        fresh[nf++] = nb;
      }
      wc->dist += nf;
      for (uint32_t j = 0; j < nf; ++j) {
        uint32_t nb = fresh[j];
        float dd = DistQ(K, q, nb);
        if (top->size() < ef || dd < lower) {
          cand.push_back({dd, nb});
          std::push_heap(cand.begin(), cand.end(), HeapGreater);
          if (!kSkipDeleted || Passes(nb, nullptr)) {
            top->push_back({dd, nb});
            std::push_heap(top->begin(), top->end(), HeapLess);
            if (top->size() > ef) {
              std::pop_heap(top->begin(), top->end(), HeapLess);
              top->pop_back();
            }
            lower = top->front().dist;
          }
        }
      }
      // The next node to expand: start fetching its links now.
      if (!cand.empty()) {
        const char* next = reinterpret_cast<const char*>(Links0(cand.front().id));
        Prefetch(next);
        Prefetch(next + 64);
      }
    }
    pool_.Put(std::move(visited));
  }

  Status ExactDistances(const float* query, const uint32_t* rows_list, size_t n,
                        float* out) const override {
    const DistanceKernels& K = Kernels();
    Query q;
    PrepareQ(query, &q);
    for (size_t i = 0; i < n; ++i) {
      if (i + 4 < n) PrefetchData(rows_list[i + 4]);
      out[i] = DistQ(K, q, rows_list[i]);
    }
    return Status::Ok();
  }

  Status GetVectorImpl(uint32_t row, float* out) const override {
    const size_t d = params_.dim;
    if (!sq8_) {
      std::memcpy(out, Data(row), d * sizeof(float));
    } else {
      const uint8_t* c = reinterpret_cast<const uint8_t*>(Data(row));
      for (size_t t = 0; t < d; ++t) out[t] = sq_offset_[t] + sq_scale_ * float(c[t]);
    }
    return Status::Ok();
  }

  size_t ImplMemoryBytes() const override {
    size_t b = capacity_ * elt_bytes_ + levels_.capacity() + upper_.capacity() * sizeof(void*) +
               sq_offset_.capacity() * sizeof(float) + pool_.MemoryBytes();
    for (size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i] > 0) b += size_t(levels_[i]) * (1 + M_) * sizeof(uint32_t);
    }
    return b;
  }

  // ------------------------------------------------------------ serialization
  void SerializeBody(Writer* w) const override {
    const size_t n = rows();
    w->Put<uint32_t>(entry_);
    w->Put<int32_t>(max_level_);
    w->Put<uint64_t>(elt_bytes_);
    w->PutVec(sq_offset_);
    w->Put<float>(sq_scale_);
    w->Put<uint64_t>(n);
    w->PutRaw(level0_.get(), n * elt_bytes_);
    w->PutVec(levels_);
    for (size_t i = 0; i < n; ++i) {
      if (levels_[i] > 0) w->PutRaw(upper_[i].get(), size_t(levels_[i]) * (1 + M_) * 4);
    }
  }

  Status DeserializeBody(Reader* r) override {
    uint64_t elt, n;
    if (!r->Get(&entry_) || !r->Get(&max_level_) || !r->Get(&elt) || elt != elt_bytes_ ||
        !r->GetVec(&sq_offset_) || !r->Get(&sq_scale_) || !r->Get(&n) || n != rows()) {
      return Status::Corruption("HNSW header is damaged");
    }
    if (sq8_ && (sq_offset_.size() != params_.dim || !(sq_scale_ > 0))) {
      return Status::Corruption("HNSW SQ8 parameters are damaged");
    }
    sq_scale2_ = sq_scale_ * sq_scale_;
    if (sq8_) sq_o_norm2_ = Kernels().ip(sq_offset_.data(), sq_offset_.data(), params_.dim);
    if (r->remaining() < n * elt_bytes_) return Status::Corruption("HNSW level 0 is truncated");
    capacity_ = 0;
    level0_.reset();
    Reserve(n);
    if (!r->GetRaw(level0_.get(), n * elt_bytes_) || !r->GetVec(&levels_) || levels_.size() != n) {
      return Status::Corruption("HNSW graph is truncated");
    }
    upper_.clear();
    upper_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (levels_[i] == 0) continue;
      if (levels_[i] > 31) return Status::Corruption("HNSW node level out of range");
      size_t words = size_t(levels_[i]) * (1 + M_);
      upper_[i].reset(new uint32_t[words]);
      if (!r->GetRaw(upper_[i].get(), words * 4)) return Status::Corruption("HNSW links truncated");
    }
    // Every link must name a node, or a search would read out of bounds.
    for (size_t i = 0; i < n; ++i) {
      for (int l = 0; l <= levels_[i]; ++l) {
        const uint32_t* links = Links(uint32_t(i), l);
        if (links[0] > (l == 0 ? M0_ : M_)) return Status::Corruption("HNSW link count too big");
        for (uint32_t j = 1; j <= links[0]; ++j) {
          if (links[j] >= n || levels_[links[j]] < l) {
            return Status::Corruption("HNSW link points outside the graph");
          }
        }
      }
    }
    if (n == 0) {
      entry_ = UINT32_MAX;
      max_level_ = -1;
    } else if (entry_ >= n || max_level_ != levels_[entry_]) {
      return Status::Corruption("HNSW entry point is damaged");
    }
    return Status::Ok();
  }

 private:
  const uint32_t M_, M0_;
  const bool sq8_;
  const double level_mult_;
  size_t links0_bytes_, data_bytes_, elt_bytes_;

  std::unique_ptr<char, FreeDeleter> level0_;  // capacity_ x elt_bytes_
  size_t capacity_ = 0;
  std::vector<uint8_t> levels_;                       // node -> top level
  std::vector<std::unique_ptr<uint32_t[]>> upper_;    // node -> levels 1..L links
  uint32_t entry_ = UINT32_MAX;                       // guarded by global_ during Add
  int32_t max_level_ = -1;                            // guarded by global_ during Add
  std::mutex global_;
  mutable VisitedPool pool_;

  std::vector<float> sq_offset_;  // SQ8: per-dimension minimum
  float sq_scale_ = 0, sq_scale2_ = 0, sq_o_norm2_ = 0;
};

}  // namespace

std::unique_ptr<IndexBase> NewHnswIndex(const IndexParams& p) {
  return std::make_unique<HnswIndex>(p);
}

}  // namespace strata::vector::internal
