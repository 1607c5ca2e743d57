// Sparse vectors through the Qdrant API (collection config, upsert, search,
// query with `using`, prefetch + fusion, retrieve with vectors, bad input),
// Strata's BM25 routes, and the hybrid test: on a generated corpus with known
// relevant documents, dense + BM25 fused with RRF beats either alone on
// recall@10.
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qdrant/qdrant_fixture.h"

namespace strata::qdrant {
namespace {

class QdrantSparseTest : public QdrantHandlerTest {
 protected:
  void MakeHybrid() {
    ExpectOk(Call("PUT", "/collections/h", R"({"vectors": {"d": {"size": 2, "distance": "Dot"}},
        "sparse_vectors": {"s": {"index": {"on_disk": false}}, "idf": {"modifier": "idf"}}})"));
    ExpectOk(Call("PUT", "/collections/h/points?wait=true", R"({"points": [
        {"id": 1, "vector": {"d": [1, 0], "s": {"indices": [1, 2], "values": [1.0, 0.5]}}},
        {"id": 2, "vector": {"d": [0, 1], "s": {"indices": [2, 3], "values": [2.0, 1.0]}}},
        {"id": 3, "vector": {"d": [0.5, 0.5], "s": {"indices": [3], "values": [4.0]}}},
        {"id": 4, "vector": {"d": [0.9, 0.1]}, "payload": {"k": "x"}}
        ]})"));
  }
  static std::vector<int> Ids(const json& points) {
    std::vector<int> out;
    for (const auto& p : points) out.push_back(p["id"].get<int>());
    return out;
  }
};

TEST_F(QdrantSparseTest, ConfigUpsertSearchAndRetrieve) {
  MakeHybrid();
  json info = ExpectOk(Call("GET", "/collections/h"));
  const json& sv = info["config"]["params"]["sparse_vectors"];
  ASSERT_TRUE(sv.contains("s")) << info.dump();
  EXPECT_EQ(sv["idf"]["modifier"], "idf");
  // query with `using` a sparse field: dot products 1*0.5 (id 1), 1*2 (id 2).
  json r = ExpectOk(Call("POST", "/collections/h/points/query",
                         R"({"query": {"indices": [2], "values": [1]}, "using": "s"})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{2, 1}));
  EXPECT_FLOAT_EQ(r["points"][0]["score"].get<float>(), 2.0f);
  // {nearest: sparse}, score_threshold, and the legacy search form.
  r = ExpectOk(Call("POST", "/collections/h/points/query",
                    R"({"query": {"nearest": {"indices": [2, 3], "values": [1, 1]}}, "using": "s",
                        "score_threshold": 2.5})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{3, 2}));
  r = ExpectOk(Call("POST", "/collections/h/points/search",
                    R"({"vector": {"name": "s", "vector": {"indices": [1], "values": [2]}},
                        "limit": 3})"));
  EXPECT_EQ(Ids(r), (std::vector<int>{1}));
  // Retrieve returns the sparse vector next to the dense one.
  r = ExpectOk(Call("POST", "/collections/h/points", R"({"ids": [2, 4], "with_vector": true})"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["vector"]["s"]["indices"], json::array({2, 3}));
  EXPECT_EQ(r[0]["vector"]["s"]["values"], json::array({2.0, 1.0}));
  EXPECT_FALSE(r[1]["vector"].contains("s"));
  // Fusion of a dense and a sparse prefetch: id 1 is first in dense and
  // second in sparse; RRF (k = 2): 1/3 + 1/4.
  r = ExpectOk(Call("POST", "/collections/h/points/query", R"({
      "prefetch": [{"query": [1, 0], "using": "d", "limit": 3},
                   {"query": {"indices": [2], "values": [1]}, "using": "s", "limit": 3}],
      "query": {"fusion": "rrf"}, "limit": 2})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{1, 2}));
  EXPECT_NEAR(r["points"][0]["score"].get<double>(), 1.0 / 3 + 1.0 / 4, 1e-6);
  // Re-scoring a dense prefetch with the sparse vector.
  r = ExpectOk(Call("POST", "/collections/h/points/query", R"({
      "prefetch": {"query": [1, 0], "using": "d", "limit": 2},
      "query": {"indices": [1, 2], "values": [1, 1]}, "using": "s"})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{1}));  // id 4 has no sparse vector
}

