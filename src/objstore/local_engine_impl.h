// Private to LocalEngine: the implementation class and what its files share
// (local_engine.cc: shared helpers, buckets and test hooks; _open.cc: Open,
// recovery and garbage collection; _write.cc: puts, appends, copies, renames,
// deletes; _read.cc: HEAD, readers and listings; _multipart.cc: uploads).
// See local_engine.h for the contract and record.h / data_file.h for the formats.
//
// Write protocol (PutObject, UploadPart, AppendObject, CopyObject):
//   1. G <id> is put (a synced WAL write with EngineOptions::sync) before tmp/<id> is created;
//   2. the body streams through a 1 MiB per-thread buffer into tmp/<id> (MD5, the
//      requested checksum and per-block CRC32C computed on the way), the footer is
//      written, the file fsynced, renamed to data/xx/yy/<id>, the directory fsynced;
//   3. before_commit runs;
//   4. under the key's stripe lock: conditions are checked, and one WriteBatch puts
//      the record, deletes G <id> and puts G for the files of the replaced record;
//   5. the replaced files are unlinked and their G records deleted.
// A crash leaves at most tmp files (wiped at Open) and files named by G records
// (deleted at Open). Bodies up to the inline threshold skip steps 1-2 and 5: up
// to kEmbedMax bytes they live in the object record, above that in a body record
// of the "inline" column family put by the same WriteBatch (so listings and
// commit-time reads never drag 64 KiB bodies along: measured 16 ms vs 0.4 ms per
// 1000-key page).
//
// Sealed bodies (PutOptions::data_key) take the same steps with ciphertext:
// step 2 seals each block (SealingWriter) after hashing the plaintext, small
// bodies are sealed before they enter the WriteBatch, and readers open only the
// blocks a range touches (LocalObjectReader::ReadSealed).
//
// Step 1 syncs (with EngineOptions::sync): a power cut between 2 and 4 used to lose
// an unsynced G record and leak the data file (EnginePowerLossTest). One WAL fsync more.
//
// Locks: stripe mutexes (by hash of the record key) serialise read-check-commit
// per key; buckets_mu_ is held shared across every commit into a bucket and
// exclusively by Create/DeleteBucket, so a bucket cannot vanish under a commit.
// Lock order: stripes (std::lock for two), then buckets_mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <strata/core/checksum.h>
#include <strata/core/log.h>
#include <strata/core/result.h>
#include <strata/core/status.h>
#include <strata/objstore/local_engine.h>

#include "objstore/data_file.h"
#include "objstore/record.h"

namespace strata::objstore::engine_detail {

inline constexpr size_t kIoChunk = 1 << 20;         // streaming buffer
inline constexpr uint64_t kStreamWindow = 4 << 20;  // verified bytes handed to a sink at once
inline constexpr size_t kStripes = 1024;  // few unrelated keys share a lock held across a WAL sync
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr int kMaxPartNumber = 10000;
inline constexpr int kOpenRetries = 8;
inline constexpr uint64_t kEmbedMax = 512;  // bodies kept in the object record itself

inline constexpr log::Logger kLog("objstore");

inline std::string Q(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  out.append(s);
  out.push_back('"');
  return out;
}

inline Status NoBucket(std::string_view b) {
  return Status::NotFound("bucket " + Q(b) + " does not exist");
}
inline Status NoObject(std::string_view b, std::string_view k) {
  return Status::NotFound("object " + Q(k) + " does not exist in bucket " + Q(b));
}
inline Status NoUpload(std::string_view id) {
  return Status::NotFound("upload " + Q(id) + " does not exist");
}

Status FromRocks(const rocksdb::Status& s, std::string_view what);
Status ValidateBucketName(std::string_view name);
Status ValidateKey(std::string_view key);
Status ValidateUploadId(std::string_view id);
// A client's ETag as stored: quotes stripped, lower case.
std::string NormalizeEtag(std::string_view e);

// Per-key-hash lock stripe, plus what conditional writes need to notice that
// their key was written while they were uploading.
struct alignas(64) Stripe {
  std::mutex mu;
  // All guarded by mu.
  std::multiset<uint64_t> starts;                     // seq when each tracked write started
  uint64_t seq = 0;                                   // commits noted so far
  std::unordered_map<uint64_t, uint64_t> last_write;  // key hash -> seq of its last commit
  size_t prune_at = 64;

