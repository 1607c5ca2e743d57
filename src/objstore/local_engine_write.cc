// LocalEngine's write path: bodies ingested (inline, body record or data file),
// PutObject with its conditions, AppendObject, CopyObject, RenameObject,
// SetObjectTags and DeleteObject. Each commits one WriteBatch under the key's
// stripe lock (the protocol is described in local_engine_impl.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/aead.h>
#include <strata/core/clock.h>
#include <strata/core/coding.h>
#include <strata/core/file_util.h>
#include <strata/core/md5_mb.h>
#include <strata/core/strings.h>

#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {
namespace {

// crc(A||B) from base64 crc(A), raw crc(B) and len(B); "" if not combinable.
std::string CombineCrc(ChecksumAlgorithm a, std::string_view b64_a, std::string_view raw_b,
                       uint64_t len_b) {
  const size_t width = a == ChecksumAlgorithm::kCrc64Nvme ? 8 : 4;
  std::optional<std::string> raw_a = Base64Decode(b64_a);
  if (!IsCrc(a) || !raw_a || raw_a->size() != width || raw_b.size() != width) return "";
  std::string out;
  if (width == 8) {
    PutBigEndian64(&out, CrcCombine(a, DecodeBigEndian64(raw_a->data()),
                                    DecodeBigEndian64(raw_b.data()), len_b));
  } else {
    PutBigEndian32(&out, static_cast<uint32_t>(CrcCombine(a, DecodeBigEndian32(raw_a->data()),
                                                          DecodeBigEndian32(raw_b.data()), len_b)));
  }
  return Base64Encode(out);
}

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

}  // namespace

