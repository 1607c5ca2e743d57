// LocalEngine: RocksDB metadata + checksummed data files. See local_engine.h for the
// contract and record.h / data_file.h for the formats.
//
// Write protocol (PutObject, UploadPart, AppendObject, CopyObject):
//   1. G <id> is put (unsynced WAL write: survives kill -9) before tmp/<id> is created;
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
// Power loss (not kill -9) between 2 and 4 can lose the unsynced G record and
// leak that one data file; syncing G would cost one more fsync per large PUT.
//
// Locks: stripe mutexes (by hash of the record key) serialise read-check-commit
// per key; buckets_mu_ is held shared across every commit into a bucket and
// exclusively by Create/DeleteBucket, so a bucket cannot vanish under a commit.
// Lock order: stripes (std::lock for two), then buckets_mu_.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <strata/core/checksum.h>
#include <strata/core/log.h>
#include <strata/core/md5_mb.h>
#include <strata/core/strings.h>
#include <strata/objstore/local_engine.h>

#include "objstore/data_file.h"
#include "objstore/local_engine_internal.h"
#include "objstore/record.h"

namespace strata::objstore {
namespace {

constexpr size_t kIoChunk = 1 << 20;          // streaming buffer
constexpr uint64_t kStreamWindow = 4 << 20;   // verified bytes handed to a sink at once
constexpr size_t kStripes = 1024;  // few unrelated keys share a lock held across a WAL sync
constexpr size_t kMaxKeyBytes = 1024;
constexpr int kMaxPartNumber = 10000;
constexpr int kOpenRetries = 8;
constexpr uint64_t kEmbedMax = 512;           // bodies kept in the object record itself

const log::Logger kLog("objstore");

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Q(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  out.append(s);
  out.push_back('"');
  return out;
}

Status NoBucket(std::string_view b) { return Status::NotFound("bucket " + Q(b) + " does not exist"); }
Status NoObject(std::string_view b, std::string_view k) {
  return Status::NotFound("object " + Q(k) + " does not exist in bucket " + Q(b));
}
Status NoUpload(std::string_view id) {
  return Status::NotFound("upload " + Q(id) + " does not exist");
}

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string msg = "metadata store (RocksDB) " + std::string(what) + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsNoSpace()) return Status::ResourceExhausted(std::move(msg));
  if (s.IsBusy() || s.IsTryAgain() || s.IsTimedOut()) return Status::Unavailable(std::move(msg));
  return Status::IOError(std::move(msg));
}

Status ValidateBucketName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("bucket name " + Q(name) +
                                   " is invalid: it must be 1 to 255 bytes without NUL");
  }
  return Status::Ok();
}

Status ValidateKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("object key must be 1 to 1024 bytes long (got " +
                                   std::to_string(key.size()) + ")");
  }
  if (key.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("object key must not contain a NUL byte");
  }
  return Status::Ok();
}

Status ValidateUploadId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.find('\0') != std::string_view::npos) {
    return NoUpload(id);
  }
  return Status::Ok();
}

bool HexToRaw(std::string_view hex, std::string* out) {
  if (hex.size() % 2) return false;
  out->resize(hex.size() / 2);
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < out->size(); ++i) {
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<char>(hi << 4 | lo);
  }
  return true;
}

std::string NormalizeEtag(std::string_view e) {
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return ToLower(e);
}

bool IsCrc(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kCrc32 || a == ChecksumAlgorithm::kCrc32c ||
         a == ChecksumAlgorithm::kCrc64Nvme;
}

uint64_t BigEndian(std::string_view raw) {
  uint64_t v = 0;
  for (char c : raw) v = v << 8 | static_cast<uint8_t>(c);
  return v;
}
std::string ToBigEndian(uint64_t v, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[n - 1 - i] = static_cast<char>(v >> (8 * i));
  return s;
}

// crc(A||B) from base64 crc(A), raw crc(B) and len(B); "" if not combinable.
std::string CombineCrc(ChecksumAlgorithm a, std::string_view b64_a, std::string_view raw_b,
                       uint64_t len_b) {
  std::optional<std::string> raw_a = Base64Decode(b64_a);
  if (!raw_a || raw_a->size() != raw_b.size()) return "";
  uint64_t ca = BigEndian(*raw_a), cb = BigEndian(raw_b);
  switch (a) {
    case ChecksumAlgorithm::kCrc32:
      if (raw_b.size() != 4) return "";
      return Base64Encode(ToBigEndian(
          Crc32Combine(static_cast<uint32_t>(ca), static_cast<uint32_t>(cb), len_b), 4));
    case ChecksumAlgorithm::kCrc32c:
      if (raw_b.size() != 4) return "";
      return Base64Encode(ToBigEndian(
          Crc32cCombine(static_cast<uint32_t>(ca), static_cast<uint32_t>(cb), len_b), 4));
    case ChecksumAlgorithm::kCrc64Nvme:
      if (raw_b.size() != 8) return "";
      return Base64Encode(ToBigEndian(Crc64NvmeCombine(ca, cb, len_b), 8));
    default:
      return "";
  }
}

Status FsyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open directory " + path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, "fsync directory " + path);
  return Status::Ok();
}

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

Status CheckConditions(bool if_none_match_star, const std::optional<std::string>& if_match,
                       const Current& cur, std::string_view bucket, std::string_view key) {
  if (if_none_match_star && cur.exists) {
    return Status::PreconditionFailed("object " + Q(key) + " already exists in bucket " +
                                      Q(bucket) + " (If-None-Match: *)");
  }
  if (if_match) {
    if (!cur.exists) {
      return Status::PreconditionFailed("object " + Q(key) + " does not exist in bucket " +
                                        Q(bucket) + " (If-Match)");
    }
    if (*if_match != "*" && NormalizeEtag(*if_match) != cur.meta.etag) {
      return Status::PreconditionFailed("object " + Q(key) + " has ETag " + cur.meta.etag +
                                        ", not " + *if_match + " (If-Match)");
    }
  }
  return Status::Ok();
}

class LocalEngineImpl;

// ---- reader -----------------------------------------------------------------

class LocalObjectReader final : public ObjectReader {
 public:
  struct Span {
    uint64_t offset = 0;         // in the object
    uint64_t length = 0;
    std::string_view data;       // inline bytes (into value_)
    VerifiedFile* file = nullptr;
    FileId id;
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

  ObjectMeta meta_;
  std::string bucket_;
  rocksdb::PinnableSlice value_;  // pins embedded bytes
  std::vector<std::unique_ptr<rocksdb::PinnableSlice>> bodies_;  // pin body records
  std::vector<Span> spans_;       // non-empty pieces, by offset
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

// Feeds an object's verified bytes to the write path (CopyObject).
class ReaderSource final : public ByteSource {
 public:
  explicit ReaderSource(LocalObjectReader& r) : r_(r) {}
  Result<size_t> Read(char* buf, size_t n) override {
    uint64_t m = std::min<uint64_t>(n, r_.meta().size - pos_);
    if (m == 0) return size_t{0};
    STRATA_RETURN_IF_ERROR(r_.ReadInto(pos_, buf, m));
    pos_ += m;
    return static_cast<size_t>(m);
  }

