// The filtered-search guarantee (issue 22): on generated Gaussian clusters, a
// filtered search through the collection returns min(k, matches) points and
// recall@10 >= 0.95 in every bucket, for filters correlated with the clusters
// (category = cluster id; a range on a coordinate-derived rank) and
// independent of them (a range on a random rank), alone and combined
// (category AND range), at 0.1, 1, 3, 5, 10, 20, 40 and 80% selectivity.
//
// Two sizes, one sealed HNSW segment each (the whole set walks one graph, as
// in the issue's report). The unit run: 30k x 128 L2 and 10k x 768 cosine.
// The issue's sizes, 100k x 128 and 50k x 768, are the FilteredRecallFull
// tests: DISABLED_ in the unit run, run by their own CTest entry with the
// label filtered_recall (`ctest -L filtered_recall`), which also forces the
// ACORN walk in every bucket (it may lose recall there, never come back
// short). Latency is printed (filtered / unfiltered), never asserted.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/vector/collection.h>
#include <strata/vector/distance.h>

#include "testutil/testutil.h"

namespace strata::vector {
namespace {

constexpr size_t kK = 10;
constexpr size_t kQueries = 100;
constexpr size_t kClusters = 200;

// Gaussian clusters with power-law sizes (so that unions of clusters hit any
// selectivity), each point's cluster, and queries drawn the same way.
struct ClusterData {
  size_t n = 0, dim = 0;
  std::vector<float> base, queries;
  std::vector<uint32_t> cluster;  // per point
  std::vector<uint32_t> proj;     // rank of the point along a fixed direction (correlated)
  std::vector<uint32_t> rnd;      // a random permutation rank (independent)
};

ClusterData MakeData(size_t n, size_t dim, uint32_t seed) {
  ClusterData d;
  d.n = n;
  d.dim = dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> centers(kClusters * dim);
  for (float& v : centers) v = g(rng);
  std::vector<double> w(kClusters);
  for (size_t c = 0; c < kClusters; ++c) w[c] = 1.0 / std::pow(double(c + 1), 0.8);
  std::discrete_distribution<uint32_t> pick(w.begin(), w.end());
  // Spread per cluster: neighbouring clusters overlap a little, as real embeddings do.
  const float sigma = 0.6f / std::sqrt(2.0f);
  auto point = [&](float* out) {
    uint32_t c = pick(rng);
    for (size_t j = 0; j < dim; ++j) out[j] = centers[c * dim + j] + sigma * g(rng);
    return c;
  };
  d.base.resize(n * dim);
  d.cluster.resize(n);
  for (size_t i = 0; i < n; ++i) d.cluster[i] = point(d.base.data() + i * dim);
  d.queries.resize(kQueries * dim);
  for (size_t q = 0; q < kQueries; ++q) point(d.queries.data() + q * dim);
  std::vector<float> dir(dim);
  for (float& v : dir) v = g(rng);
  std::vector<std::pair<float, uint32_t>> along(n);
  for (size_t i = 0; i < n; ++i) {
    float s = 0;
    for (size_t j = 0; j < dim; ++j) s += d.base[i * dim + j] * dir[j];
    along[i] = {s, uint32_t(i)};
  }
  std::sort(along.begin(), along.end());
  d.proj.resize(n);
  for (size_t r = 0; r < n; ++r) d.proj[along[r].second] = uint32_t(r);
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), rng);
  d.rnd.resize(n);
  for (size_t r = 0; r < n; ++r) d.rnd[perm[r]] = uint32_t(r);
  return d;
}

// Every point's rank by distance from each query (exact, over the whole set),
// so that a bucket's ground truth is the first k passing points.
std::vector<std::vector<uint32_t>> SortedByDistance(const ClusterData& d, Metric metric) {
  std::vector<float> base = d.base, queries = d.queries;
  if (metric == Metric::kCosine) {
    for (size_t i = 0; i < d.n; ++i) NormalizeL2(base.data() + i * d.dim, d.dim);
    for (size_t q = 0; q < kQueries; ++q) NormalizeL2(queries.data() + q * d.dim, d.dim);
  }
  std::vector<std::vector<uint32_t>> order(kQueries);
  std::vector<std::pair<float, uint32_t>> all(d.n);
  for (size_t q = 0; q < kQueries; ++q) {
    for (size_t i = 0; i < d.n; ++i) {
      all[i] = {Distance(metric, queries.data() + q * d.dim, base.data() + i * d.dim, d.dim),
                uint32_t(i)};
    }
    std::sort(all.begin(), all.end());
    order[q].resize(d.n);
    for (size_t i = 0; i < d.n; ++i) order[q][i] = all[i].second;
  }
  return order;
}

