// LocalEngine's versioning: staging a write into the version space (V rows,
// N pointers; see record.h), deleting current objects and single versions,
// reading a version and ListObjectVersions. Every change is staged in the
// caller's one WriteBatch, under the key's stripe lock and buckets_mu_ shared.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <strata/core/clock.h>
#include <strata/core/coding.h>

#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {
namespace {

constexpr std::string_view kNullId = "null";

Status BadVersionId(std::string_view id) {
  return Status::InvalidArgument("Invalid version id specified: " + Q(id));
}

}  // namespace

LocalEngineImpl::Versioning LocalEngineImpl::VersioningLocked(std::string_view bucket) {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return Versioning::kOff;
  const std::string* v = it->second.Config(kVersioningConfig);
  if (v == nullptr) return Versioning::kOff;
  return *v == "Enabled" ? Versioning::kEnabled : Versioning::kSuspended;
}

uint64_t LocalEngineImpl::NextVersionOrder() {
  // Wall-clock nanoseconds, strictly increasing within the process: ids order
  // by time across restarts (as long as the clock does not step back).
  uint64_t now = static_cast<uint64_t>(NowUnixNanos());
  uint64_t last = last_order_.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t next = std::max(now, last + 1);
    if (last_order_.compare_exchange_weak(last, next, std::memory_order_relaxed)) return next;
  }
}

Status LocalEngineImpl::GetNullOrder(std::string_view bucket, std::string_view key,
                                     uint64_t* order) {
  rocksdb::PinnableSlice v;
  bool found = false;
  STRATA_RETURN_IF_ERROR(Get(NullVersionKey(bucket, key), &v, &found));
  *order = 0;
  if (found && v.size() == 8) *order = DecodeBigEndian64(v.data());
  return Status::Ok();
}

Status LocalEngineImpl::StageCurrent(std::string_view bucket, std::string_view key,
                                     const std::string& dbkey, const Current& cur, ObjectMeta& meta,
                                     const std::vector<Piece>& pieces, rocksdb::WriteBatch* b,
                                     std::vector<FileId>* garbage) {
  const Versioning state = VersioningLocked(bucket);
  meta.version_order = 0;
  meta.version_id.clear();
  if (state == Versioning::kOff) {
    if (cur.exists) STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), b, garbage));
    if (meta.delete_marker) {
      b->Delete(dbkey);
      return Status::Ok();
    }
    std::string value;
    EncodeObject(meta, pieces, &value);
    b->Put(dbkey, value);
    return Status::Ok();
  }
  const uint64_t order = NextVersionOrder();
  meta.version_order = order;
  meta.version_id = state == Versioning::kEnabled ? VersionIdFromOrder(order) : "";
  if (cur.exists && cur.meta.version_order == 0) {
    // Written before versioning was set: the key's null version.
    if (state == Versioning::kSuspended) {
      STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), b, garbage));
    } else {
      ObjectMeta old;
      std::vector<Piece> old_pieces;
      STRATA_RETURN_IF_ERROR(DecodeObject(cur.value.ToStringView(), &old, &old_pieces));
      old.version_order = std::min<uint64_t>(static_cast<uint64_t>(old.mtime_ns), order - 1);
      old.version_id.clear();
      std::string v;
      EncodeObject(old, old_pieces, &v);
      b->Put(VersionKey(bucket, key, old.version_order), v);
      std::string ptr;
      PutBigEndian64(&ptr, old.version_order);
      b->Put(NullVersionKey(bucket, key), ptr);
    }
  }
  if (state == Versioning::kSuspended) {
    uint64_t null_order = 0;
    STRATA_RETURN_IF_ERROR(GetNullOrder(bucket, key, &null_order));
    if (null_order != 0) {
      const std::string vkey = VersionKey(bucket, key, null_order);
      rocksdb::PinnableSlice old;
      bool found = false;
      STRATA_RETURN_IF_ERROR(Get(vkey, &old, &found));
      if (found) {
        STRATA_RETURN_IF_ERROR(AddGarbage(old.ToStringView(), b, garbage));
        b->Delete(vkey);
      }
    }
    std::string ptr;
    PutBigEndian64(&ptr, order);
    b->Put(NullVersionKey(bucket, key), ptr);
  }
  std::string value;
  EncodeObject(meta, pieces, &value);
  b->Put(VersionKey(bucket, key, order), value);
  if (meta.delete_marker) {
    b->Delete(dbkey);
  } else {
    b->Put(dbkey, value);
  }
  return Status::Ok();
}

