// The FUSE adapter: translates low-level FUSE requests into MetaEngine and
// DataIO calls. Nothing here knows how metadata or data are stored.
#define FUSE_USE_VERSION 314
#include <fuse3/fuse_lowlevel.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <functional>

#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/fs/fuse_mount.h>

namespace strata::fs {
namespace {
constexpr log::Logger kLog("fs");
using fsmeta::Attr;
using fsmeta::Context;
using fsmeta::Entry;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct FileHandle {
  Ino ino = 0;
  int flags = 0;
  std::mutex mu;  // guards rs
  ReadState rs;
};

struct DirHandle {
  std::mutex mu;
  // The last page handed to the kernel: (offset, name), so the next readdir
  // (called with the offset of the last entry it consumed) continues by name.
  std::deque<std::pair<off_t, std::string>> recent;  // guarded by mu
};

// What this mount knows of an inode between requests.
struct InodeState {
  uint64_t length = 0;       // file length as last seen (meta or our writes)
  int64_t mtime_ns = 0;      // at the last open/close, for keep_cache
  uint64_t seen_length = 0;  // length at the last open/close
  int opens = 0;
  bool written = false;      // written through this mount since the last open
};

class FuseFs {
 public:
  FuseFs(Volume* v, const MountOptions& o) : v_(v), meta_(v->meta()), data_(v->data()), opts_(o) {}

  Volume* v_;
  fsmeta::MetaEngine* meta_;
  DataIO* data_;
  std::atomic<uint64_t> size_ops_{0};  // see Seq()
  MountOptions opts_;
  fuse_session* se_ = nullptr;  // set before the loop starts
  std::mutex mu_;
  std::unordered_map<Ino, InodeState> inodes_;  // guarded by mu_
  // Inodes on which this mount took POSIX (fcntl) locks while open here: only
  // their close needs the unlock transaction (no other mount can hold locks
  // under this mount's session). Dropped at the last release.
  std::unordered_set<Ino> plocked_;  // guarded by mu_

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
  std::optional<uint64_t> EffectiveLength(Ino ino, uint64_t meta_size, std::optional<uint64_t> seq0) {
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
          "strata_fs_errors_total", "Requests the mount answered with an error, by operation and errno",
          fmt::format("op=\"{}\",errno=\"{}\"", op, strerrorname_np(e) ? strerrorname_np(e) : std::to_string(e)));
    }
    return *c;
  }

  void ReplyErr(fuse_req_t req, const Status& st, const char* op) {
    int e = Errno(st);
    ErrorCounter(op, e).Inc();
    if (e == EIO) kLog.Warn("{}: {}", op, st.ToString());
    fuse_reply_err(req, e);
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

FuseFs* Fs(fuse_req_t req) { return static_cast<FuseFs*>(fuse_req_userdata(req)); }

// ---- metrics ----------------------------------------------------------------
// strata_fs_op_seconds{op} (its _count is the number of requests), bytes read
// and written through the mount, errors by op and errno, and the buffered
// (uncommitted) bytes; exported by `strata fs mount --metrics`.

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
      latency[i] = &r.GetHistogram("strata_fs_op_seconds", "FUSE requests served by the mount, by operation",
                                   fmt::format("op=\"{}\"", kNames[i]));
    }
    read_bytes = &r.GetCounter("strata_fs_read_bytes_total", "Bytes returned to reads through the mount");
    written_bytes = &r.GetCounter("strata_fs_written_bytes_total", "Bytes accepted from writes through the mount");
  }
};

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

// ---- callbacks ------------------------------------------------------------

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
  fs->ReplyEntry(req, fs->meta_->Lookup(fs->Ctx(req), parent, name), "lookup", seq0);
}

