// KvMeta: inodes. Attributes (GetAttr, SetAttr, Access, StatFS), symlink
// targets, hard links and link counts, and what happens when the last link
// goes: the trash, a sustained inode (unlinked while open) or FreeInode;
// CleanTrash releases trash entries past their days.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include <strata/core/clock.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

// ---- attributes and names -------------------------------------------------

Result<StatFs> KvMeta::StatFS(const Context&, Ino) {
  int64_t used = 0, inodes = 0;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto u = t.Get(kUsedSpace);
        auto i = t.Get(kInodes);
        used = u ? std::stoll(*u) : 0;
        inodes = i ? std::stoll(*i) : 0;
        return Status::Ok();
      },
      true));
  Format f;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    if (format_) f = *format_;
  }
  StatFs s;
  s.total_space = f.capacity ? f.capacity : (1ull << 50);
  s.used_space = static_cast<uint64_t>(std::max<int64_t>(used, 0));
  s.avail_space = s.total_space > s.used_space ? s.total_space - s.used_space : 0;
  s.used_inodes = static_cast<uint64_t>(std::max<int64_t>(inodes, 0));
  uint64_t limit = f.inodes ? f.inodes : (10ull << 30);
  s.avail_inodes = limit > s.used_inodes ? limit - s.used_inodes : 0;
  return s;
}

Result<Attr> KvMeta::GetAttr(Ino ino) { return ReadAttr(ino, true); }

Result<Attr> KvMeta::ReadAttr(Ino ino, bool cacheable) {
  Attr out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        out = *a;
        return Status::Ok();
      },
      true, cacheable));
  return out;
}

Status KvMeta::Access(const Context& ctx, Ino ino, int mask) {
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  return Access(ctx, a, mask);
}

Result<Attr> KvMeta::SetAttr(const Context& ctx, Ino ino, uint32_t mask, const Attr& in) {
  if ((mask & kSetSize) && in.size > kMaxFileSize) return FsError(EFBIG, "file size too large");
  int64_t now = NowUnixNanos();
  Attr out;
  bool root = !ctx.check_permission || ctx.uid == 0;
  const auto qdirs = (mask & kSetSize) ? QuotaDirs() : nullptr;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        bool owner = root || ctx.uid == a->uid;
        if (mask & kSetSize) {
          if (IsDir(*a)) return FsError(EISDIR, "cannot truncate a directory");
          if (!IsReg(*a)) return FsError(EINVAL, "cannot truncate a special file");
          if (!ctx.write_handle) STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
          if (in.size > a->size) {
            STRATA_RETURN_IF_ERROR(
                CheckSpace(static_cast<int64_t>((in.size + 4095) / 4096 * 4096) -
                               static_cast<int64_t>((a->size + 4095) / 4096 * 4096),
                           0));
          }
          if (in.size != a->size && a->nlink > 0) {
            QuotaDeltas quota(qdirs.get(), as);
            quota.Charge(a->parent,
                         static_cast<int64_t>((in.size + 4095) / 4096 * 4096) -
                             static_cast<int64_t>((a->size + 4095) / 4096 * 4096),
                         0);
            STRATA_RETURN_IF_ERROR(quota.Apply(t));
          }
          if (in.size != a->size)
            TruncateInTxn(t, ino, a, in.size, now);
          else
            a->mtime_ns = now;
        }
        if (mask & (kSetUid | kSetGid)) {
          if ((mask & kSetUid) && in.uid != a->uid && !root) {
            return FsError(EPERM, "only root may change the owner");
          }
          if ((mask & kSetGid) && in.gid != a->gid && !root &&
              (ctx.uid != a->uid || !InGroup(ctx, in.gid))) {
            return FsError(EPERM, "only the owner may change the group, to one of its groups");
          }
          if (((mask & kSetUid) && in.uid != a->uid) || ((mask & kSetGid) && in.gid != a->gid)) {
            if (!IsDir(*a)) a->mode &= ~(S_ISUID | (a->mode & S_IXGRP ? S_ISGID : 0));
          }
          if (mask & kSetUid) a->uid = in.uid;
          if (mask & kSetGid) a->gid = in.gid;
        }
        if (mask & kSetMode) {
          // Clearing set-user-ID/set-group-ID and nothing else is what the
          // kernel asks for on a write or truncate by someone without
          // CAP_FSETID, who need not own the file (a chmod by a non-owner is
          // refused by the kernel before it gets here).
          const uint32_t old_bits = a->mode & 07777, new_bits = in.mode & 07777;
          const uint32_t dropped = old_bits & ~new_bits;
          const bool only_clears_setid =
              dropped != 0 && (new_bits & ~old_bits) == 0 && (dropped & ~(S_ISUID | S_ISGID)) == 0;
          if (!owner && !only_clears_setid)
            return FsError(EPERM, "only the owner may change the mode");
          uint32_t m = in.mode & 07777;
          if (!root && !InGroup(ctx, a->gid)) m &= ~S_ISGID;
          a->mode = (a->mode & S_IFMT) | m;
          ChmodAcl(t, ino, m);
        }
        if (mask & (kSetAtime | kSetMtime)) {
          // Through a write handle these are the times of the descriptor's
          // own writes, written back by the kernel's writeback cache
          // (utimensat never comes with a handle).
          if (!owner && !ctx.write_handle)
            return FsError(EPERM, "only the owner may set explicit times");
          if (mask & kSetAtime) a->atime_ns = in.atime_ns;
          if (mask & kSetMtime) a->mtime_ns = in.mtime_ns;
        }
        if (mask & (kSetAtimeNow | kSetMtimeNow)) {
          // (The kernel sends ftruncate's own mtime update with the size.)
          if (!owner && !ctx.write_handle) STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
          if (mask & kSetAtimeNow) a->atime_ns = now;
          if (mask & kSetMtimeNow) a->mtime_ns = now;
        }
        if (!(mask & kSetKeepCtime)) a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        out = *a;
        return Status::Ok();
      },
      false));
  return out;
}

