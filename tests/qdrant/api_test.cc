// The Qdrant operations beyond points and payloads: update_vectors, PATCH of
// a collection, aliases, order_by, facets, groups and the universal query
// API. Each expectation is Qdrant's documented REST behaviour.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/metrics.h>

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
  // Logged like an upsert: the new vector survives a restart (WAL replay).
  Restart();
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

// PATCH /collections/{name} changes what it names, and it survives a restart.
TEST_F(QdrantApiTest, PatchCollectionAppliesAndPersists) {
  ExpectOk(Call("PUT", "/collections/tuned", R"({"vectors": {"size": 256, "distance": "Dot"}})"));
  json before = ExpectOk(Call("GET", "/collections/tuned"))["config"];
  EXPECT_EQ(before["hnsw_config"]["m"], 16);
  EXPECT_EQ(ExpectOk(Call("PATCH", "/collections/tuned", R"({
      "hnsw_config": {"m": 32, "ef_construct": 200, "full_scan_threshold": 1000},
      "optimizers_config": {"deleted_threshold": 0.5, "indexing_threshold": 8000},
      "quantization_config": {"scalar": {"type": "int8", "always_ram": true}}})")),
            true);
  for (int round = 0; round < 2; ++round) {
    const std::string when = round == 0 ? "after PATCH" : "after restart";
    json cfg = ExpectOk(Call("GET", "/collections/tuned"))["config"];
    EXPECT_EQ(cfg["hnsw_config"]["m"], 32) << when;
    EXPECT_EQ(cfg["hnsw_config"]["ef_construct"], 200) << when;
    EXPECT_EQ(cfg["hnsw_config"]["full_scan_threshold"], 1000) << when;
    EXPECT_EQ(cfg["params"]["vectors"]["hnsw_config"]["m"], 32) << when;
    EXPECT_DOUBLE_EQ(cfg["optimizer_config"]["deleted_threshold"].get<double>(), 0.5) << when;
    EXPECT_EQ(cfg["optimizer_config"]["indexing_threshold"], 8000) << when;
    EXPECT_EQ(cfg["quantization_config"]["scalar"]["type"], "int8") << when;
    Restart();
  }
  ExpectOk(Call("PATCH", "/collections/tuned", R"({"quantization_config": "Disabled"})"));
  EXPECT_TRUE(
      ExpectOk(Call("GET", "/collections/tuned"))["config"]["quantization_config"].is_null());
  ExpectError(Call("PATCH", "/collections/nope", R"({"hnsw_config": {"m": 8}})"), 404, "nope");
}

// What has no equivalent is a 400, and the collection is left as it was.
TEST_F(QdrantApiTest, PatchCollectionRefusesWhatItCannotApply) {
  ExpectOk(Call("PUT", "/collections/tuned", R"({"vectors": {"size": 4, "distance": "Dot"}})"));
  const char* refused[] = {
      R"({"hnsw_config": {"m": 8, "payload_m": 16}})",
      R"({"hnsw_config": {"on_disk": true}})",
      R"({"optimizers_config": {"flush_interval_sec": 5}})",
      R"({"quantization_config": {"product": {"compression": "x16"}}})",
      R"({"quantization_config": {"binary": {}}})",
      R"({"quantization_config": {"scalar": {"type": "int8", "quantile": 0.99}}})",
      R"({"params": {"replication_factor": 3}})",
      R"({"params": {"on_disk_payload": true}})",
      R"({"vectors": {"": {"on_disk": true}}})",
      R"({"vectors": {"other": {"hnsw_config": {"m": 8}}}})",
      R"({"strict_mode_config": {"enabled": true}})",
      R"({"hnsw_config": {"m": 0}})",
  };
  for (const char* body : refused) {
    Answer a = Call("PATCH", "/collections/tuned", body);
    EXPECT_EQ(a.status, 400) << body << " -> " << a.text;
  }
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/tuned"))["config"]["hnsw_config"]["m"], 16);
  ExpectOk(Call("PUT", "/collections/ivf", R"({"vectors": {"size": 4, "distance": "Dot",
      "strata": {"index": "IVF_FLAT"}}})"));
  ExpectError(Call("PATCH", "/collections/ivf", R"({"hnsw_config": {"m": 32}})"), 400,
              "does not apply");
  ExpectError(
      Call("PATCH", "/collections/ivf", R"({"quantization_config": {"scalar": {"type": "int8"}}})"),
      400, "HNSW index only");
  // A named vector's own settings.
  ExpectOk(Call("PATCH", "/collections/tuned", R"({"vectors": {"": {"hnsw_config": {"m": 24}}}})"));
  EXPECT_EQ(ExpectOk(Call("GET",
                          "/collections/tuned"))["config"]["params"]["vectors"]["hnsw_config"]["m"],
            24);
}

