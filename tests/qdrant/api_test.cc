// The Qdrant operations beyond points and payloads: update_vectors, PATCH of
// a collection, aliases, order_by, facets, groups and the universal query
// API. Each expectation is Qdrant's documented REST behaviour.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qdrant/qdrant_fixture.h"

namespace strata::qdrant {
namespace {

using QdrantApiTest = QdrantHandlerTest;

// PUT /points/vectors replaces only the named vectors it gives; the other
// vectors and the payload stay.
TEST_F(QdrantApiTest, UpdateVectorsReplacesOnlyTheNamedOnes) {
  ExpectOk(Call("PUT", "/collections/multi", R"({"vectors": {
      "image": {"size": 2, "distance": "Dot"}, "text": {"size": 3, "distance": "Dot"}}})"));
  ExpectOk(Call("PUT", "/collections/multi/points?wait=true", R"({"points": [
      {"id": 1, "vector": {"image": [1, 0], "text": [0, 1, 0]}, "payload": {"k": 1}},
      {"id": 2, "vector": {"image": [0, 1], "text": [0, 0, 1]}}]})"));
  json r = ExpectOk(Call("PUT", "/collections/multi/points/vectors?wait=true",
                         R"({"points": [{"id": 1, "vector": {"text": [1, 0, 0]}}]})"));
  EXPECT_EQ(r["status"], "completed");
  json p = ExpectOk(Call("GET", "/collections/multi/points/1"));
  EXPECT_EQ(p["vector"], json({{"image", {1, 0}}, {"text", {1, 0, 0}}}));
  EXPECT_EQ(p["payload"], json({{"k", 1}}));
  // The search sees the new vector.
  json s = ExpectOk(Call("POST", "/collections/multi/points/search",
                         R"({"vector": {"name": "text", "vector": [1, 0, 0]}, "limit": 1})"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["id"], 1);
  EXPECT_FLOAT_EQ(s[0]["score"].get<float>(), 1.0f);
}

TEST_F(QdrantApiTest, UpdateVectorsIsAtomicAndChecked) {
  MakeCities();
  // Point 9 does not exist: 404, and point 1 is unchanged.
  ExpectError(Call("PUT", "/collections/cities/points/vectors?wait=true", R"({"points": [
      {"id": 1, "vector": [1, 1, 1, 1]}, {"id": 9, "vector": [1, 1, 1, 1]}]})"),
              404, "No point with id 9 found");
  json p = ExpectOk(Call("GET", "/collections/cities/points/1"));
  EXPECT_NEAR(p["vector"][0].get<double>(), 0.05, 1e-6);
  // A wrong dimension is refused as in upsert.
  ExpectError(Call("PUT", "/collections/cities/points/vectors",
                   R"({"points": [{"id": 1, "vector": [1, 1]}]})"),
              400, "dim");
  ExpectError(Call("PUT", "/collections/cities/points/vectors",
                   R"({"points": [{"id": 1, "vector": {"nope": [1, 1, 1, 1]}}]})"),
              400, "no vector named \"nope\"");
  ExpectError(Call("PUT", "/collections/cities/points/vectors", R"({"points": [{"id": 1}]})"), 400,
              "\"vector\"");
  ExpectOk(Call("PUT", "/collections/cities/points/vectors?wait=true",
                R"({"points": [{"id": 2, "vector": [1, 0, 0, 0]}]})"));
  p = ExpectOk(Call("GET", "/collections/cities/points/2"));
  EXPECT_EQ(p["vector"], json({1, 0, 0, 0}));
  EXPECT_EQ(p["payload"]["city"], "London");
}

TEST_F(QdrantApiTest, UpdateVectorsInBatch) {
  MakeCities();
  json r = ExpectOk(Call("POST", "/collections/cities/points/batch?wait=true", R"({"operations": [
      {"update_vectors": {"points": [{"id": 3, "vector": [0, 0, 0, 1]}]}},
      {"set_payload": {"payload": {"x": 1}, "points": [3]}}]})"));
  ASSERT_EQ(r.size(), 2u);
  json p = ExpectOk(Call("GET", "/collections/cities/points/3"));
  EXPECT_EQ(p["vector"], json({0, 0, 0, 1}));
  EXPECT_EQ(p["payload"]["x"], 1);
  EXPECT_EQ(p["payload"]["city"], "Moscow");
}

}  // namespace
}  // namespace strata::qdrant