// Clusters whose union holds about `target` of the points: greedy from the
// largest, skipping those that overshoot. Returns the ids and the fraction.
std::vector<uint32_t> PickClusters(const ClusterData& d, double target, double* got) {
  std::vector<size_t> size(kClusters, 0);
  for (uint32_t c : d.cluster) ++size[c];
  std::vector<uint32_t> by_size(kClusters);
  std::iota(by_size.begin(), by_size.end(), 0u);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](uint32_t a, uint32_t b) { return size[a] > size[b]; });
  const double want = target * double(d.n);
  double have = 0;
  std::vector<uint32_t> out;
  for (uint32_t c : by_size) {
    if (size[c] == 0 || have + double(size[c]) > want * 1.15) continue;
    out.push_back(c);
    have += double(size[c]);
    if (have >= want * 0.9) break;
  }
  if (out.empty()) {  // the smallest non-empty cluster
    for (auto it = by_size.rbegin(); it != by_size.rend(); ++it) {
      if (size[*it] > 0) {
        out.push_back(*it);
        have = double(size[*it]);
        break;
      }
    }
  }
  *got = have / double(d.n);
  return out;
}

struct Bucket {
  std::string name;
  std::string filter;         // Qdrant JSON filter
  std::vector<uint8_t> pass;  // per point
  size_t matches = 0;
};

std::vector<Bucket> MakeBuckets(const ClusterData& d) {
  std::vector<Bucket> out;
  for (double s : {0.001, 0.01, 0.03, 0.05, 0.10, 0.20, 0.40, 0.80}) {
    const std::string pct = fmt::format("{:g}%", s * 100);
    double got = 0;
    {  // category = cluster id (correlated)
      auto cl = PickClusters(d, s, &got);
      std::set<uint32_t> in(cl.begin(), cl.end());
      Bucket b{
          fmt::format("category {} ({:.2f}%)", pct, got * 100),
          fmt::format(R"({{"must":[{{"key":"cat","match":{{"any":[{}]}}}}]}})", fmt::join(cl, ",")),
          {},
          0};
      for (size_t i = 0; i < d.n; ++i) b.pass.push_back(in.count(d.cluster[i]) ? 1 : 0);
      out.push_back(std::move(b));
    }
    const uint32_t cut = std::max<uint32_t>(1, uint32_t(std::lround(s * double(d.n))));
    {  // a range on a coordinate-derived rank (correlated with position)
      Bucket b{"proj range " + pct,
               fmt::format(R"({{"must":[{{"key":"proj","range":{{"lt":{}}}}}]}})", cut),
               {},
               0};
      for (size_t i = 0; i < d.n; ++i) b.pass.push_back(d.proj[i] < cut ? 1 : 0);
      out.push_back(std::move(b));
    }
    {  // a range on a random rank (independent)
      Bucket b{"rnd range " + pct,
               fmt::format(R"({{"must":[{{"key":"rnd","range":{{"lt":{}}}}}]}})", cut),
               {},
               0};
      for (size_t i = 0; i < d.n; ++i) b.pass.push_back(d.rnd[i] < cut ? 1 : 0);
      out.push_back(std::move(b));
    }
    {  // category AND range: about sqrt(s) each
      auto cl = PickClusters(d, std::min(1.0, std::sqrt(s)), &got);
      std::set<uint32_t> in(cl.begin(), cl.end());
      const uint32_t rcut =
          std::max<uint32_t>(1, uint32_t(std::lround(std::min(1.0, s / got) * double(d.n))));
      Bucket b{"category AND rnd " + pct,
               fmt::format(R"({{"must":[{{"key":"cat","match":{{"any":[{}]}}}},)"
                           R"({{"key":"rnd","range":{{"lt":{}}}}}]}})",
                           fmt::join(cl, ","), rcut),
               {},
               0};
      for (size_t i = 0; i < d.n; ++i)
        b.pass.push_back(in.count(d.cluster[i]) && d.rnd[i] < rcut ? 1 : 0);
      out.push_back(std::move(b));
    }
  }
  for (Bucket& b : out) b.matches = std::count(b.pass.begin(), b.pass.end(), uint8_t{1});
  return out;
}

