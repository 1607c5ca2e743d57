// Collections: the vector database on top of the indexes in index.h.
//
// A Collection is a directory holding a schema (config.json), a write-ahead log
// (wal/), sealed segments (segments/*.dat, immutable, with one index file per
// vector field) and a MANIFEST naming the live segments, their delete bitmaps
// and where WAL replay starts. Points are written to the WAL first, then to the
// growing segment (a FLAT index per vector field, searchable at once); at
// CollectionOptions::segment_rows rows the growing segment is sealed and a
// background thread rewrites it as a sealed segment (live rows only, the
// configured index built, files fsynced, MANIFEST replaced), after which its
// WAL files are removed. Deletes are bitmaps over segment rows; compaction
// rewrites a segment without its deleted rows so their memory is returned.
//
// Durability: Upsert/Delete append to the WAL before they are applied; with
// WriteOptions::wait they return after an fsync shared by every concurrent
// writer (group commit). An acknowledged write survives kill -9 even with
// wait=false (the bytes are in the page cache); power loss needs wait=true.
//
// Ids: each point has a PointId; inside a segment the index ids are row
// offsets, so filter bitmaps over rows are index filters directly.
//
// Thread-safety: every method is thread-safe. Reads (Search, Get, Scroll,
// Count) share a reader/writer lock with writes (Upsert, Delete, index
// swaps), which hold it only to apply in-memory changes; fsync, index builds
// and segment rewrites run outside it. CollectionManager is thread-safe; the
// shared_ptr it hands out keeps a dropped collection usable until released.
//
// The schema, options, point and record types are in schema.h.
#pragma once

#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/vector/filter.h>
#include <strata/vector/index.h>
#include <strata/vector/schema.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::vector {

struct VectorStorageOptions;  // remote.h

struct WriteOptions {
  bool wait = true;  // return after the WAL is fsynced (when CollectionOptions::sync)
};

// What UpdatePoints does to each point it selects.
struct PointUpdate {
  enum class Kind : uint8_t {
    kSetPayload,         // merge the top-level keys of `payload` into the point's payload
    kOverwritePayload,   // replace the payload with `payload`
    kDeletePayloadKeys,  // remove the key paths in `keys` ("a", "meta.lang")
    kClearPayload,       // remove the whole payload
    kDeleteVectors,      // remove the vectors named in `keys`
    kUpdateVectors,      // put each point's `vectors` entries, by name; other vectors stay
  };
  Kind kind = Kind::kSetPayload;
  std::string payload;            // a JSON object (kSetPayload, kOverwritePayload)
  std::vector<std::string> keys;  // key paths or vector names
  // kSetPayload: the object path to merge under ("meta.tags"); objects on the
  // way are created, a non-object there is replaced. "" = the top level.
  std::string key;
  // kUpdateVectors: the new vectors of each point (by ids only; every id given
  // must be selected). A name present replaces that vector only.
  std::map<PointId, std::vector<NamedVector>> vectors;
  std::map<PointId, std::vector<NamedSparseVector>> sparse;  // kUpdateVectors, as `vectors`
};

struct SearchRequest {
  std::string vector_name;  // which vector field; "" = the default / only one
  std::vector<float> vector;
  // Set: a sparse search of the sparse field `vector_name` (dot product over
  // the inverted index, exact top-k with max-score pruning; `vector` unused;
  // ef/nprobe/exact/filter_strategy do not apply). Only points sharing a term
  // with the query are candidates, as in Qdrant.
  std::optional<SparseVector> sparse;
  size_t limit = 10;
  size_t offset = 0;
  std::optional<Filter> filter;
  std::optional<float> score_threshold;  // L2: score <= t; IP/COSINE: score >= t
  bool with_payload = false;
  bool with_vectors = false;
  uint32_t ef = 0;      // HNSW beam (Qdrant hnsw_ef); 0 = index default
  uint32_t nprobe = 0;  // IVF lists to scan; 0 = index default
  uint32_t rerank = 0;  // IVF_PQ candidates re-scored exactly; 0 = 8 * k
  // DISKANN candidate list size; 0 = ef when set (Qdrant's hnsw_ef), else max(100, k)
  uint32_t search_list = 0;
  bool exact = false;   // brute force over the matching rows
  FilterStrategy filter_strategy = FilterStrategy::kAuto;
  std::vector<PointId> exclude;  // never return these (query by point id)
};

