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

#include <strata/core/result.h>
#include <strata/fsmeta/meta_engine.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {
class CachedObjectStore;
}

namespace strata::fs {

class ChunkStore;  // src/fs/chunk_store.h
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

 private:
  Volume();
  VolumeOptions options_;
  std::unique_ptr<fsmeta::MetaEngine> meta_;
  fsmeta::Format format_;
  std::unique_ptr<objstore::ObjectStore> store_;
  std::unique_ptr<cache::CachedObjectStore> cache_;
  std::unique_ptr<ChunkStore> chunks_;
  std::unique_ptr<SliceMeta> slice_meta_;
  std::unique_ptr<DataIO> data_;
};

}  // namespace strata::fs
