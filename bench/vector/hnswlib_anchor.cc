// The hnswlib anchor (Debian libhnswlib-dev headers), linked into
// strata_bench_vector. This file alone is compiled with -mavx2 -mfma so
// hnswlib gets its AVX kernels (hnswlib picks kernels at compile time; Debian's
// python3-hnswlib is built for baseline x86-64 and only has SSE). The driver
// calls it only when the CPU has AVX2 and FMA, and runs it interleaved with
// Strata's HNSW so both see the same machine load.
#include "hnswlib_anchor.h"

#include <hnswlib/hnswlib.h>

#include <atomic>
#include <thread>
#include <vector>

namespace strata::vector::bench {
namespace {

template <class F>
void ParallelFor(size_t n, unsigned threads, F fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

class HnswlibAnchorImpl final : public HnswlibAnchor {
 public:
  HnswlibAnchorImpl(size_t dim, size_t n, size_t M, size_t efc, bool inner_product)
      : l2_(dim), ip_(dim),
        alg_(inner_product ? static_cast<hnswlib::SpaceInterface<float>*>(&ip_) : &l2_, n, M,
             efc, 100),
        dim_(dim) {}

  void Build(const float* data, size_t n, unsigned threads) override {
    alg_.addPoint(data, 0);
    ParallelFor(n - 1, threads, [&](size_t i) { alg_.addPoint(data + (i + 1) * dim_, i + 1); });
  }

  void Search(const float* queries, size_t nq, size_t k, size_t ef, unsigned threads,
              uint64_t* out) override {
    alg_.setEf(ef);
    ParallelFor(nq, threads, [&](size_t q) {
      auto pq = alg_.searchKnn(queries + q * dim_, k);
      size_t i = pq.size();
      for (size_t j = i; j < k; ++j) out[q * k + j] = ~uint64_t{0};
      while (!pq.empty()) {
        out[q * k + --i] = pq.top().second;
        pq.pop();
      }
    });
  }

  double MemoryBytes() const override {
    // hnswlib's own layout: level-0 block, per-element link pointer, level and lock.
    double mem = double(alg_.max_elements_) * alg_.size_data_per_element_ +
                 double(alg_.max_elements_) * (sizeof(void*) + sizeof(int) + sizeof(std::mutex));
    for (size_t i = 0; i < alg_.cur_element_count; ++i) {
      mem += double(alg_.element_levels_[i]) * alg_.size_links_per_element_;
    }
    return mem;
  }

 private:
  hnswlib::L2Space l2_;
  hnswlib::InnerProductSpace ip_;
  hnswlib::HierarchicalNSW<float> alg_;
  size_t dim_;
};

}  // namespace

std::unique_ptr<HnswlibAnchor> NewHnswlibAnchor(size_t dim, size_t n, size_t M, size_t efc,
                                                bool inner_product) {
  return std::make_unique<HnswlibAnchorImpl>(dim, n, M, efc, inner_product);
}

}  // namespace strata::vector::bench
