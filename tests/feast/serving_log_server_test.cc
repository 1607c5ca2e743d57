// Served-vector logging through the feature server on a real socket (moved
// from tests/features/serving_log_test.cc with the server): rows logged while
// serving read back as served (values, statuses, timestamps, request ids),
// rolled files are always whole, and a skew check against the log tells a
// shifted distribution from an unshifted one.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_client.h>
#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>
#include <strata/features/serving_log.h>
#include <strata/features/skew.h>

#include "feast/test_host.h"
#include "features/log_files.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kBase = 1700000000LL * 1000000;

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// driver_id 0..n-1, one row each: x ~ N(0, 1), label "a"/"b"/"c".
FeatureRepo MakeRepo(const std::string& dir, int n, uint64_t seed) {
  WriteText(dir + "/feature_store.yaml",
            "project: log_test\nonline_store: {type: rocksdb, path: data/online}\n");
  WriteText(dir + "/defs.yaml", R"(entities:
  - {name: driver, join_keys: [driver_id]}
feature_views:
  - name: stats
    entities: [driver]
    schema:
      - {name: x, dtype: Float64}
      - {name: label, dtype: String}
    source: {path: data/stats.parquet, timestamp_field: ts}
)");
  Table t(Schema{{"driver_id", DataType::Int64()},
                 {"ts", DataType::Timestamp()},
                 {"x", DataType::Double()},
                 {"label", DataType::String()}});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (int i = 0; i < n; ++i) {
    t.column(0).Append<int64_t>(i);
    t.column(1).Append<int64_t>(kBase + i);
    t.column(2).Append<double>(normal(rng));
    t.column(3).AppendString(std::string(1, static_cast<char>('a' + i % 3)));
  }
  fs::create_directories(dir + "/data");
  EXPECT_OK(WriteParquetFile(dir + "/data/stats.parquet", t));
  auto repo = LoadFeatureRepo(dir);
  EXPECT_OK(repo);
  EXPECT_OK(CheckSources(*repo));
  InferEntityTypes(&*repo);
  EXPECT_OK(ApplyRepo(*repo));
  auto reg = LoadRegistry(repo->config.registry_path);
  EXPECT_OK(reg);
  reg->config = repo->config;
  return *reg;
}

json Post(http::HttpClient& c, int port, const std::string& path, const std::string& body,
          int* status) {
  return feast::PostJson(c, port, path, body, status);
}

using testlog::LogFiles;

TEST(ServingLogTest, RowsRoundTripAndFilesAreAlwaysWhole) {
  ::strata::testing::TempDir dir("strata-servelog");
  FeatureRepo reg = MakeRepo(dir.path(), 50, 1);
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnlineStore(reg.config));
  MaterializeOptions mo;
  mo.start_us = kBase;
  mo.end_us = kBase + 100;
  ASSERT_OK(Materialize(&reg, store.get(), mo));
  OnlineServiceOptions opt;
  opt.logging.sample_rate = 1;
  opt.logging.path = dir.path() + "/log";
  opt.logging.max_rows_per_file = 7;  // rolls every few requests
  feast::TestFeatureServer server(reg, std::move(store), opt);
  ASSERT_OK(server.Start());
  ASSERT_NE(server.logger(), nullptr);
  http::HttpClient c;
  int status = 0;
  std::vector<json> served;  // the x column of each response
  std::vector<json> statuses;
  for (int i = 0; i < 6; ++i) {
    json r = Post(
        c, server.port(), "/get-online-features",
        fmt::format(
            R"({{"features": ["stats:x", "stats:label"], "entities": {{"driver_id": [{}, {}, 999999]}}}})",
            i, i + 10),
        &status);
    ASSERT_EQ(status, 200) << r.dump();
    served.push_back(r["results"][1]["values"]);
    statuses.push_back(r["results"][1]["statuses"]);
    // Every file visible so far (the writer thread rolls meanwhile) is complete.
    for (const std::string& f : LogFiles(dir.path() + "/log")) EXPECT_OK(ReadParquetFile(f)) << f;
  }
  // Another feature list (full names): other columns, so another file.
  json r = Post(
      c, server.port(), "/get-online-features",
      R"({"features": ["stats:x"], "entities": {"driver_id": [3]}, "full_feature_names": true})",
      &status);
  ASSERT_EQ(status, 200) << r.dump();
  const double x3 = r["results"][1]["values"][0].get<double>();
  server.Stop();  // publishes the open files

  const std::vector<std::string> files = LogFiles(dir.path() + "/log");
  ASSERT_GE(files.size(), 3u);  // 18 rows at ~7 per file, plus the full-names file
  for (const auto& e : fs::directory_iterator(dir.path() + "/log")) {
    EXPECT_TRUE(e.path().filename().string().ends_with(".parquet")) << "leftover " << e.path();
  }
  // The x values in order, as served.
  ASSERT_OK_AND_ASSIGN(auto sample, ReadServingSample(dir.path() + "/log", {"x"}));
  ASSERT_EQ(sample.size(), 1u);
  const Column& xs = sample[0].second;
  ASSERT_EQ(xs.size(), 18u);
  for (size_t i = 0; i < 18; ++i) {
    const json& want = served[i / 3][i % 3];
    if (want.is_null()) {
      EXPECT_TRUE(xs.IsNull(i)) << i;
    } else {
      EXPECT_EQ(xs.values<double>()[i], want.get<double>()) << i;
    }
  }
  // One file in full: Feast's logging columns.
  ASSERT_OK_AND_ASSIGN(Table t, ReadParquetFile(files[0]));
  std::vector<std::string> names;
  for (const Field& f : t.schema()) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"driver_id", "x", "x__timestamp", "x__status", "label",
                                             "label__timestamp", "label__status", "__log_timestamp",
                                             "__request_id"}));
  ASSERT_GE(t.num_rows(), 3u);
  EXPECT_EQ(t.column(0).values<int64_t>()[0], 0);
  EXPECT_EQ(t.column(0).values<int64_t>()[1], 10);
  EXPECT_EQ(t.column(0).values<int64_t>()[2], 999999);
  EXPECT_EQ(t.column(3).StringAt(0), "PRESENT");
  EXPECT_EQ(t.column(3).StringAt(2), "NOT_FOUND");
  EXPECT_EQ(statuses[0][2], "NOT_FOUND");
  EXPECT_EQ(t.column(2).values<int64_t>()[0], kBase + 0);  // the row's event time
  EXPECT_TRUE(t.column(2).IsNull(2));
  EXPECT_EQ(t.column(4).StringAt(1), "b");                      // driver 10
  EXPECT_EQ(t.column(8).StringAt(0), t.column(8).StringAt(2));  // one request id per request
  std::set<std::string> ids;
  for (size_t i = 0; i < t.num_rows(); ++i) ids.insert(std::string(t.column(8).StringAt(i)));
  EXPECT_EQ(ids.size(), t.num_rows() / 3);
  const int64_t logged_at = t.column(7).values<int64_t>()[0];
  EXPECT_LE(std::abs(logged_at - NowMicros()), 600LL * 1000000);
  // The full-names request.
  ASSERT_OK_AND_ASSIGN(auto full, ReadServingSample(dir.path() + "/log", {"stats__x"}));
  ASSERT_EQ(full[0].second.size(), 1u);
  EXPECT_EQ(full[0].second.values<double>()[0], x3);
}