 private:
  LocalObjectReader& r_;
  uint64_t pos_ = 0;
};

// ---- engine -----------------------------------------------------------------

class LocalEngineImpl final : public LocalEngine {
 public:
  explicit LocalEngineImpl(const EngineOptions& o) : options_(o) {
    root_ = o.data_dir;
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    data_root_ = root_ + "/data";
    tmp_root_ = root_ + "/tmp";
    stripes_.reset(new Stripe[kStripes]);
    dirs_ready_.reset(new std::atomic<uint8_t>[65536]);
    for (size_t i = 0; i < 65536; ++i) dirs_ready_[i].store(0, std::memory_order_relaxed);
    // Tiny bodies cost little in a listing and save GETs a second lookup.
    embed_max_ = std::min<uint64_t>(o.inline_threshold, kEmbedMax);
    body_epoch_ = static_cast<uint64_t>(NowNs());
    commit_wo_.sync = o.sync;
    lazy_wo_.sync = false;
  }

  ~LocalEngineImpl() override {
    if (db_) {
      for (rocksdb::ColumnFamilyHandle* h : cf_handles_) {
        rocksdb::Status s = db_->DestroyColumnFamilyHandle(h);
        if (!s.ok()) kLog.Warn("closing a column family: {}", s.ToString());
      }
      rocksdb::Status s = db_->Close();
      if (!s.ok()) kLog.Warn("closing the metadata store: {}", s.ToString());
    }
  }

  Status Init();

  // Buckets.
  Status CreateBucket(std::string_view name, std::string_view owner) override;
  Status DeleteBucket(std::string_view name) override;
  Result<BucketInfo> GetBucket(std::string_view name) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Status SetBucketPublicRead(std::string_view name, bool public_read) override;

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
    STRATA_ASSIGN_OR_RETURN(auto r, OpenReader(bucket, key));
    return std::unique_ptr<ObjectReader>(std::move(r));
  }
  Status DeleteObject(std::string_view bucket, std::string_view key) override;
  Result<ObjectMeta> CopyObject(std::string_view src_bucket, std::string_view src_key,
                                std::string_view dst_bucket, std::string_view dst_key,
                                std::optional<ObjectMeta> meta, PutOptions options) override;
  Result<ObjectMeta> RenameObject(std::string_view bucket, std::string_view src_key,
                                  std::string_view dst_key, PutOptions options) override;
  Status SetObjectTags(std::string_view bucket, std::string_view key,
                       std::map<std::string, std::string> tags) override;
  Result<ListResult> ListObjects(std::string_view bucket, const ListOptions& options) override;

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
  static void NoteCommitLocked(KeyRef ref) {
    ref.stripe->NoteCommitLocked(ref.hash);
  }

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
  void CollectGarbage(const std::vector<FileId>& files);
  void DiscardFile(const FileId& id);
  Status EnsureDataDir(const FileId& id);

  Status Ingest(ByteSource& body, uint64_t inline_budget, ChecksumAlgorithm alg,
                std::optional<uint64_t> expected_size, Ingested* out);
  Result<ObjectMeta> PutInternal(std::string_view bucket, std::string_view key, ByteSource& body,
                                 PutOptions& options);
  Result<std::unique_ptr<LocalObjectReader>> OpenReader(std::string_view bucket,
                                                        std::string_view key);
  Status ReadUpload(std::string_view bucket, std::string_view key, std::string_view upload_id,
                    UploadRecord* r);

  EngineOptions options_;
  std::string root_, data_root_, tmp_root_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> cf_handles_;  // owned; destroyed before db_
  rocksdb::ColumnFamilyHandle* inline_cf_ = nullptr;     // small bodies
  uint64_t embed_max_ = 0;  // bodies up to this size stay in the object record itself
  uint64_t body_epoch_ = 0;               // NowNs() at open
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
    int64_t opened_ns = 0;
    std::list<std::string>::iterator lru;
  };
  static constexpr size_t kFileCacheCapacity = 256;
  static constexpr int64_t kFileCacheTtlNs = 60'000'000'000;
  std::mutex file_cache_mu_;
  std::unordered_map<std::string, CachedFile> file_cache_;  // guarded by file_cache_mu_
  std::list<std::string> file_lru_;                         // guarded by file_cache_mu_, MRU first

  // The cached open file, or opens it (nullptr + errno set when open fails).
  std::shared_ptr<VerifiedFile> OpenDataFile(const FileId& id, uint64_t length,
                                             uint32_t block_size) {
    std::string k(id.Raw());
    int64_t now = NowNs();
    {
      std::lock_guard<std::mutex> lock(file_cache_mu_);
      auto it = file_cache_.find(k);
      if (it != file_cache_.end()) {
        if (now - it->second.opened_ns < kFileCacheTtlNs &&
            it->second.file->length() == length && it->second.file->block_size() == block_size) {
          file_lru_.splice(file_lru_.begin(), file_lru_, it->second.lru);
          return it->second.file;
        }
        file_lru_.erase(it->second.lru);
        file_cache_.erase(it);
      }
    }
    std::string path = DataPath(id);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    auto f = std::make_shared<VerifiedFile>(fd, length, block_size);
    std::lock_guard<std::mutex> lock(file_cache_mu_);
    if (file_cache_.count(k) == 0) {
      file_lru_.push_front(k);
      file_cache_[k] = CachedFile{f, now, file_lru_.begin()};
      while (file_cache_.size() > kFileCacheCapacity) {
        file_cache_.erase(file_lru_.back());
        file_lru_.pop_back();
      }
    }
    return f;
  }

  void ForgetDataFile(const FileId& id) {
    std::lock_guard<std::mutex> lock(file_cache_mu_);
    auto it = file_cache_.find(std::string(id.Raw()));
    if (it == file_cache_.end()) return;
    file_lru_.erase(it->second.lru);
    file_cache_.erase(it);
  }

  std::atomic<uint64_t> objects_put_{0};
  std::atomic<uint64_t> list_steps_{0};
  uint64_t orphans_removed_at_open_ = 0;  // set in Init
};

// ---- open & recovery ----------------------------------------------------------

Status LocalEngineImpl::Init() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& d : {root_, data_root_, tmp_root_}) {
    fs::create_directories(d, ec);
    if (ec) return Status::IOError("cannot create directory " + d + ": " + ec.message());
  }

  rocksdb::Options o;
  o.create_if_missing = true;
  o.max_background_jobs = 4;
  o.bytes_per_sync = 1 << 20;
  o.compression = rocksdb::kLZ4Compression;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(options_.rocksdb_block_cache_bytes);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.create_missing_column_families = true;
  rocksdb::ColumnFamilyOptions bodies(o);
  bodies.compression = rocksdb::kNoCompression;  // object bytes: mostly incompressible
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)}, {"inline", bodies}};
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::DBOptions(o), root_ + "/meta", cfs, &cf_handles_, &raw);
  if (!s.ok()) return FromRocks(s, "open " + root_ + "/meta");
  db_.reset(raw);
  inline_cf_ = cf_handles_[1];

  // Files named by garbage/intent records: uncommitted writes and replaced objects.
  std::set<std::string> garbage_names;
  rocksdb::WriteBatch batch;
  uint64_t removed = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    const std::string prefix(1, kGarbagePrefix);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      rocksdb::Slice k = it->key();
      if (k.size() == 17) {
        FileId id;
        std::memcpy(id.bytes.data(), k.data() + 1, 16);
        std::string path = DataPath(id);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
          return Status::FromErrno(errno, "remove orphaned data file " + path);
        }
        garbage_names.insert(id.Hex());
      }
      batch.Delete(k);
      ++removed;
    }
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "scan garbage records"));
  }
  std::vector<fs::path> leftovers;
  for (fs::directory_iterator d(tmp_root_, ec), end; !ec && d != end; d.increment(ec)) {
    leftovers.push_back(d->path());
  }
  if (ec) return Status::IOError("cannot list " + tmp_root_ + ": " + ec.message());
  for (const fs::path& p : leftovers) {
    fs::remove_all(p, ec);
    if (ec) return Status::IOError("cannot remove " + p.string() + ": " + ec.message());
    if (!garbage_names.count(p.filename().string())) ++removed;
  }
  if (batch.Count() > 0) STRATA_RETURN_IF_ERROR(Write(batch));
  orphans_removed_at_open_ = removed;
  if (removed) kLog.Info("removed {} orphaned data files at open of {}", removed, root_);

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kBucketPrefix);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    BucketRecord r;
    STRATA_RETURN_IF_ERROR(DecodeBucket(it->value().ToStringView(), &r));
    BucketInfo info;
    info.name = it->key().ToString().substr(1);
    info.created_ns = r.created_ns;
    info.owner = std::move(r.owner);
    info.public_read = r.public_read;
    std::string name = info.name;
    buckets_.emplace(std::move(name), std::move(info));
  }
  return FromRocks(it->status(), "load buckets");
}

