// Collections: CRUD, ids, bad input, sealing and background indexing,
// persistence across reopen, deletes and compaction, merging, snapshots,
// payload indexes, concurrent readers and writers, and the manager.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <strata/vector/collection.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "testutil/testutil.h"
#include "vector/test_data.h"

namespace strata::vector {
namespace {

using json = nlohmann::json;

CollectionSchema Schema(uint32_t dim, IndexType type = IndexType::kFlat,
                        Metric metric = Metric::kL2) {
  CollectionSchema s;
  VectorFieldSchema f;
  f.index.type = type;
  f.index.dim = dim;
  f.index.metric = metric;
  f.index.hnsw_ef_construction = 64;
  s.vectors.push_back(f);
  return s;
}

CollectionOptions Inline(size_t segment_rows = 100'000) {
  CollectionOptions o;
  o.background = false;
  o.segment_rows = segment_rows;
  o.index_threads = 2;
  o.merge_small_rows = 0;  // tests that merge say so
  return o;
}

Point P(uint64_t id, std::vector<float> v, json payload = nullptr) {
  Point p;
  p.id = PointId::Number(id);
  p.vectors.push_back({"", std::move(v)});
  if (!payload.is_null()) p.payload = payload.dump();
  return p;
}

std::vector<float> Vec(size_t dim, uint64_t seed) {
  std::mt19937 rng(uint32_t(seed * 7919 + 1));
  std::normal_distribution<float> g;
  std::vector<float> v(dim);
  for (auto& x : v) x = g(rng);
  return v;
}

TEST(CollectionTest, UpsertGetSearchCountScroll) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", Schema(3), Inline()));
  std::vector<Point> pts = {P(1, {1, 0, 0}, {{"color", "red"}}),
                            P(2, {0, 1, 0}, {{"color", "blue"}}), P(3, {0, 0, 1}),
                            P(10, {1, 1, 0}, {{"color", "red"}, {"n", 5}})};
  uint64_t op = 0;
  ASSERT_OK(c->Upsert(pts, {}, &op));
  EXPECT_GT(op, 0u);
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(4u, n);

  std::vector<PointId> ids = {PointId::Number(10), PointId::Number(99), PointId::Number(1)};
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(ids, true, true));
  ASSERT_EQ(2u, recs.size());
  EXPECT_EQ(PointId::Number(10), recs[0].id);
  EXPECT_EQ(json::parse(recs[0].payload), json({{"color", "red"}, {"n", 5}}));
  ASSERT_EQ(1u, recs[0].vectors.size());
  EXPECT_EQ((std::vector<float>{1, 1, 0}), recs[0].vectors[0].values);
  EXPECT_EQ(op, recs[0].version);

  SearchRequest req;
  req.vector = {0.9f, 0.1f, 0};
  req.limit = 2;
  req.with_payload = true;
  ASSERT_OK_AND_ASSIGN(auto hits, c->Search(req));
  ASSERT_EQ(2u, hits.size());
  EXPECT_EQ(PointId::Number(1), hits[0].record.id);
  EXPECT_NEAR(std::sqrt(0.01f + 0.01f), hits[0].score, 1e-5);  // Euclidean distance, as Qdrant
  EXPECT_EQ("{\"color\":\"red\"}", hits[0].record.payload);

  req.filter = *ParseFilterExpression(R"(color == "blue")");
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  ASSERT_EQ(1u, hits.size());
  EXPECT_EQ(PointId::Number(2), hits[0].record.id);

  req.filter.reset();
  req.offset = 1;
  req.limit = 10;
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  EXPECT_EQ(3u, hits.size());
  req.offset = 0;
  req.score_threshold = 0.5f;
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  EXPECT_EQ(1u, hits.size());

  ScrollRequest sr;
  sr.limit = 3;
  ASSERT_OK_AND_ASSIGN(auto page, c->Scroll(sr));
  ASSERT_EQ(3u, page.points.size());
  EXPECT_EQ(PointId::Number(1), page.points[0].id);
  EXPECT_EQ(PointId::Number(3), page.points[2].id);
  ASSERT_TRUE(page.next_offset.has_value());
  EXPECT_EQ(PointId::Number(10), *page.next_offset);
  sr.offset = page.next_offset;
  ASSERT_OK_AND_ASSIGN(page, c->Scroll(sr));
  ASSERT_EQ(1u, page.points.size());
  EXPECT_FALSE(page.next_offset.has_value());

