// The Qdrant REST adapter without a socket: requests go through the real HTTP
// parser (http::ServeInMemory) into qdrant::Handler over a CollectionManager
// in a temporary directory. Each expectation is Qdrant's documented REST
// behaviour: the {"result", "status": "ok", "time"} envelope, the
// {"status": {"error"}} error shape, and the status codes of its API.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qdrant/qdrant_fixture.h"

namespace strata::qdrant {
namespace {

TEST_F(QdrantHandlerTest, CreateAndDescribeCollection) {
  json created = ExpectOk(
      Call("PUT", "/collections/docs", R"({"vectors": {"size": 4, "distance": "Cosine"}})"));
  EXPECT_EQ(created, true);
  json exists = ExpectOk(Call("GET", "/collections/docs/exists"));
  EXPECT_EQ(exists["exists"], true);
  json info = ExpectOk(Call("GET", "/collections/docs"));
  // green, or yellow while a background task (seal, index build) is pending.
  EXPECT_TRUE(info["status"] == "green" || info["status"] == "yellow") << info.dump();
  EXPECT_EQ(info["points_count"], 0);
  EXPECT_EQ(info["config"]["params"]["vectors"]["size"], 4);
  EXPECT_EQ(info["config"]["params"]["vectors"]["distance"], "Cosine");
  json list = ExpectOk(Call("GET", "/collections"));
  ASSERT_EQ(list["collections"].size(), 1u);
  EXPECT_EQ(list["collections"][0]["name"], "docs");
  // Creating it again is refused with Qdrant's text.
  Answer again =
      Call("PUT", "/collections/docs", R"({"vectors": {"size": 4, "distance": "Cosine"}})");
  ExpectError(again, 409, "Collection `docs` already exists!");
  // Deleting answers true; then the collection is gone.
  EXPECT_EQ(ExpectOk(Call("DELETE", "/collections/docs")), true);
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/docs/exists"))["exists"], false);
}

TEST_F(QdrantHandlerTest, UpsertAndSearch) {
  MakeCities();
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities"))["points_count"], 4);
  // Search without a filter: best Dot score first; no payload unless asked.
  json hits = ExpectOk(Call("POST", "/collections/cities/points/search",
                            R"({"vector": [0.2, 0.1, 0.9, 0.7], "limit": 3})"));
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0]["id"], 4);
  EXPECT_EQ(hits[1]["id"], 1);
  EXPECT_EQ(hits[2]["id"], 3);
  EXPECT_NEAR(hits[0]["score"].get<double>(), 0.2 * 0.18 + 0.1 * 0.01 + 0.9 * 0.85 + 0.7 * 0.80,
              1e-5);
  EXPECT_GE(hits[0]["score"].get<double>(), hits[1]["score"].get<double>());
  EXPECT_TRUE(hits[0].contains("version"));
  EXPECT_FALSE(hits[0].contains("payload"));
  // With a filter and the payload.
  hits = ExpectOk(Call("POST", "/collections/cities/points/search", R"({
      "vector": [0.2, 0.1, 0.9, 0.7], "limit": 3, "with_payload": true,
      "filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0]["id"], 4);
  EXPECT_EQ(hits[1]["id"], 2);
  EXPECT_EQ(hits[0]["payload"], json({{"city", "London"}, {"n", 4}}));
  // The query API answers {"points": [...]}.
  json q = ExpectOk(Call("POST", "/collections/cities/points/query",
                         R"({"query": [0.2, 0.1, 0.9, 0.7], "limit": 1})"));
  ASSERT_EQ(q["points"].size(), 1u);
  EXPECT_EQ(q["points"][0]["id"], 4);
  // Batch search: one result list per search.
  json batch = ExpectOk(Call("POST", "/collections/cities/points/search/batch", R"({"searches": [
      {"vector": [0.2, 0.1, 0.9, 0.7], "limit": 1},
      {"vector": [0.2, 0.1, 0.9, 0.7], "limit": 2}]})"));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].size(), 1u);
  EXPECT_EQ(batch[1].size(), 2u);
}

TEST_F(QdrantHandlerTest, GetScrollCount) {
  MakeCities();
  // One point by id: payload and vector.
  json p = ExpectOk(Call("GET", "/collections/cities/points/2"));
  EXPECT_EQ(p["id"], 2);
  EXPECT_EQ(p["payload"]["city"], "London");
  ASSERT_EQ(p["vector"].size(), 4u);
  EXPECT_NEAR(p["vector"][1].get<double>(), 0.81, 1e-6);
  // Retrieve several: payload by default, no vector.
  json many = ExpectOk(Call("POST", "/collections/cities/points", R"({"ids": [1, 3]})"));
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(many[0]["payload"]["city"], "Berlin");
  EXPECT_FALSE(many[0].contains("vector"));
  // Scroll pages in id order with next_page_offset; null at the end.
  json page = ExpectOk(Call("POST", "/collections/cities/points/scroll", R"({"limit": 3})"));
  ASSERT_EQ(page["points"].size(), 3u);
  EXPECT_EQ(page["points"][0]["id"], 1);
  EXPECT_EQ(page["points"][2]["id"], 3);
  EXPECT_EQ(page["next_page_offset"], 4);
  page =
      ExpectOk(Call("POST", "/collections/cities/points/scroll", R"({"limit": 3, "offset": 4})"));
  ASSERT_EQ(page["points"].size(), 1u);
  EXPECT_TRUE(page["next_page_offset"].is_null());
  // Count, with and without a filter (an empty body counts everything).
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count"))["count"], 4);
  json n =
      ExpectOk(Call("POST", "/collections/cities/points/count",
                    R"({"filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  EXPECT_EQ(n["count"], 2);
}

TEST_F(QdrantHandlerTest, DeletePoints) {
  MakeCities();
  json r =
      ExpectOk(Call("POST", "/collections/cities/points/delete?wait=true", R"({"points": [1]})"));
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", "{}"))["count"], 3);
  ExpectError(Call("GET", "/collections/cities/points/1"), 404, "No point with id 1 found");
  // By filter.
  ExpectOk(Call("POST", "/collections/cities/points/delete?wait=true",
                R"({"filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  json left = ExpectOk(Call("POST", "/collections/cities/points/scroll", "{}"));
  ASSERT_EQ(left["points"].size(), 1u);
  EXPECT_EQ(left["points"][0]["id"], 3);
}

TEST_F(QdrantHandlerTest, Errors) {
  // A missing collection: 404 with Qdrant's text.
  ExpectError(Call("GET", "/collections/nope"), 404, "Not found: Collection `nope` doesn't exist!");
  ExpectError(Call("POST", "/collections/nope/points/count", "{}"), 404, "nope");
  // A body that is not JSON, or not an object: 400.
  ExpectError(Call("PUT", "/collections/raw", "{not json"), 400, "Format error in JSON body");
  ExpectError(Call("PUT", "/collections/raw", "[1,2,3]"), 400, "Format error in JSON body");
  // Bad input the API checks: 400 "Wrong input".
  ExpectError(Call("PUT", "/collections/raw", R"({"vectors": {"size": 4}})"), 400, "distance");
  MakeCities();
  ExpectError(Call("POST", "/collections/cities/points/search", R"({"limit": 3})"), 400,
              "Wrong input");
  ExpectError(
      Call("PUT", "/collections/cities/points", R"({"points": [{"id": -1, "vector": [1,2,3,4]}]})"),
      400, "negative");
  // A field of the wrong JSON type is a 400, not a crash.
  ExpectError(Call("PUT", "/collections/q", R"({"vectors": {"size": 4, "distance": "Dot"},
      "quantization_config": {"scalar": {"type": 8}}})"),
              400, "scalar.type must be \"int8\"");
  // No such route; a method the path does not take.
  ExpectError(Call("GET", "/no/such/route"), 404, "no route");
  ExpectError(Call("POST", "/collections/cities"), 405, "Method not allowed");
  // The server keeps serving.
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", "{}"))["count"], 4);
}

TEST_F(QdrantHandlerTest, BodyTooLarge) {
  HandlerOptions o;
  o.max_body_bytes = 64;
  Open(o);
  Answer a = Call(
      "PUT", "/collections/big",
      R"({"vectors": {"size": 4, "distance": "Dot"}, "pad": ")" + std::string(200, 'x') + "\"}");
  ExpectError(a, 413, "Payload error");
  EXPECT_FALSE(manager_->Exists("big"));
}

TEST_F(QdrantHandlerTest, ApiKey) {
  HandlerOptions o;
  o.api_key = "s3cret";
  Open(o);
  ExpectError(Call("GET", "/collections"), 401, "Must provide an API key");
  ExpectError(Call("GET", "/collections", "", {{"api-key", "wrong"}}), 401, "Invalid API key");
  ExpectOk(Call("GET", "/collections", "", {{"api-key", "s3cret"}}));
  ExpectOk(Call("GET", "/collections", "", {{"Authorization", "Bearer s3cret"}}));
  // Health checks need no key (Kubernetes probes).
  Answer h = Call("GET", "/healthz");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.text, "healthz check passed");
}

TEST_F(QdrantHandlerTest, RootAndTransportErrors) {
  json root = json::parse(Call("GET", "/").text, nullptr, false);
  EXPECT_TRUE(root.contains("version")) << root.dump();
  EXPECT_TRUE(root.contains("title")) << root.dump();
  // Errors the HTTP layer finds answer in Qdrant's error shape too.
  http::ServerOptions small;
  small.max_header_bytes = 128;
  Answer big = Call("GET", "/collections", "", {{"X-Pad", std::string(400, 'p')}}, small);
  EXPECT_EQ(big.status, 431) << big.text;
  ASSERT_TRUE(big.body.is_object()) << big.text;
  EXPECT_TRUE(big.body["status"].contains("error")) << big.text;
}

// Qdrant validates limit as a usize with range(min = 1): 0 and negative
// limits are a 400 (not an empty 200, not "at most 100000").
TEST_F(QdrantHandlerTest, SearchLimitMustBePositive) {
  MakeCities();
  const std::string v = R"("vector": [0.2, 0.1, 0.9, 0.7])";
  ExpectError(Call("POST", "/collections/cities/points/search", "{" + v + R"(, "limit": 0})"), 400,
              "limit must be at least 1");
  ExpectError(Call("POST", "/collections/cities/points/search", "{" + v + R"(, "limit": -1})"), 400,
              "limit must not be negative");
  ExpectError(Call("POST", "/collections/cities/points/search", "{" + v + R"(, "top": -5})"), 400,
              "negative");
  ExpectError(Call("POST", "/collections/cities/points/search", "{" + v + R"(, "limit": 2.5})"),
              400, "non-negative integer");
  ExpectError(
      Call("POST", "/collections/cities/points/search", "{" + v + R"(, "limit": 3, "offset": -1})"),
      400, "offset must not be negative");
  ExpectError(Call("POST", "/collections/cities/points/query",
                   R"({"query": [0.2, 0.1, 0.9, 0.7], "limit": 0})"),
              400, "limit must be at least 1");
  ExpectError(Call("POST", "/collections/cities/points/search/batch",
                   R"({"searches": [{)" + v + R"(, "limit": 2}, {)" + v + R"(, "limit": 0}]})"),
              400, "limit must be at least 1");
  json ok =
      ExpectOk(Call("POST", "/collections/cities/points/search", "{" + v + R"(, "limit": 1})"));
  EXPECT_EQ(ok.size(), 1u);
}

// The per-request index knobs: hnsw_ef, rerank (IVF_PQ) and search_list
// (DISKANN) in "params" (and the "strata" object) are counts; anything else is
// a 400 that names the knob.
TEST_F(QdrantHandlerTest, SearchParamsKnobs) {
  MakeCities();
  const std::string v = R"("vector": [0.2, 0.1, 0.9, 0.7], "limit": 2)";
  for (const char* body : {R"("params": {"hnsw_ef": 128, "rerank": 64, "search_list": 200})",
                           R"("strata": {"ef": 32, "rerank": 16, "search_list": 50})"}) {
    json r =
        ExpectOk(Call("POST", "/collections/cities/points/search", "{" + v + ", " + body + "}"));
    EXPECT_EQ(r.size(), 2u);
  }
  ExpectError(
      Call("POST", "/collections/cities/points/search", "{" + v + R"(, "params": {"rerank": -3}})"),
      400, "rerank must not be negative");
  ExpectError(Call("POST", "/collections/cities/points/search",
                   "{" + v + R"(, "params": {"search_list": "big"}})"),
              400, "search_list");
  ExpectError(Call("POST", "/collections/cities/points/search",
                   "{" + v + R"(, "params": {"hnsw_ef": -1}})"),
              400, "hnsw_ef must not be negative");
}

// docs/vector.md lists index_threads, search_threads and sync among the
// "strata" options of a create body: they are accepted, kept (also across a
// restart of the manager) and shown; bad values are a 400.
TEST_F(QdrantHandlerTest, CollectionThreadAndSyncOptions) {
  ExpectOk(Call("PUT", "/collections/t", R"({"vectors": {"size": 4, "distance": "Dot"},
      "strata": {"index_threads": 3, "search_threads": 2, "sync": false}})"));
  auto check = [&](const std::string& when) {
    json info = ExpectOk(Call("GET", "/collections/t"));
    EXPECT_EQ(info["config"]["strata"]["index_threads"], 3) << when;
    EXPECT_EQ(info["config"]["strata"]["search_threads"], 2) << when;
    EXPECT_EQ(info["config"]["strata"]["sync"], false) << when;
    EXPECT_EQ(info["config"]["hnsw_config"]["max_indexing_threads"], 3) << when;
    auto c = manager_->Get("t");
    ASSERT_OK(c);
    auto o = (*c)->Info().options;
    EXPECT_EQ(o.index_threads, 3u) << when;
    EXPECT_EQ(o.search_threads, 2u) << when;
    EXPECT_FALSE(o.sync) << when;
  };
  check("after create");
  handler_.reset();
  manager_.reset();
  Open({});
  check("after reopening");
  // The defaults: sync on, threads automatic.
  ExpectOk(Call("PUT", "/collections/d", R"({"vectors": {"size": 4, "distance": "Dot"}})"));
  json d = ExpectOk(Call("GET", "/collections/d"));
  EXPECT_EQ(d["config"]["strata"]["sync"], true);
  EXPECT_EQ(d["config"]["strata"]["search_threads"], 0);
  ExpectError(Call("PUT", "/collections/b1", R"({"vectors": {"size": 4, "distance": "Dot"},
      "strata": {"index_threads": -1}})"),
              400, "index_threads");
  ExpectError(Call("PUT", "/collections/b2", R"({"vectors": {"size": 4, "distance": "Dot"},
      "strata": {"sync": "yes"}})"),
              400, "sync");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/b1/exists"))["exists"], false);
}

