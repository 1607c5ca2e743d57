#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <strata/core/fault_injection.h>
#include <strata/core/file_sync.h>
#include <strata/core/file_util.h>

namespace strata {
namespace {

std::string Op(std::string_view op, std::string_view what) {
  std::string s(op);
  s += ' ';
  s += what;
  return s;
}

Status WriteAllUnfaulted(int fd, const char* p, size_t n, std::string_view what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Op("write", what));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status PwriteAllUnfaulted(int fd, const char* p, size_t n, uint64_t offset, std::string_view what) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Op("write", what));
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

// Closes fd, keeping the first errno seen.
void CloseKeepingErrno(int fd) {
  const int err = errno;
  ::close(fd);
  errno = err;
}

}  // namespace

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status WriteAll(int fd, const void* data, size_t n, std::string_view what) {
  const char* p = static_cast<const char*>(data);
  fault::internal::BeforeWrite(fd, -1, n);
  size_t first = 0;
  if (const int err = fault::internal::OnWrite(what, n, &first); err != 0) {
    // An injected fault (tests): write the part a full disk would take, then fail.
    STRATA_RETURN_IF_ERROR(WriteAllUnfaulted(fd, p, first, what));
    return Status::FromErrno(err, Op("write", what));
  }
  return WriteAllUnfaulted(fd, p, n, what);
}

Status PwriteAll(int fd, const void* data, size_t n, uint64_t offset, std::string_view what) {
  const char* p = static_cast<const char*>(data);
  fault::internal::BeforeWrite(fd, static_cast<int64_t>(offset), n);
  size_t first = 0;
  if (const int err = fault::internal::OnWrite(what, n, &first); err != 0) {
    STRATA_RETURN_IF_ERROR(PwriteAllUnfaulted(fd, p, first, offset, what));
    return Status::FromErrno(err, Op("write", what));
  }
  return PwriteAllUnfaulted(fd, p, n, offset, what);
}

Result<size_t> PreadUpTo(int fd, void* buf, size_t n, uint64_t offset, std::string_view what) {
  char* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, Op("read", what));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status PreadFull(int fd, void* buf, size_t n, uint64_t offset, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(size_t got, PreadUpTo(fd, buf, n, offset, what));
  if (got < n) {
    return Status::Corruption(std::string(what) + " is truncated (wanted " + std::to_string(n) +
                              " bytes at offset " + std::to_string(offset) + ", found " +
                              std::to_string(got) + ")");
  }
  return Status::Ok();
}

Status SyncFile(int fd, std::string_view what) {
  if (const int err = fault::internal::OnSync(fd, what); err != 0) {
    return Status::FromErrno(err, Op("fsync", what));
  }
  const fault::internal::SyncMark mark = fault::internal::BeforeSync(fd);
  if (::fsync(fd) != 0) return Status::FromErrno(errno, Op("fsync", what));
  fault::internal::AfterSync(fd, mark);
  return Status::Ok();
}

Status SyncFileData(int fd, std::string_view what) {
  if (const int err = fault::internal::OnSync(fd, what); err != 0) {
    return Status::FromErrno(err, Op("fdatasync", what));
  }
  const fault::internal::SyncMark mark = fault::internal::BeforeSync(fd);
  if (::fdatasync(fd) != 0) return Status::FromErrno(errno, Op("fdatasync", what));
  fault::internal::AfterSync(fd, mark);
  return Status::Ok();
}

Status FsyncDir(const std::string& dir) {
  if (const int err = fault::internal::OnSync(-1, dir); err != 0) {
    return Status::FromErrno(err, Op("fsync directory", dir));
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, Op("open directory", dir));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, Op("fsync directory", dir));
  return Status::Ok();
}

Status FsyncParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return FsyncDir(".");
  if (slash == 0) return FsyncDir("/");
  return FsyncDir(path.substr(0, slash));
}

Status CommitTempFile(int fd, const std::string& tmp, const std::string& path,
                      const AtomicWriteOptions& options) {
  if (options.sync) {
    if (Status st = SyncFile(fd, tmp); !st.ok()) {
      AbandonTempFile(fd, tmp);
      return st;
    }
  }
  if (::close(fd) != 0) {
    const Status st = Status::FromErrno(errno, Op("close", tmp));
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status st = Status::FromErrno(errno, "rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return st;
  }
  if (options.sync && options.sync_dir) return FsyncParentDir(path);
  return Status::Ok();
}

void AbandonTempFile(int fd, const std::string& tmp) {
  CloseKeepingErrno(fd);
  ::unlink(tmp.c_str());
}

Status WriteFileAtomic(const std::string& path, std::string_view data,
                       const AtomicWriteOptions& options) {
  const std::string tmp = path + options.tmp_suffix;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, options.mode);
  if (fd < 0) return Status::FromErrno(errno, Op("create", tmp));
  Status st;
  if (::fchmod(fd, options.mode) != 0) st = Status::FromErrno(errno, Op("chmod", tmp));
  if (st.ok()) st = WriteAll(fd, data.data(), data.size(), tmp);
  if (!st.ok()) {
    AbandonTempFile(fd, tmp);
    return st;
  }
  return CommitTempFile(fd, tmp, path, options);
}

Result<std::string> ReadFileToString(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, Op("open", path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, Op("stat", path));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  auto got = PreadUpTo(fd, data.data(), data.size(), 0, path);
  ::close(fd);
  if (!got.has_value()) return got.error();
  data.resize(*got);
  return data;
}

}  // namespace strata