  ASSERT_OK_AND_ASSIGN(n, c->Count(*ParseFilterExpression(R"(color == "red")")));
  EXPECT_EQ(2u, n);
}

TEST(CollectionTest, UpsertReplacesAndDeletes) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", Schema(2), Inline()));
  ASSERT_OK(c->Upsert(std::vector<Point>{P(1, {0, 0}, {{"v", 1}}), P(2, {5, 5})}));
  // The same id twice in one batch: the last one wins.
  ASSERT_OK(c->Upsert(std::vector<Point>{P(1, {1, 1}, {{"v", 2}}), P(1, {9, 9}, {{"v", 3}})}));
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(2u, n);
  std::vector<PointId> one = {PointId::Number(1)};
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(one, true, true));
  ASSERT_EQ(1u, recs.size());
  EXPECT_EQ("{\"v\":3}", recs[0].payload);
  EXPECT_EQ((std::vector<float>{9, 9}), recs[0].vectors[0].values);
  SearchRequest req;
  req.vector = {0, 0};
  req.limit = 10;
  ASSERT_OK_AND_ASSIGN(auto hits, c->Search(req));
  ASSERT_EQ(2u, hits.size());  // the old version of 1 is gone
  EXPECT_EQ(PointId::Number(2), hits[0].record.id);

  size_t deleted = 0;
  std::vector<PointId> del = {PointId::Number(1), PointId::Number(1), PointId::Number(77)};
  ASSERT_OK(c->Delete(del, {}, &deleted));
  EXPECT_EQ(1u, deleted);
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  ASSERT_EQ(1u, hits.size());
  ASSERT_OK(c->DeleteByFilter(*ParseFilterExpression("$id == 2"), {}, &deleted));
  EXPECT_EQ(1u, deleted);
  ASSERT_OK_AND_ASSIGN(n, c->Count(std::nullopt));
  EXPECT_EQ(0u, n);
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  EXPECT_TRUE(hits.empty());
}

TEST(CollectionTest, UuidIdsAndNamedVectors) {
  testing::TempDir tmp;
  CollectionSchema s;
  VectorFieldSchema img, txt;
  img.name = "image";
  img.index.type = IndexType::kFlat;
  img.index.dim = 2;
  txt.name = "text";
  txt.index.type = IndexType::kFlat;
  txt.index.dim = 3;
  txt.index.metric = Metric::kCosine;
  s.vectors = {img, txt};
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline()));
  ASSERT_OK_AND_ASSIGN(PointId u1, PointId::Parse("00000000-0000-0000-0000-000000000001"));
  ASSERT_OK_AND_ASSIGN(PointId u2, PointId::Parse("ffffffff-0000-0000-0000-000000000000"));
  Point a;
  a.id = u1;
  a.vectors = {{"image", {1, 0}}, {"text", {0, 3, 4}}};
  Point b;
  b.id = u2;
  b.vectors = {{"image", {0, 1}}};  // no text vector
  Point c3 = P(5, {});
  c3.vectors = {{"text", {1, 0, 0}}};
  ASSERT_OK(c->Upsert(std::vector<Point>{a, b, c3}));
  SearchRequest req;
  req.vector_name = "text";
  req.vector = {0, 1, 1};
  req.limit = 5;
  req.with_vectors = true;
  ASSERT_OK_AND_ASSIGN(auto hits, c->Search(req));
  ASSERT_EQ(2u, hits.size());
  EXPECT_EQ(u1, hits[0].record.id);
  EXPECT_NEAR(0.98995f, hits[0].score, 1e-4);  // cosine similarity
  // Cosine vectors come back normalised (as Qdrant's do).
  for (const auto& nv : hits[0].record.vectors) {
    if (nv.name == "text") {
      EXPECT_NEAR(0.6f, nv.values[1], 1e-6);
    }
  }
  req.vector_name = "";
  EXPECT_STATUS_CODE(c->Search(req), StatusCode::kInvalidArgument);
  ScrollRequest sr;
  sr.limit = 10;
  ASSERT_OK_AND_ASSIGN(auto page, c->Scroll(sr));
  ASSERT_EQ(3u, page.points.size());
  EXPECT_EQ(PointId::Number(5), page.points[0].id);  // numbers first
  EXPECT_EQ(u1, page.points[1].id);
  EXPECT_EQ(u2, page.points[2].id);
}

