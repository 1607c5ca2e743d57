// TransferManager: parallel transfers between local files and any ObjectStore,
// and server-side copies between S3 buckets. The engine behind `strata cp`,
// `strata sync` and the checkpoint uploader.
//
// What it promises:
//   * Uploads: one PUT at or below TransferOptions::multipart_threshold, else a
//     multipart upload whose parts are read with pread straight from the file
//     (nothing is buffered whole) and sent `concurrency` at a time; the part
//     size grows so no upload needs more than 10,000 parts. A failed part is
//     tried again (on top of the store's own retries). An interrupted multipart
//     upload resumes: its upload id is recorded in a small state file (under
//     TransferOptions::state_dir) keyed by source path, size, mtime and
//     destination; the next UploadFile of the same unchanged file to the same
//     key lists the parts already stored and sends only the missing ones.
//   * Downloads: parallel ranged GETs pinned to the ETag of the first response
//     (If-Match), so a source object replaced mid-download fails with
//     kPreconditionFailed ("source changed during download") instead of
//     producing a file mixed from two versions. Bytes are written with pwrite
//     into DST.strata-tmp-XXXXXX next to DST (fsynced if asked) and renamed
//     over DST: a failed download never leaves a partial DST nor destroys the
//     old one.
//     When the object carries a full-object CRC (CRC32, CRC32C, CRC64NVME),
//     a multi-range download is verified against it.
//     Ranged downloads resume (TransferOptions::resume): their bytes go to
//     DST.strata-partial instead, kept after a failure with a record of the
//     object's ETag and size and the parts written; the next download of the
//     same unchanged object to DST fetches only the missing parts, a changed
//     one starts over (objstore/download_journal.h).
//   * Copies between buckets of one S3 service are server-side: CopyObject,
//     or UploadPartCopy parts in parallel above the multipart threshold.
//   * Batches: every call may run on the manager's pool (Run/Wait) — the parts
//     of all objects in flight share the same `concurrency` workers, so 10,000
//     small files and one 100 GiB file both keep `concurrency` requests busy.
//
// Thread-safety: all methods may be called concurrently from any thread,
// including from tasks running on the manager's own pool. The progress
// callback is called from worker threads, at most every 100 ms and once when
// each object finishes, never concurrently with itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/objstore/object_store.h>

namespace strata::objstore {

class S3Client;
class RateLimiter;  // rate_limit.h

struct TransferOptions {
  // Requests in flight at once (worker threads), across all objects and parts.
  // 16 won on loopback and is what awscli/rclone users raise theirs to
  // (docs/transfer.md has the measurements).
  int concurrency = 16;
  // Multipart part size; grown (in MiB steps) so that a file needs at most
  // 10,000 parts. At least 5 MiB (S3's minimum).
  uint64_t part_size = 8ull << 20;
  // Files larger than this are uploaded in parts, objects larger than this are
  // downloaded with parallel ranged GETs and copied with UploadPartCopy.
  uint64_t multipart_threshold = 16ull << 20;
  // Tries per part or single-request object, the first included, on top of the
  // store's own retries; only transient errors (kUnavailable, kIOError,
  // kCorruption on upload) are tried again.
  int attempts = 3;
  // Keep an interrupted multipart upload (and its state file) so the next run
  // resumes it, and the partial file of a failed ranged download so the next
  // download resumes it; false aborts the upload and removes the partial file
  // on failure.
  bool resume = true;
  // Where resume state files live; "" = $XDG_CACHE_HOME/strata/uploads, or
  // ~/.cache/strata/uploads.
  std::string state_dir;
  // fsync downloaded files before the rename that makes them visible (ranges
  // are handed to writeback as they land, so disk and network overlap). Off by
  // default, as in cp, rsync, awscli and rclone: the rename alone already
  // guarantees that DST is the old file or the whole new one after any failure
  // or crash of this process; fsync adds survival of a power loss, at the
  // disk's write speed (docs/transfer.md: 2.5x slower large downloads here).
  bool fsync = false;
  // Set a downloaded file's mtime to the object's LastModified (as awscli does,
  // so that `sync` can compare the two afterwards).
  bool preserve_mtime = true;
  // Content type, metadata, headers, storage class, ACL and checksum of
  // uploads (conditions are ignored). Server-side copies send the storage class
  // and ACL, and when any metadata or header is set, replace the source's with
  // it (x-amz-metadata-directive REPLACE, as awscli); else they keep the source's.
  WriteOptions write;
  // Server-side copies: whether the copy keeps the source's metadata (kCopy)
  // or gets only `write`'s (kReplace, x-amz-metadata-directive REPLACE).
  // kAuto replaces when `write` sets any metadata or header, as awscli does.
  enum class MetadataDirective { kAuto, kCopy, kReplace };
  MetadataDirective metadata_directive = MetadataDirective::kAuto;
  // Bandwidth limits (rclone's --bwlimit), shared by every worker: uploads
  // draw from upload_limit, downloads from download_limit (nullptr = none;
  // both may be the same limiter, one limit for the two directions). A copy
  // between two services draws its reads from download_limit and its writes
  // from upload_limit (once only when they are the same). Server-side copies
  // move no bytes through this process and are not limited.
  std::shared_ptr<RateLimiter> upload_limit;
  std::shared_ptr<RateLimiter> download_limit;
};

struct TransferProgress {
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  uint64_t objects_done = 0;
  uint64_t objects_total = 0;
  uint64_t objects_failed = 0;
};
using ProgressCallback = std::function<void(const TransferProgress&)>;

// The part size an object of `size` bytes gets: `preferred` (at least 5 MiB),
// grown to a whole number of MiB when the object would otherwise need more
// than 10,000 parts.
uint64_t EffectivePartSize(uint64_t size, uint64_t preferred);

class TransferManager {
 public:
  explicit TransferManager(TransferOptions options = {});
  ~TransferManager();  // waits for tasks submitted with Run
  TransferManager(const TransferManager&) = delete;
  TransferManager& operator=(const TransferManager&) = delete;

