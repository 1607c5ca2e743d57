// Feature repositories and the registry, modelled on Feast.
//
// A repository is a directory holding `feature_store.yaml` (project, registry,
// offline and online store) and any number of other `*.yaml`/`*.yml` files
// with `entities`, `feature_views` and `feature_services` lists:
//
//   entities:
//     - name: driver
//       join_keys: [driver_id]          # exactly one, as in Feast
//   feature_views:
//     - name: driver_hourly_stats
//       entities: [driver]
//       ttl: 1d                         # 0 / absent: no lower bound
//       online: true
//       schema:
//         - {name: conv_rate, dtype: Float32}
//       source:
//         path: data/driver_stats.parquet   # relative to the repo, or s3://bucket/key
//         timestamp_field: event_timestamp
//         created_timestamp_column: created # optional, breaks ties
//       tags: {team: drivers}
//   feature_services:
//     - name: driver_activity
//       features:
//         - driver_hourly_stats             # every feature of the view
//         - driver_hourly_stats: [conv_rate] # some of them
//
// LoadFeatureRepo validates everything and reports the first problems with
// "file:line: what is wrong" (the YAML parsing lives here rather than in the CLI
// because plan, apply, tests and the server all load repositories the same way).
// The registry is one JSON file (Feast writes one protobuf), rewritten whole on
// apply through a temp file and a rename. All functions are thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/io.h>
#include <strata/features/table.h>

namespace strata::features {

struct SourceLocation {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  std::string ToString() const;
};

struct RepoConfig {
  std::string project;
  std::string repo_dir;       // absolute
  std::string registry_path;  // absolute (default data/registry.json)
  std::string provider = "local";
  std::string offline_store = "file";
  std::string online_store = "rocksdb";  // rocksdb | redis
  std::string online_path;               // rocksdb: absolute directory (default data/online_store)
  std::string redis_connection;          // redis: "host:port[,db=N][,password=..]"
  // redis: "strata" (one field per view, Strata's row encoding) or "feast"
  // (Feast's own layout: a field per feature holding a ValueProto), so that a
  // Feast deployment and Strata read each other's online data.
  std::string redis_layout = "strata";
  int64_t redis_key_ttl_seconds =
      0;  // feast layout: EXPIRE each entity's hash after writes (0: never)
  int entity_key_serialization_version = 3;
  // feature_server: {logging: {sample_rate: 0.1, path: data/served_log}}:
  // sampled served feature vectors written as Parquet (see serving_log.h).
  double log_sample_rate = 0;            // 0: off
  std::string log_path;                  // absolute (default data/served_log)
  double log_max_rows_per_file = 100000;
  double log_max_seconds_per_file = 60;
};

struct EntityDef {
  std::string name;
  std::string join_key;
  std::optional<DataType> value_type;
  std::string description;
  std::map<std::string, std::string> tags;
  SourceLocation loc;
};

struct FeatureDef {
  std::string name;
  DataType type;
};

struct FileSourceDef {
  std::string name;  // optional (Feast's data source name)
  std::string path;  // as written
  FileFormat format = FileFormat::kParquet;
  std::string timestamp_field;
  std::string created_timestamp_column;  // "" = none
  std::map<std::string, std::string> field_mapping;  // source column -> feature/key name
  // Set when the view is fed by a Feast PushSource of this name (this file is
  // its batch source): push(name, rows) writes to every view naming it.
  std::string push_source;
  SourceLocation loc;
};

struct Interval {
  int64_t start_us = 0, end_us = 0;  // microseconds since the epoch
};

struct FeatureViewDef {
  std::string name;
  std::vector<std::string> entities;
  std::vector<std::string> join_keys;  // resolved from the entities, in order
  int64_t ttl_seconds = 0;             // 0: no lower bound
  bool online = true;
  std::vector<FeatureDef> features;
  FileSourceDef source;
  std::map<std::string, std::string> tags;
  std::string owner, description;
  SourceLocation loc;
  std::vector<Interval> materialization_intervals;  // registry only

  const FeatureDef* FindFeature(const std::string& name) const;
};

struct FeatureProjection {
  std::string view;
  std::vector<std::string> features;  // empty: all of the view's
};

struct FeatureServiceDef {
  std::string name;
  std::vector<FeatureProjection> projections;
  std::map<std::string, std::string> tags;
  std::string description;
  SourceLocation loc;
};

struct FeatureRepo {
  RepoConfig config;
  std::vector<EntityDef> entities;
  std::vector<FeatureViewDef> views;
  std::vector<FeatureServiceDef> services;

  const EntityDef* FindEntity(const std::string& name) const;
  const FeatureViewDef* FindView(const std::string& name) const;
  FeatureViewDef* FindView(const std::string& name);
  const FeatureServiceDef* FindService(const std::string& name) const;
  // The source path as something to open: absolute local path or the URL.
  std::string ResolvePath(const std::string& path) const;
};

// Definitions that are not a YAML file of the repository: the Python objects
// of `feature_repo/*.py` (or of FeatureStore.apply), rendered as a YAML (or
// JSON) document of the same shape. `file` names it in errors; an entity,
// view, source or service map may carry `__loc__: "file.py:12"`, which errors
// about it then point at instead.
struct DefinitionDocument {
  std::string file;
  std::string text;
};

// Loads and validates a repository directory. InvalidArgument lists every
// problem found ("defs.yaml:12: feature view \"x\": unknown entity \"y\""), one per line.
Result<FeatureRepo> LoadFeatureRepo(const std::string& dir);
// The same, with `extra` documents loaded after the repository's YAML files
// (one namespace: a name defined in both is an error).
Result<FeatureRepo> LoadFeatureRepo(const std::string& dir,
                                    const std::vector<DefinitionDocument>& extra);
// Creates `dir` with a default feature_store.yaml (project `project`, RocksDB
// online store, registry data/registry.json) unless it already has one.
Status InitFeatureRepo(const std::string& dir, const std::string& project = "strata");
// Also opens each source (local files, s3:// objects) and checks that the
// timestamp field, created column, join keys and features exist there with
// compatible types.
Status CheckSources(const FeatureRepo& repo);

// Gives each entity without a value_type the type of its join-key column in
// the source of the first view that uses it (as Feast infers entity types on
// apply); sources that cannot be read are skipped. The online server then
// refuses entity values of another type.
void InferEntityTypes(FeatureRepo* repo);

// A parsed feature reference list: "view:feature" items, or a service's.
Result<std::vector<FeatureProjection>> ResolveFeatureRefs(const FeatureRepo& repo,
                                                          const std::vector<std::string>& refs);
Result<std::vector<FeatureProjection>> ResolveService(const FeatureRepo& repo, const std::string& service);

// Durations: "90s", "15m", "2h", "1d", "1w", "1d12h", "86400" (seconds), "0".
Result<int64_t> ParseDurationSeconds(std::string_view text);

// ---- registry ----

struct PlanChange {
  enum Kind { kCreate, kUpdate, kUnchanged, kNotInRepo };
  Kind kind;
  std::string object;  // "entity", "feature view", "feature service"
  std::string name;
  std::string detail;  // for updates: what changed
};

// What apply would do to the registry at repo.config.registry_path.
Result<std::vector<PlanChange>> PlanRepo(const FeatureRepo& repo);
// Writes the registry (keeping materialization intervals of unchanged views).
Result<std::vector<PlanChange>> ApplyRepo(const FeatureRepo& repo);

// The registry as stored: the repository's definitions plus materialization state.
Result<FeatureRepo> LoadRegistry(const std::string& path);
Status SaveRegistry(const std::string& path, const FeatureRepo& repo);

}  // namespace strata::features
