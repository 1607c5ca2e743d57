// The shared half of every index: argument checks, id bookkeeping, the filter
// planner, query parallelism, serialization framing and the disk part.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <numeric>

#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>
#include <strata/vector/index.h>

#include "vector/index/index_base.h"

namespace strata::vector {

namespace {
constexpr log::Logger kLog("vector");
}  // namespace

std::string_view IndexTypeName(IndexType t) {
  switch (t) {
    case IndexType::kFlat: return "FLAT";
    case IndexType::kIvfFlat: return "IVF_FLAT";
    case IndexType::kIvfPq: return "IVF_PQ";
    case IndexType::kHnsw: return "HNSW";
    case IndexType::kDiskAnn: return "DISKANN";
  }
  return "?";
}

Result<IndexType> ParseIndexType(std::string_view name) {
  std::string n = ToLower(name);
  if (n == "flat") return IndexType::kFlat;
  if (n == "ivf_flat") return IndexType::kIvfFlat;
  if (n == "ivf_pq") return IndexType::kIvfPq;
  if (n == "hnsw") return IndexType::kHnsw;
  if (n == "diskann") return IndexType::kDiskAnn;
  return Status::InvalidArgument("unknown index type \"" + std::string(name) +
                                 "\"; use FLAT, IVF_FLAT, IVF_PQ, HNSW or DISKANN");
}

Result<Metric> ParseMetric(std::string_view name) {
  std::string n = ToLower(name);
  if (n == "l2" || n == "euclid" || n == "euclidean") return Metric::kL2;
  if (n == "ip" || n == "dot" || n == "inner_product") return Metric::kInnerProduct;
  if (n == "cosine") return Metric::kCosine;
  return Status::InvalidArgument("unknown metric \"" + std::string(name) +
                                 "\"; use L2 (Euclid), IP (Dot) or COSINE");
}

void BitsetIdFilter::Set(uint64_t id) {
  if (id >= universe_) return;
  uint64_t& w = words_[id >> 6];
  uint64_t bit = uint64_t{1} << (id & 63);
  if (!(w & bit)) {
    w |= bit;
    ++count_;
  }
}

bool BitsetIdFilter::Enumerate(std::vector<uint64_t>* ids) const {
  ids->reserve(ids->size() + static_cast<size_t>(count_));
  for (size_t wi = 0; wi < words_.size(); ++wi) {
    uint64_t w = words_[wi];
    while (w) {
      ids->push_back(wi * 64 + static_cast<uint64_t>(__builtin_ctzll(w)));
      w &= w - 1;
    }
  }
  return true;
}

Status Index::Add(std::span<const float> data, std::span<const uint64_t> ids) {
  if (data.size() != ids.size() * size_t(dim())) {
    return Status::InvalidArgument("Add: " + std::to_string(ids.size()) + " ids need " +
                                   std::to_string(ids.size() * size_t(dim())) +
                                   " floats (dimension " + std::to_string(dim()) + "), got " +
                                   std::to_string(data.size()));
  }
  return Add(ids.size(), data.data(), ids.data());
}

Status Index::Search(std::span<const float> queries, size_t k, const SearchParams& params,
                     SearchResults* out) const {
  if (queries.size() % dim() != 0) {
    return Status::InvalidArgument("Search: " + std::to_string(queries.size()) +
                                   " floats is not a whole number of queries of dimension " +
                                   std::to_string(dim()));
  }
  return Search(queries.size() / dim(), queries.data(), k, params, out);
}

Status Index::GetVector(uint64_t id, std::vector<float>* out) const {
  out->resize(dim());
  return GetVector(id, out->data());
}

size_t SearchResults::Count(size_t q) const {
  const Neighbor* r = Row(q);
  size_t c = 0;
  while (c < k && r[c].id != kNoId) ++c;
  return c;
}

namespace internal {

// ---------------------------------------------------------------- helpers

void WriteResults(std::vector<HeapItem>& items, size_t k, const uint64_t* labels,
                  Neighbor* out) {
  std::sort(items.begin(), items.end(), [](const HeapItem& a, const HeapItem& b) {
    return a.dist < b.dist || (a.dist == b.dist && a.id < b.id);
  });
  size_t n = std::min(k, items.size());
  for (size_t i = 0; i < n; ++i) {
    out[i] = {labels ? labels[items[i].id] : items[i].id, items[i].dist};
  }
  for (size_t i = n; i < k; ++i) out[i] = {kNoId, std::numeric_limits<float>::infinity()};
}

uint32_t LabelMap::Find(uint64_t label, const std::vector<uint64_t>& labels) const {
  if (slots_.empty()) return UINT32_MAX;
  size_t mask = slots_.size() - 1;
  for (size_t s = Slot(label);; s = (s + 1) & mask) {
    uint32_t v = slots_[s];
    if (v == 0) return UINT32_MAX;
    if (labels[v - 1] == label) return v - 1;
  }
}

void LabelMap::Insert(uint32_t internal, const std::vector<uint64_t>& labels) {
  if ((count_ + 1) * 10 > slots_.size() * 7) Grow(labels);
  uint64_t label = labels[internal];
  size_t mask = slots_.size() - 1;
  for (size_t s = Slot(label);; s = (s + 1) & mask) {
    uint32_t v = slots_[s];
    if (v == 0) {
      slots_[s] = internal + 1;
      ++count_;
      return;
    }
    if (labels[v - 1] == label) {
      slots_[s] = internal + 1;
      return;
    }
  }
}

void LabelMap::Grow(const std::vector<uint64_t>& labels) {
  size_t cap = slots_.empty() ? 64 : slots_.size() * 2;
  std::vector<uint32_t> old;
  old.swap(slots_);
  slots_.assign(cap, 0);
  shift_ = 64 - __builtin_ctzll(cap);
  size_t mask = cap - 1;
  for (uint32_t v : old) {
    if (v == 0) continue;
    size_t s = Slot(labels[v - 1]);
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = v;
  }
}

// ---------------------------------------------------------------- DiskFile

DiskFile::~DiskFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<DiskFile>> DiskFile::Create(const std::string& path) {
  int fd;
  if (path.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-vector-XXXXXX";
    fd = ::mkstemp(templ.data());
    if (fd < 0) return Status::FromErrno(errno, "create temporary file " + templ);
    ::unlink(templ.c_str());  // anonymous: gone when the index closes it
  } else {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create " + path);
  }
  return std::unique_ptr<DiskFile>(new DiskFile(fd, 0, 0, true));
}

Result<std::unique_ptr<DiskFile>> DiskFile::OpenRange(const std::string& path, uint64_t base,
                                                       uint64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) < base + size) {
    ::close(fd);
    return Status::Corruption("index file " + path + " is truncated: its disk part needs " +
                              std::to_string(base + size) + " bytes");
  }
  return std::unique_ptr<DiskFile>(new DiskFile(fd, base, size, false));
}

