// Sparse vectors: the inverted index against brute force (pruning must not
// change the answer), collections with dense and sparse fields (WAL, sealed
// segments, reopen, compaction, snapshots, kill -9), the IDF modifier, bad
// input, vector updates, and the BM25 helper.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/vector/bm25.h>
#include <strata/vector/collection.h>

#include "testutil/testutil.h"
#include "vector/sparse_index.h"

namespace strata::vector {
namespace {

using internal::RowSet;
using internal::SparseColumn;

// A Zipf-like random sparse vector over `vocab` terms.
SparseVector RandomSparse(std::mt19937& rng, uint32_t vocab, size_t min_n, size_t max_n,
                          bool negative) {
  std::uniform_int_distribution<size_t> nd(min_n, max_n);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::map<uint32_t, float> m;
  const size_t n = nd(rng);
  while (m.size() < n) {
    const uint32_t t = uint32_t(std::pow(u(rng), 2.5f) * float(vocab));
    float w = 0.05f + u(rng);
    if (negative && u(rng) < 0.2f) w = -w;
    m[std::min(t, vocab - 1)] = w;
  }
  SparseVector v;
  for (auto [t, w] : m) {
    v.indices.push_back(t);
    v.values.push_back(w);
  }
  return v;
}

double Dot(const SparseVector& a, const SparseVector& b) {
  double s = 0;
  size_t i = 0, j = 0;
  while (i < a.indices.size() && j < b.indices.size()) {
    if (a.indices[i] == b.indices[j]) {
      s += double(a.values[i++]) * b.values[j++];
    } else if (a.indices[i] < b.indices[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return s;
}

bool SharesTerm(const SparseVector& a, const SparseVector& b) {
  for (uint32_t t : a.indices) {
    if (std::binary_search(b.indices.begin(), b.indices.end(), t)) return true;
  }
  return false;
}

// The k best scores by brute force among rows sharing a term with q.
std::vector<double> BruteTop(const std::vector<SparseVector>& rows, const SparseVector& q, size_t k,
                             const RowSet* allowed) {
  std::vector<double> s;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (allowed != nullptr && !allowed->Test(r)) continue;
    if (rows[r].indices.empty() || !SharesTerm(rows[r], q)) continue;
    s.push_back(Dot(rows[r], q));
  }
  std::sort(s.rbegin(), s.rend());
  if (s.size() > k) s.resize(k);
  return s;
}

TEST(SparseColumnTest, PrunedSearchEqualsBruteForce) {
  std::mt19937 rng(11);
  std::vector<SparseVector> rows;
  SparseColumn col;
  for (uint32_t r = 0; r < 4000; ++r) {
    SparseVector v = r % 13 == 0 ? SparseVector{} : RandomSparse(rng, 800, 3, 40, true);
    col.Append(r, v.indices.data(), v.values.data(), v.indices.size());
    rows.push_back(std::move(v));
  }
  std::bernoulli_distribution keep(0.3);
  for (int qi = 0; qi < 200; ++qi) {
    SparseVector q = RandomSparse(rng, 800, 1, 16, qi % 3 == 0);
    RowSet allowed(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      if (keep(rng)) allowed.Set(r);
    }
    for (const RowSet* a : std::vector<const RowSet*>{nullptr, &allowed}) {
      for (size_t k : {1, 10, 100}) {
        auto got = col.Search(q, k, a);
        auto want = BruteTop(rows, q, k, a);
        ASSERT_EQ(got.size(), want.size()) << "query " << qi << " k " << k;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_NEAR(got[i].second, want[i], 1e-4) << "query " << qi << " rank " << i;
          EXPECT_NEAR(Dot(rows[got[i].first], q), got[i].second, 1e-4);
          if (a != nullptr) EXPECT_TRUE(a->Test(got[i].first));
        }
      }
    }
  }
}

TEST(SparseColumnTest, EncodeDecodeRoundTrip) {
  std::mt19937 rng(3);
  SparseColumn col;
  for (uint32_t r = 0; r < 300; r += 1 + r % 3) {
    SparseVector v = RandomSparse(rng, 100, 1, 9, true);
    col.Append(r, v.indices.data(), v.values.data(), v.indices.size());
  }
  std::string bytes;
  col.Encode(310, &bytes);
  std::string_view in(bytes);
  SparseColumn back;
  ASSERT_TRUE(back.Decode(310, &in));
  EXPECT_TRUE(in.empty());
  for (uint32_t r = 0; r < 310; ++r) {
    auto a = col.Row(r), b = back.Row(r);
    EXPECT_EQ(a.indices, b.indices) << r;
    EXPECT_EQ(a.values, b.values) << r;
  }
  EXPECT_EQ(col.present(), back.present());
  std::string_view cut(bytes.data(), bytes.size() - 3);
  SparseColumn bad;
  EXPECT_FALSE(bad.Decode(310, &cut));
}

CollectionSchema HybridSchema(SparseModifier mod = SparseModifier::kNone) {
  CollectionSchema s;
  VectorFieldSchema d;
  d.name = "dense";
  d.index.type = IndexType::kHnsw;
  d.index.dim = 4;
  d.index.metric = Metric::kCosine;
  d.index.hnsw_ef_construction = 32;
  s.vectors.push_back(d);
  s.sparse.push_back(SparseFieldSchema{"text", mod});
  s.payload.push_back(PayloadFieldSchema{"group", PayloadType::kInteger, false});
  return s;
}

CollectionOptions Inline(size_t segment_rows) {
  CollectionOptions o;
  o.background = false;
  o.segment_rows = segment_rows;
  o.index_threads = 1;
  o.merge_small_rows = 0;
  return o;
}

Point HybridPoint(uint64_t id, const SparseVector& sv) {
  Point p;
  p.id = PointId::Number(id);
  p.vectors.push_back({"dense", {float(id % 7) + 1, 1, float(id % 3), 0.5f}});
  p.payload = nlohmann::json{{"group", int(id % 4)}}.dump();
  if (!sv.indices.empty()) p.sparse.push_back({"text", sv});
  return p;
}

SearchRequest SparseReq(const SparseVector& q, size_t limit) {
  SearchRequest r;
  r.vector_name = "text";
  r.sparse = q;
  r.limit = limit;
  return r;
}

// Every answer checked against brute force over the live points.
void ExpectMatchesBrute(const Collection& c, const std::map<uint64_t, SparseVector>& live,
                        const SparseVector& q, const std::optional<int>& group) {
  SearchRequest r = SparseReq(q, 10);
  if (group) r.filter = Filter::Match("group", FilterValue::Int(*group));
  ASSERT_OK_AND_ASSIGN(auto got, c.Search(r));
  std::vector<double> want;
  for (const auto& [id, v] : live) {
    if (group && int(id % 4) != *group) continue;
    if (!v.indices.empty() && SharesTerm(v, q)) want.push_back(Dot(v, q));
  }
  std::sort(want.rbegin(), want.rend());
  if (want.size() > 10) want.resize(10);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].score, want[i], 1e-4) << i;
    ASSERT_TRUE(live.count(got[i].record.id.hi));
    EXPECT_NEAR(Dot(live.at(got[i].record.id.hi), q), got[i].score, 1e-4);
  }
}