void CheckGuarantee(size_t n, size_t dim, Metric metric, uint32_t seed, bool full) {
  testing::TempDir tmp("strata-filtered-guarantee");
  const ClusterData d = MakeData(n, dim, seed);
  CollectionSchema s;
  VectorFieldSchema f;
  f.index.type = IndexType::kHnsw;
  f.index.dim = uint32_t(dim);
  f.index.metric = metric;
  f.index.hnsw_m = 16;
  f.index.hnsw_ef_construction = 100;
  s.vectors.push_back(f);
  s.payload = {{"cat", PayloadType::kInteger, false},
               {"proj", PayloadType::kInteger, false},
               {"rnd", PayloadType::kInteger, false}};
  CollectionOptions o;  // the planner's defaults
  o.background = false;
  o.segment_rows = n;  // one sealed segment: the whole set is one graph
  o.merge_small_rows = 0;
  o.index_threads = 2;
  auto c = Collection::Create(tmp.Join("c"), "c", s, o);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  std::unique_ptr<Collection> coll = std::move(*c);
  std::vector<Point> batch;
  for (size_t i = 0; i < n; ++i) {
    Point p;
    p.id = PointId::Number(i);
    p.vectors.push_back(
        {"", std::vector<float>(d.base.begin() + i * dim, d.base.begin() + (i + 1) * dim)});
    p.payload =
        fmt::format(R"({{"cat":{},"proj":{},"rnd":{}}})", d.cluster[i], d.proj[i], d.rnd[i]);
    batch.push_back(std::move(p));
    if (batch.size() == 2000 || i + 1 == n) {
      ASSERT_OK(coll->Upsert(batch));
      batch.clear();
    }
  }
  ASSERT_EQ(n, coll->Info().indexed_points);
  const auto order = SortedByDistance(d, metric);

  // Mean recall@10, short results, seconds per query.
  struct Outcome {
    double recall = 0;
    size_t short_results = 0;
    double seconds = 0;
  };
  auto run = [&](const std::optional<Filter>& filter, const std::vector<uint8_t>* pass,
                 size_t matches, FilterStrategy strategy = FilterStrategy::kAuto) {
    Outcome out;
    double sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t q = 0; q < kQueries; ++q) {
      SearchRequest req;
      req.vector.assign(d.queries.begin() + q * dim, d.queries.begin() + (q + 1) * dim);
      req.limit = kK;
      req.filter = filter;
      req.filter_strategy = strategy;
      auto hits = coll->Search(req);
      EXPECT_TRUE(hits.ok()) << hits.error().ToString();
      if (!hits.ok()) continue;
      std::set<uint64_t> got;
      for (const auto& h : *hits) {
        if (pass) EXPECT_TRUE((*pass)[h.record.id.hi]) << h.record.id.hi << " fails the filter";
        got.insert(h.record.id.hi);
      }
      if (hits->size() < std::min(kK, matches)) ++out.short_results;
      size_t want = 0, hit = 0;
      for (uint32_t r : order[q]) {
        if (want == kK) break;
        if (pass && !(*pass)[r]) continue;
        ++want;
        hit += got.count(r);
      }
      sum += want == 0 ? 1.0 : double(hit) / double(want);
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                  double(kQueries);
    out.recall = sum / double(kQueries);
    return out;
  };

  run(std::nullopt, nullptr, n);  // warm-up
  const Outcome base = run(std::nullopt, nullptr, n);
  std::printf("%zu x %zu: unfiltered recall@10 %.4f, %.1f us/query\n", n, dim, base.recall,
              base.seconds * 1e6);
  EXPECT_GE(base.recall, 0.95);
  for (const Bucket& b : MakeBuckets(d)) {
    auto filter = ParseQdrantFilter(b.filter);
    ASSERT_TRUE(filter.ok()) << filter.error().ToString();
    const Outcome r = run(*filter, &b.pass, b.matches);
    std::printf("  %-28s matches %6zu  recall@10 %.4f  short %3zu  %7.1f us (%.2fx)\n",
                b.name.c_str(), b.matches, r.recall, r.short_results, r.seconds * 1e6,
                r.seconds / base.seconds);
    EXPECT_EQ(0u, r.short_results) << b.name << ": searches returned fewer than min(10, matches)";
    EXPECT_GE(r.recall, 0.95) << b.name;
    // The walk itself, forced (the planner would often scan instead): it may
    // lose recall, but never comes back short. Full size only (CI time).
    if (!full) continue;
    const Outcome w = run(*filter, &b.pass, b.matches, FilterStrategy::kAcorn);
    std::printf("  %-28s forced acorn: recall@10 %.4f  short %3zu  %7.1f us (%.2fx)\n", "",
                w.recall, w.short_results, w.seconds * 1e6, w.seconds / base.seconds);
    EXPECT_EQ(0u, w.short_results) << b.name << " (acorn)";
  }
}

