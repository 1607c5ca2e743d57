// The Milvus RESTful API v2 mapping (RestHandler::Dispatch, no socket) over a
// real MilvusServiceImpl: request shapes and answers as Milvus documents them
// ({"code":0,"data":...}, int64 as strings unless Accept-Type-Allow-Int64,
// "id"/"distance" on search hits, Milvus's error codes), authentication, and
// the acceptor's protocol sniffing.
#include "milvus/rest.h"

#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include <strata/milvus/server.h>
#include <strata/vector/collection.h>

#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

using json = nlohmann::json;

class MilvusRestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vector::CollectionOptions o;
    o.background = false;
    o.sync = false;
    auto m = vector::CollectionManager::Open(dir_.path() + "/vector", o);
    ASSERT_OK(m);
    mgr_ = std::move(*m);
    svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
    auth_ = std::make_unique<Authenticator>(AuthOptions{});
    rest_ = std::make_unique<RestHandler>(svc_.get(), auth_.get());
  }

  RestReply Post(const std::string& path, const json& body, bool int64 = false) {
    RestRequest r;
    const std::string full = "/v2/vectordb/" + path;
    const std::string text = body.dump();
    r.path = full;
    r.body = text;
    r.allow_int64 = int64;
    return rest_->Dispatch(r);
  }
  json Data(const std::string& path, const json& body, bool int64 = false) {
    RestReply r = Post(path, body, int64);
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.body.value("code", -1), 0) << path << ": " << r.body.dump();
    return r.body.value("data", json());
  }
  int Code(const std::string& path, const json& body) {
    return Post(path, body).body.value("code", -1);
  }

  // docs: id INT64 primary, vec FLOAT_VECTOR dim 2, source VARCHAR 8; HNSW L2.
  void CreateDocs() {
    json req = {{"collectionName", "docs"},
                {"schema",
                 {{"autoID", false},
                  {"enableDynamicField", true},
                  {"fields",
                   {{{"fieldName", "id"}, {"dataType", "Int64"}, {"isPrimary", true}},
                    {{"fieldName", "vec"},
                     {"dataType", "FloatVector"},
                     {"elementTypeParams", {{"dim", 2}}}},
                    {{"fieldName", "source"},
                     {"dataType", "VarChar"},
                     {"elementTypeParams", {{"max_length", "8"}}}}}}}},
                {"indexParams",
                 {{{"fieldName", "vec"},
                   {"indexName", "vec_idx"},
                   {"metricType", "L2"},
                   {"indexType", "HNSW"},
                   {"params", {{"M", 8}, {"efConstruction", 64}}}}}}};
    Data("collections/create", req);
    json rows = json::array();
    for (int i = 0; i < 10; ++i) {
      rows.push_back({{"id", i},
                      {"vec", {static_cast<double>(i), 0.0}},
                      {"source", i % 2 == 0 ? "arxiv" : "web"},
                      {"year", 2000 + i}});
    }
    json ins = Data("entities/insert", {{"collectionName", "docs"}, {"data", rows}});
    ASSERT_EQ(ins["insertCount"], 10);
  }
  int64_t Count() {
    json q =
        Data("entities/query",
             {{"collectionName", "docs"}, {"filter", ""}, {"outputFields", {"count(*)"}}}, true);
    return q.at(0).at("count(*)").get<int64_t>();
  }

  ::strata::testing::TempDir dir_;
  std::unique_ptr<vector::CollectionManager> mgr_;
  std::unique_ptr<MilvusServiceImpl> svc_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<RestHandler> rest_;
};

