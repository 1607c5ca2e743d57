#include "fs/writeback.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>

namespace strata::fs {
namespace {
constexpr log::Logger kLog("fs");

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "<id>_<index>_<len>" (the last part of the block's object key).
bool ParseName(std::string_view name, uint64_t* id, uint32_t* index, uint32_t* len) {
  uint64_t v[3];
  for (int i = 0; i < 3; i++) {
    size_t end = i < 2 ? name.find('_') : name.size();
    if (end == std::string_view::npos || end == 0 || end > 20) return false;
    uint64_t x = 0;
    for (char c : name.substr(0, end)) {
      if (c < '0' || c > '9') return false;
      x = x * 10 + static_cast<uint64_t>(c - '0');
    }
    v[i] = x;
    name.remove_prefix(i < 2 ? end + 1 : end);
  }
  if (v[1] > UINT32_MAX || v[2] > UINT32_MAX) return false;
  *id = v[0];
  *index = static_cast<uint32_t>(v[1]);
  *len = static_cast<uint32_t>(v[2]);
  return true;
}

struct WbMetrics {
  metrics::Gauge* blocks;
  metrics::Gauge* bytes;
  metrics::Counter* uploaded;
  metrics::Counter* fallbacks;
  metrics::Counter* failures;
  WbMetrics() {
    auto& r = metrics::Registry::Global();
    blocks = &r.GetGauge("strata_fs_writeback_staged_blocks",
                         "Blocks staged on the local disk, not yet uploaded (--writeback)");
    bytes = &r.GetGauge("strata_fs_writeback_staged_bytes",
                        "Bytes staged on the local disk, not yet uploaded (--writeback)");
    uploaded = &r.GetCounter("strata_fs_writeback_uploaded_blocks_total",
                             "Staged blocks uploaded in the background");
    fallbacks = &r.GetCounter(
        "strata_fs_writeback_fallbacks_total",
        "Blocks uploaded synchronously because the stage was full or its disk failed");
    failures = &r.GetCounter("strata_fs_writeback_upload_failures_total",
                             "Background uploads that failed (retried)");
  }
};
WbMetrics& M() {
  static WbMetrics m;
  return m;
}
}  // namespace

Writeback::Writeback(WritebackOptions options, UploadFn upload, DeleteFn del)
    : options_(std::move(options)), upload_(std::move(upload)), delete_(std::move(del)) {}

Result<std::unique_ptr<Writeback>> Writeback::Open(WritebackOptions options, UploadFn upload,
                                                   DeleteFn del) {
  if (options.dir.empty()) return Status::InvalidArgument("writeback needs a stage directory");
  // mkdir -p
  for (size_t p = 1; p <= options.dir.size(); p++) {
    if (p == options.dir.size() || options.dir[p] == '/') {
      std::string part = options.dir.substr(0, p);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
        return Status::FromErrno(errno, "creating the writeback stage " + part);
    }
  }
  std::unique_ptr<Writeback> w(
      new Writeback(std::move(options), std::move(upload), std::move(del)));
  std::string lock = w->options_.dir + "/LOCK";
  w->lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (w->lock_fd_ < 0) return Status::FromErrno(errno, "opening " + lock);
  if (::flock(w->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::Unavailable(fmt::format(
        "the writeback stage {} is in use by another mount (one mount per cache directory)",
        w->options_.dir));
  }
  w->dir_fd_ = ::open(w->options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w->dir_fd_ < 0) return Status::FromErrno(errno, "opening " + w->options_.dir);
  if (w->options_.uploads < 1) w->options_.uploads = 1;
  return w;
}

Writeback::~Writeback() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  {
    std::lock_guard<std::mutex> lk(mu_);
    entries_.clear();
    bytes_ = 0;
    PublishLocked();
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string Writeback::PathOf(uint64_t id, uint32_t index, uint32_t len) const {
  return fmt::format("{}/{}_{}_{}", options_.dir, id, index, len);
}

void Writeback::PublishLocked() {
  M().blocks->Set(static_cast<int64_t>(entries_.size()));
  M().bytes->Set(static_cast<int64_t>(bytes_));
}

std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> Writeback::ListStaged(
    const std::string& dir) {
  std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* de = ::readdir(d)) {
    uint64_t id;
    uint32_t index, len;
    if (!ParseName(de->d_name, &id, &index, &len)) continue;
    // Only complete files: one cut short (a crash mid-stage, a power loss
    // before an fsync) holds no usable block.
    struct stat st;
    if (::stat((dir + "/" + de->d_name).c_str(), &st) == 0 &&
        static_cast<uint64_t>(st.st_size) == len)
      out.emplace_back(id, index, len);
  }
  ::closedir(d);
  return out;
}

Result<size_t> Writeback::Recover(const std::function<bool(uint64_t)>& referenced) {
  DIR* d = ::opendir(options_.dir.c_str());
  if (!d) return Status::FromErrno(errno, "reading the writeback stage " + options_.dir);
  std::vector<std::string> names;
  while (struct dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != ".." && n != "LOCK") names.push_back(std::move(n));
  }
  ::closedir(d);
  size_t kept = 0, dropped = 0;
  std::lock_guard<std::mutex> lk(mu_);
  for (const std::string& n : names) {
    const std::string path = options_.dir + "/" + n;
    uint64_t id;
    uint32_t index, len;
    if (!ParseName(n, &id, &index, &len)) {
      // A temp file (older stages wrote one): no metadata names it.
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) std::remove(path.c_str());
      continue;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    if (!referenced(id)) {
      // Staged, then the mount died before the commit (or the file was
      // deleted since): nothing can read it.
      std::remove(path.c_str());
      dropped++;
      continue;
    }
    if (static_cast<uint64_t>(st.st_size) != len) {
      // A referenced block was complete before its commit: only disk damage
      // makes it short. Keep the file for a person to look at rather than
      // upload a wrong block.
      kLog.Error("writeback stage: {} has {} bytes, not {}; left in place, not uploaded", path,
                 st.st_size, len);
      continue;
    }
    Entry e;
    e.len = len;
    if (entries_.emplace(Key{id, index}, e).second) {
      queue_.push_back(Key{id, index});
      bytes_ += len;
      kept++;
    }
  }
  PublishLocked();
  if (kept || dropped)
    kLog.Info("writeback stage {}: {} staged blocks to upload, {} unreferenced removed",
              options_.dir, kept, dropped);
  return kept;
}

void Writeback::Start() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!workers_.empty()) return;
  for (int i = 0; i < options_.uploads; i++) workers_.emplace_back([this] { Worker(); });
}