// Qdrant's payload endpoints. POST /points/payload merges keys into the
// payload; PUT replaces it; payload/delete removes keys; payload/clear empties
// it. Filtered search and count see the new payload (the keyword index on
// "city" included), and so does a restarted server.
TEST_F(QdrantHandlerTest, SetAndOverwritePayloadAreSeenByFilteredSearch) {
  MakeCities();
  ExpectOk(Call("PUT", "/collections/cities/index?wait=true",
                R"({"field_name": "city", "field_schema": "keyword"})"));
  json r = ExpectOk(Call("POST", "/collections/cities/points/payload?wait=true",
                         R"({"payload": {"city": "Paris", "tag": "x"}, "points": [1]})"));
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["operation_id"].is_number_unsigned());
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"],
            json({{"city", "Paris"}, {"n", 1}, {"tag", "x"}}));
  json hits = ExpectOk(Call("POST", "/collections/cities/points/search", R"({
      "vector": [0.2, 0.1, 0.9, 0.7], "limit": 10,
      "filter": {"must": [{"key": "city", "match": {"value": "Paris"}}]}})"));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["id"], 1);
  // PUT overwrites: the old keys are gone. wait=false answers "acknowledged".
  r = ExpectOk(Call("PUT", "/collections/cities/points/payload",
                    R"({"payload": {"only": true}, "points": [2]})"));
  EXPECT_EQ(r["status"], "acknowledged");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/2"))["payload"],
            json({{"only", true}}));
  const std::string london =
      R"({"filter": {"must": [{"key": "city", "match": {"value": "London"}}]}, "exact": true})";
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", london))["count"], 1);
  // By filter: every London point (only 4 now) gets the key.
  ExpectOk(Call("POST", "/collections/cities/points/payload?wait=true", R"({
      "payload": {"uk": true},
      "filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/4"))["payload"],
            json({{"city", "London"}, {"n", 4}, {"uk", true}}));
  // Nested: "key" names the object the payload is merged into.
  ExpectOk(Call("POST", "/collections/cities/points/payload?wait=true",
                R"({"payload": {"lang": "fr"}, "points": [1], "key": "meta"})"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"]["meta"],
            json({{"lang", "fr"}}));

  // A restarted server has all of it.
  handler_.reset();
  manager_.reset();
  Open({});
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"],
            json({{"city", "Paris"}, {"n", 1}, {"tag", "x"}, {"meta", {{"lang", "fr"}}}}));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/2"))["payload"],
            json({{"only", true}}));
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", london))["count"], 1);
  hits = ExpectOk(Call("POST", "/collections/cities/points/search", R"({
      "vector": [0.2, 0.1, 0.9, 0.7], "limit": 10,
      "filter": {"must": [{"key": "city", "match": {"value": "Paris"}}]}})"));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["id"], 1);
}