void OpForget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void OpForgetMulti(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto* fs = Fs(req);
  uint64_t seq0 = fs->Seq();
  auto a = fs->meta_->GetAttr(ino);
  if (!a) return fs->ReplyErr(req, a.error(), "getattr");
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
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    mask |= fsmeta::kSetMtimeNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    mask |= fsmeta::kSetMtime;
    a.mtime_ns = int64_t{in->st_mtim.tv_sec} * 1000000000 + in->st_mtim.tv_nsec;
  }
  if ((to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_SIZE)) || mask == 0) {
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
  auto r = mask ? fs->meta_->SetAttr(fs->Ctx(req), ino, mask, a) : fs->meta_->GetAttr(ino);
  if (atime_lock.owns_lock()) atime_lock.unlock();
  if (mask & fsmeta::kSetSize) fs->data_->InvalidateSlices(ino);
  if (!r) return fs->ReplyErr(req, r.error(), "setattr");
  if (to_set & FUSE_SET_ATTR_SIZE) {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->SetLengthLocked(ino, r->size);
  }
  struct stat st;
  fs->FillStat(ino, *r, &st, seq0);
  fuse_reply_attr(req, &st, fs->opts_.attr_timeout);
}

void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto* fs = Fs(req);
  auto r = fs->meta_->ReadLink(ino);
  if (!r) return fs->ReplyErr(req, r.error(), "readlink");
  fuse_reply_readlink(req, r->c_str());
}

void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint64_t seq0 = fs->Seq();
  fs->ReplyEntry(req, fs->meta_->Mknod(fs->Ctx(req), parent, name, mode, fuse_req_ctx(req)->umask, rdev),
                 "mknod", seq0);
}

void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  fs->ReplyEntry(req, fs->meta_->Mkdir(fs->Ctx(req), parent, name, mode, fuse_req_ctx(req)->umask),
                 "mkdir", 0);
}

void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  Status st = fs->meta_->Unlink(fs->Ctx(req), parent, name);
  if (!st.ok()) return fs->ReplyErr(req, st, "unlink");
  fuse_reply_err(req, 0);
}

void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  Status st = fs->meta_->Rmdir(fs->Ctx(req), parent, name);
  if (!st.ok()) return fs->ReplyErr(req, st, "rmdir");
  fuse_reply_err(req, 0);
}

void OpSymlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint64_t seq0 = fs->Seq();
  fs->ReplyEntry(req, fs->meta_->Symlink(fs->Ctx(req), parent, name, link), "symlink", seq0);
}

void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned int flags) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint32_t f = 0;
  if (flags & RENAME_NOREPLACE) f |= fsmeta::kRenameNoReplace;
  if (flags & RENAME_EXCHANGE) f |= fsmeta::kRenameExchange;
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) return (void)fuse_reply_err(req, EINVAL);
  Status st = fs->meta_->Rename(fs->Ctx(req), parent, name, newparent, newname, f);
  if (!st.ok()) return fs->ReplyErr(req, st, "rename");
  fuse_reply_err(req, 0);
}

void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint64_t seq0 = fs->Seq();
  fs->ReplyEntry(req, fs->meta_->Link(fs->Ctx(req), ino, newparent, newname), "link", seq0);
}

// Whether writes through a write-only descriptor may bypass the page cache
// (FOPEN_DIRECT_IO). Such a descriptor is never read or mmapped, so caching
// what it writes only costs the writer a copy into page-cache pages it will
// not use (a third of the CPU of a big sequential write); the kernel still
// drops pages that other descriptors cached over the range. But the kernel
// clears set-id bits and file capabilities on a write (file_remove_privs)
// only for cached writes, and libfuse 3.14 does not hand the filesystem the
// kill-suid flag of direct ones, so a file that carries either stays cached.
// fresh: the file was just created (it has no xattrs yet).
bool DirectWrites(FuseFs* fs, Ino ino, const Attr& a, int flags, bool fresh) {
  if ((flags & O_ACCMODE) != O_WRONLY || fs->opts_.writeback) return false;
  if (a.mode & (S_ISUID | S_ISGID)) return false;
  if (fresh) return true;
  fsmeta::Context root;
  root.check_permission = false;
  auto caps = fs->meta_->GetXattr(root, ino, "security.capability");
  return !caps.has_value();
}

