// DownloadJournal: what makes a large download resumable. The bytes of an
// unfinished download live in DST.strata-partial next to DST (never under
// DST's name: the final rename stays atomic), and DST.strata-partial.state
// records the object they belong to (ETag, size, part size) and, one line
// each, the parts completely written. A later download of the same object to
// the same DST keeps those parts and fetches only the others; a different
// ETag or size starts over.
//
// What survives: a crash or kill of this process (the page cache keeps what
// pwrite wrote, and a part is recorded only after all its bytes were
// written). A power loss may lose recorded bytes unless TransferOptions::fsync
// is set (then each part is fdatasynced before it is recorded); the object's
// full CRC, when it has one, is checked over resumed and fresh bytes alike.
//
// One process at a time: the data file is flock'ed; Open returns nullptr when
// another process holds it (that download then runs without resume).
//
// Thread-safety: MarkDone may be called concurrently; the rest from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/object_store.h>

namespace strata::objstore {

class DownloadJournal {
 public:
  // Opens (creating it if needed) the partial file of a download to `dst`.
  static Result<std::unique_ptr<DownloadJournal>> Open(const std::string& dst, bool sync_parts);
  ~DownloadJournal();
  DownloadJournal(const DownloadJournal&) = delete;
  DownloadJournal& operator=(const DownloadJournal&) = delete;

  int fd() const { return fd_; }
  const std::string& data_path() const { return data_path_; }
  const std::string& state_path() const { return state_path_; }

  // Prepares to download `info` in parts of `part_size` bytes: keeps the
  // parts recorded for the same ETag, size and part size and returns which
  // (true = already there); otherwise empties the file and records `info`.
  Result<std::vector<bool>> Begin(const ObjectInfo& info, uint64_t part_size);
  // Records part i as completely written.
  Status MarkDone(uint64_t i);
  // Parts on disk: kept by Begin plus recorded since.
  uint64_t parts_on_disk() const { return on_disk_.load(std::memory_order_relaxed); }
  // The download failed in a way a rerun cannot build on (the source
  // changed, the bytes are corrupt): removes both files.
  void Discard();
  // The data file was renamed to DST: removes the state file.
  void Finished();

 private:
  DownloadJournal(int fd, std::string data_path, bool sync_parts);

  int fd_;
  std::string data_path_, state_path_;
  bool sync_parts_;
  std::mutex mu_;
  int state_fd_ = -1;  // opened for appending by Begin; guarded by mu_
  std::atomic<uint64_t> on_disk_{0};
};

}  // namespace strata::objstore
