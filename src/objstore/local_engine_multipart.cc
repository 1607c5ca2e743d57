// LocalEngine's multipart uploads: Create, UploadPart (a part is ingested as
// an object body is), Complete (commits the part list by reference, with the
// multipart ETag and composite checksum), Abort, ListParts, GetUpload and
// ListMultipartUploads.
#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <strata/core/clock.h>
#include <strata/core/coding.h>
#include <strata/core/md5_mb.h>
#include <strata/core/strings.h>

#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {
namespace {

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

// The list a Complete names: not empty, ascending part numbers. S3 answers
// InvalidPartOrder for a list out of ascending order; a part listed twice
// names no part of the upload as listed: InvalidPart.
Status CheckPartList(const std::vector<CompletePart>& parts) {
  if (parts.empty()) {
    return Status::InvalidArgument("InvalidPart: the part list is empty; give at least one part");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].number == parts[i - 1].number) {
      return Status::InvalidArgument("InvalidPart: part " + std::to_string(parts[i].number) +
                                     " is listed more than once");
    }
    if (parts[i].number < parts[i - 1].number) {
      return Status::InvalidArgument("InvalidPartOrder: part numbers must be ascending, but part " +
                                     std::to_string(parts[i].number) + " follows part " +
                                     std::to_string(parts[i - 1].number));
    }
  }
  return Status::Ok();
}

}  // namespace

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
  r.initiated_ns = NowUnixNanos();
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
      Ingest(body, options_.inline_threshold, alg, options.expected_size, &in, options.data_key));
  ObjectMeta pm;
  pm.key = std::string(key);
  pm.size = in.digest.size;
  pm.etag = HexEncode(in.digest.md5);
  pm.mtime_ns = NowUnixNanos();
  pm.checksum_algorithm = alg;
  pm.checksum = in.digest.checksum.empty() ? "" : Base64Encode(in.digest.checksum);
  if (options.before_commit) {
    Status st = options.before_commit(in.digest, pm);
    if (!st.ok()) return st;
  }
  PartRecord pr;
  pr.size = in.digest.size;
  pr.mtime_ns = pm.mtime_ns;
  pr.etag = HexEncode(in.digest.md5);
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
    STRATA_RETURN_IF_ERROR(CommitIngested(b, in));
  }
  CollectGarbage(garbage);
  PartInfo info;
  info.number = part_number;
  info.size = pr.size;
  info.etag = pr.etag;
  info.mtime_ns = pr.mtime_ns;
  info.checksum = pr.checksum;
  info.checksum_algorithm = pr.checksum_algorithm;
  return info;
}

Result<ObjectMeta> LocalEngineImpl::CompleteMultipartUpload(std::string_view bucket,
                                                            std::string_view key,
                                                            std::string_view upload_id,
                                                            const std::vector<CompletePart>& parts,
                                                            const CompleteOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  STRATA_RETURN_IF_ERROR(ValidateUploadId(upload_id));
  STRATA_RETURN_IF_ERROR(CheckPartList(parts));
  {
    UploadRecord probe;
    Status st = ReadUpload(bucket, key, upload_id, &probe);
    if (st.IsNotFound()) return CompletedResult(bucket, key, upload_id, parts);
    STRATA_RETURN_IF_ERROR(st);
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
        int n = static_cast<int>(DecodeBigEndian32(k.data() + pp.size()));
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
        return Status::InvalidArgument("EntityTooSmall: part " + std::to_string(cp.number) +
                                       " is " + std::to_string(pr.size) +
                                       " bytes; every part but the last must be at least " +
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
    meta.mtime_ns = NowUnixNanos();
    meta.etag = HexEncode(Md5(md5s)) + "-" + std::to_string(parts.size());
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
                    [](const Piece& p) { return p.kind == Piece::kInline && !p.sealed; })) {
      merged.reserve(total);
      for (const Piece& p : pieces) merged.append(p.data);
      pieces.resize(1);
      pieces[0].data = merged;
      pieces[0].length = merged.size();
    }
    meta.delete_marker = false;
    rocksdb::WriteBatch b;
    STRATA_RETURN_IF_ERROR(StageCurrent(bucket, key, dbkey, cur, meta, pieces, &b, &garbage));
    b.Delete(ukey);
    std::set<int> used;
    for (const CompletePart& cp : parts) used.insert(cp.number);
    for (const auto& [n, pr] : stored) {
      b.Delete(PartKey(upload_id, n));
      if (!used.count(n)) DropPiece(pr.piece, &b, &garbage);
    }
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(oref);
  }
  CollectGarbage(garbage);
  objects_put_.fetch_add(1, std::memory_order_relaxed);
  RememberCompleted(upload_id,
                    CompletedUpload{std::string(bucket), std::string(key), PartsFingerprint(parts),
                                    meta.etag, meta.mtime_ns, MonotonicNanos()});
  return meta;
}

std::string LocalEngineImpl::PartsFingerprint(const std::vector<CompletePart>& parts) {
  std::string f;
  for (const CompletePart& p : parts) {
    f += std::to_string(p.number);
    f += ':';
    f += NormalizeEtag(p.etag);
    f += ';';
  }
  return f;
}

void LocalEngineImpl::RememberCompleted(std::string_view upload_id, CompletedUpload c) {
  std::lock_guard lk(completed_mu_);
  auto [it, inserted] = completed_.insert_or_assign(std::string(upload_id), std::move(c));
  if (inserted) completed_order_.push_back(it->first);
  while (completed_.size() > kMaxCompletedUploads) {
    completed_.erase(completed_order_.front());
    completed_order_.pop_front();
  }
}

Result<ObjectMeta> LocalEngineImpl::CompletedResult(std::string_view bucket, std::string_view key,
                                                    std::string_view upload_id,
                                                    const std::vector<CompletePart>& parts) {
  CompletedUpload rec;
  {
    std::lock_guard lk(completed_mu_);
    auto it = completed_.find(upload_id);
    if (it == completed_.end() ||
        MonotonicNanos() - it->second.completed_ns > kCompletedUploadTtlNs)
      return NoUpload(upload_id);
    rec = it->second;
  }
  if (rec.bucket != bucket || rec.key != key || rec.parts != PartsFingerprint(parts))
    return NoUpload(upload_id);
  Result<ObjectMeta> m = HeadObject(bucket, key);
  if (!m.ok()) {
    if (m.error().IsNotFound()) return NoUpload(upload_id);
    return m.error();
  }
  if (m->etag != rec.etag || m->mtime_ns != rec.mtime_ns) return NoUpload(upload_id);
  return m;
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
    STRATA_RETURN_IF_ERROR(DropUploadParts(std::string(upload_id), &b, &garbage));
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
    info.number = static_cast<int>(DecodeBigEndian32(k.data() + pp.size()));
    info.size = pr.size;
    info.etag = std::move(pr.etag);
    info.mtime_ns = pr.mtime_ns;
    info.checksum = std::move(pr.checksum);
    info.checksum_algorithm = pr.checksum_algorithm;
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
    u.storage_class = std::move(r.meta.storage_class);
    out.push_back(std::move(u));
  }
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "list uploads"));
  return out;
}

}  // namespace strata::objstore::engine_detail
