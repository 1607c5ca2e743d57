// Every index type against exact search on one fixed-seed data set (20k x 64):
// recall@10 unfiltered and at 50%, 10% and 1% filter selectivity,
// serialization round trips, removal, and bad input.
#include <strata/vector/index.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "testutil/testutil.h"
#include "vector/test_data.h"

namespace strata::vector {
namespace {

using testdata::DataSet;

constexpr size_t kN = 20000;
constexpr size_t kQ = 200;
constexpr size_t kDim = 64;
constexpr size_t kK = 10;

uint64_t IdOf(size_t row) { return uint64_t(row) * 3 + 7; }
uint32_t RowOf(uint64_t id) { return uint32_t((id - 7) / 3); }

const DataSet& Data() {
  static const DataSet ds = testdata::MakeClustered(kN, kQ, kDim, 20240601);
  return ds;
}

std::vector<uint64_t> Ids(size_t n) {
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = IdOf(i);
  return ids;
}

struct Config {
  std::string name;
  IndexParams params;
  SearchParams search;
  double min_recall;
  double min_filtered_recall;
};

std::vector<Config> Configs() {
  std::vector<Config> c;
  auto base = [](IndexType t) {
    IndexParams p;
    p.type = t;
    p.dim = kDim;
    p.num_threads = 2;
    return p;
  };
  {
    Config x{"FLAT", base(IndexType::kFlat), {}, 0.999, 0.999};
    c.push_back(x);
  }
  {
    Config x{"IVF_FLAT", base(IndexType::kIvfFlat), {}, 0.95, 0.95};
    x.params.ivf_nlist = 128;
    x.search.nprobe = 16;
    c.push_back(x);
  }
  {
    Config x{"IVF_PQ_disk", base(IndexType::kIvfPq), {}, 0.90, 0.90};
    x.params.ivf_nlist = 128;
    x.params.pq_m = 16;
    x.params.ivfpq_rerank = RerankStorage::kDisk;
    x.search.nprobe = 16;
    x.search.rerank = 100;
    c.push_back(x);
  }
  {
    Config x{"IVF_PQ_memory", base(IndexType::kIvfPq), {}, 0.90, 0.90};
    x.params.ivf_nlist = 128;
    x.params.pq_m = 8;
    x.params.ivfpq_rerank = RerankStorage::kMemory;
    x.search.nprobe = 16;
    x.search.rerank = 200;
    c.push_back(x);
  }
  {
    Config x{"HNSW", base(IndexType::kHnsw), {}, 0.95, 0.95};
    x.params.hnsw_m = 16;
    x.params.hnsw_ef_construction = 100;
    x.search.ef = 64;
    c.push_back(x);
  }
  {
    Config x{"HNSW_SQ8", base(IndexType::kHnsw), {}, 0.90, 0.90};
    x.params.hnsw_m = 16;
    x.params.hnsw_ef_construction = 100;
    x.params.hnsw_sq8 = true;
    x.search.ef = 64;
    c.push_back(x);
  }
  {
    Config x{"DISKANN", base(IndexType::kDiskAnn), {}, 0.95, 0.95};
    x.params.diskann_r = 32;
    x.params.diskann_l = 64;
    x.search.search_l = 100;
    c.push_back(x);
  }
  return c;
}

// Indexes are built once per test binary run and shared by the tests.
Index& Built(const Config& c) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Index>> cache;
  std::lock_guard<std::mutex> g(mu);
  auto it = cache.find(c.name);
  if (it != cache.end()) return *it->second;
  auto created = CreateIndex(c.params);
  EXPECT_TRUE(created.ok()) << created.error().ToString();
  auto idx = std::move(*created);
  auto t0 = std::chrono::steady_clock::now();
  auto ids = Ids(kN);
  Status s = idx->Add(kN, Data().base.data(), ids.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[%s] built %zu x %zu in %.2f s, memory %.2f MB, disk %.2f MB\n", c.name.c_str(),
              kN, kDim, secs, idx->MemoryBytes() / 1e6, idx->DiskBytes() / 1e6);
  Index& ref = *idx;
  cache[c.name] = std::move(idx);
  return ref;
}

const std::vector<std::vector<uint32_t>>& Truth() {
  static const auto gt = testdata::GroundTruth(Data(), kK, Metric::kL2);
  return gt;
}

// A random subset of rows at the given selectivity, as a bitset over ids.
struct Subset {
  std::vector<uint8_t> keep;  // by row
  std::unique_ptr<BitsetIdFilter> filter;
  std::vector<std::vector<uint32_t>> truth;
};

const Subset& SubsetAt(double selectivity) {
  static std::mutex mu;
  static std::map<double, std::unique_ptr<Subset>> cache;
  std::lock_guard<std::mutex> g(mu);
  auto& slot = cache[selectivity];
  if (slot) return *slot;
  slot = std::make_unique<Subset>();
  std::mt19937 rng(uint32_t(selectivity * 1e6) + 17);
  std::uniform_real_distribution<double> u(0, 1);
  slot->keep.resize(kN);
  slot->filter = std::make_unique<BitsetIdFilter>(IdOf(kN));
  for (size_t i = 0; i < kN; ++i) {
    slot->keep[i] = u(rng) < selectivity;
    if (slot->keep[i]) slot->filter->Set(IdOf(i));
  }
  const auto& keep = slot->keep;
  slot->truth = testdata::GroundTruth(Data(), kK, Metric::kL2, [&](size_t i) { return keep[i]; });
  return *slot;
}

// A filter that can neither count nor enumerate (a payload predicate).
class PredicateFilter final : public IdFilter {
 public:
  explicit PredicateFilter(const std::vector<uint8_t>* keep) : keep_(keep) {}
  bool Contains(uint64_t id) const override {
    if (id < 7 || (id - 7) % 3 != 0) return false;
    uint64_t row = (id - 7) / 3;
    return row < keep_->size() && (*keep_)[row];
  }