void LocalEngineImpl::CollectGarbage(const std::vector<FileId>& files) {
  if (files.empty()) return;
  rocksdb::WriteBatch b;
  for (const FileId& id : files) {
    ForgetDataFile(id);
    std::string path = DataPath(id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      // Keep the G record: the next Open retries.
      kLog.Warn("cannot remove replaced data file {}: {}", path, std::strerror(errno));
      continue;
    }
    b.Delete(GarbageKey(id));
  }
  // Unsynced: a lost delete only makes the next Open retry an unlink.
  rocksdb::Status s = db_->Write(lazy_wo_, &b);
  if (!s.ok()) kLog.Warn("cannot delete garbage records: {}", s.ToString());
}

void LocalEngineImpl::DiscardFile(const FileId& id) {
  std::string hex = id.Hex();
  ForgetDataFile(id);
  ::unlink((tmp_root_ + "/" + hex).c_str());
  ::unlink(DataPath(id).c_str());
  rocksdb::Status s = db_->Delete(lazy_wo_, GarbageKey(id));
  if (!s.ok()) kLog.Warn("cannot delete garbage record of {}: {}", hex, s.ToString());
}

Status LocalEngineImpl::EnsureDataDir(const FileId& id) {
  size_t idx = static_cast<size_t>(id.bytes[0]) << 8 | id.bytes[1];
  if (dirs_ready_[idx].load(std::memory_order_acquire)) return Status::Ok();
  std::string hex = id.Hex();
  std::string d1 = data_root_ + "/" + hex.substr(0, 2);
  std::string d2 = d1 + "/" + hex.substr(2, 2);
  bool created = false;
  for (const std::string& d : {d1, d2}) {
    if (::mkdir(d.c_str(), 0755) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + d);
    }
  }
  if (created && options_.sync) {
    STRATA_RETURN_IF_ERROR(FsyncDir(data_root_));
    STRATA_RETURN_IF_ERROR(FsyncDir(d1));
  }
  dirs_ready_[idx].store(1, std::memory_order_release);
  return Status::Ok();
}

// ---- write path ---------------------------------------------------------------

Status LocalEngineImpl::Ingest(ByteSource& body, uint64_t inline_budget, ChecksumAlgorithm alg,
                               std::optional<uint64_t> expected_size, Ingested* out) {
  const size_t cap = static_cast<size_t>(std::max<uint64_t>(kIoChunk, inline_budget + 1));
  out->buf.emplace(cap);
  char* buf = out->buf->data();
  // Large bodies alternate between out->buf and spare: the MD5 of one chunk
  // runs (in the process-wide batcher, with other PUTs' chunks) while the next
  // is read. Declared before md5, whose destructor waits for a pending chunk.
  std::optional<ScratchBuffer> spare;
  char* other = nullptr;
  Md5Stream md5;
  std::unique_ptr<Hasher> ck;
  if (alg != ChecksumAlgorithm::kNone) ck = Hasher::Create(alg);

  uint64_t total = 0;  // bytes already handed to the file
  size_t filled = 0;   // bytes in buf
  bool eof = false;
  auto fill = [&](size_t limit) -> Status {
    while (!eof && filled < limit) {
      Result<size_t> r = body.Read(buf + filled, cap - filled);
      if (!r.has_value()) return r.error();
      if (*r == 0) {
        eof = true;
      } else {
        filled += *r;
      }
      if (expected_size && total + filled > *expected_size) {
        return Status::InvalidArgument("IncompleteBody: the body is longer than the declared " +
                                       std::to_string(*expected_size) + " bytes");
      }
    }
    return Status::Ok();
  };
  auto short_body = [&](uint64_t got) {
    return Status::InvalidArgument("IncompleteBody: the body has " + std::to_string(got) +
                                   " bytes, but " + std::to_string(*expected_size) +
                                   " were declared");
  };

  STRATA_RETURN_IF_ERROR(fill(static_cast<size_t>(inline_budget + 1)));
  if (eof && filled <= inline_budget) {
    if (expected_size && filled != *expected_size) return short_body(filled);
    md5.Update(buf, filled);
    if (ck) ck->Update(buf, filled);
    out->inline_data = std::string_view(buf, filled);
    if (filled > embed_max_) {
      out->is_blob = true;
      out->blob_id = NextBodyId();
    }
    out->digest.size = filled;
    out->digest.md5 = md5.Digest();
    if (ck) out->digest.checksum = ck->Digest();
    return Status::Ok();
  }

  FileId id = FileId::Random();
  // Intent first, so a crash after the rename below leaves a findable orphan.
  STRATA_RETURN_IF_ERROR(FromRocks(db_->Put(lazy_wo_, GarbageKey(id), ""), "put intent"));
  out->file = id;
  out->file_pending = true;
  const std::string hex = id.Hex();
  const std::string tmp_path = tmp_root_ + "/" + hex;
  const uint32_t block_size = static_cast<uint32_t>(options_.block_size);
  {
    DataFileWriter w;
    STRATA_RETURN_IF_ERROR(w.Open(tmp_path, block_size));
    for (;;) {
      if (filled > 0) {
        md5.UpdateAsync(buf, filled);  // first waits for the chunk in `other`
        if (ck) ck->Update(buf, filled);
        STRATA_RETURN_IF_ERROR(w.Append(buf, filled));
        total += filled;
        filled = 0;
      }
      if (eof) break;
      if (other == nullptr) {
        spare.emplace(cap);
        other = spare->data();
      }
      std::swap(buf, other);  // `other` now holds the chunk being hashed
      STRATA_RETURN_IF_ERROR(fill(cap));
    }
    if (expected_size && total != *expected_size) return short_body(total);
    STRATA_RETURN_IF_ERROR(w.Finish(options_.sync));
  }
  STRATA_RETURN_IF_ERROR(EnsureDataDir(id));
  const std::string path = DataPath(id);
  if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, "rename " + tmp_path + " to " + path);
  }
  if (options_.sync) STRATA_RETURN_IF_ERROR(FsyncDir(path.substr(0, path.size() - 33)));
  md5.Wait();        // the last chunk may still be hashing from out->buf
  out->buf.reset();  // the buffer goes back to the thread's cache
  out->is_file = true;
  out->block_size = block_size;
  out->digest.size = total;
  out->digest.md5 = md5.Digest();
  if (ck) out->digest.checksum = ck->Digest();
  return Status::Ok();
}