// Records an open and decides whether the kernel may keep its page cache.
// Returns true when the file changed since this mount last saw it (another
// client wrote it): then the kernel's cached attributes are stale too.
// `in` was read after Seq() returned seq0; when the file is not open here yet
// and a commit or size change came since, it is read again (it may predate a
// truncate, and would set a stale length).
bool OpenHandle(FuseFs* fs, Ino ino, const Attr& in, fuse_file_info* fi, bool direct_writes, uint64_t seq0) {
  auto* h = new FileHandle();
  h->ino = ino;
  h->flags = fi->flags;
  fi->fh = reinterpret_cast<uint64_t>(h);
  Attr a = in;
  std::unique_lock<std::mutex> lk(fs->mu_);
  for (int i = 0; i < 4 && fs->Seq() != seq0; i++) {
    auto it = fs->inodes_.find(ino);
    if (it != fs->inodes_.end() && it->second.opens > 0) break;  // the length only grows then
    lk.unlock();
    seq0 = fs->Seq();
    if (auto fresh = fs->meta_->GetAttr(ino)) {
      a.size = fresh->size;
      a.mtime_ns = fresh->mtime_ns;
    }
    lk.lock();
  }
  InodeState& s = fs->inodes_[ino];
  bool unchanged = s.opens > 0 || (s.mtime_ns == a.mtime_ns && s.seen_length == a.size && s.mtime_ns != 0);
  bool changed_elsewhere = s.opens == 0 && s.mtime_ns != 0 && !unchanged;
  fi->keep_cache = unchanged && !s.written ? 1 : 0;
  if (direct_writes) fi->direct_io = 1;
  if (s.opens == 0) {
    s.length = a.size;
    s.written = false;
  } else {
    s.length = std::max(s.length, a.size);
  }
  s.mtime_ns = a.mtime_ns;
  s.seen_length = a.size;
  s.opens++;
  return changed_elsewhere;
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  int acc = fi->flags & O_ACCMODE;
  if (fs->opts_.read_only && (acc != O_RDONLY || (fi->flags & O_TRUNC))) return (void)fuse_reply_err(req, EROFS);
  Context ctx = fs->Ctx(req);
  uint64_t seq0 = fs->Seq();
  auto a = fs->meta_->Open(ctx, ino, fi->flags);
  if (!a) return fs->ReplyErr(req, a.error(), "open");
  Attr attr = *a;
  if ((fi->flags & O_TRUNC) && attr.size != 0) {
    Status st = fs->data_->Flush(ino);
    Attr t;
    t.size = 0;
    auto r = st.ok() ? fs->meta_->SetAttr(ctx, ino, fsmeta::kSetSize, t) : Result<Attr>(st);
    fs->data_->InvalidateSlices(ino);
    if (!r) {
      (void)fs->meta_->Close(ino);
      return fs->ReplyErr(req, r.error(), "open O_TRUNC");
    }
    attr = *r;
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->SetLengthLocked(ino, 0);
    seq0 = fs->Seq();
  }
  fs->data_->InvalidateSlices(ino);  // close-to-open: another client may have written
  if (acc != O_WRONLY && !(fi->flags & O_NOATIME) && !fs->opts_.read_only) {
    // relatime, as Linux mounts by default (a FUSE kernel leaves atime to the
    // filesystem): an open for reading updates an atime that is not newer
    // than mtime/ctime or is a day old. Written behind (see WriteAtimes).
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    attr.atime_ns = std::max(attr.atime_ns, fs->PendingAtime(ino));
    if (attr.atime_ns <= attr.mtime_ns || attr.atime_ns <= attr.ctime_ns ||
        now - attr.atime_ns >= int64_t{86400} * 1000000000) {
      attr.atime_ns = now;
      std::lock_guard<std::mutex> lk(fs->atime_mu_);
      fs->pending_atime_[ino] = now;
    }
  }
  if (OpenHandle(fs, ino, attr, fi, DirectWrites(fs, ino, attr, fi->flags, false), seq0) && fs->se_) {
    // Close-to-open: drop the kernel's cached size/mtime (attributes only,
    // no page lock involved, so this cannot wait on this request).
    fuse_lowlevel_notify_inval_inode(fs->se_, ino, -1, 0);
  }
  const bool cold_read = acc != O_WRONLY && !fi->keep_cache;
  if (fuse_reply_open(req, fi) == -ENOENT) {
    // The caller went away (interrupted): undo the open.
    delete reinterpret_cast<FileHandle*>(fi->fh);
    (void)fs->meta_->Close(ino);
    return;
  }
  if (cold_read) fs->data_->PrefetchHead(ino, attr.size);  // after the reply: it adds no latency to the open
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint64_t seq0 = fs->Seq();
  auto e = fs->meta_->Create(fs->Ctx(req), parent, name, mode, fuse_req_ctx(req)->umask, fi->flags);
  if (!e) return fs->ReplyErr(req, e.error(), "create");
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->inodes_.erase(e->ino);
  }
  OpenHandle(fs, e->ino, e->attr, fi, DirectWrites(fs, e->ino, e->attr, fi->flags, true), fs->Seq());
  fuse_entry_param p;
  fs->FillEntry(*e, &p, seq0);
  if (fuse_reply_create(req, &p, fi) == -ENOENT) {
    delete reinterpret_cast<FileHandle*>(fi->fh);
    (void)fs->meta_->Close(e->ino);
  }
}