// Create: quantization is applied (scalar int8 -> SQ8) or refused.
TEST_F(QdrantApiTest, CreateAppliesOrRefusesQuantization) {
  ExpectOk(Call("PUT", "/collections/q8", R"({"vectors": {"size": 4, "distance": "Dot"},
      "quantization_config": {"scalar": {"type": "int8"}}})"));
  json cfg = ExpectOk(Call("GET", "/collections/q8"))["config"];
  EXPECT_EQ(cfg["quantization_config"]["scalar"]["type"], "int8");
  EXPECT_EQ(cfg["strata"]["vectors"][0]["params"]["sq8"], true);
  ExpectError(Call("PUT", "/collections/pq", R"({"vectors": {"size": 4, "distance": "Dot"},
      "quantization_config": {"product": {"compression": "x4"}}})"),
              400, "product quantization");
  ExpectError(Call("PUT", "/collections/bq", R"({"vectors": {"size": 4, "distance": "Dot",
      "quantization_config": {"binary": {"always_ram": true}}}})"),
              400, "binary quantization");
  ExpectError(Call("PUT", "/collections/hq", R"({"vectors": {"size": 4, "distance": "Dot"},
      "hnsw_config": {"payload_m": 8}})"),
              400, "payload_m");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/pq/exists"))["exists"], false);
}

// A changed m rebuilds the sealed segments' indexes; searches stay right.
TEST_F(QdrantApiTest, PatchRebuildsSealedIndexes) {
  ExpectOk(Call("PUT", "/collections/seg", R"({"vectors": {"size": 2, "distance": "Euclid",
      "strata": {"segment_rows": 50}}})"));
  json pts = json::array();
  for (int i = 0; i < 200; ++i) pts.push_back({{"id", i}, {"vector", {i, i % 5}}});
  ExpectOk(Call("PUT", "/collections/seg/points?wait=true", json{{"points", pts}}.dump()));
  auto c = manager_->Get("seg");
  ASSERT_OK(c);
  ASSERT_OK((*c)->WaitIdle());
  auto& builds = metrics::Registry::Global().GetCounter("strata_vector_index_builds_total",
                                                        "Segment indexes built");
  const uint64_t before = builds.Value();
  const size_t segments = (*c)->Info().segments;
  ExpectOk(Call("PATCH", "/collections/seg", R"({"hnsw_config": {"m": 8, "ef_construct": 64}})"));
  ASSERT_OK((*c)->WaitIdle());
  // Every sealed segment got a new index (the growing one has none to rebuild).
  EXPECT_GE(builds.Value() - before, segments - 1);
  EXPECT_GT(builds.Value(), before);
  json r = ExpectOk(
      Call("POST", "/collections/seg/points/search", R"({"vector": [120, 0], "limit": 1})"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["id"], 120);
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/seg"))["points_count"], 200);
}

