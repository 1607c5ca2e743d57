// Feature repositories: YAML definitions, validation errors with file:line,
// plan/apply and the registry, sources checked against their files, and the
// historical retrieval through a repository (local and object-store sources).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <strata/features/historical.h>
#include <strata/features/io.h>
#include <strata/features/repo.h>
#include <strata/objstore/object_store.h>

#include "testutil/testutil.h"

namespace strata::features {
namespace {

namespace fs = std::filesystem;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

const char* kStore = R"(project: driver_ranking
registry: data/registry.json
provider: local
online_store:
  type: rocksdb
  path: data/online
)";

const char* kDefs = R"(entities:
  - name: driver
    join_keys: [driver_id]
    value_type: Int64
feature_views:
  - name: driver_hourly_stats
    entities: [driver]
    ttl: 2h
    online: true
    schema:
      - {name: conv_rate, dtype: Float32}
      - {name: acc_rate, dtype: Float64}
      - {name: trips, dtype: Int64}
    source:
      path: data/driver_stats.parquet
      timestamp_field: event_timestamp
      created_timestamp_column: created
    tags: {team: drivers}
feature_services:
  - name: driver_activity
    features:
      - driver_hourly_stats: [conv_rate, trips]
)";

Table DriverStats() {
  Table t(Schema{{"driver_id", DataType::Int64()}, {"event_timestamp", DataType::Timestamp()},
                 {"created", DataType::Timestamp()}, {"conv_rate", DataType::Float()},
                 {"acc_rate", DataType::Double()}, {"trips", DataType::Int32()}});
  const int64_t h = 3600LL * 1000000, base = 1700000000LL * 1000000;
  for (int d = 1001; d <= 1003; ++d) {
    for (int k = 0; k < 5; ++k) {
      t.column(0).Append<int64_t>(d);
      t.column(1).Append<int64_t>(base + k * h);
      t.column(2).Append<int64_t>(base + k * h + 1);
      t.column(3).Append<float>(static_cast<float>(d - 1000) / 10 + k);
      t.column(4).Append<double>(k * 0.5);
      t.column(5).Append<int32_t>(d * 10 + k);
    }
  }
  return t;
}

class RepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write(dir_.Join("feature_store.yaml"), kStore);
    Write(dir_.Join("definitions/drivers.yaml"), kDefs);
    fs::create_directories(dir_.Join("data"));
    ASSERT_OK(WriteParquetFile(dir_.Join("data/driver_stats.parquet"), DriverStats()));
  }
  ::strata::testing::TempDir dir_{"strata-repo"};
};

TEST_F(RepoTest, LoadsDefinitions) {
  ASSERT_OK_AND_ASSIGN(FeatureRepo repo, LoadFeatureRepo(dir_.path()));
  EXPECT_EQ(repo.config.project, "driver_ranking");
  EXPECT_EQ(repo.config.registry_path, dir_.Join("data/registry.json"));
  EXPECT_EQ(repo.config.online_store, "rocksdb");
  ASSERT_EQ(repo.views.size(), 1u);
  const FeatureViewDef& v = repo.views[0];
  EXPECT_EQ(v.ttl_seconds, 7200);
  EXPECT_EQ(v.join_keys, std::vector<std::string>{"driver_id"});
  EXPECT_EQ(v.features[0].type, DataType::Float());
  EXPECT_EQ(v.loc.file, "definitions/drivers.yaml");
  EXPECT_EQ(v.loc.line, 6);
  EXPECT_EQ(v.tags.at("team"), "drivers");
  EXPECT_OK(CheckSources(repo));
  ASSERT_OK_AND_ASSIGN(auto svc, ResolveService(repo, "driver_activity"));
  ASSERT_EQ(svc.size(), 1u);
  EXPECT_EQ(svc[0].features, (std::vector<std::string>{"conv_rate", "trips"}));
  ASSERT_OK_AND_ASSIGN(auto refs, ResolveFeatureRefs(repo, {"driver_hourly_stats:acc_rate"}));
  EXPECT_EQ(refs[0].features, std::vector<std::string>{"acc_rate"});
  EXPECT_STATUS_CODE(ResolveFeatureRefs(repo, {"driver_hourly_stats:nope"}), StatusCode::kNotFound);
  EXPECT_STATUS_CODE(ResolveFeatureRefs(repo, {"nope"}), StatusCode::kInvalidArgument);
}