  // After a commit to the key with this hash (mu held).
  void NoteCommitLocked(uint64_t hash) {
    if (starts.empty()) return;
    last_write[hash] = ++seq;
    if (last_write.size() < prune_at) return;
    // Entries not newer than the oldest tracked write's start matter to nobody;
    // pruning keeps the map bounded while tracked writes keep overlapping.
    const uint64_t oldest = *starts.begin();
    std::erase_if(last_write, [oldest](const auto& kv) { return kv.second <= oldest; });
    prune_at = std::max<size_t>(64, 2 * last_write.size());
  }
};

struct KeyRef {
  Stripe* stripe;
  uint64_t hash;
};

// Locks one or two stripes without deadlock.
class StripeLocks {
 public:
  StripeLocks(Stripe* a, Stripe* b) {
    if (a == b) {
      a_ = std::unique_lock(a->mu);
    } else {
      std::lock(a->mu, b->mu);
      a_ = std::unique_lock(a->mu, std::adopt_lock);
      b_ = std::unique_lock(b->mu, std::adopt_lock);
    }
  }

 private:
  std::unique_lock<std::mutex> a_, b_;
};

// Registers a write whose outcome depends on the state of its key at start
// (conditional writes, appends). Start and ChangedLocked/ReleaseLocked are called
// with the stripe's mutex held; the destructor takes it when not released.
class WriteTracker {
 public:
  WriteTracker() = default;
  WriteTracker(const WriteTracker&) = delete;
  WriteTracker& operator=(const WriteTracker&) = delete;
  ~WriteTracker() {
    if (!ref_.stripe) return;
    std::lock_guard lk(ref_.stripe->mu);
    ReleaseLocked();
  }
  void StartLocked(KeyRef ref) {
    ref_ = ref;
    start_seq_ = ref.stripe->seq;
    ref.stripe->starts.insert(start_seq_);
  }
  bool ChangedLocked() const {
    auto it = ref_.stripe->last_write.find(ref_.hash);
    return it != ref_.stripe->last_write.end() && it->second > start_seq_;
  }
  void ReleaseLocked() {
    if (!ref_.stripe) return;
    Stripe* s = ref_.stripe;
    s->starts.erase(s->starts.find(start_seq_));
    if (s->starts.empty()) {
      s->last_write.clear();
      s->prune_at = 64;
    }
    ref_.stripe = nullptr;
  }

 private:
  KeyRef ref_{nullptr, 0};
  uint64_t start_seq_ = 0;
};

// The record currently stored under a key.
struct Current {
  bool exists = false;
  rocksdb::PinnableSlice value;
  ObjectMeta meta;  // summary fields only (size, etag, mtime, owner, checksum type)
};

// The If-None-Match: * / If-Match conditions of a write against the key's current record.
Status CheckConditions(bool if_none_match_star, const std::optional<std::string>& if_match,
                       const Current& cur, std::string_view bucket, std::string_view key);

class LocalEngineImpl;

// ---- reader -----------------------------------------------------------------

class LocalObjectReader final : public ObjectReader {
 public:
  struct Span {
    uint64_t offset = 0;  // in the object
    uint64_t length = 0;
    std::string_view data;  // inline bytes (into value_)
    VerifiedFile* file = nullptr;
    FileId id;
    // A sealed data file: `file` holds blocks of plain_block + 16 bytes.
    bool sealed = false;
    uint64_t nonce = 0;
    uint32_t plain_block = 0;
  };

  const ObjectMeta& meta() const override { return meta_; }