struct ScrollRequest {
  std::optional<Filter> filter;
  std::optional<PointId> offset;  // first id to return (inclusive)
  size_t limit = 10;
  bool with_payload = true;
  bool with_vectors = false;
};

struct ScrollResult {
  std::vector<Record> points;
  std::optional<PointId> next_offset;  // first id of the next page
};

struct CollectionInfo {
  std::string name;
  CollectionSchema schema;
  CollectionOptions options;
  size_t points = 0;            // live points
  size_t indexed_points = 0;    // live points in segments whose index is built
  size_t segments = 0;          // sealed + growing
  size_t pending_tasks = 0;     // background seals/builds/compactions queued or running
  size_t memory_bytes = 0;      // indexes + payloads + ids in RAM (approximate)
  size_t disk_bytes = 0;        // files under the collection directory
  uint64_t last_operation = 0;  // the newest WAL sequence number
  // Payload indexes: field -> type, with the number of points having a value.
  std::vector<std::pair<PayloadFieldSchema, size_t>> payload_indexes;
};

// Where a collection publishes its sealed state (remote.h: an object store).
// Publish is called, under the collection's manifest lock, each time
// dir/MANIFEST is replaced; the WAL files that manifest makes unnecessary are
// removed only after it returned OK, so a failed publication loses nothing
// and the next manifest publishes again. kPreconditionFailed means another
// writer published: the collection stops writing (its message is then the
// error every write gets).
class ManifestPublisher {
 public:
  virtual ~ManifestPublisher() = default;
  virtual Status Publish(const std::string& dir, const std::string& manifest) = 0;
};

// How a collection is opened besides its options: by a writer that publishes
// (publisher set), or read-only (read_only: the error message writes get,
// kPermissionDenied; no WAL replayed or written, no background maintenance).
struct CollectionRole {
  std::shared_ptr<ManifestPublisher> publisher;
  std::string read_only;
};

class Collection {
 public:
  // Creates a new collection in `dir` (which must not exist or be empty).
  static Result<std::unique_ptr<Collection>> Create(const std::string& dir, std::string name,
                                                    const CollectionSchema& schema,
                                                    const CollectionOptions& options,
                                                    const CollectionRole& role = {});
  // Opens an existing collection: loads sealed segments and replays the WAL.
  // `options` replaces the stored options when given.
  static Result<std::unique_ptr<Collection>> Open(
      const std::string& dir, const std::optional<CollectionOptions>& options = std::nullopt,
      const CollectionRole& role = {});
  ~Collection();
  Collection(const Collection&) = delete;
  Collection& operator=(const Collection&) = delete;

  const std::string& name() const;
  const std::string& dir() const;
  const CollectionSchema& schema() const;

  // Inserts or replaces points (a point id seen twice in one batch: the last
  // wins). Validation is all-or-nothing: a wrong dimension, NaN/Inf, an
  // unknown vector name, a payload that is not a JSON object or a typed field
  // of the wrong type rejects the batch with kInvalidArgument naming the point.
  // *operation_id (optional) gets the WAL sequence number of the batch.
  Status Upsert(std::span<const Point> points, const WriteOptions& wo = {},
                uint64_t* operation_id = nullptr);
  // Deletes the given ids (unknown ids are ignored); *deleted counts the live ones.
  Status Delete(std::span<const PointId> ids, const WriteOptions& wo = {},
                size_t* deleted = nullptr, uint64_t* operation_id = nullptr);
  Status DeleteByFilter(const Filter& filter, const WriteOptions& wo = {},
                        size_t* deleted = nullptr, uint64_t* operation_id = nullptr);

  // Changes the payload (or removes vectors) of the selected points as one
  // atomic write: under the write lock each point is read, edited and logged
  // as an upsert of its new contents, so the WAL, replay, payload indexes and
  // versions behave as for Upsert (the points move to the growing segment).
  // Validation is all-or-nothing, as for Upsert. By ids, every id must be a
  // live point: kNotFound names the first that is not, and nothing changes.
  // Key paths are dot-separated object keys; array paths ("a[]", "a[0]") are
  // kInvalidArgument. *updated counts the points changed.
  Status UpdatePoints(std::span<const PointId> ids, const PointUpdate& update,
                      const WriteOptions& wo = {}, size_t* updated = nullptr,
                      uint64_t* operation_id = nullptr);
  Status UpdatePointsByFilter(const Filter& filter, const PointUpdate& update,
                              const WriteOptions& wo = {}, size_t* updated = nullptr,
                              uint64_t* operation_id = nullptr);

