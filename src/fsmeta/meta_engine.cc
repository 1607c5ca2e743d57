// KvMeta: the one MetaEngine implementation, over a TxnKV backend.
//
// Every public operation is one backend transaction (Redis bodies may rerun on
// conflict, so they only touch the transaction and locals). Local state:
// the cached Format, the inode/slice id batches (guarded by id_mu_) and this
// client's open-file counts (guarded by open_mu_), which decide whether an
// unlinked file is freed at once or sustained until its last Close.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

#include <strata/core/metrics.h>

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

namespace {

constexpr uint64_t kMaxFileSize = 1ull << 50;  // 1 PiB

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsDir(const Attr& a) { return S_ISDIR(a.mode); }
bool IsReg(const Attr& a) { return S_ISREG(a.mode); }

uint64_t SpaceOf(const Attr& a) {
  if (IsDir(a)) return 4096;
  if (!IsReg(a)) return 0;
  return (a.size + 4095) / 4096 * 4096;
}

Status CheckName(std::string_view name) {
  if (name.empty()) return FsError(ENOENT, "empty file name");
  if (name.size() > 255) return FsError(ENAMETOOLONG, "file name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return FsError(EINVAL, "file name contains '/' or NUL");
  }
  return Status::Ok();
}

std::string Quote(std::string_view name) { return "\"" + std::string(name) + "\""; }

}  // namespace

// Attributes loaded in one transaction: each inode is read once, modified in
// place (so an operation touching the same directory twice sees one copy) and
// written back by Flush.
class AttrCache {
 public:
  explicit AttrCache(KvTxn& t) : t_(t) {}
  Attr* Get(Ino ino) {
    auto it = m_.find(ino);
    if (it != m_.end()) return it->second ? &*it->second : nullptr;
    return Store(ino, t_.Get(AttrKey(ino)));
  }
  // Loads inode `ino` and another key in one round trip; returns the other value.
  std::optional<std::string> GetWith(Ino ino, const std::string& other_key) {
    auto v = t_.MultiGet({AttrKey(ino), other_key});
    if (!m_.count(ino)) Store(ino, v[0]);
    return v[1];
  }
  Attr* Store(Ino ino, const std::optional<std::string>& v) {
    std::optional<Attr> a;
    if (v) {
      Attr x;
      if (!DecodeAttr(*v, &x)) {
        throw KvError(Status::Corruption("attributes of inode " + std::to_string(ino) +
                                         " are corrupt (" + std::to_string(v->size()) +
                                         " bytes); run fsck"));
      }
      a = x;
    }
    auto& slot = m_[ino];
    slot = a;
    return slot ? &*slot : nullptr;
  }
  void Put(Ino ino, const Attr& a) {
    m_[ino] = a;
    dirty_.insert(ino);
  }
  void Dirty(Ino ino) { dirty_.insert(ino); }
  void Drop(Ino ino) {
    m_[ino].reset();
    dirty_.erase(ino);
  }
  void Flush() {
    for (Ino ino : dirty_) {
      auto& a = m_[ino];
      if (a) t_.Set(AttrKey(ino), EncodeAttr(*a));
    }
    dirty_.clear();
  }

 private:
  KvTxn& t_;
  std::map<Ino, std::optional<Attr>> m_;
  std::set<Ino> dirty_;
};

// The directory `dir`, read through `as`: ENOENT if it does not exist,
// ENOTDIR if it is not a directory.
Result<Attr*> ExistingDir(AttrCache& as, Ino dir) {
  Attr* p = as.Get(dir);
  if (!p) return FsError(ENOENT, "directory inode " + std::to_string(dir) + " does not exist");
  if (!IsDir(*p)) return FsError(ENOTDIR, "inode " + std::to_string(dir) + " is not a directory");
  return p;
}

// ---------------------------------------------------------------------------

KvMeta::KvMeta(std::unique_ptr<TxnKV> kv) : kv_(std::move(kv)) {}
KvMeta::~KvMeta() = default;

std::string_view KvMeta::Backend() const { return kv_->Name(); }

Status KvMeta::Access(const Context& ctx, const Attr& a, int mask) const {
  if (!ctx.check_permission || mask == 0) return Status::Ok();
  if (ctx.uid == 0) {
    // root: everything but executing a file that nobody may execute.
    if ((mask & X_OK) && !IsDir(a) && (a.mode & 0111) == 0) {
      return FsError(EACCES, "no execute permission for anyone");
    }
    return Status::Ok();
  }
  uint32_t bits;
  if (ctx.uid == a.uid) {
    bits = (a.mode >> 6) & 7;
  } else if (InGroup(ctx, a.gid)) {
    bits = (a.mode >> 3) & 7;
  } else {
    bits = a.mode & 7;
  }
  if ((static_cast<uint32_t>(mask) & bits) != static_cast<uint32_t>(mask)) {
    return FsError(EACCES, "permission denied for uid " + std::to_string(ctx.uid) +
                               " (mode " + std::to_string(a.mode & 07777) + ")");
  }
  return Status::Ok();
}

bool KvMeta::InGroup(const Context& ctx, uint32_t gid) const {
  if (ctx.gid == gid) return true;
  return std::find(ctx.gids.begin(), ctx.gids.end(), gid) != ctx.gids.end();
}

Status KvMeta::Sticky(const Context& ctx, const Attr& dir, const Attr& victim) const {
  if (!ctx.check_permission || ctx.uid == 0 || !(dir.mode & S_ISVTX)) return Status::Ok();
  if (ctx.uid == dir.uid || ctx.uid == victim.uid) return Status::Ok();
  return FsError(EPERM, "sticky directory: only the owner may remove or rename this entry");
}

Status KvMeta::Txn(const std::function<Status(KvTxn&)>& body, bool read_only) {
  // strata_fsmeta_txn_seconds{kind}; its _count is the number of transactions.
  struct TxnMetrics {
    metrics::Histogram* latency[2];
    metrics::Counter* failures[2];
    TxnMetrics() {
      auto& r = metrics::Registry::Global();
      for (int i = 0; i < 2; ++i) {
        const std::string l = i ? "kind=\"read\"" : "kind=\"write\"";
        latency[i] = &r.GetHistogram("strata_fsmeta_txn_seconds", "Metadata transactions, retries included", l);
        failures[i] = &r.GetCounter("strata_fsmeta_txn_failures_total",
                                    "Metadata transactions that failed for other than a filesystem error (I/O, "
                                    "connection, corruption)",
                                    l);
      }
    }
  };
  static TxnMetrics m;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = kv_->Txn(body, read_only);
  const int i = read_only ? 1 : 0;
  m.latency[i]->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (st.code() == StatusCode::kIOError || st.code() == StatusCode::kUnavailable ||
      st.code() == StatusCode::kCorruption || st.code() == StatusCode::kInternal) {
    m.failures[i]->Inc();
  }
  return st;
}

Result<Ino> KvMeta::NextInode() {
  std::lock_guard<std::mutex> lock(id_mu_);
  if (next_ino_ >= ino_end_) {
    constexpr int64_t kBatch = 100;
    STRATA_ASSIGN_OR_RETURN(int64_t v, kv_->Incr(kNextInode, kBatch));
    next_ino_ = static_cast<Ino>(v - kBatch + 1);
    ino_end_ = static_cast<Ino>(v + 1);
  }
  return next_ino_++;
}

Result<uint64_t> KvMeta::NewSliceId() {
  std::lock_guard<std::mutex> lock(id_mu_);
  if (next_slice_ >= slice_end_) {
    constexpr int64_t kBatch = 1000;
    STRATA_ASSIGN_OR_RETURN(int64_t v, kv_->Incr(kNextSlice, kBatch));
    next_slice_ = static_cast<uint64_t>(v - kBatch + 1);
    slice_end_ = static_cast<uint64_t>(v + 1);
  }
  return next_slice_++;
}

