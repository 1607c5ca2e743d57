// Redis backend of TxnKV, for volumes mounted by many clients, over core's
// Redis client (core/redis.h: redis::Connection, redis::Pool).
//
// Values are plain string keys. Keys of the grouped types (kv.h) are also
// members of one sorted set per group ("Z" + first 9 bytes of the key, all
// scores 0), so ZRANGEBYLEX returns a directory's entries or a file's chunks
// in byte order, one page at a time.
//
// Transactions are optimistic: every key read by a read-write body is WATCHed
// first (and the group set of every scan), writes are buffered and sent in
// MULTI/EXEC with their index updates; a nil EXEC means another client changed
// something we read, and the body is run again. Read-only bodies read without
// WATCH (each read is atomic on its own). A transaction holds one connection
// of the pool for its duration, since WATCH state belongs to a connection.
//
// Inside a transaction body a failure is thrown as a KvError (kv.h) and
// caught by Txn; the calls outside transactions return a Status.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <strata/core/redis.h>

#include "fsmeta/kv.h"

namespace strata::fsmeta {
namespace {

using redis::Reply;
using Cmd = std::vector<std::string>;

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

bool Grouped(const std::string& key) { return key.size() > kGroupLen && IsGroupedType(key[0]); }
std::string IndexKey(const std::string& key) { return "Z" + key.substr(0, kGroupLen); }

// One command, one reply; a Redis error reply becomes an IOError.
Result<Reply> Call(redis::Connection& c, const Cmd& args) {
  STRATA_ASSIGN_OR_RETURN(Reply r, c.Command(args));
  if (r.is_error()) return Status::IOError("redis " + args[0] + ": " + r.str);
  return r;
}

// Inside a transaction body: the reply, or its failure thrown as a KvError.
Reply OrThrow(Result<Reply> r) {
  if (!r.has_value()) throw KvError(r.error());
  return std::move(*r);
}
void ThrowIfError(const Reply& r, const std::string& what) {
  if (r.is_error()) throw KvError(Status::IOError("redis " + what + ": " + r.str));
}

class RedisKV;

class RedisTxn final : public KvTxn {
 public:
  RedisTxn(redis::Connection* c, bool read_only) : c_(c), ro_(read_only) {}

  std::optional<std::string> Get(const std::string& key) override {
    auto w = writes_.find(key);
    if (w != writes_.end()) return w->second;
    Reply r = WatchedCall({key}, {"GET", key});
    if (r.is_nil()) return std::nullopt;
    return std::move(r.str);
  }

  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    std::vector<std::optional<std::string>> out(keys.size());
    if (keys.empty()) return out;
    std::vector<std::string> args{"MGET"};
    args.insert(args.end(), keys.begin(), keys.end());
    Reply r = WatchedCall(keys, args);
    for (size_t i = 0; i < keys.size() && i < r.elements.size(); ++i) {
      auto w = writes_.find(keys[i]);
      if (w != writes_.end()) {
        out[i] = w->second;
      } else if (r.elements[i].type == Reply::kString) {
        out[i] = std::move(r.elements[i].str);
      }
    }
    return out;
  }

  void Set(const std::string& key, const std::string& value) override { writes_[key] = value; }
  void Delete(const std::string& key) override { writes_[key] = std::nullopt; }
  void Append(const std::string& key, const std::string& value) override {
    appends_.emplace_back(key, value);
  }
  void IncrBy(const std::string& key, int64_t delta) override { incrs_.emplace_back(key, delta); }