void ExpectError(const std::string& dir, const std::string& needle) {
  auto r = LoadFeatureRepo(dir);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << needle;
  EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
}

TEST_F(RepoTest, ErrorsNameFileAndLine) {
  Write(dir_.Join("definitions/bad.yaml"), "feature_views:\n  - name: x\n    entities: [rider]\n    ttl: 5 parsecs\n"
                                            "    schema:\n      - {name: a, dtype: Complex}\n    sourc: {}\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:7: feature view \"x\": unknown key \"sourc\"");
  ExpectError(dir_.path(), "definitions/bad.yaml:4: feature view \"x\": ttl:");
  ExpectError(dir_.path(), "definitions/bad.yaml:6: feature view \"x\": feature \"a\": unknown type \"Complex\"");
  ExpectError(dir_.path(), "feature view \"x\": unknown entity \"rider\"");
  ExpectError(dir_.path(), "\"source\" is required");
  Write(dir_.Join("definitions/bad.yaml"), "entities:\n  - name: [oops\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:");
  ExpectError(dir_.path(), "malformed YAML");
  Write(dir_.Join("definitions/bad.yaml"), "entities:\n  - name: driver\n    join_keys: [a, b]\n");
  ExpectError(dir_.path(), "exactly one");
  ExpectError(dir_.path(), "entity \"driver\" is defined twice");
  fs::remove(dir_.Join("definitions/bad.yaml"));
  Write(dir_.Join("feature_store.yaml"), "project: p\nonline_store: {type: cassandra}\n");
  ExpectError(dir_.path(), "feature_store.yaml:2: online_store type \"cassandra\" is not supported");
  Write(dir_.Join("feature_store.yaml"), "project: p\nonline_store: {type: redis}\n");
  ExpectError(dir_.path(), "redis needs connection_string");
  Write(dir_.Join("feature_store.yaml"), "project: p\nfeature_server: {logging: {sample_rate: 0.5x}}\n");
  ExpectError(dir_.path(), "feature_store.yaml:2: feature_server.logging: \"sample_rate\" must be a number");
  Write(dir_.Join("feature_store.yaml"), "project: p\nfeature_server: {logging: {max_rows_per_file: 1e999}}\n");
  ExpectError(dir_.path(), "\"max_rows_per_file\" must be a number");
  fs::remove(dir_.Join("feature_store.yaml"));
  EXPECT_STATUS_CODE(LoadFeatureRepo(dir_.path()), StatusCode::kNotFound);
}

// A YAML syntax error names the line the mistake is on, also when yaml-cpp
// only notices it on a later line (an unclosed "[" or "{").
TEST_F(RepoTest, YamlSyntaxErrorNamesItsLine) {
  const std::string bad = dir_.Join("definitions/bad.yaml");
  // Unclosed flow sequence on line 3, at the end of the file.
  Write(bad, "entities:\n  - name: rider\n    join_keys: [rider_id\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:3: malformed YAML");
  // The same with more of the file after it.
  Write(bad, "entities:\n  - name: rider\n    join_keys: [rider_id\n    description: riders\n\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:3: malformed YAML");
  // Unclosed flow map on line 2; a "[" inside a comment and in quotes do not count.
  Write(bad, "# a [comment\nentities: {name: \"a [b\", join_keys: [x]\nfeature_views: []\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:2: malformed YAML");
  // Errors yaml-cpp places on their own line stay there.
  Write(bad, "entities:\n  - name: rider\n\tjoin_keys: [rider_id]\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:3: malformed YAML");
  Write(bad, "entities:\n  - name: rider\n    join_keys: [rider_id]\n    tags: a: b\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:4: malformed YAML");
  Write(bad, "entities: []\nfeature_views: ]\n");
  ExpectError(dir_.path(), "definitions/bad.yaml:2: malformed YAML");
  fs::remove(bad);
  // feature_store.yaml goes through the same path.
  Write(dir_.Join("feature_store.yaml"), "project: p\nonline_store: {type: rocksdb\n");
  ExpectError(dir_.path(), "feature_store.yaml:2: malformed YAML");
}

