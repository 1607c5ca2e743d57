// FUSE requests on names and directories: readlink, mknod, mkdir, unlink,
// rmdir, symlink, rename, link; opendir, readdir and readdirplus (continued
// by name across pages, whatever offsets the kernel hands back), releasedir,
// fsyncdir.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "fs/fuse_fs.h"

namespace strata::fs::fusefs {
namespace {

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
    size_t need = plus
                      ? fuse_add_direntry_plus(req, out.data() + used, size - used, name, &e, next)
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

void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
               bool plus) {
  std::string out;
  size_t used = 0;
  int err = FillReaddir(req, ino, size, off, reinterpret_cast<DirHandle*>(fi->fh), plus, out, used);
  if (err != 0) return (void)fuse_reply_err(req, err);
  fuse_reply_buf(req, out.data(), used);
}

}  // namespace

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
  fs->ReplyEntry(req,
                 fs->meta_->Mknod(fs->Ctx(req), parent, name, mode, fuse_req_ctx(req)->umask, rdev),
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

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto* fs = Fs(req);
  Status st = fs->meta_->OpenDir(fs->Ctx(req), ino);
  if (!st.ok()) return fs->ReplyErrReached(req, st, "opendir");
  fi->fh = reinterpret_cast<uint64_t>(new DirHandle());
  fuse_reply_open(req, fi);
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

}  // namespace strata::fs::fusefs
