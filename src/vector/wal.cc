#include "vector/wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/coding.h>
#include <strata/core/file_sync.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>

namespace strata::vector::internal {
namespace {

constexpr log::Logger kLog("vector");
constexpr char kMagic[8] = {'S', 'T', 'R', 'W', 'A', 'L', '0', '1'};
constexpr size_t kHeader = 24;
constexpr size_t kRecordHead = 4 + 4 + 8 + 1;
constexpr uint32_t kMaxBody = 1u << 30;

}  // namespace

std::string Wal::PathOf(uint64_t seq) const { return fmt::format("{}/{:016d}.log", dir_, seq); }

Status Wal::CreateFile(uint64_t seq, uint64_t first_lsn) {
  std::string path = PathOf(seq);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + path);
  std::string h(kMagic, 8);
  PutFixed64(&h, seq);
  PutFixed64(&h, first_lsn);
  Status st = WriteAll(fd, h.data(), h.size(), path);
  if (st.ok()) st = SyncFile(fd, path);
  if (st.ok()) st = FsyncDir(dir_);
  if (!st.ok()) {
    ::close(fd);
    return st;
  }
  fd_ = fd;
  fd_path_ = path;
  seq_ = seq;
  offset_ = kHeader;
  seqs_.push_back(seq);
  return Status::Ok();
}

Status Wal::FailSyncLocked(const Status& st) {
  if (sync_failed_.ok()) {
    kLog.Error("WAL {}: fsync failed, refusing writes until the collection is reopened: {}",
               fd_path_, st.ToString());
    sync_failed_ = st;
  }
  return PoisonedLocked();
}

Status Wal::PoisonedLocked() const {
  if (sync_failed_.ok()) return Status::Ok();
  return Status(sync_failed_.code(),
                fmt::format("the collection's WAL could not be made durable ({}); records after "
                            "lsn {} may be lost, so it takes no more writes: reopen the "
                            "collection (restart the server) once the disk is healthy",
                            sync_failed_.message(), synced_lsn_));
}

