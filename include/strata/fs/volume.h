// Volume: one opened Strata FS volume, everything a mount or a maintenance
// command needs: the metadata engine (from META_URL), the volume's format, the
// object store named by the format, the block cache in front of it, the chunk
// store and the data path.
//
// Thread-safety: the parts are thread-safe; Open and Close are not.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/fs/chunk_store.h>
#include <strata/fs/data_io.h>
#include <strata/fsmeta/meta_engine.h>
#include <strata/objstore/object_store.h>

namespace strata::cache {
class CachedObjectStore;
}

namespace strata::fs {

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

  // Deletes the objects of up to `limit` slices the metadata engine queued
  // (freed files, compacted chunks) and confirms them; returns how many.
  Result<size_t> ProcessPendingDeletes(size_t limit = 1000);

 private:
  Volume() = default;
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