Status LocalEngineImpl::ResolveVersion(std::string_view bucket, std::string_view key,
                                       std::string_view version_id, std::string* dbkey) {
  if (version_id.empty()) {
    *dbkey = ObjectKey(bucket, key);
    return Status::Ok();
  }
  if (version_id == kNullId) {
    rocksdb::PinnableSlice v;
    bool found = false;
    *dbkey = ObjectKey(bucket, key);
    STRATA_RETURN_IF_ERROR(Get(*dbkey, &v, &found));
    if (found) {
      ObjectMeta m;
      STRATA_RETURN_IF_ERROR(DecodeObjectSummary(v.ToStringView(), &m));
      if (m.version_order == 0) return Status::Ok();  // written before versioning
    }
    uint64_t order = 0;
    STRATA_RETURN_IF_ERROR(GetNullOrder(bucket, key, &order));
    if (order == 0) {
      dbkey->clear();  // no null version
      return Status::Ok();
    }
    *dbkey = VersionKey(bucket, key, order);
    return Status::Ok();
  }
  uint64_t order = 0;
  if (!OrderFromVersionId(version_id, &order)) return BadVersionId(version_id);
  *dbkey = VersionKey(bucket, key, order);
  return Status::Ok();
}

Result<DeleteResult> LocalEngineImpl::DeleteCurrent(std::string_view bucket, std::string_view key) {
  return DeleteCurrentIf(bucket, key, nullptr);
}

Status LocalEngineImpl::DeleteObject(std::string_view bucket, std::string_view key) {
  return DeleteCurrent(bucket, key).status();
}

// The lifecycle worker's expiry goes through the same path as DeleteObject,
// so a versioned bucket gets a delete marker and keeps the expired version.
Status LocalEngineImpl::DeleteObjectIfUnchanged(std::string_view bucket, std::string_view key,
                                                std::string_view etag, int64_t mtime_ns) {
  const Unchanged seen{etag, mtime_ns};
  return DeleteCurrentIf(bucket, key, &seen).status();
}