int KvMeta::TrashDays() {
  std::lock_guard<std::mutex> lock(fmt_mu_);
  return format_ ? format_->trash_days : 0;
}

Status KvMeta::CheckSpace(int64_t space_delta, int64_t inode_delta) {
  uint64_t capacity = 0, inode_limit = 0;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    if (format_) {
      capacity = format_->capacity;
      inode_limit = format_->inodes;
    }
  }
  if ((capacity == 0 || space_delta <= 0) && (inode_limit == 0 || inode_delta <= 0)) {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(quota_mu_);
  int64_t now = NowNs();
  if (now - quota_read_ns_ > 1000000000) {
    std::optional<std::string> u, i;
    STRATA_RETURN_IF_ERROR(kv_->Txn(
        [&](KvTxn& t) {
          u = t.Get(kUsedSpace);
          i = t.Get(kInodes);
          return Status::Ok();
        },
        true));
    cached_used_ = u ? std::stoll(*u) : 0;
    cached_inodes_ = i ? std::stoll(*i) : 0;
    quota_read_ns_ = now;
  }
  if (capacity && space_delta > 0 && cached_used_ + space_delta > static_cast<int64_t>(capacity)) {
    return FsError(ENOSPC, "volume capacity of " + std::to_string(capacity) + " bytes reached");
  }
  if (inode_limit && inode_delta > 0 && cached_inodes_ + inode_delta > static_cast<int64_t>(inode_limit)) {
    return FsError(ENOSPC, "volume inode limit of " + std::to_string(inode_limit) + " reached");
  }
  cached_used_ += space_delta;
  cached_inodes_ += inode_delta;
  return Status::Ok();
}

bool KvMeta::MarkSustainedIfOpen(Ino ino) {
  std::lock_guard<std::mutex> lock(open_mu_);
  auto it = open_.find(ino);
  if (it == open_.end() || it->second <= 0) return false;
  maybe_sustained_.insert(ino);
  return true;
}

// ---- volume ---------------------------------------------------------------

static nlohmann::json FormatToJson(const Format& f) {
  return {{"name", f.name},         {"uuid", f.uuid},
          {"storage", f.storage},   {"block_size", f.block_size},
          {"compress", f.compress}, {"trash_days", f.trash_days},
          {"capacity", f.capacity}, {"inodes", f.inodes},
          {"meta_version", f.meta_version}};
}

static Result<Format> FormatFromJson(std::string_view s) {
  try {
    auto j = nlohmann::json::parse(s);
    Format f;
    f.name = j.at("name").get<std::string>();
    f.uuid = j.value("uuid", "");
    f.storage = j.value("storage", "");
    f.block_size = j.value("block_size", 4u << 20);
    f.compress = j.value("compress", "none");
    f.trash_days = j.value("trash_days", 1);
    f.capacity = j.value("capacity", uint64_t{0});
    f.inodes = j.value("inodes", uint64_t{0});
    f.meta_version = j.value("meta_version", 1);
    return f;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("volume format record is not valid JSON: ") + e.what());
  }
}

Status KvMeta::Init(const Format& format, bool force) {
  if (format.name.empty()) return Status::InvalidArgument("volume name must not be empty");
  if (format.block_size < 64 * 1024 || format.block_size > 64u << 20 ||
      (format.block_size & (format.block_size - 1)) != 0) {
    return Status::InvalidArgument("block size must be a power of two between 64 KiB and 64 MiB");
  }
  if (format.compress != "none" && format.compress != "lz4" && format.compress != "zstd") {
    return Status::InvalidArgument("compression must be none, lz4 or zstd, not \"" +
                                   format.compress + "\"");
  }
  if (format.trash_days < 0) return Status::InvalidArgument("trash days must be >= 0");
  Format stored;
  bool existed = false;
  int64_t now = NowNs();
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto old = t.Get(kFormatKey);
        existed = old.has_value();
        if (old) {
          auto f = FormatFromJson(*old);
          if (!f) return f.error();
          if (!force && f->name != format.name) {
            return Status::AlreadyExists("metadata already holds volume \"" + f->name +
                                         "\"; use force to reformat it");
          }
          stored = *f;
          if (!force) {  // same name: only the tunables change
            stored.trash_days = format.trash_days;
            stored.capacity = format.capacity;
            stored.inodes = format.inodes;
          } else {
            std::string uuid = stored.uuid;
            stored = format;
            if (stored.uuid.empty()) stored.uuid = uuid;
          }
          t.Set(kFormatKey, FormatToJson(stored).dump());
          return Status::Ok();
        }
        stored = format;
        t.Set(kFormatKey, FormatToJson(stored).dump());
        Attr root;
        root.mode = S_IFDIR | 0777;
        root.nlink = 2;
        root.size = 4096;
        root.atime_ns = root.mtime_ns = root.ctime_ns = now;
        root.parent = kRootIno;
        t.Set(AttrKey(kRootIno), EncodeAttr(root));
        Attr trash = root;
        trash.mode = S_IFDIR | 0555;
        t.Set(AttrKey(kTrashIno), EncodeAttr(trash));
        t.Set(kNextInode, std::to_string(kRootIno));
        t.Set(kNextSlice, "0");
        t.Set(kNextSession, "0");
        t.Set(kUsedSpace, "4096");
        t.Set(kInodes, "1");
        return Status::Ok();
      },
      false));
  (void)existed;
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_ = stored;
  return Status::Ok();
}

Result<Format> KvMeta::LoadFormat() {
  std::optional<std::string> v;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        v = t.Get(kFormatKey);
        return Status::Ok();
      },
      true));
  if (!v) return Status::NotFound("metadata holds no formatted volume; run `strata fs format`");
  auto f = FormatFromJson(*v);
  if (!f) return f.error();
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_ = *f;
  return f;
}

Status KvMeta::Destroy() {
  STRATA_RETURN_IF_ERROR(kv_->DeleteAll());
  std::lock_guard<std::mutex> lock(fmt_mu_);
  format_.reset();
  return Status::Ok();
}

// ---- sessions -------------------------------------------------------------

static std::string SessionToJson(const SessionInfo& s) {
  return nlohmann::json{{"sid", s.sid},
                        {"host", s.host},
                        {"mount_point", s.mount_point},
                        {"version", s.version},
                        {"pid", s.pid},
                        {"heartbeat_ns", s.heartbeat_ns}}
      .dump();
}

static SessionInfo SessionFromJson(std::string_view v) {
  SessionInfo s;
  try {
    auto j = nlohmann::json::parse(v);
    s.sid = j.value("sid", uint64_t{0});
    s.host = j.value("host", "");
    s.mount_point = j.value("mount_point", "");
    s.version = j.value("version", "");
    s.pid = j.value("pid", 0u);
    s.heartbeat_ns = j.value("heartbeat_ns", int64_t{0});
  } catch (const std::exception&) {
  }
  return s;
}

Result<uint64_t> KvMeta::NewSession(const SessionInfo& info) {
  bool formatted;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    formatted = format_.has_value();
  }
  if (!formatted) STRATA_RETURN_IF_ERROR(LoadFormat().status());
  STRATA_ASSIGN_OR_RETURN(int64_t sid, kv_->Incr(kNextSession, 1));
  SessionInfo s = info;
  s.sid = static_cast<uint64_t>(sid);
  s.heartbeat_ns = NowNs();
  if (s.pid == 0) s.pid = static_cast<uint32_t>(getpid());
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        t.Set(SessionKey(s.sid), SessionToJson(s));
        return Status::Ok();
      },
      false));
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    session_ = s;
  }
  sid_ = s.sid;
  return s.sid;
}

uint64_t KvMeta::SessionId() const { return sid_; }

