// What the FUSE adapter's files share (private): the per-request state of
// the mount (FuseFs: this mount's view of inode lengths, pending atimes,
// POSIX-lock bookkeeping, stat filling and error replies), the file and
// directory handles, the request metrics, and the low-level callbacks, each
// defined in the file of its concept:
//   fuse_ops.cc         the op table (MakeOps), init/destroy, lookup, attributes
//   fuse_file.cc        open/create, file handles, read/write, flush/fsync/
//                       release, fallocate
//   fuse_dir.cc         names (mknod, mkdir, unlink, rmdir, symlink, rename,
//                       link, readlink) and directory handles (readdir)
//   fuse_xattr_lock.cc  xattrs, POSIX record locks and flock
//   fuse_mount.cc       ServeMount: the session, mount loop and housekeeping
// Nothing here knows how metadata or data are stored.
#pragma once

#define FUSE_USE_VERSION 314
#include <fcntl.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fuse3/fuse_lowlevel.h>

#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/fs/fuse_mount.h>
#include <strata/fsmeta/meta_engine.h>

#include "fs/data_io.h"

namespace strata::fs::fusefs {

inline constexpr log::Logger kLog("fs");
using fsmeta::Attr;
using fsmeta::Context;
using fsmeta::Entry;

struct FileHandle {
  Ino ino = 0;
  int flags = 0;
  std::mutex mu;  // guards rs
  ReadState rs;
};

// Whether fi (with fi->fh set) is a FileHandle opened for writing.
inline bool WritableHandle(const fuse_file_info* fi) {
  return (reinterpret_cast<const FileHandle*>(fi->fh)->flags & O_ACCMODE) != O_RDONLY;
}

struct DirHandle {
  std::mutex mu;
  // The last page handed to the kernel: (offset, name), so the next readdir
  // (called with the offset of the last entry it consumed) continues by name.
  std::deque<std::pair<off_t, std::string>> recent;  // guarded by mu
};

// What this mount knows of an inode between requests.
struct InodeState {
  uint64_t length = 0;  // file length as last seen (meta or our writes)
  // The version of the file the kernel's page cache may hold: the
  // attributes read from the metadata engine at the last open or close here.
  // An open keeps the page cache only while all three are unchanged (ctime
  // too: a rewrite whose mtime was put back, or made within the clock's
  // resolution, still moves it). 0: nothing seen yet.
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint64_t seen_length = 0;
  int opens = 0;
  bool written = false;  // written through this mount since the last open
  // Returned by a lookup right after this mount answered an open with
  // ESTALE, and not opened since: the open that follows is most likely the
  // kernel's one retry of that open (see OpOpen), which must not fail again.
  bool revalidated = false;
  bool via_trash = false;  // looked up in .trash: opening it unlinked is expected
};

class FuseFs {
 public:
  FuseFs(Volume* v, const MountOptions& o) : v_(v), meta_(v->meta()), data_(v->data()), opts_(o) {}

  Volume* v_;
  fsmeta::MetaEngine* meta_;
  DataIO* data_;
  std::atomic<uint64_t> size_ops_{0};  // see Seq()
  MountOptions opts_;
  // The kernel granted FUSE_CAP_POSIX_ACL (set in OpInit, before any request):
  // it enforces ACLs, and the metadata engine keeps them (see fsmeta/acl.h).
  bool posix_acl_ = false;
  fuse_session* se_ = nullptr;  // set before the loop starts
  std::mutex mu_;
  std::unordered_map<Ino, InodeState> inodes_;  // guarded by mu_
  // When this mount last answered a request with ESTALE (SteadyNs()).
  std::atomic<int64_t> last_estale_ns_{INT64_MIN / 2};

  static int64_t SteadyNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // Inodes on which this mount took POSIX (fcntl) locks while open here: only
  // their close needs the unlock transaction (no other mount can hold locks
  // under this mount's session). Dropped at the last release.
  std::unordered_set<Ino> plocked_;  // guarded by mu_
  // RELEASEs that drop a flock, being handled, per inode. The kernel sends
  // RELEASE after close() has returned, so a flock right after a close could
  // still find the closed file's lock, or (same lock owner: the kernel reuses
  // the closed file's) have its new lock dropped by the late unlock; on a
  // remote engine the unlock takes a round trip or more. A flock on this
  // mount waits for these first.
  std::unordered_map<Ino, int> releasing_;  // guarded by mu_
  std::condition_variable released_cv_;

