#include "cache/tiers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/log.h>

namespace strata::cache {
namespace {

constexpr log::Logger kLog("cache");

std::string Labels(const CacheOptions& o, std::string_view tier) {
  return fmt::format("cache=\"{}\",tier=\"{}\"", o.name, tier);
}

}  // namespace

// ---------------------------------------------------------------------------
// Tier

Tier::Tier(std::string name, uint64_t capacity, const CacheOptions& options,
           FrequencySketch* sketch)
    : name_(std::move(name)),
      capacity_(capacity),
      options_(options),
      sketch_(sketch),
      policy_(MakePolicy(options.policy)) {
  auto& r = metrics::Registry::Global();
  const std::string l = Labels(options, name_);
  m_hits_ = &r.GetCounter("strata_cache_hits_total", "Block reads served by the tier", l);
  m_misses_ = &r.GetCounter("strata_cache_misses_total", "Block reads the tier could not serve", l);
  m_evictions_ = &r.GetCounter("strata_cache_evictions_total", "Blocks evicted from the tier", l);
  m_fill_bytes_ =
      &r.GetCounter("strata_cache_fill_bytes_total", "Data bytes written into the tier", l);
  m_rejects_ = &r.GetCounter("strata_cache_admission_rejects_total",
                             "Blocks the admission policy kept out of the tier", l);
  m_corrupt_ = &r.GetCounter("strata_cache_corrupt_blocks_total",
                             "Blocks found torn or corrupt and discarded", l);
  m_used_ = &r.GetGauge("strata_cache_used_bytes", "Bytes the tier holds (disk: real on-disk bytes)", l);
  m_blocks_ = &r.GetGauge("strata_cache_blocks", "Blocks resident in the tier", l);
  r.GetGauge("strata_cache_capacity_bytes", "Byte limit of the tier", l)
      .Set(static_cast<int64_t>(capacity));
}

Tier::~Tier() = default;

bool Tier::Contains(const BlockId& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(id);
  return it != index_.end() && !it->second->bad;
}

void Tier::SetKeyState(std::string_view key, uint64_t priority, bool pinned) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(std::string(key));
  if (it == by_key_.end()) return;
  for (Entry* e : it->second) {
    if (e->in_policy) policy_->SetPriority(e, priority);
    else e->priority = priority;
    e->pinned = pinned;
  }
}

void Tier::EraseKey(std::string_view key, std::string_view keep_etag) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(std::string(key));
  if (it == by_key_.end()) return;
  std::vector<Entry*> victims;
  for (Entry* e : it->second) {
    if ((keep_etag.empty() || e->etag != keep_etag) && e->readers == 0) victims.push_back(e);
  }
  for (Entry* e : victims) EraseLocked(e, false);
  PublishLocked();
}

void Tier::CountMiss() {
  misses_.fetch_add(1, std::memory_order_relaxed);
  m_misses_->Inc();
}

TierStats Tier::Stats() const {
  TierStats s;
  s.name = name_;
  s.capacity_bytes = capacity_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.used_bytes = used_;
    s.blocks = index_.size();
  }
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.evictions = evictions_.load();
  s.fill_bytes = fill_bytes_.load();
  s.admission_rejects = rejects_.load();
  s.corrupt_blocks = corrupt_.load();
  return s;
}

bool Tier::AdmitsLocked(const AdmitInfo& c, const Entry& victim) const {
  if (c.pinned) return true;
  if (options_.policy == EvictionPolicy::kPriority) return c.priority < victim.priority;
  if (options_.admission == AdmissionPolicy::kAll) return true;
  // TinyLFU: strictly more past uses than the victim. Ties keep the resident
  // block, which is what makes epoch-shuffled reads keep a stable half
  // instead of churning (research/cache.md §2, CoorDL's "MinIO" policy).
  return c.freq > sketch_->Estimate(victim.id);
}

