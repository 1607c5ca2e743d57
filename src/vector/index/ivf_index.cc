// IVF_FLAT and IVF_PQ: a k-means coarse quantizer partitions the rows into
// nlist inverted lists; a query scans the nprobe lists whose centroids are
// closest.
//
// IVF_FLAT keeps raw vectors in the lists (contiguous, scanned with the batch
// kernel). IVF_PQ keeps m-byte PQ codes of the residual x - centroid (FAISS's
// by_residual) and scores them with ADC lookup tables; the best `rerank`
// candidates are then re-scored with the raw vectors, held in RAM or in the
// disk part (pread per candidate), so RAM holds only codes, row ids and the id
// table: with m = dim/8 bytes that is well under 1/8 of the raw vectors.
#include <cmath>
#include <numeric>

#include "vector/index/quantizer.h"

namespace strata::vector::internal {
namespace {

class IvfIndex final : public IndexBase {
 public:
  explicit IvfIndex(const IndexParams& p) : IndexBase(p), is_pq_(p.type == IndexType::kIvfPq) {
    if (is_pq_) pq_.Init(p.dim, p.pq_m);
  }

  bool IsTrained() const override { return !centroids_.empty() && (!is_pq_ || pq_.trained()); }

 protected:
  Metric CoarseMetric() const {
    return params_.metric == Metric::kInnerProduct ? Metric::kInnerProduct : Metric::kL2;
  }
  bool HasRaw() const { return is_pq_ && params_.ivfpq_rerank != RerankStorage::kNone; }

  Status TrainImpl(size_t n, const float* data) override {
    const size_t d = params_.dim;
    size_t nlist = params_.ivf_nlist;
    if (nlist == 0) nlist = std::clamp<size_t>(size_t(4 * std::sqrt(double(n))), 1, n);
    if (n < nlist) {
      return Status::InvalidArgument("IVF training needs at least nlist (" +
                                     std::to_string(nlist) + ") vectors, got " +
                                     std::to_string(n));
    }
    if (is_pq_ && n < 256) {
      return Status::InvalidArgument("IVF_PQ training needs at least 256 vectors, got " +
                                     std::to_string(n));
    }
    const unsigned threads = ResolveThreads(params_.num_threads);
    KMeansOptions o;
    o.k = nlist;
    o.iterations = 12;
    o.max_points_per_centroid = 128;
    o.seed = params_.seed;
    o.threads = threads;
    std::vector<float> centroids;
    STRATA_RETURN_IF_ERROR(KMeans(data, n, d, o, &centroids));
    if (is_pq_) {
      // PQ codebooks are trained on residuals of (a sample of) the training set.
      size_t ns = std::min<size_t>(n, 65536);
      size_t step = n / ns;
      std::vector<float> res(ns * d);
      std::vector<uint32_t> assign(ns);
      std::vector<float> sample(ns * d);
      for (size_t i = 0; i < ns; ++i) {
        std::memcpy(sample.data() + i * d, data + i * step * d, d * sizeof(float));
      }
      AssignNearest(sample.data(), ns, centroids.data(), nlist, d, CoarseMetric(), threads,
                    assign.data());
      for (size_t i = 0; i < ns; ++i) {
        const float* c = centroids.data() + size_t(assign[i]) * d;
        for (size_t t = 0; t < d; ++t) res[i * d + t] = sample[i * d + t] - c[t];
      }
      STRATA_RETURN_IF_ERROR(pq_.Train(res.data(), ns, params_.seed, threads));
    }
    centroids_ = std::move(centroids);
    nlist_ = nlist;
    lists_.assign(nlist_, List());
    return Status::Ok();
  }