Result<ObjectMeta> LocalEngineImpl::PutInternal(std::string_view bucket, std::string_view key,
                                                ByteSource& body, PutOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  const bool conditional = options.if_none_match_star || options.if_match.has_value();
  WriteTracker tracker;
  if (conditional) {
    // Fail fast, and remember the state the conditions were checked against.
    std::lock_guard lk(ref.stripe->mu);
    tracker.StartLocked(ref);
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    STRATA_RETURN_IF_ERROR(
        CheckConditions(options.if_none_match_star, options.if_match, cur, bucket, key));
  }

  Ingested in(this);
  STRATA_RETURN_IF_ERROR(Ingest(body, options_.inline_threshold, options.checksum_algorithm,
                                options.expected_size, &in));
  ObjectMeta meta = std::move(options.meta);
  meta.key = std::string(key);
  meta.size = in.digest.size;
  meta.etag = HexLower(in.digest.md5);
  meta.mtime_ns = NowNs();
  meta.checksum_algorithm = options.checksum_algorithm;
  meta.checksum = in.digest.checksum.empty() ? std::string() : Base64Encode(in.digest.checksum);
  meta.checksum_composite = false;
  meta.parts.clear();
  if (options.before_commit) {
    Status st = options.before_commit(in.digest, meta);
    if (!st.ok()) return st;
    meta.key = std::string(key);
    meta.size = in.digest.size;
  }

  std::vector<Piece> pieces;
  if (in.digest.size > 0) pieces.push_back(in.AsPiece());
  std::string value;
  EncodeObject(meta, pieces, &value);

  std::vector<FileId> garbage;
  {
    std::lock_guard lk(ref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    if (conditional) {
      STRATA_RETURN_IF_ERROR(
          CheckConditions(options.if_none_match_star, options.if_match, cur, bucket, key));
      if (tracker.ChangedLocked()) {
        return Status::Conflict("object " + Q(key) + " in bucket " + Q(bucket) +
                                " was written by another request during this conditional "
                                "write; retry it");
      }
      tracker.ReleaseLocked();
    }
    rocksdb::WriteBatch b;
    b.Put(dbkey, value);
    AddBody(&b, in);
    if (in.is_file) b.Delete(GarbageKey(in.file));
    if (cur.exists) STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    in.Keep();
    NoteCommitLocked(ref);
  }
  CollectGarbage(garbage);
  objects_put_.fetch_add(1, std::memory_order_relaxed);
  return meta;
}

Result<ObjectMeta> LocalEngineImpl::AppendObject(std::string_view bucket, std::string_view key,
                                                 uint64_t write_offset, ByteSource& body,
                                                 PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  auto offset_mismatch = [&](uint64_t size) {
    return Status::PreconditionFailed("write offset " + std::to_string(write_offset) +
                                      " does not match the size " + std::to_string(size) +
                                      " of object " + Q(key) + " in bucket " + Q(bucket));
  };

  WriteTracker tracker;
  bool existed = false;
  ObjectMeta base;
  uint64_t inline_total = 0;
  {
    std::lock_guard lk(ref.stripe->mu);
    tracker.StartLocked(ref);
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    existed = cur.exists;
    if (!existed && write_offset != 0) {
      return Status::NotFound("object " + Q(key) + " does not exist in bucket " + Q(bucket) +
                              "; append at offset 0 to create it");
    }
    if (existed && cur.meta.size != write_offset) return offset_mismatch(cur.meta.size);
    STRATA_RETURN_IF_ERROR(
        CheckConditions(options.if_none_match_star, options.if_match, cur, bucket, key));
    if (existed) {
      std::vector<Piece> pieces;
      STRATA_RETURN_IF_ERROR(DecodeObject(cur.value.ToStringView(), &base, &pieces));
      for (const Piece& p : pieces) {
        if (p.kind != Piece::kFile) inline_total += p.length;
      }
    }
  }
  if (!existed) base = std::move(options.meta);

  ChecksumAlgorithm alg = options.checksum_algorithm;
  if (alg == ChecksumAlgorithm::kNone && existed && !base.checksum_composite) {
    alg = base.checksum_algorithm;
  }
  // Keep the record's inline bytes under the threshold; past it, appends become files.
  const uint64_t budget =
      options_.inline_threshold > inline_total ? options_.inline_threshold - inline_total : 0;
  Ingested in(this);
  STRATA_RETURN_IF_ERROR(Ingest(body, budget, alg, options.expected_size, &in));

  ObjectMeta meta = base;
  meta.key = std::string(key);
  meta.mtime_ns = NowNs();
  meta.parts.clear();
  meta.checksum_composite = false;
  if (!existed) {
    meta.size = in.digest.size;
    meta.etag = HexLower(in.digest.md5);
    meta.checksum_algorithm = alg;
    meta.checksum = in.digest.checksum.empty() ? "" : Base64Encode(in.digest.checksum);
  } else {
    meta.size = base.size + in.digest.size;
    // Not a content MD5 (that would need the old bytes): a digest of the previous
    // ETag and the appended bytes' MD5, so every version has a distinct ETag.
    meta.etag = HexLower(Md5(base.etag + in.digest.md5));
    std::string combined;
    if (IsCrc(alg) && alg == base.checksum_algorithm && !base.checksum_composite &&
        !base.checksum.empty() && !in.digest.checksum.empty()) {
      combined = CombineCrc(alg, base.checksum, in.digest.checksum, in.digest.size);
    }
    meta.checksum_algorithm = combined.empty() ? ChecksumAlgorithm::kNone : alg;
    meta.checksum = std::move(combined);
  }
  if (options.before_commit) {
    Status st = options.before_commit(in.digest, meta);
    if (!st.ok()) return st;
    meta.key = std::string(key);
  }
  if (existed && in.digest.size == 0) {
    base.key = std::string(key);
    return base;
  }

  std::vector<FileId> garbage;
  {
    std::lock_guard lk(ref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    if (tracker.ChangedLocked() || cur.exists != existed) {
      if (!cur.exists && write_offset != 0) return NoObject(bucket, key);
      uint64_t size = cur.exists ? cur.meta.size : 0;
      if (size != write_offset) return offset_mismatch(size);
      return Status::Conflict("object " + Q(key) + " in bucket " + Q(bucket) +
                              " was written by another request during this append; retry it");
    }
    STRATA_RETURN_IF_ERROR(
        CheckConditions(options.if_none_match_star, options.if_match, cur, bucket, key));
    tracker.ReleaseLocked();
    std::vector<Piece> pieces;
    if (cur.exists) STRATA_RETURN_IF_ERROR(DecodeObjectPieces(cur.value.ToStringView(), &pieces));
    rocksdb::WriteBatch b;
    std::string merged;
    if (!in.is_file && !pieces.empty() && pieces.back().kind != Piece::kFile) {
      // Small appends extend the small tail piece (the budget above keeps it
      // under the inline threshold) instead of piling up pieces.
      Piece& tail = pieces.back();
      rocksdb::PinnableSlice tail_body;
      std::string_view tail_bytes = tail.data;
      if (tail.kind == Piece::kBlob) {
        bool found = false;
        STRATA_RETURN_IF_ERROR(GetBody(tail.file, &tail_body, &found));
        if (!found) {
          return Status::Corruption("object " + Q(key) + " in bucket " + Q(bucket) +
                                    ": body record " + tail.file.Hex() + " is missing");
        }
        tail_bytes = tail_body.ToStringView();
        b.Delete(inline_cf_, tail.file.Raw());
      }
      merged.reserve(tail_bytes.size() + in.inline_data.size());
      merged.append(tail_bytes).append(in.inline_data);
      tail.length = merged.size();
      if (merged.size() <= embed_max_) {
        tail.kind = Piece::kInline;
        tail.data = merged;
      } else {
        tail.kind = Piece::kBlob;
        tail.file = NextBodyId();
        b.Put(inline_cf_, tail.file.Raw(), merged);
      }
    } else if (in.digest.size > 0) {
      AddBody(&b, in);
      pieces.push_back(in.AsPiece());
    }
    std::string value;
    EncodeObject(meta, pieces, &value);
    b.Put(dbkey, value);
    if (in.is_file) b.Delete(GarbageKey(in.file));
    STRATA_RETURN_IF_ERROR(Write(b));
    in.Keep();
    NoteCommitLocked(ref);
  }
  objects_put_.fetch_add(1, std::memory_order_relaxed);
  return meta;
}

Result<ObjectMeta> LocalEngineImpl::HeadObject(std::string_view bucket, std::string_view key) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  rocksdb::PinnableSlice v;
  bool found = false;
  STRATA_RETURN_IF_ERROR(Get(ObjectKey(bucket, key), &v, &found));
  if (!found) return NoObject(bucket, key);
  ObjectMeta meta;
  STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &meta, nullptr));
  meta.key = std::string(key);
  return meta;
}

