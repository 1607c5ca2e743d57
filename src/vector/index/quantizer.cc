#include "vector/index/quantizer.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace strata::vector::internal {

namespace {
// Short vectors (PQ sub-spaces): score all centroids at once from a
// transposed copy, vectorised over centroids.
void AssignNearestTransposed(const float* data, size_t n, const float* centroids, size_t k,
                             size_t d, unsigned threads, uint32_t* assign) {
  const DistanceKernels& K = Kernels();
  std::vector<float> ct(k * d);
  for (size_t c = 0; c < k; ++c) {
    for (size_t t = 0; t < d; ++t) ct[t * k + c] = centroids[c * d + t];
  }
  ParallelFor(
      n, threads,
      [&](size_t i, unsigned) {
        thread_local std::vector<float> dist;
        dist.resize(k);
        K.l2_transposed(data + i * d, ct.data(), d, k, dist.data());
        assign[i] = static_cast<uint32_t>(std::min_element(dist.begin(), dist.end()) - dist.begin());
      },
      256);
}
}  // namespace

void AssignNearest(const float* data, size_t n, const float* centroids, size_t k, size_t d,
                   Metric metric, unsigned threads, uint32_t* assign) {
  const DistanceKernels& K = Kernels();
  const bool l2 = metric == Metric::kL2;
  if (l2 && d <= 16) {
    AssignNearestTransposed(data, n, centroids, k, d, threads, assign);
    return;
  }
  ParallelFor(
      n, threads,
      [&](size_t i, unsigned) {
        thread_local std::vector<float> dist;
        dist.resize(k);
        const float* x = data + i * d;
        if (l2) {
          K.l2_batch(x, centroids, k, d, dist.data());
        } else {
          K.ip_batch(x, centroids, k, d, dist.data());
          for (float& v : dist) v = -v;
        }
        assign[i] = static_cast<uint32_t>(std::min_element(dist.begin(), dist.end()) - dist.begin());
      },
      64);
}