TEST_F(MilvusRestTest, QuickSetupCreatesIndexesAndLoads) {
  Data("collections/create", {{"collectionName", "quick"}, {"dimension", 4}});
  json d = Data("collections/describe", {{"collectionName", "quick"}});
  EXPECT_EQ(d["collectionName"], "quick");
  EXPECT_EQ(d["enableDynamicField"], true);
  EXPECT_EQ(d["load"], "LoadStateLoaded");
  ASSERT_EQ(d["fields"].size(), 2u);
  EXPECT_EQ(d["fields"][0]["name"], "id");
  EXPECT_EQ(d["fields"][0]["type"], "Int64");
  EXPECT_EQ(d["fields"][0]["primaryKey"], true);
  EXPECT_EQ(d["fields"][1]["name"], "vector");
  EXPECT_EQ(d["fields"][1]["type"], "FloatVector");
  ASSERT_EQ(d["indexes"].size(), 1u);
  EXPECT_EQ(d["indexes"][0]["metricType"], "COSINE");
  EXPECT_EQ(Data("collections/has", {{"collectionName", "quick"}})["has"], true);
  EXPECT_EQ(Data("collections/has", {{"collectionName", "nope"}})["has"], false);
  EXPECT_EQ(Data("collections/list", json::object()), json::array({"quick"}));
  json ls = Data("collections/get_load_state", {{"collectionName", "quick"}});
  EXPECT_EQ(ls["loadState"], "LoadStateLoaded");
  // Quick setup needs a dimension: Milvus's parameter error (1100).
  EXPECT_EQ(Code("collections/create", {{"collectionName", "q2"}}), 1100);
  EXPECT_EQ(Data("collections/has", {{"collectionName", "q2"}})["has"], false);
}

TEST_F(MilvusRestTest, InsertQueryCountAndInt64AsStrings) {
  CreateDocs();
  EXPECT_EQ(Count(), 10);
  // Without Accept-Type-Allow-Int64, int64 values are JSON strings.
  json q = Data("entities/query", {{"collectionName", "docs"},
                                   {"filter", "id in [3]"},
                                   {"outputFields", {"id", "source", "year"}}});
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0]["id"], "3");
  EXPECT_EQ(q[0]["source"], "web");
  EXPECT_EQ(q[0]["year"], 2003);  // a dynamic key: as written
  json q64 =
      Data("entities/query",
           {{"collectionName", "docs"}, {"filter", "id in [3]"}, {"outputFields", {"id"}}}, true);
  EXPECT_EQ(q64[0]["id"], 3);
  json cnt = Data("entities/query", {{"collectionName", "docs"},
                                     {"filter", "source == \"arxiv\""},
                                     {"outputFields", {"count(*)"}}});
  EXPECT_EQ(cnt[0]["count(*)"], "5");
  json g = Data("entities/get",
                {{"collectionName", "docs"}, {"id", {1, 2}}, {"outputFields", {"id"}}}, true);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(Data("collections/get_stats", {{"collectionName", "docs"}})["rowCount"], 10);
}

TEST_F(MilvusRestTest, SearchWithFilterReturnsIdAndDistanceClosestFirst) {
  CreateDocs();
  json s = Data("entities/search",
                {{"collectionName", "docs"},
                 {"data", {{4.2, 0.0}}},
                 {"filter", "source == \"arxiv\""},
                 {"limit", 3},
                 {"outputFields", {"source"}},
                 {"searchParams", {{"params", {{"ef", 64}}}}}},
                true);
  ASSERT_EQ(s.size(), 3u) << s.dump();
  EXPECT_EQ(s[0]["id"], 4);
  EXPECT_EQ(s[1]["id"], 6);
  EXPECT_EQ(s[2]["id"], 2);
  for (const json& h : s) EXPECT_EQ(h["source"], "arxiv");
  // L2 scores are squared distances, as Milvus reports them.
  EXPECT_NEAR(s[0]["distance"].get<double>(), 0.04, 1e-4);
  EXPECT_LE(s[0]["distance"].get<double>(), s[1]["distance"].get<double>());
  // Two query vectors: hits concatenated, "topks" says how many each.
  RestReply two =
      Post("entities/search",
           {{"collectionName", "docs"}, {"data", {{0.0, 0.0}, {9.0, 0.0}}}, {"limit", 2}});
  ASSERT_EQ(two.body["code"], 0) << two.body.dump();
  EXPECT_EQ(two.body["data"].size(), 4u);
  EXPECT_EQ(two.body["topks"], json::array({2, 2}));
  EXPECT_EQ(two.body["data"][0]["id"], "0");
  EXPECT_EQ(two.body["data"][2]["id"], "9");
}