  const TransferOptions& options() const;

  // Uploads the file at `path` to `key` (resuming an interrupted multipart
  // upload of the same unchanged file to the same key).
  Result<ObjectInfo> UploadFile(const std::string& path, ObjectStore& store, std::string_view key);

  // Downloads `key` to `path` (atomically, see above; missing parent
  // directories are created). `known`, when given (from a listing or a HEAD),
  // saves the HEAD: its size decides between one GET and ranged GETs, and its
  // ETag pins the ranges (if the object changed since `known` was taken, the
  // download starts over once on the current version). Returns the object's
  // info (size, etag, mtime).
  Result<ObjectInfo> DownloadFile(ObjectStore& store, std::string_view key, const std::string& path,
                                  const ObjectInfo* known = nullptr);

  // Server-side copy of src_bucket/src_key to dst_bucket/dst_key in the
  // service of `client`. `known` saves the HEAD of the source (it must carry
  // size, and content type/metadata when the copy goes in parts).
  Result<ObjectInfo> CopyS3Object(S3Client& client, std::string_view src_bucket,
                                  std::string_view src_key, std::string_view dst_bucket,
                                  std::string_view dst_key, const ObjectInfo* known = nullptr);

  // Copy between stores of two services (two endpoints, or any two
  // ObjectStores): the bytes stream through this process, one PUT at or below
  // the multipart threshold, else a multipart upload whose parts are ranged
  // GETs of the source (pinned to its ETag: a source replaced mid-copy fails
  // with kPreconditionFailed and the upload is aborted) sent in parallel, at
  // most `concurrency` parts in memory. Metadata, storage class, ACL, SSE and
  // checksum follow `write` and `metadata_directive` as CopyS3Object's do.
  Result<ObjectInfo> CopyBetweenStores(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                                       std::string_view dst_key);

  // Runs fn on the pool; Wait() returns when every fn submitted so far has
  // returned. Tasks may themselves upload/download (their parts share the
  // pool). Run blocks while many tasks are queued (backpressure for callers
  // that submit millions of objects while listing).
  void Run(std::function<void()> fn);
  void Wait();

  // Progress: totals are what callers announced with AddTotal (the manager
  // adds the bytes and objects it moves as they complete).
  void AddTotal(uint64_t bytes, uint64_t objects);
  TransferProgress progress() const;
  void set_progress_callback(ProgressCallback cb);
  // Counts an object that failed (for progress displays).
  void CountFailure();

  // Removes the temporary files of the downloads in flight, not the resumable
  // partial files of ranged downloads (for a program that
  // is about to exit on SIGINT; the downloads then fail). Not signal-safe:
  // call it from a thread, e.g. one waiting in sigwait.
  void RemoveTemporaryFiles();

  // The resume state file UploadFile would use for this upload (exposed for
  // tests and `strata cp` messages).
  std::string StateFilePath(const std::string& path, const ObjectStore& store,
                            std::string_view key, uint64_t size, int64_t mtime_ns) const;

  class Pool;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::objstore