TEST_F(QdrantHandlerTest, DeleteAndClearPayloadByIdsAndByFilter) {
  MakeCities();
  ExpectOk(Call("POST", "/collections/cities/points/payload/delete?wait=true", R"({
      "keys": ["n"], "filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/2"))["payload"],
            json({{"city", "London"}}));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"],
            json({{"city", "Berlin"}, {"n", 1}}));
  json r = ExpectOk(Call("POST", "/collections/cities/points/payload/delete?wait=true",
                         R"({"keys": ["city"], "points": [1]})"));
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"], json({{"n", 1}}));
  ExpectOk(
      Call("POST", "/collections/cities/points/payload/clear?wait=true", R"({"points": [3]})"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/3"))["payload"], json::object());
  ExpectOk(Call("POST", "/collections/cities/points/payload/clear?wait=true", R"({
      "filter": {"must": [{"key": "city", "match": {"value": "London"}}]}})"));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/4"))["payload"], json::object());
  const std::string any_city = R"({"filter": {"must": [{"is_empty": {"key": "city"}}]}})";
  EXPECT_EQ(ExpectOk(Call("POST", "/collections/cities/points/count", any_city))["count"], 4);
  // The vectors stay.
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/4"))["vector"].size(), 4u);
}

// Qdrant answers 404 for a point id that does not exist; nothing is changed.
// Malformed bodies are 400, never silently half-read.
TEST_F(QdrantHandlerTest, PayloadEditsRefuseMissingPointsAndBadBodies) {
  MakeCities();
  ExpectError(Call("POST", "/collections/cities/points/payload?wait=true",
                   R"({"payload": {"x": 1}, "points": [1, 99]})"),
              404, "No point with id 99 found");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"],
            json({{"city", "Berlin"}, {"n", 1}}));
  ExpectError(
      Call("PUT", "/collections/cities/points/payload", R"({"payload": {}, "points": [7]})"), 404,
      "No point with id 7 found");
  ExpectError(Call("POST", "/collections/cities/points/payload/delete",
                   R"({"keys": ["n"], "points": [7]})"),
              404, "7");
  ExpectError(Call("POST", "/collections/cities/points/payload/clear", R"({"points": [7]})"), 404,
              "7");
  ExpectError(Call("POST", "/collections/nope/points/payload", R"({"payload": {}, "points": [1]})"),
              404, "Collection `nope` doesn't exist!");
  ExpectError(Call("POST", "/collections/cities/points/payload", R"({"points": [1]})"), 400,
              "payload");
  ExpectError(Call("POST", "/collections/cities/points/payload",
                   R"({"payload": {"x": 1}, "points": [1], "filter": {}})"),
              400, "not both");
  ExpectError(Call("POST", "/collections/cities/points/payload", R"({"payload": {"x": 1}})"), 400,
              "\"points\": [ids] or \"filter\"");
  ExpectError(Call("POST", "/collections/cities/points/payload",
                   R"({"payload": {"x": 1}, "points": [1], "key": "a[0].b"})"),
              400, "array paths");
  ExpectError(Call("PUT", "/collections/cities/points/payload",
                   R"({"payload": {"x": 1}, "points": [1], "key": "a"})"),
              400, "key");
  ExpectError(Call("POST", "/collections/cities/points/payload",
                   R"({"payload": {"x": 1}, "points": [1], "wat": 1})"),
              400, "unknown field \"wat\"");
  ExpectError(Call("POST", "/collections/cities/points/payload/delete", R"({"points": [1]})"), 400,
              "keys");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/1"))["payload"],
            json({{"city", "Berlin"}, {"n", 1}}));
}