Result<DeleteResult> LocalEngineImpl::DeleteCurrentIf(std::string_view bucket,
                                                      std::string_view key,
                                                      const Unchanged* seen) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  std::vector<FileId> garbage;
  DeleteResult res;
  {
    std::lock_guard lk(ref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    Current cur;
    STRATA_RETURN_IF_ERROR(ReadCurrent(dbkey, &cur));
    const bool versioned = VersioningLocked(bucket) != Versioning::kOff;
    if (seen != nullptr) {
      if (!cur.exists) return res;  // already gone: nothing to expire
      if (cur.meta.etag != seen->etag || cur.meta.mtime_ns != seen->mtime_ns)
        return Status::PreconditionFailed("object \"" + std::string(key) + "\" in bucket \"" +
                                          std::string(bucket) + "\" changed since it was read");
    }
    if (!cur.exists && !versioned) return res;
    ObjectMeta marker;
    marker.key = std::string(key);
    marker.delete_marker = true;
    marker.mtime_ns = NowUnixNanos();
    rocksdb::WriteBatch b;
    STRATA_RETURN_IF_ERROR(StageCurrent(bucket, key, dbkey, cur, marker, {}, &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(ref);
    res.delete_marker = versioned;
    res.version_id = marker.version_id;
  }
  CollectGarbage(garbage);
  return res;
}

Result<DeleteResult> LocalEngineImpl::DeleteVersion(std::string_view bucket, std::string_view key,
                                                    std::string_view version_id) {
  return DeleteVersionIf(bucket, key, version_id, nullptr);
}

Result<DeleteResult> LocalEngineImpl::DeleteVersionIf(
    std::string_view bucket, std::string_view key, std::string_view version_id,
    const std::function<Status(const ObjectMeta&)>& allow) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (version_id.empty()) return DeleteCurrent(bucket, key);
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  std::vector<FileId> garbage;
  DeleteResult res;
  res.version_id = version_id == kNullId ? "" : std::string(version_id);
  {
    std::lock_guard lk(ref.stripe->mu);
    std::shared_lock bl(buckets_mu_);
    STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
    std::string vkey;
    STRATA_RETURN_IF_ERROR(ResolveVersion(bucket, key, version_id, &vkey));
    if (vkey.empty()) return res;
    rocksdb::PinnableSlice v;
    bool found = false;
    STRATA_RETURN_IF_ERROR(Get(vkey, &v, &found));
    if (!found) return res;
    ObjectMeta m;
    if (allow) {
      STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &m, nullptr));
      m.key = std::string(key);
      STRATA_RETURN_IF_ERROR(allow(m));
    } else {
      STRATA_RETURN_IF_ERROR(DecodeObjectSummary(v.ToStringView(), &m));
    }
    res.delete_marker = m.delete_marker;
    rocksdb::WriteBatch b;
    STRATA_RETURN_IF_ERROR(AddGarbage(v.ToStringView(), &b, &garbage));
    b.Delete(vkey);
    if (vkey == dbkey) {
      // The null version written before versioning: it is the only one.
      STRATA_RETURN_IF_ERROR(Write(b));
      NoteCommitLocked(ref);
    } else {
      if (m.version_id.empty()) b.Delete(NullVersionKey(bucket, key));
      // If it was the newest version, the next one becomes current.
      const std::string vprefix = VersionKeyPrefix(bucket, key);
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
      it->Seek(vprefix);
      if (it->Valid() && it->key() == rocksdb::Slice(vkey)) {
        it->Next();
        ObjectMeta next;
        bool has_next = it->Valid() && it->key().starts_with(vprefix);
        if (has_next)
          STRATA_RETURN_IF_ERROR(DecodeObjectSummary(it->value().ToStringView(), &next));
        if (has_next && !next.delete_marker) {
          b.Put(dbkey, it->value());
        } else {
          b.Delete(dbkey);
        }
      }
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "read versions"));
      STRATA_RETURN_IF_ERROR(Write(b));
      NoteCommitLocked(ref);
    }
  }
  CollectGarbage(garbage);
  return res;
}

Result<ObjectMeta> LocalEngineImpl::HeadVersion(std::string_view bucket, std::string_view key,
                                                std::string_view version_id) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  rocksdb::PinnableSlice v;
  bool found = false;
  if (version_id.empty()) {
    // The newest version, a delete marker too.
    const std::string vprefix = VersionKeyPrefix(bucket, key);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    it->Seek(vprefix);
    if (it->Valid() && it->key().starts_with(vprefix)) {
      ObjectMeta meta;
      STRATA_RETURN_IF_ERROR(DecodeObject(it->value().ToStringView(), &meta, nullptr));
      meta.key = std::string(key);
      meta.is_latest = true;
      return meta;
    }
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "read versions"));
    return HeadObject(bucket, key);
  }
  std::string vkey;
  STRATA_RETURN_IF_ERROR(ResolveVersion(bucket, key, version_id, &vkey));
  if (!vkey.empty()) STRATA_RETURN_IF_ERROR(Get(vkey, &v, &found));
  if (!found) {
    return Status::NotFound("version " + Q(version_id) + " of object " + Q(key) +
                            " does not exist in bucket " + Q(bucket));
  }
  ObjectMeta meta;
  STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &meta, nullptr));
  meta.key = std::string(key);
  return meta;
}

