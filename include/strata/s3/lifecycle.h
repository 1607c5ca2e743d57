// The bucket lifecycle worker: applies each bucket's lifecycle configuration
// (set with PutBucketLifecycleConfiguration, stored as the bucket config
// "lifecycle") in the background of `strata server`: expires current objects
// (Expiration Days/Date), noncurrent versions (NoncurrentVersionExpiration) and
// delete markers left alone (ExpiredObjectDeleteMarker), and aborts multipart
// uploads (AbortIncompleteMultipartUpload).
//
// I/O is bounded: a pass reads a page of keys at a time (page_keys), pauses
// between pages (page_pause_ms) and spaces its deletes and aborts
// (max_actions_per_sec), so a pass over a large bucket never floods the engine.
// What it reads and changes goes through LifecycleStore, so the per-key step
// "for each noncurrent version of the key" is the store's NoncurrentVersions:
// a store over an unversioned engine has none.
//
// Thread-safety: Start/Stop from one thread; RunPass and stats from any
// (passes are serialised by an internal mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>

namespace strata::s3 {

// Unix nanoseconds "now" for lifecycle decisions (the worker and the
// x-amz-expiration header). Empty means NowUnixNanos.
using WallClock = std::function<int64_t()>;

// A clock whose time is the number (Unix seconds, maybe fractional) in the file
// at `path`, read at each call; the real time while the file is missing or
// unreadable. Test-only: `strata server --test-clock-file PATH`.
WallClock FileClock(std::string path);

// One key's current entry in a listing page.
struct LifecycleEntry {
  objstore::ObjectMeta meta;   // key, size, etag, mtime (tags only after Head)
  bool delete_marker = false;  // the current version is a delete marker
  std::string version_id;      // of the delete marker ("" unversioned)
};

struct LifecyclePage {
  std::vector<LifecycleEntry> entries;
  bool truncated = false;
  std::string next_marker;  // start_after of the next page
};

// A noncurrent version of a key.
struct NoncurrentVersion {
  std::string version_id;
  int64_t noncurrent_since_ns = 0;  // when a newer version (or delete marker) replaced it
  uint64_t size = 0;
  std::map<std::string, std::string> tags;
};

// What the worker reads and changes in the store.
class LifecycleStore {
 public:
  virtual ~LifecycleStore() = default;
  virtual Result<std::vector<objstore::BucketInfo>> ListBuckets() = 0;
  // Up to max_keys current entries after start_after, in key order.
  virtual Result<LifecyclePage> ListCurrent(std::string_view bucket, std::string_view start_after,
                                            int max_keys) = 0;
  virtual Result<objstore::ObjectMeta> Head(std::string_view bucket, std::string_view key) = 0;
  // Expires the current object if it is still `seen` (etag, mtime): deleted in
  // an unversioned bucket. kPreconditionFailed when it changed meanwhile.
  virtual Status ExpireCurrent(std::string_view bucket, const objstore::ObjectMeta& seen) = 0;
  // The key's noncurrent versions, newest first. Their tags are read only
  // with_tags (a rule filters noncurrent versions by tag): that costs a read
  // per version.
  virtual Result<std::vector<NoncurrentVersion>> NoncurrentVersions(std::string_view bucket,
                                                                    std::string_view key,
                                                                    bool with_tags) = 0;
  // Permanently removes one version (a noncurrent one, or a delete marker),
  // unless S3 Object Lock holds it at now_ns (a legal hold, or a retention
  // that has not ended): then kPermissionDenied and nothing changes.
  virtual Status DeleteVersion(std::string_view bucket, std::string_view key,
                               std::string_view version_id, int64_t now_ns) = 0;
  virtual Result<std::vector<objstore::MultipartUpload>> ListUploads(std::string_view bucket) = 0;
  virtual Status AbortUpload(std::string_view bucket, std::string_view key,
                             std::string_view upload_id) = 0;
};

// The store over the local engine (not owned; must outlive it).
std::unique_ptr<LifecycleStore> NewEngineLifecycleStore(objstore::LocalEngine* engine);

struct LifecycleOptions {
  int64_t interval_ms = 60 * 60 * 1000;  // from the start of one pass to the next
  int page_keys = 1000;                  // keys per listing page (1..1000)
  int64_t page_pause_ms = 10;            // pause after each page
  double max_actions_per_sec = 1000;     // expirations + aborts per second; 0 = unlimited
  WallClock clock;                       // empty: NowUnixNanos
};

struct LifecycleStats {
  uint64_t passes = 0;
  uint64_t objects_scanned = 0;
  uint64_t objects_expired = 0;     // current objects
  uint64_t noncurrent_expired = 0;  // noncurrent versions and delete markers
  uint64_t uploads_aborted = 0;
  uint64_t versions_locked = 0;   // noncurrent versions kept because Object Lock holds them
  uint64_t errors = 0;            // failed steps (logged; the pass goes on)
  int64_t last_pass_unix_ns = 0;  // by the lifecycle clock, when the last pass ended
  int64_t last_pass_duration_ns = 0;
};

class LifecycleWorker {
 public:
  LifecycleWorker(LifecycleStore* store, LifecycleOptions options);  // store not owned
  ~LifecycleWorker();
  LifecycleWorker(const LifecycleWorker&) = delete;
  LifecycleWorker& operator=(const LifecycleWorker&) = delete;

  // A background thread running a pass every interval_ms (the first at once).
  void Start();
  // Interrupts a pass between two steps and joins the thread.
  void Stop();
  // One full pass over every bucket, in the caller's thread.
  Status RunPass();
  LifecycleStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::s3
