// The hnswlib anchor behind a plain interface, so only hnswlib_anchor.cc
// needs hnswlib's headers and AVX2 flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata::vector::bench {

class HnswlibAnchor {
 public:
  virtual ~HnswlibAnchor() = default;
  virtual void Build(const float* data, size_t n, unsigned threads) = 0;
  // out: nq x k labels, closest first, padded with ~0.
  virtual void Search(const float* queries, size_t nq, size_t k, size_t ef, unsigned threads,
                      uint64_t* out) = 0;
  virtual double MemoryBytes() const = 0;
};

// L2 space, or inner product (`inner_product`: the caller passes normalised
// vectors for cosine, as hnswlib's Python "cosine" space does); labels are row
// numbers.
std::unique_ptr<HnswlibAnchor> NewHnswlibAnchor(size_t dim, size_t n, size_t M, size_t efc,
                                                bool inner_product = false);

}  // namespace strata::vector::bench
