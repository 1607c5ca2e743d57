// TxnKV: the small transactional key-value layer under the metadata engine.
//
// Keys are binary strings ordered by bytes. The engine (KvMeta, kv_meta*.cc) holds
// all filesystem logic; a backend only provides transactions:
//   - SQLite: one `kv` table, BEGIN IMMEDIATE, WAL; writes apply at once and
//     are rolled back when the transaction body fails.
//   - Redis: optimistic (WATCH every key read, buffer writes, MULTI/EXEC,
//     retry the whole body on conflict). Range scans go through one sorted-set
//     index per "group" (see GroupOf), so a scan costs one page.
//   - PostgreSQL: one `strata_kv` table, SERIALIZABLE transactions; a
//     serialization failure runs the body again (like a Redis conflict).
//
// Inside a transaction body, backend failures are thrown as KvError and turned
// into a Status by Txn(); filesystem errors are returned as a Status, which
// aborts the transaction (nothing is written). The body may run several times
// (Redis conflicts), so it must not have side effects outside the txn.
//
// Blind updates (Append, IncrBy) are applied at commit without making the
// transaction depend on the key's value; a Get in the same body does not see
// them (on Redis).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata::fsmeta {

struct KvError : std::runtime_error {
  explicit KvError(Status s) : std::runtime_error(s.ToString()), status(std::move(s)) {}
  Status status;
};

class KvTxn {
 public:
  using ScanFn = std::function<bool(const std::string& key, const std::string& value)>;
  virtual ~KvTxn() = default;
  virtual std::optional<std::string> Get(const std::string& key) = 0;
  virtual std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) = 0;
  virtual void Set(const std::string& key, const std::string& value) = 0;
  virtual void Delete(const std::string& key) = 0;
  virtual void Append(const std::string& key, const std::string& value) = 0;
  virtual void IncrBy(const std::string& key, int64_t delta) = 0;
  // Keys starting with `prefix` and greater than `after` ("" = all), in order,
  // at most `limit` (0 = no limit); fn returns false to stop. On Redis the
  // prefix must be at least a whole group (GroupOf).
  virtual void Scan(const std::string& prefix, const std::string& after, size_t limit,
                    bool keys_only, const ScanFn& fn) = 0;
};

class TxnKV {
 public:
  virtual ~TxnKV() = default;
  virtual std::string_view Name() const = 0;
  virtual Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only) = 0;
  // Atomically adds delta to a counter (decimal text) and returns the new value.
  virtual Result<int64_t> Incr(const std::string& key, int64_t delta) = 0;
  // Every key with the prefix, in key order, not transactional (fsck, dump,
  // sessions, queues); fn returns false to stop.
  virtual Status ScanAll(const std::string& prefix, const KvTxn::ScanFn& fn) = 0;
  // Removes every key of the volume.
  virtual Status DeleteAll() = 0;
  // Makes committed transactions durable against power loss.
  virtual Status Sync() { return Status::Ok(); }
  // Commits of write transactions so far, where the backend groups several
  // transactions into one commit; 0 where it does not count them.
  virtual uint64_t Commits() const { return 0; }
};

// Scan groups: keys whose first byte is one of these letters are indexed by
// their first 9 bytes (type + big-endian inode or session), the rest being the
// member inside the group.
bool IsGroupedType(char type);
inline constexpr size_t kGroupLen = 9;

Result<std::unique_ptr<TxnKV>> OpenSqliteKV(const std::string& path);
Result<std::unique_ptr<TxnKV>> OpenRedisKV(std::string_view url);
// postgres://[user[:password]@]host[:port]/db[?param=value...] (or
// postgresql://), any libpq connection URI.
Result<std::unique_ptr<TxnKV>> OpenPostgresKV(std::string_view url);

}  // namespace strata::fsmeta
