// Online store backends: RocksDB (embedded) and Redis (core's client:
// pipelined commands, one round trip per read).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <strata/core/coding.h>
#include <strata/core/log.h>
#include <strata/core/redis.h>
#include <strata/features/online.h>
#include <strata/objstore/rocksdb_env.h>

#include "features/redis_connection.h"

namespace strata::features {

namespace {

constexpr log::Logger kLog("features");

int64_t RowTs(std::string_view row) {
  return row.size() >= 8 ? static_cast<int64_t>(DecodeFixed64(row.data())) : INT64_MIN;
}

// RocksDB stops taking writes after a failed write or sync of its files (a
// full disk, a failing device) rather than retrying it; reads go on. The next
// write (a materialize retried once the disk recovers) reopens the database,
// which recovers from what its log holds; reads wait only for that swap.
class RocksDbOnlineStore final : public OnlineStore {
 public:
  RocksDbOnlineStore(std::unique_ptr<rocksdb::DB> db, std::string path, rocksdb::Options options,
                     std::string project)
      : db_(std::move(db)),
        path_(std::move(path)),
        options_(std::move(options)),
        prefix_(std::move(project) + '\0') {}
  std::string name() const override { return "rocksdb"; }

  std::string Key(const std::string& ek, const std::string& view) const {
    uint64_t h = 1469598103934665603ULL;
    for (char c : prefix_) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    for (char c : ek) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    std::string k;
    k.reserve(8 + prefix_.size() + 4 + ek.size() + view.size());
    PutBigEndian64(&k, h);
    k += prefix_;
    PutFixed32(&k, static_cast<uint32_t>(ek.size()));
    k += ek;
    k += view;
    return k;
  }

  Status Write(const std::string& view, const std::vector<std::pair<std::string, std::string>>& in) override {
    // Sorted keys: the memtable's skiplist reuses its splice between neighbours.
    std::vector<std::pair<std::string, const std::string*>> sorted;
    sorted.reserve(in.size());
    for (const auto& [ek, row] : in) sorted.emplace_back(Key(ek, view), &row);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> keys;
    std::vector<std::pair<std::string, std::string>> rows;
    keys.reserve(sorted.size());
    rows.reserve(sorted.size());
    for (auto& [k, row] : sorted) {
      keys.push_back(std::move(k));
      rows.emplace_back(std::string(), *row);
    }
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    // Check-then-write must not interleave with another writer of the same keys.
    std::lock_guard<std::mutex> l(write_mu_);
    STRATA_RETURN_IF_ERROR(ReopenIfStoppedLocked());
    std::shared_lock<std::shared_mutex> d(db_mu_);
    std::vector<std::string> old(keys.size());
    std::vector<rocksdb::Status> sts = db_->MultiGet(rocksdb::ReadOptions(), slices, &old);
    rocksdb::WriteBatch batch;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (sts[i].ok() && RowTs(old[i]) > RowTs(rows[i].second)) continue;  // keep the newer row
      if (!sts[i].ok() && !sts[i].IsNotFound()) {
        return Status::IOError(fmt::format("online store read: {}", sts[i].ToString()));
      }
      batch.Put(keys[i], rows[i].second);
    }
    return FailedWrite(db_->Write(rocksdb::WriteOptions(), &batch), "write");
  }

  // Reads from the memtable walk a skiplist (a few cache misses per level);
  // flushed files answer through bloom filters and hash-indexed blocks.
  Status FinishBulkLoad() override {
    std::lock_guard<std::mutex> l(write_mu_);
    STRATA_RETURN_IF_ERROR(ReopenIfStoppedLocked());
    std::shared_lock<std::shared_mutex> d(db_mu_);
    rocksdb::FlushOptions fo;
    fo.wait = true;
    STRATA_RETURN_IF_ERROR(FailedWrite(db_->Flush(fo), "flush"));
    // Several overlapping L0 files (a bulk load spills many memtables): every
    // lookup would probe each one. Compacting them into one sorted run costs
    // one rewrite of the store, paid at materialization instead of per read.
    uint64_t l0 = 0;
    if (db_->GetIntProperty("rocksdb.num-files-at-level0", &l0) && l0 >= 2) {
      STRATA_RETURN_IF_ERROR(FailedWrite(
          db_->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr), "compaction"));
    }
    return Status::Ok();
  }