Status KvMeta::Heartbeat() {
  uint64_t sid = sid_;
  if (sid == 0) return Status::InvalidArgument("no session: call NewSession first");
  std::string info;
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    session_.heartbeat_ns = NowNs();
    info = SessionToJson(session_);
  }
  return Txn(
      [&](KvTxn& t) {
        t.Set(SessionKey(sid), info);
        return Status::Ok();
      },
      false);
}

Status KvMeta::CleanSession(uint64_t sid) {
  // Locks held by the session.
  for (;;) {
    std::vector<std::string> held;
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          held.clear();
          t.Scan(HeldPrefix(sid), "", 500, true, [&](const std::string& k, const std::string&) {
            held.push_back(k);
            return true;
          });
          for (const auto& k : held) {
            t.Delete(k);
            t.Delete(k.substr(kGroupLen));
          }
          return Status::Ok();
        },
        false));
    if (held.size() < 500) break;
  }
  // Sustained inodes: free those no longer linked anywhere.
  std::vector<Ino> inos;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        inos.clear();
        t.Scan(SustainPrefix(sid), "", 0, true, [&](const std::string& k, const std::string&) {
          if (k.size() == 17) inos.push_back(GetBE64(k, 9));
          return true;
        });
        return Status::Ok();
      },
      true));
  for (Ino ino : inos) {
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          t.Delete(SustainKey(sid, ino));
          AttrCache as(t);
          Attr* a = as.Get(ino);
          if (a && a->nlink == 0) FreeInode(t, ino, *a);
          return Status::Ok();
        },
        false));
  }
  return Txn(
      [&](KvTxn& t) {
        t.Delete(SessionKey(sid));
        return Status::Ok();
      },
      false);
}

Status KvMeta::CloseSession() {
  if (sid_ == 0) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_.clear();
  }
  Status st = CleanSession(sid_.exchange(0));
  return st;
}

Result<std::vector<SessionInfo>> KvMeta::ListSessions() {
  std::vector<SessionInfo> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        t.Scan(SessionPrefix(), "", 0, false, [&](const std::string& k, const std::string& v) {
          if (k.size() == 17) out.push_back(SessionFromJson(v));
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Result<int> KvMeta::CleanStaleSessions(int64_t stale_after_s) {
  STRATA_ASSIGN_OR_RETURN(auto sessions, ListSessions());
  int64_t now = NowNs();
  int n = 0;
  for (const auto& s : sessions) {
    if (s.sid == sid_) continue;
    if (now - s.heartbeat_ns > stale_after_s * 1000000000ll) {
      STRATA_RETURN_IF_ERROR(CleanSession(s.sid));
      ++n;
    }
  }
  return n;
}

// ---- attributes and names -------------------------------------------------

Result<StatFs> KvMeta::StatFS(const Context&, Ino) {
  int64_t used = 0, inodes = 0;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto u = t.Get(kUsedSpace);
        auto i = t.Get(kInodes);
        used = u ? std::stoll(*u) : 0;
        inodes = i ? std::stoll(*i) : 0;
        return Status::Ok();
      },
      true));
  Format f;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    if (format_) f = *format_;
  }
  StatFs s;
  s.total_space = f.capacity ? f.capacity : (1ull << 50);
  s.used_space = static_cast<uint64_t>(std::max<int64_t>(used, 0));
  s.avail_space = s.total_space > s.used_space ? s.total_space - s.used_space : 0;
  s.used_inodes = static_cast<uint64_t>(std::max<int64_t>(inodes, 0));
  uint64_t limit = f.inodes ? f.inodes : (10ull << 30);
  s.avail_inodes = limit > s.used_inodes ? limit - s.used_inodes : 0;
  return s;
}

Result<Attr> KvMeta::GetAttr(Ino ino) {
  Attr out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        out = *a;
        return Status::Ok();
      },
      true));
  return out;
}

Result<Entry> KvMeta::Lookup(const Context& ctx, Ino parent, std::string_view name) {
  if (name.size() > 255) return FsError(ENAMETOOLONG, "file name longer than 255 bytes");
  Entry e;
  e.name = std::string(name);
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        bool special = name == "." || name == ".." || (parent == kRootIno && name == ".trash");
        std::optional<std::string> d;
        if (!special) d = as.GetWith(parent, DentKey(parent, name));
        STRATA_ASSIGN_OR_RETURN(Attr* p, ExistingDir(as, parent));
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, X_OK));
        Ino ino;
        if (name == ".") {
          ino = parent;
        } else if (name == "..") {
          ino = parent == kRootIno ? kRootIno : p->parent;
        } else if (parent == kRootIno && name == ".trash") {
          ino = kTrashIno;
        } else {
          if (!d) return FsError(ENOENT, Quote(name) + " not found");
          uint32_t type;
          if (!DecodeDent(*d, &type, &ino)) return Status::Corruption("bad directory entry " + Quote(name));
        }
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, Quote(name) + " points to a missing inode; run fsck");
        e.ino = ino;
        e.attr = *a;
        return Status::Ok();
      },
      true));
  return e;
}

Status KvMeta::Access(const Context& ctx, Ino ino, int mask) {
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  return Access(ctx, a, mask);
}

// Shrinks or extends a regular file inside a transaction: chunks past the new
// end are dropped (their slices queued for deletion) and the tail of the last
// kept chunk is covered by a hole, so bytes reappearing on a later extension
// read as zeros.
void KvMeta::TruncateInTxn(KvTxn& t, Ino ino, Attr* a, uint64_t length, int64_t now) {
  uint64_t old = a->size;
  if (length < old) {
    uint64_t first_drop = (length + kChunkSize - 1) / kChunkSize;
    std::vector<std::pair<std::string, std::string>> drop;
    t.Scan(ChunkPrefix(ino), first_drop == 0 ? "" : ChunkKey(ino, static_cast<uint32_t>(first_drop - 1)), 0,
           false, [&](const std::string& k, const std::string& v) {
             drop.emplace_back(k, v);
             return true;
           });
    for (auto& [k, v] : drop) {
      QueueSlices(t, v);
      t.Delete(k);
    }
    if (length % kChunkSize != 0) {
      uint32_t idx = static_cast<uint32_t>(length / kChunkSize);
      uint64_t chunk_start = static_cast<uint64_t>(idx) * kChunkSize;
      uint64_t chunk_end = std::min(old, chunk_start + kChunkSize);
      Slice hole;
      hole.pos = static_cast<uint32_t>(length - chunk_start);
      hole.len = static_cast<uint32_t>(chunk_end - length);
      hole.size = hole.len;
      std::string v;
      AppendSlice(&v, hole);
      t.Append(ChunkKey(ino, idx), v);
    }
  }
  int64_t delta = static_cast<int64_t>((length + 4095) / 4096 * 4096) -
                  static_cast<int64_t>((old + 4095) / 4096 * 4096);
  if (delta) t.IncrBy(kUsedSpace, delta);
  a->size = length;
  a->mtime_ns = a->ctime_ns = now;
}

void KvMeta::QueueSlices(KvTxn& t, std::string_view chunk_value) {
  std::vector<Slice> slices;
  DecodeSlices(chunk_value, &slices);
  std::set<uint64_t> seen;
  for (const auto& s : slices) {
    if (s.id == 0 || !seen.insert(s.id).second) continue;
    std::string v;
    PutBE32(&v, s.size);
    t.Set(DelSliceKey(s.id), v);
  }
}

