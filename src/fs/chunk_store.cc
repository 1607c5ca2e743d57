#include "fs/chunk_store.h"

#include <chrono>

#include <strata/core/metrics.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include <strata/cache/cached_object_store.h>
#include <strata/core/aead.h>
#include <strata/core/log.h>
#include <strata/fs/encryption.h>

#include "fs/writeback.h"

namespace strata::fs {
namespace {
constexpr log::Logger kLog("fs");

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}
}  // namespace

ChunkStore::ChunkStore(objstore::ObjectStore* store, cache::CachedObjectStore* cache,
                       ChunkStoreOptions options)
    : store_(store), cache_(cache), options_(std::move(options)) {
  if (options_.block_size == 0) options_.block_size = 4u << 20;
  upload_pool_ = std::make_unique<ThreadPool>(std::max(1, options_.max_uploads));
  prefetch_pool_ = std::make_unique<ThreadPool>(std::max(1, options_.prefetch_threads), 256);
}

ChunkStore::~ChunkStore() {
  prefetch_pool_.reset();
  upload_pool_.reset();
}

objstore::ObjectStore* ChunkStore::reader() const {
  return cache_ ? static_cast<objstore::ObjectStore*>(cache_) : store_;
}

std::string ChunkStore::ChunksPrefix() const {
  return options_.volume.empty() ? "chunks/" : options_.volume + "/chunks/";
}

std::string ChunkStore::BlockKey(uint64_t id, uint32_t index, uint32_t len) const {
  return fmt::format("{}{}/{}/{}_{}_{}", ChunksPrefix(), id / 1000000, id / 1000, id, index, len);
}

bool ChunkStore::ParseBlockKey(std::string_view key, uint64_t* id, uint32_t* index,
                               uint32_t* len) const {
  std::string prefix = ChunksPrefix();
  if (key.substr(0, prefix.size()) != prefix) return false;
  key.remove_prefix(prefix.size());
  size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return false;
  std::string_view name = key.substr(slash + 1);
  size_t u1 = name.find('_');
  size_t u2 = u1 == std::string_view::npos ? u1 : name.find('_', u1 + 1);
  if (u2 == std::string_view::npos) return false;
  uint64_t a, b, c;
  if (!ParseU64(name.substr(0, u1), &a) || !ParseU64(name.substr(u1 + 1, u2 - u1 - 1), &b) ||
      !ParseU64(name.substr(u2 + 1), &c))
    return false;
  if (b > UINT32_MAX || c > UINT32_MAX) return false;
  *id = a;
  *index = static_cast<uint32_t>(b);
  *len = static_cast<uint32_t>(c);
  return key.substr(0, slash) == fmt::format("{}/{}", a / 1000000, a / 1000);
}

uint32_t ChunkStore::BlockLen(uint32_t slice_size, uint32_t index) const {
  uint64_t start = static_cast<uint64_t>(index) * options_.block_size;
  if (start >= slice_size) return 0;
  return static_cast<uint32_t>(std::min<uint64_t>(options_.block_size, slice_size - start));
}

void ChunkStore::SetWriteback(Writeback* wb, bool stage_new) {
  writeback_ = wb;
  stage_new_ = wb != nullptr && stage_new;
}

Status ChunkStore::SyncStage() { return writeback_ ? writeback_->Sync() : Status::Ok(); }