// Serves every driver once with logging on; returns the log directory.
std::string ServeAll(const std::string& dir, const FeatureRepo& reg, const std::string& log, int n,
                     const std::string& push_body) {
  auto store = OpenOnlineStore(reg.config);
  EXPECT_OK(store);
  OnlineServiceOptions opt;
  opt.logging.sample_rate = 1;
  opt.logging.path = dir + "/" + log;
  feast::TestFeatureServer server(reg, std::move(*store), opt);
  EXPECT_OK(server.Start());
  http::HttpClient c;
  int status = 0;
  if (!push_body.empty()) {
    json p = Post(c, server.port(), "/push", push_body, &status);
    EXPECT_EQ(status, 200) << p.dump();
  }
  for (int b = 0; b < n; b += 100) {
    std::string ids;
    for (int i = b; i < std::min(n, b + 100); ++i) ids += fmt::format("{}{}", i == b ? "" : ",", i);
    json r =
        Post(c, server.port(), "/get-online-features",
             fmt::format(
                 R"({{"features": ["stats:x", "stats:label"], "entities": {{"driver_id": [{}]}}}})",
                 ids),
             &status);
    EXPECT_EQ(status, 200) << r.dump();
  }
  server.Stop();
  return opt.logging.path;
}

TEST(ServingLogTest, SkewFromTheLog) {
  ::strata::testing::TempDir dir("strata-servelog-skew");
  constexpr int kN = 2000;
  FeatureRepo reg = MakeRepo(dir.path(), kN, 1);
  {
    ASSERT_OK_AND_ASSIGN(auto store, OpenOnlineStore(reg.config));
    MaterializeOptions mo;
    mo.start_us = kBase;
    mo.end_us = kBase + kN;
    ASSERT_OK(Materialize(&reg, store.get(), mo));
  }
  // The reference: a training set drawn from the same distribution (another seed).
  Table ref(Schema{{"x", DataType::Double()}, {"label", DataType::String()}});
  std::mt19937_64 rng(2);
  std::normal_distribution<double> normal(0, 1);
  for (int i = 0; i < 5000; ++i) {
    ref.column(0).Append<double>(normal(rng));
    ref.column(1).AppendString(std::string(1, static_cast<char>('a' + i % 3)));
  }
  const std::string same = ServeAll(dir.path(), reg, "log_same", kN, "");
  ASSERT_OK_AND_ASSIGN(auto served, ReadServingSample(same));
  ASSERT_OK_AND_ASSIGN(auto psi, ComputeSkew(ref, served));
  ASSERT_EQ(psi.size(), 2u);
  EXPECT_EQ(psi[0].feature, "x");
  EXPECT_EQ(psi[0].serving_rows, kN);
  EXPECT_LT(psi[0].psi, 0.1) << "unshifted x";
  EXPECT_LT(psi[1].psi, 0.1) << "unshifted label";

  // Push a shifted x (mean +1) for every driver, serve again.
  json df = {{"driver_id", json::array()}, {"ts", json::array()}, {"x", json::array()}};
  std::normal_distribution<double> shifted(1, 1);
  for (int i = 0; i < kN; ++i) {
    df["driver_id"].push_back(i);
    df["ts"].push_back("2024-01-01T00:00:00");
    df["x"].push_back(shifted(rng));
  }
  const std::string moved = ServeAll(dir.path(), reg, "log_shifted", kN,
                                     json{{"push_source_name", "stats"}, {"df", df}}.dump());
  ASSERT_OK_AND_ASSIGN(served, ReadServingSample(moved, {"x"}));
  ASSERT_OK_AND_ASSIGN(psi, ComputeSkew(ref, served));
  ASSERT_EQ(psi.size(), 1u);
  EXPECT_GT(psi[0].psi, 0.25) << "x shifted by one standard deviation";
  EXPECT_EQ(psi[0].verdict, "significant");
}

}  // namespace
}  // namespace strata::features
