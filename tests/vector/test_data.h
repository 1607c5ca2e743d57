// Fixed-seed synthetic data for the vector tests: points on a low-dimensional
// clustered manifold mapped into `dim` dimensions plus noise (pure iid
// Gaussian data is degenerate for ANN: every distance looks the same), exact
// ground truth, recall@k.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <strata/vector/distance.h>
#include <strata/vector/index.h>

namespace strata::vector::testdata {

struct DataSet {
  size_t dim = 0;
  std::vector<float> base;     // n x dim
  std::vector<float> queries;  // nq x dim
  size_t n() const { return base.size() / dim; }
  size_t nq() const { return queries.size() / dim; }
};

inline DataSet MakeClustered(size_t n, size_t nq, size_t dim, uint32_t seed,
                             size_t latent = 48, size_t clusters = 32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> map(latent * dim);
  for (float& v : map) v = g(rng) / std::sqrt(float(latent));
  std::vector<float> centers(clusters * latent);
  for (float& v : centers) v = 3.0f * g(rng);
  std::vector<float> spread(clusters);
  for (float& s : spread) s = 0.5f + std::uniform_real_distribution<float>(0, 1)(rng);
  // Power-law cluster sizes.
  std::vector<double> w(clusters);
  for (size_t c = 0; c < clusters; ++c) w[c] = 1.0 / std::pow(double(c + 1), 0.7);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());

  auto point = [&](float* out) {
    size_t c = pick(rng);
    std::vector<float> z(latent);
    for (size_t t = 0; t < latent; ++t) z[t] = centers[c * latent + t] + spread[c] * g(rng);
    for (size_t j = 0; j < dim; ++j) {
      float s = 0;
      for (size_t t = 0; t < latent; ++t) s += z[t] * map[t * dim + j];
      out[j] = s + 0.15f * g(rng);
    }
  };
  DataSet ds;
  ds.dim = dim;
  ds.base.resize(n * dim);
  ds.queries.resize(nq * dim);
  for (size_t i = 0; i < n; ++i) point(ds.base.data() + i * dim);
  for (size_t i = 0; i < nq; ++i) point(ds.queries.data() + i * dim);
  return ds;
}

// Exact top-k row numbers (not ids) for each query, optionally over rows
// passing `keep`.
template <class Keep>
std::vector<std::vector<uint32_t>> GroundTruth(const DataSet& ds, size_t k, Metric metric,
                                               Keep keep) {
  std::vector<std::vector<uint32_t>> gt(ds.nq());
  std::vector<float> base = ds.base, queries = ds.queries;
  if (metric == Metric::kCosine) {
    for (size_t i = 0; i < ds.n(); ++i) NormalizeL2(base.data() + i * ds.dim, ds.dim);
    for (size_t i = 0; i < ds.nq(); ++i) NormalizeL2(queries.data() + i * ds.dim, ds.dim);
  }
  std::vector<std::pair<float, uint32_t>> all;
  for (size_t q = 0; q < ds.nq(); ++q) {
    all.clear();
    for (size_t i = 0; i < ds.n(); ++i) {
      if (!keep(i)) continue;
      all.push_back({Distance(metric, queries.data() + q * ds.dim, base.data() + i * ds.dim,
                              ds.dim),
                     uint32_t(i)});
    }
    size_t kk = std::min(k, all.size());
    std::partial_sort(all.begin(), all.begin() + kk, all.end());
    for (size_t i = 0; i < kk; ++i) gt[q].push_back(all[i].second);
  }
  return gt;
}

inline std::vector<std::vector<uint32_t>> GroundTruth(const DataSet& ds, size_t k, Metric metric) {
  return GroundTruth(ds, k, metric, [](size_t) { return true; });
}

// Mean fraction of the true top-k found; `id_to_row` maps a returned id back
// to its row. Queries with fewer than k true answers count what exists.
template <class IdToRow>
double Recall(const SearchResults& res, const std::vector<std::vector<uint32_t>>& gt, size_t k,
              IdToRow id_to_row) {
  double sum = 0;
  size_t counted = 0;
  for (size_t q = 0; q < gt.size(); ++q) {
    size_t want = std::min(k, gt[q].size());
    if (want == 0) continue;
    size_t hit = 0;
    for (size_t i = 0; i < std::min(k, res.k); ++i) {
      uint64_t id = res.Row(q)[i].id;
      if (id == kNoId) break;
      uint32_t row = id_to_row(id);
      for (size_t j = 0; j < want; ++j) hit += gt[q][j] == row;
    }
    sum += double(hit) / double(want);
    ++counted;
  }
  return counted ? sum / double(counted) : 1.0;
}

}  // namespace strata::vector::testdata