TEST_F(QdrantSparseTest, BadSparseRequestsAnswer400) {
  MakeHybrid();
  ExpectError(
      Call("PUT", "/collections/h/points",
           R"({"points": [{"id": 9, "vector": {"s": {"indices": [1, 1], "values": [1, 2]}}}]})"),
      400, "unique");
  ExpectError(
      Call("PUT", "/collections/h/points",
           R"({"points": [{"id": 9, "vector": {"s": {"indices": [1], "values": [1, 2]}}}]})"),
      400, "same length");
  ExpectError(Call("PUT", "/collections/h/points",
                   R"({"points": [{"id": 9, "vector": {"s": {"indices": [-1], "values": [1]}}}]})"),
              400, "unsigned");
  ExpectError(
      Call("POST", "/collections/h/points/query", R"({"query": {"indices": [1], "values": [1]}})"),
      400, "using");
  ExpectError(Call("POST", "/collections/h/points/query",
                   R"({"query": {"recommend": {"positive": [1]}}, "using": "s"})"),
              400, "sparse");
  ExpectError(Call("POST", "/collections/h/points/query", R"({"query": [1, 0], "using": "s"})"),
              400, "sparse");
  // Sparse index options we cannot keep are refused, not ignored.
  ExpectError(Call("PUT", "/collections/x",
                   R"({"vectors": {}, "sparse_vectors": {"s": {"index": {"on_disk": true}}}})"),
              400, "on_disk");
  ExpectError(Call("PUT", "/collections/x",
                   R"({"sparse_vectors": {"s": {"index": {"datatype": "float16"}}}})"),
              400, "datatype");
  ExpectError(Call("PUT", "/collections/x", R"({"sparse_vectors": {"s": {"modifier": "bm42"}}})"),
              400, "modifier");
  ExpectError(
      Call("PUT", "/collections/x",
           R"({"vectors": {"s": {"size": 2, "distance": "Dot"}}, "sparse_vectors": {"s": {}}})"),
      400, "both");
  EXPECT_EQ(Call("GET", "/collections/x").status, 404);
}

TEST_F(QdrantSparseTest, SparseOnlyCollectionSurvivesRestart) {
  ExpectOk(Call("PUT", "/collections/so", R"({"sparse_vectors": {"text": {"modifier": "idf"}}})"));
  ExpectOk(Call("PUT", "/collections/so/points?wait=true", R"({"points": [
      {"id": 1, "vector": {"text": {"indices": [7, 8], "values": [1, 1]}}, "payload": {"t": "a"}},
      {"id": 2, "vector": {"text": {"indices": [8], "values": [1]}}}]})"));
  Restart();
  json r = ExpectOk(Call("POST", "/collections/so/points/query",
                         R"({"query": {"indices": [7], "values": [1]}, "using": "text",
                             "with_payload": true, "with_vector": ["text"]})"));
  ASSERT_EQ(r["points"].size(), 1u);
  EXPECT_EQ(r["points"][0]["payload"]["t"], "a");
  EXPECT_EQ(r["points"][0]["vector"]["text"]["indices"], json::array({7, 8}));
  // update_vectors and delete vectors on the sparse field.
  ExpectOk(Call("PUT", "/collections/so/points/vectors?wait=true",
                R"({"points": [{"id": 2, "vector": {"text": {"indices": [7], "values": [5]}}}]})"));
  r = ExpectOk(Call("POST", "/collections/so/points/query",
                    R"({"query": {"indices": [7], "values": [1]}, "using": "text"})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{2, 1}));
  ExpectOk(Call("POST", "/collections/so/points/vectors/delete?wait=true",
                R"({"points": [2], "vector": ["text"]})"));
  r = ExpectOk(Call("POST", "/collections/so/points/query",
                    R"({"query": {"indices": [7], "values": [1]}, "using": "text"})"));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{1}));
}