  // relatime atimes not yet written: an open for reading must not wait for a
  // metadata write transaction, so WriteAtimes() commits them every couple of
  // seconds and at unmount (Linux's lazytime does the same for disk inodes).
  // Until then getattr shows them from here. atime_write_mu_ is held across a
  // write-out, and by a setattr that sets atime, so an explicit utime is
  // never overwritten by an older open's atime.
  std::mutex atime_write_mu_;
  std::mutex atime_mu_;
  std::unordered_map<Ino, int64_t> pending_atime_;  // guarded by atime_mu_

  int64_t PendingAtime(Ino ino) {
    std::lock_guard<std::mutex> lk(atime_mu_);
    auto it = pending_atime_.find(ino);
    return it == pending_atime_.end() ? 0 : it->second;
  }

  void DropPendingAtime(Ino ino) {
    std::lock_guard<std::mutex> lk(atime_mu_);
    pending_atime_.erase(ino);
  }

  void WriteAtimes() {
    std::lock_guard<std::mutex> wl(atime_write_mu_);
    std::vector<std::pair<Ino, int64_t>> todo;
    {
      std::lock_guard<std::mutex> lk(atime_mu_);
      todo.assign(pending_atime_.begin(), pending_atime_.end());
    }
    if (todo.empty()) return;
    Context internal;
    internal.check_permission = false;
    for (const auto& [ino, t] : todo) {
      Attr a;
      a.atime_ns = t;
      auto r = meta_->SetAttr(internal, ino, fsmeta::kSetAtime | fsmeta::kSetKeepCtime, a);
      if (!r && fsmeta::ErrnoOf(r.error()) != ENOENT) {
        kLog.Warn("inode {}: writing its atime: {}", ino, r.error().ToString());
        continue;  // kept: tried again next time
      }
      std::lock_guard<std::mutex> lk(atime_mu_);
      auto it = pending_atime_.find(ino);
      if (it != pending_atime_.end() && it->second == t) pending_atime_.erase(it);
    }
  }

  Context Ctx(fuse_req_t req) {
    const fuse_ctx* c = fuse_req_ctx(req);
    Context ctx;
    ctx.uid = c->uid;
    ctx.gid = c->gid;
    ctx.pid = static_cast<uint32_t>(c->pid);
    ctx.check_permission = true;
    ctx.kernel_checked_acl = posix_acl_;
    if (c->uid != 0) {
      gid_t groups[64];
      int n = fuse_req_getgroups(req, 64, groups);
      if (n > 64) n = 64;
      for (int i = 0; i < n; i++) ctx.gids.push_back(groups[i]);
    }
    return ctx;
  }

  // The length this mount shows: the metadata's, raised by uncommitted writes.
  // While the file is open here, a getattr never lowers the remembered
  // length: its metadata read may predate a commit that an open already saw
  // (our own truncates and fallocates set the length explicitly).
  // meta_size was read after Seq() returned *seq0; the length is recorded
  // only if no commit or size change made here came since (checked under
  // mu_, where size changes are recorded, so a stale length cannot overwrite
  // a truncate's); otherwise nullopt: read the attributes again. Without
  // seq0 the length is computed and nothing is recorded.
  std::optional<uint64_t> EffectiveLength(Ino ino, uint64_t meta_size,
                                          std::optional<uint64_t> seq0) {
    uint64_t dirty = data_->DirtyLength(ino);
    std::lock_guard<std::mutex> lk(mu_);
    if (seq0 && Seq() != *seq0) return std::nullopt;
    auto it = inodes_.find(ino);
    uint64_t len = std::max(meta_size, dirty);
    if (it != inodes_.end()) {
      if (it->second.opens > 0 || dirty > 0) len = std::max(len, it->second.length);
      if (seq0) it->second.length = len;
    }
    return len;
  }

  // Counts commits of buffered writes and the size changes this mount makes
  // through the metadata engine directly (truncate, O_TRUNC, fallocate): an
  // attribute read taken before it changed may predate one of them.
  uint64_t Seq() const { return data_->commit_seq() + size_ops_.load(); }

  // Records a size this mount just committed. Requires mu_.
  void SetLengthLocked(Ino ino, uint64_t len) {
    size_ops_.fetch_add(1);
    auto it = inodes_.find(ino);
    if (it != inodes_.end()) {
      it->second.length = len;
      it->second.written = true;
    }
  }

