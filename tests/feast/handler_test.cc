// The Feast HTTP adapter without a socket: requests go through the real HTTP
// parser (http::ServeInMemory) into feast::Handler over a
// features::OnlineService. Expectations follow Feast's python feature server:
// JSON bodies, {"detail": "..."} errors (FastAPI's shape) with 422 for a body
// it cannot use, 404 for unknown names, 401 without the API key.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/feast/handler.h>
#include <strata/features/online.h>
#include <strata/features/online_service.h>

#include "features/online_repo.h"
#include "testutil/json_frontend.h"
#include "testutil/testutil.h"

namespace strata::feast {
namespace {

using nlohmann::json;

using Answer = ::strata::testing::JsonAnswer;

class FeastHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override { Open({}); }

  void Open(HandlerOptions options) {
    handler_.reset();
    service_.reset();
    features::FeatureRepo reg =
        features::testrepo::MakeRepo(dir_.path(), "  type: rocksdb\n  path: data/online\n");
    auto store = features::OpenOnlineStore(reg.config);
    ASSERT_OK(store);
    service_ = std::make_unique<features::OnlineService>(std::move(reg), std::move(*store),
                                                         features::OnlineServiceOptions{});
    ASSERT_OK(service_->Open());
    handler_ = std::make_unique<Handler>(service_.get(), std::move(options));
  }

  Answer Call(const std::string& method, const std::string& target, const std::string& body = {},
              std::vector<std::pair<std::string, std::string>> headers = {},
              const http::ServerOptions& so = {}) {
    return ::strata::testing::CallJson(*handler_, method, target, body, std::move(headers), so);
  }

  static json ExpectOk(const Answer& a) {
    EXPECT_EQ(a.status, 200) << a.text;
    EXPECT_EQ(a.content_type, "application/json");
    EXPECT_FALSE(a.body.is_discarded()) << a.text;
    return a.body;
  }

  // FastAPI's error shape: {"detail": "..."} and nothing else.
  static void ExpectDetail(const Answer& a, int status, const std::string& fragment) {
    EXPECT_EQ(a.status, status) << a.text;
    EXPECT_EQ(a.content_type, "application/json");
    ASSERT_TRUE(a.body.is_object()) << a.text;
    ASSERT_EQ(a.body.size(), 1u) << a.text;
    ASSERT_TRUE(a.body.contains("detail") && a.body["detail"].is_string()) << a.text;
    EXPECT_NE(a.body["detail"].get<std::string>().find(fragment), std::string::npos) << a.text;
  }

  void Materialize() {
    json m =
        ExpectOk(Call("POST", "/materialize",
                      R"({"start_ts": "2023-11-14T22:13:20", "end_ts": "2023-11-15T03:13:20"})"));
    EXPECT_EQ(m["views"], 2);
    EXPECT_EQ(m["entities_written"], 3);
  }

  ::strata::testing::TempDir dir_{"strata-feast"};
  std::unique_ptr<features::OnlineService> service_;
  std::unique_ptr<Handler> handler_;
};

TEST_F(FeastHandlerTest, Health) {
  Answer h = Call("GET", "/health");
  EXPECT_EQ(ExpectOk(h), json::object());
  ExpectDetail(Call("POST", "/health", "{}"), 405, "use GET");
}

TEST_F(FeastHandlerTest, GetOnlineFeatures) {
  Materialize();
  json r = ExpectOk(Call("POST", "/get-online-features",
                         R"({"features": ["stats:rate", "stats:trips"],
                             "entities": {"driver_id": [1, 2, 3]}})"));
  // Feast's column-oriented answer: join keys first, then the features.
  EXPECT_EQ(r["metadata"]["feature_names"], json({"driver_id", "rate", "trips"}));
  ASSERT_EQ(r["results"].size(), 3u);
  EXPECT_EQ(r["results"][0]["values"], json({1, 2, 3}));
  EXPECT_EQ(r["results"][1]["values"], json({0.3, nullptr, nullptr}));
  EXPECT_EQ(r["results"][1]["statuses"], json({"PRESENT", "NULL_VALUE", "NOT_FOUND"}));
  EXPECT_EQ(r["results"][1]["event_timestamps"][0], "2023-11-15T01:13:20Z");
  EXPECT_EQ(r["results"][2]["values"][0], 30);
  // Each result's keys in Feast's order.
  EXPECT_EQ(r["results"][1].size(), 3u);
  EXPECT_NE(Call("POST", "/get-online-features",
                 R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}})")
                .text.find(R"({"values":[1],"statuses":["PRESENT"],"event_timestamps":[)"),
            std::string::npos);
  // A feature service, full feature names.
  r = ExpectOk(Call("POST", "/get-online-features",
                    R"({"feature_service": "all", "full_feature_names": true,
                        "entities": {"driver_id": [1], "city": ["paris"]}})"));
  EXPECT_EQ(r["metadata"]["feature_names"], json({"driver_id", "city", "stats__rate",
                                                  "stats__trips", "stats__name", "geo__visits"}));
  EXPECT_EQ(r["results"][5]["values"][0], 7);
}