 private:
  const std::vector<uint8_t>* keep_;
};

void ExpectWellFormed(const SearchResults& r, const IdFilter* filter) {
  for (size_t q = 0; q < r.nq; ++q) {
    std::set<uint64_t> seen;
    float prev = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < r.Count(q); ++i) {
      const Neighbor& nb = r.Row(q)[i];
      EXPECT_TRUE(seen.insert(nb.id).second) << "duplicate id " << nb.id;
      EXPECT_GE(nb.distance, prev - 1e-4f) << "results out of order";
      prev = nb.distance;
      if (filter) EXPECT_TRUE(filter->Contains(nb.id)) << "id " << nb.id << " fails the filter";
    }
  }
}

class IndexTest : public ::testing::TestWithParam<Config> {};

TEST_P(IndexTest, RecallAt10) {
  const Config& c = GetParam();
  Index& idx = Built(c);
  EXPECT_EQ(kN, idx.Size());
  SearchResults res;
  SearchParams sp = c.search;
  sp.num_threads = 2;
  ASSERT_OK(idx.Search(kQ, Data().queries.data(), kK, sp, &res));
  ExpectWellFormed(res, nullptr);
  double recall = testdata::Recall(res, Truth(), kK, RowOf);
  std::printf("[%s] recall@10 = %.4f\n", c.name.c_str(), recall);
  EXPECT_GE(recall, c.min_recall);

  // Single-threaded search answers the same.
  SearchResults one;
  sp.num_threads = 1;
  ASSERT_OK(idx.Search(kQ, Data().queries.data(), kK, sp, &one));
  for (size_t i = 0; i < res.neighbors.size(); ++i) {
    EXPECT_EQ(res.neighbors[i].id, one.neighbors[i].id);
  }
}