  void Scan(const std::string& prefix, const std::string& after, size_t limit, bool keys_only,
            const ScanFn& fn) override {
    if (prefix.size() < kGroupLen || !IsGroupedType(prefix[0])) {
      throw KvError(Status::Internal("redis scan needs a whole group prefix"));
    }
    std::string group = prefix.substr(0, kGroupLen);
    std::string zkey = "Z" + group;
    std::string mp = prefix.substr(kGroupLen);
    std::string min = !after.empty() && after.size() >= kGroupLen &&
                              after.compare(0, kGroupLen, group) == 0 && after > prefix
                          ? "(" + after.substr(kGroupLen)
                          : (mp.empty() ? "-" : "[" + mp);
    std::string hi = PrefixEnd(mp);
    std::string max = mp.empty() ? "+" : (hi.empty() ? "+" : "(" + hi);
    // Buffered deletions may hide fetched members: fetch that many more.
    size_t extra = 0;
    for (const auto& [k, v] : writes_) {
      if (!v && k.compare(0, prefix.size(), prefix) == 0) ++extra;
    }
    std::vector<std::string> args{"ZRANGEBYLEX", zkey, min, max};
    if (limit) {
      args.insert(args.end(), {"LIMIT", "0", std::to_string(limit + extra)});
    }
    Reply r = WatchedCall({zkey}, args);
    std::map<std::string, std::optional<std::string>> rows;
    std::vector<std::string> keys;
    for (const Reply& member : r.elements) keys.push_back(group + member.str);
    if (!keys_only && !keys.empty()) {
      for (size_t i = 0; i < keys.size(); i += 1000) {
        std::vector<std::string> batch(keys.begin() + i,
                                       keys.begin() + std::min(keys.size(), i + 1000));
        auto vals = MultiGet(batch);
        for (size_t j = 0; j < batch.size(); ++j) {
          if (vals[j]) rows[batch[j]] = vals[j];
        }
      }
    } else {
      for (auto& k : keys) rows[k] = std::string();
    }
    const std::string& lo = after.empty() ? prefix : after;
    for (const auto& [k, v] : writes_) {
      if (k.compare(0, prefix.size(), prefix) != 0) continue;
      if (after.empty() ? k < lo : k <= lo) continue;
      if (v)
        rows[k] = keys_only ? std::string() : *v;
      else
        rows.erase(k);
    }
    size_t n = 0;
    for (const auto& [k, v] : rows) {
      if (!v) continue;
      if (limit && n >= limit) break;
      ++n;
      if (!fn(k, *v)) break;
    }
  }

  bool HasWrites() const { return !writes_.empty() || !appends_.empty() || !incrs_.empty(); }
  bool Watched() const { return !watched_.empty(); }

  // Sends the buffered writes in MULTI/EXEC; false when a watched key changed.
  bool Commit() {
    std::vector<std::vector<std::string>> cmds;
    // Index updates grouped per sorted set: removals first, so a key deleted
    // and appended in one transaction stays indexed.
    std::map<std::string, std::vector<std::string>> zrem, zadd;
    std::vector<std::string> dels;
    for (const auto& [k, v] : writes_) {
      if (v) {
        cmds.push_back({"SET", k, *v});
        if (Grouped(k)) zadd[IndexKey(k)].push_back(k.substr(kGroupLen));
      } else {
        dels.push_back(k);
        if (Grouped(k)) zrem[IndexKey(k)].push_back(k.substr(kGroupLen));
      }
    }
    if (!dels.empty()) {
      dels.insert(dels.begin(), "DEL");
      cmds.push_back(std::move(dels));
    }
    for (const auto& [k, v] : appends_) {
      cmds.push_back({"APPEND", k, v});
      if (Grouped(k)) zadd[IndexKey(k)].push_back(k.substr(kGroupLen));
    }
    for (auto& [z, members] : zrem) {
      std::vector<std::string> cmd{"ZREM", z};
      cmd.insert(cmd.end(), members.begin(), members.end());
      cmds.push_back(std::move(cmd));
    }
    for (auto& [z, members] : zadd) {
      std::vector<std::string> cmd{"ZADD", z};
      for (auto& m : members) {
        cmd.push_back("0");
        cmd.push_back(std::move(m));
      }
      cmds.push_back(std::move(cmd));
    }
    for (const auto& [k, d] : incrs_) cmds.push_back({"INCRBY", k, std::to_string(d)});
    c_->Append(Cmd{"MULTI"});
    for (const auto& c : cmds) c_->Append(c);
    c_->Append(Cmd{"EXEC"});
    Reply multi = OrThrow(c_->GetReply());
    ThrowIfError(multi, "MULTI");
    std::string queue_error;
    for (size_t i = 0; i < cmds.size(); ++i) {
      Reply q = OrThrow(c_->GetReply());
      if (q.is_error() && queue_error.empty()) queue_error = q.str;
    }
    Reply exec = OrThrow(c_->GetReply());
    watched_.clear();
    if (!queue_error.empty())
      throw KvError(Status::IOError("redis transaction rejected: " + queue_error));
    ThrowIfError(exec, "EXEC");
    if (exec.is_nil()) return false;
    for (const Reply& e : exec.elements) {
      if (e.is_error())
        throw KvError(Status::IOError("redis transaction command failed: " + e.str));
    }
    return true;
  }

