// DataIO (private to fs): the file data path of Strata FS, between the FUSE adapter and the
// object store.
//
// Writes are buffered per inode as in-memory slices, one open slice per chunk:
// a write that continues the open slice (or rewrites its not-yet-uploaded
// tail) extends it, any other write freezes it and starts a new one. Full
// blocks are uploaded at once on the ChunkStore's upload pool (bounded by
// max_uploads), so uploading overlaps writing. A slice is committed to the
// metadata engine (one Write(slice) each, in creation order per chunk, which
// is the order "later overrides earlier" needs) when its blocks are all
// uploaded and either it is frozen (background commits on later writes),
// Flush is called (flush, fsync, close, truncate), or the bytes buffered by
// the whole mount exceed buffer_size.
//
// Reads take the chunk's committed slice list from the metadata engine and
// overlay this mount's uncommitted slices (read-your-writes): both are
// captured under the inode's writer lock, so a commit racing with the read
// can neither hide nor duplicate data. Sequential reads (per ReadState) fetch
// the next `prefetch_blocks` blocks into the cache in the background. A chunk
// read with more than compact_threshold slices is compacted in the background
// (its visible bytes rewritten as one slice, swapped in with ReplaceSlices).
//
// Thread-safety: all methods are thread-safe; a ReadState belongs to one file
// handle and is used by one read at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <strata/core/result.h>
#include <strata/fsmeta/meta_engine.h>

#include "fs/chunk_store.h"