TEST(CollectionTest, BadInputIsRejectedWholeAndLosesNothing) {
  testing::TempDir tmp;
  CollectionSchema s = Schema(3);
  s.payload = {{"source", PayloadType::kKeyword, false},
               {"ts", PayloadType::kTimestamp, false},
               {"tags", PayloadType::kKeyword, true}};
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline()));
  ASSERT_OK(c->Upsert(std::vector<Point>{P(1, {1, 2, 3}, {{"source", "a"}})}));
  const float nan = std::nanf("");
  struct Case {
    const char* what;
    Point bad;
  };
  std::vector<Case> cases = {
      {"dimension", P(2, {1, 2})},
      {"NaN", P(2, {1, nan, 3})},
      {"inf", P(2, {1, INFINITY, 3})},
      {"typed keyword", P(2, {1, 2, 3}, {{"source", 5}})},
      {"typed list", P(2, {1, 2, 3}, {{"source", {"a", "b"}}})},
      {"timestamp", P(2, {1, 2, 3}, {{"ts", "yesterday"}})},
      {"list element", P(2, {1, 2, 3}, {{"tags", {"a", 1}}})},
  };
  Point unknown = P(2, {1, 2, 3});
  unknown.vectors[0].name = "nope";
  cases.push_back({"unknown vector", unknown});
  Point not_object = P(2, {1, 2, 3});
  not_object.payload = "[1,2]";
  cases.push_back({"payload array", not_object});
  Point not_json = P(2, {1, 2, 3});
  not_json.payload = "{oops";
  cases.push_back({"payload json", not_json});
  Point novec = P(2, {});
  novec.vectors.clear();
  cases.push_back({"no vector", novec});
  for (auto& cs : cases) {
    std::vector<Point> batch = {P(3, {0, 0, 0}), cs.bad};
    Status st = c->Upsert(batch);
    EXPECT_EQ(StatusCode::kInvalidArgument, st.code()) << cs.what << ": " << st.ToString();
    EXPECT_NE(std::string::npos, st.message().find("point 2")) << st.message();
  }
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(1u, n);  // neither point 3 nor point 2
  SearchRequest req;
  req.vector = {1, 2};
  EXPECT_STATUS_CODE(c->Search(req), StatusCode::kInvalidArgument);
  req.vector = {1, nan, 2};
  EXPECT_STATUS_CODE(c->Search(req), StatusCode::kInvalidArgument);
  // Good typed values pass, including RFC 3339 and epoch-second timestamps.
  ASSERT_OK(c->Upsert(
      std::vector<Point>{P(4, {1, 1, 1}, {{"ts", "2024-05-01T10:00:00Z"}, {"tags", {"x", "y"}}}),
                         P(5, {1, 1, 1}, {{"ts", 1714557600}, {"tags", "x"}})}));
  ASSERT_OK_AND_ASSIGN(n, c->Count(*ParseFilterExpression(R"(ts >= "2024-05-01T10:00:00Z")")));
  EXPECT_EQ(2u, n);
  // The collection reopens with the good points only.
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, Collection::Open(tmp.Join("c"), Inline()));
  ASSERT_OK_AND_ASSIGN(n, c->Count(std::nullopt));
  EXPECT_EQ(3u, n);
}

TEST(CollectionTest, ReopenReplaysTheWal) {
  testing::TempDir tmp;
  {
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", Schema(4), Inline()));
    for (uint64_t i = 0; i < 300; ++i)
      ASSERT_OK(c->Upsert(std::vector<Point>{P(i, Vec(4, i), {{"i", i}})}));
    std::vector<PointId> del;
    for (uint64_t i = 0; i < 300; i += 3) del.push_back(PointId::Number(i));
    ASSERT_OK(c->Delete(del));
    ASSERT_OK(c->CreatePayloadIndex("i", PayloadType::kInteger));
  }
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(tmp.Join("c"), Inline()));
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(200u, n);
  ASSERT_OK_AND_ASSIGN(n, c->Count(*ParseFilterExpression("i < 30")));
  EXPECT_EQ(20u, n);
  auto info = c->Info();
  ASSERT_EQ(1u, info.payload_indexes.size());
  EXPECT_EQ("i", info.payload_indexes[0].first.name);
  std::vector<PointId> one = {PointId::Number(7)};
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(one, true, true));
  ASSERT_EQ(1u, recs.size());
  EXPECT_EQ(Vec(4, 7), recs[0].vectors[0].values);
}