  // Points by id, in the order asked, skipping unknown ids.
  Result<std::vector<Record>> Get(std::span<const PointId> ids, bool with_payload,
                                  bool with_vectors) const;
  // The `limit` nearest points (after `offset`), closest first.
  Result<std::vector<ScoredPoint>> Search(const SearchRequest& req) const;
  // Several searches; requests on the same field with the same filter are run
  // as one batch per segment (one filter evaluation, parallel queries).
  Result<std::vector<std::vector<ScoredPoint>>> SearchBatch(
      std::span<const SearchRequest> reqs) const;
  // Points in id order.
  Result<ScrollResult> Scroll(const ScrollRequest& req) const;
  Result<size_t> Count(const std::optional<Filter>& filter) const;

  // Builds (or replaces) a payload index on a key; typed schema fields have one
  // already. Persisted in config.json.
  Status CreatePayloadIndex(const std::string& key, PayloadType type);
  Status DropPayloadIndex(const std::string& key);

  // Changes the tuning of a live collection, persisted in config.json:
  // `options` replaces the stored options (except `sync` and `background`,
  // which stay the process's), and `vectors` the index parameters of each
  // field. A field keeps its name, dim, metric and index type; of its index
  // only hnsw_m, hnsw_ef_construction and hnsw_sq8 may change, and sealed
  // segments whose field changed get their index rebuilt in the background
  // (searched with the old index until the new one is swapped in).
  Status Reconfigure(const CollectionOptions& options, std::span<const VectorFieldSchema> vectors);

  // Rewrites every sealed segment that has deleted rows (and merges small
  // ones), then seals and indexes the growing segment when `seal_growing`;
  // returns when done.
  Status Compact(bool seal_growing = false);
  // Waits until the background queue is empty (seals, index builds, compaction).
  Status WaitIdle() const;
  // A consistent copy of the collection in `dest_dir` (which must not exist):
  // sealed segment files are hard-linked (copied across file systems), the WAL
  // copied up to the moment of the call. Collection::Open(dest_dir) restores it.
  Status Snapshot(const std::string& dest_dir) const;

  CollectionInfo Info() const;

  // With a publisher: seals the growing segment (when it has rows) and waits
  // until it is persisted and published; with nothing to seal, publishes the
  // current manifest (deletes since the last one) when anything changed since
  // the last publication, or always with `force`.
  Status Publish(bool force = false);
  // Whether anything (a write, config.json) is unpublished.
  bool HasUnpublished() const;
  // Stops writes from now on: each gets kPermissionDenied with `why`.
  void RefuseWrites(const std::string& why);

  // Stops the background thread (finishing its current task) and syncs the
  // WAL. Further calls fail with kUnavailable. The destructor calls it.
  void Close();

  struct Impl;

 private:
  explicit Collection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One change of CollectionManager::UpdateAliases.
struct AliasAction {
  enum class Kind : uint8_t { kCreate, kDelete, kRename };
  Kind kind = Kind::kCreate;
  std::string alias;       // kCreate, kDelete: the alias; kRename: the old name
  std::string collection;  // kCreate: the collection it names
  std::string new_alias;   // kRename: the new name
};

// Collections under one root directory, one subdirectory each, and aliases
// (other names of a collection, kept in root/.aliases.json).
class CollectionManager {
 public:
  // Opens every collection found under root (created if missing). A
  // collection that fails to open is logged and skipped, not fatal. New
  // collections get `defaults` unless Create says otherwise; existing ones
  // keep their stored options except `sync` and `background`, which are the
  // process's (defaults').
  static Result<std::unique_ptr<CollectionManager>> Open(const std::string& root,
                                                         const CollectionOptions& defaults = {});
  // As Open, with the collections published to (writer) or read from
  // (replica) an object store; see remote.h. A writer takes the store's lease
  // first (kPreconditionFailed naming the writer that holds it) and fetches
  // the published collections root lacks. A replica's root is its local copy
  // (cleared at open); its collections are read-only and follow the store.
  static Result<std::unique_ptr<CollectionManager>> Open(const std::string& root,
                                                         const CollectionOptions& defaults,
                                                         const VectorStorageOptions& storage);
  ~CollectionManager();
  // Replica: why collection changes are refused here (names the writer); ""
  // otherwise.
  std::string ReadOnlyReason() const;
  // Replica: fetches what changed in the store now (the poller does it every
  // poll_interval_ms). Writer: publishes every collection's unpublished writes.
  Status SyncNow();

