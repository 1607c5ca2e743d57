// The universal query API (/points/query): prefetch, re-scoring, fusion,
// recommend, discover, order_by, and the legacy recommend/discover routes.
// Every expected order is worked out by hand from the four points below.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qdrant/qdrant_fixture.h"

namespace strata::qdrant {
namespace {

class QdrantQueryTest : public QdrantHandlerTest {
 protected:
  // Two Dot vectors per point: dense and other.
  //   id  dense       other       n
  //   1   [1, 0]      [0, 1]      1
  //   2   [0.9, 0.1]  [0.2, 0.8]  2
  //   3   [0, 1]      [1, 0]      3
  //   4   [0.5, 0.5]  [0.5, 0.5]  4
  void SetUp() override {
    QdrantHandlerTest::SetUp();
    ExpectOk(Call("PUT", "/collections/q", R"({"vectors": {
        "dense": {"size": 2, "distance": "Dot"}, "other": {"size": 2, "distance": "Dot"}}})"));
    ExpectOk(Call("PUT", "/collections/q/points?wait=true", R"({"points": [
        {"id": 1, "vector": {"dense": [1, 0], "other": [0, 1]}, "payload": {"n": 1, "t": "a"}},
        {"id": 2, "vector": {"dense": [0.9, 0.1], "other": [0.2, 0.8]}, "payload": {"n": 2, "t": "b"}},
        {"id": 3, "vector": {"dense": [0, 1], "other": [1, 0]}, "payload": {"n": 3, "t": "c"}},
        {"id": 4, "vector": {"dense": [0.5, 0.5], "other": [0.5, 0.5]}, "payload": {"n": 4, "t": "d"}}
        ]})"));
  }

  std::vector<int> Ids(const json& points) {
    std::vector<int> out;
    for (const auto& p : points) out.push_back(p["id"].get<int>());
    return out;
  }

  std::vector<int> Query(const std::string& body) {
    json r = ExpectOk(Call("POST", "/collections/q/points/query", body));
    return Ids(r["points"]);
  }
};

using V = std::vector<int>;

TEST_F(QdrantQueryTest, NearestAndRescoringAPrefetch) {
  EXPECT_EQ(Query(R"({"query": [1, 0], "using": "dense", "limit": 2})"), V({1, 2}));
  // The prefetch keeps {1, 2}; "other" then ranks them (0.2 > 0); point 3,
  // the best on "other" overall, is not among them.
  EXPECT_EQ(Query(R"({"prefetch": {"query": [1, 0], "using": "dense", "limit": 2},
                      "query": [1, 0], "using": "other"})"),
            V({2, 1}));
  // Nested prefetch with its own filter, which narrows its prefetch too:
  // innermost {1, 2, 3}, then by [0, 1]: {3, 2}, then by [1, 0]: 2, 3.
  EXPECT_EQ(Query(R"({"prefetch": {"prefetch": {"query": [1, 0], "using": "dense", "limit": 3},
                                   "query": [0, 1], "using": "dense", "limit": 2,
                                   "filter": {"must_not": [{"key": "n", "match": {"value": 4}}]}},
                      "query": [1, 0], "using": "dense"})"),
            V({2, 3}));
}

TEST_F(QdrantQueryTest, FusionRrfAndDbsf) {
  // dense [1,0] limit 3: 1, 2, 4.  other [1,0] limit 2: 3, 4.
  const std::string pre = R"("prefetch": [
      {"query": [1, 0], "using": "dense", "limit": 3},
      {"query": [1, 0], "using": "other", "limit": 2}])";
  // RRF (k = 2): 4 = 1/5 + 1/4 = 0.45, 1 = 3 = 1/3, 2 = 1/4.
  json r = ExpectOk(
      Call("POST", "/collections/q/points/query", "{" + pre + R"(, "query": {"fusion": "rrf"}})"));
  V ids = Ids(r["points"]);
  ASSERT_EQ(ids.size(), 4u) << r.dump();
  EXPECT_EQ(ids[0], 4);
  EXPECT_EQ(ids[3], 2);
  EXPECT_NEAR(r["points"][0]["score"].get<double>(), 0.45, 1e-5);
  // A threshold on the fused score.
  EXPECT_EQ(Query("{" + pre + R"(, "query": {"fusion": "rrf"}, "score_threshold": 0.4})"), V({4}));
  // DBSF, scores normalised over mean +- 3 sd per list:
  // 3 = 0.667, 1 = 0.655, 4 = 0.270 + 0.333, 2 = 0.578.
  EXPECT_EQ(Query("{" + pre + R"(, "query": {"fusion": "dbsf"}})"), V({3, 1, 4, 2}));
  ExpectError(Call("POST", "/collections/q/points/query", R"({"query": {"fusion": "rrf"}})"), 400,
              "prefetch");
}

