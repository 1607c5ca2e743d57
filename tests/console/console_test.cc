#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/cache/checkpoint.h>
#include <strata/cache/warmer.h>
#include <strata/console/console.h>
#include <strata/features/io.h>
#include <strata/features/repo.h>
#include <strata/fsmeta/meta_engine.h>

#include "console/metrics_history.h"
#include "testutil/testutil.h"

namespace strata::console {
namespace {

using strata::testing::ReadFileOrEmpty;
using strata::testing::TempDir;
using strata::testing::WriteFile;

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
  ConsoleTest() { Make(""); }

  void Make(const std::string& features_repo,
            const std::function<void(ConsoleOptions&)>& tweak = {}) {
    ConsoleOptions o;
    o.find_user = [](std::string_view ak) -> std::optional<ConsoleUser> {
      if (ak == "AKROOT") return ConsoleUser{"root", "AKROOT", "root-secret-123", true};
      if (ak == "AKVIEW") return ConsoleUser{"viewer", "AKVIEW", "view-secret-456", false};
      return std::nullopt;
    };
    o.features_repo = features_repo;
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
    if (tweak) tweak(o);
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
  std::pair<std::string, std::string> SignIn(bool admin = true) {
    auto r = Call("POST", "/console/api/login", {{"Content-Type", "application/json"}},
                  admin ? R"({"access_key":"AKROOT","secret_key":"root-secret-123"})"
                        : R"({"access_key":"AKVIEW","secret_key":"view-secret-456"})");
    EXPECT_EQ(r.status, 200) << r.body;
    std::string cookie(r.Header("Set-Cookie").value_or(""));
    return {cookie.substr(0, cookie.find(';')), nlohmann::json::parse(r.body)["csrf"]};
  }

  // A JSON call of a signed-in session (with its CSRF token).
  http::RecordedResponse Json(const std::pair<std::string, std::string>& who,
                              std::string_view method, std::string_view target,
                              std::string_view body = {}) {
    return Call(
        method, target,
        {{"Cookie", who.first}, {"X-CSRF-Token", who.second}, {"Content-Type", "application/json"}},
        body);
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

TEST_F(ConsoleTest, FilterCheckUsesTheEngineParsers) {
  EXPECT_EQ(Call("POST", "/console/api/vector-filter", {{"Content-Type", "application/json"}},
                 R"({"type":"milvus","filter":"a == 1"})")
                .status,
            401);
  auto who = SignIn(false);  // reading: any signed-in user
  auto no_csrf = Call("POST", "/console/api/vector-filter", {{"Cookie", who.first}},
                      R"({"type":"milvus","filter":"a == 1"})");
  EXPECT_EQ(no_csrf.status, 403);
  auto ok = Json(who, "POST", "/console/api/vector-filter",
                 R"({"type":"milvus","filter":"color == \"red\" and price < 10"})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  const std::string parsed = nlohmann::json::parse(ok.body)["parsed"];
  EXPECT_NE(parsed.find("color"), std::string::npos) << parsed;
  EXPECT_NE(parsed.find("price"), std::string::npos) << parsed;
  auto q = Json(
      who, "POST", "/console/api/vector-filter",
      R"({"type":"qdrant","filter":"{\"must\":[{\"key\":\"color\",\"match\":{\"value\":\"red\"}}]}"})");
  EXPECT_EQ(q.status, 200) << q.body;
  // The same condition in both forms parses to the same tree.
  auto m = Json(who, "POST", "/console/api/vector-filter",
                R"({"type":"milvus","filter":"color == \"red\""})");
  EXPECT_EQ(nlohmann::json::parse(q.body)["parsed"], nlohmann::json::parse(m.body)["parsed"]);
  for (const char* bad :
       {R"({"type":"milvus","filter":"color == "})",
        R"({"type":"milvus","filter":"color ~ \"red\""})", R"({"type":"milvus","filter":"(a > 1"})",
        R"({"type":"qdrant","filter":"{\"must\": ["})"}) {
    auto r = Json(who, "POST", "/console/api/vector-filter", bad);
    EXPECT_EQ(r.status, 400) << bad;
    auto j = nlohmann::json::parse(r.body);
    EXPECT_EQ(j["error"], "InvalidFilter") << r.body;
    const std::string msg = j["message"];
    EXPECT_TRUE(msg.rfind("Milvus expression: ", 0) == 0 ||
                msg.rfind("Qdrant JSON filter: ", 0) == 0)
        << msg;
    EXPECT_GT(msg.size(), 24u) << msg;  // the parser's reason follows
  }
  EXPECT_EQ(
      Json(who, "POST", "/console/api/vector-filter", R"({"type":"sql","filter":"a"})").status,
      400);
  EXPECT_EQ(Call("GET", "/console/api/vector-filter", {{"Cookie", who.first}}).status, 405);
}

