// ChunkStore (private to fs): the object-storage side of Strata FS. A file's bytes live in
// slices (one write session's contiguous bytes, identified by a 64-bit id that
// the metadata engine hands out and never reuses); a slice is stored as blocks
// of at most `block_size` bytes, one object each, named as JuiceFS names them:
//
//   <volume>/chunks/<id / 1000000>/<id / 1000>/<id>_<block index>_<block length>
//
// The block length in the key is the uncompressed length, so a reader needs
// nothing but the slice id and size to find every block. With compression
// (lz4 or zstd) each block object holds the compressed bytes of the whole
// block; readers fetch and decompress the whole block.
//
// Objects are immutable (ids are never reused), so the read cache can trust
// what it learned about a key forever; reads go through a CachedObjectStore
// (RAM and disk tiers) and writes straight to the base store, or, with
// writeback (fs/writeback.h), to the local stage, uploaded in the background.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <list>
#include <unordered_map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/thread_pool.h>
#include <strata/fs/compression.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {
class CachedObjectStore;
}

namespace strata::fs {

class Writeback;  // fs/writeback.h

struct ChunkStoreOptions {
  std::string volume;                 // key prefix (the volume name)
  uint32_t block_size = 4u << 20;     // bytes per block object
  Compression compression = Compression::kNone;
  int max_uploads = 20;               // concurrent block PUTs
  int prefetch_threads = 8;           // concurrent readahead GETs
  // RAM for whole plain blocks: ones this process just wrote (a read after a
  // write needs no GET) and decompressed ones (compressed volumes).
  uint64_t block_ram_bytes = 128ull << 20;
  // Encryption at rest (fs/encryption.h): every block object is sealed with
  // AES-256-GCM under encrypt_key (32 bytes), its object key as associated
  // data, after compression. encrypted without a key (maintenance commands
  // that never touch block contents) refuses block reads and writes.
  bool encrypted = false;
  std::string encrypt_key;
};

class ChunkStore {
 public:
  // `store` is the base object store (writes, deletes, listing); `cache`, when
  // not null, is a CachedObjectStore in front of it used for reads. Neither is
  // owned; both must outlive the ChunkStore.
  ChunkStore(objstore::ObjectStore* store, cache::CachedObjectStore* cache,
             ChunkStoreOptions options);
  ~ChunkStore();

  const ChunkStoreOptions& options() const { return options_; }
  uint32_t block_size() const { return options_.block_size; }

  // Object key of block `index` (of length `len`) of slice `id`.
  std::string BlockKey(uint64_t id, uint32_t index, uint32_t len) const;
  // Length of block `index` of a slice of `slice_size` bytes.
  uint32_t BlockLen(uint32_t slice_size, uint32_t index) const;
  // Parses a key produced by BlockKey (relative to the store): false if it is
  // not a block key of this volume.
  bool ParseBlockKey(std::string_view key, uint64_t* id, uint32_t* index, uint32_t* len) const;
  // The prefix under which every block of this volume lives ("<volume>/chunks/").
  std::string ChunksPrefix() const;

  // Uploads one block (compressing it when configured). Synchronous; callers
  // run it on the upload pool. When `keep` (holding the same bytes as data)
  // is given, the block stays in RAM for reads after the upload.
  Status PutBlock(uint64_t id, uint32_t index, std::string_view data,
                  std::shared_ptr<const std::string> keep = nullptr);

  // Reads [off, off + len) of slice `id` (of `slice_size` bytes) into buf.
  Status ReadSlice(uint64_t id, uint32_t slice_size, uint32_t off, uint32_t len, char* buf);

  // Fetches blocks of slice `id` overlapping [off, off + len) into the cache in
  // the background (no-op without a cache or when already in flight).
  void Prefetch(uint64_t id, uint32_t slice_size, uint32_t off, uint32_t len);

  // Deletes every block object of the slice (missing blocks are fine).
  Status DeleteSlice(uint64_t id, uint32_t slice_size);

  // The pool that runs block uploads (bounded by max_uploads).
  ThreadPool* upload_pool() { return upload_pool_.get(); }

  objstore::ObjectStore* store() const { return store_; }

  // Writeback (mount --writeback): PutBlock stages blocks in `wb` (not owned;
  // it must outlive this store, or be detached with nullptr first) when
  // `stage_new` is set, and reads and deletes see the staged blocks either
  // way. Set before any I/O.
  void SetWriteback(Writeback* wb, bool stage_new);
  Writeback* writeback() const { return writeback_; }
  // Makes staged blocks durable on the local disk (fsync); Ok without a stage.
  Status SyncStage();
  // The upload itself, without staging (the stage's uploader calls it).
  Status UploadBlock(uint64_t id, uint32_t index, std::string_view data);

 private:
  Status ReadBlock(uint64_t id, uint32_t index, uint32_t block_len, uint32_t off, uint32_t len,
                   char* buf);
  objstore::ObjectStore* reader() const;

  objstore::ObjectStore* store_;
  cache::CachedObjectStore* cache_;
  ChunkStoreOptions options_;
  std::unique_ptr<ThreadPool> upload_pool_;
  std::unique_ptr<ThreadPool> prefetch_pool_;
  Writeback* writeback_ = nullptr;
  bool stage_new_ = false;
  // Whole plain blocks in RAM: just written, or decoded (decrypted and/or
  // decompressed, so the many small reads of one block decode it once).
  bool whole_block_reads() const { return options_.compression != Compression::kNone || options_.encrypted; }
  Status NeedKey(const std::string& key) const;
  std::shared_ptr<const std::string> Decompressed(const std::string& key, uint32_t block_len, Status* st);
  std::shared_ptr<const std::string> LookupPlain(const std::string& key);
  void InsertPlain(const std::string& key, std::shared_ptr<const std::string> block);
  std::mutex plain_mu_;
  std::list<std::pair<std::string, std::shared_ptr<const std::string>>> plain_lru_;  // guarded by plain_mu_
  std::unordered_map<std::string, decltype(plain_lru_)::iterator> plain_index_;      // guarded by plain_mu_
  uint64_t plain_bytes_ = 0;                                                           // guarded by plain_mu_
  std::mutex prefetch_mu_;
  std::unordered_set<std::string> prefetching_;  // guarded by prefetch_mu_
};

}  // namespace strata::fs