// UpdatePoints edits payloads in place of the points (vectors kept), the
// payload index follows, a missing id changes nothing, and all of it is in
// the WAL: a reopened collection has the edited payloads.
TEST(CollectionTest, UpdatePointsEditsPayloadsDurably) {
  testing::TempDir tmp;
  auto count = [](Collection& c, const char* expr) {
    auto n = c.Count(*ParseFilterExpression(expr));
    EXPECT_TRUE(n.ok()) << expr;
    return n ? *n : size_t(0);
  };
  auto payload = [](Collection& c, uint64_t id) {
    std::vector<PointId> one = {PointId::Number(id)};
    auto recs = c.Get(one, true, true);
    EXPECT_TRUE(recs.ok() && recs->size() == 1) << id;
    return recs && recs->size() == 1 ? json::parse((*recs)[0].payload) : json();
  };
  using K = PointUpdate::Kind;
  auto U = [](K kind, json payload = nullptr, std::vector<std::string> keys = {},
              std::string key = "") {
    PointUpdate u;
    u.kind = kind;
    if (!payload.is_null()) u.payload = payload.dump();
    u.keys = std::move(keys);
    u.key = std::move(key);
    return u;
  };
  {
    // segment_rows 4: points 1-4 are sealed, 5-6 in the growing segment.
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", Schema(2), Inline(4)));
    ASSERT_OK(c->CreatePayloadIndex("color", PayloadType::kKeyword));
    for (uint64_t i = 1; i <= 6; ++i)
      ASSERT_OK(c->Upsert(
          std::vector<Point>{P(i, {float(i), 0}, {{"color", i % 2 ? "red" : "blue"}, {"n", i}})}));
    ASSERT_OK(c->WaitIdle());
    EXPECT_EQ(3u, count(*c, "color == \"red\""));

    PointUpdate set = U(K::kSetPayload, {{"color", "green"}, {"tag", "x"}});
    std::vector<PointId> ids = {PointId::Number(1), PointId::Number(6)};
    size_t updated = 0;
    uint64_t op = 0;
    ASSERT_OK(c->UpdatePoints(ids, set, {}, &updated, &op));
    EXPECT_EQ(2u, updated);
    EXPECT_EQ(json({{"color", "green"}, {"n", 1}, {"tag", "x"}}), payload(*c, 1));
    EXPECT_EQ(2u, count(*c, "color == \"green\""));
    EXPECT_EQ(2u, count(*c, "color == \"red\""));

    // A missing id: kNotFound, and point 2 is untouched.
    std::vector<PointId> with_missing = {PointId::Number(2), PointId::Number(99)};
    EXPECT_STATUS_CODE(c->UpdatePoints(with_missing, set), StatusCode::kNotFound);
    EXPECT_EQ("blue", payload(*c, 2)["color"]);

    // Overwrite, delete keys (nested too), clear; by filter.
    PointUpdate over = U(K::kOverwritePayload, {{"color", "red"}, {"meta", {{"a", 1}, {"b", 2}}}});
    ASSERT_OK(
        c->UpdatePointsByFilter(*ParseFilterExpression("color == \"blue\""), over, {}, &updated));
    EXPECT_EQ(2u, updated);  // 2 and 4 (6 is green now)
    EXPECT_EQ(4u, count(*c, "color == \"red\""));
    PointUpdate del = U(K::kDeletePayloadKeys, nullptr, {"meta.a", "nothing"});
    ASSERT_OK(c->UpdatePoints(std::vector<PointId>{PointId::Number(2)}, del));
    EXPECT_EQ(json({{"color", "red"}, {"meta", {{"b", 2}}}}), payload(*c, 2));
    PointUpdate clear = U(K::kClearPayload);
    ASSERT_OK(c->UpdatePoints(std::vector<PointId>{PointId::Number(3)}, clear));
    EXPECT_EQ(json::object(), payload(*c, 3));
    EXPECT_EQ(3u, count(*c, "color == \"red\""));

    // Nested set under `key`; array paths are refused.
    PointUpdate nested = U(K::kSetPayload, {{"c", 3}}, {}, "meta");
    ASSERT_OK(c->UpdatePoints(std::vector<PointId>{PointId::Number(2)}, nested));
    EXPECT_EQ(json({{"b", 2}, {"c", 3}}), payload(*c, 2)["meta"]);
    PointUpdate arr = U(K::kDeletePayloadKeys, nullptr, {"meta[0]"});
    EXPECT_STATUS_CODE(c->UpdatePoints(std::vector<PointId>{PointId::Number(2)}, arr),
                       StatusCode::kInvalidArgument);
    // A single-vector collection cannot drop its vector.
    PointUpdate dv = U(K::kDeleteVectors, nullptr, {""});
    EXPECT_STATUS_CODE(c->UpdatePoints(std::vector<PointId>{PointId::Number(2)}, dv),
                       StatusCode::kInvalidArgument);
  }
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(tmp.Join("c"), Inline(4)));
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(6u, n);
  EXPECT_EQ(json({{"color", "green"}, {"n", 1}, {"tag", "x"}}), payload(*c, 1));
  EXPECT_EQ(json({{"color", "red"}, {"meta", {{"b", 2}, {"c", 3}}}}), payload(*c, 2));
  EXPECT_EQ(json::object(), payload(*c, 3));
  EXPECT_EQ(3u, count(*c, "color == \"red\""));
  EXPECT_EQ(2u, count(*c, "color == \"green\""));
  std::vector<PointId> one = {PointId::Number(1)};
  ASSERT_OK_AND_ASSIGN(auto recs, c->Get(one, false, true));
  ASSERT_EQ(1u, recs.size());
  EXPECT_EQ((std::vector<float>{1, 0}), recs[0].vectors[0].values);
}