Status DiskFile::Read(uint64_t off, void* buf, size_t n) const {
  if (off + n > size_) return Status::Internal("disk read past the end of the index's disk part");
  return PreadFull(fd_, buf, n, base_ + off, "index disk part");
}

Status DiskFile::Write(uint64_t off, const void* buf, size_t n) {
  if (!writable_) return Status::Internal("write to a read-only index disk part");
  const uint64_t end = off + n;
  STRATA_RETURN_IF_ERROR(PwriteAll(fd_, buf, n, base_ + off, "index disk part"));
  size_ = std::max(size_, end);
  return Status::Ok();
}

namespace {
constexpr size_t kCopyChunk = 1 << 20;
}  // namespace

Status DiskFile::AppendTo(std::string* out) const {
  size_t start = out->size();
  out->resize(start + size_);
  return Read(0, out->data() + start, size_);
}

Status DiskFile::CopyToFd(int fd) const {
  std::string buf(std::min<uint64_t>(kCopyChunk, size_), '\0');
  for (uint64_t off = 0; off < size_; off += buf.size()) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - off));
    STRATA_RETURN_IF_ERROR(Read(off, buf.data(), n));
    STRATA_RETURN_IF_ERROR(WriteAll(fd, buf.data(), n, "index file"));
  }
  return Status::Ok();
}

Result<uint32_t> DiskFile::Checksum() const {
  std::string buf(std::min<uint64_t>(kCopyChunk, size_), '\0');
  uint32_t crc = 0;
  for (uint64_t off = 0; off < size_; off += buf.size()) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - off));
    STRATA_RETURN_IF_ERROR(Read(off, buf.data(), n));
    crc = Crc32c(crc, buf.data(), n);
  }
  return crc;
}

Result<std::unique_ptr<DiskFile>> DiskFile::WritableCopy(const std::string& path) const {
  STRATA_ASSIGN_OR_RETURN(auto copy, Create(path));
  std::string buf(std::min<uint64_t>(kCopyChunk, size_), '\0');
  for (uint64_t off = 0; off < size_; off += buf.size()) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - off));
    STRATA_RETURN_IF_ERROR(Read(off, buf.data(), n));
    STRATA_RETURN_IF_ERROR(copy->Write(off, buf.data(), n));
  }
  return copy;
}

// ---------------------------------------------------------------- params

