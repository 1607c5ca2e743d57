// KvMeta: MetaEngine over a TxnKV (private; see include/strata/fsmeta/meta_engine.h),
// and what its operation files share: small attribute helpers and AttrCache,
// the attributes one transaction loads, changes and writes back.
//
// KvMeta is split by operation, as 3FS keeps one file per metadata operation:
//   kv_meta.cc          the core: transactions, id batches, quotas, permission
//                       checks, the volume format (Init, LoadFormat, Destroy)
//   kv_meta_inode.cc    attributes (GetAttr, SetAttr, StatFS), links, freeing
//                       inodes, the trash
//   kv_meta_dir.cc      names: Lookup, Mknod/Mkdir/Symlink, Unlink, Rmdir,
//                       Rename, ReadDir, GetSummary
//   kv_meta_file.cc     file contents: Create/Open/Close, slices and chunks,
//                       Write, Truncate, Fallocate, the slice deletion queue
//   kv_meta_xattr.cc    extended attributes
//   kv_meta_session.cc  sessions, their clean-up, BSD and POSIX locks
//   kv_meta_cache.cc    the transaction wrapper (change counters, transaction
//                       counts) and this client's entry cache
//   check_dump.cc       fsck, dump and load
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <strata/fsmeta/meta_engine.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"

namespace strata::fsmeta {

class AttrCache;

class KvMeta final : public MetaEngine {
 public:
  explicit KvMeta(std::unique_ptr<TxnKV> kv);
  ~KvMeta() override;

  std::string_view Backend() const override;
  Status Init(const Format& format, bool force) override;
  Result<Format> LoadFormat() override;
  Status Destroy() override;

  Result<uint64_t> NewSession(const SessionInfo& info) override;
  uint64_t SessionId() const override;
  Status Heartbeat() override;
  Status CloseSession() override;
  Result<std::vector<SessionInfo>> ListSessions() override;
  Result<int> CleanStaleSessions(int64_t stale_after_s) override;

  Result<StatFs> StatFS(const Context& ctx, Ino ino) override;
  Result<Entry> Lookup(const Context& ctx, Ino parent, std::string_view name) override;
  Result<Attr> GetAttr(Ino ino) override;
  Result<Attr> SetAttr(const Context& ctx, Ino ino, uint32_t mask, const Attr& in) override;
  Status Access(const Context& ctx, Ino ino, int mask) override;
  Result<Entry> Mknod(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                      uint32_t umask, uint64_t rdev) override;
  Result<Entry> Mkdir(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                      uint32_t umask) override;
  Result<Entry> Create(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                       uint32_t umask, int flags) override;
  Result<Entry> Symlink(const Context& ctx, Ino parent, std::string_view name,
                        std::string_view target) override;
  Result<std::string> ReadLink(Ino ino) override;
  Result<Entry> Link(const Context& ctx, Ino ino, Ino new_parent,
                     std::string_view new_name) override;
  Status Unlink(const Context& ctx, Ino parent, std::string_view name) override;
  Status Rmdir(const Context& ctx, Ino parent, std::string_view name) override;
  Status Rename(const Context& ctx, Ino parent, std::string_view name, Ino new_parent,
                std::string_view new_name, uint32_t flags) override;

  Status OpenDir(const Context& ctx, Ino ino) override;
  Result<std::vector<Entry>> ReadDir(const Context& ctx, Ino ino, std::string_view after,
                                     size_t limit, bool plus) override;

  Result<Attr> Open(const Context& ctx, Ino ino, int flags) override;
  Status Close(Ino ino) override;
  Result<std::vector<Slice>> Read(Ino ino, uint32_t chunk_index) override;
  Status Write(Ino ino, uint32_t chunk_index, uint32_t pos, const Slice& slice,
               int64_t mtime_ns) override;
  Status WriteSlices(Ino ino, const std::vector<SliceWrite>& writes) override;
  Status Truncate(const Context& ctx, Ino ino, uint64_t length) override;
  Status Fallocate(const Context& ctx, Ino ino, int mode, uint64_t offset,
                   uint64_t length) override;
  Result<uint64_t> NewSliceId() override;
  Status ReplaceSlices(Ino ino, uint32_t chunk_index, const std::vector<Slice>& expected,
                       const std::vector<Slice>& replacement) override;
  Status ListSlices(const std::function<Status(Ino, uint32_t, const Slice&)>& fn) override;
  Result<std::vector<SliceRef>> PendingSliceDeletes(size_t limit) override;
  Status ConfirmSliceDeletes(const std::vector<uint64_t>& ids) override;
  Result<int> CleanTrash(int64_t now_ns) override;
  Result<Summary> GetSummary(const Context& ctx, Ino ino) override;

