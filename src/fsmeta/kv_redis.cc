// Redis backend of TxnKV (hiredis), for volumes mounted by many clients.
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
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fsmeta/kv.h"

namespace strata::fsmeta {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

bool Grouped(const std::string& key) { return key.size() > kGroupLen && IsGroupedType(key[0]); }
std::string IndexKey(const std::string& key) { return "Z" + key.substr(0, kGroupLen); }

class Conn {
 public:
  explicit Conn(redisContext* c) : c_(c) {}
  ~Conn() {
    if (c_) redisFree(c_);
  }
  // Queues one command (pipelined); replies are read with Next.
  void Append(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) {
      Broken();
    }
    ++pending_;
  }
  Reply Next() {
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) Broken();
    --pending_;
    return Reply(static_cast<redisReply*>(r));
  }
  // One command, one reply; a Redis error reply becomes a KvError.
  Reply Call(const std::vector<std::string>& args) {
    Append(args);
    Reply r = Next();
    Check(r, args[0]);
    return r;
  }
  static void Check(const Reply& r, const std::string& what) {
    if (r->type == REDIS_REPLY_ERROR) {
      throw KvError(Status::IOError("redis " + what + ": " + std::string(r->str, r->len)));
    }
  }
  [[noreturn]] void Broken() {
    broken_ = true;
    throw KvError(Status::Unavailable(std::string("redis connection failed: ") +
                                      (c_->errstr[0] ? c_->errstr : "no reply")));
  }
  bool broken() const { return broken_ || c_->err != 0; }

 private:
  redisContext* c_;
  int pending_ = 0;
  bool broken_ = false;
};

class RedisKV;

class RedisTxn final : public KvTxn {
 public:
  RedisTxn(Conn* c, bool read_only) : c_(c), ro_(read_only) {}

