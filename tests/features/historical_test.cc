// Point-in-time joins: hand-made cases for each rule, the spilling path against
// the in-memory one, and a property test against DuckDB's ASOF JOIN.
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/features/historical.h>
#include <strata/features/parquet.h>

#include "features/duckdb_oracle.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

constexpr int64_t kSec = 1000000;  // microseconds
constexpr int64_t kBase = 1700000000 * kSec;

struct Ent {
  std::optional<int64_t> key;
  std::optional<int64_t> ts;  // seconds after kBase
};
struct Feat {
  std::optional<int64_t> key;
  std::optional<int64_t> ts;
  int64_t created;
  std::optional<double> value;
};

Table Entities(const std::vector<Ent>& rows) {
  Table t(Schema{{"driver_id", DataType::Int64()}, {"event_timestamp", DataType::Timestamp()}, {"tag", DataType::String()}});
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].key ? t.column(0).Append<int64_t>(*rows[i].key) : t.column(0).AppendNull();
    rows[i].ts ? t.column(1).Append<int64_t>(kBase + *rows[i].ts * kSec) : t.column(1).AppendNull();
    t.column(2).AppendString("row" + std::to_string(i));
  }
  return t;
}

Table Features(const std::vector<Feat>& rows) {
  Table t(Schema{{"driver_id", DataType::Int64()},
                 {"ts", DataType::Timestamp()},
                 {"created", DataType::Timestamp()},
                 {"rate", DataType::Double()}});
  for (const Feat& f : rows) {
    f.key ? t.column(0).Append<int64_t>(*f.key) : t.column(0).AppendNull();
    f.ts ? t.column(1).Append<int64_t>(kBase + *f.ts * kSec) : t.column(1).AppendNull();
    t.column(2).Append<int64_t>(kBase + f.created * kSec);
    f.value ? t.column(3).Append<double>(*f.value) : t.column(3).AppendNull();
  }
  return t;
}

ViewJoinSpec Spec(const Table* src, int64_t ttl, bool created = true) {
  ViewJoinSpec s;
  s.name = "stats";
  s.table = src;
  s.join_keys = {"driver_id"};
  s.timestamp_field = "ts";
  if (created) s.created_timestamp_column = "created";
  s.ttl_seconds = ttl;
  s.features = {{"rate", DataType::Double()}};
  s.output_names = {"rate"};
  return s;
}

std::vector<std::string> Rates(const Table& t) {
  const Column& c = t.column(t.FieldIndex("rate"));
  std::vector<std::string> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(c.IsNull(i) ? "NULL" : fmt::format("{}", c.values<double>()[i]));
  return out;
}

TEST(HistoricalTest, LatestAtOrBeforeWithTiesAndTtl) {
  const Table f = Features({
      {1, 10, 0, 1.0},
      {1, 20, 0, 2.0},
      {1, 20, 5, 2.5},  // same ts, later created: wins
      {1, 20, 3, 2.25},
      {1, 30, 0, std::nullopt},  // a NULL value is a value
      {2, 5, 0, 7.0},
      {std::nullopt, 5, 0, 99.0},  // NULL key: never matches
      {3, std::nullopt, 0, 98.0},  // NULL ts: never matches
  });
  const Table e = Entities({
      {1, 9},    // before any feature row
      {1, 10},   // equal ts: inclusive
      {1, 25},   // tie on ts 20 broken by created
      {1, 30},   // NULL value
      {2, 100},  // outside a 60 s ttl (100 - 5 > 60)
      {2, 65},   // exactly on the ttl boundary: inclusive
      {1, 25},   // duplicate row: kept
      {3, 50},   // only a NULL-ts feature row
      {std::nullopt, 50},
      {1, std::nullopt},
      {4, 50},  // unknown key
  });
  ASSERT_OK_AND_ASSIGN(Table out, PointInTimeJoin(e, {Spec(&f, 60)}));
  EXPECT_EQ(Rates(out), (std::vector<std::string>{"NULL", "1", "2.5", "NULL", "NULL", "7", "2.5", "NULL", "NULL",
                                                  "NULL", "NULL"}));
  // Order and entity columns kept.
  for (size_t i = 0; i < out.num_rows(); ++i) EXPECT_EQ(out.column(2).StringAt(i), "row" + std::to_string(i));
  // Without a ttl the old row for key 2 matches.
  ASSERT_OK_AND_ASSIGN(Table no_ttl, PointInTimeJoin(e, {Spec(&f, 0)}));
  EXPECT_EQ(Rates(no_ttl)[4], "7");
}