  Result<std::vector<std::optional<std::string>>> Read(
      const std::vector<std::pair<std::string, std::string>>& pairs) override {
    std::vector<std::string> keys;
    keys.reserve(pairs.size());
    for (const auto& [ek, view] : pairs) keys.push_back(Key(ek, view));
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    // The batched MultiGet (one pass per file, bloom probes batched); the
    // vector<string> overload is a loop of Gets.
    std::vector<rocksdb::PinnableSlice> vals(keys.size());
    std::vector<rocksdb::Status> sts(keys.size());
    std::shared_lock<std::shared_mutex> d(db_mu_);
    if (!db_)
      return Status::IOError(fmt::format(
          "the online store at {} is not open (a reopen after a failed write failed)", path_));
    db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), keys.size(), slices.data(), vals.data(),
                  sts.data());
    std::vector<std::optional<std::string>> out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (sts[i].ok()) {
        out[i].emplace(vals[i].data(), vals[i].size());
      } else if (!sts[i].IsNotFound()) {
        return Status::IOError(fmt::format("online store read: {}", sts[i].ToString()));
      }
    }
    return out;
  }

 private:
  // write_mu_ held, db_mu_ shared: a failed write as a Status; the next write reopens.
  Status FailedWrite(const rocksdb::Status& s, std::string_view what) {
    if (s.ok()) return Status::Ok();
    stopped_ = true;
    std::string msg = fmt::format(
        "online store at {}: {} failed: {}; values materialized before are still served, run the "
        "materialization again once the disk is healthy",
        path_, what, s.ToString());
    if (s.IsNoSpace()) return Status::ResourceExhausted(msg + " (free space on its filesystem)");
    return Status::IOError(std::move(msg));
  }

  // write_mu_ held: reopens the database after a failed write.
  Status ReopenIfStoppedLocked() {
    if (!stopped_) return Status::Ok();
    std::unique_lock<std::shared_mutex> d(db_mu_);
    rocksdb::Status closed = db_->Close();
    if (!closed.ok())
      kLog.Warn("closing the stopped online store {}: {}", path_, closed.ToString());
    db_.reset();
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options_, path_, &raw);
    if (!s.ok()) {
      // Keep a handle for reads: open it read-only over what is there.
      rocksdb::DB* ro = nullptr;
      if (rocksdb::DB::OpenForReadOnly(options_, path_, &ro).ok()) db_.reset(ro);
      if (!db_)
        return Status::IOError(
            fmt::format("cannot reopen the online store at {}: {}", path_, s.ToString()));
      return Status::IOError(
          fmt::format("the online store at {} stopped after a failed write and cannot be reopened "
                      "for writing: {}",
                      path_, s.ToString()));
    }
    db_.reset(raw);
    stopped_ = false;
    kLog.Info("reopened the online store at {} after a failed write", path_);
    return Status::Ok();
  }

  mutable std::shared_mutex db_mu_;  // swapping db_ (exclusive) vs using it (shared)
  std::unique_ptr<rocksdb::DB> db_;  // guarded by db_mu_
  const std::string path_;
  const rocksdb::Options options_;
  std::string prefix_;
  std::mutex write_mu_;
  bool stopped_ = false;  // a write failed: reopen before the next; guarded by write_mu_
};

class RedisOnlineStore final : public OnlineStore {
 public:
  RedisOnlineStore(redis::Endpoint endpoint, std::string project)
      : pool_(std::move(endpoint)), project_(std::move(project)) {}
  std::string name() const override { return "redis"; }