Status ValidateParams(IndexParams* p) {
  if (static_cast<uint8_t>(p->type) > static_cast<uint8_t>(IndexType::kDiskAnn)) {
    return Status::InvalidArgument("unknown index type " + std::to_string(int(p->type)));
  }
  if (static_cast<uint8_t>(p->metric) > static_cast<uint8_t>(Metric::kCosine)) {
    return Status::InvalidArgument("unknown metric " + std::to_string(int(p->metric)));
  }
  if (p->dim == 0 || p->dim > 65536) {
    return Status::InvalidArgument("dim must be between 1 and 65536, got " +
                                   std::to_string(p->dim));
  }
  if (p->type == IndexType::kHnsw) {
    if (p->hnsw_m < 2 || p->hnsw_m > 512) {
      return Status::InvalidArgument("hnsw_m must be between 2 and 512, got " +
                                     std::to_string(p->hnsw_m));
    }
    if (p->hnsw_ef_construction == 0 || p->hnsw_ef_construction > 100000) {
      return Status::InvalidArgument("hnsw_ef_construction must be between 1 and 100000");
    }
  }
  if (p->ivf_nlist > (1u << 20)) {
    return Status::InvalidArgument("ivf_nlist must be at most 1048576");
  }
  if (p->type == IndexType::kIvfPq || p->type == IndexType::kDiskAnn) {
    if (p->pq_nbits != 8) {
      return Status::InvalidArgument("pq_nbits must be 8 (256 centroids per sub-quantizer)");
    }
    if (p->pq_m == 0) {
      // The largest divisor of dim at most dim/4 for IVF_PQ (1/16 of raw; re-ranking
      // fixes the order) and dim/2 for DISKANN (1/8 of raw; PQ steers its walk).
      uint32_t target = std::max<uint32_t>(1, p->type == IndexType::kDiskAnn ? p->dim / 2
                                                                              : p->dim / 4);
      uint32_t m = target;
      while (p->dim % m != 0) --m;
      p->pq_m = m;
    }
    if (p->dim % p->pq_m != 0 || p->pq_m > p->dim) {
      return Status::InvalidArgument("pq_m (" + std::to_string(p->pq_m) + ") must divide dim (" +
                                     std::to_string(p->dim) + ")");
    }
  }
  if (p->type == IndexType::kDiskAnn) {
    if (p->diskann_r < 4 || p->diskann_r > 1024) {
      return Status::InvalidArgument("diskann_r must be between 4 and 1024");
    }
    if (p->diskann_l < 1 || p->diskann_l > 100000) {
      return Status::InvalidArgument("diskann_l must be between 1 and 100000");
    }
    if (!(p->diskann_alpha >= 1.0f && p->diskann_alpha <= 4.0f)) {
      return Status::InvalidArgument("diskann_alpha must be between 1.0 and 4.0");
    }
  }
  if (static_cast<uint8_t>(p->ivfpq_rerank) > static_cast<uint8_t>(RerankStorage::kDisk)) {
    return Status::InvalidArgument("unknown ivfpq_rerank storage");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- IndexBase

IndexBase::IndexBase(const IndexParams& p) : params_(p) {}
IndexBase::~IndexBase() = default;

namespace {

Status CheckFinite(const float* data, size_t n, size_t d, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    const float* v = data + i * d;
    for (size_t j = 0; j < d; ++j) {
      if (!std::isfinite(v[j])) {
        return Status::InvalidArgument(std::string(what) + " " + std::to_string(i) +
                                       " has a non-finite component (NaN or Inf) at position " +
                                       std::to_string(j));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status IndexBase::Train(size_t n, const float* data) {
  if (n == 0 || data == nullptr) return Status::InvalidArgument("Train needs at least one vector");
  if (rows() > 0) {
    // Stored codes and list assignments depend on the trained state.
    return Status::PreconditionFailed(
        "index already holds vectors; train before the first Add (or build a new index)");
  }
  STRATA_RETURN_IF_ERROR(CheckFinite(data, n, params_.dim, "training vector"));
  if (params_.metric != Metric::kCosine) return TrainImpl(n, data);
  std::vector<float> norm(data, data + n * params_.dim);
  for (size_t i = 0; i < n; ++i) NormalizeL2(norm.data() + i * params_.dim, params_.dim);
  return TrainImpl(n, norm.data());
}

Status IndexBase::Add(size_t n, const float* data, const uint64_t* ids) {
  if (n == 0) return Status::Ok();
  if (data == nullptr || ids == nullptr) {
    return Status::InvalidArgument("Add needs vectors and ids (got a null pointer)");
  }
  const size_t d = params_.dim;
  STRATA_RETURN_IF_ERROR(CheckFinite(data, n, d, "vector"));
  if (rows() + n >= UINT32_MAX) {
    return Status::ResourceExhausted("an index holds at most 4294967294 rows (live and removed); "
                                     "split the data into more segments");
  }
  {
    std::vector<uint64_t> sorted(ids, ids + n);
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      return Status::InvalidArgument("id " + std::to_string(*dup) + " appears twice in one Add");
    }
    if (sorted.back() == kNoId) {
      return Status::InvalidArgument("id 18446744073709551615 is reserved (kNoId)");
    }
    for (size_t i = 0; i < n; ++i) {
      uint32_t r = FindRow(ids[i]);
      if (r != UINT32_MAX && !IsDeleted(r)) {
        return Status::AlreadyExists("id " + std::to_string(ids[i]) +
                                     " is already in the index; Remove it first to replace it");
      }
    }
  }
  std::vector<float> normalized;
  if (params_.metric == Metric::kCosine) {
    normalized.assign(data, data + n * d);
    for (size_t i = 0; i < n; ++i) {
      if (NormalizeL2(normalized.data() + i * d, d) == 0) {
        return Status::InvalidArgument("vector " + std::to_string(i) +
                                       " is all zeros; COSINE needs a non-zero vector");
      }
    }
    data = normalized.data();
  }
  if (!IsTrained()) STRATA_RETURN_IF_ERROR(TrainImpl(n, data));

  const uint32_t first = static_cast<uint32_t>(rows());
  bool still_identity = identity_;
  for (size_t i = 0; still_identity && i < n; ++i) still_identity = ids[i] == first + i;
  if (!still_identity) {
    if (identity_) {
      // First id that is not its row number: materialise the earlier ids.
      labels_.resize(first);
      for (uint32_t i = 0; i < first; ++i) labels_[i] = i;
    }
    labels_.insert(labels_.end(), ids, ids + n);
  }
  const bool was_identity = identity_;
  identity_ = still_identity;
  rows_ = first + n;
  deleted_.resize((rows_ + 63) / 64, 0);
  Status s = AddImpl(n, data, first);
  if (!s.ok()) {
    rows_ = first;
    identity_ = was_identity;
    labels_.resize(identity_ ? 0 : first);
    deleted_.resize((rows_ + 63) / 64);
    return s;
  }
  if (!identity_) {
    uint32_t from = was_identity ? 0 : first;
    for (uint32_t i = from; i < rows_; ++i) label_map_.Insert(i, labels_);
  }
  live_ += n;
  return Status::Ok();
}

const float* IndexBase::PrepareQuery(const float* q, std::vector<float>* buf) const {
  if (params_.metric != Metric::kCosine) return q;
  buf->assign(q, q + params_.dim);
  NormalizeL2(buf->data(), params_.dim);
  return buf->data();
}

size_t IndexBase::DefaultExactThreshold(const SearchParams& p, size_t k) const {
  return std::max<size_t>(10000, 4 * k);
}

std::vector<uint32_t> IndexBase::MatchingRows(const IdFilter* filter) const {
  std::vector<uint32_t> out;
  std::vector<uint64_t> ids;
  if (filter != nullptr && filter->Enumerate(&ids)) {
    out.reserve(ids.size());
    for (uint64_t id : ids) {
      uint32_t r = FindRow(id);
      if (r != UINT32_MAX && !IsDeleted(r)) out.push_back(r);
    }
    std::sort(out.begin(), out.end());  // sequential disk/memory access
    return out;
  }
  for (uint32_t r = 0; r < rows(); ++r) {
    if (Passes(r, filter)) out.push_back(r);
  }
  return out;
}

const std::vector<uint32_t>& LazyMatchingRows::Get() const {
  std::call_once(once_, [this] { rows_ = index_->MatchingRows(filter_); });
  return rows_;
}

std::vector<uint32_t> IndexBase::SampleMatchingRows(const IdFilter& filter, double selectivity,
                                                    size_t want) const {
  std::vector<uint32_t> out;
  const size_t n = rows();
  if (n == 0 || want == 0) return out;
  // Rows i * stride mod n visit every row once (stride coprime with n) in an
  // order that spreads over the whole index; enough probes to find `want`
  // matches at the estimated selectivity, four times over.
  uint64_t stride = 0x9E3779B1u % n;
  if (stride == 0) stride = 1;
  while (std::gcd(stride, uint64_t(n)) != 1) ++stride;
  const double expect = double(want) / std::max(selectivity, 1e-6);
  const size_t probes = size_t(std::min<double>(double(n), 4 * expect + 256));
  out.reserve(want);
  uint64_t r = 0;
  for (size_t i = 0; i < probes && out.size() < want; ++i) {
    if (Passes(uint32_t(r), &filter)) out.push_back(uint32_t(r));
    r += stride;
    if (r >= n) r -= n;
  }
  return out;
}

bool IndexBase::PreferExact(const SearchParams& p, size_t k, double selectivity,
                            double matches) const {
  return matches <= double(DefaultExactThreshold(p, k)) || selectivity < MinGraphSelectivity();
}

Status IndexBase::ExactOverRows(const float* query, const uint32_t* rows, size_t n, size_t k,
                                Neighbor* out, SearchCounters* counters) const {
  if (counters != nullptr) counters->Add(n, 0);
  constexpr size_t kChunk = 256;
  float dist[kChunk];
  TopK top(k);
  for (size_t b = 0; b < n; b += kChunk) {
    size_t m = std::min(kChunk, n - b);
    STRATA_RETURN_IF_ERROR(ExactDistances(query, rows + b, m, dist));
    for (size_t i = 0; i < m; ++i) top.Push(dist[i], rows[b + i]);
  }
  WriteResults(top.items(), k, LabelsPtr(), out);
  return Status::Ok();
}

Status IndexBase::SearchBatch(size_t nq, const float* queries, size_t k, const QueryContext& ctx,
                              Neighbor* out, unsigned threads) const {
  FirstError err;
  const size_t d = params_.dim;
  ParallelFor(nq, threads, [&](size_t q, unsigned) {
    if (err.failed()) return;
    err.Set(SearchOne(queries + q * d, k, ctx, out + q * k));
  });
  return err.Take();
}

namespace {
Status CheckSearchArgs(size_t nq, const float* queries, size_t k, size_t d) {
  if (k == 0) return Status::InvalidArgument("k must be at least 1");
  if (k > (1u << 20)) return Status::InvalidArgument("k must be at most 1048576");
  if (nq > 0 && queries == nullptr) return Status::InvalidArgument("queries is a null pointer");
  return CheckFinite(queries, nq, d, "query");
}
}  // namespace

Status IndexBase::Search(size_t nq, const float* queries, size_t k, const SearchParams& params,
                         SearchResults* out) const {
  if (out == nullptr) return Status::InvalidArgument("Search needs a results object");
  const size_t d = params_.dim;
  STRATA_RETURN_IF_ERROR(CheckSearchArgs(nq, queries, k, d));
  out->nq = nq;
  out->k = k;
  out->neighbors.assign(nq * k, {kNoId, std::numeric_limits<float>::infinity()});
  out->distances = out->link_reads = 0;
  if (nq == 0 || live_ == 0) return Status::Ok();  // an empty index answers nothing, trained or not

  std::vector<float> normalized;
  if (params_.metric == Metric::kCosine) {
    normalized.assign(queries, queries + nq * d);
    for (size_t q = 0; q < nq; ++q) NormalizeL2(normalized.data() + q * d, d);
    queries = normalized.data();
  }
  const unsigned threads = ResolveThreads(params.num_threads);

  SearchCounters counters;
  Status st = SearchPlanned(nq, queries, k, params, threads, &counters, out);
  out->distances = counters.distances.load();
  out->link_reads = counters.link_reads.load();
  return st;
}

Status IndexBase::SearchPlanned(size_t nq, const float* queries, size_t k,
                                const SearchParams& params, unsigned threads,
                                SearchCounters* counters, SearchResults* out) const {
  const size_t d = params_.dim;
  QueryContext ctx{&params, params.filter, FilterStrategy::kGraph, 1.0};
  ctx.counters = counters;
  LazyMatchingRows matching(this, params.filter);
  std::vector<uint32_t> seeds;
  if (params.filter != nullptr) {
    FilterStrategy s = params.filter_strategy;
    if (s != FilterStrategy::kExact) {
      ctx.selectivity = EstimateSelectivity(*params.filter);
      if (s == FilterStrategy::kAuto) {
        double matches = ctx.selectivity * double(live_);
        bool exact = params.exact_threshold != 0 ? matches <= double(params.exact_threshold)
                                                 : PreferExact(params, k, ctx.selectivity, matches);
        s = exact ? FilterStrategy::kExact : GraphStrategy(std::max(ctx.selectivity, 1e-9));
      }
    }
    ctx.strategy = s;
    if (s == FilterStrategy::kExact) {
      const std::vector<uint32_t>& match = matching.Get();
      FirstError err;
      ParallelFor(nq, threads, [&](size_t q, unsigned) {
        if (err.failed()) return;
        err.Set(ExactOverRows(queries + q * d, match.data(), match.size(), k,
                              out->neighbors.data() + q * k, counters));
      });
      return err.Take();
    }
    seeds = SampleMatchingRows(*params.filter, ctx.selectivity, kFilterSeeds);
    ctx.seeds = &seeds;
  }
  const bool restricted = params.filter != nullptr || live_ != rows_;
  if (restricted) ctx.matching = &matching;
  STRATA_RETURN_IF_ERROR(SearchBatch(nq, queries, k, ctx, out->neighbors.data(), threads));
  if (!restricted) return Status::Ok();
  // The guarantee: a walk that found fewer than k passing rows (the
  // predicate's subgraph is cut off from where the walk ran) is finished by
  // an exact scan of the matching rows, so no search returns fewer than
  // min(k, matches).
  FirstError err;
  ParallelFor(nq, threads, [&](size_t q, unsigned) {
    if (err.failed() || out->Count(q) >= k) return;
    const std::vector<uint32_t>& match = matching.Get();
    if (out->Count(q) >= std::min(k, match.size())) return;
    err.Set(ExactOverRows(queries + q * d, match.data(), match.size(), k,
                          out->neighbors.data() + q * k, counters));
  });
  return err.Take();
}

Status IndexBase::SearchSubset(size_t nq, const float* queries, size_t k, const uint64_t* ids,
                               size_t n_ids, SearchResults* out, uint32_t num_threads) const {
  if (out == nullptr) return Status::InvalidArgument("SearchSubset needs a results object");
  const size_t d = params_.dim;
  STRATA_RETURN_IF_ERROR(CheckSearchArgs(nq, queries, k, d));
  if (n_ids > 0 && ids == nullptr) return Status::InvalidArgument("ids is a null pointer");
  out->nq = nq;
  out->k = k;
  out->neighbors.assign(nq * k, {kNoId, std::numeric_limits<float>::infinity()});
  std::vector<uint32_t> rows_list;
  rows_list.reserve(n_ids);
  for (size_t i = 0; i < n_ids; ++i) {
    uint32_t r = FindRow(ids[i]);
    if (r != UINT32_MAX && !IsDeleted(r)) rows_list.push_back(r);
  }
  std::sort(rows_list.begin(), rows_list.end());
  rows_list.erase(std::unique(rows_list.begin(), rows_list.end()), rows_list.end());
  std::vector<float> normalized;
  if (params_.metric == Metric::kCosine) {
    normalized.assign(queries, queries + nq * d);
    for (size_t q = 0; q < nq; ++q) NormalizeL2(normalized.data() + q * d, d);
    queries = normalized.data();
  }
  FirstError err;
  SearchCounters counters;
  ParallelFor(nq, ResolveThreads(num_threads), [&](size_t q, unsigned) {
    if (err.failed()) return;
    err.Set(ExactOverRows(queries + q * d, rows_list.data(), rows_list.size(), k,
                          out->neighbors.data() + q * k, &counters));
  });
  out->distances = counters.distances.load();
  out->link_reads = 0;
  return err.Take();
}

double IndexBase::EstimateSelectivity(const IdFilter& filter) const {
  if (live_ == 0) return 0.0;
  int64_t card = filter.Cardinality();
  if (card >= 0) return std::min(1.0, double(card) / double(live_));
  // A deterministic stride sample of live rows; 1024 Contains calls cost a few microseconds.
  constexpr size_t kSample = 1024;
  size_t n = rows();
  size_t step = std::max<size_t>(1, n / kSample);
  size_t seen = 0, pass = 0;
  for (size_t r = step / 2; r < n; r += step) {
    if (IsDeleted(static_cast<uint32_t>(r))) continue;
    ++seen;
    if (filter.Contains(Label(uint32_t(r)))) ++pass;
  }
  return seen == 0 ? 0.0 : double(pass) / double(seen);
}

Status IndexBase::Remove(size_t n, const uint64_t* ids, size_t* removed) {
  if (n > 0 && ids == nullptr) return Status::InvalidArgument("Remove: ids is a null pointer");
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t r = FindRow(ids[i]);
    if (r == UINT32_MAX || IsDeleted(r)) continue;
    deleted_[r >> 6] |= uint64_t{1} << (r & 63);
    --live_;
    ++count;
  }
  if (removed) *removed = count;
  return Status::Ok();
}

bool IndexBase::Contains(uint64_t id) const {
  uint32_t r = FindRow(id);
  return r != UINT32_MAX && !IsDeleted(r);
}

Status IndexBase::GetVector(uint64_t id, float* out) const {
  uint32_t r = FindRow(id);
  if (r == UINT32_MAX || IsDeleted(r)) {
    return Status::NotFound("id " + std::to_string(id) + " is not in the index");
  }
  return GetVectorImpl(r, out);
}

size_t IndexBase::MemoryBytes() const {
  return sizeof(*this) + labels_.capacity() * sizeof(uint64_t) +
         deleted_.capacity() * sizeof(uint64_t) + label_map_.MemoryBytes() + ImplMemoryBytes();
}

Status IndexBase::EnsureWritableDisk() {
  if (disk_ && !disk_->writable()) {
    STRATA_ASSIGN_OR_RETURN(disk_, disk_->WritableCopy(params_.disk_path));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- serialization
//
// File = RAM section | crc32c(RAM section) | zero padding to 4 KiB | disk part.
// The RAM section opens with a fixed 48-byte header:
//   0 magic "STRVIDX1" | 8 u32 version | 12 u32 0 | 16 u64 ram_size |
//   24 u64 disk_offset | 32 u64 disk_size | 40 u32 disk_crc | 44 u32 0
// then the parameters, the row bookkeeping and the implementation's body.

namespace {
constexpr char kMagic[8] = {'S', 'T', 'R', 'V', 'I', 'D', 'X', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 48;
constexpr uint64_t kDiskAlign = 4096;

template <class T>
void Patch(std::string* s, size_t off, T v) {
  std::memcpy(s->data() + off, &v, sizeof(T));
}
template <class T>
T Peek(std::string_view s, size_t off) {
  T v;
  std::memcpy(&v, s.data() + off, sizeof(T));
  return v;
}

// Builds the RAM section + CRC + padding; returns the disk offset (0 if none).
Status BuildRam(const IndexParams& p, const std::string& body, uint64_t rows, bool identity,
                const std::vector<uint64_t>& labels, const std::vector<uint64_t>& deleted,
                uint64_t live, uint64_t disk_size, uint32_t disk_crc, std::string* out) {
  out->clear();
  Writer w(out);
  w.PutRaw(kMagic, 8);
  w.Put<uint32_t>(kFormatVersion);
  w.Put<uint32_t>(0);
  w.Put<uint64_t>(0);  // ram_size
  w.Put<uint64_t>(0);  // disk_offset
  w.Put<uint64_t>(disk_size);
  w.Put<uint32_t>(disk_crc);
  w.Put<uint32_t>(0);
  w.Put<uint8_t>(static_cast<uint8_t>(p.type));
  w.Put<uint8_t>(static_cast<uint8_t>(p.metric));
  w.Put<uint8_t>(p.hnsw_sq8 ? 1 : 0);
  w.Put<uint8_t>(static_cast<uint8_t>(p.ivfpq_rerank));
  w.Put<uint32_t>(p.dim);
  w.Put<uint32_t>(p.hnsw_m);
  w.Put<uint32_t>(p.hnsw_ef_construction);
  w.Put<uint32_t>(p.ivf_nlist);
  w.Put<uint32_t>(p.pq_m);
  w.Put<uint32_t>(p.pq_nbits);
  w.Put<uint32_t>(p.diskann_r);
  w.Put<uint32_t>(p.diskann_l);
  w.Put<float>(p.diskann_alpha);
  w.Put<uint64_t>(p.seed);
  w.Put<uint64_t>(rows);
  w.Put<uint8_t>(identity ? 1 : 0);
  w.PutVec(labels);
  w.PutVec(deleted);
  w.Put<uint64_t>(live);
  w.PutRaw(body.data(), body.size());
  uint64_t ram_size = out->size();
  Patch<uint64_t>(out, 16, ram_size);
  uint64_t disk_offset = 0;
  if (disk_size > 0) {
    disk_offset = (ram_size + 4 + kDiskAlign - 1) / kDiskAlign * kDiskAlign;
    Patch<uint64_t>(out, 24, disk_offset);
  }
  uint32_t crc = Crc32c(0, out->data(), out->size());
  w.Put<uint32_t>(crc);
  if (disk_offset) out->resize(disk_offset, '\0');
  return Status::Ok();
}

}  // namespace

Status IndexBase::Serialize(std::string* out) const {
  if (out == nullptr) return Status::InvalidArgument("Serialize needs an output string");
  std::string body;
  Writer w(&body);
  SerializeBody(&w);
  uint64_t disk_size = disk_ ? disk_->size() : 0;
  uint32_t disk_crc = 0;
  if (disk_size) {
    STRATA_ASSIGN_OR_RETURN(disk_crc, disk_->Checksum());
  }
  STRATA_RETURN_IF_ERROR(
      BuildRam(params_, body, rows_, identity_, labels_, deleted_, live_, disk_size, disk_crc, out));
  if (disk_size) STRATA_RETURN_IF_ERROR(disk_->AppendTo(out));
  return Status::Ok();
}

Status IndexBase::Save(const std::string& path) const {
  std::string body;
  Writer w(&body);
  SerializeBody(&w);
  uint64_t disk_size = disk_ ? disk_->size() : 0;
  uint32_t disk_crc = 0;
  if (disk_size) {
    STRATA_ASSIGN_OR_RETURN(disk_crc, disk_->Checksum());
  }
  std::string ram;
  STRATA_RETURN_IF_ERROR(
      BuildRam(params_, body, rows_, identity_, labels_, deleted_, live_, disk_size, disk_crc, &ram));
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  Status s = WriteAll(fd, ram.data(), ram.size(), tmp);
  if (s.ok() && disk_size) s = disk_->CopyToFd(fd);
  if (!s.ok()) {
    AbandonTempFile(fd, tmp);
    return s;
  }
  STRATA_RETURN_IF_ERROR(CommitTempFile(fd, tmp, path, AtomicWriteOptions{.sync_dir = false}));
  (void)FsyncParentDir(path);  // best effort, as before: the file itself is durable
  return Status::Ok();
}

Result<std::unique_ptr<IndexBase>> IndexBase::ParseRam(std::string_view ram, uint64_t* disk_offset,
                                                       uint64_t* disk_size, uint32_t* disk_crc) {
  // ram = the RAM section followed by its 4-byte CRC.
  if (ram.size() < kHeaderSize + 4 || std::memcmp(ram.data(), kMagic, 8) != 0) {
    return Status::Corruption("not a Strata vector index (bad magic)");
  }
  uint32_t version = Peek<uint32_t>(ram, 8);
  if (version != kFormatVersion) {
    return Status::NotSupported("vector index format version " + std::to_string(version) +
                                " is not supported (this build reads version 1)");
  }
  uint64_t ram_size = Peek<uint64_t>(ram, 16);
  if (ram_size + 4 != ram.size()) return Status::Corruption("vector index is truncated");
  uint32_t want = Peek<uint32_t>(ram, ram_size);
  if (Crc32c(0, ram.data(), ram_size) != want) {
    return Status::Corruption("vector index checksum mismatch: the file is damaged");
  }
  *disk_offset = Peek<uint64_t>(ram, 24);
  *disk_size = Peek<uint64_t>(ram, 32);
  *disk_crc = Peek<uint32_t>(ram, 40);

  Reader r(ram.substr(kHeaderSize, ram_size - kHeaderSize));
  IndexParams p;
  uint8_t type, metric, sq8, rerank;
  bool ok = r.Get(&type) && r.Get(&metric) && r.Get(&sq8) && r.Get(&rerank) && r.Get(&p.dim) &&
            r.Get(&p.hnsw_m) && r.Get(&p.hnsw_ef_construction) && r.Get(&p.ivf_nlist) &&
            r.Get(&p.pq_m) && r.Get(&p.pq_nbits) && r.Get(&p.diskann_r) && r.Get(&p.diskann_l) &&
            r.Get(&p.diskann_alpha) && r.Get(&p.seed);
  if (!ok) return Status::Corruption("vector index header is truncated");
  p.type = static_cast<IndexType>(type);
  p.metric = static_cast<Metric>(metric);
  p.hnsw_sq8 = sq8 != 0;
  p.ivfpq_rerank = static_cast<RerankStorage>(rerank);
  Status vs = ValidateParams(&p);
  if (!vs.ok()) return Status::Corruption("vector index parameters are invalid: " + vs.message());

  std::unique_ptr<IndexBase> idx;
  switch (p.type) {
    case IndexType::kFlat: idx = NewFlatIndex(p); break;
    case IndexType::kIvfFlat:
    case IndexType::kIvfPq: idx = NewIvfIndex(p); break;
    case IndexType::kHnsw: idx = NewHnswIndex(p); break;
    case IndexType::kDiskAnn: idx = NewDiskAnnIndex(p); break;
  }
  uint64_t live, nrows;
  uint8_t identity;
  if (!r.Get(&nrows) || !r.Get(&identity) || !r.GetVec(&idx->labels_) ||
      !r.GetVec(&idx->deleted_) || !r.Get(&live)) {
    return Status::Corruption("vector index row table is truncated");
  }
  if (nrows >= UINT32_MAX || identity > 1 || idx->labels_.size() != (identity ? 0 : nrows) ||
      idx->deleted_.size() != (nrows + 63) / 64 || live > nrows) {
    return Status::Corruption("vector index row table is inconsistent");
  }
  idx->rows_ = nrows;
  idx->identity_ = identity != 0;
  idx->live_ = live;
  if (!idx->identity_) {
    for (uint32_t i = 0; i < nrows; ++i) idx->label_map_.Insert(i, idx->labels_);
  }
  STRATA_RETURN_IF_ERROR(idx->DeserializeBody(&r));
  if (r.remaining() != 0) return Status::Corruption("vector index has trailing bytes");
  return idx;
}

}  // namespace internal

using internal::IndexBase;

Result<std::unique_ptr<Index>> CreateIndex(const IndexParams& params) {
  IndexParams p = params;
  STRATA_RETURN_IF_ERROR(internal::ValidateParams(&p));
  switch (p.type) {
    case IndexType::kFlat: return std::unique_ptr<Index>(internal::NewFlatIndex(p));
    case IndexType::kIvfFlat:
    case IndexType::kIvfPq: return std::unique_ptr<Index>(internal::NewIvfIndex(p));
    case IndexType::kHnsw: return std::unique_ptr<Index>(internal::NewHnswIndex(p));
    case IndexType::kDiskAnn: return std::unique_ptr<Index>(internal::NewDiskAnnIndex(p));
  }
  return Status::InvalidArgument("unknown index type");
}

Result<std::unique_ptr<Index>> Index::Deserialize(std::string_view bytes,
                                                  const LoadOptions& options) {
  if (bytes.size() < internal::kHeaderSize + 4) {
    return Status::Corruption("vector index is truncated (" + std::to_string(bytes.size()) +
                              " bytes)");
  }
  uint64_t ram_size = internal::Peek<uint64_t>(bytes, 16);
  if (ram_size < internal::kHeaderSize || ram_size > bytes.size() - 4) {
    return Status::Corruption("vector index is truncated");
  }
  uint64_t disk_offset, disk_size;
  uint32_t disk_crc;
  STRATA_ASSIGN_OR_RETURN(auto idx, IndexBase::ParseRam(bytes.substr(0, ram_size + 4),
                                                        &disk_offset, &disk_size, &disk_crc));
  if (disk_size > 0) {
    if (disk_offset < ram_size + 4 || disk_offset > bytes.size() ||
        disk_size > bytes.size() - disk_offset) {
      return Status::Corruption("vector index disk part is truncated");
    }
    const char* dp = bytes.data() + disk_offset;
    if (Crc32c(0, dp, disk_size) != disk_crc) {
      return Status::Corruption("vector index disk part checksum mismatch");
    }
    STRATA_ASSIGN_OR_RETURN(auto f, internal::DiskFile::Create(options.disk_path));
    STRATA_RETURN_IF_ERROR(f->Write(0, dp, disk_size));
    idx->AttachDisk(std::move(f));
  }
  return std::unique_ptr<Index>(std::move(idx));
}

Result<std::unique_ptr<Index>> Index::Load(const std::string& path, const LoadOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  const std::string what = "vector index file " + path;
  auto read_at = [&](uint64_t off, size_t n, std::string* buf) -> Status {
    buf->resize(n);
    return PreadFull(fd, buf->data(), n, off, what);
  };
  std::string head;
  Status s = read_at(0, internal::kHeaderSize, &head);
  std::string ram;
  if (s.ok()) {
    uint64_t ram_size = internal::Peek<uint64_t>(head, 16);
    if (std::memcmp(head.data(), internal::kMagic, 8) != 0) {
      s = Status::Corruption(path + " is not a Strata vector index (bad magic)");
    } else if (ram_size < internal::kHeaderSize || ram_size > (uint64_t(1) << 44)) {
      s = Status::Corruption("vector index file " + path + " has a damaged header");
    } else {
      s = read_at(0, ram_size + 4, &ram);
    }
  }
  ::close(fd);
  STRATA_RETURN_IF_ERROR(s);
  uint64_t disk_offset, disk_size;
  uint32_t disk_crc;
  auto parsed = IndexBase::ParseRam(ram, &disk_offset, &disk_size, &disk_crc);
  if (!parsed) return parsed.error().WithContext(path);
  auto idx = std::move(*parsed);
  if (disk_size > 0) {
    STRATA_ASSIGN_OR_RETURN(auto f, internal::DiskFile::OpenRange(path, disk_offset, disk_size));
    if (options.verify_disk_checksum) {
      STRATA_ASSIGN_OR_RETURN(uint32_t crc, f->Checksum());
      if (crc != disk_crc) {
        return Status::Corruption("vector index file " + path + ": disk part checksum mismatch");
      }
    }
    idx->AttachDisk(std::move(f));
  }
  kLog.Debug("loaded {} index from {} ({} vectors)", IndexTypeName(idx->type()), path,
             idx->Size());
  return std::unique_ptr<Index>(std::move(idx));
}

}  // namespace strata::vector
