// Whole-tree operations: RemoveTree (`strata fs rmr`), a recursive delete done
// in the engine. A directory's files go in batches, one transaction each, so
// removing a tree of N files costs about N/kBatch transactions instead of the
// N unlinks (and as many lookups and getattrs) `rm -rf` sends through FUSE.
// Each batch is complete or absent (a crash leaves a smaller tree, never a
// half-removed entry); subdirectories are emptied first and then removed by
// Rmdir, which keeps its checks (empty, sticky, permissions).
#include <sys/stat.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include <strata/core/clock.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

namespace {
constexpr size_t kBatch = 256;  // entries per transaction
}  // namespace

Result<uint64_t> KvMeta::UnlinkBatch(const Context& ctx, Ino dir,
                                     const std::vector<std::string>& names) {
  const int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  uint64_t removed = 0;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        removed = 0;
        AttrCache as(t);
        STRATA_ASSIGN_OR_RETURN(Attr * p, ExistingDir(as, dir));
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        std::vector<std::string> keys;
        keys.reserve(names.size());
        for (const auto& n : names) keys.push_back(DentKey(dir, n));
        auto dents = t.MultiGet(keys);
        QuotaDeltas quota(qdirs.get(), as);
        for (size_t i = 0; i < names.size(); ++i) {
          if (!dents[i]) continue;  // removed meanwhile
          uint32_t type = 0;
          Ino ino = 0;
          if (!DecodeDent(*dents[i], &type, &ino)) {
            return Status::Corruption("bad directory entry " + Quote(names[i]));
          }
          if (type == S_IFDIR) continue;  // directories go through Rmdir
          Attr* a = as.Get(ino);
          if (a && IsDir(*a)) continue;
          if (a) STRATA_RETURN_IF_ERROR(Sticky(ctx, *p, *a));
          quota.Charge(dir, a ? -static_cast<int64_t>(SpaceOf(*a)) : 0, -1);
          t.Delete(keys[i]);
          if (a) ReleaseLink(t, as, ino, a, dir, names[i], *dents[i], now);
          removed++;
        }
        if (removed == 0) return Status::Ok();
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(dir);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        as.Flush();
        return Status::Ok();
      },
      false));
  return removed;
}

Result<uint64_t> KvMeta::RemoveTree(const Context& ctx, Ino parent, std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EINVAL, "cannot remove \".\" or \"..\"");
  if (parent == kRootIno && name == ".trash") return FsError(EPERM, "cannot remove the trash");
  STRATA_ASSIGN_OR_RETURN(Entry top, Lookup(ctx, parent, name));
  if (!IsDir(top.attr)) {
    STRATA_RETURN_IF_ERROR(Unlink(ctx, parent, name));
    return uint64_t{1};
  }
  struct Level {
    Ino parent, ino;
    std::string name;
  };
  std::vector<Level> stack{{parent, top.ino, std::string(name)}};
  uint64_t removed = 0;
  while (!stack.empty()) {
    const Level cur = stack.back();
    std::vector<std::string> files;
    std::vector<Level> dirs;
    STRATA_ASSIGN_OR_RETURN(auto page, ReadDir(ctx, cur.ino, "", kBatch, false));
    for (const auto& e : page) {
      if (S_ISDIR(e.attr.mode)) {
        dirs.push_back({cur.ino, e.ino, e.name});
      } else {
        files.push_back(e.name);
      }
    }
    if (!files.empty()) {
      STRATA_ASSIGN_OR_RETURN(uint64_t n, UnlinkBatch(ctx, cur.ino, files));
      removed += n;
      if (n == 0 && dirs.empty()) {
        return FsError(EAGAIN, "entries of directory inode " + std::to_string(cur.ino) +
                                   " could not be removed; retry");
      }
    }
    if (!dirs.empty()) {
      // Search permission on the directory is needed to descend, as rm does.
      STRATA_RETURN_IF_ERROR(Access(ctx, cur.ino, X_OK | R_OK));
      for (auto& d : dirs) stack.push_back(std::move(d));
      continue;
    }
    if (page.empty()) {
      STRATA_RETURN_IF_ERROR(Rmdir(ctx, cur.parent, cur.name));
      removed++;
      stack.pop_back();
    }
  }
  return removed;
}