Result<std::unique_ptr<Wal>> Wal::Open(const std::string& dir, uint64_t start_seq,
                                       uint64_t min_next_lsn, bool sync, const ReplayFn& replay) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::IOError(fmt::format("cannot create WAL directory {}: {}", dir, ec.message()));
  std::unique_ptr<Wal> w(new Wal());
  w->dir_ = dir;
  w->sync_ = sync;

  std::vector<uint64_t> seqs;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() != 20 || name.substr(16) != ".log") continue;
    uint64_t s = 0;
    bool ok = true;
    for (char c : name.substr(0, 16)) {
      if (c < '0' || c > '9') ok = false;
      s = s * 10 + uint64_t(c - '0');
    }
    if (!ok) continue;
    if (s < start_seq) {
      ::unlink(e.path().c_str());  // already covered by sealed segments
      continue;
    }
    seqs.push_back(s);
  }
  if (ec)
    return Status::IOError(fmt::format("cannot list WAL directory {}: {}", dir, ec.message()));
  std::sort(seqs.begin(), seqs.end());

  uint64_t next_lsn = 1;
  uint64_t last_good_offset = 0;
  for (size_t fi = 0; fi < seqs.size(); ++fi) {
    const bool last = fi + 1 == seqs.size();
    std::string path = w->PathOf(seqs[fi]);
    STRATA_ASSIGN_OR_RETURN(std::string data, ReadFileToString(path));
    if (data.size() < kHeader || std::memcmp(data.data(), kMagic, 8) != 0 ||
        DecodeFixed64(data.data() + 8) != seqs[fi]) {
      if (last) {
        // Created but its header never made it: start it again.
        kLog.Warn("WAL file {} has no valid header; recreating it", path);
        ::unlink(path.c_str());
        seqs.pop_back();
        break;
      }
      return Status::Corruption(fmt::format("WAL file {} has a bad header", path));
    }
    // Within a file lsns run first_lsn, first_lsn + 1, ...; anything else is
    // a torn write or stale bytes.
    uint64_t expect = DecodeFixed64(data.data() + 16);
    next_lsn = std::max(next_lsn, expect);
    size_t off = kHeader;
    while (off < data.size()) {
      bool bad = false;
      uint32_t len = 0;
      if (data.size() - off < kRecordHead) {
        bad = true;
      } else {
        len = DecodeFixed32(data.data() + off);
        if (len > kMaxBody || data.size() - off - kRecordHead < len) bad = true;
      }
      if (!bad) {
        uint32_t crc = DecodeFixed32(data.data() + off + 4);
        const char* body = data.data() + off + 8;
        if (Crc32c(0, body, 8 + 1 + len) != crc) bad = true;
      }
      uint64_t lsn = bad ? 0 : DecodeFixed64(data.data() + off + 8);
      if (!bad && lsn != expect) bad = true;
      if (bad) {
        if (!last) {
          return Status::Corruption(
              fmt::format("WAL file {} is damaged at offset {} (not its end)", path, off));
        }
        kLog.Warn("WAL {}: cutting a torn tail of {} bytes at offset {}", path, data.size() - off,
                  off);
        UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(off)) != 0) {
          return Status::FromErrno(errno, "truncate " + path);
        }
        STRATA_RETURN_IF_ERROR(SyncFile(fd.get(), path));
        data.resize(off);
        break;
      }
      uint8_t type = static_cast<uint8_t>(data[off + 16]);
      STRATA_RETURN_IF_ERROR(
          replay(lsn, type, std::string_view(data.data() + off + kRecordHead, len))
              .WithContext(fmt::format("replaying WAL record {} in {}", lsn, path)));
      next_lsn = lsn + 1;
      expect = lsn + 1;
      off += kRecordHead + len;
    }
    last_good_offset = off;
    if (!last) w->old_bytes_ += data.size();
  }
  // Records may be missing at the end (power loss after the manifest saw
  // them); sequence numbers never go back, so continue in a fresh file.
  const bool jump = next_lsn < min_next_lsn;
  next_lsn = std::max(next_lsn, min_next_lsn);

  w->next_lsn_ = next_lsn;
  {
    std::lock_guard<std::mutex> l(w->sync_mu_);
    w->synced_lsn_ = next_lsn - 1;
    w->written_lsn_ = next_lsn - 1;
  }
  if (seqs.empty()) {
    STRATA_RETURN_IF_ERROR(w->CreateFile(std::max<uint64_t>(start_seq, 1), next_lsn));
  } else if (jump) {
    w->seqs_ = seqs;
    w->old_bytes_ += last_good_offset;
    STRATA_RETURN_IF_ERROR(w->CreateFile(seqs.back() + 1, next_lsn));
  } else {
    std::string path = w->PathOf(seqs.back());
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    if (::lseek(fd, static_cast<off_t>(last_good_offset), SEEK_SET) < 0) {
      int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "seek " + path);
    }
    w->fd_ = fd;
    w->fd_path_ = path;
    w->seq_ = seqs.back();
    w->offset_ = last_good_offset;
    w->seqs_ = seqs;
  }
  return w;
}

Wal::~Wal() { Close(); }

void Wal::Close() {
  std::lock_guard<std::mutex> a(append_mu_);
  std::unique_lock<std::mutex> s(sync_mu_);
  sync_cv_.wait(s, [&] { return !sync_running_; });
  if (fd_ < 0) return;
  if (!sync_failed_.ok()) {
    // Never sync the poisoned file again (a success would mean nothing); the
    // next open appends to a fresh one.
    ::close(fd_);
    fd_ = -1;
    const uint64_t next_lsn = next_lsn_;
    if (Status st = CreateFile(seq_ + 1, next_lsn); st.ok()) {
      ::close(fd_);
    } else {
      kLog.Error("WAL {}: cannot start a fresh file after a failed fsync: {}", dir_, st.ToString());
    }
    fd_ = -1;
    return;
  }
  if (sync_) (void)SyncFileData(fd_, PathOf(seq_));
  ::close(fd_);
  fd_ = -1;
}