FileHandle* Handle(fuse_file_info* fi) { return reinterpret_cast<FileHandle*>(fi->fh); }

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  auto* fs = Fs(req);
  FileHandle* h = Handle(fi);
  uint64_t length;
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    auto it = fs->inodes_.find(ino);
    length = it != fs->inodes_.end() ? it->second.length : 0;
  }
  length = std::max(length, fs->data_->DirtyLength(ino));
  thread_local std::string buf;
  if (buf.size() < size) buf.resize(size);
  ReadState rs_copy;
  {
    std::lock_guard<std::mutex> lk(h->mu);
    rs_copy = h->rs;
  }
  auto n = fs->data_->Read(ino, static_cast<uint64_t>(off), size, buf.data(), length, &rs_copy);
  {
    std::lock_guard<std::mutex> lk(h->mu);
    h->rs = rs_copy;
  }
  if (!n) return fs->ReplyErr(req, n.error(), "read");
  Metrics().read_bytes->Inc(*n);
  fuse_reply_buf(req, buf.data(), *n);
}

void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  Status st = fs->data_->Write(ino, static_cast<uint64_t>(off), std::string_view(buf, size));
  if (!st.ok()) return fs->ReplyErr(req, st, "write");
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    InodeState& s = fs->inodes_[ino];
    s.length = std::max<uint64_t>(s.length, static_cast<uint64_t>(off) + size);
    s.written = true;
  }
  Metrics().written_bytes->Inc(size);
  fuse_reply_write(req, size);
}

void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  Status st = fs->data_->Flush(ino);
  bool plocked;
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    plocked = fs->plocked_.count(ino) > 0;
  }
  if (fi->lock_owner != 0 && plocked) {
    // close() drops the caller's POSIX locks on this file.
    fsmeta::LockRange r;
    r.type = F_UNLCK;
    r.start = 0;
    r.end = UINT64_MAX;
    r.pid = static_cast<uint32_t>(fuse_req_ctx(req)->pid);
    (void)fs->meta_->Setlk(fs->Ctx(req), ino, fi->lock_owner, false, r);
  }
  if (!st.ok()) return fs->ReplyErr(req, st, "flush");
  fuse_reply_err(req, 0);
}

void OpFsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  auto* fs = Fs(req);
  Status st = fs->data_->Flush(ino);
  if (st.ok()) st = fs->meta_->Sync();  // the commits durable against power loss too
  if (!st.ok()) return fs->ReplyErr(req, st, "fsync");
  fuse_reply_err(req, 0);
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  FileHandle* h = Handle(fi);
  Status st = fs->data_->Flush(ino);
  if (!st.ok()) kLog.Error("inode {}: flushing at release: {}", ino, st.ToString());
  if (fi->flock_release) (void)fs->meta_->Flock(fs->Ctx(req), ino, fi->lock_owner, F_UNLCK, false);
  bool last = false;
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    auto it = fs->inodes_.find(ino);
    if (it != fs->inodes_.end() && --it->second.opens <= 0) {
      it->second.opens = 0;
      fs->plocked_.erase(ino);
      // Not written through this mount while open: the page cache holds the
      // version seen at open, whose mtime/length are already recorded.
      last = it->second.written;
    }
  }
  if (last) {
    const uint64_t seq0 = fs->Seq();
    auto a = fs->meta_->GetAttr(ino);
    std::lock_guard<std::mutex> lk(fs->mu_);
    auto it = fs->inodes_.find(ino);
    // A read that may predate a commit or a truncate made here since records
    // nothing: `written` stays set, so the next open drops the page cache.
    if (it != fs->inodes_.end() && it->second.opens == 0 && (!a || fs->Seq() == seq0)) {
      if (a) {
        // What the kernel's page cache now holds: keep it on the next open
        // if nobody else changes the file meanwhile.
        it->second.mtime_ns = a->mtime_ns;
        it->second.seen_length = a->size;
        it->second.length = a->size;
        it->second.written = false;
      } else {
        fs->inodes_.erase(it);
      }
    }
  }
  (void)fs->meta_->Close(ino);
  delete h;
  fuse_reply_err(req, 0);
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  Status st = fs->meta_->OpenDir(fs->Ctx(req), ino);
  if (!st.ok()) return fs->ReplyErr(req, st, "opendir");
  fi->fh = reinterpret_cast<uint64_t>(new DirHandle());
  fuse_reply_open(req, fi);
}

// Fills `out` (used bytes in *used) under the handle's lock; returns 0 or an
// errno. The reply is sent after the lock is released: once it is out, the
// kernel may release (and we free) the handle.
int FillReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, DirHandle* dh, bool plus,
                std::string& out, size_t& used) {
  auto* fs = Fs(req);
  std::lock_guard<std::mutex> lk(dh->mu);
  out.assign(size, '\0');
  used = 0;
  bool full = false;
  auto add = [&](const char* name, const fuse_entry_param& e, off_t next) {
    size_t need = plus ? fuse_add_direntry_plus(req, out.data() + used, size - used, name, &e, next)
                       : fuse_add_direntry(req, out.data() + used, size - used, name, &e.attr, next);
    if (need > size - used) {
      full = true;
      return false;
    }
    used += need;
    dh->recent.emplace_back(next, name);
    while (dh->recent.size() > 4096) dh->recent.pop_front();
    return true;
  };
  Context ctx = fs->Ctx(req);
  // Offsets: 1 after ".", 2 after "..", then 3, 4, ... per entry.
  if (off < 1) {
    fuse_entry_param e{};
    e.attr.st_ino = ino;
    e.attr.st_mode = S_IFDIR;
    if (!add(".", e, 1)) return 0;
    off = 1;
  }
  if (off < 2) {
    fuse_entry_param e{};
    e.attr.st_ino = ino;
    e.attr.st_mode = S_IFDIR;
    if (!add("..", e, 2)) return 0;
    off = 2;
  }
  // Find the name after which to continue.
  std::string after;
  if (off > 2) {
    bool found = false;
    for (auto it = dh->recent.rbegin(); it != dh->recent.rend(); ++it) {
      if (it->first == off) {
        after = it->second;
        found = true;
        break;
      }
    }
    if (!found) {
      // A seek to an offset we no longer remember: walk from the start.
      off_t skip = off - 2;
      std::string cursor;
      while (skip > 0) {
        auto page = fs->meta_->ReadDir(ctx, ino, cursor, std::min<off_t>(skip, 1000), false);
        if (!page) return FuseFs::Errno(page.error());
        if (page->empty()) return 0;
        skip -= static_cast<off_t>(page->size());
        cursor = page->back().name;
      }
      after = cursor;
    }
  }
  off_t next = off;
  while (!full) {
    size_t limit = std::clamp<size_t>((size - used) / (plus ? 160 : 32) + 1, 16, 1000);
    uint64_t seq0 = fs->Seq();
    auto page = fs->meta_->ReadDir(ctx, ino, after, limit, plus);
    if (!page) {
      if (used > 0) break;
      return FuseFs::Errno(page.error());
    }
    if (page->empty()) break;
    for (const Entry& ent : *page) {
      fuse_entry_param e;
      if (plus) {
        fs->FillEntry(ent, &e, seq0);
      } else {
        std::memset(&e, 0, sizeof(e));
        e.attr.st_ino = ent.ino;
        e.attr.st_mode = ent.attr.mode;
      }
      if (!add(ent.name.c_str(), e, next + 1)) break;
      next++;
      after = ent.name;
    }
    if (page->size() < limit) break;
  }
  return 0;
}