  Status Stream(uint64_t offset, uint64_t length, ChunkSink& sink) override {
    STRATA_RETURN_IF_ERROR(Clamp(offset, &length));
    size_t i = FindSpan(offset);
    while (length > 0) {
      const Span& s = spans_[i++];
      uint64_t in = offset - s.offset;
      uint64_t n = std::min(length, s.length - in);
      if (!s.file) {
        STRATA_RETURN_IF_ERROR(sink.WriteMemory(s.data.data() + in, n));
      } else if (s.sealed) {
        STRATA_RETURN_IF_ERROR(ReadSealed(
            s, in, n, [&](const char* p, size_t m) { return sink.WriteMemory(p, m); }));
      } else {
        // Hand out window by window so the bytes just verified are still in cache
        // when the sink copies them; every byte handed out has been verified.
        uint64_t bs = s.file->block_size();
        uint64_t window = std::max<uint64_t>(kStreamWindow / bs, 1) * bs;
        uint64_t pos = in, end = in + n;
        while (pos < end) {
          uint64_t wend = std::min(end, (pos / window + 1) * window);
          Status st = s.file->Verify(pos, wend - pos);
          if (!st.ok()) return Annotate(s, st);
          STRATA_RETURN_IF_ERROR(sink.WriteFile(s.file->fd(), pos, wend - pos));
          pos = wend;
        }
      }
      offset += n;
      length -= n;
    }
    return Status::Ok();
  }

  Result<std::string> ReadRange(uint64_t offset, uint64_t length) override {
    STRATA_RETURN_IF_ERROR(Clamp(offset, &length));
    std::string out(length, '\0');
    STRATA_RETURN_IF_ERROR(ReadInto(offset, out.data(), length));
    return out;
  }

  // Copies verified bytes [offset, offset+n) (within the object) into dst.
  Status ReadInto(uint64_t offset, char* dst, uint64_t n) {
    if (n == 0) return Status::Ok();
    size_t i = FindSpan(offset);
    while (n > 0) {
      const Span& s = spans_[i++];
      uint64_t in = offset - s.offset;
      uint64_t m = std::min(n, s.length - in);
      if (!s.file) {
        std::memcpy(dst, s.data.data() + in, m);
      } else if (s.sealed) {
        char* out = dst;
        STRATA_RETURN_IF_ERROR(ReadSealed(s, in, m, [&](const char* p, size_t k) {
          std::memcpy(out, p, k);
          out += k;
          return Status::Ok();
        }));
      } else {
        Status st = s.file->Verify(in, m);
        if (st.ok()) st = s.file->Read(in, dst, m);
        if (!st.ok()) return Annotate(s, st);
      }
      dst += m;
      offset += m;
      n -= m;
    }
    return Status::Ok();
  }

  // Decrypts plaintext bytes [in, in+n) of a sealed file span, verifying and
  // opening only the blocks they touch, and hands them to emit in order.
  template <class Emit>
  Status ReadSealed(const Span& s, uint64_t in, uint64_t n, Emit&& emit) {
    const uint64_t pb = s.plain_block, sb = pb + kSealTagBytes;
    ScratchBuffer cipher(sb), plain(pb);
    for (uint64_t b = in / pb; n > 0; ++b) {
      const uint64_t pstart = b * pb;
      const uint64_t plen = std::min<uint64_t>(pb, s.length - pstart);
      const uint64_t off = b * sb;
      Status st = s.file->Verify(off, plen + kSealTagBytes);
      if (st.ok()) st = s.file->Read(off, cipher.data(), plen + kSealTagBytes);
      if (st.ok()) st = OpenBlock(data_key_, s.nonce, b, cipher.data(), plen + kSealTagBytes,
                                  plain.data());
      if (!st.ok()) return Annotate(s, st);
      const uint64_t from = in > pstart ? in - pstart : 0;
      const uint64_t take = std::min<uint64_t>(n, plen - from);
      STRATA_RETURN_IF_ERROR(emit(plain.data() + from, static_cast<size_t>(take)));
      in += take;
      n -= take;
    }
    return Status::Ok();
  }

  ObjectMeta meta_;
  std::string bucket_;
  std::string data_key_;                                         // sealed pieces' key
  std::vector<std::unique_ptr<std::string>> plain_;              // opened small sealed pieces
  rocksdb::PinnableSlice value_;                                 // pins embedded bytes
  std::vector<std::unique_ptr<rocksdb::PinnableSlice>> bodies_;  // pin body records
  std::vector<Span> spans_;                                      // non-empty pieces, by offset
  std::vector<std::shared_ptr<VerifiedFile>> files_;