TEST(HistoricalTest, CompositeStringKeysAndUnits) {
  // Keys (city, id) with the source in nanoseconds and entities in milliseconds.
  Table f(Schema{{"city", DataType::String()}, {"id", DataType::Int32()},
                 {"ts", DataType::Timestamp(TimeUnit::kNano)}, {"v", DataType::Int64()}});
  auto add = [&](const char* city, int32_t id, int64_t ns, int64_t v) {
    f.column(0).AppendString(city);
    f.column(1).Append<int32_t>(id);
    f.column(2).Append<int64_t>(ns);
    f.column(3).Append<int64_t>(v);
  };
  add("paris", 1, 1000000000, 10);
  add("paris", 1, 2000000001, 11);  // 1 ns after 2 s: not <= 2000 ms
  add("rome", 1, 1000000000, 20);
  Table e(Schema{{"city", DataType::String()}, {"id", DataType::Int64()},
                 {"event_timestamp", DataType::Timestamp(TimeUnit::kMilli)}});
  auto ent = [&](const char* city, int64_t id, int64_t ms) {
    e.column(0).AppendString(city);
    e.column(1).Append<int64_t>(id);
    e.column(2).Append<int64_t>(ms);
  };
  ent("paris", 1, 2000);
  ent("rome", 1, 999);
  ent("rome", 1, 1000);
  ViewJoinSpec s;
  s.name = "geo";
  s.table = &f;
  s.join_keys = {"city", "id"};
  s.timestamp_field = "ts";
  s.features = {{"v", DataType::Double()}};  // cast int64 -> double
  s.output_names = {"geo__v"};
  ASSERT_OK_AND_ASSIGN(Table out, PointInTimeJoin(e, {s}));
  const Column& v = out.column(3);
  EXPECT_EQ(v.FormatValue(0), "10");
  EXPECT_TRUE(v.IsNull(1));
  EXPECT_EQ(v.FormatValue(2), "20");
}

// The TTL bound ts >= entity_ts - ttl must hold for rows that are further
// from the entity than int64 can represent as a difference: a 1700-01-01
// sentinel in nanoseconds is ~1.0e19 ns before 2024 and must not pass a 1-day
// TTL by wrapping around.
TEST(HistoricalTest, TtlHoldsAtTheInt64Edges) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kDayNs = int64_t{86400} * 1000000000;
  ASSERT_OK_AND_ASSIGN(const int64_t y1700, ParseTimestamp("1700-01-01 00:00:00", TimeUnit::kNano));
  ASSERT_OK_AND_ASSIGN(const int64_t y2024, ParseTimestamp("2024-06-01 12:00:00", TimeUnit::kNano));
  // One key per case, so each entity row sees exactly one feature row.
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {y1700, y2024},               // 1: sentinel row, far outside the TTL
      {kMin, kMax},                 // 2: the widest gap there is
      {kMin, 0},                    // 3: gap of exactly 2^63
      {kMax - kDayNs, kMax},        // 4: on the boundary: inclusive
      {kMax - kDayNs - 1, kMax},    // 5: 1 ns outside
      {kMin, kMin + kDayNs},        // 6: on the boundary at the low edge
      {kMin, kMin + kDayNs + 1},    // 7: 1 ns outside at the low edge
      {y2024 - kDayNs / 2, y2024},  // 8: an ordinary row inside the TTL
  };
  Table f(Schema{{"driver_id", DataType::Int64()},
                 {"ts", DataType::Timestamp(TimeUnit::kNano)},
                 {"rate", DataType::Double()}});
  Table e(Schema{{"driver_id", DataType::Int64()},
                 {"event_timestamp", DataType::Timestamp(TimeUnit::kNano)}});
  for (size_t i = 0; i < cases.size(); ++i) {
    f.column(0).Append<int64_t>(static_cast<int64_t>(i + 1));
    f.column(1).Append<int64_t>(cases[i].first);
    f.column(2).Append<double>(static_cast<double>(i + 1));
    e.column(0).Append<int64_t>(static_cast<int64_t>(i + 1));
    e.column(1).Append<int64_t>(cases[i].second);
  }
  ViewJoinSpec s = Spec(&f, 86400, /*created=*/false);
  ASSERT_OK_AND_ASSIGN(Table out, PointInTimeJoin(e, {s}));
  EXPECT_EQ(Rates(out),
            (std::vector<std::string>{"NULL", "NULL", "NULL", "4", "NULL", "6", "NULL", "8"}));
  // Without a TTL every row matches.
  ASSERT_OK_AND_ASSIGN(Table no_ttl, PointInTimeJoin(e, {Spec(&f, 0, /*created=*/false)}));
  EXPECT_EQ(Rates(no_ttl), (std::vector<std::string>{"1", "2", "3", "4", "5", "6", "7", "8"}));
}