  std::optional<std::string> Get(const std::string& key) override {
    auto w = writes_.find(key);
    if (w != writes_.end()) return w->second;
    Reply r = WatchedCall({key}, {"GET", key});
    if (r->type == REDIS_REPLY_NIL) return std::nullopt;
    return std::string(r->str, r->len);
  }

  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    std::vector<std::optional<std::string>> out(keys.size());
    if (keys.empty()) return out;
    std::vector<std::string> args{"MGET"};
    args.insert(args.end(), keys.begin(), keys.end());
    Reply r = WatchedCall(keys, args);
    for (size_t i = 0; i < keys.size() && i < r->elements; ++i) {
      auto w = writes_.find(keys[i]);
      if (w != writes_.end()) {
        out[i] = w->second;
      } else if (r->element[i]->type == REDIS_REPLY_STRING) {
        out[i] = std::string(r->element[i]->str, r->element[i]->len);
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
    std::string min = !after.empty() && after.size() >= kGroupLen && after.compare(0, kGroupLen, group) == 0 &&
                              after > prefix
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
    for (size_t i = 0; i < r->elements; ++i) {
      keys.push_back(group + std::string(r->element[i]->str, r->element[i]->len));
    }
    if (!keys_only && !keys.empty()) {
      for (size_t i = 0; i < keys.size(); i += 1000) {
        std::vector<std::string> batch(keys.begin() + i, keys.begin() + std::min(keys.size(), i + 1000));
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
      if (v) rows[k] = keys_only ? std::string() : *v;
      else rows.erase(k);
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
    c_->Append({"MULTI"});
    for (const auto& c : cmds) c_->Append(c);
    c_->Append({"EXEC"});
    Reply multi = c_->Next();
    Conn::Check(multi, "MULTI");
    std::string queue_error;
    for (size_t i = 0; i < cmds.size(); ++i) {
      Reply q = c_->Next();
      if (q->type == REDIS_REPLY_ERROR && queue_error.empty()) queue_error = std::string(q->str, q->len);
    }
    Reply exec = c_->Next();
    watched_.clear();
    if (!queue_error.empty()) throw KvError(Status::IOError("redis transaction rejected: " + queue_error));
    Conn::Check(exec, "EXEC");
    if (exec->type == REDIS_REPLY_NIL) return false;
    for (size_t i = 0; i < exec->elements; ++i) {
      if (exec->element[i]->type == REDIS_REPLY_ERROR) {
        throw KvError(Status::IOError("redis transaction command failed: " +
                                      std::string(exec->element[i]->str, exec->element[i]->len)));
      }
    }
    return true;
  }

  void Unwatch() {
    if (!watched_.empty()) {
      c_->Call({"UNWATCH"});
      watched_.clear();
    }
  }

 private:
  // Sends WATCH for the keys not watched yet and the read command in one
  // pipeline (one round trip; the value read is the one watched).
  Reply WatchedCall(const std::vector<std::string>& watch, const std::vector<std::string>& args) {
    bool watching = QueueWatch(watch);
    c_->Append(args);
    if (watching) Conn::Check(c_->Next(), "WATCH");
    Reply r = c_->Next();
    Conn::Check(r, args[0]);
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

  Conn* c_;
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
    std::string rest(url.substr(8));
    size_t at = rest.rfind('@');
    if (at != std::string::npos) {
      std::string auth = rest.substr(0, at);
      rest = rest.substr(at + 1);
      size_t colon = auth.find(':');
      password_ = colon == std::string::npos ? auth : auth.substr(colon + 1);
    }
    size_t slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    if (slash != std::string::npos && slash + 1 < rest.size()) {
      try {
        db_ = std::stoi(rest.substr(slash + 1));
      } catch (const std::exception&) {
        return Status::InvalidArgument("bad database number in redis URL \"" + std::string(url) + "\"");
      }
    }
    size_t colon = hostport.rfind(':');
    host_ = hostport.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        port_ = std::stoi(hostport.substr(colon + 1));
      } catch (const std::exception&) {
        return Status::InvalidArgument("bad port in redis URL \"" + std::string(url) + "\"");
      }
    }
    if (host_.empty()) host_ = "127.0.0.1";
    try {
      auto c = Connect();
      c->Call({"PING"});
      Release(std::move(c));
    } catch (const KvError& e) {
      return e.status;
    }
    return Status::Ok();
  }

  std::string_view Name() const override { return "redis"; }

  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only) override {
    std::mt19937 rng(std::random_device{}());
    int reconnects = 0;
    for (int attempt = 0; attempt < 2000; ++attempt) {
      std::unique_ptr<Conn> c;
      bool exec_sent = false;
      try {
        c = Acquire();
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
          Release(std::move(c));
          return st;
        }
        exec_sent = true;
        bool ok = txn.Commit();
        Release(std::move(c));
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

  Result<int64_t> Incr(const std::string& key, int64_t delta) override {
    try {
      auto c = Acquire(true);
      Reply r = c->Call({"INCRBY", key, std::to_string(delta)});
      Release(std::move(c));
      return static_cast<int64_t>(r->integer);
    } catch (const KvError& e) {
      return e.status;
    }
  }

  Status ScanAll(const std::string& prefix, const KvTxn::ScanFn& fn) override {
    try {
      auto c = Acquire(true);
      std::string pattern;
      for (char ch : prefix) {
        if (ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\') pattern.push_back('\\');
        pattern.push_back(ch);
      }
      pattern.push_back('*');
      std::vector<std::string> keys;
      std::string cursor = "0";
      do {
        Reply r = c->Call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
        cursor.assign(r->element[0]->str, r->element[0]->len);
        redisReply* arr = r->element[1];
        for (size_t i = 0; i < arr->elements; ++i) {
          std::string k(arr->element[i]->str, arr->element[i]->len);
          if (k.compare(0, prefix.size(), prefix) == 0) keys.push_back(std::move(k));
        }
      } while (cursor != "0");
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (size_t i = 0; i < keys.size(); i += 500) {
        std::vector<std::string> args{"MGET"};
        size_t end = std::min(keys.size(), i + 500);
        args.insert(args.end(), keys.begin() + i, keys.begin() + end);
        Reply r = c->Call(args);
        for (size_t j = 0; j < r->elements; ++j) {
          if (r->element[j]->type != REDIS_REPLY_STRING) continue;  // deleted meanwhile
          if (!fn(keys[i + j], std::string(r->element[j]->str, r->element[j]->len))) {
            Release(std::move(c));
            return Status::Ok();
          }
        }
      }
      Release(std::move(c));
      return Status::Ok();
    } catch (const KvError& e) {
      return e.status;
    }
  }

  Status DeleteAll() override {
    try {
      auto c = Acquire(true);
      c->Call({"FLUSHDB"});
      Release(std::move(c));
      return Status::Ok();
    } catch (const KvError& e) {
      return e.status;
    }
  }

 private:
  std::unique_ptr<Conn> Connect() {
    struct timeval tv = {10, 0};
    redisContext* rc = redisConnectWithTimeout(host_.c_str(), port_, tv);
    if (rc == nullptr || rc->err) {
      std::string err = rc ? rc->errstr : "out of memory";
      if (rc) redisFree(rc);
      throw KvError(Status::Unavailable("cannot connect to redis at " + host_ + ":" +
                                        std::to_string(port_) + ": " + err));
    }
    auto c = std::make_unique<Conn>(rc);
    if (!password_.empty()) c->Call({"AUTH", password_});
    if (db_ != 0) c->Call({"SELECT", std::to_string(db_)});
    return c;
  }

  // A pooled connection, or a new one. validate: PING a pooled one first (for
  // calls that cannot simply be rerun when a dead connection fails them).
  std::unique_ptr<Conn> Acquire(bool validate = false) {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pool_.empty()) break;
        c = std::move(pool_.back());
        pool_.pop_back();
      }
      if (!validate) return c;
      try {
        c->Call({"PING"});
        return c;
      } catch (const KvError&) {
        // dead (server restarted or idle timeout): try the next one
      }
    }
    return Connect();
  }

  void Release(std::unique_ptr<Conn> c) {
    if (!c || c->broken()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.size() < 64) pool_.push_back(std::move(c));
  }

  std::string host_ = "127.0.0.1", password_;
  int port_ = 6379, db_ = 0;
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> pool_;  // idle connections, guarded by mu_
};

}  // namespace

Result<std::unique_ptr<TxnKV>> OpenRedisKV(std::string_view url) {
  auto kv = std::make_unique<RedisKV>();
  STRATA_RETURN_IF_ERROR(kv->Open(url));
  return std::unique_ptr<TxnKV>(std::move(kv));
}

}  // namespace strata::fsmeta