// 2024-01-01 00:00:00 UTC in microseconds.
constexpr int64_t kDay1Us = 1704067200LL * 1000000;
constexpr int64_t kHourUs = 3600LL * 1000000;

class FeatureReportsTest : public ConsoleTest {
 protected:
  FeatureReportsTest() {
    const std::string repo = dir.Join("repo");
    EXPECT_TRUE(features::InitFeatureRepo(repo).ok());
    EXPECT_TRUE(WriteFile(repo + "/defs.yaml",
                          "entities:\n  - {name: driver, join_keys: [driver_id]}\n"
                          "feature_views:\n  - name: stats\n    entities: [driver]\n    ttl: 1d\n"
                          "    schema:\n      - {name: conv_rate, dtype: Float64}\n"
                          "      - {name: trips, dtype: Int64}\n"
                          "    source: {path: data/stats.csv, timestamp_field: ts}\n"));
    // Day 1 and day 2: ten rows each; trips has the same values on both days,
    // conv_rate moves wholly above day 1's range. Day 3: two outliers that a
    // window ending at day 3 must not see.
    std::string csv = "driver_id,ts,conv_rate,trips\n";
    for (int h = 0; h < 10; ++h)
      csv += fmt::format("{},2024-01-01 {:02}:00:00,{},{}\n", 1000 + h, h, 0.1 + h * 0.01, h % 5);
    for (int h = 0; h < 10; ++h)
      csv += fmt::format("{},2024-01-02 {:02}:00:00,{},{}\n", 1000 + h, h, 0.6 + h * 0.01, h % 5);
    csv += "1000,2024-01-03 00:00:00,5.0,100\n1001,2024-01-03 00:00:00,6.0,200\n";
    std::filesystem::create_directories(repo + "/data");
    EXPECT_TRUE(WriteFile(repo + "/data/stats.csv", csv));
    auto r = features::LoadFeatureRepo(repo);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_TRUE(features::ApplyRepo(*r).ok());
    // As `strata features materialize` records it: day 1 up to day 2, 12:00.
    auto reg = features::LoadRegistry(r->config.registry_path);
    EXPECT_TRUE(reg.ok());
    reg->FindView("stats")->materialization_intervals.push_back({kDay1Us, kDay1Us + 36 * kHourUs});
    EXPECT_TRUE(features::SaveRegistry(r->config.registry_path, *reg).ok());
    Make(repo);
  }
  TempDir dir{"strata-console-features"};
};