  Result<std::string> GetXattr(const Context& ctx, Ino ino, std::string_view name) override;
  Status SetXattr(const Context& ctx, Ino ino, std::string_view name, std::string_view value,
                  int flags) override;
  Result<std::vector<std::string>> ListXattr(const Context& ctx, Ino ino) override;
  Status RemoveXattr(const Context& ctx, Ino ino, std::string_view name) override;

  Status Flock(const Context& ctx, Ino ino, uint64_t owner, uint32_t type, bool block) override;
  Status Getlk(const Context& ctx, Ino ino, uint64_t owner, LockRange* range) override;
  Status Setlk(const Context& ctx, Ino ino, uint64_t owner, bool block,
               const LockRange& range) override;

  Result<uint64_t> RemoveTree(const Context& ctx, Ino parent, std::string_view name) override;
  Result<Entry> CloneFile(const Context& ctx, Ino ino, Ino new_parent, std::string_view name) override;
  Status SetQuota(Ino ino, uint64_t max_space, uint64_t max_inodes) override;
  Result<Quota> GetQuota(Ino ino) override;
  Status DeleteQuota(Ino ino) override;
  Result<std::vector<Quota>> ListQuotas() override;
  Result<std::vector<std::string>> CheckQuotas(Ino ino, bool repair) override;
  Status CheckQuotaGrowth(Ino ino, uint64_t new_size) override;

  Status Sync() override;
  // The entry cache's state (kv_meta_cache.cc).
  struct Cache;
  void EnableCache(double check_interval_s) override;
  void DropCaches() override;
  TxnCounts Transactions() const override;
  Result<std::vector<std::string>> Check(const CheckOptions& options) override;
  Status Dump(std::ostream& out) override;
  Status Load(std::istream& in) override;

