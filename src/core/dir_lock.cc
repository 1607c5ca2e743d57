// DirLock (dir_lock.h). flock rather than fcntl locks: an fcntl lock belongs
// to the process, so a second open in the same process would silently
// "succeed" and closing either descriptor would drop both; flock conflicts
// between two open file descriptions, in one process or two.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include <fmt/format.h>

#include <strata/core/dir_lock.h>

namespace strata {

Result<DirLock> DirLock::Open(const std::string& dir, const std::string& name,
                              const std::string& what, const std::string& hint) {
  DirLock l;
  l.path_ = dir + "/" + name;
  l.fd_.Reset(::open(l.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!l.fd_.valid()) return Status::FromErrno(errno, "open lock file " + l.path_);
  int rc;
  do {
    rc = ::flock(l.fd_.get(), LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return Status::FromErrno(err, "flock " + l.path_);
    char buf[32] = {};
    const ssize_t n = ::pread(l.fd_.get(), buf, sizeof(buf) - 1, 0);
    std::string_view pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.remove_suffix(1);
    return Status::PreconditionFailed(
        fmt::format("{} {} is in use by {} (lock {}); one process at a time: {}", what, dir,
                    pid.empty() ? std::string("another process") : fmt::format("process {}", pid),
                    l.path_, hint));
  }
  const std::string me = fmt::format("{}\n", ::getpid());
  if (::ftruncate(l.fd_.get(), 0) != 0) return Status::FromErrno(errno, "truncate " + l.path_);
  STRATA_RETURN_IF_ERROR(PwriteAll(l.fd_.get(), me.data(), me.size(), 0, l.path_));
  return l;
}

}  // namespace strata
