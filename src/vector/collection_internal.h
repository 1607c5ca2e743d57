// Private to the collection layer: what the collection_*.cc files share.
//
// Collection::Impl holds a collection's state (schema, segments, the point
// map, the WAL, the background queue) and the locks that guard it; its
// methods are implemented by concept: collection.cc (writes: validation, WAL
// records, applying them; lifetime, payload indexes, Info),
// collection_config.cc (config.json), collection_manifest.cc (MANIFEST,
// Create/Open and recovery), collection_maintenance.cc (sealing, index
// builds, compaction and merging, the background queue, snapshots) and
// collection_search.cc (reads: Get, the search planner, Scroll, Count).
//
// Lock order: manifest_mu_ (manifest writes, segment file removal) before mu_
// (the collection's reader/writer lock) before the WAL's internal mutexes.
// Segment objects are replaced only by the background worker (or the caller
// of an inline task), under mu_ held exclusively.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/metrics.h>
#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/vector/collection.h>
#include <strata/vector/filter.h>
#include <strata/vector/index.h>
#include <strata/vector/schema.h>

#include "vector/filter_eval.h"
#include "vector/payload_index.h"
#include "vector/segment.h"
#include "vector/wal.h"

namespace strata::vector {
namespace internal {

struct VectorMetrics {
  metrics::Counter& upserted;
  metrics::Counter& deleted;
  metrics::Counter& searches;
  metrics::Counter& sealed;
  metrics::Counter& index_builds;
  metrics::Counter& index_build_failures;
  metrics::Counter& compactions;
  metrics::Counter& exact_plans;
  metrics::Counter& graph_plans;
  metrics::Histogram& search_seconds;
  metrics::Histogram& build_seconds;
  metrics::Histogram& sync_seconds;
  metrics::Gauge& points;
  metrics::Gauge& collections;
};

// The vector metrics of the process (registered on first use).
VectorMetrics& M();

// Little-endian reader of WAL records and the MANIFEST: a read past the end
// yields zeros and clears `ok`.
struct Decoder {
  std::string_view d;
  bool ok = true;
  bool Need(size_t n) {
    if (!ok || d.size() < n) ok = false;
    return ok;
  }
  template <class T>
  T Get() {
    T v{};
    if (Need(sizeof(T))) {
      std::memcpy(&v, d.data(), sizeof(T));
      d.remove_prefix(sizeof(T));
    }
    return v;
  }
  PointId Id() {
    PointId id;
    id.is_uuid = Get<uint8_t>() != 0;
    id.hi = Get<uint64_t>();
    id.lo = Get<uint64_t>();
    return id;
  }
  std::string_view Bytes(size_t n) {
    if (!Need(n)) return {};
    std::string_view v = d.substr(0, n);
    d.remove_prefix(n);
    return v;
  }
};

inline std::string SegPath(const std::string& dir, uint64_t id) {
  return fmt::format("{}/segments/{:016d}.dat", dir, id);
}
inline std::string IdxPath(const std::string& dir, uint64_t id, size_t f) {
  return fmt::format("{}/segments/{:016d}.f{}.idx", dir, id, f);
}

inline bool AllFinite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// config.json (collection_config.cc).
CollectionOptions OptionsFromJson(const nlohmann::json& j, CollectionOptions o);
Status ValidateSchema(const CollectionSchema& s);

// A validated point ready for the WAL and the growing segment.
struct PreparedPoint {
  PointId id;
  std::string payload;    // compact JSON text, "" when none
  nlohmann::json parsed;  // the payload parsed (object or null)
  std::vector<std::pair<uint16_t, const std::vector<float>*>> vectors;  // field index -> values
  std::vector<std::pair<uint16_t, SparseVector>> sparse;  // sparse field index -> sorted vector
};

// WAL upsert records tag a sparse vector's field index with this bit (dense
// field indexes stay below it).
constexpr uint16_t kSparseFieldBit = 0x8000;

struct PointLoc {
  Segment* seg = nullptr;
  uint32_t row = 0;
};

}  // namespace internal

struct Collection::Impl {
  using json = nlohmann::json;
  using PointLoc = internal::PointLoc;
  using PreparedPoint = internal::PreparedPoint;
  using RowSet = internal::RowSet;
  using Segment = internal::Segment;

  std::string dir;
  std::string name;
  CollectionSchema schema;
  CollectionOptions opts;
  // Payload indexes created with CreatePayloadIndex (typed schema fields are indexed too).
  std::vector<PayloadFieldSchema> extra_indexes;  // guarded by mu_