Result<std::unique_ptr<LocalObjectReader>> LocalEngineImpl::OpenReader(std::string_view bucket,
                                                                       std::string_view key) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  auto r = std::make_unique<LocalObjectReader>();
  r->bucket_ = std::string(bucket);
  std::string missing;
  for (int attempt = 0; attempt < kOpenRetries; ++attempt) {
    bool found = false;
    STRATA_RETURN_IF_ERROR(Get(dbkey, &r->value_, &found));
    if (!found) return NoObject(bucket, key);
    std::vector<Piece> pieces;
    r->meta_ = ObjectMeta();
    STRATA_RETURN_IF_ERROR(DecodeObject(r->value_.ToStringView(), &r->meta_, &pieces));
    r->meta_.key = std::string(key);
    r->spans_.clear();
    r->files_.clear();
    r->bodies_.clear();
    bool has_inline = false;
    bool raced = false;
    uint64_t offset = 0;
    for (const Piece& p : pieces) {
      if (p.length == 0) continue;
      LocalObjectReader::Span s;
      s.offset = offset;
      s.length = p.length;
      if (p.kind == Piece::kInline) {
        s.data = p.data;
        has_inline = true;
      } else if (p.kind == Piece::kBlob) {
        auto body = std::make_unique<rocksdb::PinnableSlice>();
        bool body_found = false;
        STRATA_RETURN_IF_ERROR(GetBody(p.file, body.get(), &body_found));
        if (!body_found || body->size() != p.length) {
          // Most likely overwritten since our Get: read the record again.
          raced = true;
          missing = "body record " + p.file.Hex();
          break;
        }
        s.data = body->ToStringView();
        r->bodies_.push_back(std::move(body));
      } else {
        std::string path = DataPath(p.file);
        std::shared_ptr<VerifiedFile> vf = OpenDataFile(p.file, p.length, p.block_size);
        if (vf == nullptr) {
          if (errno == ENOENT) {
            // Most likely overwritten and collected since our Get: read the record again.
            raced = true;
            missing = "data file " + path;
            break;
          }
          return Status::FromErrno(errno, "open data file of object " + Q(key) + ": " + path);
        }
        r->files_.push_back(std::move(vf));
        s.file = r->files_.back().get();
        s.id = p.file;
      }
      r->spans_.push_back(s);
      offset += p.length;
    }
    if (raced) continue;
    if (offset != r->meta_.size) {
      return Status::Corruption("object " + Q(key) + " in bucket " + Q(bucket) + " has " +
                                std::to_string(offset) + " bytes of data but its size is " +
                                std::to_string(r->meta_.size));
    }
    if (!has_inline) r->value_.Reset();
    return r;
  }
  return Status::Corruption("object " + Q(key) + " in bucket " + Q(bucket) + ": " + missing +
                            " is missing");
}

Status LocalEngineImpl::DeleteObject(std::string_view bucket, std::string_view key) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  std::vector<FileId> garbage;
  {
    std::lock_guard lk(ref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    if (!cur.exists) return Status::Ok();
    rocksdb::WriteBatch b;
    b.Delete(dbkey);
    STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(ref);
  }
  CollectGarbage(garbage);
  return Status::Ok();
}

Result<ObjectMeta> LocalEngineImpl::CopyObject(std::string_view src_bucket,
                                               std::string_view src_key,
                                               std::string_view dst_bucket,
                                               std::string_view dst_key,
                                               std::optional<ObjectMeta> meta,
                                               PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(dst_bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalObjectReader> reader,
                          OpenReader(src_bucket, src_key));
  const ObjectMeta& src = reader->meta();
  ObjectMeta m = meta ? std::move(*meta) : src;
  if (!options.meta.owner.empty()) m.owner = options.meta.owner;
  if (options.checksum_algorithm == ChecksumAlgorithm::kNone) {
    options.checksum_algorithm = src.checksum_algorithm;
  }
  options.meta = std::move(m);
  options.expected_size = src.size;
  ReaderSource source(*reader);
  return PutInternal(dst_bucket, dst_key, source, options);
}

Result<ObjectMeta> LocalEngineImpl::RenameObject(std::string_view bucket,
                                                 std::string_view src_key,
                                                 std::string_view dst_key, PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(src_key));
  STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
  const std::string src_db = ObjectKey(bucket, src_key);
  const std::string dst_db = ObjectKey(bucket, dst_key);
  const KeyRef src_ref = Ref(src_db), dst_ref = Ref(dst_db);
  std::vector<FileId> garbage;
  ObjectMeta meta;
  {
    StripeLocks locks(src_ref.stripe, dst_ref.stripe);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    Current src;
    STRATA_RETURN_IF_ERROR(ReadCurrent(src_db, &src));
    if (!src.exists) return NoObject(bucket, src_key);
    STRATA_RETURN_IF_ERROR(DecodeObject(src.value.ToStringView(), &meta, nullptr));
    meta.key = std::string(dst_key);
    if (src_key == dst_key) {
      STRATA_RETURN_IF_ERROR(
          CheckConditions(options.if_none_match_star, options.if_match, src, bucket, dst_key));
      return meta;
    }
    Current dst;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dst_db, &dst));
    STRATA_RETURN_IF_ERROR(
        CheckConditions(options.if_none_match_star, options.if_match, dst, bucket, dst_key));
    rocksdb::WriteBatch b;
    b.Delete(src_db);
    b.Put(dst_db, src.value);
    if (dst.exists) STRATA_RETURN_IF_ERROR(AddGarbage(dst.value.ToStringView(), &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(src_ref);
    NoteCommitLocked(dst_ref);
  }
  CollectGarbage(garbage);
  return meta;
}

Status LocalEngineImpl::SetObjectTags(std::string_view bucket, std::string_view key,
                                      std::map<std::string, std::string> tags) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  std::lock_guard lk(ref.stripe->mu);
  std::shared_lock bl(buckets_mu_);
  STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
  rocksdb::PinnableSlice v;
  bool found = false;
  STRATA_RETURN_IF_ERROR(Get(dbkey, &v, &found));
  if (!found) return NoObject(bucket, key);
  ObjectMeta meta;
  std::vector<Piece> pieces;
  STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &meta, &pieces));
  meta.tags = std::move(tags);
  std::string value;
  EncodeObject(meta, pieces, &value);
  rocksdb::WriteBatch b;
  b.Put(dbkey, value);
  return Write(b);
}