TEST_F(QdrantSparseTest, Bm25Routes) {
  ExpectOk(Call("PUT", "/collections/b", R"({"vectors": {"d": {"size": 2, "distance": "Dot"}},
      "sparse_vectors": {"bm25": {"modifier": "idf"}}})"));
  ExpectOk(Call("PUT", "/collections/b/points?wait=true", R"({"points": [
      {"id": 1, "vector": {"d": [1, 0]}, "payload": {"text": "Sparse vectors and dense vectors"}},
      {"id": 2, "vector": {"d": [0, 1]}, "payload": {"text": "Fusion of ranked lists"}},
      {"id": 3, "vector": {"d": [1, 1]}, "payload": {"other": 1}}]})"));
  json r = ExpectOk(Call("POST", "/collections/b/strata/bm25?wait=true",
                         R"({"text_field": "text", "using": "bm25"})"));
  EXPECT_EQ(r["points"], 2);
  EXPECT_NEAR(r["avg_len"].get<double>(), 3.5, 1e-9);  // "and", "of" are stop words
  json q = ExpectOk(Call("POST", "/strata/bm25/encode", R"({"text": "ranked FUSION"})"));
  ASSERT_EQ(q["indices"].size(), 2u);
  r = ExpectOk(
      Call("POST", "/collections/b/points/query", json{{"query", q}, {"using", "bm25"}}.dump()));
  EXPECT_EQ(Ids(r["points"]), (std::vector<int>{2}));
  ExpectError(Call("POST", "/collections/b/strata/bm25", R"({"text_field": "text", "using": "d"})"),
              400, "no sparse vector");
  ExpectError(Call("POST", "/collections/b/strata/bm25",
                   R"({"text_field": "text", "using": "bm25", "stemmer": "en"})"),
              400, "stemmer");
  ExpectError(Call("POST", "/strata/bm25/encode", R"({"text": "x", "kind": "document"})"), 400,
              "avg_len");
  json d = ExpectOk(
      Call("POST", "/strata/bm25/encode", R"({"text": "x x", "kind": "document", "avg_len": 2})"));
  EXPECT_NEAR(d["values"][0].get<double>(), 2 * 2.2 / 3.2, 1e-5);
}

