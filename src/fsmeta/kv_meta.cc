// KvMeta's core: what every operation file uses. The backend transaction
// (Txn: kv_meta_cache.cc), inode and slice ids handed out in batches, the soft
// capacity and inode limits (CheckSpace), permission checks (Access, InGroup,
// Sticky), and the volume format (Init, LoadFormat, Destroy).
//
// Every public operation is one backend transaction (Redis bodies may rerun on
// conflict, so they only touch the transaction and locals). Local state:
// the cached Format, the inode/slice id batches (guarded by id_mu_) and this
// client's open-file counts (guarded by open_mu_), which decide whether an
// unlinked file is freed at once or sustained until its last Close.
#include "fsmeta/kv_meta.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>

#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/metrics.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

std::string_view KvMeta::Backend() const { return kv_->Name(); }

Status KvMeta::Access(const Context& ctx, const Attr& a, int mask) const {
  if (!ctx.check_permission || mask == 0) return Status::Ok();
  if (ctx.uid == 0) {
    // root: everything but executing a file that nobody may execute.
    if ((mask & X_OK) && !IsDir(a) && (a.mode & 0111) == 0) {
      return FsError(EACCES, "no execute permission for anyone");
    }
    return Status::Ok();
  }
  const uint32_t m = static_cast<uint32_t>(mask);
  // With POSIX ACLs the kernel has evaluated the ACL before sending the
  // request (FUSE_CAP_POSIX_ACL implies default_permissions), and for anyone
  // but the owner (whose bits the ACL's owner entry always equals) the mode
  // alone would refuse what a named entry grants. The mode still bounds every
  // entry: a named user or group gets at most the group bits (the mask), the
  // rest the other bits; so what neither grants is refused here, also when
  // the kernel's cached mode is older than a chmod on another mount.
  if (ctx.kernel_checked_acl && ctx.uid != a.uid) {
    const uint32_t group = (a.mode >> 3) & 7, other = a.mode & 7;
    if ((m & group) == m || (m & other) == m) return Status::Ok();
    return FsError(EACCES, "permission denied for uid " + std::to_string(ctx.uid) + " (mode " +
                               std::to_string(a.mode & 07777) + ")");
  }
  uint32_t bits;
  if (ctx.uid == a.uid) {
    bits = (a.mode >> 6) & 7;
  } else if (InGroup(ctx, a.gid)) {
    bits = (a.mode >> 3) & 7;
  } else {
    bits = a.mode & 7;
  }
  if ((m & bits) != m) {
    return FsError(EACCES, "permission denied for uid " + std::to_string(ctx.uid) + " (mode " +
                               std::to_string(a.mode & 07777) + ")");
  }
  return Status::Ok();
}

bool KvMeta::InGroup(const Context& ctx, uint32_t gid) const {
  if (ctx.gid == gid) return true;
  return std::find(ctx.gids.begin(), ctx.gids.end(), gid) != ctx.gids.end();
}

Status KvMeta::Sticky(const Context& ctx, const Attr& dir, const Attr& victim) const {
  if (!ctx.check_permission || ctx.uid == 0 || !(dir.mode & S_ISVTX)) return Status::Ok();
  if (ctx.uid == dir.uid || ctx.uid == victim.uid) return Status::Ok();
  return FsError(EPERM, "sticky directory: only the owner may remove or rename this entry");
}

Result<Ino> KvMeta::NextInode() {
  std::lock_guard<std::mutex> lock(id_mu_);
  if (next_ino_ >= ino_end_) {
    constexpr int64_t kBatch = 100;
    STRATA_ASSIGN_OR_RETURN(int64_t v, kv_->Incr(kNextInode, kBatch));
    next_ino_ = static_cast<Ino>(v - kBatch + 1);
    ino_end_ = static_cast<Ino>(v + 1);
  }
  return next_ino_++;
}

Result<uint64_t> KvMeta::NewSliceId() {
  std::lock_guard<std::mutex> lock(id_mu_);
  if (next_slice_ >= slice_end_) {
    constexpr int64_t kBatch = 1000;
    STRATA_ASSIGN_OR_RETURN(int64_t v, kv_->Incr(kNextSlice, kBatch));
    next_slice_ = static_cast<uint64_t>(v - kBatch + 1);
    slice_end_ = static_cast<uint64_t>(v + 1);
  }
  return next_slice_++;
}

int KvMeta::TrashDays() {
  std::lock_guard<std::mutex> lock(fmt_mu_);
  return format_ ? format_->trash_days : 0;
}

Status KvMeta::CheckSpace(int64_t space_delta, int64_t inode_delta) {
  uint64_t capacity = 0, inode_limit = 0;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    if (format_) {
      capacity = format_->capacity;
      inode_limit = format_->inodes;
    }
  }
  if ((capacity == 0 || space_delta <= 0) && (inode_limit == 0 || inode_delta <= 0)) {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(quota_mu_);
  int64_t now = NowUnixNanos();
  if (now - quota_read_ns_ > 1000000000) {
    std::optional<std::string> u, i;
    STRATA_RETURN_IF_ERROR(kv_->Txn(
        [&](KvTxn& t) {
          u = t.Get(kUsedSpace);
          i = t.Get(kInodes);
          return Status::Ok();
        },
        true));
    cached_used_ = u ? std::stoll(*u) : 0;
    cached_inodes_ = i ? std::stoll(*i) : 0;
    quota_read_ns_ = now;
  }
  if (capacity && space_delta > 0 && cached_used_ + space_delta > static_cast<int64_t>(capacity)) {
    return FsError(ENOSPC, "volume capacity of " + std::to_string(capacity) + " bytes reached");
  }
  if (inode_limit && inode_delta > 0 &&
      cached_inodes_ + inode_delta > static_cast<int64_t>(inode_limit)) {
    return FsError(ENOSPC, "volume inode limit of " + std::to_string(inode_limit) + " reached");
  }
  cached_used_ += space_delta;
  cached_inodes_ += inode_delta;
  return Status::Ok();
}

