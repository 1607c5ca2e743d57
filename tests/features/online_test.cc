// Online serving: materialize into RocksDB and a real Redis (redis-server
// started here), get-online-features statuses and values, and bad requests
// answered with clear errors. The Feast HTTP API is tested in tests/feast.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/features/online.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>

#include "features/online_repo.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testrepo::kBase;
using testrepo::kH;
using testrepo::MakeRepo;

std::vector<std::pair<std::string, std::vector<OnlineValue>>> Entities() {
  return {{"driver_id", {OnlineValue::Int(1), OnlineValue::Int(2), OnlineValue::Int(3), OnlineValue::Int(1)}},
          {"city", {OnlineValue::String("paris"), OnlineValue::String("rome"), OnlineValue::String("paris"),
                    OnlineValue::String("rome")}}};
}

// The shared scenario, run against each store.
void Scenario(const std::string& dir, FeatureRepo reg, OnlineStore* store) {
  MaterializeOptions opt;
  opt.start_us = kBase;
  opt.end_us = kBase + 5 * kH;
  MaterializeStats st;
  ASSERT_OK(Materialize(&reg, store, opt, &st));
  EXPECT_EQ(st.views, 2);
  EXPECT_EQ(st.entities_written, 3);  // drivers 1 and 2 for stats, (1, paris) for geo
  // The interval is in the registry file.
  ASSERT_OK_AND_ASSIGN(FeatureRepo saved, LoadRegistry(reg.config.registry_path));
  ASSERT_EQ(saved.FindView("stats")->materialization_intervals.size(), 1u);
  EXPECT_EQ(saved.FindView("stats")->materialization_intervals[0].end_us, kBase + 5 * kH);

  ASSERT_OK_AND_ASSIGN(auto feats, ResolveService(reg, "all"));
  const int64_t now = kBase + 5 * kH;  // geo (ts 2h, ttl 2h) is 3h old: outside max age
  ASSERT_OK_AND_ASSIGN(OnlineResponse r, GetOnlineFeatures(reg, store, feats, Entities(), false, now));
  ASSERT_EQ(r.names, (std::vector<std::string>{"driver_id", "city", "rate", "trips", "name", "visits"}));
  const auto& rate = r.columns[2];
  EXPECT_EQ(rate.values[0], OnlineValue::Double(0.3));
  EXPECT_EQ(rate.statuses[0], "PRESENT");
  EXPECT_EQ(rate.event_ts_us[0], kBase + 3 * kH);
  EXPECT_EQ(rate.statuses[1], "NULL_VALUE");
  EXPECT_EQ(rate.statuses[2], "NOT_FOUND");
  EXPECT_EQ(rate.values[3], OnlineValue::Double(0.3));  // same driver, other city
  EXPECT_EQ(r.columns[3].values[0], OnlineValue::Int(30));  // Int32 source, Int64 feature
  EXPECT_EQ(r.columns[4].values[0], OnlineValue::String("c"));
  const auto& visits = r.columns[5];
  EXPECT_EQ(visits.values[0], OnlineValue::Int(7));
  EXPECT_EQ(visits.statuses[0], "OUTSIDE_MAX_AGE");
  EXPECT_EQ(visits.statuses[3], "NOT_FOUND");
  ASSERT_OK_AND_ASSIGN(OnlineResponse fresh, GetOnlineFeatures(reg, store, feats, Entities(), true, kBase + 3 * kH));
  EXPECT_EQ(fresh.names[5], "geo__visits");
  EXPECT_EQ(fresh.columns[5].statuses[0], "PRESENT");

  // Incremental: from the last end to now picks up the 8h row.
  ASSERT_OK(MaterializeIncremental(&reg, store, kBase + 10 * kH, {}, &st));
  ASSERT_OK_AND_ASSIGN(r, GetOnlineFeatures(reg, store, feats, Entities(), false, now));
  EXPECT_EQ(r.columns[2].values[0], OnlineValue::Double(0.8));
  // An older window never overwrites newer values.
  opt.start_us = kBase;
  opt.end_us = kBase + 2 * kH;
  ASSERT_OK(Materialize(&reg, store, opt, &st));
  ASSERT_OK_AND_ASSIGN(r, GetOnlineFeatures(reg, store, feats, Entities(), false, now));
  EXPECT_EQ(r.columns[2].values[0], OnlineValue::Double(0.8));

  // Push: a newer row wins at once.
  Table push(Schema{{"driver_id", DataType::Int64()}, {"ts", DataType::Timestamp()}, {"rate", DataType::Double()}});
  push.column(0).Append<int64_t>(3);
  push.column(1).Append<int64_t>(kBase + 20 * kH);
  push.column(2).Append<double>(0.5);
  ASSERT_OK(WriteToOnlineStore(reg, store, "stats", push));
  ASSERT_OK_AND_ASSIGN(r, GetOnlineFeatures(reg, store, feats, Entities(), false, now));
  EXPECT_EQ(r.columns[2].values[2], OnlineValue::Double(0.5));
  EXPECT_EQ(r.columns[3].statuses[2], "NULL_VALUE");  // not pushed

  // Bad requests.
  EXPECT_STATUS_CODE(GetOnlineFeatures(reg, store, feats, {{"driver_id", {OnlineValue::Int(1)}}}, false, now),
                     StatusCode::kInvalidArgument);  // city missing for geo
  EXPECT_STATUS_CODE(ResolveFeatureRefs(reg, {"stats:nope"}), StatusCode::kNotFound);
  auto dup = std::vector<FeatureProjection>{{"stats", {"rate"}}, {"stats", {"rate"}}};
  EXPECT_STATUS_CODE(GetOnlineFeatures(reg, store, dup, Entities(), false, now), StatusCode::kInvalidArgument);
}

TEST(OnlineTest, RocksDb) {
  ::strata::testing::TempDir dir("strata-online");
  FeatureRepo reg = MakeRepo(dir.path(), "  type: rocksdb\n  path: data/online\n");
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnlineStore(reg.config));
  EXPECT_EQ(store->name(), "rocksdb");
  Scenario(dir.path(), reg, store.get());
}

TEST(OnlineTest, Redis) {
  ::strata::testing::TempDir dir("strata-redis");
  ::strata::testing::RedisServer redis;
  ASSERT_OK(redis.Start()) << "redis-server did not come up (is it installed? scripts/install-deps.sh test)";
  const std::string conn = redis.host_port();
  FeatureRepo reg = MakeRepo(dir.path(), "  type: redis\n  connection_string: \"" + conn + "\"\n");
  Result<std::unique_ptr<OnlineStore>> store = OpenOnlineStore(reg.config);
  ASSERT_OK(store) << "redis-server did not come up (is it installed? scripts/install-deps.sh test)";
  EXPECT_EQ((*store)->name(), "redis");
  Scenario(dir.path(), reg, store->get());
  // A dead Redis gives a clear error, not a hang.
  auto none = OpenRedisOnlineStore("127.0.0.1:" + std::to_string(::strata::testing::FreePort()), "p");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("redis"), std::string::npos) << none.error().ToString();
}

}  // namespace
}  // namespace strata::features
