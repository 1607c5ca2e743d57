// KvMeta: directories and names. Lookup, creating nodes (Mknod, Mkdir,
// Symlink; Create is in kv_meta_file.cc), Unlink, Rmdir, Rename (with
// RENAME_NOREPLACE and RENAME_EXCHANGE), OpenDir and ReadDir (one page a
// call), and GetSummary (a walk of a subtree).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include <strata/core/clock.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

Result<Entry> KvMeta::Lookup(const Context& ctx, Ino parent, std::string_view name) {
  if (name.size() > 255) return FsError(ENAMETOOLONG, "file name longer than 255 bytes");
  Entry e;
  e.name = std::string(name);
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        bool special = name == "." || name == ".." || (parent == kRootIno && name == ".trash");
        std::optional<std::string> d;
        if (!special) d = as.GetWith(parent, DentKey(parent, name));
        STRATA_ASSIGN_OR_RETURN(Attr * p, ExistingDir(as, parent));
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, X_OK));
        Ino ino;
        if (name == ".") {
          ino = parent;
        } else if (name == "..") {
          ino = parent == kRootIno ? kRootIno : p->parent;
        } else if (parent == kRootIno && name == ".trash") {
          ino = kTrashIno;
        } else {
          if (!d) return FsError(ENOENT, Quote(name) + " not found");
          uint32_t type;
          if (!DecodeDent(*d, &type, &ino))
            return Status::Corruption("bad directory entry " + Quote(name));
        }
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, Quote(name) + " points to a missing inode; run fsck");
        e.ino = ino;
        e.attr = *a;
        return Status::Ok();
      },
      true, true));
  return e;
}

Result<Entry> KvMeta::MakeNode(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                               uint32_t umask, uint64_t rdev, std::string_view symlink_target,
                               bool open_after) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EEXIST, Quote(name) + " already exists");
  uint32_t type = mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  switch (type) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
      break;
    default:
      return FsError(EINVAL, "unknown file type " + std::to_string(type >> 12));
  }
  if (parent == kTrashIno) return FsError(EPERM, "cannot create files in the trash");
  STRATA_RETURN_IF_ERROR(CheckSpace(type == S_IFDIR ? 4096 : 0, 1));
  STRATA_ASSIGN_OR_RETURN(Ino ino, NextInode());
  int64_t now = NowUnixNanos();
  Entry e;
  e.name = std::string(name);
  e.ino = ino;
  const auto qdirs = QuotaDirs();
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        auto existing = as.GetWith(parent, DentKey(parent, name));
        STRATA_ASSIGN_OR_RETURN(Attr * p, ExistingDir(as, parent));
        if (p->nlink == 0) return FsError(ENOENT, "directory was removed");
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        if (existing) return FsError(EEXIST, Quote(name) + " already exists");
        Attr a;
        a.mode = type | InheritAcl(t, parent, ino, type, mode, umask);
        a.uid = ctx.uid;
        a.gid = ctx.gid;
        if (p->mode & S_ISGID) {
          a.gid = p->gid;
          if (type == S_IFDIR) a.mode |= S_ISGID;
        } else if (ctx.check_permission && ctx.uid != 0 && (a.mode & S_ISGID) &&
                   !InGroup(ctx, a.gid)) {
          a.mode &= ~S_ISGID;
        }
        a.nlink = type == S_IFDIR ? 2 : 1;
        a.size = type == S_IFDIR ? 4096 : (type == S_IFLNK ? symlink_target.size() : 0);
        a.rdev = (type == S_IFCHR || type == S_IFBLK) ? rdev : 0;
        a.atime_ns = a.mtime_ns = a.ctime_ns = now;
        a.parent = parent;
        as.Put(ino, a);
        t.Set(DentKey(parent, name), EncodeDent(a.mode, ino));
        if (type == S_IFLNK) t.Set(SymKey(ino), std::string(symlink_target));
        if (type == S_IFDIR) p->nlink++;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        QuotaDeltas quota(qdirs.get(), as);
        quota.Charge(parent, static_cast<int64_t>(SpaceOf(a)), 1);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        as.Flush();
        t.IncrBy(kInodes, 1);
        if (uint64_t sp = SpaceOf(a)) t.IncrBy(kUsedSpace, static_cast<int64_t>(sp));
        e.attr = a;
        return Status::Ok();
      },
      false));
  if (open_after) {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_[ino]++;
  }
  return e;
}