// The block under its final name; with sync_each (the default) fdatasync, then an fsync of the
// directory (its entry) shared by the stages of concurrent closes (FsyncDirFor). No temp file
// and rename: a file cut short by a crash is never referenced (the commit follows this), so
// Recover removes it as unreferenced; and a rename would cost a second journal commit per close.
Status Writeback::WriteStageFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::FromErrno(errno, "create " + path);
  const uint64_t created = ++dir_created_seq_;  // its entry exists from here on
  Status st = WriteAll(fd.get(), data.data(), data.size(), path);
  if (st.ok() && options_.sync_each && ::fdatasync(fd.get()) != 0)
    st = Status::FromErrno(errno, "fdatasync " + path);
  if (st.ok() && ::close(fd.Release()) != 0) st = Status::FromErrno(errno, "close " + path);
  if (st.ok() && options_.sync_each) st = FsyncDirFor(created);
  if (!st.ok()) ::unlink(path.c_str());
  return st;
}

// One fsync of the stage directory makes every entry created before it
// durable: a close whose entry an fsync begun after its create already
// covered returns without its own (group commit of concurrent closes).
Status Writeback::FsyncDirFor(uint64_t created) {
  std::lock_guard<std::mutex> lk(dir_sync_mu_);
  if (dir_synced_seq_ >= created) return Status::Ok();
  const uint64_t upto = dir_created_seq_.load();
  if (::fsync(dir_fd_) != 0) return Status::FromErrno(errno, "fsync " + options_.dir);
  dir_synced_seq_ = upto;
  return Status::Ok();
}