TEST_F(RepoTest, SourcesAreChecked) {
  std::string defs = kDefs;
  defs.replace(defs.find("{name: trips, dtype: Int64}"), 27, "{name: trips, dtype: String}");
  Write(dir_.Join("definitions/drivers.yaml"), defs);
  ASSERT_OK_AND_ASSIGN(FeatureRepo repo, LoadFeatureRepo(dir_.path()));
  Status st = CheckSources(repo);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("definitions/drivers.yaml:15"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("\"trips\" is declared string but the column is int32"), std::string::npos)
      << st.message();
  fs::remove(dir_.Join("data/driver_stats.parquet"));
  st = CheckSources(repo);
  EXPECT_NE(st.message().find("No such file"), std::string::npos) << st.message();
}

TEST_F(RepoTest, PlanApplyRegistry) {
  ASSERT_OK_AND_ASSIGN(FeatureRepo repo, LoadFeatureRepo(dir_.path()));
  ASSERT_OK_AND_ASSIGN(auto plan, PlanRepo(repo));
  ASSERT_EQ(plan.size(), 3u);
  for (const PlanChange& c : plan) EXPECT_EQ(c.kind, PlanChange::kCreate) << c.name;
  EXPECT_FALSE(fs::exists(repo.config.registry_path)) << "plan must not write";
  ASSERT_OK(ApplyRepo(repo));
  ASSERT_OK_AND_ASSIGN(FeatureRepo reg, LoadRegistry(repo.config.registry_path));
  EXPECT_EQ(reg.config.project, "driver_ranking");
  ASSERT_EQ(reg.views.size(), 1u);
  EXPECT_EQ(reg.views[0].features.size(), 3u);
  EXPECT_EQ(reg.views[0].ttl_seconds, 7200);
  ASSERT_OK_AND_ASSIGN(plan, PlanRepo(repo));
  for (const PlanChange& c : plan) EXPECT_EQ(c.kind, PlanChange::kUnchanged) << c.name;
  // Change the ttl: one update naming the field.
  std::string defs = kDefs;
  defs.replace(defs.find("ttl: 2h"), 7, "ttl: 3h");
  Write(dir_.Join("definitions/drivers.yaml"), defs);
  ASSERT_OK_AND_ASSIGN(repo, LoadFeatureRepo(dir_.path()));
  ASSERT_OK_AND_ASSIGN(plan, PlanRepo(repo));
  bool saw = false;
  for (const PlanChange& c : plan) {
    if (c.kind == PlanChange::kUpdate) {
      saw = true;
      EXPECT_EQ(c.name, "driver_hourly_stats");
      EXPECT_NE(c.detail.find("ttl_seconds"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw);
  // A corrupt registry is an error, not a crash or an overwrite.
  Write(repo.config.registry_path, "{not json");
  EXPECT_STATUS_CODE(ApplyRepo(repo), StatusCode::kCorruption);
  // A JSON document of another shape, too (a "format" that is not a string).
  Write(repo.config.registry_path, "{\"format\": 1}");
  EXPECT_STATUS_CODE(LoadRegistry(repo.config.registry_path), StatusCode::kCorruption);
  EXPECT_STATUS_CODE(PlanRepo(repo), StatusCode::kCorruption);
}

// Definitions from Python arrive as extra documents (JSON) whose objects carry
// `__loc__`: errors point there, and push sources and source names reach the registry.
TEST_F(RepoTest, ExtraDocumentsWithPythonLocations) {
  const std::string fresh = R"({"feature_views": [{"name": "fresh", "entities": ["driver"],
    "__loc__": "repo/defs.py:40", "schema": [{"name": "conv_rate", "dtype": "Float32"}],
    "source": {"name": "stats_src", "path": "data/driver_stats.parquet",
               "timestamp_field": "event_timestamp", "push_source": "stats_push",
               "__loc__": "repo/defs.py:12"}}]})";
  ASSERT_OK_AND_ASSIGN(FeatureRepo repo, LoadFeatureRepo(dir_.path(), {{"<python>", fresh}}));
  const FeatureViewDef* v = repo.FindView("fresh");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->loc.ToString(), "repo/defs.py:40");
  EXPECT_EQ(v->source.loc.ToString(), "repo/defs.py:12");
  EXPECT_EQ(v->source.push_source, "stats_push");
  ASSERT_OK(ApplyRepo(repo));
  ASSERT_OK_AND_ASSIGN(FeatureRepo reg, LoadRegistry(repo.config.registry_path));
  ASSERT_NE(reg.FindView("fresh"), nullptr);
  EXPECT_EQ(reg.FindView("fresh")->source.push_source, "stats_push");
  EXPECT_EQ(reg.FindView("fresh")->source.name, "stats_src");
  EXPECT_TRUE(reg.FindView("driver_hourly_stats")->source.push_source.empty());
  // Errors name the object's __loc__, and objects without one their document.
  const std::string bad = R"({"feature_views": [{"name": "bad", "entities": ["ghost"],
    "__loc__": "defs.py:7", "schema": [{"name": "x", "dtype": "Float32"}],
    "source": {"path": "data/driver_stats.parquet", "timestamp_field": "event_timestamp"}}],
    "entities": [{"name": "driver"}]})";
  auto r = LoadFeatureRepo(dir_.path(), {{"<python>", bad}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("defs.py:7: feature view \"bad\": unknown entity \"ghost\""),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("<python>:4: entity \"driver\" is defined twice"),
            std::string::npos)
      << r.error().message();
}