// The generated corpus: 20 topics of 150 background documents; per query
// (topic t, entity e) 10 relevant documents of topic t that name e once, and
// 15 confusers from other topics that name e two or three times. The dense
// vector of a document is its topic's centroid plus noise (it knows the
// topic, not the entity); BM25 sees the words (the entity, and the topic
// words the query shares with some documents).
TEST_F(QdrantSparseTest, HybridRrfBeatsDenseAndSparseAlone) {
  constexpr int kTopics = 20, kTopicWords = 40, kBackground = 150, kQueries = 40;
  constexpr int kRelevant = 10, kConfusers = 15, kDim = 32;
  constexpr float kEntityWeight = 0.55f;
  std::mt19937 rng(1234);
  std::normal_distribution<float> g;
  std::vector<std::vector<float>> centroid(kTopics, std::vector<float>(kDim));
  for (auto& c : centroid) {
    for (auto& x : c) x = g(rng);
  }
  std::vector<std::vector<float>> entity_dir(kQueries, std::vector<float>(kDim));
  for (auto& e : entity_dir) {
    for (auto& x : e) x = kEntityWeight * g(rng);
  }
  // A document's meaning: its topic, plus (weakly) the entity it is about.
  auto dense = [&](int topic, int entity) {
    std::vector<float> v = centroid[topic];
    for (size_t j = 0; j < v.size(); ++j) {
      v[j] += 0.6f * g(rng) + (entity >= 0 ? entity_dir[entity][j] : 0.0f);
    }
    return v;
  };
  auto topic_words = [&](int topic, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += fmt::format("t{}w{} ", topic, rng() % kTopicWords);
    return s;
  };
  ExpectOk(Call("PUT", "/collections/hy",
                fmt::format(R"({{"vectors": {{"dense": {{"size": {}, "distance": "Cosine"}}}},
                    "sparse_vectors": {{"bm25": {{"modifier": "idf"}}}}}})",
                            kDim)));
  json points = json::array();
  int next_id = 0;
  auto add = [&](int topic, int entity, std::string text) {
    points.push_back({{"id", next_id++},
                      {"vector", {{"dense", dense(topic, entity)}}},
                      {"payload", {{"text", std::move(text)}}}});
    if (points.size() == 500) {
      ExpectOk(Call("PUT", "/collections/hy/points?wait=true", json{{"points", points}}.dump()));
      points = json::array();
    }
  };
  for (int t = 0; t < kTopics; ++t) {
    for (int i = 0; i < kBackground; ++i)
      add(t, -1, topic_words(t, 12) + fmt::format("c{}", rng() % 200));
  }
  struct Q {
    int topic, entity;
    std::set<int> relevant;
  };
  std::vector<Q> queries;
  for (int q = 0; q < kQueries; ++q) {
    Q x{q % kTopics, q, {}};
    for (int i = 0; i < kRelevant; ++i) {
      x.relevant.insert(next_id);
      add(x.topic, q, topic_words(x.topic, 11) + fmt::format("ent{}", q));
    }
    for (int i = 0; i < kConfusers; ++i) {
      const int other = (x.topic + 1 + int(rng() % (kTopics - 1))) % kTopics;
      std::string ent;
      for (int k = 0; k < 2 + int(rng() % 2); ++k) ent += fmt::format(" ent{}", q);
      add(other, -1, topic_words(other, 10) + ent);  // names the entity, is about another topic
    }
    queries.push_back(std::move(x));
  }
  if (!points.empty())
    ExpectOk(Call("PUT", "/collections/hy/points?wait=true", json{{"points", points}}.dump()));
  json idx = ExpectOk(Call("POST", "/collections/hy/strata/bm25?wait=true",
                           R"({"text_field": "text", "using": "bm25"})"));
  EXPECT_EQ(idx["points"], next_id);

  double recall_dense = 0, recall_sparse = 0, recall_rrf = 0, recall_dbsf = 0;
  auto recall = [&](const json& pts, const Q& q) {
    int hit = 0;
    for (const auto& p : pts) hit += q.relevant.count(p["id"].get<int>());
    return double(hit) / kRelevant / kQueries;
  };
  for (const auto& q : queries) {
    const std::string text = fmt::format("ent{} t{}w{} t{}w{}", q.entity, q.topic,
                                         rng() % kTopicWords, q.topic, rng() % kTopicWords);
    json sq = ExpectOk(Call("POST", "/strata/bm25/encode", json{{"text", text}}.dump()));
    json dq = dense(q.topic, q.entity);
    json d = ExpectOk(Call("POST", "/collections/hy/points/query",
                           json{{"query", dq}, {"using", "dense"}, {"limit", 10}}.dump()));
    json s = ExpectOk(Call("POST", "/collections/hy/points/query",
                           json{{"query", sq}, {"using", "bm25"}, {"limit", 10}}.dump()));
    json prefetch = json::array({json{{"query", dq}, {"using", "dense"}, {"limit", 200}},
                                 json{{"query", sq}, {"using", "bm25"}, {"limit", 200}}});
    json rrf = ExpectOk(
        Call("POST", "/collections/hy/points/query",
             json{{"prefetch", prefetch}, {"query", {{"fusion", "rrf"}}}, {"limit", 10}}.dump()));
    json dbsf = ExpectOk(
        Call("POST", "/collections/hy/points/query",
             json{{"prefetch", prefetch}, {"query", {{"fusion", "dbsf"}}}, {"limit", 10}}.dump()));
    recall_dense += recall(d["points"], q);
    recall_sparse += recall(s["points"], q);
    recall_rrf += recall(rrf["points"], q);
    recall_dbsf += recall(dbsf["points"], q);
  }
  std::printf(
      "hybrid recall@10 over %d queries, %d documents: dense %.3f, bm25 %.3f, "
      "rrf %.3f, dbsf %.3f\n",
      kQueries, next_id, recall_dense, recall_sparse, recall_rrf, recall_dbsf);
  EXPECT_GT(recall_rrf, recall_dense);
  EXPECT_GT(recall_rrf, recall_sparse);
  EXPECT_GT(recall_dbsf, recall_dense);
  EXPECT_GT(recall_dbsf, recall_sparse);
}

}  // namespace
}  // namespace strata::qdrant