  // Names: 1-255 characters of [A-Za-z0-9_.-], not starting with '.'.
  Result<std::shared_ptr<Collection>> Create(const std::string& name,
                                             const CollectionSchema& schema,
                                             const std::optional<CollectionOptions>& options = {});
  // kNotFound: `collection "x" does not exist`.
  Result<std::shared_ptr<Collection>> Get(const std::string& name) const;
  // As Get, also for an alias of the collection.
  Result<std::shared_ptr<Collection>> Resolve(const std::string& name_or_alias) const;
  // Drops the collection and the aliases that name it.
  Status Drop(const std::string& name);
  // Renames a collection (its directory and stored name); the returned
  // collection replaces the old one, which is closed (kUnavailable after).
  // kNotFound for `from`, kAlreadyExists for `to`.
  Result<std::shared_ptr<Collection>> Rename(const std::string& from, const std::string& to);
  std::vector<std::string> List() const;  // sorted
  bool Exists(const std::string& name) const;
  const std::string& root() const { return root_; }
  const CollectionOptions& defaults() const { return defaults_; }

  // Snapshot of a collection into root/.snapshots/<name>/<snapshot>/; returns
  // the snapshot's name.
  Result<std::string> CreateSnapshot(const std::string& name);
  // Snapshot names of a collection, oldest first.
  Result<std::vector<std::string>> ListSnapshots(const std::string& name) const;
  // A new collection `name` from a snapshot directory.
  Result<std::shared_ptr<Collection>> RestoreSnapshot(const std::string& snapshot_dir,
                                                      const std::string& name);
  // The snapshot as one POSIX tar file, written on first use beside the
  // snapshot directory (root/.snapshots/<name>/<snapshot>.tar); its path.
  // kNotFound when the collection has no such snapshot.
  Result<std::string> SnapshotArchive(const std::string& name, const std::string& snapshot);
  // Removes a snapshot and its archive; kNotFound when there is none.
  Status DeleteSnapshot(const std::string& name, const std::string& snapshot);
  // Collection `name` from an archive: the bytes [offset, offset + length) of
  // the file at `path` (as SnapshotArchive writes them). The archive is
  // extracted and opened first; only then is an existing collection of that
  // name replaced (its aliases kept). A damaged archive changes nothing.
  Result<std::shared_ptr<Collection>> RecoverFromArchive(const std::string& path, uint64_t offset,
                                                         uint64_t length, const std::string& name);

  // Applies the actions in order, all or none, and persists the result.
  // kCreate: the collection must exist and the alias must not be a
  // collection's name (an existing alias is pointed at the new collection);
  // kDelete and kRename: kNotFound when the alias does not exist.
  Status UpdateAliases(std::span<const AliasAction> actions);
  // alias -> collection, sorted by alias.
  std::map<std::string, std::string> Aliases() const;

  static Status ValidateName(const std::string& name);

 private:
  Result<std::string> ExistingSnapshotDir(const std::string& name, const std::string& snapshot);
  CollectionManager(std::string root, CollectionOptions defaults);
  struct Remote;  // collection_remote.cc
  std::unique_ptr<Remote> remote_;
  CollectionRole RoleFor(const std::string& name);  // mu_ held
  Status CheckChangesAllowed() const;               // kPermissionDenied on a replica
  Status OpenLocal();                               // the collections under root_
  Status StartRemote();                             // Open with storage, after OpenLocal
  Status PublishCreated(const std::string& name, Collection* c);
  void DropRemote(const std::string& name);
  void PublishAliases() const;  // mu_ held
  Status SyncReplica();
  Status LoadReplica(const std::string& name);
  void RemoteLoop();
  void StopRemote();
  std::string root_;
  CollectionOptions defaults_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Collection>> collections_;  // guarded by mu_
  std::map<std::string, std::string> aliases_;                      // guarded by mu_

  Status LoadAliases();        // at Open
  Status SaveAliases() const;  // mu_ held
};

}  // namespace strata::vector