bool Writeback::DiskHasRoom(uint64_t len) const {
  struct statvfs vfs;
  if (::statvfs(options_.dir.c_str(), &vfs) != 0) return true;  // the write itself will tell
  const uint64_t unit = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
  const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * unit;
  uint64_t floor =
      options_.min_free_bytes >= 0
          ? static_cast<uint64_t>(options_.min_free_bytes)
          : std::min<uint64_t>(1ull << 30, static_cast<uint64_t>(vfs.f_blocks) * unit / 20);
  return avail >= floor + len;
}

bool Writeback::Stage(uint64_t id, uint32_t index, std::string_view data) {
  const uint32_t len = static_cast<uint32_t>(data.size());
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (bytes_ + len > options_.limit_bytes) {
      stats_.fallbacks++;
      M().fallbacks->Inc();
      return false;
    }
    // Reserve the room now so concurrent stages respect the limit.
    bytes_ += len;
  }
  if (!DiskHasRoom(len)) {
    std::lock_guard<std::mutex> lk(mu_);
    bytes_ -= len;
    stats_.fallbacks++;
    M().fallbacks->Inc();
    return false;
  }
  Status st = WriteStageFile(PathOf(id, index, len), data);
  std::lock_guard<std::mutex> lk(mu_);
  if (auto old = entries_.find(Key{id, index}); st.ok() && old != entries_.end()) {
    bytes_ -= old->second.len;  // the same block staged again (a retried write)
  }
  if (!st.ok()) {
    bytes_ -= len;
    stats_.fallbacks++;
    M().fallbacks->Inc();
    kLog.Warn("writeback: staging block {}_{} failed ({}); uploading it directly", id, index,
              st.ToString());
    return false;
  }
  staged_seq_++;
  Entry e;
  e.len = len;
  e.not_before_ms = draining_ ? 0 : NowMs() + options_.upload_delay_ms;
  entries_[Key{id, index}] = e;
  queue_.push_back(Key{id, index});
  PublishLocked();
  cv_.notify_one();
  return true;
}

Status Writeback::Read(uint64_t id, uint32_t index, uint32_t len, uint32_t off, uint32_t n,
                       char* buf, bool* found) {
  *found = false;
  UniqueFd fd;
  {
    // Opened under the lock: the uploader removes the entry before the file,
    // so an entry seen here has its file, and an open descriptor outlives
    // the unlink.
    std::lock_guard<std::mutex> lk(mu_);
    auto it = entries_.find(Key{id, index});
    if (it == entries_.end() || it->second.forgotten) return Status::Ok();
    fd.Reset(::open(PathOf(id, index, len).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return Status::FromErrno(errno, "opening staged block");
  }
  *found = true;
  return PreadFull(fd.get(), buf, n, off, "staged block");
}

Status Writeback::Sync() {
  if (options_.sync_each) return Status::Ok();
  std::lock_guard<std::mutex> lk(sync_mu_);
  const uint64_t upto = staged_seq_.load();
  if (upto == synced_seq_) return Status::Ok();
  // One syncfs covers every stage file and the directory; cheaper than an
  // fsync of each when a file of many blocks is fsynced.
  if (::syncfs(dir_fd_) != 0)
    return Status::FromErrno(errno, "syncfs of the writeback stage " + options_.dir);
  synced_seq_ = upto;
  return Status::Ok();
}

bool Writeback::Contains(uint64_t id, uint32_t index) const {
  std::lock_guard<std::mutex> lk(mu_);
  return entries_.count(Key{id, index}) != 0;
}

void Writeback::Forget(uint64_t id) {
  std::vector<std::string> remove;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = entries_.lower_bound(Key{id, 0});
         it != entries_.end() && it->first.first == id;) {
      if (it->second.uploading) {
        it->second.forgotten = true;  // the uploader deletes the object and the file
        ++it;
        continue;
      }
      remove.push_back(PathOf(id, it->first.second, it->second.len));
      bytes_ -= it->second.len;
      it = entries_.erase(it);  // its queue_ slot is skipped by the worker
    }
    PublishLocked();
    done_cv_.notify_all();
  }
  for (const auto& p : remove) std::remove(p.c_str());
}