TEST_F(FeatureReportsTest, FreshnessFromTheRegistryAndTheSource) {
  auto who = SignIn(false);
  EXPECT_EQ(Call("GET", "/console/api/features/freshness?view=stats").status, 401);
  auto r = Call("GET", "/console/api/features/freshness?view=stats", {{"Cookie", who.first}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["last_materialized_end_us"], kDay1Us + 36 * kHourUs);
  // The newest row inside the materialized interval: day 2, 09:00.
  EXPECT_EQ(j["newest_online_event_us"], kDay1Us + 33 * kHourUs);
  EXPECT_EQ(j["source_newest_event_us"], kDay1Us + 48 * kHourUs);
  EXPECT_EQ(j["source_oldest_event_us"], kDay1Us);
  EXPECT_EQ(j["source_rows"], 22);
  EXPECT_EQ(j["ttl_seconds"], 86400);
  EXPECT_EQ(
      Call("GET", "/console/api/features/freshness?view=nope", {{"Cookie", who.first}}).status,
      404);
  EXPECT_EQ(Call("GET", "/console/api/features/freshness", {{"Cookie", who.first}}).status, 400);
}

TEST_F(FeatureReportsTest, SkewBetweenTwoWindowsOfTheSource) {
  auto who = SignIn(false);
  const std::string body =
      R"({"view":"stats","reference":{"start":"2024-01-01T00:00:00Z","end":"2024-01-02"},)"
      R"("current":{"start":"2024-01-02","end":"2024-01-03T00:00:00Z"}})";
  EXPECT_EQ(Call("POST", "/console/api/features/skew", {{"Cookie", who.first}}, body).status, 403);
  auto r = Json(who, "POST", "/console/api/features/skew", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["reference_rows"], 10);
  EXPECT_EQ(j["current_rows"], 10);  // day 3's outliers are outside [start, end)
  ASSERT_EQ(j["features"].size(), 2u);
  const auto& conv = j["features"][0];
  const auto& trips = j["features"][1];
  EXPECT_EQ(conv["feature"], "conv_rate");
  EXPECT_EQ(conv["kind"], "numeric");
  EXPECT_EQ(conv["verdict"], "significant");
  EXPECT_GT(conv["psi"].get<double>(), 1.0);
  // Every current value lies above the reference's top edge: the last bin.
  EXPECT_NEAR(conv["bins"].back()["current"].get<double>(), 1.0, 1e-3);
  EXPECT_EQ(trips["feature"], "trips");
  EXPECT_NEAR(trips["psi"].get<double>(), 0.0, 1e-12);  // the same values on both days
  EXPECT_EQ(trips["verdict"], "stable");
  // Only the features asked for.
  auto one = Json(who, "POST", "/console/api/features/skew",
                  body.substr(0, body.size() - 1) + R"(,"features":["trips"]})");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(nlohmann::json::parse(one.body)["features"].size(), 1u);
}

TEST_F(FeatureReportsTest, SkewRefusesBadWindowsWithAReason) {
  auto who = SignIn(false);
  auto call = [&](const std::string& b) {
    return Json(who, "POST", "/console/api/features/skew", b);
  };
  auto empty = call(R"({"view":"stats","reference":{"start":"2023-01-01","end":"2023-02-01"},)"
                    R"("current":{"start":"2024-01-02","end":"2024-01-03"}})");
  EXPECT_EQ(empty.status, 400);
  auto m = nlohmann::json::parse(empty.body)["message"].get<std::string>();
  EXPECT_NE(m.find("reference window"), std::string::npos) << m;
  EXPECT_NE(m.find("2024-01-01 00:00:00"), std::string::npos) << m;  // where the events are
  EXPECT_EQ(call(R"({"view":"stats","reference":{"start":"2024-01-02","end":"2024-01-01"},)"
                 R"("current":{"start":"2024-01-02","end":"2024-01-03"}})")
                .status,
            400);
  EXPECT_EQ(call(R"({"view":"stats","reference":{"start":"yesterday","end":"2024-01-01"},)"
                 R"("current":{"start":"2024-01-02","end":"2024-01-03"}})")
                .status,
            400);
  EXPECT_EQ(call(R"({"view":"stats","reference":{"start":"2024-01-01","end":"2024-01-02"},)"
                 R"("current":{"start":"2024-01-02","end":"2024-01-03"},"features":["nope"]})")
                .status,
            400);
  // A parameter this API does not take is refused, not ignored.
  EXPECT_EQ(call(R"({"view":"stats","reference":{"start":"2024-01-01","end":"2024-01-02"},)"
                 R"("current":{"start":"2024-01-02","end":"2024-01-03"},"bins":20})")
                .status,
            400);
  EXPECT_EQ(call(R"({"view":"nope","reference":{"start":"2024-01-01","end":"2024-01-02"},)"
                 R"("current":{"start":"2024-01-02","end":"2024-01-03"}})")
                .status,
            404);
  EXPECT_EQ(Call("GET", "/console/api/features/skew", {{"Cookie", who.first}}).status, 405);
}

TEST_F(ConsoleTest, FeatureReportsWithoutARepositoryAreNotImplemented) {
  auto who = SignIn();
  EXPECT_EQ(Call("GET", "/console/api/features/freshness?view=x", {{"Cookie", who.first}}).status,
            501);
}

TEST_F(ConsoleTest, FsVolumeListsSessionsForAdminsAndWritesNothing) {
  TempDir dir("strata-console-fs");
  const std::string url = "sqlite3://" + dir.Join("meta.db");
  auto meta = fsmeta::OpenMeta(url);
  ASSERT_TRUE(meta.ok()) << meta.error().ToString();
  fsmeta::Format f;
  f.name = "vol1";
  f.storage = "file:///tmp/strata-console-fs-objects";
  ASSERT_TRUE((*meta)->Init(f, false).ok());
  fsmeta::SessionInfo si;
  si.host = "trainer-7";
  si.mount_point = "/mnt/data";
  si.version = "test";
  si.pid = 4242;
  ASSERT_TRUE((*meta)->NewSession(si).ok());
  const std::string body = nlohmann::json{{"url", url}}.dump();

  auto viewer = SignIn(false);
  auto denied = Json(viewer, "POST", "/console/api/fs/volume", body);
  EXPECT_EQ(denied.status, 403) << denied.body;
  auto admin = SignIn(true);
  EXPECT_EQ(Call("POST", "/console/api/fs/volume", {{"Cookie", admin.first}}, body).status, 403);
  auto r = Json(admin, "POST", "/console/api/fs/volume", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["volume"]["name"], "vol1");
  EXPECT_EQ(j["volume"]["storage"], f.storage);
  ASSERT_EQ(j["sessions"].size(), 1u);
  EXPECT_EQ(j["sessions"][0]["host"], "trainer-7");
  EXPECT_EQ(j["sessions"][0]["pid"], 4242);
  EXPECT_EQ(j["sessions"][0]["mount_point"], "/mnt/data");
  EXPECT_EQ(j["sessions"][0]["stale"], false);
  EXPECT_LT(j["sessions"][0]["heartbeat_age_s"].get<double>(), 60);
  // Reading registered no session of its own.
  auto again = (*meta)->ListSessions();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 1u);

  // A missing file is not created; a file that is not SQLite is not touched.
  const std::string missing = dir.Join("missing.db");
  auto r404 = Json(admin, "POST", "/console/api/fs/volume",
                   nlohmann::json{{"url", "sqlite3://" + missing}}.dump());
  EXPECT_EQ(r404.status, 404) << r404.body;
  EXPECT_FALSE(std::filesystem::exists(missing));
  ASSERT_TRUE(WriteFile(dir.Join("notes.txt"), "not a database, long enough to read"));
  auto r400 = Json(admin, "POST", "/console/api/fs/volume",
                   nlohmann::json{{"url", "sqlite3://" + dir.Join("notes.txt")}}.dump());
  EXPECT_EQ(r400.status, 400) << r400.body;
  EXPECT_EQ(ReadFileOrEmpty(dir.Join("notes.txt")), "not a database, long enough to read");
  auto scheme = Json(admin, "POST", "/console/api/fs/volume", R"({"url":"ftp://x/y"})");
  EXPECT_EQ(scheme.status, 400);
  EXPECT_NE(scheme.body.find("sqlite3://"), std::string::npos) << scheme.body;
  EXPECT_EQ(Json(admin, "POST", "/console/api/fs/volume", R"({"path":"x"})").status, 400);
}

// A served-vector log file as ServingLogger writes it (features/serving_log.h):
// join keys, per feature the value, __timestamp and __status, then
// __log_timestamp. conv_rate is named view__feature, trips bare.
void WriteLogFile(const std::string& path, int64_t log_start_us, int rows, double conv_base) {
  using features::DataType;
  features::Table t;
  features::Column id(DataType::Int64()), conv(DataType::Double()), status(DataType::String()),
      trips(DataType::Int64()), at(DataType::Timestamp(features::TimeUnit::kMicro, true));
  for (int h = 0; h < rows; ++h) {
    id.Append<int64_t>(1000 + h);
    conv.Append<double>(conv_base + h * 0.01);
    status.AppendString("PRESENT");
    trips.Append<int64_t>(h % 5);
    at.Append<int64_t>(log_start_us + h * kHourUs);
  }
  ASSERT_TRUE(t.AddColumn({"driver_id", DataType::Int64(), true}, id).ok());
  ASSERT_TRUE(t.AddColumn({"stats__conv_rate", DataType::Double(), true}, conv).ok());
  ASSERT_TRUE(t.AddColumn({"stats__conv_rate__status", DataType::String(), true}, status).ok());
  ASSERT_TRUE(t.AddColumn({"trips", DataType::Int64(), true}, trips).ok());
  ASSERT_TRUE(
      t.AddColumn({"__log_timestamp", DataType::Timestamp(features::TimeUnit::kMicro, true), true},
                  at)
          .ok());
  auto st = features::WriteTableFile(path, t);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST_F(FeatureReportsTest, SkewAgainstTheServingLog) {
  const std::string log = dir.Join("served_log");
  std::filesystem::create_directories(log);
  int flushes = 0;
  Make(dir.Join("repo"), [&](ConsoleOptions& o) {
    o.serving_log_dir = log;
    o.flush_serving_log = [&flushes] {
      ++flushes;
      return Status::Ok();
    };
  });
  auto who = SignIn(false);
  const std::string ref =
      R"({"view":"stats","reference":{"start":"2024-01-01","end":"2024-01-02"},)";
  auto call = [&](const std::string& current) {
    return Json(who, "POST", "/console/api/features/skew", ref + R"("current":)" + current + "}");
  };
  // Nothing logged yet: a clear 404 that says how to turn logging on.
  auto none = call(R"({"serving_log":true})");
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_EQ(nlohmann::json::parse(none.body)["error"], "NoServingLog");
  EXPECT_NE(none.body.find("sample_rate"), std::string::npos) << none.body;
  // Served on day 5: conv_rate as on day 2 (above day 1's range), trips as always.
  const int64_t day5 = kDay1Us + 4 * 24 * kHourUs;
  WriteLogFile(log + "/served-0001.parquet", day5, 10, 0.6);
  auto r = call(R"({"serving_log":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["current"]["source"], "serving_log");
  EXPECT_EQ(j["current"]["log_files"], 1);
  EXPECT_EQ(j["current"]["log_oldest_us"], day5);
  EXPECT_EQ(j["reference_rows"], 10);
  EXPECT_EQ(j["current_rows"], 10);
  ASSERT_EQ(j["features"].size(), 2u);
  EXPECT_EQ(j["features"][0]["feature"], "conv_rate");
  EXPECT_EQ(j["features"][0]["verdict"], "significant");
  EXPECT_NEAR(j["features"][0]["bins"].back()["current"].get<double>(), 1.0, 1e-3);
  EXPECT_EQ(j["features"][1]["feature"], "trips");
  EXPECT_NEAR(j["features"][1]["psi"].get<double>(), 0.0, 1e-12);
  EXPECT_GE(flushes, 2);  // the logger's queue is published before each read
  // The same as a window of the source with the same values (day 2).
  auto offline = call(R"({"start":"2024-01-02","end":"2024-01-03"})");
  ASSERT_EQ(offline.status, 200) << offline.body;
  EXPECT_NEAR(nlohmann::json::parse(offline.body)["features"][0]["psi"].get<double>(),
              j["features"][0]["psi"].get<double>(), 1e-9);
  // A window on the log's own time: the first five hours of day 5.
  auto half =
      call(fmt::format(R"({{"serving_log":true,"start":{},"end":{}}})", day5, day5 + 5 * kHourUs));
  ASSERT_EQ(half.status, 200) << half.body;
  EXPECT_EQ(nlohmann::json::parse(half.body)["current_rows"], 5);
  auto empty = call(R"({"serving_log":true,"start":"2030-01-01","end":"2030-01-02"})");
  EXPECT_EQ(empty.status, 400) << empty.body;
  EXPECT_EQ(nlohmann::json::parse(empty.body)["error"], "EmptyWindow");
  EXPECT_NE(empty.body.find("served-vector log"), std::string::npos) << empty.body;
  EXPECT_EQ(call(R"({"serving_log":false})").status, 400);
  // A log file that is not Parquet: 422, its name relative to the log directory.
  ASSERT_TRUE(WriteFile(log + "/served-0002.parquet", "not parquet at all, just text"));
  auto bad = call(R"({"serving_log":true})");
  EXPECT_EQ(bad.status, 422) << bad.body;
  EXPECT_NE(bad.body.find("SERVING_LOG/served-0002.parquet"), std::string::npos) << bad.body;
  EXPECT_EQ(bad.body.find(log), std::string::npos) << bad.body;
  std::filesystem::remove(log + "/served-0002.parquet");
  EXPECT_EQ(call(R"({"serving_log":true,"limit":3})").status, 400);
  // A feature server without a log: 501.
  Make(dir.Join("repo"));
  who = SignIn(false);
  EXPECT_EQ(call(R"({"serving_log":true})").status, 501);
}

TEST_F(ConsoleTest, WarmJobsFromProgressFilesForAdminsOnly) {
  TempDir dir("strata-console-warm");
  std::filesystem::create_directories(dir.Join("cache/job-a"));
  std::filesystem::create_directories(dir.Join("cache/job-b"));
  std::filesystem::create_directories(dir.Join("cache/job-c"));
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  cache::WarmProgress p;
  p.state = "running";
  p.host = host;
  p.pid = ::getpid();
  p.started_us = now_us - 10'000'000;
  p.updated_us = now_us;
  p.interval_ms = 1000;
  p.objects_total = 100;
  p.objects_done = 25;
  p.bytes_done = 25 << 20;
  p.bytes_total = 100 << 20;
  p.bytes_per_s = 5 << 20;
  p.eta_s = 15;
  ASSERT_TRUE(WriteFile(dir.Join("cache/job-a/warm.progress.json"), cache::WarmProgressJson(p)));
  // A writer killed with -9: "running", but its pid is gone.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  cache::WarmProgress gone = p;
  gone.pid = child;
  ASSERT_TRUE(WriteFile(dir.Join("cache/job-b/warm.progress.json"), cache::WarmProgressJson(gone)));
  ASSERT_TRUE(WriteFile(dir.Join("cache/job-c/warm.progress.json"), "{\"format\": 1}"));
  Make("", [&](ConsoleOptions& o) { o.warm_dirs = {dir.Join("cache"), dir.Join("nope")}; });
  auto viewer = SignIn(false);
  EXPECT_EQ(Call("GET", "/console/api/datapath/warm", {{"Cookie", viewer.first}}).status, 403);
  auto admin = SignIn(true);
  auto r = Call("GET", "/console/api/datapath/warm", {{"Cookie", admin.first}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["jobs"].size(), 2u) << r.body;
  EXPECT_EQ(j["jobs"][0]["cache_dir"], dir.Join("cache/job-a"));
  EXPECT_EQ(j["jobs"][0]["status"], "running");
  EXPECT_EQ(j["jobs"][0]["alive"], true);
  EXPECT_EQ(j["jobs"][0]["objects_done"], 25);
  EXPECT_DOUBLE_EQ(j["jobs"][0]["fraction"].get<double>(), 0.25);
  EXPECT_EQ(j["jobs"][0]["eta_s"], 15);
  EXPECT_EQ(j["jobs"][1]["status"], "gone");
  EXPECT_EQ(j["jobs"][1]["alive"], false);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["file"], dir.Join("cache/job-c/warm.progress.json"));
  EXPECT_EQ(j["dirs"][1]["exists"], false);
  EXPECT_EQ(Json(admin, "POST", "/console/api/datapath/warm", "{}").status, 405);
}

TEST_F(ConsoleTest, LocalCheckpointsAreListedWithoutChangingThem) {
  TempDir dir("strata-console-ckpt");
  const std::string run = dir.Join("ckpt/run-42");
  std::filesystem::create_directories(run);
  {
    cache::CheckpointOptions co;
    co.local_dir = run;
    co.keep_local = 0;
    co.fsync = false;
    auto m = cache::CheckpointManager::Open(co);
    ASSERT_TRUE(m.ok()) << m.error().ToString();
    const std::string a(1000, 'a'), b(3000, 'b');
    for (uint64_t step : {100, 200, 300})
      ASSERT_TRUE((*m)->Save(step, {cache::CheckpointItem::Blob("model.pt", step == 200 ? b : a),
                                    cache::CheckpointItem::Blob("optim.bin", a)})
                      .ok());
  }
  // Step 300 damaged (a file cut short), step 400 being saved, 200 not uploaded yet.
  const std::string s300 = run + "/" + cache::CheckpointManager::StepName(300);
  std::filesystem::resize_file(s300 + "/model.pt", 10);
  const std::string partial = run + "/.step-000000000400.partial-0000beef";
  std::filesystem::create_directories(partial);
  ASSERT_TRUE(WriteFile(partial + "/model.pt", std::string(500, 'p')));
  ASSERT_TRUE(WriteFile(run + "/step-000000000200/.upload", "pending\n"));
  Make("", [&](ConsoleOptions& o) { o.checkpoint_dirs = {dir.Join("ckpt")}; });
  auto viewer = SignIn(false);
  EXPECT_EQ(Call("GET", "/console/api/datapath/checkpoints", {{"Cookie", viewer.first}}).status,
            403);
  auto admin = SignIn(true);
  auto r = Call("GET", "/console/api/datapath/checkpoints", {{"Cookie", admin.first}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["runs"].size(), 1u) << r.body;
  EXPECT_EQ(j["runs"][0]["dir"], run);
  const auto& steps = j["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 4u) << r.body;
  EXPECT_EQ(steps[0]["step"], 400);
  EXPECT_EQ(steps[0]["state"], "partial");
  EXPECT_EQ(steps[0]["bytes"], 500);
  EXPECT_EQ(steps[1]["step"], 300);
  EXPECT_EQ(steps[1]["state"], "damaged");
  EXPECT_NE(steps[1]["note"].get<std::string>().find("model.pt"), std::string::npos);
  EXPECT_EQ(steps[2]["step"], 200);
  EXPECT_EQ(steps[2]["state"], "complete");
  EXPECT_EQ(steps[2]["upload_pending"], true);
  EXPECT_EQ(steps[2]["bytes"], 4000);
  EXPECT_EQ(steps[2]["files"], 2);
  EXPECT_FALSE(steps[2]["created"].get<std::string>().empty());
  EXPECT_EQ(steps[3]["step"], 100);
  EXPECT_EQ(steps[3]["upload_pending"], false);
  EXPECT_EQ(j["runs"][0]["complete_bytes"], 6000);
  // Listing removed nothing (CheckpointManager::Open would drop the partial save).
  EXPECT_TRUE(std::filesystem::exists(partial + "/model.pt"));
  EXPECT_EQ(std::filesystem::file_size(s300 + "/model.pt"), 10u);
}

}  // namespace
}  // namespace strata::console
