// Volume: one opened Strata FS volume, everything a mount or a maintenance
// command needs: the metadata engine (from META_URL), the volume's format, the
// object store named by the format, the block cache in front of it, the chunk
// store and the data path.
//
// The chunk store and the data path are the fs library's own (src/fs/); to
// its users the Volume offers what they need of them: the names of the block
// objects (gc, fsck) and the pending deletes.
//
// Thread-safety: the parts are thread-safe; Open and Close are not.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/fsmeta/meta_engine.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {
class CachedObjectStore;
}

namespace strata::fs {

class ChunkStore;  // src/fs/chunk_store.h
class Writeback;   // src/fs/writeback.h
class DataIO;      // src/fs/data_io.h
class SliceMeta;   // src/fs/data_io.h

struct VolumeOptions {
  std::string cache_dir;                  // disk tier directory ("" = RAM only)
  uint64_t cache_size = 10ull << 30;      // disk tier bytes (with cache_dir)
  uint64_t ram_cache_size = 1ull << 30;   // RAM tier bytes
  uint64_t buffer_size = 300ull << 20;    // write buffer, whole mount
  int max_uploads = 20;                   // concurrent block uploads
  uint32_t prefetch = 8;                  // readahead blocks for sequential reads
  bool read_only = false;
  // Writeback (mount --writeback): a block is staged durably under
  // <cache_dir>/<volume uuid>/staging/ and uploaded in the background (needs
  // cache_dir). Without it, blocks a crashed writeback mount left staged in
  // cache_dir are still uploaded.
  bool writeback = false;
  uint64_t writeback_limit = 1ull << 30;  // staged bytes at most; beyond, uploads are synchronous
  int writeback_uploads = 0;              // background uploads in parallel (0: max_uploads)
  bool writeback_sync = true;  // fsync each staged block before its commit (false: at fsync)
  int64_t writeback_upload_delay_ms = 0;  // tests: hold each staged block this long before its upload
  // Encryption at rest (fs/encryption.h): the key file of an encrypted
  // volume. Open refuses an encrypted volume without it (unless
  // no_key_needed) and with a wrong one, and refuses it for a volume that is
  // not encrypted.
  std::string encrypt_key_file;
  // Maintenance that never reads or writes block contents (gc, fsck,
  // destroy, dump): an encrypted volume opens without its key, and any block
  // read or write fails.
  bool no_key_needed = false;
};

class Volume {
 public:
  static Result<std::unique_ptr<Volume>> Open(std::string_view meta_url, const VolumeOptions& options);
  ~Volume();

  fsmeta::MetaEngine* meta() const { return meta_.get(); }
  const fsmeta::Format& format() const { return format_; }
  objstore::ObjectStore* store() const { return store_.get(); }
  ChunkStore* chunks() const { return chunks_.get(); }
  DataIO* data() const { return data_.get(); }
  cache::CachedObjectStore* cache() const { return cache_.get(); }
  const VolumeOptions& options() const { return options_; }

  // The block objects of the volume, named as ChunkStore names them: the
  // prefix under which they all live ("<volume>/chunks/"), the key of block
  // `index` (of length `len`) of slice `id`, the length of block `index` of a
  // slice of `slice_size` bytes, and the inverse of BlockKey (false for a key
  // that is not a block of this volume).
  std::string ChunksPrefix() const;
  std::string BlockKey(uint64_t id, uint32_t index, uint32_t len) const;
  uint32_t BlockLen(uint32_t slice_size, uint32_t index) const;
  bool ParseBlockKey(std::string_view key, uint64_t* id, uint32_t* index, uint32_t* len) const;

  // Deletes the objects of up to `limit` slices the metadata engine queued
  // (freed files, compacted chunks) and confirms them; returns how many.
  Result<size_t> ProcessPendingDeletes(size_t limit = 1000);

  // Writeback: uploads every staged block and waits until the stage is empty
  // (unmount), or until uploads keep failing (then they stay staged for the
  // next mount, and this says so). Ok at once without a stage.
  Status DrainWriteback();
  // Blocks and bytes staged and not yet uploaded (0 without a stage).
  uint64_t StagedBlocks() const;
  uint64_t StagedBytes() const;
  // The stage directory ("" without one).
  std::string StageDir() const;
  // Where a mount with cache directory `cache_dir` stages the blocks of the
  // volume with this uuid.
  static std::string StageDirFor(const std::string& cache_dir, const std::string& uuid);
  // Object keys of this volume's blocks staged in `cache_dir` (by a
  // writeback mount, live or crashed) and not yet uploaded (fsck).
  std::vector<std::string> StagedKeys(const std::string& cache_dir) const;

 private:
  Volume();
  Status OpenWriteback();
  Status LoadKey(std::string* block_key);  // the block key per options_ ("" without encryption)
  VolumeOptions options_;
  std::unique_ptr<fsmeta::MetaEngine> meta_;
  fsmeta::Format format_;
  std::unique_ptr<objstore::ObjectStore> store_;
  std::unique_ptr<cache::CachedObjectStore> cache_;
  std::unique_ptr<ChunkStore> chunks_;
  std::unique_ptr<Writeback> writeback_;  // destroyed before chunks_ (its uploader uses it)
  std::unique_ptr<SliceMeta> slice_meta_;
  std::unique_ptr<DataIO> data_;
};

}  // namespace strata::fs