Result<ListResult> LocalEngineImpl::ListObjects(std::string_view bucket,
                                                const ListOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  const int max_keys = std::clamp(options.max_keys, 0, 1000);
  const std::string base = ObjectKeyPrefix(bucket);
  const std::string lower = base + options.prefix;
  const std::string upper = PrefixSuccessor(lower);
  const std::string_view prefix = options.prefix;
  const std::string_view delim = options.delimiter;
  const std::string_view after = options.start_after;
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  uint64_t steps = 1;
  it->Seek(after > prefix ? base + std::string(after) : lower);

  ListResult res;
  int count = 0;
  while (it->Valid()) {
    const rocksdb::Slice k = it->key();
    const std::string_view key(k.data() + base.size(), k.size() - base.size());
    if (!delim.empty()) {
      size_t pos = key.find(delim, prefix.size());
      if (pos != std::string_view::npos) {
        std::string_view cp = key.substr(0, pos + delim.size());
        if (cp > after) {
          if (count == max_keys) {
            res.truncated = true;
            break;
          }
          res.common_prefixes.emplace_back(cp);
          ++count;
        }
        // Skip every key under this common prefix with one seek.
        std::string next = PrefixSuccessor(std::string_view(k.data(), base.size() + cp.size()));
        if (next.empty()) break;
        it->Seek(next);
        ++steps;
        continue;
      }
    }
    if (key > after) {
      if (count == max_keys) {
        res.truncated = true;
        break;
      }
      ObjectMeta m;
      Status st = DecodeObjectSummary(it->value().ToStringView(), &m);
      if (!st.ok()) return st.WithContext("object " + Q(key) + " in bucket " + Q(bucket));
      m.key = std::string(key);
      res.objects.push_back(std::move(m));
      ++count;
    }
    it->Next();
    ++steps;
  }
  list_steps_.fetch_add(steps, std::memory_order_relaxed);
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list"));
  if (res.truncated) {
    // The last entry returned, whichever kind (both lists are in key order).
    const std::string* last_key = res.objects.empty() ? nullptr : &res.objects.back().key;
    const std::string* last_cp = res.common_prefixes.empty() ? nullptr : &res.common_prefixes.back();
    if (last_key && last_cp) {
      res.next_marker = std::max(*last_key, *last_cp);
    } else if (last_key || last_cp) {
      res.next_marker = last_key ? *last_key : *last_cp;
    }
  }
  return res;
}

// ---- buckets ------------------------------------------------------------------

Status LocalEngineImpl::CreateBucket(std::string_view name, std::string_view owner) {
  STRATA_RETURN_IF_ERROR(ValidateBucketName(name));
  std::unique_lock lk(buckets_mu_);
  if (buckets_.find(name) != buckets_.end()) {
    return Status::AlreadyExists("bucket " + Q(name) + " already exists");
  }
  BucketRecord r;
  r.created_ns = NowNs();
  r.owner = std::string(owner);
  std::string value;
  EncodeBucket(r, &value);
  rocksdb::WriteBatch b;
  b.Put(BucketKey(name), value);
  STRATA_RETURN_IF_ERROR(Write(b));
  BucketInfo info;
  info.name = std::string(name);
  info.created_ns = r.created_ns;
  info.owner = r.owner;
  buckets_.emplace(std::string(name), std::move(info));
  return Status::Ok();
}

// Multipart uploads in progress are aborted with the bucket (as MinIO does):
// they are invisible to object listings, and refusing would strand a bucket
// whose client died mid-upload.
Status LocalEngineImpl::DeleteBucket(std::string_view name) {
  STRATA_RETURN_IF_ERROR(ValidateBucketName(name));
  std::vector<FileId> garbage;
  {
    std::unique_lock lk(buckets_mu_);
    if (buckets_.find(name) == buckets_.end()) return NoBucket(name);
    const std::string objects = ObjectKeyPrefix(name);
    const std::string objects_end = PrefixSuccessor(objects);
    rocksdb::Slice objects_upper(objects_end);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &objects_upper;
    {
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
      it->Seek(objects);
      if (it->Valid()) return Status::PreconditionFailed("bucket " + Q(name) + " is not empty");
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "check bucket"));
    }
    rocksdb::WriteBatch b;
    const std::string uploads = UploadKeyPrefix(name);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::vector<std::string> upload_ids;
    for (it->Seek(uploads); it->Valid() && it->key().starts_with(uploads); it->Next()) {
      std::string_view k = it->key().ToStringView();
      size_t nul = k.rfind('\0');
      upload_ids.emplace_back(k.substr(nul + 1));
      b.Delete(it->key());
    }
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list uploads"));
    for (const std::string& id : upload_ids) {
      const std::string pp = PartKeyPrefix(id);
      for (it->Seek(pp); it->Valid() && it->key().starts_with(pp); it->Next()) {
        PartRecord pr;
        STRATA_RETURN_IF_ERROR(DecodePart(it->value().ToStringView(), &pr));
        DropPiece(pr.piece, &b, &garbage);
        b.Delete(it->key());
      }
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list parts"));
    }
    b.Delete(BucketKey(name));
    STRATA_RETURN_IF_ERROR(Write(b));
    buckets_.erase(buckets_.find(name));
  }
  CollectGarbage(garbage);
  return Status::Ok();
}

Result<BucketInfo> LocalEngineImpl::GetBucket(std::string_view name) {
  std::shared_lock lk(buckets_mu_);
  auto it = buckets_.find(name);
  if (it == buckets_.end()) return NoBucket(name);
  return it->second;
}

Result<std::vector<BucketInfo>> LocalEngineImpl::ListBuckets() {
  std::shared_lock lk(buckets_mu_);
  std::vector<BucketInfo> out;
  out.reserve(buckets_.size());
  for (const auto& [name, info] : buckets_) out.push_back(info);
  return out;
}

Status LocalEngineImpl::SetBucketPublicRead(std::string_view name, bool public_read) {
  std::unique_lock lk(buckets_mu_);
  auto it = buckets_.find(name);
  if (it == buckets_.end()) return NoBucket(name);
  BucketRecord r;
  r.created_ns = it->second.created_ns;
  r.owner = it->second.owner;
  r.public_read = public_read;
  std::string value;
  EncodeBucket(r, &value);
  rocksdb::WriteBatch b;
  b.Put(BucketKey(name), value);
  STRATA_RETURN_IF_ERROR(Write(b));
  it->second.public_read = public_read;
  return Status::Ok();
}

// ---- multipart ----------------------------------------------------------------

Status LocalEngineImpl::ReadUpload(std::string_view bucket, std::string_view key,
                                   std::string_view upload_id, UploadRecord* r) {
  rocksdb::PinnableSlice v;
  bool found = false;
  STRATA_RETURN_IF_ERROR(Get(UploadKey(bucket, key, upload_id), &v, &found));
  if (!found) return NoUpload(upload_id);
  return DecodeUpload(v.ToStringView(), r);
}

Result<std::string> LocalEngineImpl::CreateMultipartUpload(std::string_view bucket,
                                                           std::string_view key,
                                                           PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string id = FileId::Random().Hex();
  UploadRecord r;
  r.initiated_ns = NowNs();
  r.checksum_algorithm = options.checksum_algorithm;
  r.meta = std::move(options.meta);
  std::string value;
  EncodeUpload(r, &value);
  rocksdb::WriteBatch b;
  b.Put(UploadKey(bucket, key, id), value);
  std::shared_lock bl(buckets_mu_);
  STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
  STRATA_RETURN_IF_ERROR(Write(b));
  return id;
}

