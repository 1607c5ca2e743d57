// DirLock: one process at a time over a data directory. Open takes an
// exclusive flock(2) on DIR/<name> (created when missing) and writes the
// holder's pid into it; a second holder (another process, or a second Open
// in the same process) gets PreconditionFailed naming the directory and the
// pid that holds it. The kernel drops the lock when the holder exits, kill -9
// included, so a crash never leaves a stale lock behind (the file stays, the
// lock does not).
//
// Thread-safety: a DirLock is a value owned by one object; Open may be called
// from any thread.
#pragma once

#include <string>

#include <strata/core/file_util.h>
#include <strata/core/result.h>

namespace strata {

class DirLock {
 public:
  DirLock() = default;
  DirLock(DirLock&&) noexcept = default;
  DirLock& operator=(DirLock&&) noexcept = default;

  // `what` names the user of the directory in the error ("the Milvus
  // database", "the vector service"); `hint` says what to do instead.
  static Result<DirLock> Open(const std::string& dir, const std::string& name,
                              const std::string& what, const std::string& hint);

  bool held() const { return fd_.valid(); }
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace strata