TEST_F(QdrantQueryTest, RecommendAndDiscover) {
  // average_vector: 2 * [1,0] - [0,1] = [2,-1]: 2 -> 1.7, 4 -> 0.5 (examples excluded).
  EXPECT_EQ(Query(R"({"query": {"recommend": {"positive": [1], "negative": [3]}},
                      "using": "dense"})"),
            V({2, 4}));
  // best_score: 2 is nearer the positive (0.9 vs 0.1), 4 ties (0.5): positive wins.
  json r = ExpectOk(Call("POST", "/collections/q/points/recommend", R"({
      "positive": [1], "negative": [3], "strategy": "best_score", "using": "dense",
      "with_payload": true})"));
  ASSERT_TRUE(r.is_array()) << r.dump();
  EXPECT_EQ(Ids(r), V({2, 4}));
  EXPECT_NEAR(r[0]["score"].get<double>(), 0.9, 1e-5);
  EXPECT_EQ(r[0]["payload"]["n"], 2);
  // A raw vector as an example; sum_scores: 2 -> 0.9 - 0.1, 4 -> 0.5 - 0.5, 3 -> 0 - 1.
  EXPECT_EQ(Query(R"({"query": {"recommend": {"positive": [[1, 0]], "negative": [[0, 1]],
                      "strategy": "sum_scores"}}, "using": "dense"})"),
            V({1, 2, 4, 3}));
  // discover: target [0,1], context 1 (+) vs 3 (-): 2 is on the positive side.
  EXPECT_EQ(Query(R"({"query": {"discover": {"target": [0, 1],
                      "context": [{"positive": 1, "negative": 3}]}}, "using": "dense"})"),
            V({2, 4}));
  // context: the sum of min(0, sim(+) - sim(-)) with + = [0, 1], - = [1, 0]:
  // 3 -> 0, 4 -> 0 (ties keep id order), 2 -> -0.8, 1 -> -1.
  json ctx = ExpectOk(Call("POST", "/collections/q/points/query", R"({"query": {"context": [
      {"positive": [0, 1], "negative": [1, 0]}]}, "using": "dense", "limit": 4})"));
  EXPECT_EQ(Ids(ctx["points"]), V({3, 4, 2, 1})) << ctx.dump();
  EXPECT_NEAR(ctx["points"][3]["score"].get<double>(), -1.0, 1e-5);
  r = ExpectOk(Call("POST", "/collections/q/points/discover/batch", R"({"searches": [
      {"target": [0, 1], "context": [{"positive": 1, "negative": 3}], "using": "dense",
       "limit": 1}]})"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(Ids(r[0]), V({2}));
  r = ExpectOk(Call("POST", "/collections/q/points/recommend/batch", R"({"searches": [
      {"positive": [1], "using": "dense", "limit": 1},
      {"positive": [3], "using": "dense", "limit": 1}]})"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ids(r[0]), V({2}));
  EXPECT_EQ(Ids(r[1]), V({4}));
  ExpectError(
      Call("POST", "/collections/q/points/recommend", R"({"positive": [99], "using": "dense"})"),
      404, "99");
}

TEST_F(QdrantQueryTest, OrderBySelectorsAndBatch) {
  ExpectError(Call("POST", "/collections/q/points/query", R"({"query": {"order_by": "n"}})"), 400,
              "range index");
  ExpectOk(
      Call("PUT", "/collections/q/index", R"({"field_name": "n", "field_schema": "integer"})"));
  EXPECT_EQ(Query(R"({"query": {"order_by": {"key": "n", "direction": "desc"}}, "limit": 3})"),
            V({4, 3, 2}));
  // Re-ordering a prefetch by payload.
  EXPECT_EQ(Query(R"({"prefetch": {"query": [1, 0], "using": "dense", "limit": 2},
                      "query": {"order_by": {"key": "n", "direction": "desc"}}})"),
            V({2, 1}));
  json r = ExpectOk(Call("POST", "/collections/q/points/query", R"({"query": [1, 0],
      "using": "dense", "limit": 1, "offset": 1, "with_payload": ["t"], "with_vector": ["other"]})"));
  ASSERT_EQ(r["points"].size(), 1u);
  EXPECT_EQ(r["points"][0]["id"], 2);
  EXPECT_EQ(r["points"][0]["payload"], json({{"t", "b"}}));
  EXPECT_EQ(r["points"][0]["vector"].size(), 1u);
  EXPECT_TRUE(r["points"][0]["vector"].contains("other"));
  r = ExpectOk(Call("POST", "/collections/q/points/query/batch", R"({"searches": [
      {"query": [1, 0], "using": "dense", "limit": 1},
      {"query": [1, 0], "using": "other", "limit": 1}]})"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ids(r[0]["points"]), V({1}));
  EXPECT_EQ(Ids(r[1]["points"]), V({3}));
  ExpectError(
      Call("POST", "/collections/q/points/query",
           R"({"prefetch": {"query": [1, 0], "using": "dense", "offset": 1}, "query": [1, 0],
                       "using": "dense"})"),
      400, "offset");
  ExpectError(Call("POST", "/collections/q/points/query",
                   R"({"query": [1, 0], "using": "dense", "lookup_from": {"collection": "x"}})"),
              400, "lookup_from");
  ExpectError(Call("POST", "/collections/q/points/query",
                   R"({"query": {"sample": "random"}, "using": "dense"})"),
              400, "sample");
}

}  // namespace
}  // namespace strata::qdrant