  Status AddImpl(size_t n, const float* data, uint32_t first) override {
    const size_t d = params_.dim;
    const unsigned threads = ResolveThreads(params_.num_threads);
    std::vector<uint32_t> assign(n);
    AssignNearest(data, n, centroids_.data(), nlist_, d, CoarseMetric(), threads, assign.data());
    std::vector<uint8_t> codes;
    if (is_pq_) {
      std::vector<float> res(n * d);
      for (size_t i = 0; i < n; ++i) {
        const float* c = centroids_.data() + size_t(assign[i]) * d;
        for (size_t t = 0; t < d; ++t) res[i * d + t] = data[i * d + t] - c[t];
      }
      codes.resize(n * pq_.code_size());
      pq_.EncodeBatch(res.data(), n, codes.data(), threads);
    }
    if (HasRaw() && params_.ivfpq_rerank == RerankStorage::kDisk) {
      if (!disk_) {
        STRATA_ASSIGN_OR_RETURN(disk_, DiskFile::Create(params_.disk_path));
      }
      STRATA_RETURN_IF_ERROR(EnsureWritableDisk());
      STRATA_RETURN_IF_ERROR(
          disk_->Write(uint64_t(first) * d * sizeof(float), data, n * d * sizeof(float)));
    }
    // Exact reservations: list vectors never carry doubling slack.
    std::vector<size_t> count(nlist_, 0);
    for (size_t i = 0; i < n; ++i) ++count[assign[i]];
    for (size_t l = 0; l < nlist_; ++l) {
      if (count[l] == 0) continue;
      List& L = lists_[l];
      L.rows.reserve(L.rows.size() + count[l]);
      if (is_pq_) {
        L.codes.reserve(L.codes.size() + count[l] * pq_.code_size());
      } else {
        L.vecs.reserve(L.vecs.size() + count[l] * d);
      }
    }
    if (!is_pq_ || !HasRaw()) row_loc_.reserve(first + n);
    for (size_t i = 0; i < n; ++i) {
      List& L = lists_[assign[i]];
      if (!is_pq_ || !HasRaw()) row_loc_.push_back({assign[i], uint32_t(L.rows.size())});
      L.rows.push_back(first + uint32_t(i));
      if (is_pq_) {
        L.codes.insert(L.codes.end(), codes.begin() + i * pq_.code_size(),
                       codes.begin() + (i + 1) * pq_.code_size());
      } else {
        L.vecs.insert(L.vecs.end(), data + i * d, data + (i + 1) * d);
      }
    }
    if (HasRaw() && params_.ivfpq_rerank == RerankStorage::kMemory) {
      raw_.insert(raw_.end(), data, data + n * d);
    }
    return Status::Ok();
  }

  size_t DefaultExactThreshold(const SearchParams& p, size_t k) const override {
    // Exact re-scoring from the disk part costs a pread per row.
    if (is_pq_ && params_.ivfpq_rerank == RerankStorage::kDisk) return std::max<size_t>(1024, k);
    return std::max<size_t>(2048, 4 * k);
  }
  // Below 1% the widened probe (nprobe / sqrt(selectivity)) scans most lists.
  double MinGraphSelectivity() const override { return 0.01; }

  Status SearchOne(const float* query, size_t k, const QueryContext& ctx,
                   Neighbor* out) const override {
    const DistanceKernels& K = Kernels();
    const size_t d = params_.dim;
    const bool l2 = params_.metric == Metric::kL2;
    const bool check = ctx.filter != nullptr || live_ != rows();
    size_t nprobe = ctx.params->nprobe ? ctx.params->nprobe : std::max<size_t>(1, nlist_ / 16);
    if (ctx.filter != nullptr && ctx.selectivity < 1.0) {
      // Fewer matches per list: widen the probe so about as many matching rows are seen.
      nprobe = size_t(std::ceil(double(nprobe) / std::sqrt(std::max(ctx.selectivity, 1e-4))));
    }
    nprobe = std::min(nprobe, nlist_);

    // Coarse step.
    std::vector<float> cd(nlist_);
    if (CoarseMetric() == Metric::kL2) {
      K.l2_batch(query, centroids_.data(), nlist_, d, cd.data());
    } else {
      K.ip_batch(query, centroids_.data(), nlist_, d, cd.data());
      for (float& v : cd) v = -v;
    }
    std::vector<uint32_t> order(nlist_);
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + nprobe, order.end(),
                      [&](uint32_t a, uint32_t b) { return cd[a] < cd[b]; });