  mutable std::shared_mutex mu_;
  std::vector<std::unique_ptr<Segment>> sealed;  // guarded by mu_
  std::unique_ptr<Segment> growing;              // guarded by mu_
  std::map<PointId, PointLoc> points;            // live points; guarded by mu_
  uint64_t next_segment_id = 1;                  // guarded by mu_
  bool closed = false;                           // guarded by mu_
  std::unique_ptr<internal::Wal> wal;

  mutable std::mutex manifest_mu_;

  // Publication (CollectionRole). The publisher is set at open and not
  // changed; refuse_writes is guarded by mu_.
  std::shared_ptr<ManifestPublisher> publisher;
  std::string refuse_writes;               // non-empty: every write fails kPermissionDenied with it
  std::atomic<uint64_t> published_lsn{0};  // last_lsn of the newest published manifest
  mutable std::atomic<uint64_t> config_version{1};  // bumped by WriteConfig
  std::atomic<uint64_t> published_config{0};        // config_version when last published
  bool read_only() const { return !refuse_writes.empty() && !publisher; }
  Status CheckWritable() const {  // mu_ held (any mode)
    if (refuse_writes.empty()) return Status::Ok();
    return Status::PermissionDenied(refuse_writes);
  }

  // Background work.
  enum class TaskKind { kPersist, kBuildIndex, kMaintain };
  struct Task {
    TaskKind kind;
    uint64_t segment = 0;
    bool force = false;
  };
  mutable std::mutex bg_mu_;
  mutable std::condition_variable bg_cv_;    // new task or stop
  mutable std::condition_variable idle_cv_;  // queue drained
  std::deque<Task> tasks;                    // guarded by bg_mu_
  bool bg_stop = false;                      // guarded by bg_mu_
  bool bg_busy = false;                      // guarded by bg_mu_
  bool maintain_queued = false;              // guarded by bg_mu_
  std::thread bg_thread;
  std::mutex inline_mu_;  // background=false: one inline runner at a time

  ~Impl() = default;

  // ----- helpers (callers hold mu_ as noted)

  int SparseIndex(const std::string& vname) const {
    for (size_t i = 0; i < schema.sparse.size(); ++i) {
      if (schema.sparse[i].name == vname) return int(i);
    }
    return -1;
  }

  int FieldIndex(const std::string& vname) const {
    if (vname.empty() && schema.vectors.size() == 1) return 0;
    for (size_t i = 0; i < schema.vectors.size(); ++i) {
      if (schema.vectors[i].name == vname) return int(i);
    }
    return -1;
  }

