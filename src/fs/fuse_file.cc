// FUSE file handles and I/O: open (close-to-open, keep_cache, O_TRUNC,
// relatime written behind) and create, read and write through DataIO, flush,
// fsync, release (what the page cache holds afterwards), fallocate.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>

#include <strata/core/clock.h>

#include "fs/data_io.h"
#include "fs/fuse_fs.h"

namespace strata::fs::fusefs {
namespace {

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
// Close-to-open across mounts: `in` was read from the metadata engine by this
// open (not from any cache), and the page cache is kept only when the file's
// mtime, ctime and length are exactly those of the version this mount last
// saw and nothing was written through this mount since: also while other
// descriptors of this mount hold the file open, since another mount may
// have rewritten it meanwhile. Returns true when the file changed since
// this mount last saw it (another client wrote it): then the kernel's cached
// attributes are stale too.
// `in` was read after Seq() returned seq0; when the file is not open here yet
// and a commit or size change came since, it is read again (it may predate a
// truncate, and would set a stale length).
bool OpenHandle(FuseFs* fs, Ino ino, const Attr& in, fuse_file_info* fi, bool direct_writes,
                uint64_t seq0) {
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
      a.ctime_ns = fresh->ctime_ns;
    }
    lk.lock();
  }
  InodeState& s = fs->inodes_[ino];
  const bool seen = s.mtime_ns != 0 || s.ctime_ns != 0;
  const bool unchanged =
      seen && s.mtime_ns == a.mtime_ns && s.ctime_ns == a.ctime_ns && s.seen_length == a.size;
  fi->keep_cache = unchanged && !s.written ? 1 : 0;
  if (direct_writes) fi->direct_io = 1;
  if (s.opens > 0 && (s.written || unchanged)) {
    // Our own writes may be newer than `in` (buffered, or committed after it
    // was read): the length only grows here.
    s.length = std::max(s.length, a.size);
  } else {
    // Not open here, or changed by another client while open here (which
    // may have shortened it): the metadata's length.
    s.length = a.size;
    if (s.opens == 0) s.written = false;
  }
  // The page cache holds this version from now on (keep_cache 0 drops older
  // pages when the open completes).
  s.mtime_ns = a.mtime_ns;
  s.ctime_ns = a.ctime_ns;
  s.seen_length = a.size;
  s.revalidated = false;
  s.opens++;
  return seen && !unchanged && !s.written;
}

FileHandle* Handle(fuse_file_info* fi) { return reinterpret_cast<FileHandle*>(fi->fh); }

}  // namespace

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  int acc = fi->flags & O_ACCMODE;
  if (fs->opts_.read_only && (acc != O_RDONLY || (fi->flags & O_TRUNC)))
    return (void)fuse_reply_err(req, EROFS);
  Context ctx = fs->Ctx(req);
  uint64_t seq0 = fs->Seq();
  auto a = fs->meta_->Open(ctx, ino, fi->flags);
  // ENOENT: the inode is gone, reached through a name another mount removed
  // or replaced since the kernel cached it.
  if (!a) return fs->ReplyErrReached(req, a.error(), "open");
  Attr attr = *a;
  if (!S_ISDIR(attr.mode) && (attr.nlink == 0 || attr.parent == fsmeta::kTrashIno)) {
    // Unlinked (in the trash, or kept for another open), yet reached by a
    // path: through a name cached before another mount replaced or removed
    // it. Opening it would hand the caller the old file; ESTALE makes the
    // kernel look the name up again and open what it names now. Not when
    // the file is open here (/proc/self/fd/N of an unlinked file reopens
    // it), looked up in .trash, or returned by the lookup of the kernel's
    // retry of an open answered so (a second ESTALE would fail the call:
    // another rename raced the retry; that open then just gets the file
    // the name had a moment ago).
    bool allowed;
    {
      std::lock_guard<std::mutex> lk(fs->mu_);
      auto it = fs->inodes_.find(ino);
      allowed = it != fs->inodes_.end() &&
                (it->second.opens > 0 || it->second.via_trash || it->second.revalidated);
    }
    if (!allowed) {
      (void)fs->meta_->Close(ino);
      return fs->ReplyStale(req, "open");
    }
  }
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
    const int64_t now = NowUnixNanos();
    attr.atime_ns = std::max(attr.atime_ns, fs->PendingAtime(ino));
    if (attr.atime_ns <= attr.mtime_ns || attr.atime_ns <= attr.ctime_ns ||
        now - attr.atime_ns >= int64_t{86400} * 1000000000) {
      attr.atime_ns = now;
      std::lock_guard<std::mutex> lk(fs->atime_mu_);
      fs->pending_atime_[ino] = now;
    }
  }
  if (OpenHandle(fs, ino, attr, fi, DirectWrites(fs, ino, attr, fi->flags, false), seq0) &&
      fs->se_) {
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
  if (cold_read)
    fs->data_->PrefetchHead(ino, attr.size);  // after the reply: it adds no latency to the open
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
              fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  uint64_t seq0 = fs->Seq();
  auto e = fs->meta_->Create(fs->Ctx(req), parent, name, mode, fuse_req_ctx(req)->umask, fi->flags);
  if (!e) return fs->ReplyErr(req, e.error(), "create");
  {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->inodes_.erase(e->ino);
  }
  OpenHandle(fs, e->ino, e->attr, fi, DirectWrites(fs, e->ino, e->attr, fi->flags, true),
             fs->Seq());
  fuse_entry_param p;
  fs->FillEntry(*e, &p, seq0);
  if (fuse_reply_create(req, &p, fi) == -ENOENT) {
    delete reinterpret_cast<FileHandle*>(fi->fh);
    (void)fs->meta_->Close(e->ino);
  }
}

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

