#include "fsmeta/codec.h"

#include <cerrno>
#include <cstring>

#include "fsmeta/kv.h"

namespace strata::fsmeta {

bool IsGroupedType(char type) {
  switch (type) {
    case 'D': case 'C': case 'X': case 'F': case 'L': case 'U': case 'H': case 'E': case 'Q':
      return true;
    default: return false;
  }
}

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
    case StatusCode::kNotFound: return ENOENT;
    case StatusCode::kAlreadyExists: return EEXIST;
    case StatusCode::kPermissionDenied: return EACCES;
    case StatusCode::kInvalidArgument: return EINVAL;
    case StatusCode::kConflict: return EAGAIN;
    case StatusCode::kNotSupported: return ENOTSUP;
    case StatusCode::kResourceExhausted: return ENOSPC;
    default: return EIO;
  }
}

namespace codec {

namespace {
void Put32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void Put64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t Get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
}  // namespace

std::string EncodeAttr(const Attr& a) {
  std::string s(kAttrLen, '\0');
  char* p = s.data();
  Put32(p, a.mode);
  Put32(p + 4, a.uid);
  Put32(p + 8, a.gid);
  Put32(p + 12, a.nlink);
  Put64(p + 16, a.size);
  Put64(p + 24, a.rdev);
  Put64(p + 32, static_cast<uint64_t>(a.atime_ns));
  Put64(p + 40, static_cast<uint64_t>(a.mtime_ns));
  Put64(p + 48, static_cast<uint64_t>(a.ctime_ns));
  Put64(p + 56, a.parent);
  return s;
}

bool DecodeAttr(std::string_view s, Attr* a) {
  if (s.size() != kAttrLen) return false;
  const char* p = s.data();
  a->mode = Get32(p);
  a->uid = Get32(p + 4);
  a->gid = Get32(p + 8);
  a->nlink = Get32(p + 12);
  a->size = Get64(p + 16);
  a->rdev = Get64(p + 24);
  a->atime_ns = static_cast<int64_t>(Get64(p + 32));
  a->mtime_ns = static_cast<int64_t>(Get64(p + 40));
  a->ctime_ns = static_cast<int64_t>(Get64(p + 48));
  a->parent = Get64(p + 56);
  return true;
}

void AppendSlice(std::string* s, const Slice& sl) {
  char b[kSliceLen];
  Put64(b, sl.id);
  Put32(b + 8, sl.size);
  Put32(b + 12, sl.off);
  Put32(b + 16, sl.len);
  Put32(b + 20, sl.pos);
  s->append(b, kSliceLen);
}

std::string EncodeSlices(const std::vector<Slice>& slices) {
  std::string s;
  s.reserve(slices.size() * kSliceLen);
  for (const auto& sl : slices) AppendSlice(&s, sl);
  return s;
}

bool DecodeSlices(std::string_view s, std::vector<Slice>* out) {
  out->clear();
  if (s.size() % kSliceLen != 0) return false;
  out->reserve(s.size() / kSliceLen);
  for (size_t i = 0; i < s.size(); i += kSliceLen) {
    const char* p = s.data() + i;
    Slice sl;
    sl.id = Get64(p);
    sl.size = Get32(p + 8);
    sl.off = Get32(p + 12);
    sl.len = Get32(p + 16);
    sl.pos = Get32(p + 20);
    out->push_back(sl);
  }
  return true;
}

std::string EncodePlocks(const std::vector<PlockRange>& r) {
  std::string s;
  for (const auto& x : r) {
    char b[24];
    Put32(b, x.type);
    Put64(b + 4, x.start);
    Put64(b + 12, x.end);
    Put32(b + 20, x.pid);
    s.append(b, 24);
  }
  return s;
}

std::vector<PlockRange> DecodePlocks(std::string_view s) {
  std::vector<PlockRange> out;
  for (size_t i = 0; i + 24 <= s.size(); i += 24) {
    const char* p = s.data() + i;
    out.push_back({Get32(p), Get64(p + 4), Get64(p + 12), Get32(p + 20)});
  }
  return out;
}

}  // namespace codec
}  // namespace strata::fsmeta