TEST_F(RepoTest, HistoricalThroughTheRepo) {
  ASSERT_OK_AND_ASSIGN(FeatureRepo repo, LoadFeatureRepo(dir_.path()));
  const int64_t h = 3600LL * 1000000, base = 1700000000LL * 1000000;
  Table ent(Schema{{"driver_id", DataType::Int64()}, {"event_timestamp", DataType::Timestamp()}});
  ent.column(0).Append<int64_t>(1002);
  ent.column(1).Append<int64_t>(base + 2 * h + 5);  // -> row k=2
  ent.column(0).Append<int64_t>(1001);
  ent.column(1).Append<int64_t>(base + 10 * h);  // beyond the 2 h ttl
  ASSERT_OK_AND_ASSIGN(auto feats, ResolveService(repo, "driver_activity"));
  HistoricalOptions opt;
  opt.full_feature_names = true;
  ASSERT_OK_AND_ASSIGN(Table out, GetHistoricalFeatures(repo, ent, feats, opt));
  ASSERT_EQ(out.num_columns(), 4u);
  EXPECT_EQ(out.field(2).name, "driver_hourly_stats__conv_rate");
  EXPECT_EQ(out.field(3).name, "driver_hourly_stats__trips");
  EXPECT_EQ(out.field(3).type, DataType::Int64());
  EXPECT_EQ(out.column(3).FormatValue(0), "10022");
  EXPECT_TRUE(out.column(2).IsNull(1));
  // The same through an object-store source.
  auto store = objstore::OpenObjectStore("mem://featuretest");
  ASSERT_OK(store);
  std::ifstream in(dir_.Join("data/driver_stats.parquet"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_OK((*store)->PutBytes("stats/driver_stats.parquet", bytes));
  repo.views[0].source.path = "mem://featuretest/stats/driver_stats.parquet";
  ASSERT_OK_AND_ASSIGN(Table out2, GetHistoricalFeatures(repo, ent, feats, opt));
  std::string why;
  EXPECT_TRUE(out.Equals(out2, &why)) << why;
  // Writing the result to an object and reading it back.
  ASSERT_OK(WriteTableFile("mem://featuretest/out/train.parquet", out));
  ASSERT_OK_AND_ASSIGN(Table back, ReadTableFile("mem://featuretest/out/train.parquet"));
  EXPECT_TRUE(out.Equals(back, &why)) << why;
}

TEST(DurationTest, Parses) {
  EXPECT_EQ(*ParseDurationSeconds("90s"), 90);
  EXPECT_EQ(*ParseDurationSeconds("1d12h"), 129600);
  EXPECT_EQ(*ParseDurationSeconds("86400"), 86400);
  EXPECT_EQ(*ParseDurationSeconds("0"), 0);
  EXPECT_EQ(*ParseDurationSeconds("1w"), 604800);
  EXPECT_FALSE(ParseDurationSeconds("1d5").ok());
  EXPECT_FALSE(ParseDurationSeconds("soon").ok());
  EXPECT_FALSE(ParseDurationSeconds("").ok());
}

}  // namespace
}  // namespace strata::features