void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  std::string out;
  size_t used = 0;
  int err = FillReaddir(req, ino, size, off, reinterpret_cast<DirHandle*>(fi->fh), plus, out, used);
  if (err != 0) return (void)fuse_reply_err(req, err);
  fuse_reply_buf(req, out.data(), used);
}

void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, fi, false);
}

void OpReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, fi, true);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<DirHandle*>(fi->fh);
  fuse_reply_err(req, 0);
}

void OpFsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  auto* fs = Fs(req);
  Status st = fs->meta_->Sync();
  if (!st.ok()) return fs->ReplyErr(req, st, "fsyncdir");
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

void OpSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  int f = 0;
  if (flags & XATTR_CREATE) f |= fsmeta::kXattrCreate;
  if (flags & XATTR_REPLACE) f |= fsmeta::kXattrReplace;
  Status st = fs->meta_->SetXattr(fs->Ctx(req), ino, name, std::string_view(value, size), f);
  if (!st.ok()) return fs->ReplyErr(req, st, "setxattr");
  fuse_reply_err(req, 0);
}

void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto* fs = Fs(req);
  auto r = fs->meta_->GetXattr(fs->Ctx(req), ino, name);
  if (!r) {
    int e = FuseFs::Errno(r.error());
    return (void)fuse_reply_err(req, e == ENOENT ? ENODATA : e);
  }
  if (size == 0) return (void)fuse_reply_xattr(req, r->size());
  if (r->size() > size) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, r->data(), r->size());
}

void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto* fs = Fs(req);
  auto r = fs->meta_->ListXattr(fs->Ctx(req), ino);
  if (!r) return fs->ReplyErr(req, r.error(), "listxattr");
  std::string out;
  for (const auto& n : *r) {
    out += n;
    out.push_back('\0');
  }
  if (size == 0) return (void)fuse_reply_xattr(req, out.size());
  if (out.size() > size) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, out.data(), out.size());
}

void OpRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  Status st = fs->meta_->RemoveXattr(fs->Ctx(req), ino, name);
  if (!st.ok()) {
    int e = FuseFs::Errno(st);
    return (void)fuse_reply_err(req, e == ENOENT ? ENODATA : e);
  }
  fuse_reply_err(req, 0);
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  auto* fs = Fs(req);
  Status st = fs->meta_->Access(fs->Ctx(req), ino, mask);
  if (!st.ok()) return fs->ReplyErr(req, st, "access");
  fuse_reply_err(req, 0);
}

fsmeta::LockRange ToRange(const struct flock* l) {
  fsmeta::LockRange r;
  r.type = static_cast<uint32_t>(l->l_type);
  r.start = static_cast<uint64_t>(l->l_start);
  r.end = l->l_len == 0 ? UINT64_MAX : static_cast<uint64_t>(l->l_start + l->l_len - 1);
  r.pid = static_cast<uint32_t>(l->l_pid);
  return r;
}

void OpGetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  auto* fs = Fs(req);
  fsmeta::LockRange r = ToRange(lock);
  Status st = fs->meta_->Getlk(fs->Ctx(req), ino, fi->lock_owner, &r);
  if (!st.ok()) return fs->ReplyErr(req, st, "getlk");
  struct flock out = *lock;
  out.l_type = static_cast<short>(r.type);
  if (r.type != F_UNLCK) {
    out.l_whence = SEEK_SET;
    out.l_start = static_cast<off_t>(r.start);
    out.l_len = r.end == UINT64_MAX ? 0 : static_cast<off_t>(r.end - r.start + 1);
    out.l_pid = static_cast<pid_t>(r.pid);
  }
  fuse_reply_lock(req, &out);
}

