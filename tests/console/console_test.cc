#include <atomic>
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/console/console.h>

#include "console/metrics_history.h"

namespace strata::console {
namespace {

TEST(MetricsHistoryTest, QuantileInterpolatesInsideTheBucket) {
  // Prometheus' histogram_quantile: 100 observations, 50 in (0, 0.1], 50 in
  // (0.1, 1]; the 99th lies 49/50 of the way through the second bucket.
  std::map<double, double> before = {{0.1, 10}, {1, 10}, {INFINITY, 10}};
  std::map<double, double> after = {{0.1, 60}, {1, 110}, {INFINITY, 110}};
  EXPECT_NEAR(MetricsHistory::QuantileBetween(before, after, 0.99), 0.1 + 0.9 * 49.0 / 50.0, 1e-9);
  EXPECT_EQ(MetricsHistory::QuantileBetween(after, after, 0.99), -1);  // nothing observed
  // All beyond the last finite bound: that bound.
  std::map<double, double> inf = {{0.1, 10}, {1, 10}, {INFINITY, 20}};
  EXPECT_EQ(MetricsHistory::QuantileBetween(before, inf, 0.99), 1);
}

nlohmann::json Chart(const std::string& json, const std::string& id) {
  const nlohmann::json all = nlohmann::json::parse(json);  // kept: the loop walks into it
  for (const auto& c : all["charts"])
    if (c["id"] == id) return c;
  return nullptr;
}

TEST(MetricsHistoryTest, RatesErrorsAndGaugesFromPrometheusText) {
  MetricsHistory h(10);
  h.Add(1000,
        "# TYPE strata_s3_requests_total counter\n"
        "strata_s3_requests_total{op=\"GetObject\",code=\"200\"} 10\n"
        "strata_s3_requests_total{op=\"GetObject\",code=\"404\"} 2\n"
        "strata_vector_points 7\n");
  h.Add(6000,
        "strata_s3_requests_total{op=\"GetObject\",code=\"200\"} 50\n"
        "strata_s3_requests_total{op=\"GetObject\",code=\"404\"} 12\n"
        "strata_vector_points 9\n");
  std::string j = h.ChartsJson();
  auto req = Chart(j, "s3_requests")["points"];
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0][0], 6000);
  EXPECT_DOUBLE_EQ(req[0][1].get<double>(), 10.0);  // (62 - 12) / 5 s
  EXPECT_DOUBLE_EQ(Chart(j, "s3_errors")["points"][0][1].get<double>(), 2.0);
  auto pts = Chart(j, "vector_points")["points"];
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1][1], 9);
  // A counter that went backwards (a restart) gives no rate point.
  h.Add(11000, "strata_s3_requests_total{code=\"200\"} 1\n");
  EXPECT_EQ(Chart(h.ChartsJson(), "s3_requests")["points"].size(), 1u);
}

TEST(MetricsHistoryTest, KeepsOnlyTheWindow) {
  MetricsHistory h(3);
  for (int i = 0; i < 10; ++i) h.Add(i * 1000, "strata_vector_points 1\n");
  EXPECT_EQ(h.size(), 3u);
}

class ConsoleTest : public ::testing::Test {
 protected:
  ConsoleTest() {
    ConsoleOptions o;
    o.find_user = [](std::string_view ak) -> std::optional<ConsoleUser> {
      if (ak == "AKROOT") return ConsoleUser{"root", "AKROOT", "root-secret-123", true};
      return std::nullopt;
    };
    o.s3_endpoint = "http://127.0.0.1:9000";
    o.s3 = [this](http::Request& r, http::ResponseWriter& w) {
      ++s3_calls;
      seen_path = std::string(r.path);
      seen_query = std::string(r.query);
      seen_auth = std::string(r.Header("Authorization").value_or(""));
      seen_sha = std::string(r.Header("x-amz-content-sha256").value_or(""));
      seen_cookie = r.Header("Cookie").has_value();
      auto body = r.ReadAllBody(1 << 20);
      seen_body = body ? *body : "";
      (void)w.Send("<ok/>");
    };
    console = std::make_unique<Console>(std::move(o));
    handler = [this](http::Request& r, http::ResponseWriter& w) { console->Handle(r, w); };
  }

  http::RecordedResponse Call(std::string_view method, std::string_view target,
                              std::vector<std::pair<std::string, std::string>> headers = {},
                              std::string_view body = {}) {
    headers.emplace_back("Host", "127.0.0.1:9001");
    return http::ServeInMemory(handler, http::FormatRequest(method, target, headers, body));
  }