 private:
  // One backend transaction (kv_meta_cache.cc). Counts it, bumps the change
  // counters when it writes attributes or entries, and feeds the entry cache
  // with the attributes and entries it read and wrote. `cacheable` (read-only
  // bodies that only read attributes and entries: Lookup, GetAttr) first
  // tries the body against the cache, without a transaction.
  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only, bool cacheable = false);
  // GetAttr; cacheable = false reads the backend (Open).
  Result<Attr> ReadAttr(Ino ino, bool cacheable);
  // Whether the cache may answer now: reads the change counters when the
  // last read is check_interval old, clearing the cache if another client
  // changed something since.
  bool CacheFresh();
  std::optional<Status> CacheServe(const std::function<Status(KvTxn&)>& body);
  uint64_t CacheEpoch();
  Status Access(const Context& ctx, const Attr& a, int mask) const;
  // POSIX ACLs (kv_meta_xattr.cc): who may change them, setfacl (keeps the
  // mode in sync), chmod (keeps the access ACL in sync), and the inheritance
  // of a directory's default ACL on create (returns the new node's mode bits).
  Status AclOwner(const Context& ctx, const Attr& a) const;
  Status SetAclXattr(const Context& ctx, KvTxn& t, Ino ino, Attr& a, std::string_view name,
                     std::string_view value);
  void ChmodAcl(KvTxn& t, Ino ino, uint32_t mode);
  uint32_t InheritAcl(KvTxn& t, Ino parent, Ino ino, uint32_t type, uint32_t mode, uint32_t umask);
  bool InGroup(const Context& ctx, uint32_t gid) const;
  Status Sticky(const Context& ctx, const Attr& dir, const Attr& victim) const;
  Result<Ino> NextInode();
  int TrashDays();
  // ENOSPC when adding space/inodes would pass Format::capacity/inodes. Uses
  // counters cached for up to a second (limits are soft across clients).
  Status CheckSpace(int64_t space_delta, int64_t inode_delta);
  bool MarkSustainedIfOpen(Ino ino);  // IsOpen, and remembers it for Close
  Status CleanSession(uint64_t sid);
  Result<Entry> MakeNode(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                         uint32_t umask, uint64_t rdev, std::string_view symlink_target,
                         bool open_after);
  void TruncateInTxn(KvTxn& t, Ino ino, Attr* a, uint64_t length, int64_t now);
  void QueueSlices(KvTxn& t, std::string_view chunk_value);
  // A chunk lets go of slice `id`: one reference less when clones share it,
  // else queued for deletion.
  void ReleaseSlice(KvTxn& t, uint64_t id, uint32_t size);
  void FreeInode(KvTxn& t, Ino ino, const Attr& a);
  void ReleaseLink(KvTxn& t, AttrCache& as, Ino ino, Attr* a, Ino parent, std::string_view name,
                   const std::string& dent_value, int64_t now);
  // What Unlink and Rmdir start from, read through `as`: the directory
  // `parent` (which ctx must be allowed to write and search) and its entry
  // `name` (ENOENT when there is none). `attr` is null for an entry whose
  // inode is gone.
  struct EntryToRemove {
    Attr* parent = nullptr;
    std::string key, dent;
    uint32_t type = 0;
    Ino ino = 0;
    Attr* attr = nullptr;
  };
  Result<EntryToRemove> FindEntryToRemove(const Context& ctx, AttrCache& as, Ino parent,
                                          std::string_view name) const;
  struct CheckRun;  // one fsck pass (check_dump.cc)
  // RemoveTree's batch: unlinks the non-directory entries `names` of `dir` in
  // one transaction; returns how many were removed.
  Result<uint64_t> UnlinkBatch(const Context& ctx, Ino dir, const std::vector<std::string>& names);

  // The directories that have a quota, as this client last read them (at most
  // a second ago; at once after its own SetQuota/DeleteQuota). Read outside
  // any transaction, at the start of an operation: null when there is none,
  // so a volume without quotas pays nothing.
  std::shared_ptr<const std::set<Ino>> QuotaDirs();
  // Usage (directory tree) of everything below `dir`, from the tree.
  Result<Quota> ComputeQuotaUsage(Ino dir);

  std::mutex qdirs_mu_;
  std::shared_ptr<const std::set<Ino>> qdirs_;  // guarded by qdirs_mu_
  int64_t qdirs_read_ns_ = 0;                   // guarded by qdirs_mu_
  // CheckQuotaGrowth's view per file: when read, the committed size then and
  // the smallest space headroom of the quotas above it (-1: none applies).
  struct GrowthView {
    int64_t read_ns = 0;
    uint64_t size = 0;
    int64_t headroom = -1;
  };
  std::map<Ino, GrowthView> growth_;  // guarded by qdirs_mu_

  std::unique_ptr<TxnKV> kv_;
  std::unique_ptr<Cache> cache_;  // set once by EnableCache, before use
  std::atomic<uint64_t> n_read_{0}, n_write_{0}, n_cached_{0};

  std::mutex fmt_mu_;
  std::optional<Format> format_;  // guarded by fmt_mu_

  std::mutex id_mu_;
  Ino next_ino_ = 0, ino_end_ = 0;           // guarded by id_mu_
  uint64_t next_slice_ = 0, slice_end_ = 0;  // guarded by id_mu_

  std::mutex quota_mu_;
  int64_t quota_read_ns_ = 0, cached_used_ = 0, cached_inodes_ = 0;  // guarded by quota_mu_

  std::mutex open_mu_;
  std::map<Ino, int> open_;  // this client's open counts, guarded by open_mu_
  // Inodes that may hold a sustain key of this session (unlinked while open):
  // only their last Close needs a transaction. Guarded by open_mu_.
  std::set<Ino> maybe_sustained_;