void KvMeta::FreeInode(KvTxn& t, Ino ino, const Attr& a) {
  t.Delete(AttrKey(ino));
  if (S_ISLNK(a.mode)) t.Delete(SymKey(ino));
  std::vector<std::string> keys;
  t.Scan(XattrPrefix(ino), "", 0, true, [&](const std::string& k, const std::string&) {
    keys.push_back(k);
    return true;
  });
  for (const auto& k : keys) t.Delete(k);
  if (IsReg(a)) {
    std::vector<std::pair<std::string, std::string>> chunks;
    t.Scan(ChunkPrefix(ino), "", 0, false, [&](const std::string& k, const std::string& v) {
      chunks.emplace_back(k, v);
      return true;
    });
    for (auto& [k, v] : chunks) {
      QueueSlices(t, v);
      t.Delete(k);
    }
  }
  t.IncrBy(kInodes, -1);
  if (uint64_t sp = SpaceOf(a)) t.IncrBy(kUsedSpace, -static_cast<int64_t>(sp));
}

// The last link to a non-directory inode went away (its entry is already
// removed): keep it in the trash, sustain it while open, or free it.
void KvMeta::ReleaseLink(KvTxn& t, AttrCache& as, Ino ino, Attr* a, Ino parent,
                         std::string_view name, const std::string& dent_value, int64_t now) {
  a->ctime_ns = now;
  if (a->nlink > 1) {
    a->nlink--;
    if (a->parent == parent) a->parent = 0;
    as.Dirty(ino);
    return;
  }
  int days = TrashDays();
  if (days > 0 && parent != kTrashIno) {
    std::string tname = std::to_string(now / 1000000000) + "-" + std::to_string(parent) + "-" +
                        std::to_string(ino) + "-" + std::string(name);
    if (tname.size() > 255) tname.resize(255);
    t.Set(DentKey(kTrashIno, tname), dent_value);
    a->parent = kTrashIno;
    as.Dirty(ino);
    return;
  }
  a->nlink = 0;
  if (MarkSustainedIfOpen(ino)) {
    t.Set(SustainKey(sid_, ino), "");
    as.Dirty(ino);
    return;
  }
  FreeInode(t, ino, *a);
  as.Drop(ino);
}

