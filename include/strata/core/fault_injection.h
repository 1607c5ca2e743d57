// Faults at the file layer, for tests: core's WriteAll and PwriteAll (the
// write path of the object engine's data files, the vector WAL, segments and
// indexes, Parquet files, cache checkpoints and atomic replaces), the cache's
// block-file writer and the FS metadata's SQLite VFS consult this before each
// write, so a test can make a chosen write fail as a full disk
// (ENOSPC) or a failing device (EIO) does, optionally after writing part of
// the buffer (a short write, as Linux does when the disk fills mid-write).
// Disarmed, a write pays one relaxed atomic load. Thread-safe.
//
// Sync faults: the same files' fsync/fdatasync (SyncFile / SyncFileData,
// FsyncDir, CommitTempFile, RocksDB's files under the object engine, the
// SQLite VFS's xSync) can be made to fail with EIO, as a device that lost
// writeback does. Linux then forgets the error and drops the dirty pages'
// "dirty" mark, so a retried fsync succeeds without the data ever reaching
// the disk ("fsyncgate"): a caller must fail the write and stop trusting the
// file, never retry and acknowledge. While tracking un-synced writes, a file
// whose sync failed is modelled that way: nothing written to it since its
// last good sync becomes durable again, whatever later syncs report.
//
// Power loss: while TrackUnsyncedWrites(true) is on, the same seam remembers,
// per file (inode), the size and contents its last fsync made durable
// (SyncFile / SyncFileData in core/file_sync.h, CommitTempFile, and RocksDB's
// files under the object engine). WriteCrashImage copies a directory as a
// power cut would leave it: every byte not fsynced since is dropped (or the
// first `keep_unsynced_bytes` of it kept, a torn write). Directory entries
// (creates, renames, unlinks) count as durable at once; only file data is
// modelled.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/result.h>

namespace strata::fault {

struct WriteFault {
  std::string path_contains;  // only writes whose path / description contains this ("": all)
  int skip = 0;               // matching writes that succeed before the first fault
  int err = ENOSPC;           // errno the failing write reports
  size_t written_first = 0;   // bytes really written before the failure (a short write)
  int times = -1;             // faults to inject, then disarm (-1: until ClearFaults)
};

struct SyncFault {
  std::string path_contains;  // only syncs of files whose path / description contains this
  int skip = 0;               // matching syncs that succeed before the first fault
  int err = EIO;              // errno the failing fsync/fdatasync reports
  int times = -1;             // faults to inject, then disarm (-1: until ClearFaults)
};

// Arms one write fault (replacing any armed one).
void InjectWriteFault(WriteFault f);
// Arms one sync fault (replacing any armed sync fault; write faults stay).
void InjectSyncFault(SyncFault f);
// Disarms write and sync faults; the disk is healthy again.
void ClearFaults();
// Faults (write and sync) injected since the process started (tests check they hit).
uint64_t FaultsInjected();

// Starts (true) or stops and forgets (false) tracking un-synced writes.
// Files written before tracking started count as durable.
void TrackUnsyncedWrites(bool on);
bool TrackingUnsyncedWrites();

struct CrashImageStats {
  uint64_t files = 0;          // regular files copied
  uint64_t files_cut = 0;      // files that lost un-synced data
  uint64_t bytes_dropped = 0;  // un-synced bytes not in the image
};
// Copies the tree under `dir` to `image_dir` (created; must not exist) as a
// power loss at this instant would leave it. Writes through the seam wait
// while the image is taken, so it is one consistent instant.
Result<CrashImageStats> WriteCrashImage(const std::string& dir, const std::string& image_dir,
                                        uint64_t keep_unsynced_bytes = 0);

namespace internal {
// For file_util: 0 to write normally, or the errno to fail with after
// writing *written_first bytes (at most n).
int OnWrite(std::string_view what, size_t n, size_t* written_first);
// For syncers, before fsync/fdatasync of fd (-1: a directory or a file the
// tracker does not see) described by `what`: 0 to sync normally, or the errno
// to fail with (the sync is then not done, and while tracking the file's
// un-synced bytes are lost for good, as after a real failed writeback).
int OnSync(int fd, std::string_view what);
// For writers: fd is about to get n bytes at offset (-1: its file position).
// Remembers what the write replaces while tracking; one relaxed load when not.
void BeforeWrite(int fd, int64_t offset, size_t n);
// For syncers, around a successful fsync/fdatasync of fd: what the file held
// when the sync started is durable (writes racing with it may not be).
struct SyncMark {
  uint64_t size = 0;
  uint64_t seq = 0;
};
SyncMark BeforeSync(int fd);
void AfterSync(int fd, SyncMark mark);
}  // namespace internal

}  // namespace strata::fault