Status KMeans(const float* data, size_t n, size_t d, const KMeansOptions& opt,
              std::vector<float>* centroids) {
  const size_t k = opt.k;
  if (n == 0 || k == 0) return Status::InvalidArgument("k-means needs points and k >= 1");
  std::mt19937_64 rng(opt.seed);

  // Subsample: k * max_points_per_centroid points are plenty (as FAISS does).
  std::vector<float> sample;
  size_t ns = n;
  const float* x = data;
  size_t cap = k * opt.max_points_per_centroid;
  if (n > cap) {
    std::vector<uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    for (size_t i = 0; i < cap; ++i) {
      size_t j = i + rng() % (n - i);
      std::swap(perm[i], perm[j]);
    }
    std::sort(perm.begin(), perm.begin() + cap);
    sample.resize(cap * d);
    for (size_t i = 0; i < cap; ++i) {
      std::memcpy(sample.data() + i * d, data + size_t(perm[i]) * d, d * sizeof(float));
    }
    ns = cap;
    x = sample.data();
  }

  // Initial centroids: distinct random points.
  centroids->assign(k * d, 0.0f);
  {
    std::vector<uint32_t> perm(ns);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (size_t c = 0; c < k; ++c) {
      std::memcpy(centroids->data() + c * d, x + size_t(perm[c % ns]) * d, d * sizeof(float));
    }
  }
  if (ns <= k) return Status::Ok();

  std::vector<uint32_t> assign(ns, UINT32_MAX), prev;
  std::vector<double> sums(k * d);
  std::vector<size_t> counts(k);
  for (int it = 0; it < opt.iterations; ++it) {
    prev = assign;
    AssignNearest(x, ns, centroids->data(), k, d, Metric::kL2, opt.threads, assign.data());
    if (it > 0 && assign == prev) break;
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(counts.begin(), counts.end(), 0);
    for (size_t i = 0; i < ns; ++i) {
      uint32_t c = assign[i];
      ++counts[c];
      double* s = sums.data() + size_t(c) * d;
      const float* v = x + i * d;
      for (size_t t = 0; t < d; ++t) s[t] += v[t];
    }
    for (size_t c = 0; c < k; ++c) {
      if (counts[c] == 0) continue;
      float* cen = centroids->data() + c * d;
      double inv = 1.0 / double(counts[c]);
      for (size_t t = 0; t < d; ++t) cen[t] = float(sums[c * d + t] * inv);
    }
    // Empty clusters take half of a big one: copy its centroid and push the two
    // apart symmetrically (FAISS's split).
    for (size_t c = 0; c < k; ++c) {
      if (counts[c] != 0) continue;
      size_t big = size_t(std::max_element(counts.begin(), counts.end()) - counts.begin());
      if (counts[big] < 2) break;
      float* dst = centroids->data() + c * d;
      float* src = centroids->data() + big * d;
      for (size_t t = 0; t < d; ++t) {
        float eps = (t % 2 == 0) ? 1.0f / 1024 : -1.0f / 1024;
        dst[t] = src[t] * (1 + eps);
        src[t] = src[t] * (1 - eps);
      }
      counts[c] = counts[big] / 2;
      counts[big] -= counts[c];
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- PQ
// centroids_ is stored transposed per sub-space, [j][t][c] with c in 0..255,
// so a table row (256 distances) is a vectorisable loop over contiguous c.

Status ProductQuantizer::Train(const float* data, size_t n, uint64_t seed, unsigned threads) {
  if (n == 0) return Status::InvalidArgument("product quantizer training needs vectors");
  constexpr size_t kMaxTrain = 32768;  // 128 points per centroid
  std::vector<uint32_t> pick(n);
  std::iota(pick.begin(), pick.end(), 0u);
  if (n > kMaxTrain) {
    std::mt19937_64 rng(seed ^ 0x5bd1e995);
    for (size_t i = 0; i < kMaxTrain; ++i) std::swap(pick[i], pick[i + rng() % (n - i)]);
    pick.resize(kMaxTrain);
  }
  const size_t ns = pick.size();
  centroids_.assign(m_ * dsub_ * 256, 0.0f);
  FirstError err;
  ParallelFor(m_, threads, [&](size_t j, unsigned) {
    std::vector<float> sub(ns * dsub_);
    for (size_t i = 0; i < ns; ++i) {
      std::memcpy(sub.data() + i * dsub_, data + size_t(pick[i]) * dim_ + j * dsub_,
                  dsub_ * sizeof(float));
    }
    KMeansOptions o;
    o.k = 256;
    o.iterations = 12;
    o.seed = seed + j;
    o.threads = 1;
    std::vector<float> cen;
    Status s = KMeans(sub.data(), ns, dsub_, o, &cen);
    if (!s.ok()) {
      err.Set(s);
      return;
    }
    float* dst = centroids_.data() + j * dsub_ * 256;
    for (size_t c = 0; c < 256; ++c) {
      for (size_t t = 0; t < dsub_; ++t) dst[t * 256 + c] = cen[c * dsub_ + t];
    }
  });
  return err.Take();
}

void ProductQuantizer::Encode(const float* x, uint8_t* code) const {
  const DistanceKernels& K = Kernels();
  float dist[256];
  for (size_t j = 0; j < m_; ++j) {
    K.l2_transposed(x + j * dsub_, centroids_.data() + j * dsub_ * 256, dsub_, 256, dist);
    code[j] = static_cast<uint8_t>(std::min_element(dist, dist + 256) - dist);
  }
}

void ProductQuantizer::EncodeBatch(const float* x, size_t n, uint8_t* codes,
                                   unsigned threads) const {
  ParallelFor(
      n, threads, [&](size_t i, unsigned) { Encode(x + i * dim_, codes + i * m_); }, 256);
}

void ProductQuantizer::Decode(const uint8_t* code, float* x) const {
  for (size_t j = 0; j < m_; ++j) {
    const float* cen = centroids_.data() + j * dsub_ * 256;
    for (size_t t = 0; t < dsub_; ++t) x[j * dsub_ + t] = cen[t * 256 + code[j]];
  }
}

void ProductQuantizer::ComputeTable(const float* q, Metric metric, float* table) const {
  const DistanceKernels& K = Kernels();
  const bool l2 = metric == Metric::kL2;
  for (size_t j = 0; j < m_; ++j) {
    const float* cen = centroids_.data() + j * dsub_ * 256;
    float* out = table + j * 256;
    if (l2) {
      K.l2_transposed(q + j * dsub_, cen, dsub_, 256, out);
    } else {
      K.ip_transposed(q + j * dsub_, cen, dsub_, 256, out);
      for (size_t c = 0; c < 256; ++c) out[c] = -out[c];
    }
  }
}

void ProductQuantizer::Serialize(Writer* w) const {
  w->Put<uint64_t>(m_);
  w->PutVec(centroids_);
}

bool ProductQuantizer::Deserialize(Reader* r) {
  uint64_t m;
  if (!r->Get(&m) || m != m_) return false;
  if (!r->GetVec(&centroids_)) return false;
  return centroids_.empty() || centroids_.size() == m_ * dsub_ * 256;
}

}  // namespace strata::vector::internal