  // `seq0` is Seq() taken before `in` was read from the metadata engine. If a
  // commit of buffered writes happened since, `in` may predate it while the
  // buffered length is already gone: read the attributes again. (DataIO bumps
  // the counter after the metadata write and before it forgets the buffered
  // length, and the length is sampled before the counter is checked.)
  void FillStat(Ino ino, const Attr& in, struct stat* st, uint64_t seq0) {
    Attr a = in;
    uint64_t size = a.size;
    if (S_ISREG(a.mode)) {
      std::optional<uint64_t> len;
      for (int i = 0; i < 4 && !(len = EffectiveLength(ino, a.size, seq0)); i++) {
        seq0 = Seq();
        auto fresh = meta_->GetAttr(ino);
        if (!fresh) break;
        a = *fresh;
      }
      // Still stale after four tries: shown, not recorded.
      size = len ? *len : *EffectiveLength(ino, a.size, std::nullopt);
    }
    if (int64_t pending = PendingAtime(ino); pending > a.atime_ns) a.atime_ns = pending;
    std::memset(st, 0, sizeof(*st));
    st->st_ino = ino;
    st->st_mode = a.mode;
    // A file whose last name went to the trash is unlinked as far as POSIX
    // goes (an open descriptor's fstat says 0 links).
    st->st_nlink = (a.parent == fsmeta::kTrashIno && (a.mode & S_IFMT) != S_IFDIR) ? 0 : a.nlink;
    st->st_uid = a.uid;
    st->st_gid = a.gid;
    st->st_rdev = a.rdev;
    st->st_size = static_cast<off_t>(size);
    st->st_blksize = 1 << 20;
    st->st_blocks = (st->st_size + 511) / 512;
    st->st_atim.tv_sec = a.atime_ns / 1000000000;
    st->st_atim.tv_nsec = a.atime_ns % 1000000000;
    st->st_mtim.tv_sec = a.mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = a.mtime_ns % 1000000000;
    st->st_ctim.tv_sec = a.ctime_ns / 1000000000;
    st->st_ctim.tv_nsec = a.ctime_ns % 1000000000;
  }

  void FillEntry(const Entry& e, fuse_entry_param* p, uint64_t seq0) {
    std::memset(p, 0, sizeof(*p));
    p->ino = e.ino;
    p->generation = 1;
    FillStat(e.ino, e.attr, &p->attr, seq0);
    p->attr_timeout = opts_.attr_timeout;
    p->entry_timeout = opts_.entry_timeout;
  }

  static int Errno(const Status& st) {
    int e = fsmeta::ErrnoOf(st);
    return e == 0 ? EIO : e;
  }

  // strata_fs_errors_total{op,errno}. Negative lookups (every create starts
  // with one) land here, so each thread keeps the counters it found instead
  // of formatting labels and searching the registry per reply (keyed by the
  // op literal's address; equal labels get the same registry counter anyway).
  static metrics::Counter& ErrorCounter(const char* op, int e) {
    thread_local std::map<std::pair<const char*, int>, metrics::Counter*> mine;
    metrics::Counter*& c = mine[{op, e}];
    if (c == nullptr) {
      c = &metrics::Registry::Global().GetCounter(
          "strata_fs_errors_total",
          "Requests the mount answered with an error, by operation and errno",
          fmt::format("op=\"{}\",errno=\"{}\"", op,
                      strerrorname_np(e) ? strerrorname_np(e) : std::to_string(e)));
    }
    return *c;
  }

  void ReplyErr(fuse_req_t req, const Status& st, const char* op) {
    int e = Errno(st);
    ErrorCounter(op, e).Inc();
    if (e == EIO) kLog.Warn("{}: {}", op, st.ToString());
    fuse_reply_err(req, e);
  }

  // For a request on an inode the kernel reached through a cached name or a
  // file handle (getattr, setattr, access, open, opendir): ENOENT there means
  // the inode itself is gone (another mount removed or replaced the name),
  // not that a name is missing. ESTALE makes the kernel look the name up
  // again and retry (path walks retry once with LOOKUP_REVAL), so the caller
  // gets the file that has the name now, or ENOENT if none does.
  void ReplyErrReached(fuse_req_t req, const Status& st, const char* op) {
    if (Errno(st) != ENOENT) return ReplyErr(req, st, op);
    ReplyStale(req, op);
  }

