// Writeback (private to fs): the local stage of `strata fs mount --writeback`.
//
// With writeback a block is not uploaded before its slice is committed: it is
// written to a file in the stage directory and fdatasynced, with the directory (sync_each, the
// default; else made durable by the next fsync's Sync), and the commit then points at the block's
// object key,
// which is known before the upload. A background uploader (bounded concurrency) PUTs staged blocks
// and only then removes their files; until then reads of the block come from its stage file. A
// close therefore costs a local fsync and a metadata transaction, not a PUT.
//
// Crash safety, by ordering: a block is durable in the stage before any
// metadata names it, and its stage file is removed only after its object is
// in the store. After a crash the next mount with the same cache directory
// calls Recover, which uploads every staged block whose slice the metadata
// references and deletes the others (staged, then the mount died before the
// commit, perhaps in the middle of the write: no file can ever read them). Recover runs before the
// mount serves, with the stage locked (flock), so no commit can race with it.
//
// Limits: at most `limit_bytes` staged, and never the disk's last
// `min_free_bytes`; a block that does not fit, or whose
// stage write fails (ENOSPC, EIO), is reported back (Stage returns false) and
// the caller uploads it synchronously, so a full disk slows writes down
// instead of failing them. Blocks staged here cannot be read by other mounts
// until they are uploaded (as with JuiceFS's writeback).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <strata/core/result.h>

namespace strata::fs {

struct WritebackOptions {
  std::string dir;  // the stage directory (created)
  uint64_t limit_bytes = 1ull << 30;
  int uploads = 8;  // concurrent background uploads
  int64_t upload_delay_ms =
      0;  // tests: a block waits this long before its upload (not when draining)
  // Free space the stage leaves on its disk (the read cache and other
  // programs share it): -1 is 5% of the filesystem, at most 1 GiB.
  int64_t min_free_bytes = -1;
  // true (the default): each stage is fdatasynced (and the directory
  // fsynced) before Stage returns, i.e. before the commit that names the
  // block, so a closed file's data survives a power loss of the stage's disk.
  // false (mount --writeback-no-fsync): a stage survives a crash of the
  // mount (the kernel holds the written pages) and Sync() makes every stage
  // durable (fsync calls it).
  bool sync_each = true;
  int64_t retry_base_ms = 500;  // a failed upload is retried after 2x, 4x, ... this (30 s at most)
};

struct WritebackStats {
  uint64_t staged_blocks = 0, staged_bytes = 0;  // now in the stage
  uint64_t uploaded_blocks = 0;                  // uploaded since open
  uint64_t fallbacks = 0;        // blocks uploaded synchronously (stage full or failed)
  uint64_t upload_failures = 0;  // failed attempts (retried)
};

class Writeback {
 public:
  // Uploads one block (plain bytes) to the object store.
  using UploadFn = std::function<Status(uint64_t id, uint32_t index, std::string_view data)>;
  // Deletes the object of a block (a block forgotten while its upload ran).
  using DeleteFn = std::function<Status(uint64_t id, uint32_t index, uint32_t len)>;

  // Opens (creates) the stage directory and locks it; no upload starts
  // before Start().
  static Result<std::unique_ptr<Writeback>> Open(WritebackOptions options, UploadFn upload,
                                                 DeleteFn del);
  ~Writeback();  // stops the uploaders; staged blocks stay for the next mount

  // Scans the stage: temp files are removed; a staged
  // block whose slice `referenced` is kept for upload, the others removed.
  // Call before Start() and before any Stage(). Returns the blocks kept.
  Result<size_t> Recover(const std::function<bool(uint64_t id)>& referenced);
  // The blocks in a stage directory, without opening it (fsck): (id, index,
  // len) of each complete stage file (its size is len).
  static std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> ListStaged(const std::string& dir);
  void Start();

  // Stages a block durably. false: not staged (stage full, or the write
  // failed); the caller must upload it itself.
  bool Stage(uint64_t id, uint32_t index, std::string_view data);
  // Makes every block staged so far durable on the disk (syncfs of the
  // stage's filesystem, once per batch of unsynced stages).
  Status Sync();
  // Reads [off, off + n) of a staged block into buf. *found false when the
  // block is not (any more) staged: it is in the object store.
  Status Read(uint64_t id, uint32_t index, uint32_t len, uint32_t off, uint32_t n, char* buf,
              bool* found);
  // Whether the block is staged now (prefetching it from the store is futile).
  bool Contains(uint64_t id, uint32_t index) const;
  // The slice was freed: its staged blocks are dropped (an upload already
  // running deletes its object when it ends).
  void Forget(uint64_t id);
  // Uploads everything staged now (ignoring upload_delay_ms) and waits until
  // the stage is empty, or a block failed `max_failures` more times. Returns
  // the error that stopped it (the blocks stay staged for the next mount).
  Status Drain(int max_failures = 3);

  WritebackStats Stats() const;
  const std::string& dir() const { return options_.dir; }

 private:
  struct Entry {
    uint32_t len = 0;
    int64_t not_before_ms = 0;  // steady clock
    bool uploading = false;
    bool forgotten = false;  // freed while uploading
    int failures = 0;
  };
  using Key = std::pair<uint64_t, uint32_t>;  // (slice id, block index)

  Writeback(WritebackOptions options, UploadFn upload, DeleteFn del);
  std::string PathOf(uint64_t id, uint32_t index, uint32_t len) const;
  void Worker();
  void PublishLocked();
  bool DiskHasRoom(uint64_t len) const;
  Status WriteStageFile(const std::string& path, std::string_view data);
  Status FsyncDirFor(uint64_t created);
  std::mutex dir_sync_mu_;                    // one fsync of the directory at a time
  std::atomic<uint64_t> dir_created_seq_{0};  // stage files created so far
  uint64_t dir_synced_seq_ = 0;          // created before the last fsync, guarded by dir_sync_mu_
  std::mutex sync_mu_;                   // one syncfs at a time
  std::atomic<uint64_t> staged_seq_{0};  // stages so far
  uint64_t synced_seq_ = 0;              // stages made durable by Sync, guarded by sync_mu_

  WritebackOptions options_;
  UploadFn upload_;
  DeleteFn delete_;
  int lock_fd_ = -1;
  int dir_fd_ = -1;  // the stage directory, for the fsync after each stage
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work queued, stop, drain
  std::condition_variable done_cv_;  // an upload ended
  std::map<Key, Entry> entries_;     // guarded by mu_
  std::deque<Key> queue_;            // waiting for upload, guarded by mu_
  uint64_t bytes_ = 0;               // staged bytes, guarded by mu_
  WritebackStats stats_;             // counters, guarded by mu_
  bool draining_ = false;            // guarded by mu_
  bool stop_ = false;                // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace strata::fs