  std::atomic<uint64_t> sid_{0};  // 0 until NewSession, again after CloseSession
  std::mutex session_mu_;
  SessionInfo session_;  // guarded by session_mu_
};

inline constexpr uint64_t kMaxFileSize = 1ull << 50;  // 1 PiB

inline bool IsDir(const Attr& a) { return S_ISDIR(a.mode); }
inline bool IsReg(const Attr& a) { return S_ISREG(a.mode); }

inline uint64_t SpaceOf(const Attr& a) {
  if (IsDir(a)) return 4096;
  if (!IsReg(a)) return 0;
  return (a.size + 4095) / 4096 * 4096;
}

inline Status CheckName(std::string_view name) {
  if (name.empty()) return FsError(ENOENT, "empty file name");
  if (name.size() > 255) return FsError(ENAMETOOLONG, "file name longer than 255 bytes");
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return FsError(EINVAL, "file name contains '/' or NUL");
  }
  return Status::Ok();
}

inline std::string Quote(std::string_view name) { return "\"" + std::string(name) + "\""; }

// Attributes loaded in one transaction: each inode is read once, modified in
// place (so an operation touching the same directory twice sees one copy) and
// written back by Flush.
class AttrCache {
 public:
  explicit AttrCache(KvTxn& t) : t_(t) {}
  Attr* Get(Ino ino) {
    auto it = m_.find(ino);
    if (it != m_.end()) return it->second ? &*it->second : nullptr;
    return Store(ino, t_.Get(codec::AttrKey(ino)));
  }
  // Loads inode `ino` and another key in one round trip; returns the other value.
  std::optional<std::string> GetWith(Ino ino, const std::string& other_key) {
    auto v = t_.MultiGet({codec::AttrKey(ino), other_key});
    if (!m_.count(ino)) Store(ino, v[0]);
    return v[1];
  }
  Attr* Store(Ino ino, const std::optional<std::string>& v) {
    std::optional<Attr> a;
    if (v) {
      Attr x;
      if (!codec::DecodeAttr(*v, &x)) {
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
      if (a) t_.Set(codec::AttrKey(ino), codec::EncodeAttr(*a));
    }
    dirty_.clear();
  }

 private:
  KvTxn& t_;
  std::map<Ino, std::optional<Attr>> m_;
  std::set<Ino> dirty_;
};

// Quota usage changes of one transaction: Charge adds a change below `dir` to
// every quota directory on the path from `dir` up to the root (walking parent
// pointers through `as`); Apply checks the net changes against the limits
// (EDQUOT) and stores the new usage. Changes that cancel out (a rename
// inside one quota tree) touch nothing. The trash is outside every quota.
class QuotaDeltas {
 public:
  QuotaDeltas(const std::set<Ino>* dirs, AttrCache& as) : dirs_(dirs), as_(as) {}
  bool active() const { return dirs_ && !dirs_->empty(); }
  void Charge(Ino dir, int64_t space, int64_t inodes);
  // The quota directories `dir` is below or is (for a rename's EXDEV rule).
  std::set<Ino> QuotasOf(Ino dir);
  // Entry `ino` (attributes `a`) moves from directory `from` to `to`. A
  // directory with content moving between different quota trees is EXDEV
  // unless it has a quota itself (its record holds its usage).
  Status Move(KvTxn& t, Ino ino, const Attr& a, Ino from, Ino to);
  Status Apply(KvTxn& t);

 private:
  const std::set<Ino>* dirs_;
  AttrCache& as_;
  std::map<Ino, std::pair<int64_t, int64_t>> d_;
};

// The directory `dir`, read through `as`: ENOENT if it does not exist,
// ENOTDIR if it is not a directory.
inline Result<Attr*> ExistingDir(AttrCache& as, Ino dir) {
  Attr* p = as.Get(dir);
  if (!p) return FsError(ENOENT, "directory inode " + std::to_string(dir) + " does not exist");
  if (!IsDir(*p)) return FsError(ENOTDIR, "inode " + std::to_string(dir) + " is not a directory");
  return p;
}

}  // namespace strata::fsmeta
