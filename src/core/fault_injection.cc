#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <strata/core/fault_injection.h>
#include <strata/core/file_util.h>

namespace strata::fault {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_injected{0};
std::mutex g_mu;
WriteFault g_fault;  // guarded by g_mu
std::atomic<bool> g_sync_armed{false};
SyncFault g_sync_fault;  // guarded by g_mu

// Power-loss tracking: per inode, the size its last sync left and the old
// bytes of every synced range overwritten since (applied newest first).
struct Undo {
  uint64_t offset;
  std::string old;
  uint64_t seq;  // g_write_seq when it was recorded
};
struct Unsynced {
  uint64_t synced_size = 0;
  std::vector<Undo> undo;
  bool sync_failed = false;  // a sync failed: what is un-synced now never becomes durable
};
using InodeKey = std::pair<uint64_t, uint64_t>;  // st_dev, st_ino
std::atomic<bool> g_tracking{false};
std::mutex g_track_mu;
std::map<InodeKey, Unsynced> g_unsynced;  // guarded by g_track_mu
uint64_t g_write_seq = 0;                 // guarded by g_track_mu

// The synced bytes [offset, offset + n) of fd's file that a write will replace.
std::string OldBytes(int fd, uint64_t offset, size_t n) {
  std::string old(n, '\0');
  // fd may be write-only: read through a second descriptor on the same file.
  UniqueFd rd(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  size_t got = 0;
  if (rd.valid()) {
    auto r = PreadUpTo(rd.get(), old.data(), n, offset, "crash tracking");
    if (r.has_value()) got = *r;
  }
  old.resize(got);
  return old;
}

// Copies one regular file into the image as its last sync left it.
Status CopyAsSynced(const std::filesystem::path& from, const std::filesystem::path& to,
                    uint64_t keep, CrashImageStats* stats) {
  STRATA_ASSIGN_OR_RETURN(std::string data, ReadFileToString(from.string()));
  struct stat st;
  if (::stat(from.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + from.string());
  auto it = g_unsynced.find({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (it != g_unsynced.end()) {
    const Unsynced& u = it->second;
    const uint64_t cut = std::min<uint64_t>(data.size(), u.synced_size + keep);
    uint64_t dropped = data.size() - cut;
    data.resize(cut);
    for (auto r = u.undo.rbegin(); r != u.undo.rend(); ++r) {
      if (r->offset >= data.size()) continue;
      const size_t n = std::min<size_t>(r->old.size(), data.size() - r->offset);
      dropped += n;
      data.replace(r->offset, n, r->old.data(), n);
    }
    if (dropped > 0) {
      ++stats->files_cut;
      stats->bytes_dropped += dropped;
    }
  }
  ++stats->files;
  // Written directly: WriteAll would call back into the seam, whose lock is held.
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777));
  if (!out.valid()) return Status::FromErrno(errno, "create " + to.string());
  for (size_t done = 0; done < data.size();) {
    const ssize_t w = ::write(out.get(), data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Status::FromErrno(errno, "write " + to.string());
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

void TrackUnsyncedWrites(bool on) {
  std::lock_guard<std::mutex> l(g_track_mu);
  g_unsynced.clear();
  g_tracking.store(on, std::memory_order_release);
}

bool TrackingUnsyncedWrites() { return g_tracking.load(std::memory_order_acquire); }

Result<CrashImageStats> WriteCrashImage(const std::string& dir, const std::string& image_dir,
                                        uint64_t keep_unsynced_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(image_dir, ec)) {
    return Status::AlreadyExists("crash image directory " + image_dir + " exists; give a new one");
  }
  std::lock_guard<std::mutex> l(g_track_mu);  // writers through the seam wait
  CrashImageStats stats;
  fs::create_directories(image_dir, ec);
  if (ec) return Status::IOError("cannot create " + image_dir + ": " + ec.message());
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path to = fs::path(image_dir) / fs::relative(it->path(), dir);
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      fs::create_directories(to, ec2);
      if (ec2) return Status::IOError("cannot create " + to.string() + ": " + ec2.message());
    } else if (it->is_regular_file(ec2)) {
      STRATA_RETURN_IF_ERROR(CopyAsSynced(it->path(), to, keep_unsynced_bytes, &stats));
    }
  }
  if (ec) return Status::IOError("cannot walk " + dir + ": " + ec.message());
  return stats;
}

void InjectWriteFault(WriteFault f) {
  std::lock_guard<std::mutex> l(g_mu);
  g_fault = std::move(f);
  g_armed.store(g_fault.times != 0, std::memory_order_release);
}

void InjectSyncFault(SyncFault f) {
  std::lock_guard<std::mutex> l(g_mu);
  g_sync_fault = std::move(f);
  g_sync_armed.store(g_sync_fault.times != 0, std::memory_order_release);
}

void ClearFaults() {
  std::lock_guard<std::mutex> l(g_mu);
  g_fault = WriteFault{};
  g_armed.store(false, std::memory_order_release);
  g_sync_fault = SyncFault{};
  g_sync_armed.store(false, std::memory_order_release);
}

uint64_t FaultsInjected() { return g_injected.load(std::memory_order_relaxed); }

namespace internal {

int OnWrite(std::string_view what, size_t n, size_t* written_first) {
  if (!g_armed.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> l(g_mu);
  if (g_fault.times == 0) return 0;
  if (!g_fault.path_contains.empty() &&
      what.find(g_fault.path_contains) == std::string_view::npos) {
    return 0;
  }
  if (g_fault.skip > 0) {
    --g_fault.skip;
    return 0;
  }
  if (g_fault.times > 0 && --g_fault.times == 0) g_armed.store(false, std::memory_order_relaxed);
  g_injected.fetch_add(1, std::memory_order_relaxed);
  *written_first = std::min(n, g_fault.written_first);
  return g_fault.err;
}

int OnSync(int fd, std::string_view what) {
  if (!g_sync_armed.load(std::memory_order_relaxed)) return 0;
  int err = 0;
  {
    std::lock_guard<std::mutex> l(g_mu);
    if (g_sync_fault.times == 0) return 0;
    if (!g_sync_fault.path_contains.empty() &&
        what.find(g_sync_fault.path_contains) == std::string_view::npos) {
      return 0;
    }
    if (g_sync_fault.skip > 0) {
      --g_sync_fault.skip;
      return 0;
    }
    if (g_sync_fault.times > 0 && --g_sync_fault.times == 0) {
      g_sync_armed.store(false, std::memory_order_relaxed);
    }
    g_injected.fetch_add(1, std::memory_order_relaxed);
    err = g_sync_fault.err;
  }
  struct stat st;
  if (fd < 0 || !g_tracking.load(std::memory_order_relaxed) || ::fstat(fd, &st) != 0) return err;
  std::lock_guard<std::mutex> l(g_track_mu);
  auto [it, fresh] =
      g_unsynced.try_emplace({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (fresh) it->second.synced_size = static_cast<uint64_t>(st.st_size);
  it->second.sync_failed = true;
  return err;
}

void BeforeWrite(int fd, int64_t offset, size_t n) {
  if (!g_tracking.load(std::memory_order_relaxed) || n == 0) return;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  uint64_t at = 0;
  if (offset >= 0) {
    at = static_cast<uint64_t>(offset);
  } else if (::fcntl(fd, F_GETFL) & O_APPEND) {
    at = static_cast<uint64_t>(st.st_size);
  } else {
    const off_t pos = ::lseek(fd, 0, SEEK_CUR);
    if (pos < 0) return;
    at = static_cast<uint64_t>(pos);
  }
  std::lock_guard<std::mutex> l(g_track_mu);
  if (!g_tracking.load(std::memory_order_relaxed)) return;
  auto [it, fresh] =
      g_unsynced.try_emplace({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (fresh) it->second.synced_size = static_cast<uint64_t>(st.st_size);
  Unsynced& u = it->second;
  if (at < u.synced_size) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(n, u.synced_size - at));
    u.undo.push_back({at, OldBytes(fd, at, len), g_write_seq});
  }
  ++g_write_seq;
}

SyncMark BeforeSync(int fd) {
  SyncMark m;
  if (!g_tracking.load(std::memory_order_relaxed)) return m;
  struct stat st;
  if (::fstat(fd, &st) != 0) return m;
  std::lock_guard<std::mutex> l(g_track_mu);
  m.size = static_cast<uint64_t>(st.st_size);
  m.seq = g_write_seq;
  return m;
}

void AfterSync(int fd, SyncMark mark) {
  if (!g_tracking.load(std::memory_order_relaxed)) return;
  struct stat st;
  if (::fstat(fd, &st) != 0) return;
  std::lock_guard<std::mutex> l(g_track_mu);
  auto it = g_unsynced.find({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (it == g_unsynced.end()) return;
  Unsynced& u = it->second;
  if (u.sync_failed) return;  // the kernel dropped those pages: a later sync cannot save them
  // Overwrites recorded before the sync started are durable now.
  std::erase_if(u.undo, [&](const Undo& d) { return d.seq < mark.seq; });
  u.synced_size = std::max(u.synced_size, mark.size);
  if (u.undo.empty() && u.synced_size >= static_cast<uint64_t>(st.st_size)) g_unsynced.erase(it);
}

}  // namespace internal
}  // namespace strata::fault