// A blocking lock request waits here, not in the metadata engine, so the
// waiter can be interrupted: a signal to the process that called F_SETLKW or
// flock() makes the kernel send FUSE_INTERRUPT, and the call fails with EINTR
// (otherwise Ctrl-C could not stop a process stuck behind another's lock).
// `attempt` tries once without blocking.
Status WaitForLock(fuse_req_t req, const std::function<Status()>& attempt) {
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    Status st = attempt();
    if (fsmeta::ErrnoOf(st) != EAGAIN) return st;
    if (fuse_req_interrupted(req)) return fsmeta::FsError(EINTR, "lock wait interrupted");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

void OpSetlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep) {
  auto* fs = Fs(req);
  fsmeta::LockRange r = ToRange(lock);
  if (r.pid == 0) r.pid = static_cast<uint32_t>(fuse_req_ctx(req)->pid);
  if (r.type != F_UNLCK) {
    // Recorded before the lock exists, so a close racing with it unlocks.
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->plocked_.insert(ino);
  }
  const Context ctx = fs->Ctx(req);
  auto attempt = [&] { return fs->meta_->Setlk(ctx, ino, fi->lock_owner, false, r); };
  Status st = sleep != 0 && r.type != F_UNLCK ? WaitForLock(req, attempt) : attempt();
  if (!st.ok()) return (void)fuse_reply_err(req, FuseFs::Errno(st));
  fuse_reply_err(req, 0);
}

void OpFlock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  auto* fs = Fs(req);
  uint32_t type = F_UNLCK;
  if (op & LOCK_SH) type = F_RDLCK;
  if (op & LOCK_EX) type = F_WRLCK;
  bool block = !(op & LOCK_NB) && type != F_UNLCK;
  const Context ctx = fs->Ctx(req);
  auto attempt = [&] { return fs->meta_->Flock(ctx, ino, fi->lock_owner, type, false); };
  Status st = block ? WaitForLock(req, attempt) : attempt();
  if (!st.ok()) return (void)fuse_reply_err(req, FuseFs::Errno(st));
  fuse_reply_err(req, 0);
}

void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info*) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  Status st = fs->data_->Flush(ino);
  if (st.ok()) st = fs->meta_->Fallocate(fs->Ctx(req), ino, mode, offset, length);
  fs->data_->InvalidateSlices(ino);
  if (!st.ok()) return fs->ReplyErr(req, st, "fallocate");
  auto a = fs->meta_->GetAttr(ino);
  if (a) {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->SetLengthLocked(ino, a->size);
  }
  fuse_reply_err(req, 0);
}

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