TEST(SparseCollectionTest, SurvivesSealReopenCompactAndSnapshot) {
  testing::TempDir tmp;
  const std::string dir = tmp.Join("c");
  std::mt19937 rng(5);
  std::map<uint64_t, SparseVector> live;
  {
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(dir, "c", HybridSchema(), Inline(100)));
    std::vector<Point> batch;
    for (uint64_t id = 0; id < 350; ++id) {
      SparseVector v = id % 10 == 9 ? SparseVector{} : RandomSparse(rng, 60, 1, 8, false);
      batch.push_back(HybridPoint(id, v));
      live[id] = v;
      if (batch.size() == 50) {
        ASSERT_OK(c->Upsert(batch));
        batch.clear();
      }
    }
    std::vector<PointId> gone;
    for (uint64_t id = 0; id < 350; id += 7) {
      gone.push_back(PointId::Number(id));
      live.erase(id);
    }
    ASSERT_OK(c->Delete(gone));
    EXPECT_GE(c->Info().segments, 3u);  // sealed segments and the growing one
    for (int i = 0; i < 20; ++i) {
      SparseVector q = RandomSparse(rng, 60, 1, 5, false);
      ExpectMatchesBrute(*c, live, q, std::nullopt);
      ExpectMatchesBrute(*c, live, q, i % 4);
    }
    ASSERT_OK_AND_ASSIGN(auto recs, c->Get(std::vector<PointId>{PointId::Number(1)}, false, true));
    ASSERT_EQ(recs.size(), 1u);
    ASSERT_EQ(recs[0].sparse.size(), 1u);
    EXPECT_EQ(recs[0].sparse[0].vector.indices, live[1].indices);
    EXPECT_EQ(recs[0].sparse[0].vector.values, live[1].values);
    ASSERT_OK(c->Snapshot(tmp.Join("snap")));
  }
  for (const std::string& d : {dir, tmp.Join("snap")}) {
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(d, Inline(100)));
    ASSERT_EQ(c->schema().sparse.size(), 1u);
    std::mt19937 qr(9);
    for (int i = 0; i < 10; ++i) {
      SparseVector q = RandomSparse(qr, 60, 1, 5, false);
      ExpectMatchesBrute(*c, live, q, std::nullopt);
    }
    ASSERT_OK(c->Compact(/*seal_growing=*/true));
    for (int i = 0; i < 10; ++i) {
      SparseVector q = RandomSparse(qr, 60, 1, 5, false);
      ExpectMatchesBrute(*c, live, q, i % 4);
    }
  }
}