TEST_F(FeastHandlerTest, PushAndWriteToOnlineStore) {
  Materialize();
  ExpectOk(Call("POST", "/push",
                R"({"push_source_name": "stats", "to": "online",
                    "df": {"driver_id": [3], "ts": ["2023-11-16 00:00:00"], "rate": [0.9]}})"));
  ExpectOk(Call("POST", "/write-to-online-store",
                R"({"feature_view_name": "stats",
                    "df": {"driver_id": [4], "ts": [1700179200], "trips": [44]}})"));
  json r = ExpectOk(Call("POST", "/get-online-features",
                         R"({"features": ["stats:rate", "stats:trips"],
                             "entities": {"driver_id": [3, 4]}})"));
  EXPECT_EQ(r["results"][1]["values"], json({0.9, nullptr}));
  EXPECT_EQ(r["results"][2]["values"], json({nullptr, 44}));
  EXPECT_EQ(r["results"][2]["event_timestamps"][1], "2023-11-17T00:00:00Z");
  // Pushing to the offline store is refused; "to" must be a string.
  ExpectDetail(Call("POST", "/push",
                    R"({"push_source_name": "stats", "to": "offline", "df": {"driver_id": [1]}})"),
               422, "offline");
  ExpectDetail(
      Call("POST", "/push", R"({"push_source_name": "stats", "to": 5, "df": {"driver_id": [1]}})"),
      422, "malformed request");
  ExpectDetail(Call("POST", "/push", R"({"df": {"driver_id": [1]}})"), 422,
               "\"push_source_name\" is required");
  ExpectDetail(Call("POST", "/write-to-online-store", R"({"df": {}})"), 422,
               "\"feature_view_name\" is required");
  ExpectDetail(Call("POST", "/push", R"({"push_source_name": "nope", "df": {"a": [1]}})"), 404,
               "no feature view is fed by push source \"nope\"");
}

TEST_F(FeastHandlerTest, MaterializeIncremental) {
  Materialize();
  json m = ExpectOk(Call("POST", "/materialize-incremental",
                         R"({"end_ts": "2023-11-15T10:13:20", "feature_views": ["stats"]})"));
  EXPECT_EQ(m["views"], 1);
  json r = ExpectOk(Call("POST", "/get-online-features",
                         R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}})"));
  EXPECT_EQ(r["results"][1]["values"][0], 0.8);  // the 8h row, after the first window
  ExpectDetail(Call("POST", "/materialize", R"({"start_ts": "yesterday", "end_ts": "2024-01-01"})"),
               422, "start_ts");
  ExpectDetail(Call("POST", "/materialize-incremental", R"({"feature_views": ["stats"]})"), 422,
               "end_ts");
  ExpectDetail(Call("POST", "/materialize", R"({"end_ts": "2024-01-01", "feature_views": "x"})"),
               422, "feature_views");
}

TEST_F(FeastHandlerTest, BadRequests) {
  Materialize();
  // A body that is not a JSON object.
  ExpectDetail(Call("POST", "/get-online-features", "{not json"), 422, "JSON object");
  ExpectDetail(Call("POST", "/get-online-features", "[1, 2]"), 422, "JSON object");
  // Unknown names: 404.
  ExpectDetail(Call("POST", "/get-online-features",
                    R"({"features": ["stats:nope"], "entities": {"driver_id": [1]}})"),
               404, "no feature \"nope\"");
  ExpectDetail(Call("POST", "/get-online-features",
                    R"({"feature_service": "nope", "entities": {"driver_id": [1]}})"),
               404, "nope");
  // Bodies of the wrong shape: 422.
  ExpectDetail(Call("POST", "/get-online-features", R"({"entities": {"driver_id": [1]}})"), 422,
               "features");
  ExpectDetail(Call("POST", "/get-online-features", R"({"features": ["stats:rate"]})"), 422,
               "\"entities\" must be an object");
  ExpectDetail(Call("POST", "/get-online-features",
                    R"({"features": ["stats:rate"], "entities": {"driver_id": [[1]]}})"),
               422, "non-scalar");
  ExpectDetail(Call("POST", "/get-online-features",
                    R"({"features": ["stats:rate"], "entities": {"driver_id": ["1"]}})"),
               422, "must hold int64 values");
  ExpectDetail(Call("POST", "/get-online-features",
                    R"({"features": ["stats:rate"], "entities": {"driver_id": [1]},
                        "full_feature_names": 1})"),
               422, "full_feature_names");
  // Routes and methods.
  ExpectDetail(Call("POST", "/nope", "{}"), 404, "no endpoint /nope");
  ExpectDetail(Call("GET", "/get-online-features"), 405, "not found");
  ExpectDetail(Call("GET", "/nope"), 404, "not found");
  // The handler keeps serving.
  ExpectOk(Call("POST", "/get-online-features",
                R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}})"));
}

TEST_F(FeastHandlerTest, ApiKey) {
  HandlerOptions o;
  o.api_key = "k3y";
  Open(o);
  const std::string body = R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}})";
  ExpectDetail(Call("POST", "/get-online-features", body), 401, "API key");
  ExpectDetail(Call("POST", "/get-online-features", body, {{"X-API-Key", "wrong"}}), 401,
               "API key");
  ExpectOk(Call("POST", "/get-online-features", body, {{"X-API-Key", "k3y"}}));
  ExpectOk(Call("POST", "/get-online-features", body, {{"Authorization", "Bearer k3y"}}));
  ExpectDetail(Call("POST", "/materialize", "{}"), 401, "API key");
  // Health checks need no key.
  ExpectOk(Call("GET", "/health"));
}

TEST_F(FeastHandlerTest, BodyTooLargeAndTransportErrors) {
  HandlerOptions o;
  o.max_body_bytes = 32;
  Open(o);
  Answer big = Call("POST", "/get-online-features",
                    R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}})");
  EXPECT_EQ(big.status, 413) << big.text;
  ASSERT_TRUE(big.body.is_object() && big.body.contains("detail")) << big.text;
  // What the HTTP layer finds answers in the same shape.
  http::ServerOptions small;
  small.max_header_bytes = 128;
  Answer head = Call("GET", "/health", "", {{"X-Pad", std::string(400, 'p')}}, small);
  EXPECT_EQ(head.status, 431) << head.text;
  ASSERT_TRUE(head.body.is_object() && head.body.contains("detail")) << head.text;
}

}  // namespace
}  // namespace strata::feast