 private:
  Status Clamp(uint64_t offset, uint64_t* length) const {
    if (offset > meta_.size) {
      return Status::InvalidArgument("range start " + std::to_string(offset) +
                                     " is beyond the end of object " + Q(meta_.key) + " (" +
                                     std::to_string(meta_.size) + " bytes)");
    }
    *length = std::min(*length, meta_.size - offset);
    return Status::Ok();
  }
  size_t FindSpan(uint64_t offset) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), offset,
                               [](uint64_t off, const Span& s) { return off < s.offset; });
    return it == spans_.begin() ? 0 : static_cast<size_t>(it - spans_.begin()) - 1;
  }
  Status Annotate(const Span& s, const Status& st) const {
    return Status(st.code(), "object " + Q(meta_.key) + " in bucket " + Q(bucket_) +
                                 ": data file " + s.id.Hex() + ": " + st.message());
  }
};

// ---- engine -----------------------------------------------------------------

class LocalEngineImpl final : public LocalEngine {
 public:
  explicit LocalEngineImpl(const EngineOptions& o);
  ~LocalEngineImpl() override;

  Status Init();

  // Buckets.
  Status CreateBucket(std::string_view name, std::string_view owner) override;
  Status DeleteBucket(std::string_view name) override;
  Result<BucketInfo> GetBucket(std::string_view name) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status SetBucketPublicRead(std::string_view name, bool public_read) override;
  Status SetBucketConfig(std::string_view bucket, std::string_view name,
                         std::optional<std::string> value) override;

  // Objects.
  Result<ObjectMeta> PutObject(std::string_view bucket, std::string_view key, ByteSource& body,
                               PutOptions options) override {
    return PutInternal(bucket, key, body, options);
  }
  Result<ObjectMeta> AppendObject(std::string_view bucket, std::string_view key,
                                  uint64_t write_offset, ByteSource& body,
                                  PutOptions options) override;
  Result<ObjectMeta> HeadObject(std::string_view bucket, std::string_view key) override;
  Result<std::unique_ptr<ObjectReader>> OpenObject(std::string_view bucket,
                                                   std::string_view key) override {
    STRATA_ASSIGN_OR_RETURN(auto r, OpenReader(bucket, key, nullptr));
    return std::unique_ptr<ObjectReader>(std::move(r));
  }
  Result<std::unique_ptr<ObjectReader>> OpenObject(std::string_view bucket, std::string_view key,
                                                   const DataKeyFn& data_key) override {
    STRATA_ASSIGN_OR_RETURN(auto r, OpenReader(bucket, key, &data_key));
    return std::unique_ptr<ObjectReader>(std::move(r));
  }
  Status DeleteObject(std::string_view bucket, std::string_view key) override;
  Status DeleteObjectIfUnchanged(std::string_view bucket, std::string_view key,
                                 std::string_view etag, int64_t mtime_ns) override;
  Result<ObjectMeta> CopyObject(std::string_view src_bucket, std::string_view src_key,
                                std::string_view dst_bucket, std::string_view dst_key,
                                std::optional<ObjectMeta> meta, PutOptions options) override;
  Result<ObjectMeta> RenameObject(std::string_view bucket, std::string_view src_key,
                                  std::string_view dst_key, PutOptions options) override;
  Status SetObjectTags(std::string_view bucket, std::string_view key,
                       std::map<std::string, std::string> tags) override;
  Status UpdateObjectMeta(std::string_view bucket, std::string_view key,
                          const std::function<Status(ObjectMeta&)>& update) override;
  Result<ListResult> ListObjects(std::string_view bucket, const ListOptions& options) override;