// Recall of a sealed, indexed collection against exact search.
double CollectionRecall(Collection& c, const testdata::DataSet& ds, size_t k, uint32_t ef) {
  auto gt = testdata::GroundTruth(ds, k, Metric::kL2);
  double sum = 0;
  for (size_t q = 0; q < ds.nq(); ++q) {
    SearchRequest req;
    req.vector.assign(ds.queries.begin() + q * ds.dim, ds.queries.begin() + (q + 1) * ds.dim);
    req.limit = k;
    req.ef = ef;
    auto hits = c.Search(req);
    EXPECT_TRUE(hits.ok());
    std::set<uint64_t> got;
    for (const auto& h : *hits) got.insert(h.record.id.hi);
    size_t hit = 0;
    for (uint32_t r : gt[q]) hit += got.count(r);
    sum += double(hit) / double(gt[q].size());
  }
  return sum / double(ds.nq());
}

TEST(CollectionTest, SealIndexPersistReopen) {
  testing::TempDir tmp;
  const auto ds = testdata::MakeClustered(3000, 50, 16, 11);
  {
    ASSERT_OK_AND_ASSIGN(
        auto c, Collection::Create(tmp.Join("c"), "c", Schema(16, IndexType::kHnsw), Inline(1000)));
    std::vector<Point> batch;
    for (uint64_t i = 0; i < ds.n(); ++i) {
      batch.push_back(
          P(i, std::vector<float>(ds.base.begin() + i * 16, ds.base.begin() + (i + 1) * 16),
            {{"mod", i % 10}}));
      if (batch.size() == 250) {
        ASSERT_OK(c->Upsert(batch));
        batch.clear();
      }
    }
    ASSERT_OK(c->Upsert(batch));
    auto info = c->Info();
    EXPECT_EQ(3000u, info.points);
    EXPECT_EQ(3000u, info.indexed_points);
    EXPECT_EQ(3u, info.segments);
    EXPECT_EQ(0u, info.pending_tasks);
    EXPECT_GE(CollectionRecall(*c, ds, 10, 64), 0.95);
  }
  EXPECT_TRUE(std::filesystem::exists(tmp.Join("c/MANIFEST")));
  std::vector<std::string> idx_files;
  for (const auto& e : std::filesystem::directory_iterator(tmp.Join("c/segments"))) {
    if (e.path().extension() == ".idx") idx_files.push_back(e.path().string());
  }
  ASSERT_EQ(3u, idx_files.size());
  ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(tmp.Join("c"), Inline(1000)));
  auto info = c->Info();
  EXPECT_EQ(3000u, info.points);
  EXPECT_EQ(3000u, info.indexed_points);
  EXPECT_GE(CollectionRecall(*c, ds, 10, 64), 0.95);
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(*ParseFilterExpression("mod == 3")));
  EXPECT_EQ(300u, n);
  // A damaged index file is rebuilt from the segment's vectors.
  c.reset();
  ASSERT_TRUE(testing::WriteFile(idx_files[0], "garbage"));
  ASSERT_OK_AND_ASSIGN(c, Collection::Open(tmp.Join("c"), Inline(1000)));
  info = c->Info();
  EXPECT_EQ(3000u, info.indexed_points);
  EXPECT_GE(CollectionRecall(*c, ds, 10, 64), 0.95);
}