Result<std::string> KvMeta::ReadLink(Ino ino) {
  std::string out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (!S_ISLNK(a->mode))
          return FsError(EINVAL, "inode " + std::to_string(ino) + " is not a symlink");
        auto v = t.Get(SymKey(ino));
        if (!v)
          return Status::Corruption("symlink " + std::to_string(ino) + " has no target; run fsck");
        out = *v;
        return Status::Ok();
      },
      true));
  return out;
}

Result<Entry> KvMeta::Link(const Context& ctx, Ino ino, Ino new_parent, std::string_view new_name) {
  STRATA_RETURN_IF_ERROR(CheckName(new_name));
  if (new_name == "." || new_name == "..")
    return FsError(EEXIST, Quote(new_name) + " already exists");
  if (new_parent == kTrashIno) return FsError(EPERM, "cannot link into the trash");
  int64_t now = NowUnixNanos();
  Entry e;
  e.name = std::string(new_name);
  e.ino = ino;
  const auto qdirs = QuotaDirs();
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (IsDir(*a)) return FsError(EPERM, "cannot hard-link a directory");
        if (a->nlink == 0) return FsError(ENOENT, "file was removed");
        Attr* p = as.Get(new_parent);
        if (!p)
          return FsError(ENOENT,
                         "directory inode " + std::to_string(new_parent) + " does not exist");
        if (!IsDir(*p))
          return FsError(ENOTDIR, "inode " + std::to_string(new_parent) + " is not a directory");
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        if (t.Get(DentKey(new_parent, new_name)))
          return FsError(EEXIST, Quote(new_name) + " already exists");
        if (a->nlink >= 65000) return FsError(EMLINK, "too many links");
        QuotaDeltas quota(qdirs.get(), as);
        quota.Charge(new_parent, static_cast<int64_t>(SpaceOf(*a)), 1);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        t.Set(DentKey(new_parent, new_name), EncodeDent(a->mode, ino));
        a->nlink++;
        if (a->parent != new_parent) a->parent = 0;
        a->ctime_ns = now;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(ino);
        as.Dirty(new_parent);
        as.Flush();
        e.attr = *a;
        return Status::Ok();
      },
      false));
  return e;
}

Result<int> KvMeta::CleanTrash(int64_t now_ns) {
  int days = TrashDays();
  int released = 0;
  std::string after;
  for (;;) {
    Context root;
    STRATA_ASSIGN_OR_RETURN(auto page, ReadDir(root, kTrashIno, after, 1000, false));
    if (page.empty()) break;
    after = page.back().name;
    for (const auto& e : page) {
      int64_t ts = std::atoll(e.name.c_str());
      if (now_ns / 1000000000 - ts < static_cast<int64_t>(days) * 86400) continue;
      Status st = Txn(
          [&](KvTxn& t) {
            auto d = t.Get(DentKey(kTrashIno, e.name));
            if (!d) return Status::Ok();
            t.Delete(DentKey(kTrashIno, e.name));
            AttrCache as(t);
            Attr* a = as.Get(e.ino);
            if (a && !IsDir(*a)) {
              a->nlink = a->nlink > 0 ? a->nlink : 1;
              ReleaseLink(t, as, e.ino, a, kTrashIno, e.name, *d, NowUnixNanos());
              as.Flush();
            }
            return Status::Ok();
          },
          false);
      STRATA_RETURN_IF_ERROR(st);
      ++released;
    }
  }
  return released;
}

}  // namespace strata::fsmeta