TEST(FilteredGuaranteeTest, Clustered128L2) {
  CheckGuarantee(30'000, 128, Metric::kL2, 2201, /*full=*/false);
}

TEST(FilteredGuaranteeTest, Clustered768Cosine) {
  CheckGuarantee(10'000, 768, Metric::kCosine, 2202, /*full=*/false);
}

// The issue's sizes (ctest -L filtered_recall; tests/CMakeLists.txt).
TEST(FilteredRecallFull, DISABLED_Clustered100kx128L2) {
  CheckGuarantee(100'000, 128, Metric::kL2, 2201, /*full=*/true);
}

TEST(FilteredRecallFull, DISABLED_Clustered50kx768Cosine) {
  CheckGuarantee(50'000, 768, Metric::kCosine, 2202, /*full=*/true);
}

// Per-request knobs reach the index: IVF_PQ's re-rank depth (SearchRequest::
// rerank; the default 8k) and DISKANN's candidate list (search_list, or ef
// when only that is set). A shallow setting must cost recall against a deep
// one on the same data; were a knob ignored, both would give the same answer.
double KnobRecall(IndexType type, const std::function<void(SearchRequest*)>& set) {
  constexpr size_t n = 6000, dim = 32;
  static std::map<IndexType,
                  std::pair<std::unique_ptr<testing::TempDir>, std::unique_ptr<Collection>>>
      cache;
  static const ClusterData d = MakeData(n, dim, 77);
  static const auto order = SortedByDistance(d, Metric::kL2);
  auto& slot = cache[type];
  if (!slot.second) {
    slot.first = std::make_unique<testing::TempDir>("strata-knobs");
    CollectionSchema s;
    VectorFieldSchema f;
    f.index.type = type;
    f.index.dim = dim;
    f.index.ivfpq_rerank = RerankStorage::kMemory;
    s.vectors.push_back(f);
    CollectionOptions o;
    o.background = false;
    o.segment_rows = n;
    o.merge_small_rows = 0;
    o.index_threads = 2;
    auto c = Collection::Create(slot.first->Join("c"), "c", s, o);
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    if (!c.ok()) return 0;
    slot.second = std::move(*c);
    std::vector<Point> batch;
    for (size_t i = 0; i < n; ++i) {
      Point p;
      p.id = PointId::Number(i);
      p.vectors.push_back(
          {"", std::vector<float>(d.base.begin() + i * dim, d.base.begin() + (i + 1) * dim)});
      batch.push_back(std::move(p));
    }
    EXPECT_OK(slot.second->Upsert(batch));
    EXPECT_EQ(n, slot.second->Info().indexed_points);
  }
  double sum = 0;
  for (size_t q = 0; q < kQueries; ++q) {
    SearchRequest req;
    req.vector.assign(d.queries.begin() + q * dim, d.queries.begin() + (q + 1) * dim);
    req.limit = kK;
    set(&req);
    auto hits = slot.second->Search(req);
    EXPECT_TRUE(hits.ok());
    if (!hits.ok()) continue;
    std::set<uint64_t> got;
    for (const auto& h : *hits) got.insert(h.record.id.hi);
    size_t hit = 0;
    for (size_t j = 0; j < kK; ++j) hit += got.count(order[q][j]);
    sum += double(hit) / double(kK);
  }
  return sum / double(kQueries);
}

TEST(SearchKnobsTest, IvfPqRerankDepthPerRequest) {
  const double shallow = KnobRecall(IndexType::kIvfPq, [](SearchRequest* r) {
    r->nprobe = 64;
    r->rerank = 10;
  });
  const double deep = KnobRecall(IndexType::kIvfPq, [](SearchRequest* r) {
    r->nprobe = 64;
    r->rerank = 500;
  });
  std::printf("IVF_PQ recall@10: rerank 10 %.3f, rerank 500 %.3f\n", shallow, deep);
  EXPECT_GE(deep, 0.95);
  EXPECT_GT(deep, shallow + 0.05);
}

TEST(SearchKnobsTest, DiskAnnListSizePerRequest) {
  const double tiny =
      KnobRecall(IndexType::kDiskAnn, [](SearchRequest* r) { r->search_list = 10; });
  const double wide =
      KnobRecall(IndexType::kDiskAnn, [](SearchRequest* r) { r->search_list = 300; });
  // Qdrant clients only know hnsw_ef: it sizes DISKANN's list when search_list is unset.
  const double ef_tiny = KnobRecall(IndexType::kDiskAnn, [](SearchRequest* r) { r->ef = 10; });
  const double ef_wide = KnobRecall(IndexType::kDiskAnn, [](SearchRequest* r) { r->ef = 300; });
  std::printf("DISKANN recall@10: L 10 %.3f, L 300 %.3f; ef 10 %.3f, ef 300 %.3f\n", tiny, wide,
              ef_tiny, ef_wide);
  EXPECT_GT(wide, tiny + 0.02);
  EXPECT_GT(ef_wide, ef_tiny + 0.02);
  EXPECT_DOUBLE_EQ(tiny, ef_tiny);
  EXPECT_DOUBLE_EQ(wide, ef_wide);
}

}  // namespace
}  // namespace strata::vector