void KvMeta::FreeInode(KvTxn& t, Ino ino, const Attr& a) {
  t.Delete(AttrKey(ino));
  if (S_ISLNK(a.mode)) t.Delete(SymKey(ino));
  std::vector<std::string> keys;
  t.Scan(XattrPrefix(ino), "", 0, true, [&](const std::string& k, const std::string&) {
    keys.push_back(k);
    return true;
  });
  for (const auto& k : keys) t.Delete(k);
  if (IsReg(a)) {
    std::vector<std::pair<std::string, std::string>> chunks;
    t.Scan(ChunkPrefix(ino), "", 0, false, [&](const std::string& k, const std::string& v) {
      chunks.emplace_back(k, v);
      return true;
    });
    for (auto& [k, v] : chunks) {
      QueueSlices(t, v);
      t.Delete(k);
    }
  }
  t.IncrBy(kInodes, -1);
  if (uint64_t sp = SpaceOf(a)) t.IncrBy(kUsedSpace, -static_cast<int64_t>(sp));
}

// The last link to a non-directory inode went away (its entry is already
// removed): keep it in the trash, sustain it while open, or free it.
void KvMeta::ReleaseLink(KvTxn& t, AttrCache& as, Ino ino, Attr* a, Ino parent, std::string_view name,
                         const std::string& dent_value, int64_t now) {
  a->ctime_ns = now;
  if (a->nlink > 1) {
    a->nlink--;
    if (a->parent == parent) a->parent = 0;
    as.Dirty(ino);
    return;
  }
  int days = TrashDays();
  if (days > 0 && parent != kTrashIno) {
    std::string tname = std::to_string(now / 1000000000) + "-" + std::to_string(parent) + "-" +
                        std::to_string(ino) + "-" + std::string(name);
    if (tname.size() > 255) tname.resize(255);
    t.Set(DentKey(kTrashIno, tname), dent_value);
    a->parent = kTrashIno;
    as.Dirty(ino);
    return;
  }
  a->nlink = 0;
  if (MarkSustainedIfOpen(ino)) {
    t.Set(SustainKey(sid_, ino), "");
    as.Dirty(ino);
    return;
  }
  FreeInode(t, ino, *a);
  as.Drop(ino);
}

Result<Entry> KvMeta::MakeNode(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                               uint32_t umask, uint64_t rdev, std::string_view symlink_target,
                               bool open_after) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EEXIST, Quote(name) + " already exists");
  uint32_t type = mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  switch (type) {
    case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
      break;
    default:
      return FsError(EINVAL, "unknown file type " + std::to_string(type >> 12));
  }
  if (parent == kTrashIno) return FsError(EPERM, "cannot create files in the trash");
  STRATA_RETURN_IF_ERROR(CheckSpace(type == S_IFDIR ? 4096 : 0, 1));
  STRATA_ASSIGN_OR_RETURN(Ino ino, NextInode());
  int64_t now = NowNs();
  Entry e;
  e.name = std::string(name);
  e.ino = ino;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        auto existing = as.GetWith(parent, DentKey(parent, name));
        STRATA_ASSIGN_OR_RETURN(Attr* p, ExistingDir(as, parent));
        if (p->nlink == 0) return FsError(ENOENT, "directory was removed");
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        if (existing) return FsError(EEXIST, Quote(name) + " already exists");
        Attr a;
        a.mode = type | (type == S_IFLNK ? 0777 : (mode & 07777 & ~umask));
        a.uid = ctx.uid;
        a.gid = ctx.gid;
        if (p->mode & S_ISGID) {
          a.gid = p->gid;
          if (type == S_IFDIR) a.mode |= S_ISGID;
        } else if (ctx.check_permission && ctx.uid != 0 && (a.mode & S_ISGID) && !InGroup(ctx, a.gid)) {
          a.mode &= ~S_ISGID;
        }
        a.nlink = type == S_IFDIR ? 2 : 1;
        a.size = type == S_IFDIR ? 4096 : (type == S_IFLNK ? symlink_target.size() : 0);
        a.rdev = (type == S_IFCHR || type == S_IFBLK) ? rdev : 0;
        a.atime_ns = a.mtime_ns = a.ctime_ns = now;
        a.parent = parent;
        as.Put(ino, a);
        t.Set(DentKey(parent, name), EncodeDent(a.mode, ino));
        if (type == S_IFLNK) t.Set(SymKey(ino), std::string(symlink_target));
        if (type == S_IFDIR) p->nlink++;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        as.Flush();
        t.IncrBy(kInodes, 1);
        if (uint64_t sp = SpaceOf(a)) t.IncrBy(kUsedSpace, static_cast<int64_t>(sp));
        e.attr = a;
        return Status::Ok();
      },
      false));
  if (open_after) {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_[ino]++;
  }
  return e;
}

Result<Entry> KvMeta::Mknod(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                            uint32_t umask, uint64_t rdev) {
  if ((mode & S_IFMT) == S_IFLNK) return FsError(EINVAL, "use Symlink to create symbolic links");
  return MakeNode(ctx, parent, name, mode, umask, rdev, {}, false);
}

Result<Entry> KvMeta::Mkdir(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                            uint32_t umask) {
  return MakeNode(ctx, parent, name, S_IFDIR | (mode & 07777), umask, 0, {}, false);
}

Result<Entry> KvMeta::Create(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                             uint32_t umask, int) {
  return MakeNode(ctx, parent, name, S_IFREG | (mode & 07777), umask, 0, {}, true);
}

Result<Entry> KvMeta::Symlink(const Context& ctx, Ino parent, std::string_view name,
                              std::string_view target) {
  if (target.empty()) return FsError(ENOENT, "empty symlink target");
  if (target.size() > 4096) return FsError(ENAMETOOLONG, "symlink target longer than 4096 bytes");
  return MakeNode(ctx, parent, name, S_IFLNK | 0777, 0, 0, target, false);
}

Result<std::string> KvMeta::ReadLink(Ino ino) {
  std::string out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (!S_ISLNK(a->mode)) return FsError(EINVAL, "inode " + std::to_string(ino) + " is not a symlink");
        auto v = t.Get(SymKey(ino));
        if (!v) return Status::Corruption("symlink " + std::to_string(ino) + " has no target; run fsck");
        out = *v;
        return Status::Ok();
      },
      true));
  return out;
}

Result<Entry> KvMeta::Link(const Context& ctx, Ino ino, Ino new_parent, std::string_view new_name) {
  STRATA_RETURN_IF_ERROR(CheckName(new_name));
  if (new_name == "." || new_name == "..") return FsError(EEXIST, Quote(new_name) + " already exists");
  if (new_parent == kTrashIno) return FsError(EPERM, "cannot link into the trash");
  int64_t now = NowNs();
  Entry e;
  e.name = std::string(new_name);
  e.ino = ino;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (IsDir(*a)) return FsError(EPERM, "cannot hard-link a directory");
        if (a->nlink == 0) return FsError(ENOENT, "file was removed");
        Attr* p = as.Get(new_parent);
        if (!p) return FsError(ENOENT, "directory inode " + std::to_string(new_parent) + " does not exist");
        if (!IsDir(*p)) return FsError(ENOTDIR, "inode " + std::to_string(new_parent) + " is not a directory");
        STRATA_RETURN_IF_ERROR(Access(ctx, *p, W_OK | X_OK));
        if (t.Get(DentKey(new_parent, new_name))) return FsError(EEXIST, Quote(new_name) + " already exists");
        if (a->nlink >= 65000) return FsError(EMLINK, "too many links");
        t.Set(DentKey(new_parent, new_name), EncodeDent(a->mode, ino));
        a->nlink++;
        if (a->parent != new_parent) a->parent = 0;
        a->ctime_ns = now;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(ino);
        as.Dirty(new_parent);
        as.Flush();
        e.attr = *a;
        return Status::Ok();
      },
      false));
  return e;
}