    if (!is_pq_) {
      TopK top(k);
      std::vector<float> dist;
      for (size_t p = 0; p < nprobe; ++p) {
        const List& L = lists_[order[p]];
        size_t m = L.rows.size();
        if (m == 0) continue;
        dist.resize(m);
        if (l2) {
          K.l2_batch(query, L.vecs.data(), m, d, dist.data());
        } else {
          K.ip_batch(query, L.vecs.data(), m, d, dist.data());
          for (float& v : dist) v = -v;
        }
        for (size_t i = 0; i < m; ++i) {
          if (top.full() && dist[i] >= top.worst()) continue;
          if (check && !Passes(L.rows[i], ctx.filter)) continue;
          top.Push(dist[i], L.rows[i]);
        }
      }
      WriteResults(top.items(), k, LabelsPtr(), out);
      return Status::Ok();
    }

    // IVF_PQ: ADC over the probed lists, then re-rank.
    const size_t m_codes = pq_.code_size();
    size_t rerank = 0;
    if (HasRaw()) rerank = std::max<size_t>(k, ctx.params->rerank ? ctx.params->rerank : 8 * k);
    TopK cand(std::max(k, rerank));
    std::vector<float> table(m_codes * 256), dist;
    std::vector<float> residual(d);
    if (!l2) pq_.ComputeTable(query, Metric::kInnerProduct, table.data());
    for (size_t p = 0; p < nprobe; ++p) {
      uint32_t li = order[p];
      const List& L = lists_[li];
      size_t m = L.rows.size();
      if (m == 0) continue;
      float base = 0;
      if (l2) {
        const float* c = centroids_.data() + size_t(li) * d;
        for (size_t t = 0; t < d; ++t) residual[t] = query[t] - c[t];
        pq_.ComputeTable(residual.data(), Metric::kL2, table.data());
      } else {
        base = cd[li];  // -<q, c>; the table adds -<q, r>
      }
      dist.resize(m);
      K.pq_adc_batch(table.data(), L.codes.data(), m, m_codes, dist.data());
      for (size_t i = 0; i < m; ++i) {
        float dv = dist[i] + base;
        if (cand.full() && dv >= cand.worst()) continue;
        if (check && !Passes(L.rows[i], ctx.filter)) continue;
        cand.Push(dv, L.rows[i]);
      }
    }
    if (rerank == 0) {
      WriteResults(cand.items(), k, LabelsPtr(), out);
      return Status::Ok();
    }
    std::vector<HeapItem>& items = cand.items();
    std::vector<uint32_t> rows_list(items.size());
    for (size_t i = 0; i < items.size(); ++i) rows_list[i] = items[i].id;
    std::sort(rows_list.begin(), rows_list.end());
    return ExactOverRows(query, rows_list.data(), rows_list.size(), k, out);
  }

  Status ExactDistances(const float* query, const uint32_t* rows, size_t n,
                        float* out) const override {
    const DistanceKernels& K = Kernels();
    const size_t d = params_.dim;
    const bool l2 = params_.metric == Metric::kL2;
    auto score = [&](const float* v) { return l2 ? K.l2(query, v, d) : -K.ip(query, v, d); };
    if (!is_pq_) {
      for (size_t i = 0; i < n; ++i) {
        const Loc& loc = row_loc_[rows[i]];
        out[i] = score(lists_[loc.list].vecs.data() + size_t(loc.pos) * d);
      }
      return Status::Ok();
    }
    if (params_.ivfpq_rerank == RerankStorage::kMemory) {
      for (size_t i = 0; i < n; ++i) out[i] = score(raw_.data() + size_t(rows[i]) * d);
      return Status::Ok();
    }
    std::vector<float> v(d);
    for (size_t i = 0; i < n; ++i) {
      STRATA_RETURN_IF_ERROR(GetVectorImpl(rows[i], v.data()));
      out[i] = score(v.data());
    }
    return Status::Ok();
  }

  Status GetVectorImpl(uint32_t row, float* out) const override {
    const size_t d = params_.dim;
    if (!is_pq_) {
      const Loc& loc = row_loc_[row];
      std::memcpy(out, lists_[loc.list].vecs.data() + size_t(loc.pos) * d, d * sizeof(float));
      return Status::Ok();
    }
    switch (params_.ivfpq_rerank) {
      case RerankStorage::kMemory:
        std::memcpy(out, raw_.data() + size_t(row) * d, d * sizeof(float));
        return Status::Ok();
      case RerankStorage::kDisk:
        if (!disk_) return Status::Internal("IVF_PQ raw-vector file is missing");
        return disk_->Read(uint64_t(row) * d * sizeof(float), out, d * sizeof(float));
      case RerankStorage::kNone: {
        // Lossy: centroid + decoded residual.
        const Loc& loc = row_loc_[row];
        pq_.Decode(lists_[loc.list].codes.data() + size_t(loc.pos) * pq_.code_size(), out);
        const float* c = centroids_.data() + size_t(loc.list) * d;
        for (size_t t = 0; t < d; ++t) out[t] += c[t];
        return Status::Ok();
      }
    }
    return Status::Internal("unknown rerank storage");
  }