Result<Entry> KvMeta::Mknod(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                            uint32_t umask, uint64_t rdev) {
  if ((mode & S_IFMT) == S_IFLNK) return FsError(EINVAL, "use Symlink to create symbolic links");
  return MakeNode(ctx, parent, name, mode, umask, rdev, {}, false);
}

Result<Entry> KvMeta::Mkdir(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                            uint32_t umask) {
  return MakeNode(ctx, parent, name, S_IFDIR | (mode & 07777), umask, 0, {}, false);
}

Result<Entry> KvMeta::Symlink(const Context& ctx, Ino parent, std::string_view name,
                              std::string_view target) {
  if (target.empty()) return FsError(ENOENT, "empty symlink target");
  if (target.size() > 4096) return FsError(ENAMETOOLONG, "symlink target longer than 4096 bytes");
  return MakeNode(ctx, parent, name, S_IFLNK | 0777, 0, 0, target, false);
}

Result<KvMeta::EntryToRemove> KvMeta::FindEntryToRemove(const Context& ctx, AttrCache& as,
                                                        Ino parent, std::string_view name) const {
  EntryToRemove e;
  e.key = DentKey(parent, name);
  auto d = as.GetWith(parent, e.key);
  STRATA_ASSIGN_OR_RETURN(e.parent, ExistingDir(as, parent));
  STRATA_RETURN_IF_ERROR(Access(ctx, *e.parent, W_OK | X_OK));
  if (!d) return FsError(ENOENT, Quote(name) + " not found");
  e.dent = std::move(*d);
  if (!DecodeDent(e.dent, &e.type, &e.ino))
    return Status::Corruption("bad directory entry " + Quote(name));
  e.attr = as.Get(e.ino);
  return e;
}

