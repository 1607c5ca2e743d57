// The conditional delete of the lifecycle worker (see LocalEngine::DeleteObjectIfUnchanged).
#include <string>
#include <string_view>
#include <vector>

#include "objstore/local_engine_impl.h"

namespace strata::objstore::engine_detail {

Status LocalEngineImpl::DeleteObjectIfUnchanged(std::string_view bucket, std::string_view key,
                                                std::string_view etag, int64_t mtime_ns) {
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
    if (cur.meta.etag != etag || cur.meta.mtime_ns != mtime_ns)
      return Status::PreconditionFailed("object \"" + std::string(key) + "\" in bucket \"" +
                                        std::string(bucket) + "\" changed since it was read");
    rocksdb::WriteBatch b;
    b.Delete(dbkey);
    STRATA_RETURN_IF_ERROR(AddGarbage(cur.value.ToStringView(), &b, &garbage));
    STRATA_RETURN_IF_ERROR(Write(b));
    NoteCommitLocked(ref);
  }
  CollectGarbage(garbage);
  return Status::Ok();
}

}  // namespace strata::objstore::engine_detail