Result<PartInfo> LocalEngineImpl::UploadPart(std::string_view bucket, std::string_view key,
                                             std::string_view upload_id, int part_number,
                                             ByteSource& body, PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return Status::InvalidArgument("part number " + std::to_string(part_number) +
                                   " is out of range: it must be 1 to 10000");
  }
  const std::string ukey = UploadKey(bucket, key, upload_id);
  UploadRecord upload;
  STRATA_RETURN_IF_ERROR(ReadUpload(bucket, key, upload_id, &upload));
  ChecksumAlgorithm alg = options.checksum_algorithm != ChecksumAlgorithm::kNone
                              ? options.checksum_algorithm
                              : upload.checksum_algorithm;

  Ingested in(this);
  STRATA_RETURN_IF_ERROR(
      Ingest(body, options_.inline_threshold, alg, options.expected_size, &in));
  ObjectMeta pm;
  pm.key = std::string(key);
  pm.size = in.digest.size;
  pm.etag = HexLower(in.digest.md5);
  pm.mtime_ns = NowNs();
  pm.checksum_algorithm = alg;
  pm.checksum = in.digest.checksum.empty() ? "" : Base64Encode(in.digest.checksum);
  if (options.before_commit) {
    Status st = options.before_commit(in.digest, pm);
    if (!st.ok()) return st;
  }
  PartRecord pr;
  pr.size = in.digest.size;
  pr.mtime_ns = pm.mtime_ns;
  pr.etag = HexLower(in.digest.md5);
  pr.checksum_algorithm = pm.checksum.empty() ? ChecksumAlgorithm::kNone : pm.checksum_algorithm;
  pr.checksum = pm.checksum;
  pr.piece = in.AsPiece();
  std::string value;
  EncodePart(pr, &value);

  const std::string pkey = PartKey(upload_id, part_number);
  const KeyRef uref = Ref(ukey);
  std::vector<FileId> garbage;
  {
    std::lock_guard lk(uref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    rocksdb::PinnableSlice v;
    bool found = false;
    STRATA_RETURN_IF_ERROR(Get(ukey, &v, &found));
    if (!found) return NoUpload(upload_id);  // aborted or completed meanwhile
    STRATA_RETURN_IF_ERROR(Get(pkey, &v, &found));
    rocksdb::WriteBatch b;
    if (found) {
      PartRecord old;
      STRATA_RETURN_IF_ERROR(DecodePart(v.ToStringView(), &old));
      DropPiece(old.piece, &b, &garbage);
    }
    b.Put(pkey, value);
    AddBody(&b, in);
    if (in.is_file) b.Delete(GarbageKey(in.file));
    STRATA_RETURN_IF_ERROR(Write(b));
    in.Keep();
  }
  CollectGarbage(garbage);
  PartInfo info;
  info.number = part_number;
  info.size = pr.size;
  info.etag = pr.etag;
  info.mtime_ns = pr.mtime_ns;
  info.checksum = pr.checksum;
  return info;
}

Result<ObjectMeta> LocalEngineImpl::CompleteMultipartUpload(
    std::string_view bucket, std::string_view key, std::string_view upload_id,
    const std::vector<CompletePart>& parts, const CompleteOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  if (parts.empty()) {
    return Status::InvalidArgument("InvalidPart: the part list is empty; give at least one part");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].number <= parts[i - 1].number) {
      return Status::InvalidArgument("InvalidPartOrder: part numbers must be ascending, but part " +
                                     std::to_string(parts[i].number) + " follows part " +
                                     std::to_string(parts[i - 1].number));
    }
  }
  const std::string ukey = UploadKey(bucket, key, upload_id);
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef oref = Ref(dbkey), uref = Ref(ukey);
  std::vector<FileId> garbage;
  ObjectMeta meta;
  {
    StripeLocks locks(oref.stripe, uref.stripe);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    UploadRecord upload;
    STRATA_RETURN_IF_ERROR(ReadUpload(bucket, key, upload_id, &upload));

    // All stored parts (values copied: the iterator's memory moves on).
    std::deque<std::string> values;
    std::map<int, PartRecord> stored;
    const std::string pp = PartKeyPrefix(upload_id);
    {
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
      for (it->Seek(pp); it->Valid() && it->key().starts_with(pp); it->Next()) {
        rocksdb::Slice k = it->key();
        if (k.size() != pp.size() + 4) continue;
        int n = static_cast<int>(BigEndian(std::string_view(k.data() + pp.size(), 4)));
        values.push_back(it->value().ToString());
        STRATA_RETURN_IF_ERROR(DecodePart(values.back(), &stored[n]));
      }
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list parts"));
    }

    std::string md5s;
    md5s.reserve(parts.size() * 16);
    std::string raw;
    uint64_t total = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const CompletePart& cp = parts[i];
      auto it = stored.find(cp.number);
      if (it == stored.end()) {
        return Status::InvalidArgument("InvalidPart: part " + std::to_string(cp.number) +
                                       " of upload " + Q(upload_id) + " was not uploaded");
      }
      const PartRecord& pr = it->second;
      if (NormalizeEtag(cp.etag) != pr.etag) {
        return Status::InvalidArgument("InvalidPart: part " + std::to_string(cp.number) +
                                       " has ETag " + pr.etag + ", not " + cp.etag);
      }
      if (!cp.checksum.empty() && !pr.checksum.empty() && cp.checksum != pr.checksum) {
        return Status::InvalidArgument("InvalidPart: part " + std::to_string(cp.number) +
                                       " has checksum " + pr.checksum + ", not " + cp.checksum);
      }
      if (i + 1 < parts.size() && pr.size < options.min_part_size) {
        return Status::InvalidArgument(
            "EntityTooSmall: part " + std::to_string(cp.number) + " is " +
            std::to_string(pr.size) + " bytes; every part but the last must be at least " +
            std::to_string(options.min_part_size) + " bytes");
      }
      if (!HexToRaw(pr.etag, &raw)) return Status::Corruption("part ETag is not hex: " + pr.etag);
      md5s += raw;
      total += pr.size;
    }

    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    STRATA_RETURN_IF_ERROR(
        CheckConditions(options.if_none_match_star, options.if_match, cur, bucket, key));

    meta = std::move(upload.meta);
    meta.key = std::string(key);
    meta.size = total;
    meta.mtime_ns = NowNs();
    meta.etag = HexLower(Md5(md5s)) + "-" + std::to_string(parts.size());
    meta.parts.clear();
    meta.parts.reserve(parts.size());
    // Composite checksum: hash of the raw part checksums, when every part has one.
    ChecksumAlgorithm alg = upload.checksum_algorithm;
    if (alg == ChecksumAlgorithm::kNone) alg = stored[parts[0].number].checksum_algorithm;
    std::unique_ptr<Hasher> composite;
    if (alg != ChecksumAlgorithm::kNone) composite = Hasher::Create(alg);
    std::vector<Piece> pieces;
    pieces.reserve(parts.size());
    for (const CompletePart& cp : parts) {
      PartRecord& pr = stored[cp.number];
      meta.parts.push_back(PartSummary{cp.number, pr.size, pr.etag, pr.checksum});
      if (composite) {
        std::optional<std::string> c = Base64Decode(pr.checksum);
        if (pr.checksum_algorithm != alg || !c || c->empty()) {
          composite.reset();
        } else {
          composite->Update(c->data(), c->size());
        }
      }
      if (pr.size > 0) pieces.push_back(pr.piece);
    }
    meta.checksum_algorithm = composite ? alg : ChecksumAlgorithm::kNone;
    meta.checksum = composite ? Base64Encode(composite->Digest()) : "";
    meta.checksum_composite = composite != nullptr;
    for (PartSummary& ps : meta.parts) {
      if (!composite) ps.checksum.clear();
    }
    if (options.before_commit) {
      STRATA_RETURN_IF_ERROR(options.before_commit(meta));
      meta.key = std::string(key);
      meta.size = total;
    }
    // A tiny object made of embedded parts becomes one embedded piece.
    std::string merged;
    if (pieces.size() > 1 && total <= embed_max_ &&
        std::all_of(pieces.begin(), pieces.end(),
                    [](const Piece& p) { return p.kind == Piece::kInline; })) {
      merged.reserve(total);
      for (const Piece& p : pieces) merged.append(p.data);
      pieces.resize(1);
      pieces[0].data = merged;
      pieces[0].length = merged.size();
    }
    std::string value;
    EncodeObject(meta, pieces, &value);

    rocksdb::WriteBatch b;
    b.Put(dbkey, value);
    b.Delete(ukey);
    std::set<int> used;
    for (const CompletePart& cp : parts) used.insert(cp.number);
    for (const auto& [n, pr] : stored) {
      b.Delete(PartKey(upload_id, n));
      if (!used.count(n)) DropPiece(pr.piece, &b, &garbage);
    }
    if (cur.exists) STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(oref);
  }
  CollectGarbage(garbage);
  objects_put_.fetch_add(1, std::memory_order_relaxed);
  return meta;
}