  Status Ping() {
    STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
    STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->Command(std::vector<std::string_view>{"PING"}));
    if (r.is_error()) return Status::Unavailable("redis: " + r.str);
    pool_.Release(std::move(conn));
    return Status::Ok();
  }

  Status Write(const std::string& view, const std::vector<std::pair<std::string, std::string>>& rows) override {
    if (rows.empty()) return Status::Ok();
    STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
    // Two round trips: every HGET of the stored timestamps, then every HSET of
    // the rows that are not older.
    const std::string ts_field = "_ts:" + view;
    std::vector<std::string_view> args;  // reused: no allocation per command
    std::string key;
    for (const auto& [ek, row] : rows) {
      key.assign(ek).append(project_);
      args.assign({"HGET", key, ts_field});
      conn->Append(args);
    }
    std::vector<bool> newer(rows.size(), true);
    for (size_t i = 0; i < rows.size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->GetReply());
      if (r.is_error()) return Status::IOError("redis: " + r.str);
      if (r.type == redis::Reply::kString && r.str.size() == 8) {
        const int64_t old = static_cast<int64_t>(DecodeFixed64(r.str.data()));
        newer[i] = old <= RowTs(rows[i].second);
      }
    }
    size_t sent = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!newer[i]) continue;
      key.assign(rows[i].first).append(project_);
      const std::string_view row = rows[i].second;
      args.assign({"HSET", key, view, row, ts_field, row.substr(0, 8)});
      conn->Append(args);
      ++sent;
    }
    STRATA_RETURN_IF_ERROR(DrainReplies(*conn, sent));
    pool_.Release(std::move(conn));
    return Status::Ok();
  }

  Result<std::vector<std::optional<std::string>>> Read(
      const std::vector<std::pair<std::string, std::string>>& pairs) override {
    std::vector<std::optional<std::string>> out(pairs.size());
    if (pairs.empty()) return out;
    STRATA_ASSIGN_OR_RETURN(auto conn, pool_.Acquire());
    // One HMGET per entity key for all its views (as Feast reads), all
    // pipelined: one round trip for every entity and view.
    std::vector<std::vector<size_t>> groups;
    std::unordered_map<std::string_view, size_t> group_of;
    group_of.reserve(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto [it, fresh] = group_of.try_emplace(pairs[i].first, groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
    std::vector<std::string_view> args;
    for (const std::vector<size_t>& g : groups) {
      const std::string key = pairs[g[0]].first + project_;
      args.assign({"HMGET", key});
      for (size_t i : g) args.push_back(pairs[i].second);
      conn->Append(args);
    }
    for (const std::vector<size_t>& g : groups) {
      STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn->GetReply());
      if (r.is_error()) return Status::IOError("redis: " + r.str);
      if (r.type != redis::Reply::kArray || r.elements.size() != g.size()) {
        return Status::Corruption("redis: HMGET answered with an unexpected reply");
      }
      for (size_t k = 0; k < g.size(); ++k) {
        if (r.elements[k].type == redis::Reply::kString) out[g[k]] = std::move(r.elements[k].str);
      }
    }
    pool_.Release(std::move(conn));
    return out;
  }

 private:
  // Idle connections, reused across requests; a connection that failed or
  // still has replies unread (an error cut a pipeline short) is dropped.
  redis::Pool pool_;
  std::string project_;
};

}  // namespace

Result<std::unique_ptr<OnlineStore>> OpenRocksDbOnlineStore(const std::string& path, const std::string& project) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  // Serving is point lookups: bloom filters, hash-indexed data blocks and a
  // 256 MiB block cache; uncompressed blocks (rows are small and already dense),
  // so a cached lookup costs no decompression.
  options.OptimizeForPointLookup(256);
  options.compression = rocksdb::kNoCompression;
  // Through the file-fault seam, as the object engine's metadata.
  options.env = objstore::FileSeamRocksDbEnv();
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  if (!s.ok()) return Status::IOError(fmt::format("cannot open the RocksDB online store at {}: {}", path, s.ToString()));
  return std::unique_ptr<OnlineStore>(
      new RocksDbOnlineStore(std::unique_ptr<rocksdb::DB>(raw), path, options, project));
}

Result<std::unique_ptr<OnlineStore>> OpenRedisOnlineStore(const std::string& connection, const std::string& project) {
  STRATA_ASSIGN_OR_RETURN(redis::Endpoint endpoint, ParseRedisConnection(connection));
  auto store = std::make_unique<RedisOnlineStore>(std::move(endpoint), project);
  STRATA_RETURN_IF_ERROR(store->Ping());
  return std::unique_ptr<OnlineStore>(std::move(store));
}

Result<std::unique_ptr<OnlineStore>> OpenOnlineStore(const RepoConfig& config) {
  if (config.online_store == "redis" && config.redis_layout == "feast") {
    return OpenFeastRedisOnlineStore(config.redis_connection, config.project,
                                     config.redis_key_ttl_seconds);
  }
  if (config.online_store == "redis") return OpenRedisOnlineStore(config.redis_connection, config.project);
  return OpenRocksDbOnlineStore(config.online_path, config.project);
}

}  // namespace strata::features
