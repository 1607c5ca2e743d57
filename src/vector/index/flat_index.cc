// FLAT: exact search over rows kept contiguously in RAM.
//
// A batch of queries is tiled: each worker takes a block of queries and walks
// the rows in blocks sized to stay in L2, so every row block is loaded once per
// query block rather than once per query.
#include "vector/index/index_base.h"

namespace strata::vector::internal {
namespace {

class FlatIndex final : public IndexBase {
 public:
  explicit FlatIndex(const IndexParams& p) : IndexBase(p) {}

 protected:
  Status AddImpl(size_t n, const float* data, uint32_t first) override {
    data_.insert(data_.end(), data, data + n * params_.dim);
    return Status::Ok();
  }

  Status SearchOne(const float* query, size_t k, const QueryContext& ctx,
                   Neighbor* out) const override {
    return SearchBlock(query, 1, k, ctx, out);
  }

  Status SearchBatch(size_t nq, const float* queries, size_t k, const QueryContext& ctx,
                     Neighbor* out, unsigned threads) const override {
    constexpr size_t kQueryBlock = 8;
    const size_t blocks = (nq + kQueryBlock - 1) / kQueryBlock;
    const size_t d = params_.dim;
    ParallelFor(blocks, threads, [&](size_t b, unsigned) {
      size_t q0 = b * kQueryBlock;
      size_t m = std::min(kQueryBlock, nq - q0);
      (void)SearchBlock(queries + q0 * d, m, k, ctx, out + q0 * k);
    });
    return Status::Ok();
  }

  Status ExactDistances(const float* query, const uint32_t* rows, size_t n,
                        float* out) const override {
    const DistanceKernels& K = Kernels();
    const size_t d = params_.dim;
    for (size_t i = 0; i < n; ++i) {
      const float* v = data_.data() + size_t(rows[i]) * d;
      out[i] = params_.metric == Metric::kL2 ? K.l2(query, v, d) : -K.ip(query, v, d);
    }
    return Status::Ok();
  }

  Status GetVectorImpl(uint32_t row, float* out) const override {
    std::memcpy(out, data_.data() + size_t(row) * params_.dim, params_.dim * sizeof(float));
    return Status::Ok();
  }

  size_t ImplMemoryBytes() const override { return data_.capacity() * sizeof(float); }

  void SerializeBody(Writer* w) const override { w->PutVec(data_); }

  Status DeserializeBody(Reader* r) override {
    if (!r->GetVec(&data_) || data_.size() != rows() * params_.dim) {
      return Status::Corruption("FLAT index vectors are truncated");
    }
    return Status::Ok();
  }

 private:
  // m queries (contiguous) against all rows.
  Status SearchBlock(const float* queries, size_t m, size_t k, const QueryContext& ctx,
                     Neighbor* out) const {
    const DistanceKernels& K = Kernels();
    const size_t d = params_.dim;
    const size_t n = rows();
    const bool check = ctx.filter != nullptr || live_ != n;
    const bool l2 = params_.metric == Metric::kL2;
    // Rows per block: about 128 KiB of vectors, a multiple of 4 for the batch kernel.
    const size_t row_block = std::max<size_t>(16, (32768 / d) & ~size_t(3));
    std::vector<TopK> tops(m, TopK(k));
    std::vector<float> dist(row_block);
    for (size_t r0 = 0; r0 < n; r0 += row_block) {
      size_t rn = std::min(row_block, n - r0);
      const float* rows_ptr = data_.data() + r0 * d;
      for (size_t q = 0; q < m; ++q) {
        const float* qv = queries + q * d;
        if (l2) {
          K.l2_batch(qv, rows_ptr, rn, d, dist.data());
        } else {
          K.ip_batch(qv, rows_ptr, rn, d, dist.data());
          for (size_t i = 0; i < rn; ++i) dist[i] = -dist[i];
        }
        TopK& top = tops[q];
        for (size_t i = 0; i < rn; ++i) {
          if (dist[i] >= top.worst() && top.full()) continue;
          uint32_t row = static_cast<uint32_t>(r0 + i);
          if (check && !Passes(row, ctx.filter)) continue;
          top.Push(dist[i], row);
        }
      }
    }
    for (size_t q = 0; q < m; ++q) WriteResults(tops[q].items(), k, LabelsPtr(), out + q * k);
    return Status::Ok();
  }

  std::vector<float> data_;  // rows() x dim
};

}  // namespace

std::unique_ptr<IndexBase> NewFlatIndex(const IndexParams& p) {
  return std::make_unique<FlatIndex>(p);
}

}  // namespace strata::vector::internal
