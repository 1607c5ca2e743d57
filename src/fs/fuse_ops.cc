// The FUSE op table: every callback wrapped to time it into
// strata_fs_op_seconds{op}; the mount's init (capabilities) and destroy, and
// the requests about an inode's attributes: lookup, forget, getattr, setattr,
// access, statfs.
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include <strata/core/metrics.h>

#include "fs/data_io.h"
#include "fs/fuse_fs.h"

namespace strata::fs::fusefs {

MountMetrics& Metrics() {
  static MountMetrics m;
  return m;
}

// Wraps a FUSE callback: times it into strata_fs_op_seconds{op}.
template <auto F, int Id>
struct Timed;
template <typename... A, void (*F)(fuse_req_t, A...), int Id>
struct Timed<F, Id> {
  static void Call(fuse_req_t req, A... a) {
    const auto t0 = std::chrono::steady_clock::now();
    F(req, a...);
    Metrics().latency[Id]->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OpInit;
  ops.destroy = OpDestroy;
  ops.lookup = Timed<OpLookup, kOp_lookup>::Call;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = Timed<OpGetattr, kOp_getattr>::Call;
  ops.setattr = Timed<OpSetattr, kOp_setattr>::Call;
  ops.readlink = Timed<OpReadlink, kOp_readlink>::Call;
  ops.mknod = Timed<OpMknod, kOp_mknod>::Call;
  ops.mkdir = Timed<OpMkdir, kOp_mkdir>::Call;
  ops.unlink = Timed<OpUnlink, kOp_unlink>::Call;
  ops.rmdir = Timed<OpRmdir, kOp_rmdir>::Call;
  ops.symlink = Timed<OpSymlink, kOp_symlink>::Call;
  ops.rename = Timed<OpRename, kOp_rename>::Call;
  ops.link = Timed<OpLink, kOp_link>::Call;
  ops.open = Timed<OpOpen, kOp_open>::Call;
  ops.read = Timed<OpRead, kOp_read>::Call;
  ops.write = Timed<OpWrite, kOp_write>::Call;
  ops.flush = Timed<OpFlush, kOp_flush>::Call;
  ops.release = Timed<OpRelease, kOp_release>::Call;
  ops.fsync = Timed<OpFsync, kOp_fsync>::Call;
  ops.opendir = Timed<OpOpendir, kOp_opendir>::Call;
  ops.readdir = Timed<OpReaddir, kOp_readdir>::Call;
  ops.readdirplus = Timed<OpReaddirplus, kOp_readdirplus>::Call;
  ops.releasedir = Timed<OpReleasedir, kOp_releasedir>::Call;
  ops.fsyncdir = Timed<OpFsyncdir, kOp_fsyncdir>::Call;
  ops.statfs = Timed<OpStatfs, kOp_statfs>::Call;
  ops.setxattr = Timed<OpSetxattr, kOp_setxattr>::Call;
  ops.getxattr = Timed<OpGetxattr, kOp_getxattr>::Call;
  ops.listxattr = Timed<OpListxattr, kOp_listxattr>::Call;
  ops.removexattr = Timed<OpRemovexattr, kOp_removexattr>::Call;
  ops.access = Timed<OpAccess, kOp_access>::Call;
  ops.create = Timed<OpCreate, kOp_create>::Call;
  ops.getlk = Timed<OpGetlk, kOp_getlk>::Call;
  ops.setlk = Timed<OpSetlk, kOp_setlk>::Call;
  ops.flock = Timed<OpFlock, kOp_flock>::Call;
  ops.fallocate = Timed<OpFallocate, kOp_fallocate>::Call;
  return ops;
}

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* fs = static_cast<FuseFs*>(userdata);
  auto want = [&](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_POSIX_LOCKS);
  want(FUSE_CAP_FLOCK_LOCKS);
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_PARALLEL_DIROPS);
  want(FUSE_CAP_EXPORT_SUPPORT);
  // The kernel evaluates ACLs (and turns on default_permissions); the ACL
  // xattrs, their sync with the mode and default-ACL inheritance are ours.
  want(FUSE_CAP_POSIX_ACL);
  fs->posix_acl_ = (conn->want & FUSE_CAP_POSIX_ACL) != 0;
  // With a default ACL the umask does not apply (POSIX.1e), so the kernel
  // must send the create mode unmasked; MakeNode applies the umask it also
  // sends when there is no default ACL.
  if (fs->posix_acl_) want(FUSE_CAP_DONT_MASK);
  if (fs->opts_.writeback) {
    want(FUSE_CAP_WRITEBACK_CACHE);
  } else {
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  }
  conn->max_readahead = std::max<unsigned>(conn->max_readahead, 1u << 20);
  conn->max_background = 64;
  conn->congestion_threshold = 48;
}