TEST_F(QdrantHandlerTest, DeleteNamedVectors) {
  MakeCities();
  ExpectError(Call("POST", "/collections/cities/points/vectors/delete",
                   R"({"points": [1], "vector": [""]})"),
              400, "single vector");
  ExpectOk(Call("PUT", "/collections/multi", R"({"vectors": {
      "image": {"size": 2, "distance": "Dot"}, "text": {"size": 3, "distance": "Cosine"}}})"));
  ExpectOk(Call("PUT", "/collections/multi/points?wait=true", R"({"points": [
      {"id": 1, "vector": {"image": [1, 0], "text": [0, 1, 0]}, "payload": {"k": 1}}]})"));
  ExpectOk(Call("POST", "/collections/multi/points/vectors/delete?wait=true",
                R"({"points": [1], "vector": ["text"]})"));
  json p = ExpectOk(Call("GET", "/collections/multi/points/1"));
  EXPECT_EQ(p["vector"], json({{"image", {1, 0}}}));
  EXPECT_EQ(p["payload"], json({{"k", 1}}));
  ExpectError(Call("POST", "/collections/multi/points/vectors/delete",
                   R"({"points": [1], "vector": ["audio"]})"),
              400, "no vector named \"audio\"");
  ExpectError(Call("POST", "/collections/multi/points/vectors/delete",
                   R"({"points": [2], "vector": ["image"]})"),
              404, "No point with id 2 found");
}

