// The Feast HTTP API on a real socket (moved from tests/features/online_test.cc
// with the feature server): materialize, get-online-features by references and
// by service, push, and bad requests answered with a detail while the server
// keeps serving.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_client.h>
#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>

#include "features/online_repo.h"
#include "feast/test_host.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

using nlohmann::json;
using testrepo::MakeRepo;

json Post(http::HttpClient& c, int port, const std::string& path, const std::string& body,
          int* status) {
  return feast::PostJson(c, port, path, body, status);
}

TEST(FeatureServerTest, FeastHttpApi) {
  ::strata::testing::TempDir dir("strata-fserver");
  FeatureRepo reg = MakeRepo(dir.path(), "  type: rocksdb\n  path: data/online\n");
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnlineStore(reg.config));
  feast::TestFeatureServer server(reg, std::move(store));
  ASSERT_OK(server.Start());
  http::HttpClient c;
  int status = 0;
  json m = Post(
      c, server.port(), "/materialize",
      R"({"start_ts": "2023-11-14T22:13:20", "end_ts": "2023-11-15T03:13:20", "feature_views": ["stats"]})",
      &status);
  ASSERT_EQ(status, 200) << m.dump();
  EXPECT_EQ(m["entities_written"], 2);
  json r = Post(
      c, server.port(), "/get-online-features",
      R"({"features": ["stats:rate", "stats:name"], "entities": {"driver_id": [1, 3]}, "full_feature_names": true})",
      &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["metadata"]["feature_names"], json({"driver_id", "stats__rate", "stats__name"}));
  ASSERT_EQ(r["results"].size(), 3u);
  EXPECT_EQ(r["results"][0]["values"], json({1, 3}));
  EXPECT_EQ(r["results"][0]["event_timestamps"][0], "1970-01-01T00:00:00Z");
  EXPECT_EQ(r["results"][1]["values"], json({0.3, nullptr}));
  EXPECT_EQ(r["results"][1]["statuses"], json({"PRESENT", "NOT_FOUND"}));
  EXPECT_EQ(r["results"][1]["event_timestamps"][0], "2023-11-15T01:13:20Z");
  EXPECT_EQ(r["results"][2]["values"][0], "c");
  // A feature service, and push.
  json p = Post(
      c, server.port(), "/push",
      R"({"push_source_name": "stats", "df": {"driver_id": [3], "ts": ["2023-11-16 00:00:00"], "rate": [0.9]}, "to": "online"})",
      &status);
  ASSERT_EQ(status, 200) << p.dump();
  r = Post(c, server.port(), "/get-online-features",
           R"({"feature_service": "all", "entities": {"driver_id": [3], "city": ["paris"]}})",
           &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["results"][2]["values"][0], 0.9);
  // Bad requests get a detail and the server keeps serving.
  struct Bad {
    const char* path;
    const char* body;
    int status;
    const char* needle;
  };
  for (
      const Bad& b :
      {Bad{"/get-online-features", "{not json", 422, "JSON"},
       Bad{"/get-online-features",
           R"({"features": ["stats:nope"], "entities": {"driver_id": [1]}})", 404,
           "no feature \"nope\""},
       Bad{"/get-online-features",
           R"({"features": ["geo:visits"], "entities": {"driver_id": [1]}})", 422,
           "join key \"city\""},
       Bad{"/get-online-features",
           R"({"features": ["stats:rate"], "entities": {"driver_id": [1, 2], "x": [1]}})", 422,
           "has 1 values"},
       Bad{"/get-online-features",
           R"({"features": ["stats:rate"], "entities": {"driver_id": ["1"]}})", 422,
           "must hold int64 values"},
       Bad{"/get-online-features",
           R"({"features": ["geo:visits"], "entities": {"driver_id": [1], "city": [7]}})", 422,
           "\"city\" must hold string"},
       Bad{"/get-online-features",
           R"({"features": ["stats:rate"], "entities": {"driver_id": [1]}, "full_feature_names": 1})",
           422, "full_feature_names"},
       Bad{"/materialize", R"({"end_ts": "2024-01-01", "feature_views": [1]})", 422,
           "feature_views"},
       Bad{"/push", R"({"push_source_name": "stats", "df": {"driver_id": [1]}})", 422,
           "timestamp field"},
       Bad{"/push", R"({"push_source_name": "stats", "df": {"driver_id": [1], "ts": ["soon"]}})",
           422, "ts"},
       Bad{"/push", R"({"push_source_name": "nope", "df": {"a": [1]}})", 404,
           "no feature view is fed by push source \"nope\""},
       Bad{"/materialize", R"({"start_ts": "yesterday", "end_ts": "2024-01-01"})", 422, "start_ts"},
       Bad{"/nope", "{}", 404, "no endpoint"}}) {
    json e = Post(c, server.port(), b.path, b.body, &status);
    EXPECT_EQ(status, b.status) << b.body << " -> " << e.dump();
    ASSERT_TRUE(e.contains("detail")) << e.dump();
    EXPECT_NE(e["detail"].get<std::string>().find(b.needle), std::string::npos) << e.dump();
  }
  http::ClientRequest health;
  health.host = "127.0.0.1";
  health.port = static_cast<uint16_t>(server.port());
  health.target = "/health";
  auto h = c.Send(health);
  ASSERT_OK(h);
  EXPECT_EQ((*h)->status(), 200);
  server.Stop();
}

}  // namespace
}  // namespace strata::features
