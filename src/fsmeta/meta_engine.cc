// The free functions of the public interface (include/strata/fsmeta/meta_engine.h):
// POSIX errors carried in a Status (FsError, ErrnoOf), and OpenMeta, which
// picks the TxnKV backend from the URL and puts the one engine (KvMeta) on it.
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include <strata/fsmeta/meta_engine.h>

#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

bool operator==(const Slice& a, const Slice& b) {
  return a.id == b.id && a.size == b.size && a.off == b.off && a.len == b.len && a.pos == b.pos;
}

namespace {

struct ErrnoName {
  int err;
  const char* name;
  StatusCode code;
};
constexpr ErrnoName kErrnos[] = {
    {EPERM, "EPERM", StatusCode::kPermissionDenied},
    {ENOENT, "ENOENT", StatusCode::kNotFound},
    {EIO, "EIO", StatusCode::kIOError},
    {EBADF, "EBADF", StatusCode::kInvalidArgument},
    {EAGAIN, "EAGAIN", StatusCode::kConflict},
    {EACCES, "EACCES", StatusCode::kPermissionDenied},
    {EEXIST, "EEXIST", StatusCode::kAlreadyExists},
    {EXDEV, "EXDEV", StatusCode::kNotSupported},
    {ENOTDIR, "ENOTDIR", StatusCode::kInvalidArgument},
    {EISDIR, "EISDIR", StatusCode::kInvalidArgument},
    {EINVAL, "EINVAL", StatusCode::kInvalidArgument},
    {EFBIG, "EFBIG", StatusCode::kInvalidArgument},
    {ENOSPC, "ENOSPC", StatusCode::kResourceExhausted},
    {ENAMETOOLONG, "ENAMETOOLONG", StatusCode::kInvalidArgument},
    {ENOTEMPTY, "ENOTEMPTY", StatusCode::kPreconditionFailed},
    {ENODATA, "ENODATA", StatusCode::kNotFound},
    {ENOTSUP, "ENOTSUP", StatusCode::kNotSupported},
    {ERANGE, "ERANGE", StatusCode::kInvalidArgument},
    {EDEADLK, "EDEADLK", StatusCode::kConflict},
    {ENOLCK, "ENOLCK", StatusCode::kResourceExhausted},
    {EROFS, "EROFS", StatusCode::kPermissionDenied},
    {EMLINK, "EMLINK", StatusCode::kResourceExhausted},
    {ELOOP, "ELOOP", StatusCode::kInvalidArgument},
    {ENODEV, "ENODEV", StatusCode::kNotSupported},
    {EINTR, "EINTR", StatusCode::kUnavailable},
    {EDQUOT, "EDQUOT", StatusCode::kResourceExhausted},
};

}  // namespace

Status FsError(int errno_value, std::string_view message) {
  for (const auto& e : kErrnos) {
    if (e.err == errno_value) {
      return Status(e.code, std::string(e.name) + ": " + std::string(message));
    }
  }
  return Status(StatusCode::kIOError,
                "E" + std::to_string(errno_value) + ": " + std::string(message));
}

int ErrnoOf(const Status& status) {
  if (status.ok()) return 0;
  const std::string& m = status.message();
  size_t colon = m.find(':');
  if (colon != std::string::npos && colon > 1 && m[0] == 'E') {
    std::string_view name(m.data(), colon);
    for (const auto& e : kErrnos) {
      if (name == e.name) return e.err;
    }
    bool digits = true;
    for (size_t i = 1; i < colon; ++i) digits = digits && m[i] >= '0' && m[i] <= '9';
    if (digits) return std::atoi(m.c_str() + 1);
  }
  switch (status.code()) {
    case StatusCode::kNotFound:
      return ENOENT;
    case StatusCode::kAlreadyExists:
      return EEXIST;
    case StatusCode::kPermissionDenied:
      return EACCES;
    case StatusCode::kInvalidArgument:
      return EINVAL;
    case StatusCode::kConflict:
      return EAGAIN;
    case StatusCode::kNotSupported:
      return ENOTSUP;
    case StatusCode::kResourceExhausted:
      return ENOSPC;
    default:
      return EIO;
  }
}

// ---- factory --------------------------------------------------------------

Result<std::unique_ptr<MetaEngine>> OpenMeta(std::string_view url) {
  std::unique_ptr<TxnKV> kv;
  if (url.rfind("sqlite3://", 0) == 0) {
    std::string path(url.substr(10));
    if (path.empty()) return Status::InvalidArgument("sqlite3:// URL needs a file path");
    STRATA_ASSIGN_OR_RETURN(kv, OpenSqliteKV(path));
  } else if (url.rfind("redis://", 0) == 0) {
    STRATA_ASSIGN_OR_RETURN(kv, OpenRedisKV(url));
  } else if (url.rfind("postgres://", 0) == 0 || url.rfind("postgresql://", 0) == 0) {
    STRATA_ASSIGN_OR_RETURN(kv, OpenPostgresKV(url));
  } else {
    return Status::InvalidArgument("unsupported metadata URL \"" + std::string(url) +
                                   "\": use sqlite3://PATH, redis://HOST:PORT/DB or "
                                   "postgres://USER:PASSWORD@HOST:PORT/DB");
  }
  auto meta = std::make_unique<KvMeta>(std::move(kv));
  (void)meta->LoadFormat();  // a fresh store has none yet; Init creates it
  return std::unique_ptr<MetaEngine>(std::move(meta));
}

}  // namespace strata::fsmeta