void OpDestroy(void* userdata) {
  auto* fs = static_cast<FuseFs*>(userdata);
  Status st = fs->data_->FlushAll();
  if (!st.ok()) kLog.Error("flushing buffered writes at unmount: {}", st.ToString());
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* fs = Fs(req);
  uint64_t seq0 = fs->Seq();
  auto e = fs->meta_->Lookup(fs->Ctx(req), parent, name);
  if (e && !S_ISDIR(e->attr.mode)) {
    // See OpOpen: the lookup of a retried open, and names in the trash.
    const bool after_estale = FuseFs::SteadyNs() - fs->last_estale_ns_.load() < 1000000000;
    if (after_estale || parent == fsmeta::kTrashIno) {
      std::lock_guard<std::mutex> lk(fs->mu_);
      InodeState& s = fs->inodes_[e->ino];
      if (after_estale) s.revalidated = true;
      if (parent == fsmeta::kTrashIno) s.via_trash = true;
    }
  }
  fs->ReplyEntry(req, e, "lookup", seq0);
}

void OpForget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void OpForgetMulti(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto* fs = Fs(req);
  uint64_t seq0 = fs->Seq();
  auto a = fs->meta_->GetAttr(ino);
  if (!a) return fs->ReplyErrReached(req, a.error(), "getattr");
  struct stat st;
  fs->FillStat(ino, *a, &st, seq0);
  fuse_reply_attr(req, &st, fs->opts_.attr_timeout);
}

void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* in, int to_set, fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint32_t mask = 0;
  Attr a;
  if (to_set & FUSE_SET_ATTR_MODE) mask |= fsmeta::kSetMode, a.mode = in->st_mode;
  if (to_set & FUSE_SET_ATTR_UID) mask |= fsmeta::kSetUid, a.uid = in->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) mask |= fsmeta::kSetGid, a.gid = in->st_gid;
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    mask |= fsmeta::kSetAtimeNow;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    mask |= fsmeta::kSetAtime;
    a.atime_ns = int64_t{in->st_atim.tv_sec} * 1000000000 + in->st_atim.tv_nsec;
  }
  if ((to_set & FUSE_SET_ATTR_MTIME_NOW) ||
      ((to_set & FUSE_SET_ATTR_MTIME) && (to_set & FUSE_SET_ATTR_SIZE))) {
    // With a size: a truncate's own mtime update, which the kernel's
    // writeback cache sends as an explicit time (utimensat never comes
    // with a size); the truncate's write permission covers it.
    mask |= fsmeta::kSetMtimeNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    mask |= fsmeta::kSetMtime;
    a.mtime_ns = int64_t{in->st_mtim.tv_sec} * 1000000000 + in->st_mtim.tv_nsec;
  }
  if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_SIZE)) ||
      mask == 0) {
    // Buffered writes must land before a new size or mtime is set over them.
    Status st = fs->data_->Flush(ino);
    if (!st.ok()) return fs->ReplyErr(req, st, "setattr flush");
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    mask |= fsmeta::kSetSize;
    a.size = static_cast<uint64_t>(in->st_size);
  }
  uint64_t seq0 = fs->Seq();
  std::unique_lock<std::mutex> atime_lock(fs->atime_write_mu_, std::defer_lock);
  if (mask & (fsmeta::kSetAtime | fsmeta::kSetAtimeNow)) {
    atime_lock.lock();
    fs->DropPendingAtime(ino);
  }
  Context ctx = fs->Ctx(req);
  // ftruncate (and the truncate of an open with O_TRUNC) come with the file
  // handle, and so does the kernel's writeback cache writing back the mtime
  // of a descriptor's writes: a descriptor opened for writing may do both
  // whatever the mode or owner say now. truncate(path) and utimensat come
  // without one and are checked.
  if (fi != nullptr && fi->fh != 0 && WritableHandle(fi)) ctx.write_handle = true;
  auto r = mask ? fs->meta_->SetAttr(ctx, ino, mask, a) : fs->meta_->GetAttr(ino);
  if (atime_lock.owns_lock()) atime_lock.unlock();
  if (mask & fsmeta::kSetSize) fs->data_->InvalidateSlices(ino);
  if (!r) return fs->ReplyErrReached(req, r.error(), "setattr");
  if (to_set & FUSE_SET_ATTR_SIZE) {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->SetLengthLocked(ino, r->size);
  }
  struct stat st;
  fs->FillStat(ino, *r, &st, seq0);
  fuse_reply_attr(req, &st, fs->opts_.attr_timeout);
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  auto* fs = Fs(req);
  Status st = fs->meta_->Access(fs->Ctx(req), ino, mask);
  if (!st.ok()) return fs->ReplyErrReached(req, st, "access");
  fuse_reply_err(req, 0);
}

void OpStatfs(fuse_req_t req, fuse_ino_t ino) {
  auto* fs = Fs(req);
  auto r = fs->meta_->StatFS(fs->Ctx(req), ino);
  if (!r) return fs->ReplyErr(req, r.error(), "statfs");
  struct statvfs st;
  std::memset(&st, 0, sizeof(st));
  const uint64_t bsize = 4096;
  st.f_bsize = bsize;
  st.f_frsize = bsize;
  st.f_blocks = r->total_space / bsize;
  st.f_bfree = r->avail_space / bsize;
  st.f_bavail = r->avail_space / bsize;
  st.f_files = r->used_inodes + r->avail_inodes;
  st.f_ffree = r->avail_inodes;
  st.f_favail = r->avail_inodes;
  st.f_namemax = 255;
  fuse_reply_statfs(req, &st);
}

}  // namespace strata::fs::fusefs