TEST(SparseCollectionTest, IdfModifierScalesQueryWeights) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c",
                                                  HybridSchema(SparseModifier::kIdf), Inline(3)));
  // Term 1 in every point, term 2 in one of four.
  std::vector<Point> pts;
  for (uint64_t id = 1; id <= 4; ++id) {
    SparseVector v{{1}, {1.0f}};
    if (id == 2) v = SparseVector{{1, 2}, {1.0f, 2.0f}};
    pts.push_back(HybridPoint(id, v));
  }
  // Seals after 3 rows: the counts span a sealed and the growing segment.
  ASSERT_OK(c->Upsert(std::span<const Point>(pts.data(), 3)));
  ASSERT_OK(c->Upsert(std::span<const Point>(pts.data() + 3, 1)));
  EXPECT_EQ(c->Info().segments, 2u);
  auto idf = [](double n_docs, double df) {
    return std::log(1.0 + (n_docs - df + 0.5) / (df + 0.5));
  };
  ASSERT_OK_AND_ASSIGN(auto got, c->Search(SparseReq(SparseVector{{1, 2}, {1.0f, 1.0f}}, 4)));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].record.id.hi, 2u);
  EXPECT_NEAR(got[0].score, idf(4, 4) + 2 * idf(4, 1), 1e-5);
  EXPECT_NEAR(got[1].score, idf(4, 4), 1e-5);
  // A deleted point no longer counts.
  ASSERT_OK(c->Delete(std::vector<PointId>{PointId::Number(4)}));
  ASSERT_OK_AND_ASSIGN(got, c->Search(SparseReq(SparseVector{{2}, {1.0f}}, 4)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NEAR(got[0].score, 2 * idf(3, 1), 1e-5);
}

TEST(SparseCollectionTest, BadSparseInputIsRefused) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", HybridSchema(), Inline(100)));
  auto upsert = [&](SparseVector v, std::string name = "text") {
    Point p = HybridPoint(1, {});
    p.sparse.push_back({name, std::move(v)});
    return c->Upsert(std::vector<Point>{p});
  };
  EXPECT_EQ(upsert({{1, 1}, {1, 2}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(upsert({{1, 2}, {1}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(upsert({{1}, {NAN}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(upsert({{1}, {1}}, "nope").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(upsert({{1}, {1}}, "dense").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Info().points, 0u);  // nothing was written
  // Unsorted indices are accepted and stored sorted.
  ASSERT_OK(upsert({{9, 3, 5}, {0.9f, 0.3f, 0.5f}}));
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(std::vector<PointId>{PointId::Number(1)}, false, true));
  ASSERT_EQ(recs[0].sparse.size(), 1u);
  EXPECT_EQ(recs[0].sparse[0].vector.indices, (std::vector<uint32_t>{3, 5, 9}));
  // A dense query on the sparse field, a sparse query on the dense one.
  SearchRequest dense_on_sparse;
  dense_on_sparse.vector_name = "text";
  dense_on_sparse.vector = {1, 2, 3, 4};
  EXPECT_EQ(c->Search(dense_on_sparse).status().code(), StatusCode::kInvalidArgument);
  SearchRequest sparse_on_dense = SparseReq({{1}, {1}}, 3);
  sparse_on_dense.vector_name = "dense";
  EXPECT_EQ(c->Search(sparse_on_dense).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Search(SparseReq({{1, 1}, {1, 1}}, 3)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SparseCollectionTest, UpdateAndDeleteSparseVectors) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", HybridSchema(), Inline(100)));
  ASSERT_OK(c->Upsert(std::vector<Point>{HybridPoint(1, {{1}, {1}}), HybridPoint(2, {{2}, {1}})}));
  PointUpdate u;
  u.kind = PointUpdate::Kind::kUpdateVectors;
  u.sparse[PointId::Number(1)] = {{"text", SparseVector{{2}, {3.0f}}}};
  ASSERT_OK(c->UpdatePoints(std::vector<PointId>{PointId::Number(1)}, u));
  ASSERT_OK_AND_ASSIGN(auto got, c->Search(SparseReq({{2}, {1}}, 5)));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record.id.hi, 1u);
  EXPECT_FLOAT_EQ(got[0].score, 3.0f);
  ASSERT_OK_AND_ASSIGN(got, c->Search(SparseReq({{1}, {1}}, 5)));
  EXPECT_TRUE(got.empty());
  PointUpdate del;
  del.kind = PointUpdate::Kind::kDeleteVectors;
  del.keys = {"text"};
  ASSERT_OK(c->UpdatePoints(std::vector<PointId>{PointId::Number(2)}, del));
  ASSERT_OK_AND_ASSIGN(got, c->Search(SparseReq({{2}, {1}}, 5)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].record.id.hi, 1u);
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(std::vector<PointId>{PointId::Number(2)}, false, true));
  EXPECT_TRUE(recs[0].sparse.empty());
  EXPECT_EQ(recs[0].vectors.size(), 1u);  // the dense vector stays
}

TEST(SparseCollectionTest, SparseOnlyCollection) {
  testing::TempDir tmp;
  CollectionSchema s;
  s.sparse.push_back({"bm25", SparseModifier::kIdf});
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline(2)));
  Point p;
  p.id = PointId::Number(1);
  p.sparse.push_back({"bm25", {{4, 5}, {1, 1}}});
  Point q = p;
  q.id = PointId::Number(2);
  q.sparse[0].vector = {{5}, {1}};
  Point r = p;
  r.id = PointId::Number(3);
  r.sparse[0].vector = {{6}, {1}};
  ASSERT_OK(c->Upsert(std::vector<Point>{p, q, r}));
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, Collection::Open(tmp.Join("c"), Inline(2)));
  SearchRequest req;
  req.vector_name = "bm25";
  req.sparse = SparseVector{{4}, {1}};
  ASSERT_OK_AND_ASSIGN(auto got, c->Search(req));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].record.id.hi, 1u);
}

// The child writes batches (wait=false: in the page cache only), reports
// each acknowledged one, and is killed without closing anything.
TEST(SparseCollectionTest, KillNineKeepsAcknowledgedSparseVectors) {
  testing::TempDir tmp;
  const std::string dir = tmp.Join("c");
  {
    CollectionOptions o;
    o.segment_rows = 120;
    ASSERT_OK(Collection::Create(dir, "c", HybridSchema(), o).status());
  }
  int fds[2];
  ASSERT_EQ(0, ::pipe(fds));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    CollectionOptions o;
    o.segment_rows = 120;  // seals (and background rewrites) while writing
    auto c = Collection::Open(dir, o);
    if (!c.ok()) _exit(2);
    std::mt19937 rng(21);
    for (uint64_t b = 0; b < 10; ++b) {
      std::vector<Point> batch;
      for (uint64_t i = 0; i < 50; ++i)
        batch.push_back(HybridPoint(b * 50 + i, RandomSparse(rng, 50, 1, 6, false)));
      WriteOptions wo;
      wo.wait = false;
      if (!(*c)->Upsert(batch, wo).ok()) _exit(3);
      const uint64_t done = b + 1;
      if (::write(fds[1], &done, sizeof done) != ssize_t(sizeof done)) _exit(4);
    }
    ::pause();
    _exit(0);
  }
  ::close(fds[1]);
  uint64_t acked = 0, m = 0;
  while (acked < 10 && ::read(fds[0], &m, sizeof m) == ssize_t(sizeof m)) acked = m;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(acked, 10u);
  std::mt19937 rng(21);
  std::map<uint64_t, SparseVector> live;
  for (uint64_t id = 0; id < 500; ++id) live[id] = RandomSparse(rng, 50, 1, 6, false);
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(dir, Inline(120)));
  EXPECT_EQ(c->Info().points, 500u);
  ScrollRequest sr;
  sr.limit = 1000;
  sr.with_vectors = true;
  ASSERT_OK_AND_ASSIGN(auto all, c->Scroll(sr));
  ASSERT_EQ(all.points.size(), 500u);
  for (const auto& r : all.points) {
    ASSERT_EQ(r.sparse.size(), 1u) << r.id.hi;
    EXPECT_EQ(r.sparse[0].vector.indices, live[r.id.hi].indices) << r.id.hi;
  }
  std::mt19937 qr(4);
  for (int i = 0; i < 10; ++i) ExpectMatchesBrute(*c, live, RandomSparse(qr, 50, 1, 4, false), {});
}

TEST(Bm25Test, TokenizerWeightsAndIndexing) {
  EXPECT_EQ(Bm25Tokenize("The Quick, brown-fox! 42x"),
            (std::vector<std::string>{"quick", "brown", "fox", "42x"}));
  SparseVector q = Bm25QueryVector("fox fox dog");
  ASSERT_EQ(q.indices.size(), 2u);
  EXPECT_EQ(q.values, (std::vector<float>{1.0f, 1.0f}));
  // tf=2, len=4 = avg_len: 2 * 2.2 / (2 + 1.2).
  SparseVector d = Bm25DocumentVector("fox fox dog cat", 4.0);
  ASSERT_EQ(d.indices.size(), 3u);
  const auto fox = std::find(d.indices.begin(), d.indices.end(), Bm25TermId("fox"));
  ASSERT_NE(fox, d.indices.end());
  EXPECT_NEAR(d.values[size_t(fox - d.indices.begin())], 2 * 2.2 / 3.2, 1e-5);

  testing::TempDir tmp;
  CollectionSchema s = HybridSchema(SparseModifier::kIdf);
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline(100)));
  std::vector<Point> pts;
  const char* texts[] = {"red apples and green pears", "green tea", "apples apples apples", ""};
  for (uint64_t id = 0; id < 4; ++id) {
    Point p = HybridPoint(id, {});
    p.payload = nlohmann::json{{"body", texts[id]}}.dump();
    pts.push_back(p);
  }
  ASSERT_OK(c->Upsert(pts));
  EXPECT_EQ(Bm25IndexField(*c, "body", "nope").status().code(), StatusCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(auto res, Bm25IndexField(*c, "body", "text"));
  EXPECT_EQ(res.points, 3u);
  EXPECT_NEAR(res.avg_len, (4 + 2 + 3 + 0) / 4.0, 1e-9);
  SearchRequest r = SparseReq(Bm25QueryVector("apples"), 5);
  ASSERT_OK_AND_ASSIGN(auto got, c->Search(r));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record.id.hi, 2u);  // three occurrences in a short text
  EXPECT_EQ(got[1].record.id.hi, 0u);
}