  // Answers ESTALE and notes when (see OpLookup and OpOpen).
  // The entry cache may hold the replaced name too: the kernel's lookup
  // that follows must read the metadata engine.
  void ReplyStale(fuse_req_t req, const char* op) {
    meta_->DropCaches();
    last_estale_ns_ = SteadyNs();
    ErrorCounter(op, ESTALE).Inc();
    fuse_reply_err(req, ESTALE);
  }

  void ReplyEntry(fuse_req_t req, const Result<Entry>& r, const char* op, uint64_t seq0) {
    if (!r) return ReplyErr(req, r.error(), op);
    fuse_entry_param p;
    FillEntry(*r, &p, seq0);
    fuse_reply_entry(req, &p);
  }

  bool ReadOnly(fuse_req_t req) {
    if (!opts_.read_only) return false;
    fuse_reply_err(req, EROFS);
    return true;
  }
};

inline FuseFs* Fs(fuse_req_t req) { return static_cast<FuseFs*>(fuse_req_userdata(req)); }

// ---- metrics ----------------------------------------------------------------
// strata_fs_op_seconds{op} (its _count is the number of requests), bytes read
// and written through the mount, errors by op and errno, and the buffered
// (uncommitted) bytes; exported by `strata fs mount --metrics`.

// clang-format off
#define STRATA_FS_OPS(X)                                                                          \
  X(lookup) X(getattr) X(setattr) X(readlink) X(mknod) X(mkdir) X(unlink) X(rmdir) X(symlink)     \
  X(rename) X(link) X(open) X(read) X(write) X(flush) X(release) X(fsync) X(opendir) X(readdir)   \
  X(readdirplus) X(releasedir) X(fsyncdir) X(statfs) X(setxattr) X(getxattr) X(listxattr)         \
  X(removexattr) X(access) X(create) X(getlk) X(setlk) X(flock) X(fallocate)

enum OpId {
#define STRATA_FS_OP_ENUM(name) kOp_##name,
  STRATA_FS_OPS(STRATA_FS_OP_ENUM)
#undef STRATA_FS_OP_ENUM
  kNumOps
};
// clang-format on

struct MountMetrics {
  std::array<metrics::Histogram*, kNumOps> latency{};
  metrics::Counter* read_bytes = nullptr;
  metrics::Counter* written_bytes = nullptr;

  MountMetrics() {
    auto& r = metrics::Registry::Global();
    static const char* const kNames[] = {
#define STRATA_FS_OP_NAME(name) #name,
        STRATA_FS_OPS(STRATA_FS_OP_NAME)
#undef STRATA_FS_OP_NAME
    };
    for (int i = 0; i < kNumOps; ++i) {
      latency[i] =
          &r.GetHistogram("strata_fs_op_seconds", "FUSE requests served by the mount, by operation",
                          fmt::format("op=\"{}\"", kNames[i]));
    }
    read_bytes =
        &r.GetCounter("strata_fs_read_bytes_total", "Bytes returned to reads through the mount");
    written_bytes = &r.GetCounter("strata_fs_written_bytes_total",
                                  "Bytes accepted from writes through the mount");
  }
};

MountMetrics& Metrics();

// The low-level operations table, every request timed (fuse_ops.cc).
fuse_lowlevel_ops MakeOps();

// ---- callbacks (fuse_lowlevel_ops), by file ----------------------------------

// fuse_ops.cc
void OpInit(void* userdata, fuse_conn_info* conn);
void OpDestroy(void* userdata);
void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name);
void OpForget(fuse_req_t req, fuse_ino_t, uint64_t);
void OpForgetMulti(fuse_req_t req, size_t, fuse_forget_data*);
void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*);
void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* in, int to_set, fuse_file_info* fi);
void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask);
void OpStatfs(fuse_req_t req, fuse_ino_t ino);

// fuse_file.cc
void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi);
void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void OpFsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*);
void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info*);

// fuse_dir.cc
void OpReadlink(fuse_req_t req, fuse_ino_t ino);
void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name);
void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
void OpSymlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned int flags);
void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);
void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void OpReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void OpReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi);
void OpFsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*);

// fuse_xattr_lock.cc
void OpSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags);
void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void OpRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name);
void OpGetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock);
void OpSetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep);
void OpFlock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op);

}  // namespace strata::fs::fusefs