Result<Entry> KvMeta::CloneFile(const Context& ctx, Ino ino, Ino new_parent,
                                std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EEXIST, Quote(name) + " already exists");
  if (new_parent == kTrashIno) return FsError(EPERM, "cannot clone into the trash");
  STRATA_ASSIGN_OR_RETURN(Attr src0, ReadAttr(ino, false));
  if (!IsReg(src0) && !S_ISLNK(src0.mode)) {
    return FsError(IsDir(src0) ? EISDIR : EINVAL,
                   "only regular files and symlinks are cloned one by one");
  }
  STRATA_RETURN_IF_ERROR(CheckSpace(static_cast<int64_t>(SpaceOf(src0)), 1));
  STRATA_ASSIGN_OR_RETURN(Ino nino, NextInode());
  const int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  Entry e;
  e.name = std::string(name);
  e.ino = nino;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* src = as.Get(ino);
        if (!src) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        STRATA_RETURN_IF_ERROR(Access(ctx, *src, R_OK));
        auto existing = as.GetWith(new_parent, DentKey(new_parent, name));
        STRATA_ASSIGN_OR_RETURN(Attr * p, ExistingDir(as, new_parent));
        if (p->nlink == 0) return FsError(ENOENT, "directory was removed");
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        if (existing) return FsError(EEXIST, Quote(name) + " already exists");
        Attr a = *src;
        a.uid = ctx.uid;
        a.gid = (p->mode & S_ISGID) ? p->gid : ctx.gid;
        a.mode &= ~(S_ISUID | S_ISGID);  // as cp does for a new owner
        a.nlink = 1;
        a.parent = new_parent;
        a.atime_ns = a.mtime_ns = a.ctime_ns = now;
        if (IsReg(a)) {
          std::vector<std::pair<std::string, std::string>> chunks;
          t.Scan(ChunkPrefix(ino), "", 0, false, [&](const std::string& k, const std::string& v) {
            chunks.emplace_back(k, v);
            return true;
          });
          for (const auto& [k, v] : chunks) {
            std::vector<Slice> slices;
            if (!DecodeSlices(v, &slices))
              return Status::Corruption("corrupt slice list of inode " + std::to_string(ino));
            std::set<uint64_t> seen;
            for (const auto& sl : slices) {
              if (sl.id != 0 && seen.insert(sl.id).second) t.IncrBy(SliceRefKey(sl.id), 1);
            }
            t.Set(ChunkKey(nino, DecodeBigEndian32(k.data() + kGroupLen)), v);
          }
        } else if (auto target = t.Get(SymKey(ino))) {
          t.Set(SymKey(nino), *target);
        }
        std::vector<std::pair<std::string, std::string>> xattrs;
        t.Scan(XattrPrefix(ino), "", 0, false, [&](const std::string& k, const std::string& v) {
          xattrs.emplace_back(k, v);
          return true;
        });
        for (const auto& [k, v] : xattrs) t.Set(XattrKey(nino, k.substr(kGroupLen)), v);
        QuotaDeltas quota(qdirs.get(), as);
        quota.Charge(new_parent, static_cast<int64_t>(SpaceOf(a)), 1);
        STRATA_RETURN_IF_ERROR(quota.Apply(t));
        as.Put(nino, a);
        t.Set(DentKey(new_parent, name), EncodeDent(a.mode, nino));
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(new_parent);
        as.Flush();
        t.IncrBy(kInodes, 1);
        if (uint64_t sp = SpaceOf(a)) t.IncrBy(kUsedSpace, static_cast<int64_t>(sp));
        e.attr = a;
        return Status::Ok();
      },
      false));
  return e;
}

}  // namespace strata::fsmeta
