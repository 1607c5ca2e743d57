// KvMeta: MetaEngine over a TxnKV (private; see include/strata/fsmeta/meta_engine.h).
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>

#include <strata/fsmeta/meta_engine.h>

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
  Result<Entry> Link(const Context& ctx, Ino ino, Ino new_parent, std::string_view new_name) override;
  Status Unlink(const Context& ctx, Ino parent, std::string_view name) override;
  Status Rmdir(const Context& ctx, Ino parent, std::string_view name) override;
  Status Rename(const Context& ctx, Ino parent, std::string_view name, Ino new_parent,
                std::string_view new_name, uint32_t flags) override;

  Status OpenDir(const Context& ctx, Ino ino) override;
  Result<std::vector<Entry>> ReadDir(const Context& ctx, Ino ino, std::string_view after, size_t limit,
                                     bool plus) override;

  Result<Attr> Open(const Context& ctx, Ino ino, int flags) override;
  Status Close(Ino ino) override;
  Result<std::vector<Slice>> Read(Ino ino, uint32_t chunk_index) override;
  Status Write(Ino ino, uint32_t chunk_index, uint32_t pos, const Slice& slice, int64_t mtime_ns) override;
  Status Truncate(const Context& ctx, Ino ino, uint64_t length) override;
  Status Fallocate(const Context& ctx, Ino ino, int mode, uint64_t offset, uint64_t length) override;
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
  Status Setlk(const Context& ctx, Ino ino, uint64_t owner, bool block, const LockRange& range) override;

  Status Sync() override;
  Result<std::vector<std::string>> Check(const CheckOptions& options) override;
  Status Dump(std::ostream& out) override;
  Status Load(std::istream& in) override;

 private:
  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only);
  Status Access(const Context& ctx, const Attr& a, int mask) const;
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
                         uint32_t umask, uint64_t rdev, std::string_view symlink_target, bool open_after);
  void TruncateInTxn(KvTxn& t, Ino ino, Attr* a, uint64_t length, int64_t now);
  void QueueSlices(KvTxn& t, std::string_view chunk_value);
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

  std::unique_ptr<TxnKV> kv_;

  std::mutex fmt_mu_;
  std::optional<Format> format_;  // guarded by fmt_mu_

  std::mutex id_mu_;
  Ino next_ino_ = 0, ino_end_ = 0;            // guarded by id_mu_
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

}  // namespace strata::fsmeta
