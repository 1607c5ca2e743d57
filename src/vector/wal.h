// Private to the collection layer: the write-ahead log of one collection.
//
// Files wal/<seq>.log, each a 24-byte header ("STRWAL01", seq, first lsn)
// followed by records [u32 body length][u32 crc32c][u64 lsn][u8 type][body],
// the crc covering lsn, type and body. Sequence numbers (lsn) grow by one per
// record across files. Open() replays every file from a start sequence
// number; a torn or corrupt tail of the last file (a crash mid-append) is cut
// off, a bad record in an older file is kCorruption.
//
// Append() writes a record with write(2), so it survives kill -9 as soon as it
// returns; Sync(lsn) makes it survive power loss, one fdatasync shared by all
// callers waiting at the time (group commit).
//
// A failed fsync poisons the log: Linux may have dropped the pages it could
// not write and reports the error once, so a retried fsync would succeed
// without the records on disk. From then on Append, Sync and Rotate fail with
// the first error (nothing more is acknowledged), until the collection is
// reopened; Close then starts a fresh file, so records written after the
// reopen never share a file with pages the kernel may have lost.
//
// Thread-safety: Append and Rotate serialise on an internal mutex (the
// collection also calls Append under its own write lock, so WAL order is apply
// order); Sync may run concurrently with both.
#pragma once

#include <strata/core/result.h>
#include <strata/core/status.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::vector::internal {

class Wal {
 public:
  using ReplayFn = std::function<Status(uint64_t lsn, uint8_t type, std::string_view body)>;

  // Opens (creating) `dir`, removes files older than start_seq, replays the
  // rest through `replay` and positions appends after the last good record.
  // The next lsn is at least min_next_lsn.
  static Result<std::unique_ptr<Wal>> Open(const std::string& dir, uint64_t start_seq,
                                           uint64_t min_next_lsn, bool sync,
                                           const ReplayFn& replay);
  ~Wal();

  Result<uint64_t> Append(uint8_t type, std::string_view body);
  // Returns once every record up to `lsn` is durable (a no-op without sync).
  Status Sync(uint64_t lsn);
  // Closes the current file (fsynced) and starts the next; returns its seq.
  Result<uint64_t> Rotate();
  // Removes the files with a sequence number below `seq`.
  void RemoveBefore(uint64_t seq);
  // Paths and current sizes of the files from `seq` on (for snapshots; the
  // caller keeps appends out while it uses them).
  std::vector<std::pair<std::string, uint64_t>> Files(uint64_t seq) const;

  uint64_t current_seq() const;
  uint64_t last_lsn() const;  // 0 when nothing was ever written
  uint64_t syncs() const { return syncs_; }
  uint64_t bytes() const;  // total bytes of the live files
  void Close();

 private:
  Wal() = default;
  std::string PathOf(uint64_t seq) const;
  Status CreateFile(uint64_t seq, uint64_t first_lsn);
  // sync_mu_ held: records a failed fsync of the current file (poisons the log).
  Status FailSyncLocked(const Status& st);
  // sync_mu_ held: the poisoning error, or Ok.
  Status PoisonedLocked() const;

  std::string dir_;
  bool sync_ = true;

  mutable std::mutex append_mu_;
  int fd_ = -1;                 // guarded by append_mu_ (and sync_mu_ for reads by Sync)
  uint64_t seq_ = 0;            // guarded by append_mu_
  uint64_t offset_ = 0;         // guarded by append_mu_
  uint64_t next_lsn_ = 1;       // guarded by append_mu_
  uint64_t old_bytes_ = 0;      // bytes of older live files; guarded by append_mu_
  std::vector<uint64_t> seqs_;  // live file sequence numbers; guarded by append_mu_

  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool sync_running_ = false;  // guarded by sync_mu_
  uint64_t synced_lsn_ = 0;    // guarded by sync_mu_
  uint64_t written_lsn_ = 0;   // guarded by sync_mu_ (set after each append)
  std::string fd_path_;        // the current file's path; as fd_
  Status sync_failed_;         // the first failed fsync (poisoned); guarded by sync_mu_
  uint64_t syncs_ = 0;
};

}  // namespace strata::vector::internal
