// KvMeta: extended attributes, one X<ino><name> key each (values up to 64 KiB).
#include <unistd.h>

#include <cerrno>

#include <strata/core/clock.h>

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
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, R_OK));
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
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        std::string key = XattrKey(ino, name);
        bool exists = t.Get(key).has_value();
        if ((flags & kXattrCreate) && exists)
          return FsError(EEXIST, "xattr " + Quote(name) + " exists");
        if ((flags & kXattrReplace) && !exists) return FsError(ENODATA, "no xattr " + Quote(name));
        t.Set(key, std::string(value));
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
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
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

}  // namespace strata::fsmeta