TEST_P(IndexTest, FilteredRecallWithPlanner) {
  const Config& c = GetParam();
  Index& idx = Built(c);
  for (double sel : {0.5, 0.1, 0.01}) {
    const Subset& sub = SubsetAt(sel);
    SearchParams sp = c.search;
    sp.num_threads = 2;
    sp.filter = sub.filter.get();
    SearchResults res;
    ASSERT_OK(idx.Search(kQ, Data().queries.data(), kK, sp, &res));
    ExpectWellFormed(res, sub.filter.get());
    double recall = testdata::Recall(res, sub.truth, kK, RowOf);
    double est = idx.EstimateSelectivity(*sub.filter);
    std::printf("[%s] filtered recall@10 at %.0f%% = %.4f (estimated selectivity %.4f)\n",
                c.name.c_str(), sel * 100, recall, est);
    EXPECT_GE(recall, c.min_filtered_recall) << "selectivity " << sel;

    // The same filter as an opaque predicate (sampled estimate, scanned subset).
    PredicateFilter pred(&sub.keep);
    sp.filter = &pred;
    ASSERT_OK(idx.Search(kQ, Data().queries.data(), kK, sp, &res));
    ExpectWellFormed(res, &pred);
    double precall = testdata::Recall(res, sub.truth, kK, RowOf);
    EXPECT_GE(precall, c.min_filtered_recall) << "predicate filter, selectivity " << sel;
    EXPECT_NEAR(sel, idx.EstimateSelectivity(pred), 0.05);
  }
}

TEST_P(IndexTest, SerializeRoundTrip) {
  const Config& c = GetParam();
  Index& idx = Built(c);
  SearchParams sp = c.search;
  sp.num_threads = 2;
  const size_t nq = 50;
  SearchResults want;
  ASSERT_OK(idx.Search(nq, Data().queries.data(), kK, sp, &want));

  auto same = [&](const Index& other, const char* how) {
    EXPECT_EQ(idx.Size(), other.Size()) << how;
    EXPECT_EQ(idx.type(), other.type()) << how;
    SearchResults got;
    ASSERT_OK(other.Search(nq, Data().queries.data(), kK, sp, &got)) << how;
    ASSERT_EQ(want.neighbors.size(), got.neighbors.size());
    for (size_t i = 0; i < want.neighbors.size(); ++i) {
      EXPECT_EQ(want.neighbors[i].id, got.neighbors[i].id) << how << " at " << i;
      EXPECT_FLOAT_EQ(want.neighbors[i].distance, got.neighbors[i].distance) << how;
    }
    std::vector<float> v;
    ASSERT_OK(other.GetVector(IdOf(123), &v));
    std::vector<float> w;
    ASSERT_OK(idx.GetVector(IdOf(123), &w));
    EXPECT_EQ(w, v) << how;
  };

  std::string bytes;
  ASSERT_OK(idx.Serialize(&bytes));
  {
    ASSERT_OK_AND_ASSIGN(auto copy, Index::Deserialize(bytes));
    same(*copy, "Deserialize");
  }
  testing::TempDir dir;
  std::string path = dir.Join("index.bin");
  ASSERT_OK(idx.Save(path));
  {
    Index::LoadOptions lo;
    lo.verify_disk_checksum = true;
    ASSERT_OK_AND_ASSIGN(auto loaded, Index::Load(path, lo));
    same(*loaded, "Load");
    EXPECT_EQ(idx.DiskBytes(), loaded->DiskBytes());
  }

  // Damage: one flipped byte in the RAM section, or a truncated file.
  std::string bad = bytes;
  bad[bytes.size() / 3 < 200 ? 100 : 200] ^= 0x5a;
  EXPECT_STATUS_CODE(Index::Deserialize(bad), StatusCode::kCorruption);
  EXPECT_STATUS_CODE(Index::Deserialize(std::string_view(bytes).substr(0, bytes.size() / 2)),
                     StatusCode::kCorruption);
  EXPECT_STATUS_CODE(Index::Deserialize(std::string_view(bytes).substr(0, 20)),
                     StatusCode::kCorruption);
  ASSERT_TRUE(testing::WriteFile(path, std::string_view(bytes).substr(0, bytes.size() - 1)));
  auto truncated = Index::Load(path);
  if (idx.DiskBytes() > 0) {
    // The disk part is checked lazily unless asked: the RAM part still loads.
    Index::LoadOptions lo;
    lo.verify_disk_checksum = true;
    EXPECT_FALSE(Index::Load(path, lo).ok());
  } else {
    EXPECT_STATUS_CODE(truncated, StatusCode::kCorruption);
  }
  EXPECT_STATUS_CODE(Index::Load(dir.Join("missing")), StatusCode::kNotFound);
}

