#include <strata/core/status.h>

#include <cstring>

namespace strata {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kPreconditionFailed: return "PreconditionFailed";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kConflict: return "Conflict";
  }
  return "Unknown";
}

Status Status::FromErrno(int err, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  if (err == ENOENT) return NotFound(std::move(msg));
  if (err == ENOSPC || err == EDQUOT) return ResourceExhausted(std::move(msg));
  if (err == EACCES || err == EPERM) return PermissionDenied(std::move(msg));
  if (err == EEXIST) return AlreadyExists(std::move(msg));
  return IOError(std::move(msg));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  Status out(code_, std::move(m));
  out.detail_ = detail_;
  return out;
}

}  // namespace strata