bool Tier::MakeRoomLocked(uint64_t need, const AdmitInfo* candidate) {
  if (need > capacity_) return false;
  bool first = true;
  while (used_ + reserved_ + need > capacity_ || BelowFloorLocked(need)) {
    Entry* v = policy_->Victim([this](const Entry* e) { return Evictable(e); });
    if (v == nullptr) return false;
    if (first && candidate != nullptr) {
      first = false;
      if (!AdmitsLocked(*candidate, *v)) {
        rejects_.fetch_add(1, std::memory_order_relaxed);
        m_rejects_->Inc();
        return false;
      }
    }
    EraseLocked(v, true);
  }
  return true;
}

Entry* Tier::AddLocked(const BlockRef& ref, uint64_t data_len, uint64_t charged,
                       const AdmitInfo& admit) {
  auto e = std::make_unique<Entry>();
  e->id = ref.id;
  e->key = std::string(ref.key);
  e->etag = std::string(ref.etag);
  e->index = ref.index;
  e->data_len = data_len;
  e->charged = charged;
  e->priority = admit.priority;
  e->pinned = admit.pinned;
  e->seq = ++seq_;
  Entry* raw = e.get();
  index_.emplace(ref.id, std::move(e));
  by_key_[raw->key].push_back(raw);
  policy_->Insert(raw);
  raw->in_policy = true;
  used_ += charged;
  return raw;
}

void Tier::EraseLocked(Entry* e, bool eviction) {
  if (e->in_policy) {
    policy_->Erase(e);
    e->in_policy = false;
  }
  DropPayloadLocked(e);
  used_ -= std::min(used_, e->charged);
  auto bk = by_key_.find(e->key);
  if (bk != by_key_.end()) {
    auto& v = bk->second;
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    if (v.empty()) by_key_.erase(bk);
  }
  if (eviction) {
    evictions_.fetch_add(1, std::memory_order_relaxed);
    m_evictions_->Inc();
  }
  index_.erase(e->id);  // destroys e
}

void Tier::PublishLocked() {
  m_used_->Set(static_cast<int64_t>(used_));
  m_blocks_->Set(static_cast<int64_t>(index_.size()));
}

// ---------------------------------------------------------------------------
// RamTier

RamTier::RamTier(uint64_t capacity, const CacheOptions& options, FrequencySketch* sketch)
    : Tier("ram", capacity, options, sketch) {}

std::shared_ptr<const std::string> RamTier::Lookup(const BlockRef& ref, bool count) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(ref.id);
  if (it == index_.end()) {
    if (count) CountMiss();
    return nullptr;
  }
  policy_->Touch(it->second.get());
  if (count) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    m_hits_->Inc();
  }
  return it->second->data;
}

bool RamTier::Insert(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
                     const AdmitInfo& admit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(ref.id)) return true;
  const uint64_t need = data->size();
  if (!MakeRoomLocked(need, &admit)) return false;
  Entry* e = AddLocked(ref, data->size(), need, admit);
  e->data = data;
  fill_bytes_.fetch_add(data->size(), std::memory_order_relaxed);
  m_fill_bytes_->Inc(data->size());
  PublishLocked();
  return true;
}

// ---------------------------------------------------------------------------
// DiskTier

DiskTier::DiskTier(int number, const DiskTierOptions& disk, const CacheOptions& options,
                   FrequencySketch* sketch)
    : Tier("disk" + std::to_string(number), disk.capacity_bytes, options, sketch),
      disk_(disk),
      blocks_dir_(disk.dir + "/blocks") {}