Status LocalEngineImpl::UpdateVersionMeta(std::string_view bucket, std::string_view key,
                                          std::string_view version_id,
                                          const std::function<Status(ObjectMeta&)>& update) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string dbkey = ObjectKey(bucket, key);
  const KeyRef ref = Ref(dbkey);
  std::lock_guard lk(ref.stripe->mu);
  std::shared_lock bl(buckets_mu_);
  STRATA_RETURN_IF_ERROR(BucketExistsLocked(bucket));
  std::string vkey;
  STRATA_RETURN_IF_ERROR(ResolveVersion(bucket, key, version_id, &vkey));
  rocksdb::PinnableSlice v;
  bool found = false;
  if (!vkey.empty()) STRATA_RETURN_IF_ERROR(Get(vkey, &v, &found));
  if (!found) {
    if (version_id.empty()) return NoObject(bucket, key);
    return Status::NotFound("version " + Q(version_id) + " of object " + Q(key) +
                            " does not exist in bucket " + Q(bucket));
  }
  ObjectMeta meta;
  std::vector<Piece> pieces;
  STRATA_RETURN_IF_ERROR(DecodeObject(v.ToStringView(), &meta, &pieces));
  if (meta.delete_marker) {
    return Status::NotSupported("version " + Q(version_id) + " of object " + Q(key) +
                                " is a delete marker");
  }
  meta.key = std::string(key);
  STRATA_RETURN_IF_ERROR(update(meta));
  std::string value;
  EncodeObject(meta, pieces, &value);
  rocksdb::WriteBatch b;
  // A versioned record lives twice when it is current (V row and O row).
  const std::string other =
      vkey == dbkey ? (meta.version_order ? VersionKey(bucket, key, meta.version_order) : "")
                    : dbkey;
  b.Put(vkey, value);
  if (!other.empty()) {
    rocksdb::PinnableSlice ov;
    bool ofound = false;
    STRATA_RETURN_IF_ERROR(Get(other, &ov, &ofound));
    ObjectMeta om;
    if (ofound) STRATA_RETURN_IF_ERROR(DecodeObjectSummary(ov.ToStringView(), &om));
    if (ofound && om.version_order == meta.version_order) b.Put(other, value);
  }
  return Write(b);
}