Result<KvMeta::EntryToRemove> KvMeta::FindEntryToRemove(const Context& ctx, AttrCache& as, Ino parent,
                                                        std::string_view name) const {
  EntryToRemove e;
  e.key = DentKey(parent, name);
  auto d = as.GetWith(parent, e.key);
  STRATA_ASSIGN_OR_RETURN(e.parent, ExistingDir(as, parent));
  STRATA_RETURN_IF_ERROR(Access(ctx, *e.parent, W_OK | X_OK));
  if (!d) return FsError(ENOENT, Quote(name) + " not found");
  e.dent = std::move(*d);
  if (!DecodeDent(e.dent, &e.type, &e.ino)) return Status::Corruption("bad directory entry " + Quote(name));
  e.attr = as.Get(e.ino);
  return e;
}

Status KvMeta::Unlink(const Context& ctx, Ino parent, std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return FsError(EISDIR, Quote(name) + " is a directory");
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        STRATA_ASSIGN_OR_RETURN(EntryToRemove e, FindEntryToRemove(ctx, as, parent, name));
        Attr* p = e.parent;
        Attr* a = e.attr;
        if (a ? IsDir(*a) : e.type == S_IFDIR) return FsError(EISDIR, Quote(name) + " is a directory");
        if (a) STRATA_RETURN_IF_ERROR(Sticky(ctx, *p, *a));
        t.Delete(e.key);
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        if (a) ReleaseLink(t, as, e.ino, a, parent, name, e.dent, now);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Rmdir(const Context& ctx, Ino parent, std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckName(name));
  if (name == ".") return FsError(EINVAL, "cannot remove \".\"");
  if (name == "..") return FsError(ENOTEMPTY, "cannot remove \"..\"");
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        STRATA_ASSIGN_OR_RETURN(EntryToRemove e, FindEntryToRemove(ctx, as, parent, name));
        Attr* p = e.parent;
        Attr* a = e.attr;
        if (a && !IsDir(*a)) return FsError(ENOTDIR, Quote(name) + " is not a directory");
        if (a) {
          STRATA_RETURN_IF_ERROR(Sticky(ctx, *p, *a));
          bool empty = true;
          t.Scan(DentPrefix(e.ino), "", 1, true, [&](const std::string&, const std::string&) {
            empty = false;
            return false;
          });
          if (!empty) return FsError(ENOTEMPTY, "directory " + Quote(name) + " is not empty");
          FreeInode(t, e.ino, *a);
          as.Drop(e.ino);
        }
        t.Delete(e.key);
        if (p->nlink > 2) p->nlink--;
        p->mtime_ns = p->ctime_ns = now;
        as.Dirty(parent);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Rename(const Context& ctx, Ino p1, std::string_view n1, Ino p2, std::string_view n2,
                      uint32_t flags) {
  STRATA_RETURN_IF_ERROR(CheckName(n1));
  STRATA_RETURN_IF_ERROR(CheckName(n2));
  if ((flags & ~(kRenameNoReplace | kRenameExchange)) != 0 ||
      flags == (kRenameNoReplace | kRenameExchange)) {
    return FsError(EINVAL, "invalid rename flags " + std::to_string(flags));
  }
  if (n1 == "." || n1 == ".." || n2 == "." || n2 == "..") {
    return FsError(EINVAL, "cannot rename \".\" or \"..\"");
  }
  if (p2 == kTrashIno) return FsError(EPERM, "cannot rename into the trash");
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* pa1 = as.Get(p1);
        if (!pa1) return FsError(ENOENT, "directory inode " + std::to_string(p1) + " does not exist");
        if (!IsDir(*pa1)) return FsError(ENOTDIR, "inode " + std::to_string(p1) + " is not a directory");
        Attr* pa2 = as.Get(p2);
        if (!pa2) return FsError(ENOENT, "directory inode " + std::to_string(p2) + " does not exist");
        if (!IsDir(*pa2)) return FsError(ENOTDIR, "inode " + std::to_string(p2) + " is not a directory");
        if (pa2->nlink == 0) return FsError(ENOENT, "target directory was removed");
        STRATA_RETURN_IF_ERROR(Access(ctx, *pa1, W_OK | X_OK));
        STRATA_RETURN_IF_ERROR(Access(ctx, *pa2, W_OK | X_OK));
        std::string skey = DentKey(p1, n1), tkey = DentKey(p2, n2);
        auto sd = t.Get(skey);
        if (!sd) return FsError(ENOENT, Quote(n1) + " not found");
        uint32_t stype, ttype = 0;
        Ino sino, tino = 0;
        if (!DecodeDent(*sd, &stype, &sino)) return Status::Corruption("bad directory entry " + Quote(n1));
        Attr* sa = as.Get(sino);
        if (!sa) return FsError(ENOENT, Quote(n1) + " points to a missing inode; run fsck");
        STRATA_RETURN_IF_ERROR(Sticky(ctx, *pa1, *sa));
        auto td = t.Get(tkey);
        if (p1 == p2 && n1 == n2) return Status::Ok();
        Attr* ta = nullptr;
        if (td) {
          if (!DecodeDent(*td, &ttype, &tino)) return Status::Corruption("bad directory entry " + Quote(n2));
          if (flags & kRenameNoReplace) return FsError(EEXIST, Quote(n2) + " already exists");
          if (tino == sino && !(flags & kRenameExchange)) return Status::Ok();  // two links of one file
          ta = as.Get(tino);
          if (ta) STRATA_RETURN_IF_ERROR(Sticky(ctx, *pa2, *ta));
        } else if (flags & kRenameExchange) {
          return FsError(ENOENT, Quote(n2) + " not found");
        }
        // A directory cannot move into itself or below itself.
        auto check_not_below = [&](Ino dir, Ino dest) -> Status {
          Ino cur = dest;
          for (int depth = 0; cur != kRootIno && depth < 10000; ++depth) {
            if (cur == dir) return FsError(EINVAL, "cannot move a directory into itself");
            Attr* c = as.Get(cur);
            if (!c || c->parent == 0 || c->parent == cur) break;
            cur = c->parent;
          }
          return Status::Ok();
        };
        if (IsDir(*sa) && p1 != p2) {
          STRATA_RETURN_IF_ERROR(check_not_below(sino, p2));
          STRATA_RETURN_IF_ERROR(Access(ctx, *sa, W_OK));  // its ".." changes
        }
        if (flags & kRenameExchange) {
          if (ta && IsDir(*ta) && p1 != p2) {
            STRATA_RETURN_IF_ERROR(check_not_below(tino, p1));
            STRATA_RETURN_IF_ERROR(Access(ctx, *ta, W_OK));
          }
          t.Set(skey, *td);
          t.Set(tkey, *sd);
          if (p1 != p2) {
            if (IsDir(*sa)) {
              pa1->nlink--;
              pa2->nlink++;
            }
            if (ta && IsDir(*ta)) {
              pa2->nlink--;
              pa1->nlink++;
            }
          }
          if (IsDir(*sa) || sa->nlink == 1) sa->parent = p2;
          sa->ctime_ns = now;
          as.Dirty(sino);
          if (ta) {
            if (IsDir(*ta) || ta->nlink == 1) ta->parent = p1;
            ta->ctime_ns = now;
            as.Dirty(tino);
          }
        } else {
          if (ta) {
            if (IsDir(*ta)) {
              if (!IsDir(*sa)) return FsError(EISDIR, Quote(n2) + " is a directory");
              bool empty = true;
              t.Scan(DentPrefix(tino), "", 1, true, [&](const std::string&, const std::string&) {
                empty = false;
                return false;
              });
              if (!empty) return FsError(ENOTEMPTY, "directory " + Quote(n2) + " is not empty");
              FreeInode(t, tino, *ta);
              as.Drop(tino);
              pa2->nlink--;
            } else {
              if (IsDir(*sa)) return FsError(ENOTDIR, Quote(n2) + " is not a directory");
              ReleaseLink(t, as, tino, ta, p2, n2, *td, now);
            }
          } else if (td && ttype == S_IFDIR && !IsDir(*sa)) {
            return FsError(EISDIR, Quote(n2) + " is a directory");
          }
          t.Delete(skey);
          t.Set(tkey, *sd);
          if (IsDir(*sa) && p1 != p2) {
            pa1->nlink--;
            pa2->nlink++;
            sa->parent = p2;
          } else if (!IsDir(*sa) && sa->nlink == 1) {
            sa->parent = p2;
          }
          sa->ctime_ns = now;
          as.Dirty(sino);
        }
        pa1->mtime_ns = pa1->ctime_ns = now;
        pa2->mtime_ns = pa2->ctime_ns = now;
        as.Dirty(p1);
        as.Dirty(p2);
        as.Flush();
        return Status::Ok();
      },
      false);
}

