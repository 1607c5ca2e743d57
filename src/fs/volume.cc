#include <strata/fs/volume.h>

#include <sys/stat.h>

#include <unordered_set>

#include <fmt/format.h>

#include <strata/cache/cached_object_store.h>
#include <strata/fs/compression.h>
#include <strata/fs/encryption.h>

#include "fs/chunk_store.h"
#include "fs/data_io.h"
#include "fs/writeback.h"

namespace strata::fs {

Result<std::unique_ptr<Volume>> Volume::Open(std::string_view meta_url, const VolumeOptions& options) {
  std::unique_ptr<Volume> v(new Volume());
  v->options_ = options;
  auto meta = fsmeta::OpenMeta(meta_url);
  if (!meta) return meta.error().WithContext(fmt::format("opening metadata {}", meta_url));
  v->meta_ = std::move(*meta);
  auto format = v->meta_->LoadFormat();
  if (!format) {
    return format.error().WithContext(
        fmt::format("{} holds no formatted volume (run `strata fs format {} NAME --storage URL` first)",
                    meta_url, meta_url));
  }
  v->format_ = *format;
  Compression comp;
  if (!ParseCompression(v->format_.compress, &comp))
    return Status::Corruption(fmt::format("volume uses unknown compression \"{}\"", v->format_.compress));
  std::string block_key;
  STRATA_RETURN_IF_ERROR(v->LoadKey(&block_key));
  auto store = objstore::OpenObjectStore(v->format_.storage);
  if (!store) return store.error().WithContext(fmt::format("opening storage {}", v->format_.storage));
  v->store_ = std::move(*store);

  cache::CacheOptions co;
  co.block_size = v->format_.block_size;
  co.ram_capacity_bytes = options.ram_cache_size;
  if (!options.cache_dir.empty() && options.cache_size > 0) {
    cache::DiskTierOptions d;
    d.dir = options.cache_dir;
    d.capacity_bytes = options.cache_size;
    co.disk_tiers.push_back(d);
  }
  // Block objects never change (slice ids are never reused): trust a HEAD forever.
  co.metadata_ttl_ms = int64_t{1} << 40;
  co.admission = cache::AdmissionPolicy::kAll;
  co.name = "fs";
  // Readahead across blocks is ours (DataIO); the cache's own would only
  // re-read within one block object.
  co.readahead = false;
  auto cached = cache::CachedObjectStore::Open(v->store_.get(), co);
  if (!cached) return cached.error().WithContext("opening the block cache");
  v->cache_ = std::move(*cached);

  ChunkStoreOptions cso;
  cso.volume = v->format_.name;
  cso.block_size = v->format_.block_size;
  cso.compression = comp;
  cso.max_uploads = options.max_uploads;
  cso.prefetch_threads = 8;
  cso.encrypted = !v->format_.encrypt.empty();
  cso.encrypt_key = std::move(block_key);
  v->chunks_ = std::make_unique<ChunkStore>(v->store_.get(), v->cache_.get(), cso);
  STRATA_RETURN_IF_ERROR(v->OpenWriteback());
  v->slice_meta_ = NewMetaSliceMeta(v->meta_.get());
  DataOptions dopts;
  dopts.buffer_size = options.buffer_size;
  dopts.prefetch_blocks = options.prefetch;
  dopts.background_compaction = !options.read_only;
  v->data_ = std::make_unique<DataIO>(v->slice_meta_.get(), v->chunks_.get(), dopts);
  return v;
}

Volume::Volume() = default;

Status Volume::LoadKey(std::string* block_key) {
  const bool encrypted = !format_.encrypt.empty();
  if (options_.encrypt_key_file.empty()) {
    if (encrypted && !options_.no_key_needed) {
      return Status::PermissionDenied(fmt::format(
          "volume \"{}\" is encrypted ({}): pass its key with --encrypt-key-file", format_.name, format_.encrypt));
    }
    return Status::Ok();
  }
  if (!encrypted)
    return Status::InvalidArgument(
        fmt::format("volume \"{}\" is not encrypted: --encrypt-key-file does not apply", format_.name));
  STRATA_ASSIGN_OR_RETURN(std::string material, ReadKeyFile(options_.encrypt_key_file));
  auto key = DeriveBlockKey(format_, material);
  if (!key) return key.error().WithContext(fmt::format("volume \"{}\"", format_.name));
  *block_key = std::move(*key);
  return Status::Ok();
}

Status Volume::OpenWriteback() {
  if (options_.writeback && options_.read_only)
    return Status::InvalidArgument("--writeback and --read-only exclude each other");
  if (options_.writeback && options_.cache_dir.empty())
    return Status::InvalidArgument("--writeback stages blocks on the local disk: it needs --cache-dir");
  if (options_.read_only || options_.cache_dir.empty()) return Status::Ok();
  const std::string dir = StageDirFor(options_.cache_dir, format_.uuid);
  std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> staged = Writeback::ListStaged(dir);
  struct stat st;
  // Without --writeback a stage is opened only to upload what a crashed
  // writeback mount left in it.
  if (!options_.writeback && (staged.empty() || ::stat(dir.c_str(), &st) != 0)) return Status::Ok();
  WritebackOptions wo;
  wo.dir = dir;
  wo.limit_bytes = options_.writeback_limit;
  wo.uploads = options_.writeback_uploads > 0 ? options_.writeback_uploads : options_.max_uploads;
  wo.upload_delay_ms = options_.writeback_upload_delay_ms;
  wo.sync_each = options_.writeback_sync;
  ChunkStore* cs = chunks_.get();
  auto wb = Writeback::Open(
      wo, [cs](uint64_t id, uint32_t index, std::string_view data) { return cs->UploadBlock(id, index, data); },
      [cs](uint64_t id, uint32_t index, uint32_t len) { return cs->store()->Delete(cs->BlockKey(id, index, len)); });
  if (!wb) return wb.error();
  // Which staged slices committed metadata references: those are uploaded,
  // the others (the mount died between stage and commit, or the file was
  // deleted) removed, and so are files cut short. One pass over the slices,
  // only when complete blocks were left (after a crash).
  std::unordered_set<uint64_t> want, live;
  for (auto& [id, index, len] : staged) want.insert(id);
  if (!want.empty()) {
    STRATA_RETURN_IF_ERROR(meta_->ListSlices([&](fsmeta::Ino, uint32_t, const fsmeta::Slice& s) {
      if (want.count(s.id)) live.insert(s.id);
      return Status::Ok();
    }).WithContext("listing slices for the writeback stage"));
  }
  auto kept = (*wb)->Recover([&](uint64_t id) { return live.count(id) != 0; });
  if (!kept) return kept.error();
  writeback_ = std::move(*wb);
  chunks_->SetWriteback(writeback_.get(), options_.writeback);
  writeback_->Start();
  return Status::Ok();
}

std::string Volume::StageDirFor(const std::string& cache_dir, const std::string& uuid) {
  return fmt::format("{}/{}/staging", cache_dir, uuid.empty() ? "volume" : uuid);
}

std::vector<std::string> Volume::StagedKeys(const std::string& cache_dir) const {
  std::vector<std::string> keys;
  for (auto& [id, index, len] : Writeback::ListStaged(StageDirFor(cache_dir, format_.uuid)))
    keys.push_back(BlockKey(id, index, len));
  return keys;
}

Status Volume::DrainWriteback() { return writeback_ ? writeback_->Drain() : Status::Ok(); }
uint64_t Volume::StagedBlocks() const { return writeback_ ? writeback_->Stats().staged_blocks : 0; }
uint64_t Volume::StagedBytes() const { return writeback_ ? writeback_->Stats().staged_bytes : 0; }
std::string Volume::StageDir() const { return writeback_ ? writeback_->dir() : std::string(); }

Volume::~Volume() {
  data_.reset();
  if (chunks_) chunks_->SetWriteback(nullptr, false);
  writeback_.reset();
  chunks_.reset();
  cache_.reset();
}

std::string Volume::ChunksPrefix() const { return chunks_->ChunksPrefix(); }

std::string Volume::BlockKey(uint64_t id, uint32_t index, uint32_t len) const {
  return chunks_->BlockKey(id, index, len);
}

uint32_t Volume::BlockLen(uint32_t slice_size, uint32_t index) const {
  return chunks_->BlockLen(slice_size, index);
}

bool Volume::ParseBlockKey(std::string_view key, uint64_t* id, uint32_t* index, uint32_t* len) const {
  return chunks_->ParseBlockKey(key, id, index, len);
}

Result<size_t> Volume::ProcessPendingDeletes(size_t limit) {
  STRATA_ASSIGN_OR_RETURN(auto refs, meta_->PendingSliceDeletes(limit));
  std::vector<uint64_t> done;
  Status first;
  for (const auto& r : refs) {
    Status st = chunks_->DeleteSlice(r.id, r.size);
    if (st.ok()) {
      done.push_back(r.id);
    } else if (first.ok()) {
      first = st;
    }
  }
  if (!done.empty()) STRATA_RETURN_IF_ERROR(meta_->ConfirmSliceDeletes(done));
  if (!first.ok() && done.empty()) return first;
  return done.size();
}

}  // namespace strata::fs