  void Unwatch() {
    if (!watched_.empty()) {
      OrThrow(Call(*c_, Cmd{"UNWATCH"}));
      watched_.clear();
    }
  }

 private:
  // Sends WATCH for the keys not watched yet and the read command in one
  // pipeline (one round trip; the value read is the one watched).
  Reply WatchedCall(const std::vector<std::string>& watch, const std::vector<std::string>& args) {
    bool watching = QueueWatch(watch);
    c_->Append(args);
    if (watching) ThrowIfError(OrThrow(c_->GetReply()), "WATCH");
    Reply r = OrThrow(c_->GetReply());
    ThrowIfError(r, args[0]);
    return r;
  }
  bool QueueWatch(const std::vector<std::string>& keys) {
    if (ro_) return false;
    std::vector<std::string> args{"WATCH"};
    for (const auto& k : keys) {
      if (writes_.count(k)) continue;  // its value is ours already
      if (watched_.insert(k).second) args.push_back(k);
    }
    if (args.size() == 1) return false;
    c_->Append(args);
    return true;
  }

  redis::Connection* c_;
  bool ro_;
  std::set<std::string> watched_;
  std::map<std::string, std::optional<std::string>> writes_;
  std::vector<std::pair<std::string, std::string>> appends_;
  std::vector<std::pair<std::string, int64_t>> incrs_;
};

class RedisKV final : public TxnKV {
 public:
  Status Open(std::string_view url) {
    // redis://[:password@]host[:port][/db]
    redis::Endpoint ep;
    std::string rest(url.substr(8));
    size_t at = rest.rfind('@');
    if (at != std::string::npos) {
      std::string auth = rest.substr(0, at);
      rest = rest.substr(at + 1);
      size_t colon = auth.find(':');
      ep.password = colon == std::string::npos ? auth : auth.substr(colon + 1);
    }
    size_t slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    if (slash != std::string::npos && slash + 1 < rest.size()) {
      try {
        ep.db = std::stoi(rest.substr(slash + 1));
      } catch (const std::exception&) {
        return Status::InvalidArgument("bad database number in redis URL \"" + std::string(url) +
                                       "\"");
      }
    }
    size_t colon = hostport.rfind(':');
    ep.host = hostport.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        ep.port = std::stoi(hostport.substr(colon + 1));
      } catch (const std::exception&) {
        return Status::InvalidArgument("bad port in redis URL \"" + std::string(url) + "\"");
      }
    }
    if (ep.host.empty()) ep.host = "127.0.0.1";
    pool_ = std::make_unique<redis::Pool>(std::move(ep));
    STRATA_ASSIGN_OR_RETURN(auto c, pool_->Acquire());
    STRATA_RETURN_IF_ERROR(Call(*c, Cmd{"PING"}).status());
    pool_->Release(std::move(c));
    return Status::Ok();
  }

  std::string_view Name() const override { return "redis"; }

  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only) override {
    std::mt19937 rng(std::random_device{}());
    int reconnects = 0;
    for (int attempt = 0; attempt < 2000; ++attempt) {
      std::unique_ptr<redis::Connection> c;
      bool exec_sent = false;
      try {
        c = AcquireOrThrow();
        RedisTxn txn(c.get(), read_only);
        Status st;
        try {
          st = body(txn);
        } catch (const KvError&) {
          throw;
        } catch (const std::exception& e) {
          st = Status::Internal(std::string("metadata transaction: ") + e.what());
        }
        if (!st.ok() || read_only || !txn.HasWrites()) {
          txn.Unwatch();
          pool_->Release(std::move(c));
          return st;
        }
        exec_sent = true;
        bool ok = txn.Commit();
        pool_->Release(std::move(c));
        if (ok) return Status::Ok();
      } catch (const KvError& e) {
        // The connection may hold WATCH state or a half-read pipeline: drop it.
        bool broken = c && c->broken();
        c.reset();
        // A connection lost before EXEC was sent changed nothing: run the body
        // again on a new one (e.g. after a Redis restart or an idle timeout).
        // After EXEC we cannot know whether it committed, so we report it.
        if (broken && !exec_sent && reconnects++ < 3) continue;
        return e.status;
      }
      // Conflict: back off a little (randomised, growing) and run the body again.
      int max_us = std::min(50 + attempt * 50, 5000);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % max_us));
    }
    return Status::Conflict("metadata transaction kept conflicting with other clients; retry");
  }

  // The calls below cannot simply be rerun when a dead pooled connection
  // fails them: they validate it first (Pool::Acquire(true) PINGs it).
  Result<int64_t> Incr(const std::string& key, int64_t delta) override {
    STRATA_ASSIGN_OR_RETURN(auto c, pool_->Acquire(true));
    STRATA_ASSIGN_OR_RETURN(Reply r, Call(*c, Cmd{"INCRBY", key, std::to_string(delta)}));
    pool_->Release(std::move(c));
    return r.integer;
  }

  Status ScanAll(const std::string& prefix, const KvTxn::ScanFn& fn) override {
    STRATA_ASSIGN_OR_RETURN(auto c, pool_->Acquire(true));
    std::string pattern;
    for (char ch : prefix) {
      if (ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\') pattern.push_back('\\');
      pattern.push_back(ch);
    }
    pattern.push_back('*');
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
      STRATA_ASSIGN_OR_RETURN(Reply r,
                              Call(*c, Cmd{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}));
      if (r.elements.size() != 2) return Status::IOError("redis SCAN: unexpected reply");
      cursor = std::move(r.elements[0].str);
      for (Reply& member : r.elements[1].elements) {
        if (member.str.compare(0, prefix.size(), prefix) == 0)
          keys.push_back(std::move(member.str));
      }
    } while (cursor != "0");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (size_t i = 0; i < keys.size(); i += 500) {
      Cmd args{"MGET"};
      size_t end = std::min(keys.size(), i + 500);
      args.insert(args.end(), keys.begin() + i, keys.begin() + end);
      STRATA_ASSIGN_OR_RETURN(Reply r, Call(*c, args));
      for (size_t j = 0; j < r.elements.size(); ++j) {
        if (r.elements[j].type != Reply::kString) continue;  // deleted meanwhile
        if (!fn(keys[i + j], r.elements[j].str)) {
          pool_->Release(std::move(c));
          return Status::Ok();
        }
      }
    }
    pool_->Release(std::move(c));
    return Status::Ok();
  }

  Status DeleteAll() override {
    STRATA_ASSIGN_OR_RETURN(auto c, pool_->Acquire(true));
    STRATA_RETURN_IF_ERROR(Call(*c, Cmd{"FLUSHDB"}).status());
    pool_->Release(std::move(c));
    return Status::Ok();
  }

 private:
  // A pooled connection (not validated: a transaction that finds it dead
  // before EXEC runs again on a new one), or a new one.
  std::unique_ptr<redis::Connection> AcquireOrThrow() {
    auto c = pool_->Acquire();
    if (!c.has_value()) throw KvError(c.error());
    return std::move(*c);
  }

  std::unique_ptr<redis::Pool> pool_;  // idle connections (thread-safe)
};

}  // namespace

Result<std::unique_ptr<TxnKV>> OpenRedisKV(std::string_view url) {
  auto kv = std::make_unique<RedisKV>();
  STRATA_RETURN_IF_ERROR(kv->Open(url));
  return std::unique_ptr<TxnKV>(std::move(kv));
}

}  // namespace strata::fsmeta