  // Signs in; returns (cookie header value, csrf token).
  std::pair<std::string, std::string> SignIn() {
    auto r = Call("POST", "/console/api/login", {{"Content-Type", "application/json"}},
                  R"({"access_key":"AKROOT","secret_key":"root-secret-123"})");
    EXPECT_EQ(r.status, 200) << r.body;
    std::string cookie(r.Header("Set-Cookie").value_or(""));
    return {cookie.substr(0, cookie.find(';')), nlohmann::json::parse(r.body)["csrf"]};
  }

  std::unique_ptr<Console> console;
  http::Handler handler;
  std::atomic<int> s3_calls{0};
  std::string seen_path, seen_query, seen_auth, seen_sha, seen_body;
  bool seen_cookie = true;
};

TEST_F(ConsoleTest, ServesThePageAndRefusesApisWithoutSession) {
  auto page = Call("GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("app.js"), std::string::npos);
  EXPECT_EQ(Call("GET", "/console/assets/app.js").status, 200);
  EXPECT_EQ(Call("GET", "/console/assets/nope.js").status, 404);
  for (const char* t : {"/console/api/session", "/console/api/s3/", "/console/api/metrics",
                        "/console/api/vector/collections", "/console/api/features"})
    EXPECT_EQ(Call("GET", t).status, 401) << t;
  EXPECT_EQ(Call("GET", "/console/api/s3/", {{"Cookie", "strata_console=deadbeef"}}).status, 401);
  EXPECT_EQ(s3_calls, 0);
}

TEST_F(ConsoleTest, SignInChecksTheSecretAndNeverReturnsIt) {
  auto bad = Call("POST", "/console/api/login", {{"Content-Type", "application/json"}},
                  R"({"access_key":"AKROOT","secret_key":"root-secret-12"})");
  EXPECT_EQ(bad.status, 401);
  EXPECT_FALSE(bad.Header("Set-Cookie").has_value());
  auto ok = Call("POST", "/console/api/login", {{"Content-Type", "application/json"}},
                 R"({"access_key":"AKROOT","secret_key":"root-secret-123"})");
  ASSERT_EQ(ok.status, 200);
  std::string cookie(ok.Header("Set-Cookie").value_or(""));
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(ok.body.find("root-secret-123"), std::string::npos);
}

TEST_F(ConsoleTest, WritesNeedTheCsrfTokenAndAreSignedForS3) {
  auto [cookie, csrf] = SignIn();
  auto no_token = Call("PUT", "/console/api/s3/bkt/a%20b", {{"Cookie", cookie}}, "data");
  EXPECT_EQ(no_token.status, 403);
  auto wrong = Call("PUT", "/console/api/s3/bkt/a%20b",
                    {{"Cookie", cookie}, {"X-CSRF-Token", std::string(csrf.size(), '0')}}, "data");
  EXPECT_EQ(wrong.status, 403);
  EXPECT_EQ(s3_calls, 0);
  auto cross =
      Call("PUT", "/console/api/s3/bkt/k",
           {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Origin", "http://evil.example"}}, "x");
  EXPECT_EQ(cross.status, 403);
  auto ok = Call("PUT", "/console/api/s3/bkt/a%20b?tagging",
                 {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Origin", "http://127.0.0.1:9001"}},
                 "data");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(s3_calls, 1);
  EXPECT_EQ(seen_path, "/bkt/a%20b");
  EXPECT_EQ(seen_query, "tagging");
  EXPECT_EQ(seen_auth.rfind("AWS4-HMAC-SHA256 Credential=AKROOT/", 0), 0u) << seen_auth;
  EXPECT_EQ(seen_sha, "UNSIGNED-PAYLOAD");
  EXPECT_FALSE(seen_cookie);
  EXPECT_EQ(seen_body, "data");
  EXPECT_NE(std::string(ok.Header("Content-Security-Policy").value_or("")).find("sandbox"),
            std::string::npos);
  // A signature of the browser's own is refused, not passed on.
  EXPECT_EQ(Call("GET", "/console/api/s3/bkt/k?X-Amz-Signature=00", {{"Cookie", cookie}}).status,
            400);
  EXPECT_EQ(s3_calls, 1);
}

TEST_F(ConsoleTest, SwitchedOffServicesAnswerNotImplemented) {
  auto [cookie, csrf] = SignIn();
  EXPECT_EQ(Call("GET", "/console/api/vector/collections", {{"Cookie", cookie}}).status, 501);
  EXPECT_EQ(Call("GET", "/console/api/features", {{"Cookie", cookie}}).status, 501);
  auto out = Call("POST", "/console/api/logout", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}});
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(Call("GET", "/console/api/session", {{"Cookie", cookie}}).status, 401);
}

}  // namespace
}  // namespace strata::console
