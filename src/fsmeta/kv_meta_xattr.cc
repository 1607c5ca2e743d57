// KvMeta: extended attributes, one X<ino><name> key each (values up to 64 KiB).
#include <unistd.h>

#include <cerrno>

#include <strata/core/clock.h>

#include "fsmeta/acl.h"
#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

// ---- xattrs ---------------------------------------------------------------

Result<std::string> KvMeta::GetXattr(const Context& ctx, Ino ino, std::string_view name) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  std::string out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        // POSIX ACLs are metadata like the mode: anyone may read them (getfacl).
        if (!acl::IsAclName(name)) STRATA_RETURN_IF_ERROR(Access(ctx, *a, R_OK));
        auto v = t.Get(XattrKey(ino, name));
        if (!v) return FsError(ENODATA, "no xattr " + Quote(name));
        out = *v;
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::SetXattr(const Context& ctx, Ino ino, std::string_view name, std::string_view value,
                        int flags) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  if (value.size() > 65536) return FsError(E2BIG, "xattr value larger than 64 KiB");
  int64_t now = NowUnixNanos();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        std::string key = XattrKey(ino, name);
        bool exists = t.Get(key).has_value();
        if ((flags & kXattrCreate) && exists)
          return FsError(EEXIST, "xattr " + Quote(name) + " exists");
        if ((flags & kXattrReplace) && !exists) return FsError(ENODATA, "no xattr " + Quote(name));
        if (acl::IsAclName(name)) {
          STRATA_RETURN_IF_ERROR(SetAclXattr(ctx, t, ino, *a, name, value));
        } else {
          STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
          t.Set(key, std::string(value));
        }
        a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Result<std::vector<std::string>> KvMeta::ListXattr(const Context& ctx, Ino ino) {
  std::vector<std::string> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        (void)ctx;
        std::string prefix = XattrPrefix(ino);
        t.Scan(prefix, "", 0, true, [&](const std::string& k, const std::string&) {
          out.push_back(k.substr(prefix.size()));
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::RemoveXattr(const Context& ctx, Ino ino, std::string_view name) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  int64_t now = NowUnixNanos();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (acl::IsAclName(name)) {
          STRATA_RETURN_IF_ERROR(AclOwner(ctx, *a));
        } else {
          STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        }
        std::string key = XattrKey(ino, name);
        if (!t.Get(key)) return FsError(ENODATA, "no xattr " + Quote(name));
        t.Delete(key);
        a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

// ---- POSIX ACLs ------------------------------------------------------------

Status KvMeta::AclOwner(const Context& ctx, const Attr& a) const {
  // As Linux: only the owner (or root) sets or removes a file's ACLs; write
  // permission is not enough.
  if (!ctx.check_permission || ctx.uid == 0 || ctx.uid == a.uid) return Status::Ok();
  return FsError(EPERM, "only the owner may change a file's ACL");
}

Status KvMeta::SetAclXattr(const Context& ctx, KvTxn& t, Ino ino, Attr& a, std::string_view name,
                           std::string_view value) {
  STRATA_RETURN_IF_ERROR(AclOwner(ctx, a));
  if (S_ISLNK(a.mode)) return FsError(EPERM, "symbolic links have no ACLs");
  STRATA_ASSIGN_OR_RETURN(acl::Acl parsed, acl::Parse(value));
  const std::string key = XattrKey(ino, name);
  if (name == acl::kDefault) {
    if (!IsDir(a)) return FsError(EACCES, "only directories have a default ACL");
    t.Set(key, acl::Encode(parsed));
    return Status::Ok();
  }
  // The access ACL and the mode say the same thing: the owner, mask (group
  // class) and other entries are the mode's rwx bits. An ACL with nothing
  // beyond the mode is kept as the mode alone, as Linux does.
  a.mode = (a.mode & ~0777u) | parsed.ModeBits();
  if (ctx.check_permission && ctx.uid != 0 && !InGroup(ctx, a.gid)) a.mode &= ~S_ISGID;
  if (parsed.Minimal()) {
    t.Delete(key);
  } else {
    t.Set(key, acl::Encode(parsed));
  }
  return Status::Ok();
}

void KvMeta::ChmodAcl(KvTxn& t, Ino ino, uint32_t mode) {
  const std::string key = XattrKey(ino, acl::kAccess);
  auto v = t.Get(key);
  if (!v) return;
  auto parsed = acl::Parse(*v);
  if (!parsed) return;  // validated when set; never fail a chmod over it
  parsed->Chmod(mode);
  t.Set(key, acl::Encode(*parsed));
}

uint32_t KvMeta::InheritAcl(KvTxn& t, Ino parent, Ino ino, uint32_t type, uint32_t mode,
                            uint32_t umask) {
  if (type == S_IFLNK) return 0777;
  auto def = t.Get(XattrKey(parent, acl::kDefault));
  std::optional<acl::Acl> parsed;
  if (def) {
    auto p = acl::Parse(*def);
    if (p) parsed = std::move(*p);
  }
  // Without a default ACL the umask applies; with one it replaces the umask
  // (POSIX.1e; the kernel leaves both to a FUSE filesystem with ACLs).
  if (!parsed) return mode & 07777 & ~umask;
  if (type == S_IFDIR) t.Set(XattrKey(ino, acl::kDefault), *def);
  acl::Acl access = *parsed;
  const uint32_t bits = access.CreateMasq(mode & 0777);
  if (!access.Minimal()) t.Set(XattrKey(ino, acl::kAccess), acl::Encode(access));
  return (mode & 07000) | bits;
}

}  // namespace strata::fsmeta