TEST(CollectionTest, EveryIndexTypeServesACollection) {
  const auto ds = testdata::MakeClustered(2400, 30, 16, 3);
  for (IndexType t : {IndexType::kFlat, IndexType::kIvfFlat, IndexType::kIvfPq, IndexType::kHnsw,
                      IndexType::kDiskAnn}) {
    testing::TempDir tmp;
    CollectionSchema s = Schema(16, t);
    s.vectors[0].index.ivf_nlist = 16;
    s.vectors[0].index.pq_m = 8;
    s.vectors[0].index.diskann_r = 24;
    s.vectors[0].index.diskann_l = 48;
    {
      ASSERT_OK_AND_ASSIGN(auto c, Collection::Create(tmp.Join("c"), "c", s, Inline(1200)));
      std::vector<Point> batch;
      for (uint64_t i = 0; i < ds.n(); ++i) {
        batch.push_back(
            P(i, std::vector<float>(ds.base.begin() + i * 16, ds.base.begin() + (i + 1) * 16)));
      }
      ASSERT_OK(c->Upsert(batch));
      EXPECT_EQ(2400u, c->Info().indexed_points) << IndexTypeName(t);
    }
    ASSERT_OK_AND_ASSIGN(auto c, Collection::Open(tmp.Join("c"), Inline(1200)));
    SearchRequest req;
    req.vector.assign(ds.queries.begin(), ds.queries.begin() + 16);
    req.limit = 10;
    req.nprobe = 8;
    ASSERT_OK_AND_ASSIGN(auto hits, c->Search(req));
    EXPECT_EQ(10u, hits.size()) << IndexTypeName(t);
    EXPECT_GE(CollectionRecall(*c, ds, 10, 64), 0.85) << IndexTypeName(t);
  }
}

TEST(CollectionTest, DeletesAreCompactedAway) {
  testing::TempDir tmp;
  CollectionOptions o = Inline(1000);
  o.compact_deleted_ratio = 0;  // only explicit compaction
  o.merge_small_rows = 0;
  ASSERT_OK_AND_ASSIGN(auto c,
                       Collection::Create(tmp.Join("c"), "c", Schema(32, IndexType::kHnsw), o));
  std::vector<Point> batch;
  for (uint64_t i = 0; i < 4000; ++i) batch.push_back(P(i, Vec(32, i), {{"i", i}}));
  ASSERT_OK(c->Upsert(batch));
  const size_t mem_before = c->Info().memory_bytes;
  std::vector<PointId> del;
  for (uint64_t i = 0; i < 4000; ++i) {
    if (i % 4 != 0) del.push_back(PointId::Number(i));
  }
  ASSERT_OK(c->Delete(del));
  ASSERT_OK(c->Compact());
  auto info = c->Info();
  EXPECT_EQ(1000u, info.points);
  EXPECT_LT(info.memory_bytes, mem_before / 2)
      << "memory did not come back: " << mem_before << " -> " << info.memory_bytes;
  // Deleted points never come back, surviving ones keep their data.
  SearchRequest req;
  req.vector = Vec(32, 5);
  req.limit = 50;
  ASSERT_OK_AND_ASSIGN(auto hits, c->Search(req));
  for (const auto& h : hits) EXPECT_EQ(0u, h.record.id.hi % 4);
  req.vector = Vec(32, 8);
  req.limit = 1;
  req.with_payload = true;
  ASSERT_OK_AND_ASSIGN(hits, c->Search(req));
  ASSERT_EQ(1u, hits.size());
  EXPECT_EQ(8u, hits[0].record.id.hi);
  EXPECT_EQ("{\"i\":8}", hits[0].record.payload);
  // Still right after a reopen.
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, Collection::Open(tmp.Join("c"), o));
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(1000u, n);
  ASSERT_OK_AND_ASSIGN(n, c->Count(*ParseFilterExpression("i < 100")));
  EXPECT_EQ(25u, n);
}

TEST(CollectionTest, SmallSegmentsAreMerged) {
  testing::TempDir tmp;
  CollectionOptions o = Inline(200);
  o.merge_small_rows = 1000;
  o.merge_max_rows = 10000;
  ASSERT_OK_AND_ASSIGN(auto c,
                       Collection::Create(tmp.Join("c"), "c", Schema(8, IndexType::kHnsw), o));
  for (uint64_t b = 0; b < 10; ++b) {
    std::vector<Point> batch;
    for (uint64_t i = 0; i < 200; ++i) batch.push_back(P(b * 200 + i, Vec(8, b * 200 + i)));
    ASSERT_OK(c->Upsert(batch));
  }
  auto info = c->Info();
  EXPECT_EQ(2000u, info.points);
  EXPECT_LE(info.segments, 2u);
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, Collection::Open(tmp.Join("c"), o));
  ASSERT_OK_AND_ASSIGN(size_t n, c->Count(std::nullopt));
  EXPECT_EQ(2000u, n);
}