// ---- directories ----------------------------------------------------------

Status KvMeta::OpenDir(const Context& ctx, Ino ino) {
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  if (!IsDir(a)) return FsError(ENOTDIR, "inode " + std::to_string(ino) + " is not a directory");
  return Access(ctx, a, R_OK);
}

Result<std::vector<Entry>> KvMeta::ReadDir(const Context&, Ino ino, std::string_view after,
                                           size_t limit, bool plus) {
  if (limit == 0) limit = 1000;
  std::vector<Entry> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        AttrCache as(t);
        Attr* d = as.Get(ino);
        if (!d) return FsError(ENOENT, "directory inode " + std::to_string(ino) + " does not exist");
        if (!IsDir(*d)) return FsError(ENOTDIR, "inode " + std::to_string(ino) + " is not a directory");
        std::string prefix = DentPrefix(ino);
        std::string start = after.empty() ? std::string() : DentKey(ino, after);
        t.Scan(prefix, start, limit, false, [&](const std::string& k, const std::string& v) {
          Entry e;
          e.name = k.substr(prefix.size());
          uint32_t type;
          if (DecodeDent(v, &type, &e.ino)) {
            e.attr.mode = type;
            out.push_back(std::move(e));
          }
          return true;
        });
        if (plus && !out.empty()) {
          std::vector<std::string> keys;
          keys.reserve(out.size());
          for (const auto& e : out) keys.push_back(AttrKey(e.ino));
          auto vals = t.MultiGet(keys);
          for (size_t i = 0; i < out.size(); ++i) {
            if (vals[i]) DecodeAttr(*vals[i], &out[i].attr);
          }
        }
        return Status::Ok();
      },
      true));
  return out;
}

// ---- files ----------------------------------------------------------------

Result<Attr> KvMeta::Open(const Context& ctx, Ino ino, int flags) {
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  int mask = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY: mask = R_OK; break;
    case O_WRONLY: mask = W_OK; break;
    case O_RDWR: mask = R_OK | W_OK; break;
    default: return FsError(EINVAL, "invalid open flags");
  }
  if (flags & O_TRUNC) mask |= W_OK;
  if (IsDir(a) && (mask & W_OK)) return FsError(EISDIR, "cannot open a directory for writing");
  STRATA_RETURN_IF_ERROR(Access(ctx, a, mask));
  std::lock_guard<std::mutex> lock(open_mu_);
  open_[ino]++;
  return a;
}

Status KvMeta::Close(Ino ino) {
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    auto it = open_.find(ino);
    if (it == open_.end()) return Status::Ok();
    if (--it->second > 0) return Status::Ok();
    open_.erase(it);
    // Not unlinked while open here: no sustain key to drop, no transaction.
    if (maybe_sustained_.erase(ino) == 0) return Status::Ok();
  }
  // Last close here: free the inode if it was unlinked while open.
  uint64_t sid = sid_;
  return Txn(
      [&](KvTxn& t) {
        if (!t.Get(SustainKey(sid, ino))) return Status::Ok();
        t.Delete(SustainKey(sid, ino));
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (a && a->nlink == 0) FreeInode(t, ino, *a);
        return Status::Ok();
      },
      false);
}

Result<std::vector<Slice>> KvMeta::Read(Ino ino, uint32_t chunk_index) {
  std::vector<Slice> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto v = t.Get(ChunkKey(ino, chunk_index));
        if (!v) {
          out.clear();
          if (!t.Get(AttrKey(ino))) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
          return Status::Ok();
        }
        if (!DecodeSlices(*v, &out)) {
          return Status::Corruption("slice list of inode " + std::to_string(ino) + " chunk " +
                                    std::to_string(chunk_index) + " is corrupt; run fsck");
        }
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::Write(Ino ino, uint32_t chunk_index, uint32_t pos, const Slice& slice, int64_t mtime_ns) {
  if (static_cast<uint64_t>(pos) + slice.len > kChunkSize) {
    return FsError(EINVAL, "slice crosses the chunk boundary");
  }
  if (slice.id != 0 && static_cast<uint64_t>(slice.off) + slice.len > slice.size) {
    return FsError(EINVAL, "slice range exceeds the slice object");
  }
  uint64_t end = static_cast<uint64_t>(chunk_index) * kChunkSize + pos + slice.len;
  if (end > kMaxFileSize) return FsError(EFBIG, "file would exceed the maximum size");
  Slice s = slice;
  s.pos = pos;
  std::string v;
  AppendSlice(&v, s);
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (!IsReg(*a)) return FsError(EPERM, "inode " + std::to_string(ino) + " is not a regular file");
        if (end > a->size) {
          int64_t delta = static_cast<int64_t>((end + 4095) / 4096 * 4096) -
                          static_cast<int64_t>((a->size + 4095) / 4096 * 4096);
          STRATA_RETURN_IF_ERROR(CheckSpace(delta, 0));
          if (delta) t.IncrBy(kUsedSpace, delta);
          a->size = end;
        }
        t.Append(ChunkKey(ino, chunk_index), v);
        a->mtime_ns = a->ctime_ns = mtime_ns;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Truncate(const Context& ctx, Ino ino, uint64_t length) {
  Attr in;
  in.size = length;
  return SetAttr(ctx, ino, kSetSize, in).status();
}

Result<Attr> KvMeta::SetAttr(const Context& ctx, Ino ino, uint32_t mask, const Attr& in) {
  if ((mask & kSetSize) && in.size > kMaxFileSize) return FsError(EFBIG, "file size too large");
  int64_t now = NowNs();
  Attr out;
  bool root = !ctx.check_permission || ctx.uid == 0;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        bool owner = root || ctx.uid == a->uid;
        if (mask & kSetSize) {
          if (IsDir(*a)) return FsError(EISDIR, "cannot truncate a directory");
          if (!IsReg(*a)) return FsError(EINVAL, "cannot truncate a special file");
          STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
          if (in.size > a->size) {
            STRATA_RETURN_IF_ERROR(CheckSpace(static_cast<int64_t>((in.size + 4095) / 4096 * 4096) -
                                                  static_cast<int64_t>((a->size + 4095) / 4096 * 4096),
                                              0));
          }
          if (in.size != a->size) TruncateInTxn(t, ino, a, in.size, now);
          else a->mtime_ns = now;
        }
        if (mask & (kSetUid | kSetGid)) {
          if ((mask & kSetUid) && in.uid != a->uid && !root) {
            return FsError(EPERM, "only root may change the owner");
          }
          if ((mask & kSetGid) && in.gid != a->gid && !root && (ctx.uid != a->uid || !InGroup(ctx, in.gid))) {
            return FsError(EPERM, "only the owner may change the group, to one of its groups");
          }
          if (((mask & kSetUid) && in.uid != a->uid) || ((mask & kSetGid) && in.gid != a->gid)) {
            if (!IsDir(*a)) a->mode &= ~(S_ISUID | (a->mode & S_IXGRP ? S_ISGID : 0));
          }
          if (mask & kSetUid) a->uid = in.uid;
          if (mask & kSetGid) a->gid = in.gid;
        }
        if (mask & kSetMode) {
          // Clearing set-user-ID/set-group-ID and nothing else is what the
          // kernel asks for on a write or truncate by someone without
          // CAP_FSETID, who need not own the file (a chmod by a non-owner is
          // refused by the kernel before it gets here).
          const uint32_t old_bits = a->mode & 07777, new_bits = in.mode & 07777;
          const uint32_t dropped = old_bits & ~new_bits;
          const bool only_clears_setid =
              dropped != 0 && (new_bits & ~old_bits) == 0 && (dropped & ~(S_ISUID | S_ISGID)) == 0;
          if (!owner && !only_clears_setid) return FsError(EPERM, "only the owner may change the mode");
          uint32_t m = in.mode & 07777;
          if (!root && !InGroup(ctx, a->gid)) m &= ~S_ISGID;
          a->mode = (a->mode & S_IFMT) | m;
        }
        if (mask & (kSetAtime | kSetMtime)) {
          if (!owner) return FsError(EPERM, "only the owner may set explicit times");
          if (mask & kSetAtime) a->atime_ns = in.atime_ns;
          if (mask & kSetMtime) a->mtime_ns = in.mtime_ns;
        }
        if (mask & (kSetAtimeNow | kSetMtimeNow)) {
          if (!owner) STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
          if (mask & kSetAtimeNow) a->atime_ns = now;
          if (mask & kSetMtimeNow) a->mtime_ns = now;
        }
        if (!(mask & kSetKeepCtime)) a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        out = *a;
        return Status::Ok();
      },
      false));
  return out;
}

