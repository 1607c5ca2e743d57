// The fixture of the Qdrant adapter's unit tests: requests go through the real
// HTTP parser (http::ServeInMemory) into qdrant::Handler over a
// CollectionManager in a temporary directory, with helpers that check
// Qdrant's {"result", "status", "time"} and {"status": {"error"}} envelopes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/qdrant/handler.h>
#include <strata/vector/collection.h>

#include "testutil/json_frontend.h"
#include "testutil/testutil.h"

namespace strata::qdrant {

using nlohmann::json;

using Answer = ::strata::testing::JsonAnswer;

class QdrantHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override { Open({}); }

  void Open(HandlerOptions options) {
    handler_.reset();
    if (!manager_) {
      auto m = vector::CollectionManager::Open(dir_.path() + "/vector");
      ASSERT_OK(m);
      manager_ = std::move(*m);
    }
    handler_ = std::make_unique<Handler>(manager_.get(), std::move(options));
  }

  // A process restart: the manager reopens every collection from disk.
  void Restart() {
    handler_.reset();
    manager_.reset();
    Open({});
  }

  Answer Call(const std::string& method, const std::string& target, const std::string& body = {},
              std::vector<std::pair<std::string, std::string>> headers = {},
              const http::ServerOptions& so = {}) {
    return ::strata::testing::CallJson(*handler_, method, target, body, std::move(headers), so);
  }

  // A Qdrant error: the status, {"status": {"error": "..."}, "time": s}.
  static void ExpectError(const Answer& a, int status, const std::string& fragment) {
    EXPECT_EQ(a.status, status) << a.text;
    ASSERT_TRUE(a.body.is_object()) << a.text;
    ASSERT_TRUE(a.body.contains("status") && a.body["status"].is_object()) << a.text;
    ASSERT_TRUE(a.body["status"].contains("error")) << a.text;
    EXPECT_TRUE(a.body.contains("time")) << a.text;
    EXPECT_NE(a.body["status"]["error"].get<std::string>().find(fragment), std::string::npos)
        << a.text;
  }

  // A success: 200 and {"result": ..., "status": "ok", "time": s}.
  static json ExpectOk(const Answer& a) {
    EXPECT_EQ(a.status, 200) << a.text;
    EXPECT_EQ(a.content_type, "application/json");
    if (!a.body.is_object()) {
      ADD_FAILURE() << "not JSON: " << a.text;
      return json();
    }
    EXPECT_EQ(a.body.value("status", json()), "ok") << a.text;
    EXPECT_TRUE(a.body.contains("time") && a.body["time"].is_number()) << a.text;
    return a.body.value("result", json());
  }

  // A 4-dimensional Dot collection with points 1..4 (payload city, n).
  void MakeCities() {
    ExpectOk(Call("PUT", "/collections/cities", R"({"vectors": {"size": 4, "distance": "Dot"}})"));
    json r = ExpectOk(Call("PUT", "/collections/cities/points?wait=true", R"({"points": [
        {"id": 1, "vector": [0.05, 0.61, 0.76, 0.74], "payload": {"city": "Berlin", "n": 1}},
        {"id": 2, "vector": [0.19, 0.81, 0.75, 0.11], "payload": {"city": "London", "n": 2}},
        {"id": 3, "vector": [0.36, 0.55, 0.47, 0.94], "payload": {"city": "Moscow", "n": 3}},
        {"id": 4, "vector": [0.18, 0.01, 0.85, 0.80], "payload": {"city": "London", "n": 4}}]})"));
    EXPECT_EQ(r["status"], "completed");  // wait=true: applied before the answer
    EXPECT_TRUE(r["operation_id"].is_number_unsigned());
  }

  ::strata::testing::TempDir dir_{"strata-qdrant"};
  std::unique_ptr<vector::CollectionManager> manager_;
  std::unique_ptr<Handler> handler_;
};

}  // namespace strata::qdrant