  // Versioning (local_engine_version.cc).
  Result<DeleteResult> DeleteCurrent(std::string_view bucket, std::string_view key) override;
  // DeleteCurrent, or, with `seen`, only while the current object still has
  // that etag and mtime (kPreconditionFailed otherwise; OK when it is gone).
  struct Unchanged {
    std::string_view etag;
    int64_t mtime_ns = 0;
  };
  Result<DeleteResult> DeleteCurrentIf(std::string_view bucket, std::string_view key,
                                       const Unchanged* seen);
  Result<DeleteResult> DeleteVersion(std::string_view bucket, std::string_view key,
                                     std::string_view version_id) override;
  Result<DeleteResult> DeleteVersionIf(
      std::string_view bucket, std::string_view key, std::string_view version_id,
      const std::function<Status(const ObjectMeta&)>& allow) override;
  Result<ObjectMeta> HeadVersion(std::string_view bucket, std::string_view key,
                                 std::string_view version_id) override;
  Result<std::unique_ptr<ObjectReader>> OpenVersion(std::string_view bucket, std::string_view key,
                                                    std::string_view version_id,
                                                    const DataKeyFn& data_key) override {
    STRATA_ASSIGN_OR_RETURN(auto r, OpenReader(bucket, key, &data_key, version_id));
    return std::unique_ptr<ObjectReader>(std::move(r));
  }
  Status UpdateVersionMeta(std::string_view bucket, std::string_view key,
                           std::string_view version_id,
                           const std::function<Status(ObjectMeta&)>& update) override;
  Result<VersionListResult> ListObjectVersions(std::string_view bucket,
                                               const VersionListOptions& options) override;