Status KvMeta::Fallocate(const Context& ctx, Ino ino, int mode, uint64_t offset, uint64_t length) {
  if (length == 0) return FsError(EINVAL, "fallocate length must be > 0");
  if (mode & ~(kFallocKeepSize | kFallocPunchHole | kFallocZeroRange)) {
    return FsError(EOPNOTSUPP, "unsupported fallocate mode " + std::to_string(mode));
  }
  if ((mode & kFallocPunchHole) && !(mode & kFallocKeepSize)) {
    return FsError(EINVAL, "punch hole requires keep size");
  }
  if ((mode & kFallocPunchHole) && (mode & kFallocZeroRange)) {
    return FsError(EINVAL, "punch hole and zero range are exclusive");
  }
  if (offset + length < offset || offset + length > kMaxFileSize) {
    return FsError(EFBIG, "fallocate range exceeds the maximum file size");
  }
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (IsDir(*a)) return FsError(EISDIR, "cannot fallocate a directory");
        if (!IsReg(*a)) return FsError(ENODEV, "cannot fallocate a special file");
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        uint64_t end = offset + length;
        if (mode & (kFallocPunchHole | kFallocZeroRange)) {
          // Holes over [offset, zero_end): never past EOF, so chunks stay within the length.
          uint64_t zero_end = (mode & kFallocKeepSize) ? std::min(end, a->size) : end;
          for (uint64_t p = offset; p < zero_end;) {
            uint32_t idx = static_cast<uint32_t>(p / kChunkSize);
            uint64_t cend = std::min(zero_end, (static_cast<uint64_t>(idx) + 1) * kChunkSize);
            Slice hole;
            hole.pos = static_cast<uint32_t>(p % kChunkSize);
            hole.len = static_cast<uint32_t>(cend - p);
            hole.size = hole.len;
            std::string v;
            AppendSlice(&v, hole);
            t.Append(ChunkKey(ino, idx), v);
            p = cend;
          }
        }
        if (!(mode & kFallocKeepSize) && end > a->size) {
          int64_t delta = static_cast<int64_t>((end + 4095) / 4096 * 4096) -
                          static_cast<int64_t>((a->size + 4095) / 4096 * 4096);
          STRATA_RETURN_IF_ERROR(CheckSpace(delta, 0));
          if (delta) t.IncrBy(kUsedSpace, delta);
          a->size = end;
        }
        a->mtime_ns = a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::ReplaceSlices(Ino ino, uint32_t chunk_index, const std::vector<Slice>& expected,
                             const std::vector<Slice>& replacement) {
  for (const auto& s : replacement) {
    if (static_cast<uint64_t>(s.pos) + s.len > kChunkSize) return FsError(EINVAL, "slice crosses the chunk boundary");
  }
  return Txn(
      [&](KvTxn& t) {
        std::string key = ChunkKey(ino, chunk_index);
        auto v = t.Get(key);
        std::vector<Slice> cur;
        if (v && !DecodeSlices(*v, &cur)) return Status::Corruption("corrupt slice list");
        if (cur != expected) return FsError(EAGAIN, "chunk changed since it was read; compaction skipped");
        std::set<uint64_t> kept;
        for (const auto& s : replacement) kept.insert(s.id);
        std::set<uint64_t> seen;
        for (const auto& s : cur) {
          if (s.id == 0 || kept.count(s.id) || !seen.insert(s.id).second) continue;
          std::string sz;
          PutBE32(&sz, s.size);
          t.Set(DelSliceKey(s.id), sz);
        }
        if (replacement.empty()) t.Delete(key);
        else t.Set(key, EncodeSlices(replacement));
        return Status::Ok();
      },
      false);
}

Status KvMeta::ListSlices(const std::function<Status(Ino, uint32_t, const Slice&)>& fn) {
  Status inner;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("C", [&](const std::string& k, const std::string& v) {
    if (k.size() != 13) return true;
    std::vector<Slice> slices;
    DecodeSlices(v, &slices);
    for (const auto& s : slices) {
      if (s.id == 0) continue;
      inner = fn(GetBE64(k, 1), GetBE32(k, 9), s);
      if (!inner.ok()) return false;
    }
    return true;
  }));
  return inner;
}

Result<std::vector<SliceRef>> KvMeta::PendingSliceDeletes(size_t limit) {
  std::vector<SliceRef> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        t.Scan(DelSlicePrefix(), "", limit, false, [&](const std::string& k, const std::string& v) {
          if (k.size() == 17 && v.size() == 4) out.push_back({GetBE64(k, 9), GetBE32(v, 0)});
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::ConfirmSliceDeletes(const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < ids.size(); i += 500) {
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          for (size_t j = i; j < std::min(ids.size(), i + 500); ++j) t.Delete(DelSliceKey(ids[j]));
          return Status::Ok();
        },
        false));
  }
  return Status::Ok();
}

Result<int> KvMeta::CleanTrash(int64_t now_ns) {
  int days = TrashDays();
  int released = 0;
  std::string after;
  for (;;) {
    Context root;
    STRATA_ASSIGN_OR_RETURN(auto page, ReadDir(root, kTrashIno, after, 1000, false));
    if (page.empty()) break;
    after = page.back().name;
    for (const auto& e : page) {
      int64_t ts = std::atoll(e.name.c_str());
      if (now_ns / 1000000000 - ts < static_cast<int64_t>(days) * 86400) continue;
      Status st = Txn(
          [&](KvTxn& t) {
            auto d = t.Get(DentKey(kTrashIno, e.name));
            if (!d) return Status::Ok();
            t.Delete(DentKey(kTrashIno, e.name));
            AttrCache as(t);
            Attr* a = as.Get(e.ino);
            if (a && !IsDir(*a)) {
              a->nlink = a->nlink > 0 ? a->nlink : 1;
              ReleaseLink(t, as, e.ino, a, kTrashIno, e.name, *d, NowNs());
              as.Flush();
            }
            return Status::Ok();
          },
          false);
      STRATA_RETURN_IF_ERROR(st);
      ++released;
    }
  }
  return released;
}