TEST(HistoricalTest, ClearErrors) {
  const Table f = Features({{1, 1, 0, 1.0}});
  const Table e = Entities({{1, 1}});
  ViewJoinSpec s = Spec(&f, 0);
  s.join_keys = {"rider_id"};
  auto r = PointInTimeJoin(e, {s});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("rider_id"), std::string::npos) << r.error().ToString();
  s = Spec(&f, 0);
  s.output_names = {"tag"};  // collides with an entity column
  EXPECT_STATUS_CODE(PointInTimeJoin(e, {s}), StatusCode::kInvalidArgument);
  s = Spec(&f, 0);
  s.features = {{"rate", DataType::String()}};  // double -> string is not a cast we make
  auto r2 = PointInTimeJoin(e, {s});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message().find("declared"), std::string::npos) << r2.error().ToString();
  Table nots(Schema{{"driver_id", DataType::Int64()}});
  nots.column(0).Append<int64_t>(1);
  EXPECT_STATUS_CODE(PointInTimeJoin(nots, {Spec(&f, 0)}), StatusCode::kInvalidArgument);
}

// Random tables with ties, duplicates, TTL boundaries and NULLs.
struct Case {
  Table entities, f1, f2;
  int64_t ttl1, ttl2;
};

Case RandomCase(uint32_t seed, size_t n_ent, size_t n_feat) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  Case c;
  c.ttl1 = std::vector<int64_t>{0, 5, 20}[pick(3)];
  c.ttl2 = std::vector<int64_t>{0, 3, 30}[pick(3)];
  const int64_t keys = 10 + pick(40), span = 100;
  c.entities = Table(Schema{{"__row", DataType::Int64(), false},
                            {"driver_id", DataType::Int64()},
                            {"city", DataType::String()},
                            {"event_timestamp", DataType::Timestamp()}});
  static const char* kCities[] = {"paris", "rome", "東京"};
  for (size_t i = 0; i < n_ent; ++i) {
    c.entities.column(0).Append<int64_t>(static_cast<int64_t>(i));
    if (i > 0 && pick(8) == 0) {  // an exact duplicate of the previous row
      for (size_t col = 1; col < 4; ++col) c.entities.column(col).AppendFrom(c.entities.column(col), i - 1);
      continue;
    }
    pick(30) == 0 ? c.entities.column(1).AppendNull() : c.entities.column(1).Append<int64_t>(pick(keys));
    pick(30) == 0 ? c.entities.column(2).AppendNull() : c.entities.column(2).AppendString(kCities[pick(3)]);
    pick(40) == 0 ? c.entities.column(3).AppendNull() : c.entities.column(3).Append<int64_t>(kBase + pick(span) * kSec);
  }
  auto feats = [&](bool composite) {
    Schema s = {{"driver_id", DataType::Int64()}};
    if (composite) s.push_back({"city", DataType::String()});
    s.push_back({"ts", DataType::Timestamp()});
    s.push_back({"created", DataType::Timestamp()});
    s.push_back({composite ? "trips" : "rate", composite ? DataType::Int64() : DataType::Double()});
    s.push_back({composite ? "label" : "score", composite ? DataType::String() : DataType::Float()});
    Table t(s);
    // created unique per (key, ts): a random permutation of 0..n-1.
    std::vector<int64_t> created(n_feat);
    for (size_t i = 0; i < n_feat; ++i) created[i] = static_cast<int64_t>(i);
    std::shuffle(created.begin(), created.end(), rng);
    for (size_t i = 0; i < n_feat; ++i) {
      size_t col = 0;
      pick(50) == 0 ? t.column(col++).AppendNull() : t.column(col++).Append<int64_t>(pick(keys));
      if (composite) {
        pick(50) == 0 ? t.column(col++).AppendNull() : t.column(col++).AppendString(kCities[pick(3)]);
      }
      pick(50) == 0 ? t.column(col++).AppendNull() : t.column(col++).Append<int64_t>(kBase + pick(span) * kSec);
      t.column(col++).Append<int64_t>(kBase + created[i] * kSec);
      if (composite) {
        pick(10) == 0 ? t.column(col++).AppendNull() : t.column(col++).Append<int64_t>(pick(1000));
        pick(10) == 0 ? t.column(col++).AppendNull() : t.column(col++).AppendString("l" + std::to_string(pick(100)));
      } else {
        pick(10) == 0 ? t.column(col++).AppendNull() : t.column(col++).Append<double>(pick(10000) / 8.0);
        pick(10) == 0 ? t.column(col++).AppendNull() : t.column(col++).Append<float>(pick(1000) / 4.0f);
      }
    }
    return t;
  };
  c.f1 = feats(false);
  c.f2 = feats(true);
  return c;
}