DiskTier::~DiskTier() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(int number, const DiskTierOptions& disk,
                                                 const CacheOptions& options,
                                                 FrequencySketch* sketch) {
  if (disk.dir.empty()) return Status::InvalidArgument("disk tier needs a directory");
  if (disk.capacity_bytes == 0) {
    return Status::InvalidArgument("disk tier " + disk.dir + " needs a capacity above 0");
  }
  std::unique_ptr<DiskTier> t(new DiskTier(number, disk, options, sketch));
  std::error_code ec;
  std::filesystem::create_directories(t->blocks_dir_, ec);
  if (ec) {
    return Status::IOError("cannot create cache directory " + t->blocks_dir_ + ": " +
                           ec.message());
  }
  const std::string lock_path = disk.dir + "/LOCK";
  t->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (t->lock_fd_ < 0) return Status::FromErrno(errno, "open " + lock_path);
  if (::flock(t->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::Unavailable("cache directory " + disk.dir +
                               " is in use by another process; give each process its own "
                               "--cache-dir");
  }
  struct statvfs vfs;
  if (::statvfs(t->blocks_dir_.c_str(), &vfs) == 0 && vfs.f_bsize > 0) t->fs_block_ = vfs.f_bsize;
  STRATA_RETURN_IF_ERROR(t->Scan());
  return t;
}

std::string DiskTier::PathOf(const BlockId& id) const {
  return blocks_dir_ + "/" + BlockIdHex(id) + ".blk";
}

uint64_t DiskTier::DirBytes() const {
  struct stat st;
  if (::stat(blocks_dir_.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

uint64_t DiskTier::MeasureOnDisk() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = DirBytes();
  DIR* d = ::opendir(blocks_dir_.c_str());
  if (d == nullptr) return total;
  while (struct dirent* de = ::readdir(d)) {
    if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  ::closedir(d);
  return total;
}

Status DiskTier::Scan() {
  struct Found {
    int64_t mtime_ns;
    BlockHeader header;
    uint64_t disk_bytes;
  };
  std::vector<Found> found;
  uint64_t removed = 0, corrupt = 0;
  DIR* d = ::opendir(blocks_dir_.c_str());
  if (d == nullptr) return Status::FromErrno(errno, "open cache directory " + blocks_dir_);
  while (struct dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = blocks_dir_ + "/" + name;
    BlockId id;
    if (name.size() != 36 || name.substr(32) != ".blk" || !ParseBlockIdHex(name.substr(0, 32), &id)) {
      // Temp files of a fill that crashed, or anything else: not ours to keep.
      ::unlink(path.c_str());
      ++removed;
      continue;
    }
    uint64_t disk_bytes = 0;
    auto h = ReadBlockFileHeader(path, &disk_bytes);
    if (!h.ok() || !(h->id == id) || h->data_len > options_.block_size) {
      ::unlink(path.c_str());
      ++corrupt;
      continue;
    }
    struct stat st;
    int64_t mtime = 0;
    if (::stat(path.c_str(), &st) == 0) mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    found.push_back({mtime, std::move(*h), disk_bytes});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mu_);
  dir_bytes_ = DirBytes();
  used_ += dir_bytes_;
  for (const Found& f : found) {
    if (index_.count(f.header.id)) continue;
    BlockRef ref{f.header.id, f.header.key, f.header.etag, f.header.index};
    AddLocked(ref, f.header.data_len, f.disk_bytes, AdmitInfo{});
  }
  if (corrupt) {
    corrupt_.fetch_add(corrupt);
    m_corrupt_->Inc(corrupt);
  }
  // The limit may have shrunk since the last run.
  (void)MakeRoomLocked(0, nullptr);
  PublishLocked();
  if (!found.empty() || removed || corrupt) {
    kLog.Info("cache {}: {} blocks ({} bytes) kept, {} leftovers and {} bad blocks removed",
              disk_.dir, index_.size(), used_, removed, corrupt);
  }
  return Status::Ok();
}

void DiskTier::DropPayloadLocked(Entry* e) {
  const std::string path = PathOf(e->id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    kLog.Warn("cache: cannot delete block {}: {}", path, std::strerror(errno));
  }
}

bool DiskTier::BelowFloorLocked(uint64_t need) {
  if (disk_.min_free_ratio <= 0 && disk_.min_free_bytes == 0) return false;
  struct statvfs vfs;
  if (::statvfs(blocks_dir_.c_str(), &vfs) != 0) return false;
  const double total = static_cast<double>(vfs.f_blocks) * vfs.f_frsize;
  const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t floor =
      std::max<uint64_t>(static_cast<uint64_t>(disk_.min_free_ratio * total), disk_.min_free_bytes);
  return avail < floor + need + reserved_;
}

std::shared_ptr<const std::string> DiskTier::Lookup(const BlockRef& ref, bool count) {
  Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(ref.id);
    if (it == index_.end() || it->second->bad) {
      if (count) CountMiss();
      return nullptr;
    }
    e = it->second.get();
    ++e->readers;
    if (e->in_policy) policy_->Touch(e);
  }
  auto data = ReadBlockFile(PathOf(ref.id), ref.id, ref.key, ref.etag, ref.index);
  std::lock_guard<std::mutex> lock(mu_);
  --e->readers;
  if (!data.ok()) {
    if (data.error().code() != StatusCode::kNotFound) {
      kLog.Warn("cache: discarding block {} of {}: {}", ref.index, ref.key, data.error().ToString());
      corrupt_.fetch_add(1, std::memory_order_relaxed);
      m_corrupt_->Inc();
    }
    e->bad = true;
    if (e->in_policy) {
      policy_->Erase(e);
      e->in_policy = false;
    }
    if (e->readers == 0) EraseLocked(e, false);
    PublishLocked();
    if (count) CountMiss();
    return nullptr;
  }
  if (e->bad && e->readers == 0) EraseLocked(e, false);
  if (count) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    m_hits_->Inc();
  }
  return std::make_shared<const std::string>(std::move(*data));
}

bool DiskTier::Insert(const BlockRef& ref, const std::shared_ptr<const std::string>& data,
                      const AdmitInfo& admit) {
  BlockHeader h;
  h.id = ref.id;
  h.key = std::string(ref.key);
  h.etag = std::string(ref.etag);
  h.index = ref.index;
  h.data_len = data->size();
  h.data_crc = Crc32c(0, data->data(), data->size());
  const uint64_t file_len = kBlockHeaderFixed + h.key.size() + h.etag.size() + data->size();
  // Round up to whole filesystem blocks, plus one block of slack for the
  // directory growing by an entry; the true size replaces this after the write.
  const uint64_t estimate = (file_len + fs_block_ - 1) / fs_block_ * fs_block_ + fs_block_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(ref.id) || writing_.count(ref.id)) return true;
    if (!MakeRoomLocked(estimate, &admit)) return false;
    reserved_ += estimate;
    writing_.insert(ref.id);
  }
  auto written = WriteBlockFile(blocks_dir_, h, *data, options_.fsync_blocks);
  const uint64_t dir_now = DirBytes();
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ -= estimate;
  writing_.erase(ref.id);
  if (dir_now > dir_bytes_) {
    used_ += dir_now - dir_bytes_;
    dir_bytes_ = dir_now;
  }
  if (!written.ok()) {
    kLog.Warn("cache: cannot store block {} of {} in {}: {}", ref.index, ref.key, disk_.dir,
              written.error().ToString());
    PublishLocked();
    return false;
  }
  AddLocked(ref, data->size(), *written, admit);
  fill_bytes_.fetch_add(data->size(), std::memory_order_relaxed);
  m_fill_bytes_->Inc(data->size());
  if (used_ + reserved_ > capacity_) {
    // Only if the filesystem charged more than the estimate; never expected.
    kLog.Warn("cache {}: block took {} bytes, more than the {} reserved", disk_.dir, *written,
              estimate);
    (void)MakeRoomLocked(0, nullptr);
  }
  PublishLocked();
  return true;
}

}  // namespace strata::cache