TEST(CollectionTest, SnapshotIsAConsistentCopy) {
  testing::TempDir tmp;
  ASSERT_OK_AND_ASSIGN(
      auto c, Collection::Create(tmp.Join("c"), "c", Schema(8, IndexType::kHnsw), Inline(500)));
  std::vector<Point> batch;
  for (uint64_t i = 0; i < 1200; ++i) batch.push_back(P(i, Vec(8, i), {{"i", i}}));
  ASSERT_OK(c->Upsert(batch));  // two sealed segments and 200 rows in the WAL
  std::vector<PointId> del = {PointId::Number(3), PointId::Number(1100)};
  ASSERT_OK(c->Delete(del));
  ASSERT_OK(c->Snapshot(tmp.Join("snap")));
  EXPECT_STATUS_CODE(c->Snapshot(tmp.Join("snap")), StatusCode::kAlreadyExists);
  // Later writes do not reach the snapshot.
  ASSERT_OK(c->Upsert(std::vector<Point>{P(5000, Vec(8, 5000))}));
  ASSERT_OK(c->Delete(std::vector<PointId>{PointId::Number(4)}));
  ASSERT_OK_AND_ASSIGN(auto s, Collection::Open(tmp.Join("snap"), Inline(500)));
  ASSERT_OK_AND_ASSIGN(size_t n, s->Count(std::nullopt));
  EXPECT_EQ(1198u, n);
  std::vector<PointId> probe = {PointId::Number(3), PointId::Number(4), PointId::Number(1100),
                                PointId::Number(5000)};
  ASSERT_OK_AND_ASSIGN(auto recs, s->Get(probe, false, false));
  ASSERT_EQ(1u, recs.size());
  EXPECT_EQ(PointId::Number(4), recs[0].id);
  ASSERT_OK_AND_ASSIGN(n, c->Count(std::nullopt));
  EXPECT_EQ(1198u, n);
}

TEST(CollectionTest, BackgroundIndexingWithConcurrentReadersAndWriters) {
  testing::TempDir tmp;
  CollectionOptions o;
  o.segment_rows = 1000;
  o.index_threads = 1;
  ASSERT_OK_AND_ASSIGN(auto c,
                       Collection::Create(tmp.Join("c"), "c", Schema(16, IndexType::kHnsw), o));
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::thread writer([&] {
    for (uint64_t b = 0; b < 20; ++b) {
      std::vector<Point> batch;
      for (uint64_t i = 0; i < 250; ++i)
        batch.push_back(P(b * 250 + i, Vec(16, b * 250 + i), {{"b", b}}));
      WriteOptions wo;
      wo.wait = (b % 2) == 0;
      if (!c->Upsert(batch, wo).ok()) ++errors;
      if (b % 5 == 4) {
        std::vector<PointId> del;
        for (uint64_t i = 0; i < 50; ++i) del.push_back(PointId::Number(b * 250 + i));
        if (!c->Delete(del).ok()) ++errors;
      }
    }
    done = true;
  });
  std::thread reader([&] {
    while (!done) {
      SearchRequest req;
      req.vector = Vec(16, 1);
      req.limit = 10;
      req.filter = *ParseFilterExpression("b > 2");
      auto hits = c->Search(req);
      if (!hits.ok()) ++errors;
      for (const auto& h : *hits) {
        if (h.record.id.hi < 750) ++errors;
      }
      if (!c->Count(std::nullopt).ok()) ++errors;
    }
  });
  writer.join();
  reader.join();
  EXPECT_EQ(0, errors.load());
  ASSERT_OK(c->WaitIdle());
  auto info = c->Info();
  EXPECT_EQ(5000u - 4 * 50, info.points);
  EXPECT_EQ(0u, info.pending_tasks);
  EXPECT_GE(info.indexed_points, 4000u);
}

