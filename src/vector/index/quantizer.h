// Private: k-means and the product quantizer shared by IVF_FLAT, IVF_PQ and
// DISKANN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <strata/core/status.h>
#include <strata/vector/distance.h>

#include "vector/index/index_base.h"

namespace strata::vector::internal {

struct KMeansOptions {
  size_t k = 0;
  int iterations = 20;
  size_t max_points_per_centroid = 256;  // training set is subsampled above k * this
  uint64_t seed = 42;
  unsigned threads = 1;
};

// Lloyd's k-means (L2). centroids gets k x d. Needs n >= 1; with n < k the
// spare centroids duplicate points (callers never see them win ties).
Status KMeans(const float* data, size_t n, size_t d, const KMeansOptions& opt,
              std::vector<float>* centroids);

// For each of n vectors, the centroid minimising `metric`'s distance.
void AssignNearest(const float* data, size_t n, const float* centroids, size_t k, size_t d,
                   Metric metric, unsigned threads, uint32_t* assign);

// Product quantizer with 8-bit codes: dim split into m sub-spaces of dsub =
// dim/m components, each coded by the nearest of 256 centroids.
class ProductQuantizer {
 public:
  void Init(size_t dim, size_t m) {
    dim_ = dim;
    m_ = m;
    dsub_ = dim / m;
  }
  size_t m() const { return m_; }
  size_t dsub() const { return dsub_; }
  size_t code_size() const { return m_; }
  bool trained() const { return !centroids_.empty(); }

  Status Train(const float* data, size_t n, uint64_t seed, unsigned threads);
  void Encode(const float* x, uint8_t* code) const;
  void EncodeBatch(const float* x, size_t n, uint8_t* codes, unsigned threads) const;
  void Decode(const uint8_t* code, float* x) const;
  // ADC table (m x 256): L2 -> ||q_j - c_j,c||^2; otherwise -<q_j, c_j,c>.
  void ComputeTable(const float* q, Metric metric, float* table) const;

  size_t MemoryBytes() const { return centroids_.capacity() * sizeof(float); }
  void Serialize(Writer* w) const;
  bool Deserialize(Reader* r);

 private:
  size_t dim_ = 0, m_ = 0, dsub_ = 0;
  std::vector<float> centroids_;  // m x 256 x dsub
};

}  // namespace strata::vector::internal