// A point deleted between Bm25IndexField's read of the texts and its write
// is skipped: the others get their vectors, the deleted one stays deleted.
TEST(Bm25Test, PointDeletedDuringIndexingIsSkipped) {
  testing::TempDir tmp;
  CollectionSchema s = HybridSchema(SparseModifier::kIdf);
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline(100)));
  std::vector<Point> pts;
  const char* texts[] = {"red apples", "green apples", "apples and pears"};
  for (uint64_t id = 0; id < 3; ++id) {
    Point p = HybridPoint(id, {});
    p.payload = nlohmann::json{{"body", texts[id]}}.dump();
    pts.push_back(p);
  }
  ASSERT_OK(c->Upsert(pts));
  Bm25Options o;
  int calls = 0;
  o.after_read = [&] {
    ++calls;
    const PointId gone = PointId::Number(1);
    ASSERT_OK(c->Delete(std::span<const PointId>(&gone, 1)));
  };
  ASSERT_OK_AND_ASSIGN(auto res, Bm25IndexField(*c, "body", "text", o));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(res.points, 2u);
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(n, 2u);
  ASSERT_OK_AND_ASSIGN(auto got, c->Search(SparseReq(Bm25QueryVector("apples"), 5)));
  std::set<uint64_t> ids;
  for (const auto& h : got) ids.insert(h.record.id.hi);
  EXPECT_EQ(ids, (std::set<uint64_t>{0, 2}));
}

}  // namespace
}  // namespace strata::vector