TEST_F(MilvusRestTest, BadRequestsAnswerMilvusCodesAndStoreNothing) {
  CreateDocs();
  EXPECT_EQ(Code("entities/query", {{"collectionName", "missing"}, {"filter", ""}}), 100);
  EXPECT_EQ(Code("collections/describe", json::object()), 1802);  // collectionName required
  EXPECT_EQ(Code("collections/describe", {{"collectionName", 7}}), 1801);
  // Wrong dimension: refused before anything is written.
  EXPECT_EQ(Code("entities/insert",
                 {{"collectionName", "docs"},
                  {"data", {{{"id", 100}, {"vec", {1.0, 2.0, 3.0}}, {"source", "x"}}}}}),
            1804);
  // VARCHAR over max_length (8): the service's parameter error.
  EXPECT_NE(Code("entities/insert",
                 {{"collectionName", "docs"},
                  {"data", {{{"id", 101}, {"vec", {1.0, 2.0}}, {"source", "much-too-long"}}}}}),
            0);
  EXPECT_EQ(Count(), 10);
  // A malformed expression.
  EXPECT_NE(Code("entities/query", {{"collectionName", "docs"}, {"filter", "id >>> 3"}}), 0);
  RestRequest r;
  r.path = "/v2/vectordb/collections/list";
  r.body = "{not json";
  EXPECT_EQ(rest_->Dispatch(r).body["code"], 1801);
  r.path = "/v2/vectordb/collections/frobnicate";
  r.body = "{}";
  EXPECT_EQ(rest_->Dispatch(r).http_status, 404);
}

TEST_F(MilvusRestTest, DeleteByFilterAndById) {
  CreateDocs();
  Data("entities/delete", {{"collectionName", "docs"}, {"filter", "source == \"web\""}});
  EXPECT_EQ(Count(), 5);
  Data("entities/delete", {{"collectionName", "docs"}, {"id", {0, 2}}});
  EXPECT_EQ(Count(), 3);
  Data("entities/upsert", {{"collectionName", "docs"},
                           {"data", {{{"id", 4}, {"vec", {0.5, 0.5}}, {"source", "new"}}}}});
  json g =
      Data("entities/get", {{"collectionName", "docs"}, {"id", 4}, {"outputFields", {"source"}}});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0]["source"], "new");
  Data("collections/drop", {{"collectionName", "docs"}});
  EXPECT_EQ(Data("collections/has", {{"collectionName", "docs"}})["has"], false);
}

TEST_F(MilvusRestTest, PartitionsAliasesIndexes) {
  CreateDocs();
  Data("partitions/create", {{"collectionName", "docs"}, {"partitionName", "p1"}});
  EXPECT_EQ(Data("partitions/has", {{"collectionName", "docs"}, {"partitionName", "p1"}})["has"],
            true);
  json parts = Data("partitions/list", {{"collectionName", "docs"}});
  EXPECT_NE(std::find(parts.begin(), parts.end(), "p1"), parts.end());
  Data("partitions/load", {{"collectionName", "docs"}, {"partitionNames", {"p1"}}});
  Data("entities/insert", {{"collectionName", "docs"},
                           {"partitionName", "p1"},
                           {"data", {{{"id", 50}, {"vec", {50.0, 0.0}}, {"source", "p"}}}}});
  EXPECT_EQ(Data("partitions/get_stats",
                 {{"collectionName", "docs"}, {"partitionName", "p1"}})["rowCount"],
            1);
  Data("aliases/create", {{"collectionName", "docs"}, {"aliasName", "latest"}});
  json a = Data("aliases/describe", {{"aliasName", "latest"}});
  EXPECT_EQ(a["collectionName"], "docs");
  EXPECT_EQ(Data("aliases/list", json::object()), json::array({"latest"}));
  EXPECT_EQ(Count(), 11);
  Data("aliases/drop", {{"aliasName", "latest"}});
  EXPECT_EQ(Data("aliases/list", json::object()), json::array());
  EXPECT_EQ(Data("indexes/list", {{"collectionName", "docs"}}), json::array({"vec_idx"}));
  json idx = Data("indexes/describe", {{"collectionName", "docs"}, {"indexName", "vec_idx"}});
  ASSERT_EQ(idx.size(), 1u);
  EXPECT_EQ(idx[0]["indexType"], "HNSW");
  EXPECT_EQ(idx[0]["metricType"], "L2");
}