void Writeback::Worker() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (stop_) return;
    if (queue_.empty()) {
      cv_.wait(lk);
      continue;
    }
    Key k = queue_.front();
    auto it = entries_.find(k);
    if (it == entries_.end() || it->second.uploading) {
      queue_.pop_front();  // forgotten (or a duplicate slot)
      continue;
    }
    const int64_t now = NowMs();
    if (it->second.not_before_ms > now) {
      cv_.wait_for(
          lk, std::chrono::milliseconds(std::min<int64_t>(it->second.not_before_ms - now, 1000)));
      continue;
    }
    queue_.pop_front();
    Entry& e = it->second;
    e.uploading = true;
    const uint32_t len = e.len;
    const std::string path = PathOf(k.first, k.second, len);
    lk.unlock();
    Status st;
    {
      auto data = ReadFileToString(path);
      if (!data) {
        st = data.error();
      } else if (data->size() != len) {
        st = Status::Corruption(
            fmt::format("staged block {} has {} bytes, not {}", path, data->size(), len));
      } else {
        st = upload_(k.first, k.second, *data);
      }
    }
    lk.lock();
    it = entries_.find(k);  // map iterators stay valid, but look again for clarity
    Entry& e2 = it->second;
    e2.uploading = false;
    if (e2.forgotten) {
      // Freed while uploading: the object goes too. The entry stays (readers
      // skip forgotten ones) until that is done, so Drain waits for it.
      e2.uploading = true;
      lk.unlock();
      if (st.ok() && delete_) {
        Status d = delete_(k.first, k.second, len);
        if (!d.ok())
          kLog.Warn("writeback: deleting the object of freed block {}: {}", path, d.ToString());
      }
      std::remove(path.c_str());
      lk.lock();
      it = entries_.find(k);
      bytes_ -= it->second.len;
      entries_.erase(it);
      PublishLocked();
    } else if (st.ok()) {
      bytes_ -= e2.len;
      entries_.erase(it);
      stats_.uploaded_blocks++;
      M().uploaded->Inc();
      PublishLocked();
      lk.unlock();
      // Only now, with the object in the store and the entry gone (a reader
      // that found it holds the file open), may the file go.
      std::remove(path.c_str());
      lk.lock();
    } else {
      e2.failures++;
      stats_.upload_failures++;
      M().failures->Inc();
      const int64_t backoff =
          std::min<int64_t>(30000, options_.retry_base_ms << std::min(e2.failures, 6));
      e2.not_before_ms = NowMs() + backoff;
      kLog.Warn("writeback: uploading {} failed ({}); retrying in {} ms", path, st.ToString(),
                backoff);
      queue_.push_back(k);
    }
    done_cv_.notify_all();
  }
}

Status Writeback::Drain(int max_failures) {
  std::unique_lock<std::mutex> lk(mu_);
  draining_ = true;
  for (auto& [k, e] : entries_) {
    e.failures = 0;
    e.not_before_ms = 0;
  }
  cv_.notify_all();
  Status result;
  for (;;) {
    if (entries_.empty()) break;
    bool stuck = false;
    for (auto& [k, e] : entries_) {
      if (e.failures >= max_failures) {
        stuck = true;
        break;
      }
    }
    if (stuck) {
      result =
          Status::Unavailable(fmt::format("{} staged blocks could not be uploaded; they stay in {} "
                                          "and are uploaded by the next mount",
                                          entries_.size(), options_.dir));
      break;
    }
    done_cv_.wait_for(lk, std::chrono::seconds(1));
  }
  draining_ = false;
  return result;
}

WritebackStats Writeback::Stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  WritebackStats s = stats_;
  s.staged_blocks = entries_.size();
  s.staged_bytes = bytes_;
  return s;
}

}  // namespace strata::fs