// POST /points/batch: operations applied in order, one result each. Each
// step depends on the one before (set_payload on a point the batch upserts).
TEST_F(QdrantHandlerTest, BatchAppliesOperationsInOrder) {
  MakeCities();
  json r = ExpectOk(Call("POST", "/collections/cities/points/batch?wait=true", R"({"operations": [
      {"upsert": {"points": [{"id": 5, "vector": [1, 0, 0, 0], "payload": {"a": 1}}]}},
      {"set_payload": {"payload": {"b": 2}, "points": [5]}},
      {"delete_payload": {"keys": ["a"], "points": [5]}},
      {"overwrite_payload": {"payload": {"c": 3}, "points": [3]}},
      {"clear_payload": {"points": [2]}},
      {"delete": {"points": [1]}}]})"));
  ASSERT_TRUE(r.is_array()) << r.dump();
  ASSERT_EQ(r.size(), 6u);
  uint64_t last = 0;
  for (const auto& u : r) {
    EXPECT_EQ(u["status"], "completed");
    EXPECT_GT(u["operation_id"].get<uint64_t>(), last);  // one operation after the other
    last = u["operation_id"].get<uint64_t>();
  }
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/5"))["payload"], json({{"b", 2}}));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/3"))["payload"], json({{"c", 3}}));
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/2"))["payload"], json::object());
  ExpectError(Call("GET", "/collections/cities/points/1"), 404, "1");

  // A malformed operation anywhere: 400 and nothing applied.
  ExpectError(Call("POST", "/collections/cities/points/batch", R"({"operations": [
      {"delete": {"points": [2]}}, {"explode": {}}]})"),
              400, "unknown operation \"explode\"");
  ExpectOk(Call("GET", "/collections/cities/points/2"));
  ExpectError(Call("POST", "/collections/cities/points/batch", R"({"operations": [
      {"update_vectors": {"points": []}}]})"),
              400, "update_vectors needs");
  // An operation that fails ends the batch there: the ones before it stay.
  ExpectError(Call("POST", "/collections/cities/points/batch?wait=true", R"({"operations": [
      {"set_payload": {"payload": {"d": 4}, "points": [3]}},
      {"set_payload": {"payload": {"d": 4}, "points": [42]}},
      {"delete": {"points": [3]}}]})"),
              404, "No point with id 42 found");
  EXPECT_EQ(ExpectOk(Call("GET", "/collections/cities/points/3"))["payload"],
            json({{"c", 3}, {"d", 4}}));
}

}  // namespace
}  // namespace strata::qdrant
