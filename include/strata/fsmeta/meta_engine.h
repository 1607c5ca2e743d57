// MetaEngine: the metadata of a Strata FS volume (inodes, directory entries,
// chunk slice lists, xattrs, sessions, open files, locks, trash).
//
// One engine implements every operation over a small transactional key-value
// layer (src/fsmeta/kv.h); backends are SQLite (`sqlite3://PATH`, one machine)
// and Redis (`redis://HOST:PORT/DB`, many mounts of one volume). Every
// operation is one transaction: it commits completely or not at all, so a
// crash (kill -9) never leaves half an operation behind, and two clients on
// the same Redis see each other's committed changes at once (close-to-open).
//
// Data layout (DESIGN.md): a file is cut into chunks of kChunkSize bytes; each
// chunk holds an ordered list of slices, later slices overriding earlier ones
// (JuiceFS semantics). Slice ids name objects in the data store; the engine
// never touches object data. Slices no longer referenced (file freed, trash
// expired, chunk compacted) are queued; the data layer fetches them with
// PendingSliceDeletes, removes the objects and confirms with
// ConfirmSliceDeletes.
//
// Errors: POSIX errors are a Status built by FsError(errno, message);
// ErrnoOf(status) gives the errno back (0 for OK; a best mapping from the
// status code for any other error, e.g. EIO).
//
// Permission checks (owner/group/other bits, sticky directories, root bypass)
// happen inside the engine using Context, unless ctx.check_permission is false.
//
// Thread-safety: all methods may be called concurrently from many threads; the
// engine serialises nothing beyond what the backend transaction requires.
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata::fsmeta {

using Ino = uint64_t;
inline constexpr Ino kRootIno = 1;
// The trash directory (deleted files kept Format::trash_days days), looked up as
// ".trash" in the root directory; not shown by ReadDir of the root.
inline constexpr Ino kTrashIno = 0x7FFFFFFF10000000ull;
inline constexpr uint64_t kChunkSize = 64ull << 20;

// A POSIX error as a Status: the message is prefixed by the errno's name
// ("ENOENT: ..."), the code is the closest StatusCode (ENOENT -> kNotFound...).
Status FsError(int errno_value, std::string_view message);
// The errno a Status carries: 0 for OK, the errno of an FsError, else a mapping
// from the code (kNotFound -> ENOENT, kAlreadyExists -> EEXIST,
// kPermissionDenied -> EACCES, kInvalidArgument -> EINVAL, kConflict -> EAGAIN,
// kNotSupported -> ENOTSUP, kResourceExhausted -> ENOSPC, others -> EIO).
int ErrnoOf(const Status& status);

struct Attr {
  uint32_t mode = 0;  // S_IFMT type bits | permission bits (incl. suid/sgid/sticky)
  uint32_t uid = 0, gid = 0, nlink = 0;
  uint64_t size = 0, rdev = 0;
  int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
  Ino parent = 0;  // for directories and singly linked files; 0 when ambiguous (hard links)
};

// A slice of a chunk, JuiceFS semantics: bytes [pos, pos+len) of the chunk come
// from object-slice `id` (whose whole length is `size`) starting at offset `off`
// inside it. id == 0 means a hole (zeros). Later slices in the list override
// earlier ones.
struct Slice {
  uint64_t id = 0;
  uint32_t size = 0, off = 0, len = 0, pos = 0;
};
bool operator==(const Slice& a, const Slice& b);

// A slice object the data layer may delete (no chunk references it any more).
struct SliceRef {
  uint64_t id = 0;
  uint32_t size = 0;
};

struct Context {
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> gids;  // supplementary groups
  uint32_t pid = 0;
  bool check_permission = true;
  // The request comes through a descriptor opened for writing (ftruncate,
  // fallocate, and the kernel's writeback cache writing back the times of
  // the descriptor's writes): its open checked write access, so SetAttr's
  // size change and time updates and Fallocate do not check the mode or the
  // owner again. POSIX keeps that access for the descriptor's life, even
  // when the file was created with mode 0 or chmodded since. chmod and
  // chown are not exempted (FUSE never sends them with a handle, nor
  // utimensat).
  bool write_handle = false;
  // The request comes through a FUSE mount whose kernel enforces POSIX ACLs
  // (FUSE_CAP_POSIX_ACL, default_permissions): Access leaves the checks the
  // ACL may decide (everyone but the owner) to the kernel.
  bool kernel_checked_acl = false;
};

struct Entry {
  std::string name;
  Ino ino = 0;
  Attr attr;
};

struct Format {
  std::string name, uuid, storage;  // storage: the object store URL
  uint32_t block_size = 4 << 20;
  std::string compress = "none";  // none | lz4 | zstd
  int trash_days = 1;             // 0: deleted files are released at once
  uint64_t capacity = 0;          // bytes reported by StatFS; 0 = 1 PiB
  uint64_t inodes = 0;            // inode limit; 0 = unlimited
  int meta_version = 1;
  // Encryption at rest (fs/encryption.h): "" (none) or "aes-256-gcm"; the
  // PBKDF2 salt (hex; "" when the key file holds a raw 32-byte key) and a
  // check value that tells a wrong key from the right one. Never the key.
  std::string encrypt, encrypt_salt, encrypt_check;
};

struct StatFs {
  uint64_t total_space = 0, avail_space = 0, used_space = 0;
  uint64_t used_inodes = 0, avail_inodes = 0;
};

// SetAttr mask bits.
inline constexpr uint32_t kSetMode = 1u << 0;
inline constexpr uint32_t kSetUid = 1u << 1;
inline constexpr uint32_t kSetGid = 1u << 2;
inline constexpr uint32_t kSetSize = 1u << 3;
inline constexpr uint32_t kSetAtime = 1u << 4;     // to attr.atime_ns
inline constexpr uint32_t kSetMtime = 1u << 5;     // to attr.mtime_ns
inline constexpr uint32_t kSetAtimeNow = 1u << 6;
inline constexpr uint32_t kSetMtimeNow = 1u << 7;
// With kSetAtimeNow and no permission check: the access-time update a read
// makes (relatime), which leaves ctime alone.
inline constexpr uint32_t kSetKeepCtime = 1u << 8;

// Rename flags (same values as Linux's RENAME_NOREPLACE / RENAME_EXCHANGE).
inline constexpr uint32_t kRenameNoReplace = 1u << 0;
inline constexpr uint32_t kRenameExchange = 1u << 1;

// Fallocate modes (same values as Linux's FALLOC_FL_*).
inline constexpr int kFallocKeepSize = 0x01;
inline constexpr int kFallocPunchHole = 0x02;
inline constexpr int kFallocZeroRange = 0x10;

// Xattr flags (same values as XATTR_CREATE / XATTR_REPLACE).
inline constexpr int kXattrCreate = 1;
inline constexpr int kXattrReplace = 2;

// Lock types: F_RDLCK / F_WRLCK / F_UNLCK values from <fcntl.h>.
struct LockRange {
  uint32_t type = 0;             // F_RDLCK, F_WRLCK, F_UNLCK
  uint64_t start = 0, end = 0;   // inclusive byte range; end = UINT64_MAX: to EOF
  uint32_t pid = 0;
};

struct SessionInfo {
  uint64_t sid = 0;
  std::string host, mount_point, version;
  uint32_t pid = 0;
  int64_t heartbeat_ns = 0;  // last heartbeat (wall clock)
};

struct Summary {
  uint64_t files = 0, dirs = 0, length = 0, size = 0;  // size: 4 KiB-rounded space
};

struct CheckOptions {
  bool repair = false;
};

// A directory quota (JuiceFS `quota` semantics): limits on the space
// (4 KiB-rounded, as Summary::size) and the number of inodes of everything
// below directory `ino` (the directory itself not counted). 0 = no limit.
// Usage is kept in the metadata engine, updated in the same transaction as
// each change; a change that would pass a limit fails with EDQUOT.
struct Quota {
  Ino ino = 0;
  uint64_t max_space = 0, max_inodes = 0;
  int64_t used_space = 0, used_inodes = 0;
};

class MetaEngine {
 public:
  virtual ~MetaEngine() = default;

  // "sqlite3" or "redis".
  virtual std::string_view Backend() const = 0;

  // ---- volume ----
  // Formats an empty volume (root dir, trash dir, counters). On an already
  // formatted volume: updates the format when force, else kAlreadyExists
  // unless the name matches (then it only updates trash_days/capacity).
  virtual Status Init(const Format& format, bool force) = 0;
  virtual Result<Format> LoadFormat() = 0;
  // Removes every key of the volume (after this, Init can format it anew).
  virtual Status Destroy() = 0;

  // ---- sessions ----
  // Registers this client; returns its session id. Open files and locks are
  // owned by the session. Heartbeat every few seconds; sessions whose
  // heartbeat is older than `stale_after_s` are cleaned by CleanStaleSessions
  // (their sustained inodes released, their locks dropped).
  virtual Result<uint64_t> NewSession(const SessionInfo& info) = 0;
  virtual uint64_t SessionId() const = 0;
  virtual Status Heartbeat() = 0;
  virtual Status CloseSession() = 0;  // releases this session's open files and locks
  virtual Result<std::vector<SessionInfo>> ListSessions() = 0;
  // Returns how many stale sessions were cleaned.
  virtual Result<int> CleanStaleSessions(int64_t stale_after_s) = 0;

  // ---- attributes and names ----
  virtual Result<StatFs> StatFS(const Context& ctx, Ino ino) = 0;
  // "." and ".." are resolved too.
  virtual Result<Entry> Lookup(const Context& ctx, Ino parent, std::string_view name) = 0;
  virtual Result<Attr> GetAttr(Ino ino) = 0;
  // Applies the fields of `in` selected by `mask`; returns the new attr.
  // kSetSize truncates (or extends with a hole).
  virtual Result<Attr> SetAttr(const Context& ctx, Ino ino, uint32_t mask, const Attr& in) = 0;
  // mask: R_OK | W_OK | X_OK bits (F_OK = 0 checks existence).
  virtual Status Access(const Context& ctx, Ino ino, int mask) = 0;

  // mode carries the S_IFMT type (S_IFREG, S_IFDIR, S_IFLNK via Symlink,
  // S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK) and the permission bits, before umask.
  virtual Result<Entry> Mknod(const Context& ctx, Ino parent, std::string_view name,
                              uint32_t mode, uint32_t umask, uint64_t rdev) = 0;
  virtual Result<Entry> Mkdir(const Context& ctx, Ino parent, std::string_view name,
                              uint32_t mode, uint32_t umask) = 0;
  // Mknod(S_IFREG) + Open(flags) in one step; EEXIST if the name exists.
  virtual Result<Entry> Create(const Context& ctx, Ino parent, std::string_view name,
                               uint32_t mode, uint32_t umask, int flags) = 0;
  virtual Result<Entry> Symlink(const Context& ctx, Ino parent, std::string_view name,
                                std::string_view target) = 0;
  virtual Result<std::string> ReadLink(Ino ino) = 0;
  virtual Result<Entry> Link(const Context& ctx, Ino ino, Ino new_parent,
                             std::string_view new_name) = 0;
  virtual Status Unlink(const Context& ctx, Ino parent, std::string_view name) = 0;
  virtual Status Rmdir(const Context& ctx, Ino parent, std::string_view name) = 0;
  // flags: 0, kRenameNoReplace or kRenameExchange. Replaces an existing target
  // atomically (a directory only by an empty directory).
  virtual Status Rename(const Context& ctx, Ino parent, std::string_view name, Ino new_parent,
                        std::string_view new_name, uint32_t flags) = 0;

  // ---- directories ----
  // Checks the directory can be listed (ENOTDIR, EACCES).
  virtual Status OpenDir(const Context& ctx, Ino ino) = 0;
  // Up to `limit` entries of directory `ino` with names strictly greater than
  // `after` (byte order), sorted by name; "" starts at the beginning. "." and
  // ".." are not included. An empty result means the end. `plus` fills
  // Entry::attr (otherwise only the type bits of attr.mode are set). Costs one
  // page, whatever the directory size.
  virtual Result<std::vector<Entry>> ReadDir(const Context& ctx, Ino ino, std::string_view after,
                                             size_t limit, bool plus) = 0;

  // ---- files ----
  // Checks access for flags (O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC) and records the
  // open in this session, so an unlinked file lives until its last Close.
  // Returns the attributes (O_TRUNC is not applied here: use SetAttr kSetSize).
  virtual Result<Attr> Open(const Context& ctx, Ino ino, int flags) = 0;
  virtual Status Close(Ino ino) = 0;
  // The slice list of chunk `chunk_index` (empty for a chunk never written).
  virtual Result<std::vector<Slice>> Read(Ino ino, uint32_t chunk_index) = 0;
  // Appends `slice` to the chunk at position pos (slice.pos is set to pos),
  // grows the file length to cover it and sets mtime/ctime to mtime_ns.
  virtual Status Write(Ino ino, uint32_t chunk_index, uint32_t pos, const Slice& slice,
                       int64_t mtime_ns) = 0;
  // Several Writes of one file in one transaction, applied in order: all of
  // them or none. The default runs them one by one.
  struct SliceWrite {
    uint32_t chunk_index = 0;
    uint32_t pos = 0;
    Slice slice;
    int64_t mtime_ns = 0;
  };
  virtual Status WriteSlices(Ino ino, const std::vector<SliceWrite>& writes) {
    for (const SliceWrite& w : writes) {
      Status st = Write(ino, w.chunk_index, w.pos, w.slice, w.mtime_ns);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  virtual Status Truncate(const Context& ctx, Ino ino, uint64_t length) = 0;
  // mode: 0 (allocate: extends the length), kFallocKeepSize, kFallocPunchHole |
  // kFallocKeepSize, kFallocZeroRange [| kFallocKeepSize]. Holes are id-0 slices.
  virtual Status Fallocate(const Context& ctx, Ino ino, int mode, uint64_t offset,
                           uint64_t length) = 0;
  // A fresh slice id (ids are allocated from the backend in batches).
  virtual Result<uint64_t> NewSliceId() = 0;
  // Compaction: replaces the chunk's slice list by `replacement` if the list is
  // still exactly `expected` (else kConflict / EAGAIN). The replaced slices are
  // queued for deletion.
  virtual Status ReplaceSlices(Ino ino, uint32_t chunk_index, const std::vector<Slice>& expected,
                               const std::vector<Slice>& replacement) = 0;
  // Every slice id referenced by a chunk (for gc of orphan objects), calling
  // `fn` once per slice; stops at the first error fn returns.
  virtual Status ListSlices(const std::function<Status(Ino, uint32_t, const Slice&)>& fn) = 0;
  // Slices no chunk references any more; the data layer deletes their objects
  // and confirms.
  virtual Result<std::vector<SliceRef>> PendingSliceDeletes(size_t limit) = 0;
  virtual Status ConfirmSliceDeletes(const std::vector<uint64_t>& ids) = 0;
  // Releases trash entries older than trash_days (now_ns = wall clock), and
  // files unlinked while open whose session is gone. Returns how many inodes
  // were released.
  virtual Result<int> CleanTrash(int64_t now_ns) = 0;
  virtual Result<Summary> GetSummary(const Context& ctx, Ino ino) = 0;

  // ---- xattrs ----
  virtual Result<std::string> GetXattr(const Context& ctx, Ino ino, std::string_view name) = 0;
  // flags: 0, kXattrCreate, kXattrReplace.
  virtual Status SetXattr(const Context& ctx, Ino ino, std::string_view name,
                          std::string_view value, int flags) = 0;
  virtual Result<std::vector<std::string>> ListXattr(const Context& ctx, Ino ino) = 0;
  virtual Status RemoveXattr(const Context& ctx, Ino ino, std::string_view name) = 0;

  // ---- locks (visible to every client of the volume) ----
  // BSD flock: type F_RDLCK / F_WRLCK / F_UNLCK; owner identifies the open file
  // description within this session. block: waits (polling) until granted;
  // otherwise EAGAIN on conflict.
  virtual Status Flock(const Context& ctx, Ino ino, uint64_t owner, uint32_t type, bool block) = 0;
  // POSIX record locks. Getlk: on conflict, `range` is set to the conflicting
  // lock (with its pid), else range.type = F_UNLCK.
  virtual Status Getlk(const Context& ctx, Ino ino, uint64_t owner, LockRange* range) = 0;
  virtual Status Setlk(const Context& ctx, Ino ino, uint64_t owner, bool block,
                       const LockRange& range) = 0;

  // Makes every transaction committed so far durable against power loss
  // (SQLite with sync=normal: one fsynced commit, which covers all before; a no-op
  // where each commit is already durable, and for Redis, whose durability is
  // the server's appendfsync setting). Call it from fsync.
  virtual Status Sync() { return Status::Ok(); }

  // ---- directory quotas (kv_meta_quota.cc) ----
  // Sets the limits of directory `ino`'s quota, creating it (its usage then
  // computed from the tree) or changing an existing one (usage kept).
  // Other clients enforce a new quota within about a second.
  virtual Status SetQuota(Ino ino, uint64_t max_space, uint64_t max_inodes) {
    (void)ino, (void)max_space, (void)max_inodes;
    return FsError(ENOTSUP, "directory quotas are not supported by this engine");
  }
  // ENOENT when `ino` has no quota.
  virtual Result<Quota> GetQuota(Ino ino) {
    (void)ino;
    return FsError(ENOTSUP, "directory quotas are not supported by this engine");
  }
  virtual Status DeleteQuota(Ino ino) {
    (void)ino;
    return FsError(ENOTSUP, "directory quotas are not supported by this engine");
  }
  virtual Result<std::vector<Quota>> ListQuotas() {
    return FsError(ENOTSUP, "directory quotas are not supported by this engine");
  }
  // Early EDQUOT for a write that grows file `ino` to `new_size` bytes (the
  // mount asks before buffering it): checks the growth beyond the committed
  // size against the quotas above the file, from a view at most a second
  // old. The commit of the data checks exactly; this only lets write()
  // fail instead of the later close(). OK when no quota applies.
  virtual Status CheckQuotaGrowth(Ino ino, uint64_t new_size) {
    (void)ino, (void)new_size;
    return Status::Ok();
  }
  // Recomputes the usage of the quota on `ino` (0: every quota) from the tree;
  // one line per quota whose stored usage differs; with repair, stores the
  // recomputed usage.
  virtual Result<std::vector<std::string>> CheckQuotas(Ino ino, bool repair) {
    (void)ino, (void)repair;
    return FsError(ENOTSUP, "directory quotas are not supported by this engine");
  }

  // ---- trees (kv_meta_tree.cc) ----
  // Removes entry `name` of `parent` and, for a directory, everything below
  // it (`rm -rf` in the engine: the files of a directory in batches of one
  // transaction each, deepest directories first). Files go to the trash or
  // are freed as by Unlink; quotas are charged. Stops at the first error
  // (what was removed stays removed). Returns how many entries were removed.
  virtual Result<uint64_t> RemoveTree(const Context& ctx, Ino parent, std::string_view name) {
    (void)ctx, (void)parent, (void)name;
    return FsError(ENOTSUP, "recursive removal is not supported by this engine");
  }

  // Clone (`strata fs clone`): a new file `name` in `new_parent` with the
  // contents of regular file or symlink `ino` as committed now, sharing its
  // slices (copy-on-write: slices are immutable, later writes to either file
  // add new slices); a slice's objects are deleted only when no clone refers
  // to them. Mode and xattrs are copied, the owner is ctx's, times are now.
  virtual Result<Entry> CloneFile(const Context& ctx, Ino ino, Ino new_parent, std::string_view name) {
    (void)ctx, (void)ino, (void)new_parent, (void)name;
    return FsError(ENOTSUP, "clone is not supported by this engine");
  }

  // ---- this client's entry cache and transaction counts (kv_meta_cache.cc) ----
  // Serves Lookup and GetAttr from what this client last read or wrote
  // (names -> inode, attributes, names known absent, and directories it
  // created and so knows completely) instead of a transaction each. Every
  // write transaction of every client bumps a volume change counter and one
  // of its own session; a cached answer is given only while the counters,
  // read at most `check_interval_s` ago (one read), show no change by
  // another client since the cache was filled: another mount's changes show
  // within check_interval_s (plus the kernel's own entry/attribute cache),
  // this client's at once. Open, ReadDir and every write always read the
  // engine. 0 turns the cache off (the default).
  virtual void EnableCache(double check_interval_s) { (void)check_interval_s; }
  // Forgets everything cached (e.g. after answering ESTALE: the next lookup
  // reads the engine).
  virtual void DropCaches() {}
  struct TxnCounts {
    uint64_t read = 0, write = 0;  // backend transactions this engine ran
    uint64_t cached = 0;           // Lookup/GetAttr answered from the cache
    // Backend commits of write transactions: fewer than `write` where the
    // backend commits concurrent transactions as a group (SQLite), equal to
    // it otherwise.
    uint64_t commits = 0;
  };
  virtual TxnCounts Transactions() const { return {}; }

  // ---- maintenance ----
  // fsck: nlink counts, dangling entries, orphan inodes, directory parents,
  // chunk/slice sanity, file lengths vs. slices. Returns one line per problem
  // found; with repair, fixes what it can (the returned lines say what).
  virtual Result<std::vector<std::string>> Check(const CheckOptions& options) = 0;
  // The whole volume's metadata as one JSON document / restored into an
  // unformatted volume.
  virtual Status Dump(std::ostream& out) = 0;
  virtual Status Load(std::istream& in) = 0;
};

// Opens `sqlite3://PATH` (the file is created) or `redis://HOST:PORT/DB`
// (optionally `redis://:PASSWORD@HOST:PORT/DB`).
Result<std::unique_ptr<MetaEngine>> OpenMeta(std::string_view url);

}  // namespace strata::fsmeta