Status LocalEngineImpl::Ingest(ByteSource& body, uint64_t inline_budget, ChecksumAlgorithm alg,
                               std::optional<uint64_t> expected_size, Ingested* out,
                               std::string_view data_key) {
  const bool seal = !data_key.empty();
  if (seal && data_key.size() != kDataKeyBytes)
    return Status::InvalidArgument("a data key is " + std::to_string(kDataKeyBytes) + " bytes");
  if (seal) {
    out->sealed = true;
    STRATA_RETURN_IF_ERROR(crypto::RandomBytes(&out->nonce, sizeof(out->nonce)));
  }
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
    if (seal) {
      out->sealed_inline.resize(filled + kSealTagBytes);
      STRATA_RETURN_IF_ERROR(
          SealBlock(data_key, out->nonce, 0, buf, filled, out->sealed_inline.data()));
      out->inline_data = out->sealed_inline;
    }
    if (out->inline_data.size() > embed_max_) {
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
  // Synced (commit_wo_) when the engine syncs: the rename below becomes durable
  // before the commit, and an intent lost to a power cut leaked the file.
  STRATA_RETURN_IF_ERROR(FromRocks(db_->Put(commit_wo_, GarbageKey(id), ""), "put intent"));
  out->file = id;
  out->file_pending = true;
  const std::string hex = id.Hex();
  const std::string tmp_path = tmp_root_ + "/" + hex;
  const uint32_t block_size = static_cast<uint32_t>(options_.block_size);
  {
    DataFileWriter w;
    STRATA_RETURN_IF_ERROR(w.Open(tmp_path, seal ? block_size + kSealTagBytes : block_size));
    std::optional<SealingWriter> sw;
    if (seal) sw.emplace(&w, data_key, out->nonce, block_size);
    for (;;) {
      if (filled > 0) {
        md5.UpdateAsync(buf, filled);  // first waits for the chunk in `other`
        if (ck) ck->Update(buf, filled);
        STRATA_RETURN_IF_ERROR(sw ? sw->Append(buf, filled) : w.Append(buf, filled));
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
    if (sw) STRATA_RETURN_IF_ERROR(sw->Flush());
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
                                options.expected_size, &in, options.data_key));
  ObjectMeta meta = std::move(options.meta);
  meta.key = std::string(key);
  meta.size = in.digest.size;
  meta.etag = HexEncode(in.digest.md5);
  meta.mtime_ns = NowUnixNanos();
  meta.checksum_algorithm = options.checksum_algorithm;
  meta.checksum = in.digest.checksum.empty() ? std::string() : Base64Encode(in.digest.checksum);
  meta.checksum_composite = false;
  meta.parts.clear();
  meta.delete_marker = false;
  if (options.before_commit) {
    Status st = options.before_commit(in.digest, meta);
    if (!st.ok()) return st;
    meta.key = std::string(key);
    meta.size = in.digest.size;
  }

  std::vector<Piece> pieces;
  if (in.digest.size > 0) pieces.push_back(in.AsPiece());

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
    STRATA_RETURN_IF_ERROR(StageCurrent(bucket, key, dbkey, cur, meta, pieces, &b, &garbage));
    AddBody(&b, in);
    if (in.is_file) b.Delete(GarbageKey(in.file));
    STRATA_RETURN_IF_ERROR(CommitIngested(b, in));
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
  if (!options.data_key.empty())
    return Status::NotSupported("appending to an object sealed at rest is not supported");
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
        if (p.sealed)
          return Status::NotSupported("object " + Q(key) + " in bucket " + Q(bucket) +
                                      " is sealed at rest; appending to it is not supported");
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
  meta.mtime_ns = NowUnixNanos();
  meta.parts.clear();
  meta.checksum_composite = false;
  if (!existed) {
    meta.size = in.digest.size;
    meta.etag = HexEncode(in.digest.md5);
    meta.checksum_algorithm = alg;
    meta.checksum = in.digest.checksum.empty() ? "" : Base64Encode(in.digest.checksum);
  } else {
    meta.size = base.size + in.digest.size;
    // Not a content MD5 (that would need the old bytes): a digest of the previous
    // ETag and the appended bytes' MD5, so every version has a distinct ETag.
    meta.etag = HexEncode(Md5(base.etag + in.digest.md5));
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
    STRATA_RETURN_IF_ERROR(RefuseIfVersionedLocked(bucket, "appending to an object"));
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
    STRATA_RETURN_IF_ERROR(CommitIngested(b, in));
    NoteCommitLocked(ref);
  }
  objects_put_.fetch_add(1, std::memory_order_relaxed);
  return meta;
}

Result<ObjectMeta> LocalEngineImpl::CopyObject(std::string_view src_bucket,
                                               std::string_view src_key,
                                               std::string_view dst_bucket,
                                               std::string_view dst_key,
                                               std::optional<ObjectMeta> meta, PutOptions options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(dst_bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<LocalObjectReader> reader,
      OpenReader(src_bucket, src_key, options.source_key ? &options.source_key : nullptr,
                 options.source_version_id));
  const ObjectMeta& src = reader->meta();
  ObjectMeta m = meta ? std::move(*meta) : src;
  m.version_id.clear();
  m.version_order = 0;
  m.delete_marker = false;
  if (!options.meta.owner.empty()) m.owner = options.meta.owner;
  if (options.checksum_algorithm == ChecksumAlgorithm::kNone) {
    options.checksum_algorithm = src.checksum_algorithm;
  }
  options.meta = std::move(m);
  options.expected_size = src.size;
  ReaderSource source(*reader);
  return PutInternal(dst_bucket, dst_key, source, options);
}

Result<ObjectMeta> LocalEngineImpl::RenameObject(std::string_view bucket, std::string_view src_key,
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
    STRATA_RETURN_IF_ERROR(RefuseIfVersionedLocked(bucket, "renaming an object"));
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
  return UpdateObjectMeta(bucket, key, [&](ObjectMeta& meta) {
    meta.tags = std::move(tags);
    return Status::Ok();
  });
}

Status LocalEngineImpl::UpdateObjectMeta(std::string_view bucket, std::string_view key,
                                         const std::function<Status(ObjectMeta&)>& update) {
  return UpdateVersionMeta(bucket, key, "", update);
}

}  // namespace strata::objstore::engine_detail