std::vector<ViewJoinSpec> CaseSpecs(const Case& c, const std::string& f1, const std::string& f2) {
  ViewJoinSpec a;
  a.name = "stats";
  a.path = f1;
  a.join_keys = {"driver_id"};
  a.timestamp_field = "ts";
  a.created_timestamp_column = "created";
  a.ttl_seconds = c.ttl1;
  a.features = {{"rate", DataType::Double()}, {"score", DataType::Float()}};
  a.output_names = {"stats__rate", "stats__score"};
  ViewJoinSpec b;
  b.name = "geo";
  b.path = f2;
  b.join_keys = {"driver_id", "city"};
  b.timestamp_field = "ts";
  b.created_timestamp_column = "created";
  b.ttl_seconds = c.ttl2;
  b.features = {{"trips", DataType::Int64()}, {"label", DataType::String()}};
  b.output_names = {"geo__trips", "geo__label"};
  return {a, b};
}

TEST(HistoricalTest, SpillingEqualsInMemory) {
  ::strata::testing::TempDir dir("strata-pit");
  Case c = RandomCase(99, 5000, 40000);
  ParquetWriteOptions small;
  small.row_group_rows = 4096;
  ASSERT_OK(WriteParquetFile(dir.Join("f1.parquet"), c.f1, small));
  ASSERT_OK(WriteParquetFile(dir.Join("f2.parquet"), c.f2, small));
  auto specs = CaseSpecs(c, dir.Join("f1.parquet"), dir.Join("f2.parquet"));
  HistoricalStats mem_stats, spill_stats;
  ASSERT_OK_AND_ASSIGN(Table mem, PointInTimeJoin(c.entities, specs, {}, &mem_stats));
  EXPECT_EQ(mem_stats.partitions, 2);
  EXPECT_EQ(mem_stats.spilled_bytes, 0);
  HistoricalOptions tiny;
  tiny.memory_budget_bytes = 1 << 20;  // forces several partitions
  tiny.spill_dir = dir.path();
  ASSERT_OK_AND_ASSIGN(Table spilled, PointInTimeJoin(c.entities, specs, tiny, &spill_stats));
  EXPECT_GT(spill_stats.partitions, 2);
  EXPECT_GT(spill_stats.spilled_bytes, 0);
  std::string why;
  EXPECT_TRUE(mem.Equals(spilled, &why)) << why;
  EXPECT_EQ(mem_stats.matched, spill_stats.matched);
  EXPECT_GT(mem_stats.matched, 0);
  // Nothing left behind in the spill directory but our inputs.
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
}

