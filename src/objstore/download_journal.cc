#include "objstore/download_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <strata/core/file_util.h>
#include <strata/core/log.h>

namespace strata::objstore {
namespace {
constexpr log::Logger kLog("transfer");
constexpr const char* kMagic = "strata-download-state 1";
}  // namespace

DownloadJournal::DownloadJournal(int fd, std::string data_path, bool sync_parts)
    : fd_(fd),
      data_path_(std::move(data_path)),
      state_path_(data_path_ + ".state"),
      sync_parts_(sync_parts) {}

DownloadJournal::~DownloadJournal() {
  if (state_fd_ >= 0) ::close(state_fd_);
  if (fd_ >= 0) ::close(fd_);  // drops the flock
}

Result<std::unique_ptr<DownloadJournal>> DownloadJournal::Open(const std::string& dst,
                                                               bool sync_parts) {
  std::string data = dst + ".strata-partial";
  const int fd = ::open(data.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "create " + data);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK) return std::unique_ptr<DownloadJournal>();
    return Status::FromErrno(e, "lock " + data);
  }
  return std::unique_ptr<DownloadJournal>(new DownloadJournal(fd, std::move(data), sync_parts));
}

Result<std::vector<bool>> DownloadJournal::Begin(const ObjectInfo& info, uint64_t part_size) {
  std::lock_guard l(mu_);
  if (state_fd_ >= 0) {
    ::close(state_fd_);
    state_fd_ = -1;
  }
  const uint64_t nparts = part_size == 0 ? 0 : (info.size + part_size - 1) / part_size;
  std::vector<bool> done(nparts, false);
  bool same = false;
  size_t kept = 0;
  if (std::ifstream in(state_path_); in) {
    std::string line;
    std::string etag;
    uint64_t size = UINT64_MAX, part = 0;
    if (std::getline(in, line) && line == kMagic) {
      while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string field;
        ls >> field;
        if (field == "etag") {
          ls >> etag;
        } else if (field == "size") {
          ls >> size;
        } else if (field == "part_size") {
          ls >> part;
          same = !etag.empty() && etag == info.etag && size == info.size && part == part_size;
        } else if (field == "done" && same) {
          uint64_t i = UINT64_MAX;
          if (ls >> i && i < nparts && !done[i]) {
            done[i] = true;
            ++kept;
          }
        }
      }
    }
  }
  struct stat st;
  if (same && (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) != info.size)) {
    same = false;  // not the file the record describes
  }
  if (!same) {
    done.assign(nparts, false);
    kept = 0;
    if (::ftruncate(fd_, 0) != 0) return Status::FromErrno(errno, "truncate " + data_path_);
    const std::string tmp = state_path_ + ".new";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << kMagic << "\netag " << info.etag << "\nsize " << info.size << "\npart_size "
          << part_size << "\n";
      if (!out.flush()) return Status::IOError("cannot write " + tmp);
    }
    if (::rename(tmp.c_str(), state_path_.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + tmp);
    }
  } else {
    kLog.Info("resuming download into {}: {} of {} parts already there", data_path_, kept, nparts);
  }
  on_disk_.store(kept, std::memory_order_relaxed);
  state_fd_ = ::open(state_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (state_fd_ < 0) return Status::FromErrno(errno, "open " + state_path_);
  return done;
}

Status DownloadJournal::MarkDone(uint64_t i) {
  if (sync_parts_ && ::fdatasync(fd_) != 0)
    return Status::FromErrno(errno, "fdatasync " + data_path_);
  const std::string line = fmt::format("done {}\n", i);
  std::lock_guard l(mu_);
  if (state_fd_ < 0) return Status::Internal("DownloadJournal::MarkDone before Begin");
  // One write(2) of a short line to an O_APPEND file: lines never interleave.
  if (::write(state_fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Status::FromErrno(errno, "append to " + state_path_);
  }
  on_disk_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

void DownloadJournal::Discard() {
  ::unlink(state_path_.c_str());
  ::unlink(data_path_.c_str());
}

void DownloadJournal::Finished() { ::unlink(state_path_.c_str()); }

}  // namespace strata::objstore
