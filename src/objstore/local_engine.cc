// LocalEngine's shared helpers (RocksDB status mapping, name validation,
// write conditions), its buckets, and the test hooks of local_engine_internal.h.
// The engine itself is split by concept: local_engine_{open,write,read,multipart}.cc.
#include <memory>
#include <string>
#include <vector>

#include <strata/core/clock.h>
#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "objstore/local_engine_impl.h"
#include "objstore/local_engine_internal.h"

namespace strata::objstore::engine_detail {

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

std::string NormalizeEtag(std::string_view e) { return ToLower(UnquoteETag(e)); }

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

// ---- buckets ------------------------------------------------------------------

Status LocalEngineImpl::CreateBucket(std::string_view name, std::string_view owner) {
  STRATA_RETURN_IF_ERROR(ValidateBucketName(name));
  std::unique_lock lk(buckets_mu_);
  if (buckets_.find(name) != buckets_.end()) {
    return Status::AlreadyExists("bucket " + Q(name) + " already exists");
  }
  BucketRecord r;
  r.created_ns = NowUnixNanos();
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
    {
      // Versions and delete markers count too (S3: BucketNotEmpty).
      const std::string versions = VersionKeyPrefix(name);
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
      it->Seek(versions);
      if (it->Valid() && it->key().starts_with(versions))
        return Status::PreconditionFailed("bucket " + Q(name) +
                                          " is not empty: it holds object versions");
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
    for (const std::string& id : upload_ids) STRATA_RETURN_IF_ERROR(DropUploadParts(id, &b, &garbage));
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
  return UpdateBucket(name, [&](BucketInfo& b) { b.public_read = public_read; });
}

Status LocalEngineImpl::SetBucketConfig(std::string_view bucket, std::string_view name,
                                        std::optional<std::string> value) {
  if (name.empty()) return Status::InvalidArgument("bucket configuration name is empty");
  return UpdateBucket(bucket, [&](BucketInfo& b) {
    auto next = b.configs ? std::make_shared<std::map<std::string, std::string>>(*b.configs)
                          : std::make_shared<std::map<std::string, std::string>>();
    if (value) {
      (*next)[std::string(name)] = std::move(*value);
    } else {
      next->erase(std::string(name));
    }
    b.configs = std::move(next);
  });
}

// Writes the bucket record with `edit` applied; the cached info changes only
// once the record is durable.
Status LocalEngineImpl::UpdateBucket(std::string_view name,
                                     const std::function<void(BucketInfo&)>& edit) {
  std::unique_lock lk(buckets_mu_);
  auto it = buckets_.find(name);
  if (it == buckets_.end()) return NoBucket(name);
  BucketInfo next = it->second;
  edit(next);
  BucketRecord r;
  r.created_ns = next.created_ns;
  r.owner = next.owner;
  r.public_read = next.public_read;
  if (next.configs) r.configs = *next.configs;
  std::string value;
  EncodeBucket(r, &value);
  rocksdb::WriteBatch b;
  b.Put(BucketKey(name), value);
  STRATA_RETURN_IF_ERROR(Write(b));
  it->second = std::move(next);
  return Status::Ok();
}

}  // namespace strata::objstore::engine_detail

namespace strata::objstore {

using engine_detail::LocalEngineImpl;

namespace internal {

uint64_t ListIteratorSteps(LocalEngine& engine) {
  return static_cast<LocalEngineImpl&>(engine).list_steps();
}

std::string FirstDataFilePath(LocalEngine& engine, std::string_view bucket, std::string_view key) {
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
