// The online side of the feature store: the latest feature values per entity,
// served in milliseconds.
//
// Layout (Feast's, with our value encoding): an entity key is serialized as
// Feast's entity_key_serialization_version 3 (join-key names sorted, each value
// with its ValueType); per (entity key, view) the store keeps one row: the event
// time, a fingerprint of the view's schema and the feature values in schema
// order. RocksDB (embedded, the default) keys rows by project + entity key +
// view; Redis keeps Feast's one hash per entity key (key = entity key +
// project) with a field per view and a "_ts:<view>" field. A read of many
// entities across many views is one MultiGet / one pipelined round trip.
//
// OnlineStore implementations are thread-safe: the feature server calls them
// from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/repo.h>
#include <strata/features/table.h>

namespace strata::features {

// One scalar on the online path.
struct OnlineValue {
  enum Kind : uint8_t { kNull, kBool, kInt, kDouble, kString, kBytes, kTimestamp };
  Kind kind = kNull;
  int64_t i = 0;      // kBool (0/1), kInt, kTimestamp (microseconds)
  double d = 0;       // kDouble
  std::string s;      // kString, kBytes

  static OnlineValue Null() { return {}; }
  static OnlineValue Int(int64_t v) { return {kInt, v, 0, {}}; }
  static OnlineValue Double(double v) { return {kDouble, 0, v, {}}; }
  static OnlineValue String(std::string v) { return {kString, 0, 0, std::move(v)}; }
  bool operator==(const OnlineValue& o) const { return kind == o.kind && i == o.i && d == o.d && s == o.s; }
};

// Row r of a column as an online value (integers widen to int64).
OnlineValue ValueAt(const Column& c, size_t r);

// Feast's entity key serialization v3 of (join key -> value) pairs (sorted by name here).
std::string SerializeEntityKey(std::vector<std::pair<std::string, OnlineValue>> keys);

class OnlineStore {
 public:
  virtual ~OnlineStore() = default;
  virtual std::string name() const = 0;
  // Upserts encoded rows of one view, each keyed by a serialized entity key;
  // a row older than the stored one (by event time) is skipped.
  virtual Status Write(const std::string& view, const std::vector<std::pair<std::string, std::string>>& rows) = 0;
  // One round trip: the encoded row of each (entity key, view) pair, or nullopt.
  virtual Result<std::vector<std::optional<std::string>>> Read(
      const std::vector<std::pair<std::string, std::string>>& keys) = 0;
  // After a bulk load (materialize): make the written rows cheap to read
  // (RocksDB flushes its memtable into indexed, bloom-filtered files).
  virtual Status FinishBulkLoad() { return Status::Ok(); }
};

// RocksDB under `path` (created if missing).
Result<std::unique_ptr<OnlineStore>> OpenRocksDbOnlineStore(const std::string& path, const std::string& project);
// Redis at "host:port[,db=N][,password=P]".
Result<std::unique_ptr<OnlineStore>> OpenRedisOnlineStore(const std::string& connection,
                                                          const std::string& project);
// The store feature_store.yaml names.
Result<std::unique_ptr<OnlineStore>> OpenOnlineStore(const RepoConfig& config);

// Row encoding: event time, schema fingerprint, values in the view's schema order.
std::string EncodeOnlineRow(const FeatureViewDef& view, int64_t event_ts_us, const std::vector<OnlineValue>& values);
// False when the row was written under another schema (re-materialize).
bool DecodeOnlineRow(const FeatureViewDef& view, std::string_view row, int64_t* event_ts_us,
                     std::vector<OnlineValue>* values);

struct MaterializeOptions {
  int64_t start_us = 0, end_us = 0;  // feature rows with start <= ts <= end
  std::vector<std::string> views;    // empty: every online view
  int threads = 2;                   // views materialized in parallel
  size_t write_batch = 10000;        // rows per store write (sorted by the store: bigger batches insert faster)
  // Called as rows are scanned (from the materializing threads, serialized).
  std::function<void(const std::string& view, int64_t rows_scanned, int64_t rows_total)> progress;
};

struct MaterializeStats {
  int64_t views = 0;
  int64_t rows_scanned = 0;
  int64_t rows_in_window = 0;
  int64_t entities_written = 0;
};

// Writes the latest row per entity key of each view into the store and records
// [start, end] in the registry (the repo's registry file is rewritten).
Status Materialize(FeatureRepo* registry, OnlineStore* store, const MaterializeOptions& options,
                   MaterializeStats* stats = nullptr);
// From each view's last materialized end (or now - ttl; ttl 0: now - 52 weeks) to end_us.
Status MaterializeIncremental(FeatureRepo* registry, OnlineStore* store, int64_t end_us, MaterializeOptions options,
                              MaterializeStats* stats = nullptr);

// Writes rows straight into the store (Feast's push / write-to-online-store):
// `rows` holds the view's join keys, its timestamp field and some features.
Status WriteToOnlineStore(const FeatureRepo& registry, OnlineStore* store, const std::string& view, const Table& rows);

struct OnlineResponse {
  std::vector<std::string> names;  // join keys first, then the features
  struct Column {
    std::vector<OnlineValue> values;
    std::vector<std::string> statuses;  // PRESENT, NULL_VALUE, NOT_FOUND, OUTSIDE_MAX_AGE
    std::vector<int64_t> event_ts_us;   // 0 for join keys and NOT_FOUND
  };
  std::vector<Column> columns;
};

// Feast's get_online_features: one store round trip for all entities and views.
// A value older than the view's ttl is returned with status OUTSIDE_MAX_AGE (as
// Feast's Go server does).
Result<OnlineResponse> GetOnlineFeatures(const FeatureRepo& registry, OnlineStore* store,
                                         const std::vector<FeatureProjection>& features,
                                         const std::vector<std::pair<std::string, std::vector<OnlineValue>>>& entities,
                                         bool full_feature_names, int64_t now_us);

int64_t NowMicros();

}  // namespace strata::features