Status LocalEngineImpl::AbortMultipartUpload(std::string_view bucket, std::string_view key,
                                             std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  const std::string ukey = UploadKey(bucket, key, upload_id);
  const KeyRef uref = Ref(ukey);
  std::vector<FileId> garbage;
  {
    std::lock_guard lk(uref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    rocksdb::PinnableSlice v;
    bool found = false;
    STRATA_RETURN_IF_ERROR(Get(ukey, &v, &found));
    if (!found) return NoUpload(upload_id);
    rocksdb::WriteBatch b;
    b.Delete(ukey);
    const std::string pp = PartKeyPrefix(upload_id);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(pp); it->Valid() && it->key().starts_with(pp); it->Next()) {
      PartRecord pr;
      STRATA_RETURN_IF_ERROR(DecodePart(it->value().ToStringView(), &pr));
      DropPiece(pr.piece, &b, &garbage);
      b.Delete(it->key());
    }
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list parts"));
    STRATA_RETURN_IF_ERROR(Write(b));
  }
  CollectGarbage(garbage);
  return Status::Ok();
}

Result<std::vector<PartInfo>> LocalEngineImpl::ListParts(std::string_view bucket,
                                                         std::string_view key,
                                                         std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  UploadRecord upload;
  STRATA_RETURN_IF_ERROR(ReadUpload(bucket, key, upload_id, &upload));
  std::vector<PartInfo> out;
  const std::string pp = PartKeyPrefix(upload_id);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(pp); it->Valid() && it->key().starts_with(pp); it->Next()) {
    rocksdb::Slice k = it->key();
    if (k.size() != pp.size() + 4) continue;
    PartRecord pr;
    STRATA_RETURN_IF_ERROR(DecodePart(it->value().ToStringView(), &pr));
    PartInfo info;
    info.number = static_cast<int>(BigEndian(std::string_view(k.data() + pp.size(), 4)));
    info.size = pr.size;
    info.etag = std::move(pr.etag);
    info.mtime_ns = pr.mtime_ns;
    info.checksum = std::move(pr.checksum);
    out.push_back(std::move(info));
  }
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list parts"));
  return out;
}

Result<PutOptions> LocalEngineImpl::GetUpload(std::string_view bucket, std::string_view key,
                                              std::string_view upload_id) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  UploadRecord upload;
  STRATA_RETURN_IF_ERROR(ReadUpload(bucket, key, upload_id, &upload));
  PutOptions out;
  out.meta = std::move(upload.meta);
  out.meta.key = std::string(key);
  out.checksum_algorithm = upload.checksum_algorithm;
  return out;
}

Result<std::vector<MultipartUpload>> LocalEngineImpl::ListMultipartUploads(
    std::string_view bucket, std::string_view prefix) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  const std::string base = UploadKeyPrefix(bucket);
  const std::string lower = base + std::string(prefix);
  const std::string upper = PrefixSuccessor(lower);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  std::vector<MultipartUpload> out;
  for (it->Seek(lower); it->Valid(); it->Next()) {
    std::string_view rest = it->key().ToStringView().substr(base.size());
    size_t nul = rest.rfind('\0');
    if (nul == std::string_view::npos) continue;
    UploadRecord r;
    STRATA_RETURN_IF_ERROR(DecodeUpload(it->value().ToStringView(), &r));
    MultipartUpload u;
    u.key = std::string(rest.substr(0, nul));
    u.upload_id = std::string(rest.substr(nul + 1));
    u.initiated_ns = r.initiated_ns;
    u.owner = std::move(r.meta.owner);
    out.push_back(std::move(u));
  }
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list uploads"));
  return out;
}

}  // namespace

Result<std::unique_ptr<LocalEngine>> LocalEngine::Open(const EngineOptions& options) {
  if (options.data_dir.empty()) {
    return Status::InvalidArgument("EngineOptions::data_dir is empty; give the data directory");
  }
  if (options.block_size == 0 || options.block_size > (1u << 30)) {
    return Status::InvalidArgument("EngineOptions::block_size must be 1 byte to 1 GiB (got " +
                                   std::to_string(options.block_size) + ")");
  }
  if (options.inline_threshold > (16u << 20)) {
    // Small bodies are buffered whole in memory and stored as RocksDB values.
    return Status::InvalidArgument("EngineOptions::inline_threshold must be at most 16 MiB (got " +
                                   std::to_string(options.inline_threshold) + ")");
  }
  auto engine = std::make_unique<LocalEngineImpl>(options);
  STRATA_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<LocalEngine>(std::move(engine));
}

namespace internal {

uint64_t ListIteratorSteps(LocalEngine& engine) {
  return static_cast<LocalEngineImpl&>(engine).list_steps();
}

std::string FirstDataFilePath(LocalEngine& engine, std::string_view bucket,
                              std::string_view key) {
  return static_cast<LocalEngineImpl&>(engine).FirstDataFile(bucket, key);
}

Status AddGarbageRecordForTest(LocalEngine& engine, std::string_view file_id_hex) {
  FileId id;
  if (!FileId::FromHex(file_id_hex, &id)) return Status::InvalidArgument("bad file id");
  return static_cast<LocalEngineImpl&>(engine).PutGarbageRecord(id);
}

uint64_t CountBodyRecordsForTest(LocalEngine& engine) {
  return static_cast<LocalEngineImpl&>(engine).CountBodies();
}

std::string DataFilePathForTest(LocalEngine& engine, std::string_view file_id_hex) {
  FileId id;
  if (!FileId::FromHex(file_id_hex, &id)) return "";
  return static_cast<LocalEngineImpl&>(engine).DataPath(id);
}

}  // namespace internal
}  // namespace strata::objstore
