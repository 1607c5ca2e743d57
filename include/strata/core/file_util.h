// File helpers every component that keeps data on a local disk shares: whole
// writes and reads that retry short transfers and EINTR, directory fsync, and
// the atomic replace (write a temp file, fsync it, rename it over the target,
// fsync the directory) that makes a file either wholly old or wholly new after
// a crash.
//
// Errors are IOError (from errno) naming the operation and `what` (a path, or
// a description such as "cache block /x/y"); a read that meets the end of the
// file early is Corruption ("<what> is truncated"). All functions are
// thread-safe as far as the file descriptors passed in are not shared.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata {

// Owns a file descriptor: closes it when destroyed or reset. Movable, not copyable.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) Reset(o.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes the one held (if any) and holds `fd`.
  void Reset(int fd = -1);
  // Gives up ownership without closing.
  int Release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

// write(2) until all n bytes are written at the file position.
Status WriteAll(int fd, const void* data, size_t n, std::string_view what);
// pwrite(2) until all n bytes are written at offset.
Status PwriteAll(int fd, const void* data, size_t n, uint64_t offset, std::string_view what);
// pread(2) exactly n bytes at offset; Corruption when the file ends first.
Status PreadFull(int fd, void* buf, size_t n, uint64_t offset, std::string_view what);
// pread(2) up to n bytes at offset, fewer only at the end of the file.
Result<size_t> PreadUpTo(int fd, void* buf, size_t n, uint64_t offset, std::string_view what);

// fsync(2) of a directory, so that entries created or renamed in it are durable.
Status FsyncDir(const std::string& dir);
// FsyncDir of the directory holding `path` ("." for a bare name).
Status FsyncParentDir(const std::string& path);

struct AtomicWriteOptions {
  mode_t mode = 0644;       // of the new file (applied with fchmod, not subject to umask)
  bool sync = true;         // fsync the file before the rename
  bool sync_dir = true;     // with sync: fsync the directory after it (the rename is durable)
  std::string tmp_suffix = ".tmp";  // the temp file is path + tmp_suffix
};
// Replaces `path` with `data` atomically: readers and a crash see the old
// contents or the new ones, never a mix. The temp file is removed on failure.
Status WriteFileAtomic(const std::string& path, std::string_view data,
                       const AtomicWriteOptions& options = {});

// Finishes a file written under the temporary name `tmp` (in the directory of
// `path`): fsync (options.sync), close, rename over `path`, fsync of the
// directory (options.sync && options.sync_dir). `fd` is closed in every case;
// on failure the temp file is removed. WriteFileAtomic is this after one write;
// writers that stream a file call it at the end.
Status CommitTempFile(int fd, const std::string& tmp, const std::string& path,
                      const AtomicWriteOptions& options = {});
// Closes fd and removes tmp: the failure path of a streamed atomic write.
void AbandonTempFile(int fd, const std::string& tmp);

// The whole contents of a regular file.
Result<std::string> ReadFileToString(const std::string& path);

}  // namespace strata