// Heartbeat, queued object deletes, trash and stale sessions, until stopped.
class Housekeeper {
 public:
  // `on_tick` runs on every tick (about every 2 s) on the housekeeping thread.
  Housekeeper(Volume* v, bool read_only, std::function<void()> on_tick)
      : v_(v), read_only_(read_only), on_tick_(std::move(on_tick)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Housekeeper() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Run() {
    int tick = 0;
    std::unique_lock<std::mutex> lk(mu_);
    while (!cv_.wait_for(lk, std::chrono::seconds(2), [&] { return stop_; })) {
      lk.unlock();
      tick++;
      if (on_tick_) on_tick_();
      if (tick % 5 == 0) {
        Status st = v_->meta()->Heartbeat();
        if (!st.ok()) kLog.Warn("heartbeat: {}", st.ToString());
      }
      if (!read_only_) {
        auto n = v_->ProcessPendingDeletes(1000);
        if (!n) kLog.Warn("deleting freed slices: {}", n.error().ToString());
        if (tick % 30 == 1) {
          auto c = v_->meta()->CleanStaleSessions(300);
          if (!c) kLog.Warn("cleaning stale sessions: {}", c.error().ToString());
        }
        if (tick % 1800 == 1) {
          auto t = v_->meta()->CleanTrash(NowNs());
          if (!t) kLog.Warn("cleaning trash: {}", t.error().ToString());
        }
      }
      lk.lock();
    }
  }

  Volume* v_;
  bool read_only_;
  std::function<void()> on_tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Raises the kernel readahead of the new mount (FUSE starts at 128 KiB) so a
// sequential reader sends requests of up to 1 MiB and several at a time: fewer
// round trips through FUSE per byte. Best effort (needs root and sysfs). The
// mount's device number comes from mountinfo, since a stat of the mount point
// would wait for this very process.
void RaiseReadahead(const std::string& real_mountpoint, unsigned kb) {
  FILE* f = std::fopen("/proc/self/mountinfo", "r");
  if (!f) return;
  char line[4096];
  std::string dev;
  while (std::fgets(line, sizeof(line), f)) {
    char majmin[64], root[1024], mnt[2048];
    if (std::sscanf(line, "%*s %*s %63s %1023s %2047s", majmin, root, mnt) == 3 && real_mountpoint == mnt) {
      dev = majmin;  // the last match is the newest mount on that path
    }
  }
  std::fclose(f);
  if (dev.empty()) return;
  std::string path = "/sys/class/bdi/" + dev + "/read_ahead_kb";
  FILE* out = std::fopen(path.c_str(), "w");
  if (!out) return;
  std::fprintf(out, "%u\n", kb);
  std::fclose(out);
}

}  // namespace

// The data layer of the live mount, for the buffered-bytes gauge (a callback
// gauge cannot be removed, so it reads through this; null when unmounted).
static std::atomic<DataIO*> g_mounted_data{nullptr};

Status ServeMount(Volume* volume, const MountOptions& options, const std::function<void()>& on_ready) {
  FuseFs fs(volume, options);
  (void)Metrics();
  static std::once_flag gauge_once;
  std::call_once(gauge_once, [] {
    metrics::Registry::Global().AddCallbackGauge(
        "strata_fs_buffered_bytes", "Bytes written through the mount and not yet committed", [] {
          DataIO* d = g_mounted_data.load();
          return d ? static_cast<double>(d->buffered_bytes()) : 0.0;
        });
  });
  g_mounted_data = volume->data();
  struct ClearData {
    ~ClearData() { g_mounted_data = nullptr; }
  } clear_data;
  fuse_lowlevel_ops ops = MakeOps();
  std::string fsname = options.fsname.empty() ? "strata:" + volume->format().name : options.fsname;
  std::string o = fmt::format("fsname={},subtype=strata,default_permissions", fsname);
  if (options.allow_other) o += ",allow_other";
  if (options.read_only) o += ",ro";
  std::vector<std::string> argv_s = {"strata", "-o", o};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), &fs);
  if (!se) return Status::Internal("fuse_session_new failed (see the message above)");
  fs.se_ = se;

  fsmeta::SessionInfo si;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  si.host = host;
  si.mount_point = options.mountpoint;
  si.version = "strata 0.1.0";
  si.pid = static_cast<uint32_t>(getpid());
  auto sid = volume->meta()->NewSession(si);
  if (!sid) {
    fuse_session_destroy(se);
    return sid.error().WithContext("registering the mount session");
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    (void)volume->meta()->CloseSession();
    return Status::Internal("cannot install signal handlers");
  }
  char real[PATH_MAX];
  std::string real_mountpoint = realpath(options.mountpoint.c_str(), real) ? real : options.mountpoint;
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    (void)volume->meta()->CloseSession();
    return Status::IOError(fmt::format("cannot mount on {} (does it exist, and is /dev/fuse usable?)",
                                       options.mountpoint));
  }
  kLog.Info("volume {} mounted on {}", volume->format().name, options.mountpoint);
  RaiseReadahead(real_mountpoint, 4096);
  int rc;
  {
    Housekeeper hk(volume, options.read_only, [&fs] {
      fs.WriteAtimes();
      fs.data_->TrimBuffers();
    });
    if (on_ready) on_ready();
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 0);
    fuse_loop_cfg_set_max_threads(cfg, static_cast<unsigned>(std::max(2, options.max_threads)));
    fuse_loop_cfg_set_idle_threads(cfg, 16);
    rc = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
  }
  Status flushed = volume->data()->FlushAll();
  fs.WriteAtimes();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  Status closed = volume->meta()->CloseSession();
  kLog.Info("volume {} unmounted from {}", volume->format().name, options.mountpoint);
  if (!flushed.ok()) return flushed.WithContext("committing buffered writes at unmount");
  if (!closed.ok()) return closed.WithContext("closing the session");
  if (rc < 0 && rc != -EINTR) return Status::IOError(fmt::format("FUSE loop ended with {}", std::strerror(-rc)));
  return Status::Ok();
}

}  // namespace strata::fs