namespace strata::fs {

class BlockBufferPool;  // data_io.cc

using fsmeta::Ino;

// What the data layer needs of the metadata engine (an adapter over
// MetaEngine in production, a fake in some tests).
class SliceMeta {
 public:
  virtual ~SliceMeta() = default;
  virtual Result<uint64_t> NewSliceId() = 0;
  virtual Result<std::vector<fsmeta::Slice>> ReadChunk(Ino ino, uint32_t chunk_index) = 0;
  virtual Status WriteChunk(Ino ino, uint32_t chunk_index, uint32_t pos, const fsmeta::Slice& slice,
                            int64_t mtime_ns) = 0;
  virtual Status ReplaceSlices(Ino ino, uint32_t chunk_index, const std::vector<fsmeta::Slice>& expected,
                               const std::vector<fsmeta::Slice>& replacement) = 0;
  // Several WriteChunks of one file, in order, in one metadata transaction
  // where the engine can; the default runs them one by one.
  virtual Status WriteChunks(Ino ino, const std::vector<fsmeta::MetaEngine::SliceWrite>& writes) {
    for (const auto& w : writes) {
      Status st = WriteChunk(ino, w.chunk_index, w.pos, w.slice, w.mtime_ns);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
};

// The adapter over a MetaEngine (not owned).
std::unique_ptr<SliceMeta> NewMetaSliceMeta(fsmeta::MetaEngine* meta);

struct DataOptions {
  uint64_t buffer_size = 300ull << 20;  // uncommitted bytes, whole mount, before forced commits
  uint32_t prefetch_blocks = 8;         // readahead depth for sequential reads (0: none); 8 x 4 MiB measured 2-3x faster than 3 on a loopback S3
  size_t compact_threshold = 64;        // slices in one chunk that trigger a compaction
  bool background_compaction = true;
};

// One file handle's read pattern, for readahead.
struct ReadState {
  uint64_t next_off = 0;       // where a sequential read would continue
  uint32_t sequential = 0;     // consecutive sequential reads
  uint64_t prefetched_to = 0;  // file offset up to which readahead was issued
};

// A visible piece of a chunk: [pos, pos + len) comes from slice `id` at `off`
// (id 0: zeros).
struct Segment {
  uint32_t pos = 0, len = 0;
  uint64_t id = 0;
  uint32_t size = 0, off = 0;
};
// The visible segments of [from, to) of a chunk given its slice list (later
// slices override earlier ones), sorted by pos, covering [from, to) exactly.
std::vector<Segment> VisibleSegments(const std::vector<fsmeta::Slice>& slices, uint32_t from, uint32_t to);

class DataIO {
 public:
  // Neither meta nor store is owned; both must outlive this object.
  DataIO(SliceMeta* meta, ChunkStore* store, DataOptions options);
  ~DataIO();

  // Buffers data at off (may commit older slices of this inode, or all of
  // them when the mount's buffer is full). An upload error of an earlier
  // write is returned here or by the next Flush.
  Status Write(Ino ino, uint64_t off, std::string_view data);
  // Reads [off, off + n) clipped at `length` (the file length the caller
  // sees, dirty length included); returns the byte count.
  Result<size_t> Read(Ino ino, uint64_t off, size_t n, char* buf, uint64_t length,
                      ReadState* rs = nullptr);
  // A file of `length` bytes was opened for reading and the kernel holds none
  // of its pages: when it fits in one block, starts fetching that block now,
  // so the GET overlaps the open's reply and the kernel's first READ (a cold
  // read of a small file is otherwise open, then READ, then the fetch). Larger
  // files are left to readahead. A hint: errors are left to the read.
  void PrefetchHead(Ino ino, uint64_t length);
  // Uploads and commits every buffered write of ino.
  Status Flush(Ino ino);
  Status FlushAll();
  // Drops buffered writes of ino at or beyond `length` from view (used before
  // a truncate; callers Flush first, so this only forgets the writer).
  // End offset of this mount's uncommitted data of ino (0 if none).
  uint64_t DirtyLength(Ino ino);
  bool HasDirty(Ino ino);
  uint64_t buffered_bytes() const { return buffered_.load(); }
  // Bumped after every commit's metadata write, before the committed bytes
  // stop counting in DirtyLength: a reader that samples it before reading
  // attributes, then DirtyLength, then it again, sees a consistent length.
  uint64_t commit_seq() const { return commit_seq_.load(); }

  // Slice lists read from the metadata engine are cached per inode until
  // this mount changes them (commits, compaction) or this is called: at open
  // (close-to-open: another client may have written) and after any change
  // made through the metadata engine directly (truncate, fallocate).
  void InvalidateSlices(Ino ino);

  // Rewrites the chunk's visible bytes as one slice when it has at least
  // min_slices slices. Returns true if it compacted.
  Result<bool> CompactChunk(Ino ino, uint32_t chunk_index, size_t min_slices = 2);
  // Waits for background compactions (tests, shutdown).
  void WaitBackground();
  // Frees the idle write buffers kept for the next burst, unless one was
  // taken since the last call (the mount calls it every few seconds).
  void TrimBuffers();

  ChunkStore* store() const { return store_; }

 private:
  struct Writer;
  struct DirtySlice;
  std::shared_ptr<Writer> GetWriter(Ino ino, bool create);
  Status CommitFront(Ino ino, Writer* w, bool wait, bool all);
  Status UploadSlice(Writer* w, DirtySlice* s);
  bool EnoughToCommit(const Writer& w) const;
  void Freeze(Writer* w, DirtySlice* s);
  void SubmitBlock(Writer* w, DirtySlice* s, uint32_t index);
  Status ReadChunkRange(Ino ino, uint32_t chunk, uint32_t from, uint32_t to, char* buf,
                        std::vector<fsmeta::Slice>* slices_out);
  void MaybeCompact(Ino ino, uint32_t chunk, size_t nslices);
  Result<std::vector<fsmeta::Slice>> CachedSlices(Ino ino, uint32_t chunk);
  // Starts background fetches of the blocks under [from, to) of a chunk with these slices.
  void PrefetchSegments(const std::vector<fsmeta::Slice>& slices, uint32_t from, uint32_t to);

  SliceMeta* meta_;
  ChunkStore* store_;
  DataOptions options_;
  std::atomic<uint64_t> buffered_{0};
  std::atomic<uint64_t> commit_seq_{0};
  std::mutex mu_;
  std::unordered_map<Ino, std::shared_ptr<Writer>> writers_;  // guarded by mu_
  std::mutex slices_mu_;
  std::unordered_map<Ino, std::unordered_map<uint32_t, std::vector<fsmeta::Slice>>> slices_;  // guarded by slices_mu_
  uint64_t slices_epoch_ = 0;   // bumped by every invalidation, guarded by slices_mu_
  size_t slices_entries_ = 0;   // guarded by slices_mu_
  std::mutex compact_mu_;
  std::unordered_set<uint64_t> compacting_;  // (ino << 20 | chunk), guarded by compact_mu_
  std::unique_ptr<ThreadPool> compact_pool_;
  std::shared_ptr<BlockBufferPool> buffers_;
};

}  // namespace strata::fs