Result<VersionListResult> LocalEngineImpl::ListObjectVersions(std::string_view bucket,
                                                              const VersionListOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckBucket(bucket));
  const int max_keys = std::clamp(options.max_keys, 0, 1000);
  const std::string vbase = VersionKeyPrefix(bucket);
  const std::string obase = ObjectKeyPrefix(bucket);
  const std::string_view prefix = options.prefix;
  const std::string_view delim = options.delimiter;
  const std::string& km = options.key_marker;
  // Two ordered streams merged by key: V rows (every version of keys written
  // since versioning was set) and O rows with order 0 (null versions written
  // before). A key is in one stream only.
  std::unique_ptr<rocksdb::Iterator> vit(db_->NewIterator(rocksdb::ReadOptions()));
  std::unique_ptr<rocksdb::Iterator> oit(db_->NewIterator(rocksdb::ReadOptions()));
  uint64_t steps = 2;
  const std::string vlower = vbase + std::string(prefix);
  const std::string olower = obase + std::string(prefix);
  bool mid_key = false;  // vit starts inside km's versions (after version_id_marker)
  if (km.empty() || km < prefix) {
    vit->Seek(vlower);
    oit->Seek(olower);
  } else {
    oit->Seek(ObjectKey(bucket, km) + std::string(1, '\0'));
    std::string vkey;
    if (!options.version_id_marker.empty()) {
      STRATA_RETURN_IF_ERROR(ResolveVersion(bucket, km, options.version_id_marker, &vkey));
      if (vkey.starts_with(vbase)) {
        vit->Seek(vkey);
        if (vit->Valid() && vit->key() == rocksdb::Slice(vkey)) vit->Next();
        mid_key = true;
      } else {
        vkey.clear();
      }
    }
    if (vkey.empty()) vit->Seek(PrefixSuccessor(VersionKeyPrefix(bucket, km)));
  }
  // Positions oit on the next null version written before versioning, looking
  // no further than `limit` (the next V key): O rows of versioned keys are
  // copies of V rows, so oit moves in step with vit and a page stays O(page).
  auto skip_versioned = [&](std::string_view limit, bool bounded) -> Status {
    while (oit->Valid() && oit->key().starts_with(obase)) {
      if (bounded && oit->key().ToStringView().substr(obase.size()) > limit) break;
      ObjectMeta m;
      STRATA_RETURN_IF_ERROR(DecodeObjectSummary(oit->value().ToStringView(), &m));
      if (m.version_order == 0) break;
      oit->Next();
      ++steps;
    }
    return Status::Ok();
  };
  VersionListResult res;
  int count = 0;
  std::string prev_vkey;  // key of the previous V row, for IsLatest
  if (mid_key) prev_vkey = km;
  for (;;) {
    std::string_view vkey, okey;
    bool has_v = vit->Valid() && vit->key().starts_with(vbase);
    if (has_v) {
      std::string_view k = vit->key().ToStringView().substr(vbase.size());
      if (k.size() < 9) return Status::Corruption("malformed version key in bucket " + Q(bucket));
      vkey = k.substr(0, k.size() - 9);
      has_v = vkey.starts_with(prefix);
    }
    STRATA_RETURN_IF_ERROR(skip_versioned(vkey, has_v));
    bool has_o = oit->Valid() && oit->key().starts_with(obase);
    if (has_o) {
      okey = oit->key().ToStringView().substr(obase.size());
      has_o = okey.starts_with(prefix);
    }
    if (!has_v && !has_o) break;
    const bool from_v = has_v && (!has_o || vkey <= okey);
    const std::string_view key = from_v ? vkey : okey;
    if (!delim.empty()) {
      size_t pos = key.find(delim, prefix.size());
      if (pos != std::string_view::npos) {
        std::string cp(key.substr(0, pos + delim.size()));
        if (km.empty() || cp > km) {
          if (count == max_keys) {
            res.truncated = true;
            break;
          }
          res.common_prefixes.push_back(cp);
          res.next_key_marker = cp;
          res.next_version_id_marker.clear();
          ++count;
        }
        std::string next = PrefixSuccessor(cp);
        vit->Seek(vbase + next);
        oit->Seek(obase + next);
        steps += 2;
        continue;
      }
    }
    if (count == max_keys) {
      res.truncated = true;
      break;
    }
    ObjectMeta m;
    rocksdb::Iterator* it = from_v ? vit.get() : oit.get();
    Status st = DecodeObjectSummary(it->value().ToStringView(), &m);
    if (!st.ok()) return st.WithContext("object " + Q(key) + " in bucket " + Q(bucket));
    m.key = std::string(key);
    if (from_v) {
      m.is_latest = prev_vkey != key;
      prev_vkey = m.key;
    } else {
      m.is_latest = true;
    }
    res.next_key_marker = m.key;
    res.next_version_id_marker = m.version_id.empty() ? std::string(kNullId) : m.version_id;
    res.versions.push_back(std::move(m));
    ++count;
    it->Next();
    ++steps;
  }
  list_steps_.fetch_add(steps, std::memory_order_relaxed);
  STRATA_RETURN_IF_ERROR(FromRocks(vit->status(), "list versions"));
  STRATA_RETURN_IF_ERROR(FromRocks(oit->status(), "list versions"));
  if (!res.truncated) {
    res.next_key_marker.clear();
    res.next_version_id_marker.clear();
  }
  return res;
}

}  // namespace strata::objstore::engine_detail