void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  // Directory quotas: refuse a growing write here rather than at close (a
  // no-op without quotas; the commit checks exactly).
  if (Status q = fs->meta_->CheckQuotaGrowth(ino, static_cast<uint64_t>(off) + size); !q.ok()) {
    return fs->ReplyErr(req, q, "write");
  }
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
  if (st.ok()) st = fs->data_->store()->SyncStage();  // --writeback: staged blocks on disk first
  if (st.ok()) st = fs->meta_->Sync();  // the commits durable against power loss too
  if (!st.ok()) return fs->ReplyErr(req, st, "fsync");
  fuse_reply_err(req, 0);
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  FileHandle* h = Handle(fi);
  if (fi->flock_release) {
    std::lock_guard<std::mutex> lk(fs->mu_);
    ++fs->releasing_[ino];
  }
  Status st = fs->data_->Flush(ino);
  if (!st.ok()) kLog.Error("inode {}: flushing at release: {}", ino, st.ToString());
  if (fi->flock_release) {
    (void)fs->meta_->Flock(fs->Ctx(req), ino, fi->lock_owner, F_UNLCK, false);
    {
      std::lock_guard<std::mutex> lk(fs->mu_);
      if (--fs->releasing_[ino] <= 0) fs->releasing_.erase(ino);
    }
    fs->released_cv_.notify_all();
  }
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
        it->second.ctime_ns = a->ctime_ns;
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

void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info* fi) {
  auto* fs = Fs(req);
  if (fs->ReadOnly(req)) return;
  // fallocate(2) works on a descriptor: the kernel refuses one not open for
  // writing (EBADF), and one that is may allocate whatever the mode says now.
  Context ctx = fs->Ctx(req);
  if (fi != nullptr && fi->fh != 0) {
    if (!WritableHandle(fi)) return (void)fuse_reply_err(req, EBADF);
    ctx.write_handle = true;
  }
  Status st = fs->data_->Flush(ino);
  if (st.ok()) st = fs->meta_->Fallocate(ctx, ino, mode, offset, length);
  fs->data_->InvalidateSlices(ino);
  if (!st.ok()) return fs->ReplyErr(req, st, "fallocate");
  auto a = fs->meta_->GetAttr(ino);
  if (a) {
    std::lock_guard<std::mutex> lk(fs->mu_);
    fs->SetLengthLocked(ino, a->size);
  }
  fuse_reply_err(req, 0);
}

}  // namespace strata::fs::fusefs