Status KvMeta::Unlink(const Context& ctx, Ino parent, std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EISDIR, Quote(name) + " is a directory");
  int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        STRATA_ASSIGN_OR_RETURN(EntryToRemove e, FindEntryToRemove(ctx, as, parent, name));
        Attr* p = e.parent;
        Attr* a = e.attr;
        if (a ? IsDir(*a) : e.type == S_IFDIR)
          return FsError(EISDIR, Quote(name) + " is a directory");
        if (a) STRATA_RETURN_IF_ERROR(Sticky(ctx, *p, *a));
        QuotaDeltas quota(qdirs.get(), as);
        quota.Charge(parent, a ? -static_cast<int64_t>(SpaceOf(*a)) : 0, -1);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        t.Delete(e.key);
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        if (a) ReleaseLink(t, as, e.ino, a, parent, name, e.dent, now);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Rmdir(const Context& ctx, Ino parent, std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == ".") return FsError(EINVAL, "cannot remove \".\"");
  if (name == "..") return FsError(ENOTEMPTY, "cannot remove \"..\"");
  int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        STRATA_ASSIGN_OR_RETURN(EntryToRemove e, FindEntryToRemove(ctx, as, parent, name));
        Attr* p = e.parent;
        Attr* a = e.attr;
        if (a && !IsDir(*a)) return FsError(ENOTDIR, Quote(name) + " is not a directory");
        if (a) {
          STRATA_RETURN_IF_ERROR(Sticky(ctx, *p, *a));
          bool empty = true;
          t.Scan(DentPrefix(e.ino), "", 1, true, [&](const std::string&, const std::string&) {
            empty = false;
            return false;
          });
          if (!empty) return FsError(ENOTEMPTY, "directory " + Quote(name) + " is not empty");
          QuotaDeltas quota(qdirs.get(), as);
          quota.Charge(parent, -static_cast<int64_t>(SpaceOf(*a)), -1);
          STRATA_RETURN_IF_ERROR(quota.Apply(t));
          FreeInode(t, e.ino, *a);
          as.Drop(e.ino);
          // A removed directory takes its quota with it.
          if (qdirs && qdirs->count(e.ino)) t.Delete(QuotaKey(e.ino));
        }
        t.Delete(e.key);
        if (p->nlink > 2) p->nlink--;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Rename(const Context& ctx, Ino p1, std::string_view n1, Ino p2, std::string_view n2,
                      uint32_t flags) {
  STRATA_RETURN_IF_ERROR(CheckName(n1));
  STRATA_RETURN_IF_ERROR(CheckName(n2));
  if ((flags & ~(kRenameNoReplace | kRenameExchange)) != 0 ||
      flags == (kRenameNoReplace | kRenameExchange)) {
    return FsError(EINVAL, "invalid rename flags " + std::to_string(flags));
  }
  if (n1 == "." || n1 == ".." || n2 == "." || n2 == "..") {
    return FsError(EINVAL, "cannot rename \".\" or \"..\"");
  }
  if (p2 == kTrashIno) return FsError(EPERM, "cannot rename into the trash");
  int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* pa1 = as.Get(p1);
        if (!pa1)
          return FsError(ENOENT, "directory inode " + std::to_string(p1) + " does not exist");
        if (!IsDir(*pa1))
          return FsError(ENOTDIR, "inode " + std::to_string(p1) + " is not a directory");
        Attr* pa2 = as.Get(p2);
        if (!pa2)
          return FsError(ENOENT, "directory inode " + std::to_string(p2) + " does not exist");
        if (!IsDir(*pa2))
          return FsError(ENOTDIR, "inode " + std::to_string(p2) + " is not a directory");
        if (pa2->nlink == 0) return FsError(ENOENT, "target directory was removed");
        STRATA_RETURN_IF_ERROR(Access(ctx, *pa1, W_OK | X_OK));
        STRATA_RETURN_IF_ERROR(Access(ctx, *pa2, W_OK | X_OK));
        std::string skey = DentKey(p1, n1), tkey = DentKey(p2, n2);
        auto sd = t.Get(skey);
        if (!sd) return FsError(ENOENT, Quote(n1) + " not found");
        uint32_t stype, ttype = 0;
        Ino sino, tino = 0;
        if (!DecodeDent(*sd, &stype, &sino))
          return Status::Corruption("bad directory entry " + Quote(n1));
        Attr* sa = as.Get(sino);
        if (!sa) return FsError(ENOENT, Quote(n1) + " points to a missing inode; run fsck");
        STRATA_RETURN_IF_ERROR(Sticky(ctx, *pa1, *sa));
        auto td = t.Get(tkey);
        if (p1 == p2 && n1 == n2) return Status::Ok();
        Attr* ta = nullptr;
        if (td) {
          if (!DecodeDent(*td, &ttype, &tino))
            return Status::Corruption("bad directory entry " + Quote(n2));
          if (flags & kRenameNoReplace) return FsError(EEXIST, Quote(n2) + " already exists");
          if (tino == sino && !(flags & kRenameExchange))
            return Status::Ok();  // two links of one file
          ta = as.Get(tino);
          if (ta) STRATA_RETURN_IF_ERROR(Sticky(ctx, *pa2, *ta));
        } else if (flags & kRenameExchange) {
          return FsError(ENOENT, Quote(n2) + " not found");
        }
        // A directory cannot move into itself or below itself.
        auto check_not_below = [&](Ino dir, Ino dest) -> Status {
          Ino cur = dest;
          for (int depth = 0; cur != kRootIno && depth < 10000; ++depth) {
            if (cur == dir) return FsError(EINVAL, "cannot move a directory into itself");
            Attr* c = as.Get(cur);
            if (!c || c->parent == 0 || c->parent == cur) break;
            cur = c->parent;
          }
          return Status::Ok();
        };
        if (IsDir(*sa) && p1 != p2) {
          STRATA_RETURN_IF_ERROR(check_not_below(sino, p2));
          STRATA_RETURN_IF_ERROR(Access(ctx, *sa, W_OK));  // its ".." changes
        }
        QuotaDeltas quota(qdirs.get(), as);
        if (quota.active()) {
          if (p1 != p2) STRATA_RETURN_IF_ERROR(quota.Move(t, sino, *sa, p1, p2));
          if (ta && (flags & kRenameExchange)) {
            if (p1 != p2) STRATA_RETURN_IF_ERROR(quota.Move(t, tino, *ta, p2, p1));
          } else if (ta) {
            quota.Charge(p2, -static_cast<int64_t>(SpaceOf(*ta)), -1);
          }
        }
        if (flags & kRenameExchange) {
          if (ta && IsDir(*ta) && p1 != p2) {
            STRATA_RETURN_IF_ERROR(check_not_below(tino, p1));
            STRATA_RETURN_IF_ERROR(Access(ctx, *ta, W_OK));
          }
          t.Set(skey, *td);
          t.Set(tkey, *sd);
          if (p1 != p2) {
            if (IsDir(*sa)) {
              pa1->nlink--;
              pa2->nlink++;
            }
            if (ta && IsDir(*ta)) {
              pa2->nlink--;
              pa1->nlink++;
            }
          }
          if (IsDir(*sa) || sa->nlink == 1) sa->parent = p2;
          sa->ctime_ns = now;
          as.Dirty(sino);
          if (ta) {
            if (IsDir(*ta) || ta->nlink == 1) ta->parent = p1;
            ta->ctime_ns = now;
            as.Dirty(tino);
          }
        } else {
          if (ta) {
            if (IsDir(*ta)) {
              if (!IsDir(*sa)) return FsError(EISDIR, Quote(n2) + " is a directory");
              bool empty = true;
              t.Scan(DentPrefix(tino), "", 1, true, [&](const std::string&, const std::string&) {
                empty = false;
                return false;
              });
              if (!empty) return FsError(ENOTEMPTY, "directory " + Quote(n2) + " is not empty");
              if (qdirs && qdirs->count(tino)) t.Delete(QuotaKey(tino));
              FreeInode(t, tino, *ta);
              as.Drop(tino);
              pa2->nlink--;
            } else {
              if (IsDir(*sa)) return FsError(ENOTDIR, Quote(n2) + " is not a directory");
              ReleaseLink(t, as, tino, ta, p2, n2, *td, now);
            }
          } else if (td && ttype == S_IFDIR && !IsDir(*sa)) {
            return FsError(EISDIR, Quote(n2) + " is a directory");
          }
          t.Delete(skey);
          t.Set(tkey, *sd);
          if (IsDir(*sa) && p1 != p2) {
            pa1->nlink--;
            pa2->nlink++;
            sa->parent = p2;
          } else if (!IsDir(*sa) && sa->nlink == 1) {
            sa->parent = p2;
          }
          sa->ctime_ns = now;
          as.Dirty(sino);
        }
        pa1->mtime_ns = pa1->ctime_ns = now;
        pa2->mtime_ns = pa2->ctime_ns = now;
        as.Dirty(p1);
        as.Dirty(p2);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        as.Flush();
        return Status::Ok();
      },
      false);
}