// Aliases: created, renamed, deleted atomically; every collection endpoint
// takes one; they survive a restart and go with a dropped collection.
TEST_F(QdrantApiTest, AliasesNameCollectionsEverywhere) {
  MakeCities();
  ExpectOk(Call("PUT", "/collections/other", R"({"vectors": {"size": 4, "distance": "Dot"}})"));
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/aliases", R"({"actions": [
      {"create_alias": {"collection_name": "cities", "alias_name": "prod"}},
      {"create_alias": {"collection_name": "other", "alias_name": "staging"}}]})")),
            true);
  json all = ExpectOk(Call("GET", "/aliases"))["aliases"];
  EXPECT_EQ(all, json::parse(R"([{"alias_name": "prod", "collection_name": "cities"},
                                 {"alias_name": "staging", "collection_name": "other"}])"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/aliases"))["aliases"],
            json::parse(R"([{"alias_name": "prod", "collection_name": "cities"}])"));
  // Points, search, count and info through the alias.
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/prod/points/count", "{}"))["count"], 4);
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/prod"))["points_count"], 4);
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/prod/exists"))["exists"], true);
  ExpectOk(Call("PUT", "/collections/prod/points?wait=true",
                R"({"points": [{"id": 9, "vector": [1, 0, 0, 0]}]})"));
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", "{}"))["count"], 5);
  json s = ExpectOk(
      Call("POST", "/collections/prod/points/search", R"({"vector": [1, 0, 0, 0], "limit": 1})"));
  EXPECT_EQ(s[0]["id"], 9);

  // A failing action anywhere: 404 and none applied (prod still on cities).
  ExpectError(Call("POST", "/collections/aliases", R"({"actions": [
      {"delete_alias": {"alias_name": "prod"}},
      {"create_alias": {"collection_name": "nope", "alias_name": "prod"}}]})"),
              404, "nope");
  EXPECT_EQ(ExpectOk(Call("GET", "/aliases"))["aliases"].size(), 2u);
  ExpectError(Call("POST", "/collections/aliases",
                   R"({"actions": [{"delete_alias": {"alias_name": "ghost"}}]})"),
              404, "ghost");
  ExpectError(Call("POST", "/collections/aliases", R"({"actions": [
      {"create_alias": {"collection_name": "cities", "alias_name": "other"}}]})"),
              409, "other");
  ExpectError(Call("POST", "/collections/aliases", R"({"actions": [{"explode": {}}]})"), 400,
              "explode");
  // The switch-over pattern: repoint prod at other in one call; rename staging.
  ExpectOk(Call("POST", "/collections/aliases", R"({"actions": [
      {"delete_alias": {"alias_name": "prod"}},
      {"create_alias": {"collection_name": "other", "alias_name": "prod"}},
      {"rename_alias": {"old_alias_name": "staging", "new_alias_name": "next"}}]})"));
  Restart();
  EXPECT_EQ(ExpectOk(Call("GET", "/aliases"))["aliases"],
            json::parse(R"([{"alias_name": "next", "collection_name": "other"},
                            {"alias_name": "prod", "collection_name": "other"}])"));
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/prod/points/count", "{}"))["count"], 0);
  // Dropping a collection drops its aliases.
  ExpectOk(Call("DELETE", "/collections/other"));
  EXPECT_EQ(ExpectOk(Call("GET", "/aliases"))["aliases"], json::array());
  ExpectError(Call("POST", "/collections/prod/points/count", "{}"), 404, "prod");
}