  size_t ImplMemoryBytes() const override {
    size_t b = centroids_.capacity() * sizeof(float) + lists_.capacity() * sizeof(List) +
               row_loc_.capacity() * sizeof(Loc) + raw_.capacity() * sizeof(float) +
               pq_.MemoryBytes();
    for (const List& L : lists_) {
      b += L.rows.capacity() * sizeof(uint32_t) + L.vecs.capacity() * sizeof(float) +
           L.codes.capacity();
    }
    return b;
  }

  void SerializeBody(Writer* w) const override {
    w->Put<uint64_t>(nlist_);
    w->PutVec(centroids_);
    if (is_pq_) pq_.Serialize(w);
    for (const List& L : lists_) {
      w->PutVec(L.rows);
      w->PutVec(L.vecs);
      w->PutVec(L.codes);
    }
    w->PutVec(row_loc_);
    w->PutVec(raw_);
  }

  Status DeserializeBody(Reader* r) override {
    const size_t d = params_.dim;
    uint64_t nlist;
    if (!r->Get(&nlist) || nlist > (1u << 20) || !r->GetVec(&centroids_) ||
        centroids_.size() != nlist * d) {
      return Status::Corruption("IVF centroids are damaged");
    }
    nlist_ = nlist;
    if (is_pq_ && !pq_.Deserialize(r)) return Status::Corruption("IVF_PQ codebooks are damaged");
    lists_.assign(nlist_, List());
    size_t total = 0;
    for (List& L : lists_) {
      if (!r->GetVec(&L.rows) || !r->GetVec(&L.vecs) || !r->GetVec(&L.codes)) {
        return Status::Corruption("IVF lists are truncated");
      }
      size_t per = is_pq_ ? pq_.code_size() : d;
      size_t have = is_pq_ ? L.codes.size() : L.vecs.size();
      if (have != L.rows.size() * per) return Status::Corruption("IVF list sizes disagree");
      for (uint32_t row : L.rows) {
        if (row >= rows()) return Status::Corruption("IVF list names a row out of range");
      }
      total += L.rows.size();
    }
    if (total != rows()) return Status::Corruption("IVF lists do not cover every row");
    if (!r->GetVec(&row_loc_) || !r->GetVec(&raw_)) return Status::Corruption("IVF rows damaged");
    if ((!is_pq_ || !HasRaw()) && row_loc_.size() != rows()) {
      return Status::Corruption("IVF row locations damaged");
    }
    for (const Loc& loc : row_loc_) {
      if (loc.list >= nlist_ || loc.pos >= lists_[loc.list].rows.size()) {
        return Status::Corruption("IVF row location out of range");
      }
    }
    if (HasRaw() && params_.ivfpq_rerank == RerankStorage::kMemory && raw_.size() != rows() * d) {
      return Status::Corruption("IVF_PQ raw vectors are truncated");
    }
    return Status::Ok();
  }

 private:
  struct List {
    std::vector<uint32_t> rows;
    std::vector<float> vecs;     // IVF_FLAT: rows.size() x dim
    std::vector<uint8_t> codes;  // IVF_PQ: rows.size() x m
  };
  struct Loc {
    uint32_t list;
    uint32_t pos;
  };

  const bool is_pq_;
  size_t nlist_ = 0;
  std::vector<float> centroids_;  // nlist x dim
  std::vector<List> lists_;
  ProductQuantizer pq_;
  std::vector<Loc> row_loc_;  // row -> list slot; IVF_FLAT and IVF_PQ without raw vectors
  std::vector<float> raw_;    // IVF_PQ with RerankStorage::kMemory: rows x dim
};

}  // namespace

std::unique_ptr<IndexBase> NewIvfIndex(const IndexParams& p) {
  return std::make_unique<IvfIndex>(p);
}

}  // namespace strata::vector::internal
