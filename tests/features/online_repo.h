// The feature repository the online tests serve (tests/features/online_test.cc and tests/feast
// use it): views "stats" (rate Float64, trips Int64, name String; ttl 0) and
// "geo" (visits Int32; ttl 2h, keys driver_id and city), service "all" of both.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <strata/features/parquet.h>
#include <strata/features/repo.h>

#include "testutil/testutil.h"

namespace strata::features::testrepo {

namespace fs = std::filesystem;

constexpr int64_t kH = 3600LL * 1000000;
constexpr int64_t kBase = 1700000000LL * 1000000;

inline void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A repo with two views sharing the driver entity; `online` picks the store.
inline FeatureRepo MakeRepo(const std::string& dir, const std::string& online) {
  WriteText(dir + "/feature_store.yaml", "project: online_test\nonline_store:\n" + online);
  WriteText(dir + "/defs.yaml", R"(entities:
  - {name: driver, join_keys: [driver_id]}
  - {name: city, join_keys: [city]}
feature_views:
  - name: stats
    entities: [driver]
    ttl: 0
    schema:
      - {name: rate, dtype: Float64}
      - {name: trips, dtype: Int64}
      - {name: name, dtype: String}
    source: {path: data/stats.parquet, timestamp_field: ts, created_timestamp_column: created}
  - name: geo
    entities: [driver, city]
    ttl: 2h
    schema:
      - {name: visits, dtype: Int32}
    source: {path: data/geo.parquet, timestamp_field: ts}
feature_services:
  - name: all
    features: [stats, geo]
)");
  Table stats(Schema{{"driver_id", DataType::Int64()},
                     {"ts", DataType::Timestamp()},
                     {"created", DataType::Timestamp()},
                     {"rate", DataType::Double()},
                     {"trips", DataType::Int32()},
                     {"name", DataType::String()}});
  auto add = [&](int64_t d, int64_t h, int64_t created, std::optional<double> rate, int32_t trips,
                 const char* name) {
    stats.column(0).Append<int64_t>(d);
    stats.column(1).Append<int64_t>(kBase + h * kH);
    stats.column(2).Append<int64_t>(kBase + created);
    rate ? stats.column(3).Append<double>(*rate) : stats.column(3).AppendNull();
    stats.column(4).Append<int32_t>(trips);
    stats.column(5).AppendString(name);
  };
  add(1, 1, 0, 0.1, 10, "a");
  add(1, 3, 0, 0.3, 30, "c");     // latest in [0, 5h]
  add(1, 3, -1, 0.25, 25, "x");   // same ts, older created: loses
  add(1, 8, 0, 0.8, 80, "late");  // outside the first window
  add(2, 2, 0, std::nullopt, 20, "nul");
  fs::create_directories(dir + "/data");
  EXPECT_OK(WriteParquetFile(dir + "/data/stats.parquet", stats));
  Table geo(Schema{{"driver_id", DataType::Int64()},
                   {"city", DataType::String()},
                   {"ts", DataType::Timestamp()},
                   {"visits", DataType::Int32()}});
  geo.column(0).Append<int64_t>(1);
  geo.column(1).AppendString("paris");
  geo.column(2).Append<int64_t>(kBase + 2 * kH);
  geo.column(3).Append<int32_t>(7);
  EXPECT_OK(WriteParquetFile(dir + "/data/geo.parquet", geo));
  auto repo = LoadFeatureRepo(dir);
  EXPECT_OK(repo);
  InferEntityTypes(&*repo);  // driver_id int64, city string: checked when serving
  EXPECT_OK(ApplyRepo(*repo));
  auto reg = LoadRegistry(repo->config.registry_path);
  EXPECT_OK(reg);
  reg->config = repo->config;
  return *reg;
}

}  // namespace strata::features::testrepo