  std::vector<PayloadFieldSchema> IndexedKeys() const {  // mu_ held
    std::vector<PayloadFieldSchema> out = schema.payload;
    for (const auto& e : extra_indexes) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const PayloadFieldSchema& f) { return f.name == e.name; });
      if (it == out.end()) {
        out.push_back(e);
      } else {
        it->type = e.type;
      }
    }
    return out;
  }

  std::unique_ptr<Segment> NewSegment(uint64_t wal_seq);  // mu_ held exclusively (or during open)

  internal::SegmentView View(const Segment& seg) const {
    internal::SegmentView v;
    v.rows = seg.rows();
    v.ids = &seg.ids;
    v.payload = [&seg](uint32_t r) { return std::string_view(seg.payloads[r]); };
    v.indexes = &seg.payload_indexes;
    v.find_row = [this, &seg](const PointId& id, uint32_t* row) {
      auto it = points.find(id);
      if (it == points.end() || it->second.seg != &seg) return false;
      *row = it->second.row;
      return true;
    };
    return v;
  }

  RowSet LiveRows(const Segment& seg) const {
    RowSet live(seg.rows(), true);
    live.AndNot(seg.deleted);
    return live;
  }

  // Rows of seg matching the filter (live only).
  RowSet Matching(const Segment& seg, const Filter& f) const {
    RowSet live = LiveRows(seg);
    if (internal::IsTrivial(f)) return live;
    return internal::Evaluate(f, View(seg), live);
  }

  void ForEachSegment(const std::function<void(Segment&)>& fn) const {
    for (const auto& s : sealed) fn(*s);
    if (growing) fn(*growing);
  }

  // ----- writes (collection.cc)

  Status Prepare(std::span<const Point> in, std::vector<PreparedPoint>* out) const;
  Status PrepareSparse(const Point& p, const std::string& who, PreparedPoint* pp) const;
  std::string EncodeUpsert(const std::vector<PreparedPoint>& pts) const;

  // Decoded upsert (replay): owns its vectors.
  struct DecodedPoint {
    PointId id;
    std::string payload;
    std::vector<std::pair<uint16_t, std::vector<float>>> vectors;
    std::vector<std::pair<uint16_t, SparseVector>> sparse;
  };
  // The sparse vectors of point i of an upsert, as (sparse field, vector).
  using SparseOf =
      std::function<void(size_t, const std::function<void(uint16_t, const SparseVector&)>&)>;

  Status DecodeUpsert(std::string_view body, std::vector<DecodedPoint>* out) const;
  // Applies an upsert to memory (mu_ held exclusively). `parsed` may be null
  // entries (replay parses here).
  Status ApplyUpsert(
      uint64_t lsn, size_t n, const std::function<const PointId&(size_t)>& id_of,
      const std::function<const std::string&(size_t)>& payload_of,
      const std::function<const json*(size_t)>& parsed_of,
      const std::function<void(size_t, const std::function<void(uint16_t, const float*)>&)>&
          vectors_of,
      const SparseOf& sparse_of);
  // Logs `rec` (EncodeUpsert of `prepared`) and applies the points (mu_ held
  // exclusively); seals the growing segment when full (*sealed_id: the
  // segment to persist, or 0).
  Status UpsertLocked(const std::vector<PreparedPoint>& prepared, const std::string& rec,
                      uint64_t* lsn, uint64_t* sealed_id);
  // UpdatePoints: `select` fills the rows to edit (mu_ held exclusively).
  Status UpdateSelected(
      const std::function<Status(std::vector<std::pair<const Segment*, uint32_t>>*)>& select,
      const PointUpdate& update, const WriteOptions& wo, size_t* updated, uint64_t* operation_id);
  size_t ApplyDelete(const std::vector<PointId>& ids);  // mu_ held exclusively
  Status ReplayRecord(uint64_t lsn, uint8_t type, std::string_view body);
  Status SyncWal(uint64_t lsn, const WriteOptions& wo);

  // ----- config.json (collection_config.cc)

  Status WriteConfig() const;  // mu_ held (any mode)
  // Reads dir/config.json into name, schema, extra_indexes and opts (the
  // stored options unless `options` is given) and validates the schema.
  Status LoadConfig(const std::optional<CollectionOptions>& options);

  // ----- manifest and recovery (collection_manifest.cc)

  // Built under mu_ (shared is enough).
  std::string ManifestBytes() const;
  static uint64_t ManifestWalStart(const std::string& m);
  static uint64_t ManifestLastLsn(const std::string& m);
  // manifest_mu_ held.
  Status WriteManifest(const std::string& bytes);
  void RefuseWritesNow(const std::string& why);  // takes mu_

  struct Manifest {
    uint64_t wal_start = 1;
    uint64_t last_lsn = 0;
    uint64_t next_segment_id = 1;
    struct Seg {
      uint64_t id, rows;
      std::vector<uint64_t> deleted;
    };
    std::vector<Seg> segments;
  };

  static Result<Manifest> ReadManifest(const std::string& path);
  // Open: loads the sealed segments the manifest names (file names in
  // *referenced; segments whose index must be rebuilt in *needs_build).
  Status LoadSealedSegments(const Manifest& man, std::set<std::string>* referenced,
                            std::vector<uint64_t>* needs_build);
  // Open: builds the point map from the sealed segments.
  void IndexLivePoints();

  // ----- sealing, index builds, compaction (collection_maintenance.cc)

  // Seals the growing segment (mu_ held exclusively). Returns the sealed id.
  Result<uint64_t> SealLocked();
  // Builds the index of one field from n vectors (rows given); falls back to
  // FLAT when the configured index cannot be built.
  Status BuildFieldIndex(Segment* seg, size_t f, const std::vector<float>& data,
                         const std::vector<uint64_t>& rows, bool save);
  void BuildPayloadIndexes(Segment* seg, const std::vector<PayloadFieldSchema>& keys);
  // Rewrites the given sealed segments as one persisted segment of their
  // live rows, with indexes built; then swaps it in and writes the manifest.
  Status Rewrite(const std::vector<uint64_t>& source_ids, bool is_compaction);
  // Builds the real index of a persisted segment that runs on a FLAT stand-in.
  Status BuildIndexOf(uint64_t seg_id, bool rebuild = false);
  // Compaction and merging policy.
  Status Maintain(bool force);

  // ----- background queue (collection_maintenance.cc)

  void Enqueue(Task t);
  Status RunTask(const Task& t);
  void BackgroundLoop();
  // background=false: runs queued tasks in the calling thread.
  Status RunInline();
  void StartBackground();
  void StopBackground();

  // ----- reads (collection_search.cc)

  Record MakeRecord(const Segment& seg, uint32_t row, bool with_payload, bool with_vectors) const;
};

}  // namespace strata::vector
