// FUSE xattr and lock requests: set/get/list/removexattr, POSIX record
// locks (getlk, setlk) and flock; a blocking lock waits here, so the waiter
// can be interrupted.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/xattr.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "fs/fuse_fs.h"

namespace strata::fs::fusefs {
namespace {

fsmeta::LockRange ToRange(const struct flock* l) {
  fsmeta::LockRange r;
  r.type = static_cast<uint32_t>(l->l_type);
  r.start = static_cast<uint64_t>(l->l_start);
  r.end = l->l_len == 0 ? UINT64_MAX : static_cast<uint64_t>(l->l_start + l->l_len - 1);
  r.pid = static_cast<uint32_t>(l->l_pid);
  return r;
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

}  // namespace

void OpSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags) {
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
  {
    // A close of this inode on this mount whose unlock is still on its way
    // (FuseFs::releasing_) goes first: for the caller that lock is gone, and
    // the kernel may reuse the closed file's lock owner for a new open, whose
    // lock that late unlock would otherwise drop.
    std::unique_lock<std::mutex> lk(fs->mu_);
    fs->released_cv_.wait_for(lk, std::chrono::seconds(5),
                              [&] { return !fs->releasing_.count(ino); });
  }
  auto attempt = [&] { return fs->meta_->Flock(ctx, ino, fi->lock_owner, type, false); };
  Status st = block ? WaitForLock(req, attempt) : attempt();
  // Another mount's close may have returned with its unlock still on the way
  // (its RELEASE): a refused LOCK_NB looks again a few times within 15 ms
  // before it answers EAGAIN.
  for (int i = 0; !block && i < 3 && FuseFs::Errno(st) == EAGAIN; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    st = attempt();
  }
  if (!st.ok()) return (void)fuse_reply_err(req, FuseFs::Errno(st));
  fuse_reply_err(req, 0);
}

}  // namespace strata::fs::fusefs