// A small index of the same type for tests that mutate it.
std::unique_ptr<Index> SmallIndex(const Config& c, size_t n) {
  IndexParams p = c.params;
  if (p.ivf_nlist) p.ivf_nlist = 16;
  auto created = CreateIndex(p);
  EXPECT_TRUE(created.ok());
  auto idx = std::move(*created);
  auto ids = Ids(n);
  Status s = idx->Add(n, Data().base.data(), ids.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return idx;
}

TEST_P(IndexTest, RemoveAndReAdd) {
  const Config& c = GetParam();
  const size_t n = 3000;
  auto idx = SmallIndex(c, n);
  std::vector<uint64_t> gone;
  for (size_t i = 0; i < n; i += 5) gone.push_back(IdOf(i));
  size_t removed = 0;
  ASSERT_OK(idx->Remove(gone.size(), gone.data(), &removed));
  EXPECT_EQ(gone.size(), removed);
  EXPECT_EQ(n - gone.size(), idx->Size());
  ASSERT_OK(idx->Remove(gone.size(), gone.data(), &removed));  // idempotent
  EXPECT_EQ(0u, removed);
  EXPECT_FALSE(idx->Contains(IdOf(0)));
  EXPECT_TRUE(idx->Contains(IdOf(1)));
  std::vector<float> v;
  EXPECT_STATUS_CODE(idx->GetVector(IdOf(0), &v), StatusCode::kNotFound);

  // Searching with the removed rows' own vectors never returns them.
  std::set<uint64_t> gone_set(gone.begin(), gone.end());
  SearchParams sp = c.search;
  SearchResults res;
  const size_t nq = 100;
  std::vector<float> queries;
  for (size_t i = 0; i < nq; ++i) {
    const float* row = Data().base.data() + (i * 5) * kDim;
    queries.insert(queries.end(), row, row + kDim);
  }
  ASSERT_OK(idx->Search(nq, queries.data(), kK, sp, &res));
  for (const Neighbor& nb : res.neighbors) {
    EXPECT_EQ(0u, gone_set.count(nb.id)) << "removed id " << nb.id << " returned";
  }
  // Deletions survive serialization.
  std::string bytes;
  ASSERT_OK(idx->Serialize(&bytes));
  ASSERT_OK_AND_ASSIGN(auto copy, Index::Deserialize(bytes));
  EXPECT_EQ(idx->Size(), copy->Size());
  EXPECT_FALSE(copy->Contains(IdOf(0)));

  // Re-adding an id gives it the new vector; adding a live id is refused.
  const float* fresh = Data().base.data() + (n + 1) * kDim;
  uint64_t id0 = IdOf(0);
  ASSERT_OK(idx->Add(1, fresh, &id0));
  EXPECT_TRUE(idx->Contains(id0));
  EXPECT_EQ(n - gone.size() + 1, idx->Size());
  ASSERT_OK(idx->Search(1, fresh, 1, sp, &res));
  EXPECT_EQ(id0, res.Row(0)[0].id);
  uint64_t live = IdOf(1);
  EXPECT_STATUS_CODE(idx->Add(1, fresh, &live), StatusCode::kAlreadyExists);
}

TEST_P(IndexTest, BadInput) {
  const Config& c = GetParam();
  auto idx = SmallIndex(c, 2000);
  const size_t before = idx->Size();
  std::vector<float> v(Data().base.begin() + 2000 * kDim, Data().base.begin() + 2002 * kDim);
  std::vector<uint64_t> ids = {900001, 900002};

  v[kDim + 5] = std::nanf("");
  EXPECT_STATUS_CODE(idx->Add(2, v.data(), ids.data()), StatusCode::kInvalidArgument);
  v[kDim + 5] = std::numeric_limits<float>::infinity();
  EXPECT_STATUS_CODE(idx->Add(2, v.data(), ids.data()), StatusCode::kInvalidArgument);
  EXPECT_EQ(before, idx->Size()) << "a rejected batch must add nothing";
  v[kDim + 5] = 0.5f;

  // Wrong dimension through the checked forms.
  EXPECT_STATUS_CODE(idx->Add(std::span<const float>(v.data(), 2 * kDim - 1), ids),
                     StatusCode::kInvalidArgument);
  SearchResults res;
  EXPECT_STATUS_CODE(idx->Search(std::span<const float>(v.data(), kDim + 3), kK, c.search, &res),
                     StatusCode::kInvalidArgument);
  // Duplicates: within a batch, and against live ids.
  std::vector<uint64_t> dup = {900001, 900001};
  EXPECT_STATUS_CODE(idx->Add(2, v.data(), dup.data()), StatusCode::kInvalidArgument);
  std::vector<uint64_t> clash = {900001, IdOf(3)};
  EXPECT_STATUS_CODE(idx->Add(2, v.data(), clash.data()), StatusCode::kAlreadyExists);
  EXPECT_STATUS_CODE(idx->Add(2, v.data(), nullptr), StatusCode::kInvalidArgument);
  EXPECT_EQ(before, idx->Size());

  std::vector<float> q(v.begin(), v.begin() + kDim);
  EXPECT_STATUS_CODE(idx->Search(1, q.data(), 0, c.search, &res), StatusCode::kInvalidArgument);
  q[0] = std::nanf("");
  EXPECT_STATUS_CODE(idx->Search(1, q.data(), kK, c.search, &res), StatusCode::kInvalidArgument);
  q[0] = 0;
  // A k larger than the index pads with kNoId.
  ASSERT_OK(idx->Search(1, q.data(), 5000, c.search, &res));
  EXPECT_LE(res.Count(0), before);
  EXPECT_EQ(kNoId, res.Row(0)[4999].id);
  // An empty filter answers nothing.
  BitsetIdFilter none(10);
  SearchParams sp = c.search;
  sp.filter = &none;
  ASSERT_OK(idx->Search(1, q.data(), kK, sp, &res));
  EXPECT_EQ(0u, res.Count(0));

  ASSERT_OK(idx->Add(std::span<const float>(v), ids));
  EXPECT_EQ(before + 2, idx->Size());
}

INSTANTIATE_TEST_SUITE_P(AllTypes, IndexTest, ::testing::ValuesIn(Configs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return info.param.name;
                         });

// ------------------------------------------------------------ single-type tests

TEST(IndexParamsTest, CreateValidates) {
  IndexParams p;
  p.type = IndexType::kHnsw;
  p.dim = 0;
  EXPECT_STATUS_CODE(CreateIndex(p), StatusCode::kInvalidArgument);
  p.dim = 10;
  p.hnsw_m = 1;
  EXPECT_STATUS_CODE(CreateIndex(p), StatusCode::kInvalidArgument);
  p.hnsw_m = 16;
  EXPECT_OK(CreateIndex(p));
  p.type = IndexType::kIvfPq;
  p.pq_m = 3;
  EXPECT_STATUS_CODE(CreateIndex(p), StatusCode::kInvalidArgument);
  p.pq_m = 5;
  p.pq_nbits = 4;
  EXPECT_STATUS_CODE(CreateIndex(p), StatusCode::kInvalidArgument);
  p.type = IndexType::kDiskAnn;
  p.pq_nbits = 8;
  p.diskann_alpha = 0.5f;
  EXPECT_STATUS_CODE(CreateIndex(p), StatusCode::kInvalidArgument);

  EXPECT_EQ(IndexType::kIvfPq, *ParseIndexType("ivf_pq"));
  EXPECT_STATUS_CODE(ParseIndexType("annoy"), StatusCode::kInvalidArgument);
  EXPECT_EQ(Metric::kL2, *ParseMetric("Euclid"));
  EXPECT_EQ(Metric::kInnerProduct, *ParseMetric("Dot"));
  EXPECT_EQ(Metric::kCosine, *ParseMetric("COSINE"));
  EXPECT_STATUS_CODE(ParseMetric("manhattan"), StatusCode::kInvalidArgument);
}

TEST(IvfTest, TrainingNeedsEnoughVectors) {
  IndexParams p;
  p.type = IndexType::kIvfFlat;
  p.dim = kDim;
  p.ivf_nlist = 64;
  ASSERT_OK_AND_ASSIGN(auto idx, CreateIndex(p));
  EXPECT_FALSE(idx->IsTrained());
  SearchResults res;
  // Searching an empty, untrained index is not an error: it has nothing.
  ASSERT_OK(idx->Search(1, Data().queries.data(), kK, {}, &res));
  EXPECT_EQ(0u, res.Count(0));
  auto ids = Ids(10);
  EXPECT_STATUS_CODE(idx->Add(10, Data().base.data(), ids.data()), StatusCode::kInvalidArgument);
  EXPECT_STATUS_CODE(idx->Train(10, Data().base.data()), StatusCode::kInvalidArgument);
  ASSERT_OK(idx->Train(5000, Data().base.data()));
  EXPECT_TRUE(idx->IsTrained());
  ASSERT_OK(idx->Add(10, Data().base.data(), ids.data()));
  EXPECT_EQ(10u, idx->Size());
}

TEST(IvfPqTest, MemoryIsAtMostAnEighthOfRawWithRecall90) {
  // Row offsets as ids (what the collection layer passes), raw vectors on disk.
  IndexParams p;
  p.type = IndexType::kIvfPq;
  p.dim = kDim;
  p.ivf_nlist = 128;
  p.pq_m = 16;
  p.ivfpq_rerank = RerankStorage::kDisk;
  p.num_threads = 2;
  ASSERT_OK_AND_ASSIGN(auto idx, CreateIndex(p));
  std::vector<uint64_t> ids(kN);
  for (size_t i = 0; i < kN; ++i) ids[i] = i;
  ASSERT_OK(idx->Add(kN, Data().base.data(), ids.data()));
  const size_t raw = kN * kDim * sizeof(float);
  std::printf("IVF_PQ memory %zu bytes = 1/%.1f of raw %zu; disk %zu bytes\n", idx->MemoryBytes(),
              double(raw) / idx->MemoryBytes(), raw, idx->DiskBytes());
  EXPECT_LE(idx->MemoryBytes() * 8, raw);
  SearchParams sp;
  sp.nprobe = 16;
  sp.rerank = 100;
  sp.num_threads = 2;
  SearchResults res;
  ASSERT_OK(idx->Search(kQ, Data().queries.data(), kK, sp, &res));
  double recall = testdata::Recall(res, Truth(), kK, [](uint64_t id) { return uint32_t(id); });
  std::printf("IVF_PQ (1/8 memory) recall@10 = %.4f\n", recall);
  EXPECT_GE(recall, 0.90);
}

TEST(HnswTest, FilterStrategies) {
  const Config c = Configs()[4];
  ASSERT_EQ("HNSW", c.name);
  Index& idx = Built(c);
  struct Case {
    double sel;
    FilterStrategy strategy;
    double min_recall;
    const char* name;
  };
  for (const Case& cs : {Case{0.5, FilterStrategy::kGraph, 0.95, "graph"},
                         Case{0.5, FilterStrategy::kAcorn, 0.90, "acorn"},
                         Case{0.1, FilterStrategy::kGraph, 0.90, "graph"},
                         Case{0.1, FilterStrategy::kAcorn, 0.90, "acorn"},
                         Case{0.01, FilterStrategy::kAcorn, 0.50, "acorn"},
                         Case{0.01, FilterStrategy::kExact, 0.999, "exact"}}) {
    const Subset& sub = SubsetAt(cs.sel);
    SearchParams sp = c.search;
    sp.filter = sub.filter.get();
    sp.filter_strategy = cs.strategy;
    sp.num_threads = 2;
    SearchResults res;
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_OK(idx.Search(kQ, Data().queries.data(), kK, sp, &res));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
    ExpectWellFormed(res, sub.filter.get());
    double recall = testdata::Recall(res, sub.truth, kK, RowOf);
    std::printf("[HNSW] %s at %.0f%%: recall@10 %.4f (%.1f ms for %zu queries)\n", cs.name,
                cs.sel * 100, recall, ms, kQ);
    EXPECT_GE(recall, cs.min_recall) << cs.name << " at " << cs.sel;
  }
}

TEST(SearchSubsetTest, IsExactOverTheCandidates) {
  const Config c = Configs()[4];
  Index& idx = Built(c);
  const Subset& sub = SubsetAt(0.1);
  std::vector<uint64_t> cand;
  for (size_t i = 0; i < kN; ++i) {
    if (sub.keep[i]) cand.push_back(IdOf(i));
  }
  cand.push_back(999999999);  // unknown ids are skipped
  SearchResults res;
  ASSERT_OK(idx.SearchSubset(kQ, Data().queries.data(), kK, cand.data(), cand.size(), &res, 2));
  EXPECT_GE(testdata::Recall(res, sub.truth, kK, RowOf), 0.999);
}

TEST(MetricTest, CosineAndInnerProduct) {
  const size_t n = 5000, nq = 100;
  DataSet ds = testdata::MakeClustered(n, nq, 32, 99);
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = i;
  for (Metric m : {Metric::kCosine, Metric::kInnerProduct}) {
    auto gt = testdata::GroundTruth(ds, kK, m);
    for (IndexType t : {IndexType::kFlat, IndexType::kHnsw, IndexType::kIvfFlat,
                        IndexType::kIvfPq, IndexType::kDiskAnn}) {
      IndexParams p;
      p.type = t;
      p.dim = 32;
      p.metric = m;
      p.ivf_nlist = 32;
      p.pq_m = 16;
      p.ivfpq_rerank = RerankStorage::kMemory;
      p.diskann_r = 32;
      p.num_threads = 2;
      ASSERT_OK_AND_ASSIGN(auto idx, CreateIndex(p));
      ASSERT_OK(idx->Add(n, ds.base.data(), ids.data()));
      SearchParams sp;
      sp.ef = 100;
      sp.nprobe = 8;
      sp.rerank = 100;
      sp.search_l = 100;
      SearchResults res;
      ASSERT_OK(idx->Search(nq, ds.queries.data(), kK, sp, &res));
      double recall = testdata::Recall(res, gt, kK, [](uint64_t id) { return uint32_t(id); });
      std::printf("[%s %s] recall@10 = %.4f\n", std::string(IndexTypeName(t)).c_str(),
                  std::string(MetricName(m)).c_str(), recall);
      // Inner product is not a metric; graph indexes lose a little there.
      EXPECT_GE(recall, m == Metric::kCosine ? 0.93 : 0.85)
          << IndexTypeName(t) << " " << MetricName(m);
      if (m == Metric::kCosine) {
        // Scores of a cosine index are cosine similarities.
        float score = ScoreFromDistance(m, res.Row(0)[0].distance);
        EXPECT_LE(score, 1.0001f);
        EXPECT_GE(score, -1.0001f);
      }
    }
  }
}

TEST(DiskAnnTest, SecondAddRebuildsOverAllRows) {
  IndexParams p;
  p.type = IndexType::kDiskAnn;
  p.dim = kDim;
  p.diskann_r = 24;
  p.diskann_l = 48;
  p.num_threads = 2;
  ASSERT_OK_AND_ASSIGN(auto idx, CreateIndex(p));
  auto ids = Ids(4000);
  ASSERT_OK(idx->Add(2000, Data().base.data(), ids.data()));
  ASSERT_OK(idx->Add(2000, Data().base.data() + 2000 * kDim, ids.data() + 2000));
  EXPECT_EQ(4000u, idx->Size());
  SearchResults res;
  SearchParams sp;
  ASSERT_OK(idx->Search(1, Data().base.data() + 3500 * kDim, 1, sp, &res));
  EXPECT_EQ(IdOf(3500), res.Row(0)[0].id);
  ASSERT_OK(idx->Search(1, Data().base.data() + 500 * kDim, 1, sp, &res));
  EXPECT_EQ(IdOf(500), res.Row(0)[0].id);
}

}  // namespace
}  // namespace strata::vector
