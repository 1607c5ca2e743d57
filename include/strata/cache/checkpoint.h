// CheckpointManager: training checkpoints saved to local disk first and
// uploaded to an object store in the background, published only when whole.
//
// What it promises:
//   * Save(step, items) writes every item (a file copied in, or bytes in
//     memory) under local_dir, fsyncs files and directories, and returns as
//     soon as the checkpoint is durable locally: that is all the training loop
//     waits for. A checkpoint appears locally by one rename of its directory,
//     so a crash during Save leaves nothing that looks complete (the partial
//     directory is removed at the next Open).
//   * The upload runs in the background (TransferManager: parallel multipart,
//     retries, resumable). The manifest (sizes, CRC32C, SHA-256 and ETags of
//     every file) is written LAST, at PREFIX/step-NNNNNNNNNNNN/MANIFEST.json:
//     a remote checkpoint exists only once its manifest does, so a crash or a
//     failure during the upload never publishes a partial checkpoint.
//   * A local checkpoint whose upload has not finished carries a marker; the
//     next Open resumes its upload (parts already stored are kept) or, with
//     resume = false, reports it. It is never deleted by keep_local.
//   * Load(step): the local copy if complete (every file's size and CRC32C
//     checked), else a parallel ranged download (pinned to each file's ETag,
//     checked against the manifest) into local_dir, which then serves later
//     loads.
//   * keep_local / keep_remote keep the newest N of each, independently.
//
// Layout: local_dir/step-NNNNNNNNNNNN/{files..., MANIFEST.json[, .upload]}
// (12-digit steps sort numerically), the same names under the store's prefix.
//
// Thread-safety: all methods are thread-safe; uploads run one checkpoint at a
// time on a background thread, their parts in parallel. The store must
// outlive the manager. The destructor waits for uploads in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {

struct CheckpointOptions {
  std::string local_dir;                    // required
  objstore::ObjectStore* store = nullptr;   // nullptr: local checkpoints only
  std::string prefix;                       // key prefix in the store, e.g. "run-42/"
  int keep_local = 2;                       // newest N complete local checkpoints; 0 = all
  int keep_remote = 0;                      // newest N published remote checkpoints; 0 = all
  int upload_concurrency = 16;              // requests in flight (parts of all files)
  uint64_t part_size = 16ull << 20;         // multipart part size
  uint64_t multipart_threshold = 16ull << 20;
  int attempts = 5;                         // per part, on top of the store's retries
  int write_threads = 4;                    // items written to local disk at once
  bool fsync = true;                        // fsync local files and directories
  bool sha256 = true;                       // the remote manifest carries SHA-256 too
  bool resume = true;                       // Open resumes unfinished uploads (else reports)
};

// One piece of a checkpoint: a file copied in, or bytes in memory.
struct CheckpointItem {
  std::string name;       // relative path inside the checkpoint: "model.pt", "optim/rank0.bin"
  std::string path;       // source file, or
  std::string_view data;  // bytes (only read during Save)
  bool is_file = false;
  static CheckpointItem File(std::string name, std::string path) {
    return {std::move(name), std::move(path), {}, true};
  }
  static CheckpointItem Blob(std::string name, std::string_view data) {
    return {std::move(name), {}, data, false};
  }
};

struct CheckpointFile {
  std::string name;
  uint64_t size = 0;
  uint32_t crc32c = 0;
  std::string sha256;  // hex; remote manifest only
  std::string etag;    // remote manifest only
};

struct CheckpointInfo {
  uint64_t step = 0;
  bool local = false;      // complete local copy
  bool remote = false;     // manifest published
  bool uploading = false;  // local copy whose upload has not finished
  uint64_t bytes = 0;
  std::vector<CheckpointFile> files;
};

struct LoadOptions {
  enum class Source { kAuto, kLocal, kRemote } source = Source::kAuto;
  // Parallel ranged GETs per file (1 = one GET per file, one file at a time).
  int download_concurrency = 16;
};

struct LoadedCheckpoint {
  uint64_t step = 0;
  std::string dir;          // local directory holding the files
  bool from_remote = false;
  std::vector<CheckpointFile> files;
  std::string PathOf(std::string_view name) const { return dir + "/" + std::string(name); }
};

struct CheckpointStats {
  uint64_t saves = 0;
  uint64_t uploads = 0;           // checkpoints published
  uint64_t upload_failures = 0;
  uint64_t bytes_uploaded = 0;
  double last_save_seconds = 0;   // time Save blocked
  double last_upload_seconds = 0; // time from Save's return to the manifest
};

// A local checkpoint directory as it is on disk, read without changing
// anything (CheckpointManager::Open removes partial saves and resumes uploads;
// a reader in another process, such as the server's console, must not).
struct LocalCheckpointEntry {
  enum class State {
    kComplete,  // manifest readable; every file there with the manifest's size
    kPartial,   // a save or download not finished (.step-N.partial-*, or no manifest yet)
    kDamaged,   // a manifest that does not parse, or a file missing or of another size
  };
  uint64_t step = 0;
  State state = State::kPartial;
  bool upload_pending = false;  // complete locally, upload to the store not finished
  uint64_t bytes = 0;           // the manifest's total; partial: bytes on disk so far
  uint64_t files = 0;
  std::string created;   // the manifest's ISO 8601 time ("" without one)
  int64_t mtime_us = 0;  // the directory's modification time
  std::string name;      // the directory's name in local_dir
  std::string note;      // why partial or damaged
};
const char* LocalCheckpointStateName(LocalCheckpointEntry::State s);  // complete|partial|damaged
// Newest step first; NotFound when local_dir does not exist. Sizes are
// checked with stat (no checksums: a listing must stay cheap).
Result<std::vector<LocalCheckpointEntry>> ScanLocalCheckpoints(const std::string& local_dir);

class CheckpointManager {
 public:
  static Result<std::unique_ptr<CheckpointManager>> Open(CheckpointOptions options);
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  // Durable locally when it returns OK; uploaded in the background.
  // kAlreadyExists if the step exists locally.
  Status Save(uint64_t step, const std::vector<CheckpointItem>& items);
  // Waits until every upload queued so far finished; the first failure since
  // the last Wait (the failed checkpoint stays local and pending: the next
  // Open, or Retry, uploads it again).
  Status Wait();
  // Queues the upload of every local checkpoint still pending.
  Status Retry();

  // Local and (with remote, when there is a store) remote checkpoints,
  // ascending by step. An unreachable store is an error; List(false) still
  // shows what is local.
  Result<std::vector<CheckpointInfo>> List(bool remote = true);
  // The newest step complete locally or remotely; nullopt if none.
  Result<std::optional<uint64_t>> Latest();
  Result<LoadedCheckpoint> Load(uint64_t step, const LoadOptions& options = {});
  // Reads one file of a checkpoint whole (after Load's checks).
  Result<std::string> ReadFile(uint64_t step, std::string_view name);
  // Deletes the local copy and/or the remote one (the manifest first, so a
  // half-deleted checkpoint is never visible). A local copy still uploading
  // is refused unless force.
  Status Remove(uint64_t step, bool local, bool remote, bool force = false);

  // What Open found: partial saves removed, uploads resumed or pending, and
  // remote checkpoints without a manifest (never published).
  const std::vector<std::string>& recovery_report() const;
  CheckpointStats stats() const;
  const CheckpointOptions& options() const;

  // "step-000000000042"
  static std::string StepName(uint64_t step);

  struct Impl;

 private:
  explicit CheckpointManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::cache