Status ChunkStore::PutBlock(uint64_t id, uint32_t index, std::string_view data,
                            std::shared_ptr<const std::string> keep) {
  // Writeback: durable in the local stage is enough for the commit; the
  // upload follows in the background. A full stage (or a failed stage
  // write) falls through to the synchronous upload.
  if (stage_new_ && writeback_->Stage(id, index, data)) {
    if (keep && keep->size() == data.size())
      InsertPlain(BlockKey(id, index, static_cast<uint32_t>(data.size())), std::move(keep));
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(UploadBlock(id, index, data));
  if (keep && keep->size() == data.size())
    InsertPlain(BlockKey(id, index, static_cast<uint32_t>(data.size())), std::move(keep));
  return Status::Ok();
}

Status ChunkStore::UploadBlock(uint64_t id, uint32_t index, std::string_view data) {
  std::string key = BlockKey(id, index, static_cast<uint32_t>(data.size()));
  objstore::WriteOptions wo;
  wo.checksum = ChecksumAlgorithm::kNone;  // blocks are verified by length / codec
  struct PutMetrics {
    metrics::Histogram* latency;
    metrics::Counter* bytes;
    metrics::Counter* failures;
    PutMetrics() {
      auto& r = metrics::Registry::Global();
      latency = &r.GetHistogram("strata_fs_object_put_seconds", "Block objects uploaded to the object store");
      bytes = &r.GetCounter("strata_fs_object_put_bytes_total", "Bytes of block objects uploaded (after compression)");
      failures = &r.GetCounter("strata_fs_object_put_failures_total", "Block uploads that failed");
    }
  };
  static PutMetrics m;
  const auto t0 = std::chrono::steady_clock::now();
  Status st;
  size_t sent = data.size();
  if (options_.compression == Compression::kNone && !options_.encrypted) {
    st = store_->PutBytes(key, data, wo).status();
  } else {
    // Compress, then seal: ciphertext does not compress.
    std::string z;
    if (options_.compression != Compression::kNone) {
      STRATA_ASSIGN_OR_RETURN(z, CompressBlock(options_.compression, data));
    } else {
      z.assign(data);
    }
    if (options_.encrypted) {
      STRATA_RETURN_IF_ERROR(NeedKey(key));
      STRATA_ASSIGN_OR_RETURN(z, SealBlock(options_.encrypt_key, key, z));
    }
    sent = z.size();
    st = store_->PutBytes(key, z, wo).status();
  }
  m.latency->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (st.ok()) {
    m.bytes->Inc(sent);
  } else {
    m.failures->Inc();
  }
  return st;
}

std::shared_ptr<const std::string> ChunkStore::LookupPlain(const std::string& key) {
  std::lock_guard<std::mutex> lk(plain_mu_);
  auto it = plain_index_.find(key);
  if (it == plain_index_.end()) return nullptr;
  plain_lru_.splice(plain_lru_.begin(), plain_lru_, it->second);
  return it->second->second;
}

void ChunkStore::InsertPlain(const std::string& key, std::shared_ptr<const std::string> block) {
  if (options_.block_ram_bytes == 0) return;
  std::lock_guard<std::mutex> lk(plain_mu_);
  if (plain_index_.count(key) != 0) return;
  plain_bytes_ += block->size();
  plain_lru_.emplace_front(key, std::move(block));
  plain_index_[key] = plain_lru_.begin();
  while (plain_bytes_ > options_.block_ram_bytes && plain_lru_.size() > 1) {
    plain_bytes_ -= plain_lru_.back().second->size();
    plain_index_.erase(plain_lru_.back().first);
    plain_lru_.pop_back();
  }
}

namespace {
// What the cache needs to read an uncompressed block object without a HEAD:
// its key and length (both fixed when the slice was written; the key is
// never rewritten), and an empty etag, which tells the cache so.
objstore::ObjectInfo ImmutableBlock(const std::string& key, uint32_t len) {
  objstore::ObjectInfo info;
  info.key = key;
  info.size = len;
  return info;
}
}  // namespace

Status ChunkStore::ReadBlock(uint64_t id, uint32_t index, uint32_t block_len, uint32_t off,
                             uint32_t len, char* buf) {
  std::string key = BlockKey(id, index, block_len);
  if (auto plain = LookupPlain(key)) {
    std::memcpy(buf, plain->data() + off, len);
    return Status::Ok();
  }
  if (writeback_) {
    // Staged blocks hold the plain bytes, whatever the volume's compression.
    bool found = false;
    STRATA_RETURN_IF_ERROR(writeback_->Read(id, index, block_len, off, len, buf, &found));
    if (found) return Status::Ok();
  }
  if (!whole_block_reads()) {
    size_t got = 0;
    auto sink = [&](const char* d, size_t n) {
      if (got + n > len) return Status::Corruption(fmt::format("block {} returned too many bytes", key));
      std::memcpy(buf + got, d, n);
      got += n;
      return Status::Ok();
    };
    Status st;
    if (cache_) {
      // Block objects are immutable and their length is in the key: no HEAD.
      st = cache_->OpenReader(ImmutableBlock(key, block_len))->Read(off, len, sink);
    } else {
      objstore::ReadOptions ro;
      ro.offset = off;
      ro.length = len;
      st = store_->Get(key, ro, sink);
    }
    if (!st.ok()) return st.WithContext(fmt::format("reading block {}", key));
    if (got != len)
      return Status::Corruption(fmt::format("block {} is short: {} of {} bytes at {}", key, got, len, off));
    return Status::Ok();
  }
  Status st;
  std::shared_ptr<const std::string> plain = Decompressed(key, block_len, &st);
  if (!plain) return st;
  std::memcpy(buf, plain->data() + off, len);
  return Status::Ok();
}

Status ChunkStore::NeedKey(const std::string& key) const {
  if (options_.encrypt_key.size() == crypto::kAes256KeyBytes) return Status::Ok();
  return Status::PermissionDenied(
      fmt::format("block {}: the volume is encrypted and this process has no key (--encrypt-key-file)", key));
}

std::shared_ptr<const std::string> ChunkStore::Decompressed(const std::string& key, uint32_t block_len,
                                                            Status* st) {
  std::string z;
  // The stored (compressed) length is not in the key: one HEAD per block.
  *st = reader()->Get(key, {}, [&](const char* d, size_t n) {
    z.append(d, n);
    return Status::Ok();
  });
  if (!st->ok()) {
    *st = st->WithContext(fmt::format("reading block {}", key));
    return nullptr;
  }
  if (options_.encrypted) {
    *st = NeedKey(key);
    if (!st->ok()) return nullptr;
    auto opened = OpenBlock(options_.encrypt_key, key, z);
    if (!opened) {
      // Never hand out unverified bytes: the read fails (EIO) and says why.
      kLog.Error("block {} does not decrypt: {}", key, opened.error().ToString());
      *st = opened.error().WithContext(fmt::format("block {}", key));
      return nullptr;
    }
    z = std::move(*opened);
  }
  auto plain = std::make_shared<std::string>(block_len, '\0');
  if (options_.compression == Compression::kNone) {
    if (z.size() != block_len) {
      *st = Status::Corruption(fmt::format("block {} holds {} bytes, not {}", key, z.size(), block_len));
      return nullptr;
    }
    std::memcpy(plain->data(), z.data(), block_len);
  } else {
    *st = DecompressBlock(options_.compression, z, plain->data(), block_len);
    if (!st->ok()) {
      *st = st->WithContext(fmt::format("block {}", key));
      return nullptr;
    }
  }
  InsertPlain(key, plain);
  return plain;
}

Status ChunkStore::ReadSlice(uint64_t id, uint32_t slice_size, uint32_t off, uint32_t len,
                             char* buf) {
  if (static_cast<uint64_t>(off) + len > slice_size)
    return Status::Corruption(fmt::format("read [{}, +{}) beyond slice {} of {} bytes", off, len, id, slice_size));
  const uint32_t bs = options_.block_size;
  while (len > 0) {
    uint32_t index = off / bs;
    uint32_t in = off % bs;
    uint32_t blen = BlockLen(slice_size, index);
    uint32_t n = std::min(len, blen - in);
    STRATA_RETURN_IF_ERROR(ReadBlock(id, index, blen, in, n, buf));
    buf += n;
    off += n;
    len -= n;
  }
  return Status::Ok();
}

void ChunkStore::Prefetch(uint64_t id, uint32_t slice_size, uint32_t off, uint32_t len) {
  if (!cache_ || len == 0) return;
  const uint32_t bs = options_.block_size;
  uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(off) + len, slice_size);
  for (uint64_t p = (off / bs) * static_cast<uint64_t>(bs); p < end; p += bs) {
    uint32_t index = static_cast<uint32_t>(p / bs);
    uint32_t blen = BlockLen(slice_size, index);
    if (writeback_ && writeback_->Contains(id, index)) continue;  // read from the stage
    std::string key = BlockKey(id, index, blen);
    {
      std::lock_guard<std::mutex> lk(prefetch_mu_);
      if (!prefetching_.insert(key).second) continue;
    }
    prefetch_pool_->Submit([this, key = std::move(key), blen] {
      Status st;
      if (!whole_block_reads()) {
        auto r = cache_->Prefetch(ImmutableBlock(key, blen));
        if (!r.ok()) st = r.error();
      } else {
        objstore::ObjectInfo info;
        st = cache_->Get(key, {}, [](const char*, size_t) { return Status::Ok(); }, &info);
      }
      if (!st.ok()) kLog.Debug("prefetch of {} failed: {}", key, st.ToString());
      std::lock_guard<std::mutex> lk(prefetch_mu_);
      prefetching_.erase(key);
    });
  }
}

Status ChunkStore::DeleteSlice(uint64_t id, uint32_t slice_size) {
  if (writeback_) writeback_->Forget(id);
  std::vector<std::string> keys;
  uint32_t nblocks = slice_size == 0 ? 0 : (slice_size - 1) / options_.block_size + 1;
  for (uint32_t i = 0; i < nblocks; i++) keys.push_back(BlockKey(id, i, BlockLen(slice_size, i)));
  if (keys.empty()) return Status::Ok();
  objstore::ObjectStore* w = cache_ ? static_cast<objstore::ObjectStore*>(cache_) : store_;
  STRATA_ASSIGN_OR_RETURN(auto sts, w->DeleteMany(keys));
  for (auto& st : sts) {
    if (!st.ok() && !st.IsNotFound()) return st;
  }
  return Status::Ok();
}

}  // namespace strata::fs