// A spill directory that does not exist yet is created (parents included);
// one that cannot be created gives an error naming it.
TEST(HistoricalTest, SpillDirIsCreated) {
  ::strata::testing::TempDir dir("strata-pit-dir");
  Case c = RandomCase(7, 2000, 20000);
  ASSERT_OK(WriteParquetFile(dir.Join("f1.parquet"), c.f1));
  ASSERT_OK(WriteParquetFile(dir.Join("f2.parquet"), c.f2));
  auto specs = CaseSpecs(c, dir.Join("f1.parquet"), dir.Join("f2.parquet"));
  ASSERT_OK_AND_ASSIGN(Table mem, PointInTimeJoin(c.entities, specs));
  HistoricalOptions tiny;
  tiny.memory_budget_bytes = 1 << 18;  // forces spilling
  tiny.spill_dir = dir.Join("scratch/spill");
  HistoricalStats st;
  ASSERT_OK_AND_ASSIGN(Table spilled, PointInTimeJoin(c.entities, specs, tiny, &st));
  EXPECT_GT(st.spilled_bytes, 0);
  std::string why;
  EXPECT_TRUE(mem.Equals(spilled, &why)) << why;
  ASSERT_TRUE(std::filesystem::is_directory(tiny.spill_dir));
  EXPECT_TRUE(std::filesystem::is_empty(tiny.spill_dir));  // the spill files are removed
  // Below a regular file: cannot be created.
  std::ofstream(dir.Join("plain")) << "x";
  tiny.spill_dir = dir.Join("plain/spill");
  auto r = PointInTimeJoin(c.entities, specs, tiny);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("spill directory"), std::string::npos) << r.error().ToString();
  EXPECT_NE(r.error().message().find(tiny.spill_dir), std::string::npos) << r.error().ToString();
  // A regular file given as the directory.
  tiny.spill_dir = dir.Join("plain");
  auto f = PointInTimeJoin(c.entities, specs, tiny);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("not a directory"), std::string::npos) << f.error().ToString();
}

TEST(HistoricalTest, PropertyAgainstDuckDbAsof) {
  ASSERT_EQ(testing::EnsureDuckDb(), "");
  ::strata::testing::TempDir tmp("strata-pit-duck");
  // STRATA_PIT_KEEP_DIR keeps the generated files there, to replay a failure.
  const char* keep = std::getenv("STRATA_PIT_KEEP_DIR");
  struct Dir {
    std::string p;
    std::string path() const { return p; }
    std::string Join(const std::string& n) const { return p + "/" + n; }
  } dir{keep && *keep ? keep : tmp.path()};
  nlohmann::json spec;
  spec["cases"] = nlohmann::json::array();
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const size_t n_ent = seed % 3 == 0 ? 20 : 2000, n_feat = seed % 4 == 0 ? 5 : 6000;
    Case c = RandomCase(seed, n_ent, n_feat);
    const std::string e = dir.Join(fmt::format("e{}.parquet", seed));
    const std::string f1 = dir.Join(fmt::format("f1_{}.parquet", seed));
    const std::string f2 = dir.Join(fmt::format("f2_{}.parquet", seed));
    const std::string out = dir.Join(fmt::format("out{}.parquet", seed));
    ASSERT_OK(WriteParquetFile(e, c.entities));
    ASSERT_OK(WriteParquetFile(f1, c.f1));
    ASSERT_OK(WriteParquetFile(f2, c.f2));
    auto specs = CaseSpecs(c, f1, f2);
    HistoricalOptions opt;
    if (seed % 2 == 0) {  // every other case through the spilling path
      opt.memory_budget_bytes = 1;
      opt.spill_dir = dir.path();
    }
    HistoricalStats stats;
    ASSERT_OK_AND_ASSIGN(Table result, PointInTimeJoin(c.entities, specs, opt, &stats));
    if (seed % 2 == 0 && n_feat > 1000) {
      EXPECT_GT(stats.spilled_bytes, 0) << "seed " << seed;
    }
    ASSERT_EQ(result.num_rows(), n_ent);
    for (size_t i = 0; i < n_ent; ++i) ASSERT_EQ(result.column(0).values<int64_t>()[i], static_cast<int64_t>(i));
    ASSERT_OK(WriteParquetFile(out, result));
    nlohmann::json views = nlohmann::json::array();
    for (const ViewJoinSpec& s : specs) {
      std::vector<std::string> feats;
      for (const FeatureDef& f : s.features) feats.push_back(f.name);
      views.push_back({{"source", s.path}, {"keys", s.join_keys}, {"ts", s.timestamp_field},
                       {"created", s.created_timestamp_column}, {"ttl_seconds", s.ttl_seconds},
                       {"features", feats}, {"outputs", s.output_names}});
    }
    spec["cases"].push_back({{"entities", e}, {"ts", "event_timestamp"}, {"result", out}, {"views", views}});
  }
  const std::string spec_path = dir.Join("spec.json");
  std::ofstream(spec_path) << spec.dump();
  std::string out;
  const int rc = testing::RunDuckDbScript("pit_oracle.mjs", "'" + spec_path + "'", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("cases checked, 0 failures"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata::features