  // Multipart.
  Result<std::string> CreateMultipartUpload(std::string_view bucket, std::string_view key,
                                            PutOptions options) override;
  Result<PartInfo> UploadPart(std::string_view bucket, std::string_view key,
                              std::string_view upload_id, int part_number, ByteSource& body,
                              PutOptions options) override;
  Result<ObjectMeta> CompleteMultipartUpload(std::string_view bucket, std::string_view key,
                                             std::string_view upload_id,
                                             const std::vector<CompletePart>& parts,
                                             const CompleteOptions& options) override;
  Status AbortMultipartUpload(std::string_view bucket, std::string_view key,
                              std::string_view upload_id) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view bucket, std::string_view key,
                                          std::string_view upload_id) override;
  Result<PutOptions> GetUpload(std::string_view bucket, std::string_view key,
                               std::string_view upload_id) override;
  Result<std::vector<MultipartUpload>> ListMultipartUploads(std::string_view bucket,
                                                            std::string_view prefix) override;

  Stats GetStats() override {
    Stats s;
    s.objects_put = objects_put_.load(std::memory_order_relaxed);
    s.orphans_removed_at_open = orphans_removed_at_open_;
    return s;
  }

  // internal hooks
  uint64_t list_steps() const { return list_steps_.load(std::memory_order_relaxed); }
  std::string DataPath(const FileId& id) const {
    std::string hex = id.Hex();
    std::string p;
    p.reserve(data_root_.size() + 40);
    p.append(data_root_).append("/").append(hex, 0, 2).append("/").append(hex, 2, 2);
    p.append("/").append(hex);
    return p;
  }
  std::string FirstDataFile(std::string_view bucket, std::string_view key) {
    rocksdb::PinnableSlice v;
    if (!db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), ObjectKey(bucket, key), &v)
             .ok()) {
      return "";
    }
    std::vector<Piece> pieces;
    if (!DecodeObjectPieces(v.ToStringView(), &pieces).ok()) return "";
    for (const Piece& p : pieces) {
      if (p.kind == Piece::kFile) return DataPath(p.file);
    }
    return "";
  }
  uint64_t CountBodies() {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), inline_cf_));
    uint64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    return n;
  }
  Status PutGarbageRecord(const FileId& id) {
    return FromRocks(db_->Put(commit_wo_, GarbageKey(id), ""), "put");
  }

 private:
  // A body that went through Ingest: inline bytes, or a committed-to-disk data
  // file that is deleted again unless Keep() is called after the commit.
  struct Ingested {
    explicit Ingested(LocalEngineImpl* e) : engine(e) {}
    Ingested(const Ingested&) = delete;
    Ingested& operator=(const Ingested&) = delete;
    ~Ingested() {
      if (file_pending) engine->DiscardFile(file);
    }
    void Keep() { file_pending = false; }
    Piece AsPiece() const {
      Piece p;
      p.length = digest.size;
      if (is_file) {
        p.kind = Piece::kFile;
        p.file = file;
        p.block_size = block_size;
      } else if (is_blob) {
        p.kind = Piece::kBlob;
        p.file = blob_id;
      } else {
        p.kind = Piece::kInline;
        p.data = inline_data;
      }
      p.sealed = sealed;
      p.nonce = nonce;
      return p;
    }

    LocalEngineImpl* engine;
    WriteDigest digest;
    std::optional<ScratchBuffer> buf;
    std::string_view inline_data;  // into buf
    bool is_blob = false;          // inline_data goes to the "inline" column family
    FileId blob_id;
    bool is_file = false;
    bool file_pending = false;
    FileId file;
    uint32_t block_size = 0;
    bool sealed = false;
    uint64_t nonce = 0;
    std::string sealed_inline;     // a sealed small body (inline_data points here)
  };

  // Body record keys increase (open time, then a counter; big-endian), so new
  // bodies append to the end of the memtable and of the key space: SST files do
  // not overlap and compaction can move them instead of rewriting them.
  FileId NextBodyId() {
    FileId id;
    uint64_t seq = body_seq_.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < 8; ++i) {
      id.bytes[i] = static_cast<uint8_t>(body_epoch_ >> (56 - 8 * i));
      id.bytes[8 + i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
    }
    return id;
  }

  KeyRef Ref(std::string_view record_key) {
    uint64_t h = std::hash<std::string_view>{}(record_key);
    return {&stripes_[h % kStripes], h};
  }
  // Called with the stripe's mutex held after a commit that changed the key.
  static void NoteCommitLocked(KeyRef ref) { ref.stripe->NoteCommitLocked(ref.hash); }

  Status UpdateBucket(std::string_view name, const std::function<void(BucketInfo&)>& edit);
  Status CheckBucket(std::string_view bucket) {
    STRATA_RETURN_IF_ERROR(ValidateBucketName(bucket));
    std::shared_lock lk(buckets_mu_);
    if (buckets_.find(bucket) == buckets_.end()) return NoBucket(bucket);
    return Status::Ok();
  }
  // With buckets_mu_ held.
  Status BucketExistsLocked(std::string_view bucket) {
    if (buckets_.find(bucket) == buckets_.end()) return NoBucket(bucket);
    return Status::Ok();
  }

  Status Get(const std::string& key, rocksdb::PinnableSlice* v, bool* found) {
    v->Reset();
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), key, v);
    if (s.IsNotFound()) {
      *found = false;
      return Status::Ok();
    }
    *found = s.ok();
    return FromRocks(s, "get");
  }
  Status ReadCurrent(const std::string& dbkey, Current* cur) {
    STRATA_RETURN_IF_ERROR(Get(dbkey, &cur->value, &cur->exists));
    if (cur->exists) return DecodeObjectSummary(cur->value.ToStringView(), &cur->meta);
    return Status::Ok();
  }
  Status GetBody(const FileId& id, rocksdb::PinnableSlice* v, bool* found) {
    v->Reset();
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), inline_cf_, id.Raw(), v);
    if (s.IsNotFound()) {
      *found = false;
      return Status::Ok();
    }
    *found = s.ok();
    return FromRocks(s, "get body");
  }
  Status Write(rocksdb::WriteBatch& b) { return FromRocks(db_->Write(commit_wo_, &b), "write"); }
  // Commits `b`, which references `in`'s data file and deletes its intent
  // record. The file is kept even when the write fails: a failed fsync of
  // RocksDB's log leaves the batch written there, and a reopen may replay it
  // (RocksDB stops taking writes until then). The intent record, synced
  // before the file was written, decides at the next open: collected if the
  // batch was lost, kept (with the object) if it was replayed.
  Status CommitIngested(rocksdb::WriteBatch& b, Ingested& in) {
    Status st = Write(b);
    in.Keep();
    return st;
  }
  // Adds the body record of an ingested small body to `b`.
  void AddBody(rocksdb::WriteBatch* b, const Ingested& in) {
    if (in.is_blob) b->Put(inline_cf_, in.blob_id.Raw(), in.inline_data);
  }
  // Drops a piece that is no longer referenced: a body record goes in the same
  // batch; a data file is marked garbage and unlinked after the commit.
  void DropPiece(const Piece& p, rocksdb::WriteBatch* b, std::vector<FileId>* garbage) {
    if (p.kind == Piece::kBlob) {
      b->Delete(inline_cf_, p.file.Raw());
    } else if (p.kind == Piece::kFile) {
      b->Put(GarbageKey(p.file), "");
      garbage->push_back(p.file);
    }
  }
  // Drops every piece of `value` (an object record) in `b`.
  Status AddGarbage(std::string_view value, rocksdb::WriteBatch* b, std::vector<FileId>* garbage) {
    std::vector<Piece> pieces;
    STRATA_RETURN_IF_ERROR(DecodeObjectPieces(value, &pieces));
    for (const Piece& p : pieces) DropPiece(p, b, garbage);
    return Status::Ok();
  }
  // Deletes every part record of `upload_id` in `b`, dropping their pieces.
  Status DropUploadParts(const std::string& upload_id, rocksdb::WriteBatch* b,
                         std::vector<FileId>* garbage) {
    const std::string pp = PartKeyPrefix(upload_id);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(pp); it->Valid() && it->key().starts_with(pp); it->Next()) {
      PartRecord pr;
      STRATA_RETURN_IF_ERROR(DecodePart(it->value().ToStringView(), &pr));
      DropPiece(pr.piece, b, garbage);
      b->Delete(it->key());
    }
    return FromRocks(it->status(), "list parts");
  }
  void CollectGarbage(const std::vector<FileId>& files);
  void DiscardFile(const FileId& id);
  Status EnsureDataDir(const FileId& id);

  // data_key: seal the body (see PutOptions::data_key); "" keeps it as is.
  Status Ingest(ByteSource& body, uint64_t inline_budget, ChecksumAlgorithm alg,
                std::optional<uint64_t> expected_size, Ingested* out,
                std::string_view data_key = {});
  Result<ObjectMeta> PutInternal(std::string_view bucket, std::string_view key, ByteSource& body,
                                 PutOptions& options);
  // version_id: "" = the current version, else as LocalEngine::OpenVersion.
  Result<std::unique_ptr<LocalObjectReader>> OpenReader(std::string_view bucket,
                                                        std::string_view key,
                                                        const DataKeyFn* data_key,
                                                        std::string_view version_id = {});

  // Versioning helpers (local_engine_version.cc); *Locked: buckets_mu_ held.
  enum class Versioning : uint8_t { kOff, kEnabled, kSuspended };
  static constexpr std::string_view kVersioningConfig = "versioning";
  Versioning VersioningLocked(std::string_view bucket);
  // kNotSupported naming `what` when the bucket has versioning set (operations
  // that would rewrite a key's history: append, rename).
  Status RefuseIfVersionedLocked(std::string_view bucket, std::string_view what) {
    if (VersioningLocked(bucket) == Versioning::kOff) return Status::Ok();
    return Status::NotSupported(std::string(what) + " is not supported in bucket " + Q(bucket) +
                                ", which has versioning set");
  }
  uint64_t NextVersionOrder();
  // Order of the key's null version in V, 0 when it has none there.
  Status GetNullOrder(std::string_view bucket, std::string_view key, uint64_t* order);
  // Stages `meta` + `pieces` (or a delete marker: meta.delete_marker) as the
  // key's new current version in `b`, replacing `cur` (its O row) as the
  // bucket's versioning state says; fills meta.version_id/version_order.
  // Stripe lock and buckets_mu_ held.
  Status StageCurrent(std::string_view bucket, std::string_view key, const std::string& dbkey,
                      const Current& cur, ObjectMeta& meta, const std::vector<Piece>& pieces,
                      rocksdb::WriteBatch* b, std::vector<FileId>* garbage);
  // The RocksDB key holding a version ("" = current, "null", or an id); sets
  // "" when the key has no null version; kInvalidArgument for a malformed id.
  Status ResolveVersion(std::string_view bucket, std::string_view key, std::string_view version_id,
                        std::string* dbkey);
  Status ReadUpload(std::string_view bucket, std::string_view key, std::string_view upload_id,
                    UploadRecord* r);

  // Completed uploads, so that a retried Complete (the same upload and parts,
  // sent again after a lost reply) gets the object's result as in S3 instead
  // of NoSuchUpload. In memory and bounded (kMaxCompletedUploads, each for
  // kCompletedUploadTtlNs; lost at restart): a record answers only while the
  // key still holds the object that upload created (same ETag and mtime), so
  // an overwrite or delete ends it.
  struct CompletedUpload {
    std::string bucket, key;
    std::string parts;  // "number:etag;" of the completed list
    std::string etag;
    int64_t mtime_ns = 0;
    int64_t completed_ns = 0;  // MonotonicNanos()
  };
  static constexpr size_t kMaxCompletedUploads = 4096;
  static constexpr int64_t kCompletedUploadTtlNs = 3600'000'000'000;
  static std::string PartsFingerprint(const std::vector<CompletePart>& parts);
  void RememberCompleted(std::string_view upload_id, CompletedUpload c);
  // The completed object for a retried Complete, or NoUpload.
  Result<ObjectMeta> CompletedResult(std::string_view bucket, std::string_view key,
                                     std::string_view upload_id,
                                     const std::vector<CompletePart>& parts);
  std::mutex completed_mu_;
  std::map<std::string, CompletedUpload, std::less<>> completed_;  // guarded by completed_mu_
  std::list<std::string> completed_order_;  // guarded by completed_mu_, oldest first

  EngineOptions options_;
  std::string root_, data_root_, tmp_root_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> cf_handles_;  // owned; destroyed before db_
  rocksdb::ColumnFamilyHandle* inline_cf_ = nullptr;      // small bodies
  uint64_t embed_max_ = 0;   // bodies up to this size stay in the object record itself
  uint64_t body_epoch_ = 0;  // NowUnixNanos() at open
  std::atomic<uint64_t> body_seq_{0};
  rocksdb::WriteOptions commit_wo_, lazy_wo_;

  std::shared_mutex buckets_mu_;
  std::map<std::string, BucketInfo, std::less<>> buckets_;  // guarded by buckets_mu_

  std::unique_ptr<Stripe[]> stripes_;
  std::unique_ptr<std::atomic<uint8_t>[]> dirs_ready_;  // data/xx/yy created this process

  // Open data files shared by readers. Data files are immutable and their ids
  // never reused, so a block verified once stays verified while the file is
  // cached: repeated GETs of a hot object cost little more than the sendfile
  // (a 64 MiB GET otherwise spends ~45% of its CPU re-checking CRCs). Entries
  // expire after kFileCacheTtlNs so rot on disk is still caught, and a file is
  // dropped before it is unlinked. Readers keep their shared_ptr, so an evicted
  // file stays readable for them.
  struct CachedFile {
    std::shared_ptr<VerifiedFile> file;
    int64_t opened_ns = 0;  // MonotonicNanos()
    std::list<std::string>::iterator lru;
  };
  static constexpr size_t kFileCacheCapacity = 256;
  static constexpr int64_t kFileCacheTtlNs = 60'000'000'000;
  std::mutex file_cache_mu_;
  std::unordered_map<std::string, CachedFile> file_cache_;  // guarded by file_cache_mu_
  std::list<std::string> file_lru_;                         // guarded by file_cache_mu_, MRU first

  // The cached open file, or opens it (nullptr + errno set when open fails).
  std::shared_ptr<VerifiedFile> OpenDataFile(const FileId& id, uint64_t length,
                                             uint32_t block_size);

  void ForgetDataFile(const FileId& id) {
    std::lock_guard<std::mutex> lock(file_cache_mu_);
    auto it = file_cache_.find(std::string(id.Raw()));
    if (it == file_cache_.end()) return;
    file_lru_.erase(it->second.lru);
    file_cache_.erase(it);
  }

  std::atomic<uint64_t> last_order_{0};  // last version order handed out
  std::atomic<uint64_t> objects_put_{0};
  std::atomic<uint64_t> list_steps_{0};
  uint64_t orphans_removed_at_open_ = 0;  // set in Init
};

}  // namespace strata::objstore::engine_detail