Result<Summary> KvMeta::GetSummary(const Context& ctx, Ino ino) {
  Summary s;
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  std::vector<Ino> stack;
  if (IsDir(a)) {
    s.dirs++;
    s.size += 4096;
    stack.push_back(ino);
  } else {
    s.files++;
    s.length += a.size;
    s.size += SpaceOf(a);
  }
  while (!stack.empty()) {
    Ino d = stack.back();
    stack.pop_back();
    std::string after;
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(auto page, ReadDir(ctx, d, after, 1000, true));
      if (page.empty()) break;
      after = page.back().name;
      for (const auto& e : page) {
        if (IsDir(e.attr)) {
          s.dirs++;
          s.size += 4096;
          stack.push_back(e.ino);
        } else {
          s.files++;
          s.length += IsReg(e.attr) ? e.attr.size : 0;
          s.size += SpaceOf(e.attr);
        }
      }
    }
  }
  return s;
}

// ---- xattrs ---------------------------------------------------------------

Result<std::string> KvMeta::GetXattr(const Context& ctx, Ino ino, std::string_view name) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  std::string out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, R_OK));
        auto v = t.Get(XattrKey(ino, name));
        if (!v) return FsError(ENODATA, "no xattr " + Quote(name));
        out = *v;
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::SetXattr(const Context& ctx, Ino ino, std::string_view name, std::string_view value,
                        int flags) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  if (value.size() > 65536) return FsError(E2BIG, "xattr value larger than 64 KiB");
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        std::string key = XattrKey(ino, name);
        bool exists = t.Get(key).has_value();
        if ((flags & kXattrCreate) && exists) return FsError(EEXIST, "xattr " + Quote(name) + " exists");
        if ((flags & kXattrReplace) && !exists) return FsError(ENODATA, "no xattr " + Quote(name));
        t.Set(key, std::string(value));
        a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Result<std::vector<std::string>> KvMeta::ListXattr(const Context& ctx, Ino ino) {
  std::vector<std::string> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        (void)ctx;
        std::string prefix = XattrPrefix(ino);
        t.Scan(prefix, "", 0, true, [&](const std::string& k, const std::string&) {
          out.push_back(k.substr(prefix.size()));
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::RemoveXattr(const Context& ctx, Ino ino, std::string_view name) {
  if (name.empty() || name.size() > 255) return FsError(ERANGE, "bad xattr name length");
  int64_t now = NowNs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        std::string key = XattrKey(ino, name);
        if (!t.Get(key)) return FsError(ENODATA, "no xattr " + Quote(name));
        t.Delete(key);
        a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

// ---- locks ----------------------------------------------------------------

Status KvMeta::Flock(const Context&, Ino ino, uint64_t owner, uint32_t type, bool block) {
  if (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK) return FsError(EINVAL, "bad flock type");
  std::string mine = LockKey('F', ino, sid_, owner);
  for (;;) {
    Status st = Txn(
        [&](KvTxn& t) {
          if (type == F_UNLCK) {
            t.Delete(mine);
            t.Delete(HeldKey(sid_, mine));
            return Status::Ok();
          }
          bool conflict = false;
          t.Scan(Key1('F', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
            if (k == mine || v.empty()) return true;
            uint32_t theirs = static_cast<unsigned char>(v[0]);
            if (type == F_WRLCK || theirs == F_WRLCK) {
              conflict = true;
              return false;
            }
            return true;
          });
          if (conflict) return FsError(EAGAIN, "file is locked by another owner");
          t.Set(mine, std::string(1, static_cast<char>(type)));
          t.Set(HeldKey(sid_, mine), "");
          return Status::Ok();
        },
        false);
    if (!block || ErrnoOf(st) != EAGAIN) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

static bool Overlaps(const PlockRange& a, uint64_t start, uint64_t end) {
  return a.start <= end && start <= a.end;
}

Status KvMeta::Getlk(const Context&, Ino ino, uint64_t owner, LockRange* range) {
  if (range->type != F_RDLCK && range->type != F_WRLCK) return FsError(EINVAL, "bad lock type");
  std::string mine = LockKey('L', ino, sid_, owner);
  LockRange found;
  found.type = F_UNLCK;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        found.type = F_UNLCK;
        t.Scan(Key1('L', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
          if (k == mine) return true;
          for (const auto& r : DecodePlocks(v)) {
            if (Overlaps(r, range->start, range->end) && (range->type == F_WRLCK || r.type == F_WRLCK)) {
              found = {r.type, r.start, r.end, r.pid};
              return false;
            }
          }
          return true;
        });
        return Status::Ok();
      },
      true));
  *range = found;
  return Status::Ok();
}

Status KvMeta::Setlk(const Context& ctx, Ino ino, uint64_t owner, bool block, const LockRange& range) {
  if (range.type != F_RDLCK && range.type != F_WRLCK && range.type != F_UNLCK) {
    return FsError(EINVAL, "bad lock type");
  }
  if (range.end < range.start) return FsError(EINVAL, "lock range ends before it starts");
  std::string mine = LockKey('L', ino, sid_, owner);
  for (;;) {
    Status st = Txn(
        [&](KvTxn& t) {
          std::vector<PlockRange> my;
          bool conflict = false;
          t.Scan(Key1('L', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
            if (k == mine) {
              my = DecodePlocks(v);
              return true;
            }
            if (range.type == F_UNLCK) return true;
            for (const auto& r : DecodePlocks(v)) {
              if (Overlaps(r, range.start, range.end) && (range.type == F_WRLCK || r.type == F_WRLCK)) {
                conflict = true;
                return false;
              }
            }
            return true;
          });
          if (conflict) return FsError(EAGAIN, "range is locked by another owner");
          // Cut [start, end] out of this owner's ranges, then add the new one.
          std::vector<PlockRange> next;
          for (const auto& r : my) {
            if (!Overlaps(r, range.start, range.end)) {
              next.push_back(r);
              continue;
            }
            if (r.start < range.start) next.push_back({r.type, r.start, range.start - 1, r.pid});
            if (r.end > range.end) next.push_back({r.type, range.end + 1, r.end, r.pid});
          }
          if (range.type != F_UNLCK) {
            next.push_back({range.type, range.start, range.end, range.pid ? range.pid : ctx.pid});
          }
          std::sort(next.begin(), next.end(),
                    [](const PlockRange& a, const PlockRange& b) { return a.start < b.start; });
          if (next.empty()) {
            t.Delete(mine);
            t.Delete(HeldKey(sid_, mine));
          } else {
            t.Set(mine, EncodePlocks(next));
            t.Set(HeldKey(sid_, mine), "");
          }
          return Status::Ok();
        },
        false);
    if (!block || ErrnoOf(st) != EAGAIN) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status KvMeta::Sync() { return kv_->Sync(); }

// ---- factory --------------------------------------------------------------

Result<std::unique_ptr<MetaEngine>> OpenMeta(std::string_view url) {
  std::unique_ptr<TxnKV> kv;
  if (url.rfind("sqlite3://", 0) == 0) {
    std::string path(url.substr(10));
    if (path.empty()) return Status::InvalidArgument("sqlite3:// URL needs a file path");
    STRATA_ASSIGN_OR_RETURN(kv, OpenSqliteKV(path));
  } else if (url.rfind("redis://", 0) == 0) {
    STRATA_ASSIGN_OR_RETURN(kv, OpenRedisKV(url));
  } else {
    return Status::InvalidArgument("unsupported metadata URL \"" + std::string(url) +
                                   "\": use sqlite3://PATH or redis://HOST:PORT/DB");
  }
  auto meta = std::make_unique<KvMeta>(std::move(kv));
  (void)meta->LoadFormat();  // a fresh store has none yet; Init creates it
  return std::unique_ptr<MetaEngine>(std::move(meta));
}

}  // namespace strata::fsmeta