TEST_F(MilvusRestTest, AuthenticationRefusesBadTokensWith1800) {
  AuthOptions ao;
  ao.enabled = true;
  ao.verify_password = [](std::string_view u, std::string_view p) {
    return u == "alice" && p == "s3cret-key";
  };
  ao.api_keys = {"key-123"};
  Authenticator auth(ao);
  RestHandler rest(svc_.get(), &auth);
  RestRequest r;
  r.path = "/v2/vectordb/collections/list";
  r.body = "{}";
  RestReply none = rest.Dispatch(r);
  EXPECT_EQ(none.http_status, 401);
  EXPECT_EQ(none.body["code"], 1800);
  r.authorization = "Bearer alice:wrong";
  EXPECT_EQ(rest.Dispatch(r).http_status, 401);
  r.authorization = "Bearer key-999";
  EXPECT_EQ(rest.Dispatch(r).http_status, 401);
  r.authorization = "Bearer alice:s3cret-key";
  EXPECT_EQ(rest.Dispatch(r).body["code"], 0);
  r.authorization = "Bearer key-123";
  EXPECT_EQ(rest.Dispatch(r).body["code"], 0);
  r.authorization = "Basic YWxpY2U6czNjcmV0LWtleQ==";  // alice:s3cret-key
  EXPECT_EQ(rest.Dispatch(r).body["code"], 0);
  // A refused create changes nothing.
  r.authorization = "Bearer alice:wrong";
  r.path = "/v2/vectordb/collections/create";
  r.body = R"({"collectionName":"x","dimension":2})";
  EXPECT_EQ(rest.Dispatch(r).http_status, 401);
  EXPECT_EQ(Data("collections/has", {{"collectionName", "x"}})["has"], false);
  // gRPC: no metadata at all is UNAUTHENTICATED, as Milvus's interceptor.
  EXPECT_EQ(auth.CheckGrpc(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(auth.CheckToken("alice:s3cret-key").ok());
  EXPECT_FALSE(auth.CheckToken("alice:").ok());
  EXPECT_FALSE(auth.CheckToken(":s3cret-key").ok());
  // Off (the default): every request passes.
  EXPECT_TRUE(Authenticator(AuthOptions{}).CheckHttp("").ok());
}

TEST_F(MilvusRestTest, HttpLayerRefusesOtherMethods) {
  http::Handler h = http::FrontendHandler(rest_.get());
  auto resp =
      http::ServeInMemory(h, http::FormatRequest("GET", "/v2/vectordb/collections/list", {}));
  EXPECT_EQ(resp.status, 405);
  // The SDK's HttpClient sends "ContentType" (not Content-Type): the body is
  // read as JSON whatever the content type says.
  auto ok = http::ServeInMemory(
      h, http::FormatRequest("POST", "/v2/vectordb/collections/list",
                             {{"ContentType", "application/json"}}, R"({"dbName":"default"})"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(json::parse(ok.body)["code"], 0) << ok.body;
}

TEST(MilvusPortTest, ClassifiesTheFirstBytes) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  EXPECT_EQ(ClassifyFirstBytes(preface), ConnKind::kGrpc);
  EXPECT_EQ(ClassifyFirstBytes(preface + "extra frames"), ConnKind::kGrpc);
  EXPECT_EQ(ClassifyFirstBytes("PRI * HT"), ConnKind::kUndecided);
  EXPECT_EQ(ClassifyFirstBytes("POST /v2/vectordb/collections/list HTTP/1.1\r\n"),
            ConnKind::kHttp1);
  EXPECT_EQ(ClassifyFirstBytes("PRX"), ConnKind::kHttp1);
}

}  // namespace
}  // namespace strata::milvus