// scroll order_by needs a range index on the key, as in Qdrant.
TEST_F(QdrantApiTest, ScrollOrderBy) {
  MakeCities();
  ExpectError(Call("POST", "/collections/cities/points/scroll", R"({"order_by": "n"})"), 400,
              "range index");
  ExpectOk(Call("PUT", "/collections/cities/index",
                R"({"field_name": "n", "field_schema": "integer"})"));
  json r = ExpectOk(Call("POST", "/collections/cities/points/scroll",
                         R"({"order_by": {"key": "n", "direction": "desc"}, "limit": 3})"));
  ASSERT_EQ(r["points"].size(), 3u) << r.dump();
  EXPECT_EQ(r["points"][0]["id"], 4);
  EXPECT_EQ(r["points"][1]["id"], 3);
  EXPECT_EQ(r["points"][2]["id"], 2);
  EXPECT_EQ(r["points"][0]["order_value"], 4);
  EXPECT_TRUE(r["next_page_offset"].is_null());
  r = ExpectOk(Call("POST", "/collections/cities/points/scroll", R"({
      "order_by": {"key": "n", "start_from": 2},
      "filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  ASSERT_EQ(r["points"].size(), 2u) << r.dump();
  EXPECT_EQ(r["points"][0]["id"], 2);
  EXPECT_EQ(r["points"][1]["id"], 4);
  ExpectError(Call("POST", "/collections/cities/points/scroll",
                   R"({"order_by": {"key": "n", "direction": "up"}})"),
              400, "direction");
}

TEST_F(QdrantApiTest, FacetCountsValues) {
  MakeCities();
  ExpectError(Call("POST", "/collections/cities/facet", R"({"key": "city"})"), 400,
              "Index required");
  ExpectOk(Call("PUT", "/collections/cities/index",
                R"({"field_name": "city", "field_schema": "keyword"})"));
  json r = ExpectOk(Call("POST", "/collections/cities/facet", R"({"key": "city", "exact": true})"));
  EXPECT_EQ(r["hits"], json::parse(R"([{"value": "London", "count": 2},
      {"value": "Berlin", "count": 1}, {"value": "Moscow", "count": 1}])"));
  r = ExpectOk(Call("POST", "/collections/cities/facet", R"({"key": "city", "limit": 1,
      "filter": {"must": [{"key": "n", "range": {"lt": 3}}]}})"));
  EXPECT_EQ(r["hits"], json::parse(R"([{"value": "Berlin", "count": 1}])"));
  ExpectError(Call("POST", "/collections/cities/facet", R"({"key": "city", "limit": 0})"), 400,
              "limit");
}

// search/groups: the best points per group value, groups by their best hit.
TEST_F(QdrantApiTest, SearchAndQueryGroups) {
  MakeCities();
  const std::string q = R"("group_by": "city", "group_size": 1, "limit": 2, "with_payload": true)";
  json r = ExpectOk(Call("POST", "/collections/cities/points/search/groups",
                         R"({"vector": [0.2, 0.1, 0.9, 0.7], )" + q + "}"));
  // Dot scores: 4 (London) 1.362, 1 (Berlin) 1.273, 3 (Moscow) 1.208, 2 (London) 0.871.
  ASSERT_EQ(r["groups"].size(), 2u) << r.dump();
  EXPECT_EQ(r["groups"][0]["id"], "London");
  EXPECT_EQ(r["groups"][0]["hits"].size(), 1u);
  EXPECT_EQ(r["groups"][0]["hits"][0]["id"], 4);
  EXPECT_EQ(r["groups"][1]["id"], "Berlin");
  json g = ExpectOk(Call("POST", "/collections/cities/points/query/groups",
                         R"({"query": [0.2, 0.1, 0.9, 0.7], "group_by": "city",
                             "group_size": 2, "limit": 3})"));
  ASSERT_EQ(g["groups"].size(), 3u) << g.dump();
  EXPECT_EQ(g["groups"][0]["id"], "London");
  ASSERT_EQ(g["groups"][0]["hits"].size(), 2u);
  EXPECT_EQ(g["groups"][0]["hits"][1]["id"], 2);
  EXPECT_FALSE(g["groups"][0]["hits"][0].contains("payload"));
  ExpectError(Call("POST", "/collections/cities/points/search/groups",
                   R"({"vector": [1, 0, 0, 0], "limit": 2})"),
              400, "group_by");
}

}  // namespace
}  // namespace strata::qdrant
