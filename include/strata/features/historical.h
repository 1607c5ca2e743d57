// Point-in-time joins: training sets with Feast's SQL semantics.
//
// For every entity row (duplicates and order kept) and every requested view:
// the feature row with equal join keys and the latest feature timestamp
// `ts <= entity_ts` — and, with a TTL, `ts >= entity_ts - ttl`, both bounds
// inclusive — ties on ts broken by the largest created timestamp (NULL
// created sorts lowest; rows equal in both are ties, the later in the file
// wins). No candidate, a NULL key or a NULL entity timestamp gives NULL
// features. Timestamps compare in the finer of the two columns' units.
//
// The join is a sort-merge: feature rows whose keys occur among the entities
// are kept (projected to keys, timestamps and the requested features), grouped
// by key with a counting sort, ordered by time within each key, and merged
// with the entity rows of that key. When the kept rows would exceed
// `memory_budget_bytes`, they are spilled to disk in hash partitions of the key
// (uncompressed Parquet runs) and each partition is joined on its own, so
// memory stays near the budget plus the entity table and the output.
//
// Functions are thread-compatible; one join per call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/features/io.h>
#include <strata/features/repo.h>
#include <strata/features/table.h>

namespace strata::features {

struct HistoricalOptions {
  bool full_feature_names = false;          // "view__feature" instead of "feature"
  std::string entity_timestamp_column;      // "" = event_timestamp, else the only timestamp column
  int64_t memory_budget_bytes = int64_t{4} << 30;  // kept feature rows above it spill to disk
  std::string spill_dir;                    // "" = $TMPDIR or /tmp
};

struct HistoricalStats {
  int64_t feature_rows_read = 0;   // rows scanned in the sources
  int64_t feature_rows_kept = 0;   // rows whose keys occur among the entities
  int64_t partitions = 0;          // > views when something spilled
  int64_t spilled_bytes = 0;
  int64_t matched = 0;             // (entity row, view) pairs that found a feature row
};

// One view's side of a join, independent of a repository.
struct ViewJoinSpec {
  std::string name;
  std::string path;                    // source file or URL ...
  FileFormat format = FileFormat::kParquet;
  const Table* table = nullptr;        // ... or an in-memory source
  std::vector<std::string> join_keys;  // names in the entity table (and, mapped, in the source)
  std::map<std::string, std::string> field_mapping;  // source column -> name
  std::string timestamp_field;
  std::string created_timestamp_column;  // "" = none
  int64_t ttl_seconds = 0;               // 0: no lower bound
  std::vector<FeatureDef> features;      // requested, with the declared types
  std::vector<std::string> output_names; // one per feature
};

Result<Table> PointInTimeJoin(const Table& entities, const std::vector<ViewJoinSpec>& views,
                              const HistoricalOptions& options = {}, HistoricalStats* stats = nullptr);

// The repository's view definitions turned into ViewJoinSpecs for `features`.
Result<std::vector<ViewJoinSpec>> PlanHistorical(const FeatureRepo& repo,
                                                 const std::vector<FeatureProjection>& features,
                                                 const HistoricalOptions& options = {});

Result<Table> GetHistoricalFeatures(const FeatureRepo& repo, const Table& entities,
                                    const std::vector<FeatureProjection>& features,
                                    const HistoricalOptions& options = {}, HistoricalStats* stats = nullptr);

}  // namespace strata::features