bool KvMeta::MarkSustainedIfOpen(Ino ino) {
  std::lock_guard<std::mutex> lock(open_mu_);
  auto it = open_.find(ino);
  if (it == open_.end() || it->second <= 0) return false;
  maybe_sustained_.insert(ino);
  return true;
}

Status KvMeta::Sync() { return kv_->Sync(); }

// ---- volume ---------------------------------------------------------------

static nlohmann::json FormatToJson(const Format& f) {
  return {{"name", f.name},
          {"uuid", f.uuid},
          {"storage", f.storage},
          {"block_size", f.block_size},
          {"compress", f.compress},
          {"trash_days", f.trash_days},
          {"capacity", f.capacity},
          {"inodes", f.inodes},
          {"meta_version", f.meta_version},
          {"encrypt", f.encrypt},
          {"encrypt_salt", f.encrypt_salt},
          {"encrypt_check", f.encrypt_check}};
}

static Result<Format> FormatFromJson(std::string_view s) {
  try {
    auto j = nlohmann::json::parse(s);
    Format f;
    f.name = j.at("name").get<std::string>();
    f.uuid = j.value("uuid", "");
    f.storage = j.value("storage", "");
    f.block_size = j.value("block_size", 4u << 20);
    f.compress = j.value("compress", "none");
    f.trash_days = j.value("trash_days", 1);
    f.capacity = j.value("capacity", uint64_t{0});
    f.inodes = j.value("inodes", uint64_t{0});
    f.meta_version = j.value("meta_version", 1);
    f.encrypt = j.value("encrypt", "");
    f.encrypt_salt = j.value("encrypt_salt", "");
    f.encrypt_check = j.value("encrypt_check", "");
    return f;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("volume format record is not valid JSON: ") + e.what());
  }
}

Status KvMeta::Init(const Format& format, bool force) {
  if (format.name.empty()) return Status::InvalidArgument("volume name must not be empty");
  if (format.block_size < 64 * 1024 || format.block_size > 64u << 20 ||
      (format.block_size & (format.block_size - 1)) != 0) {
    return Status::InvalidArgument("block size must be a power of two between 64 KiB and 64 MiB");
  }
  if (format.compress != "none" && format.compress != "lz4" && format.compress != "zstd") {
    return Status::InvalidArgument("compression must be none, lz4 or zstd, not \"" +
                                   format.compress + "\"");
  }
  if (format.trash_days < 0) return Status::InvalidArgument("trash days must be >= 0");
  Format stored;
  bool existed = false;
  int64_t now = NowUnixNanos();
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto old = t.Get(kFormatKey);
        existed = old.has_value();
        if (old) {
          auto f = FormatFromJson(*old);
          if (!f) return f.error();
          if (!force && f->name != format.name) {
            return Status::AlreadyExists("metadata already holds volume \"" + f->name +
                                         "\"; use force to reformat it");
          }
          stored = *f;
          if (!force) {  // same name: only the tunables change
            stored.trash_days = format.trash_days;
            stored.capacity = format.capacity;
            stored.inodes = format.inodes;
          } else {
            std::string uuid = stored.uuid;
            stored = format;
            if (stored.uuid.empty()) stored.uuid = uuid;
          }
          t.Set(kFormatKey, FormatToJson(stored).dump());
          return Status::Ok();
        }
        stored = format;
        t.Set(kFormatKey, FormatToJson(stored).dump());
        Attr root;
        root.mode = S_IFDIR | 0777;
        root.nlink = 2;
        root.size = 4096;
        root.atime_ns = root.mtime_ns = root.ctime_ns = now;
        root.parent = kRootIno;
        t.Set(AttrKey(kRootIno), EncodeAttr(root));
        Attr trash = root;
        trash.mode = S_IFDIR | 0555;
        t.Set(AttrKey(kTrashIno), EncodeAttr(trash));
        t.Set(kNextInode, std::to_string(kRootIno));
        t.Set(kNextSlice, "0");
        t.Set(kNextSession, "0");
        t.Set(kUsedSpace, "4096");
        t.Set(kInodes, "1");
        return Status::Ok();
      },
      false));
  (void)existed;
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_ = stored;
  return Status::Ok();
}

Result<Format> KvMeta::LoadFormat() {
  std::optional<std::string> v;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        v = t.Get(kFormatKey);
        return Status::Ok();
      },
      true));
  if (!v) return Status::NotFound("metadata holds no formatted volume; run `strata fs format`");
  auto f = FormatFromJson(*v);
  if (!f) return f.error();
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_ = *f;
  return f;
}

Status KvMeta::Destroy() {
  STRATA_RETURN_IF_ERROR(kv_->DeleteAll());
  DropCaches();
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_.reset();
  return Status::Ok();
}

}  // namespace strata::fsmeta