TEST(CollectionManagerTest, CreateListDropReopen) {
  testing::TempDir tmp;
  {
    ASSERT_OK_AND_ASSIGN(auto m, CollectionManager::Open(tmp.path(), Inline()));
    ASSERT_OK(m->Create("alpha", Schema(2)).status());
    ASSERT_OK(m->Create("beta", Schema(3)).status());
    EXPECT_STATUS_CODE(m->Create("alpha", Schema(2)), StatusCode::kAlreadyExists);
    EXPECT_STATUS_CODE(m->Create("../evil", Schema(2)), StatusCode::kInvalidArgument);
    EXPECT_STATUS_CODE(m->Create(".hidden", Schema(2)), StatusCode::kInvalidArgument);
    EXPECT_STATUS_CODE(m->Create("", Schema(2)), StatusCode::kInvalidArgument);
    EXPECT_STATUS_CODE(m->Create("zero", Schema(0)), StatusCode::kInvalidArgument);
    EXPECT_FALSE(m->Exists("zero"));
    EXPECT_EQ((std::vector<std::string>{"alpha", "beta"}), m->List());
    ASSERT_OK_AND_ASSIGN(auto a, m->Get("alpha"));
    ASSERT_OK(a->Upsert(std::vector<Point>{P(1, {1, 2})}));
    ASSERT_OK_AND_ASSIGN(std::string snap, m->CreateSnapshot("alpha"));
    ASSERT_OK_AND_ASSIGN(auto snaps, m->ListSnapshots("alpha"));
    EXPECT_EQ(std::vector<std::string>{snap}, snaps);
    ASSERT_OK(m->Drop("beta"));
    EXPECT_STATUS_CODE(m->Get("beta"), StatusCode::kNotFound);
    EXPECT_STATUS_CODE(m->Drop("beta"), StatusCode::kNotFound);
    ASSERT_OK_AND_ASSIGN(auto r,
                         m->RestoreSnapshot(tmp.path() + "/.snapshots/alpha/" + snap, "restored"));
    ASSERT_OK_AND_ASSIGN(size_t n, r->Count(std::nullopt));
    EXPECT_EQ(1u, n);
    // A handle held across a drop stays usable for reads, refuses writes.
    ASSERT_OK(m->Drop("alpha"));
    EXPECT_STATUS_CODE(a->Upsert(std::vector<Point>{P(2, {1, 2})}), StatusCode::kUnavailable);
  }
  ASSERT_OK_AND_ASSIGN(auto m, CollectionManager::Open(tmp.path(), Inline()));
  EXPECT_EQ((std::vector<std::string>{"restored"}), m->List());
  EXPECT_FALSE(std::filesystem::exists(tmp.Join("beta")));
}

TEST(CollectionManagerTest, RenameMovesDataAndName) {
  testing::TempDir tmp;
  {
    ASSERT_OK_AND_ASSIGN(auto m, CollectionManager::Open(tmp.path(), Inline()));
    ASSERT_OK_AND_ASSIGN(auto a, m->Create("alpha", Schema(2)));
    ASSERT_OK(m->Create("beta", Schema(2)).status());
    ASSERT_OK(a->Upsert(std::vector<Point>{P(1, {1, 2}), P(2, {3, 4})}));
    EXPECT_STATUS_CODE(m->Rename("alpha", "beta"), StatusCode::kAlreadyExists);
    EXPECT_STATUS_CODE(m->Rename("nope", "gamma"), StatusCode::kNotFound);
    EXPECT_STATUS_CODE(m->Rename("alpha", "../evil"), StatusCode::kInvalidArgument);
    ASSERT_OK_AND_ASSIGN(auto g, m->Rename("alpha", "gamma"));
    EXPECT_EQ("gamma", g->name());
    EXPECT_EQ((std::vector<std::string>{"beta", "gamma"}), m->List());
    ASSERT_OK_AND_ASSIGN(size_t n, g->Count(std::nullopt));
    EXPECT_EQ(2u, n);
    // The old handle was closed: it refuses writes rather than writing to a moved directory.
    EXPECT_STATUS_CODE(a->Upsert(std::vector<Point>{P(3, {1, 2})}), StatusCode::kUnavailable);
    ASSERT_OK(g->Upsert(std::vector<Point>{P(3, {5, 6})}));
  }
  ASSERT_OK_AND_ASSIGN(auto m, CollectionManager::Open(tmp.path(), Inline()));
  EXPECT_EQ((std::vector<std::string>{"beta", "gamma"}), m->List());
  ASSERT_OK_AND_ASSIGN(auto g, m->Get("gamma"));
  EXPECT_EQ("gamma", g->name());
  ASSERT_OK_AND_ASSIGN(size_t n, g->Count(std::nullopt));
  EXPECT_EQ(3u, n);
  EXPECT_FALSE(std::filesystem::exists(tmp.Join("alpha")));
}

}  // namespace
}  // namespace strata::vector