Result<uint64_t> Wal::Append(uint8_t type, std::string_view body) {
  if (body.size() > kMaxBody) {
    return Status::InvalidArgument(fmt::format(
        "a write of {} bytes is larger than the WAL's 1 GiB record limit; split the batch",
        body.size()));
  }
  std::lock_guard<std::mutex> l(append_mu_);
  if (fd_ < 0) return Status::Unavailable("the collection is closed");
  {
    std::lock_guard<std::mutex> s(sync_mu_);
    STRATA_RETURN_IF_ERROR(PoisonedLocked());
  }
  uint64_t lsn = next_lsn_;
  std::string rec;
  rec.reserve(kRecordHead + body.size());
  PutFixed32(&rec, static_cast<uint32_t>(body.size()));
  PutFixed32(&rec, 0);
  PutFixed64(&rec, lsn);
  rec.push_back(static_cast<char>(type));
  rec.append(body);
  uint32_t crc = Crc32c(0, rec.data() + 8, rec.size() - 8);
  EncodeFixed32(rec.data() + 4, crc);
  Status st = WriteAll(fd_, rec.data(), rec.size(), PathOf(seq_));
  if (!st.ok()) {
    // Leave no partial record behind for later appends to follow.
    if (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0 ||
        ::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET) < 0) {
      kLog.Error("WAL {}: cannot cut a failed append: {}", PathOf(seq_), std::strerror(errno));
    }
    return st;
  }
  offset_ += rec.size();
  next_lsn_ = lsn + 1;
  {
    std::lock_guard<std::mutex> s(sync_mu_);
    written_lsn_ = lsn;
  }
  return lsn;
}

Status Wal::Sync(uint64_t lsn) {
  if (!sync_) return Status::Ok();
  std::unique_lock<std::mutex> l(sync_mu_);
  while (synced_lsn_ < lsn) {
    // A waiter of a failed group fails too: retrying the fsync could succeed
    // without its record on disk.
    STRATA_RETURN_IF_ERROR(PoisonedLocked());
    if (sync_running_) {
      sync_cv_.wait(l);
      continue;
    }
    sync_running_ = true;
    uint64_t target = written_lsn_;
    int fd = fd_;
    const std::string path = fd_path_;
    l.unlock();
    Status synced = fd >= 0 ? SyncFileData(fd, path) : Status::Ok();
    l.lock();
    sync_running_ = false;
    ++syncs_;
    sync_cv_.notify_all();
    if (fd < 0) return Status::Unavailable("the collection is closed");
    if (!synced.ok()) return FailSyncLocked(synced);
    synced_lsn_ = std::max(synced_lsn_, target);
  }
  return Status::Ok();
}

Result<uint64_t> Wal::Rotate() {
  std::lock_guard<std::mutex> a(append_mu_);
  if (fd_ < 0) return Status::Unavailable("the collection is closed");
  std::unique_lock<std::mutex> s(sync_mu_);
  sync_cv_.wait(s, [&] { return !sync_running_; });
  STRATA_RETURN_IF_ERROR(PoisonedLocked());
  if (Status synced = SyncFileData(fd_, PathOf(seq_)); !synced.ok()) {
    return FailSyncLocked(synced);
  }
  synced_lsn_ = written_lsn_;
  int old = fd_;
  std::string old_path = fd_path_;
  uint64_t old_size = offset_;
  fd_ = -1;
  Status st = CreateFile(seq_ + 1, next_lsn_);
  if (!st.ok()) {
    fd_ = old;  // keep appending to the old file
    fd_path_ = std::move(old_path);
    return st;
  }
  ::close(old);
  old_bytes_ += old_size;
  return seq_;
}

void Wal::RemoveBefore(uint64_t seq) {
  std::lock_guard<std::mutex> a(append_mu_);
  std::vector<uint64_t> keep;
  for (uint64_t s : seqs_) {
    if (s < seq && s != seq_) {
      struct stat st;
      std::string p = PathOf(s);
      if (::stat(p.c_str(), &st) == 0)
        old_bytes_ -= std::min<uint64_t>(old_bytes_, uint64_t(st.st_size));
      ::unlink(p.c_str());
    } else {
      keep.push_back(s);
    }
  }
  seqs_ = std::move(keep);
}

std::vector<std::pair<std::string, uint64_t>> Wal::Files(uint64_t seq) const {
  std::lock_guard<std::mutex> a(append_mu_);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (uint64_t s : seqs_) {
    if (s < seq) continue;
    std::string p = PathOf(s);
    uint64_t size = 0;
    if (s == seq_) {
      size = offset_;
    } else {
      struct stat st;
      if (::stat(p.c_str(), &st) == 0) size = uint64_t(st.st_size);
    }
    out.emplace_back(p, size);
  }
  return out;
}

uint64_t Wal::current_seq() const {
  std::lock_guard<std::mutex> a(append_mu_);
  return seq_;
}

uint64_t Wal::last_lsn() const {
  std::lock_guard<std::mutex> a(append_mu_);
  return next_lsn_ - 1;
}

uint64_t Wal::bytes() const {
  std::lock_guard<std::mutex> a(append_mu_);
  return old_bytes_ + offset_;
}

}  // namespace strata::vector::internal