// ---- directories ----------------------------------------------------------

Status KvMeta::OpenDir(const Context& ctx, Ino ino) {
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  if (!IsDir(a)) return FsError(ENOTDIR, "inode " + std::to_string(ino) + " is not a directory");
  return Access(ctx, a, R_OK);
}

Result<std::vector<Entry>> KvMeta::ReadDir(const Context&, Ino ino, std::string_view after,
                                           size_t limit, bool plus) {
  if (limit == 0) limit = 1000;
  std::vector<Entry> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        AttrCache as(t);
        Attr* d = as.Get(ino);
        if (!d)
          return FsError(ENOENT, "directory inode " + std::to_string(ino) + " does not exist");
        if (!IsDir(*d))
          return FsError(ENOTDIR, "inode " + std::to_string(ino) + " is not a directory");
        std::string prefix = DentPrefix(ino);
        std::string start = after.empty() ? std::string() : DentKey(ino, after);
        t.Scan(prefix, start, limit, false, [&](const std::string& k, const std::string& v) {
          Entry e;
          e.name = k.substr(prefix.size());
          uint32_t type;
          if (DecodeDent(v, &type, &e.ino)) {
            e.attr.mode = type;
            out.push_back(std::move(e));
          }
          return true;
        });
        if (plus && !out.empty()) {
          std::vector<std::string> keys;
          keys.reserve(out.size());
          for (const auto& e : out) keys.push_back(AttrKey(e.ino));
          auto vals = t.MultiGet(keys);
          for (size_t i = 0; i < out.size(); ++i) {
            if (vals[i]) DecodeAttr(*vals[i], &out[i].attr);
          }
        }
        return Status::Ok();
      },
      true));
  return out;
}

Result<Summary> KvMeta::GetSummary(const Context& ctx, Ino ino) {
  Summary s;
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  std::vector<Ino> stack;
  if (IsDir(a)) {
    s.dirs++;
    s.size += 4096;
    stack.push_back(ino);
  } else {
    s.files++;
    s.length += a.size;
    s.size += SpaceOf(a);
  }
  while (!stack.empty()) {
    Ino d = stack.back();
    stack.pop_back();
    std::string after;
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(auto page, ReadDir(ctx, d, after, 1000, true));
      if (page.empty()) break;
      after = page.back().name;
      for (const auto& e : page) {
        if (IsDir(e.attr)) {
          s.dirs++;
          s.size += 4096;
          stack.push_back(e.ino);
        } else {
          s.files++;
          s.length += IsReg(e.attr) ? e.attr.size : 0;
          s.size += SpaceOf(e.attr);
        }
      }
    }
  }
  return s;
}

}  // namespace strata::fsmeta
