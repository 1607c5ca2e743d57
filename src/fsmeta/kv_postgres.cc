// PostgreSQL backend of TxnKV, for volumes mounted by many clients over a
// PostgreSQL server a team already runs (libpq).
//
// One table, strata_kv(k BYTEA PRIMARY KEY, v BYTEA NOT NULL), created when
// missing (a fresh database is made ready for `strata fs format`). bytea
// compares bytewise, so a primary-key range scan returns a directory's entries
// or a file's chunks in the key order kv.h requires, one page at a time.
//
// Every transaction is SERIALIZABLE: PostgreSQL's SSI aborts one of two
// transactions whose reads and writes overlap (SQLSTATE 40001, or 40P01 for a
// deadlock); the body is then run again, after a randomised growing back-off,
// as on Redis. Statements are pipelined (Conn): a read costs one round trip,
// writes travel with the next read or the COMMIT, in order (the transaction
// sees its own writes); the blind updates (Append, IncrBy) are buffered and sent
// just before COMMIT, so the row locks they take are held as briefly as
// possible (a Get in the same body does not see them, as on Redis).
//
// A transaction holds one connection of a small pool for its duration.
// Inside a body a failure is thrown as a KvError (kv.h) and caught by Txn.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <libpq-fe.h>

#include "fsmeta/kv.h"

namespace strata::fsmeta {
namespace {

constexpr size_t kPage = 1000;  // rows per round trip of an unbounded scan
constexpr size_t kIdleConns = 16;

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;  // "" = no upper bound
}

// A serialization failure or deadlock: the whole body is run again.
struct PgRetry : KvError {
  using KvError::KvError;
};

// The URL without its password, for error messages.
std::string Redacted(std::string_view url) {
  std::string u(url);
  size_t scheme = u.find("://");
  size_t at = u.rfind('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return u;
  size_t colon = u.find(':', scheme + 3);
  if (colon != std::string::npos && colon < at) u.replace(colon + 1, at - colon - 1, "***");
  return u;
}

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

// Statements prepared on every connection. $n are bytea (binary) unless noted.
struct StmtDef {
  const char* name;
  const char* sql;
  int nparams;
};
constexpr StmtDef kStmts[] = {
    {"get", "SELECT v FROM strata_kv WHERE k = $1", 1},
    // $1 is a text array literal of hex bytea values.
    {"mget", "SELECT k, v FROM strata_kv WHERE k = ANY($1::bytea[])", 1},
    {"put",
     "INSERT INTO strata_kv(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", 2},
    {"del", "DELETE FROM strata_kv WHERE k = $1", 1},
    {"append",
     "INSERT INTO strata_kv(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = strata_kv.v || "
     "EXCLUDED.v",
     2},
    // $2 is the delta as decimal text; the counter is decimal text (kv.h).
    {"incr",
     "INSERT INTO strata_kv(k, v) VALUES ($1, convert_to($2::bigint::text, 'UTF8')) "
     "ON CONFLICT (k) DO UPDATE SET v = convert_to((convert_from(strata_kv.v, 'UTF8')::bigint + "
     "$2::bigint)::text, 'UTF8') RETURNING v",
     2},
    // $3 is the row limit as text.
    {"scan", "SELECT k, v FROM strata_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3::bigint", 3},
    {"scank",
     "SELECT k, ''::bytea FROM strata_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3::bigint", 3},
    {"scanopen", "SELECT k, v FROM strata_kv WHERE k >= $1 ORDER BY k LIMIT $2::bigint", 2},
    {"scanopenk", "SELECT k, ''::bytea FROM strata_kv WHERE k >= $1 ORDER BY k LIMIT $2::bigint",
     2},
};

// One libpq connection with the statements prepared.
class Conn {
 public:
  ~Conn() {
    if (pg_) PQfinish(pg_);
  }

  Status Open(const std::string& url) {
    pg_ = PQconnectdb(url.c_str());
    if (!pg_ || PQstatus(pg_) != CONNECTION_OK) {
      return Status::Unavailable("cannot connect to postgres \"" + Redacted(url) +
                                 "\": " + (pg_ ? PQerrorMessage(pg_) : "out of memory"));
    }
    return Status::Ok();
  }

  // Creates the table where it is missing. Two clients racing to create it
  // both succeed (the loser's duplicate-object error is ignored).
  Status EnsureSchema() {
    ResultPtr exists(PQexec(pg_, "SELECT to_regclass('strata_kv') IS NOT NULL"), &PQclear);
    if (PQresultStatus(exists.get()) != PGRES_TUPLES_OK) return Fail("schema", exists.get());
    if (PQgetvalue(exists.get(), 0, 0)[0] == 't') return Status::Ok();
    ResultPtr r(PQexec(pg_,
                       "CREATE TABLE IF NOT EXISTS strata_kv(k BYTEA PRIMARY KEY, "
                       "v BYTEA NOT NULL)"),
                &PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
      std::string state = SqlState(r.get());
      if (state != "23505" && state != "42P07") return Fail("create table", r.get());
    }
    return Status::Ok();
  }

  Status Prepare() {
    for (const auto& s : kStmts) {
      ResultPtr r(PQprepare(pg_, s.name, s.sql, s.nparams, nullptr), &PQclear);
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Fail("prepare", r.get());
    }
    return Status::Ok();
  }

  bool broken() const { return PQstatus(pg_) != CONNECTION_OK; }

  // From here on statements are pipelined (libpq pipeline mode): BEGIN is
  // sent with the transaction's first statement, writes (whose results
  // nobody waits for) are queued and sent with the next read or the COMMIT,
  // so a transaction costs one round trip per read plus one.
  Status EnterPipeline() {
    if (PQenterPipelineMode(pg_) != 1)
      return Status::IOError("postgres: cannot enter pipeline mode");
    return Status::Ok();
  }

  // The transaction's BEGIN, sent with its first statement.
  void Begin(const char* sql) { begin_ = sql; }

  // Queues a prepared statement; formats[i] is 1 for a binary (bytea)
  // parameter, 0 for text. Results are binary.
  void Send(const char* stmt, const std::vector<std::string_view>& params,
            const std::vector<int>& formats) {
    SendBegin();
    std::vector<const char*> values;
    std::vector<int> lengths;
    for (const auto& p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
    }
    if (PQsendQueryPrepared(pg_, stmt, static_cast<int>(params.size()), values.data(),
                            lengths.data(), formats.data(), 1) != 1)
      throw KvError(Fail(stmt, nullptr));
    pending_.push_back(stmt);
    // Bounded, so that neither side's socket buffer fills with what the
    // other does not read yet.
    if (pending_.size() >= 256) Sync();
  }

  // A statement and its result (the queued ones before it are checked too).
  ResultPtr Exec(const char* stmt, const std::vector<std::string_view>& params,
                 const std::vector<int>& formats) {
    Send(stmt, params, formats);
    return Sync();
  }

  // COMMIT or ROLLBACK of the transaction begun with Begin; nothing to send
  // when it ran no statement.
  void Finish(const char* sql) {
    begin_ = nullptr;
    if (!in_txn_ && pending_.empty()) return;
    in_txn_ = false;
    SendSql(sql);
    Sync();
  }

  // The COMMIT of a read-only transaction: sent with a sync point of its
  // own, its result read before the next statement's (Drain), so the
  // transaction costs no extra round trip. A read-only transaction has
  // nothing to lose at commit, so a failure there is ignored.
  void FinishReadOnly() {
    begin_ = nullptr;
    if (!in_txn_ && pending_.empty()) return;
    in_txn_ = false;
    SendSql("COMMIT");
    if (PQpipelineSync(pg_) != 1 || PQflush(pg_) != 0) throw KvError(Fail("sync", nullptr));
    deferred_.push_back(std::move(pending_));
    pending_.clear();
  }

  // Ends whatever transaction the server has open (after a failure, the
  // statements queued behind it, a COMMIT included, were skipped); a
  // ROLLBACK outside a transaction is only a warning.
  void Abort() {
    begin_ = nullptr;
    in_txn_ = false;
    pending_.clear();
    SendSql("ROLLBACK");
    Sync();
  }

  // A statement on its own (autocommit).
  void Command(const char* sql) {
    SendSql(sql);
    Sync();
  }

  static std::string SqlState(const PGresult* r) {
    const char* s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    return s ? s : "";
  }

 private:
  void SendBegin() {
    if (!begin_) return;
    const char* b = begin_;
    begin_ = nullptr;
    in_txn_ = true;
    SendSql(b);
  }

  void SendSql(const char* sql) {
    if (PQsendQueryParams(pg_, sql, 0, nullptr, nullptr, nullptr, nullptr, 1) != 1)
      throw KvError(Fail(sql, nullptr));
    pending_.push_back(sql);
  }

  // Sends a sync point and reads the result of every queued statement; the
  // first failure is thrown (the ones after it were skipped by the server).
  // Reads the results of the read-only COMMITs sent before (their errors
  // are ignored, see FinishReadOnly) up to their sync points.
  void Drain() {
    for (const auto& batch : deferred_) {
      for (const char* what : batch) {
        ResultPtr r(PQgetResult(pg_), &PQclear);
        if (!r) throw KvError(Fail(what, nullptr));
        if (PGresult* extra = PQgetResult(pg_)) {
          PQclear(extra);
          throw KvError(Status::IOError(std::string("postgres ") + what + ": unexpected result"));
        }
      }
      ResultPtr sync(PQgetResult(pg_), &PQclear);
      if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC)
        throw KvError(Fail("sync", sync.get()));
    }
    deferred_.clear();
  }

  ResultPtr Sync() {
    std::vector<const char*> pending = std::move(pending_);
    pending_.clear();
    if (PQpipelineSync(pg_) != 1) throw KvError(Fail("sync", nullptr));
    Drain();
    ResultPtr last(nullptr, &PQclear);
    std::optional<Status> failure;
    bool retry = false;
    for (const char* what : pending) {
      ResultPtr r(PQgetResult(pg_), &PQclear);
      if (!r) throw KvError(Fail(what, nullptr));
      ExecStatusType st = PQresultStatus(r.get());
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !failure) {
        std::string state = SqlState(r.get());
        retry = state == "40001" || state == "40P01";
        failure = Fail(what, r.get());
      }
      if (PGresult* extra = PQgetResult(pg_)) {  // each statement's results end with NULL
        PQclear(extra);
        throw KvError(Status::IOError(std::string("postgres ") + what + ": unexpected result"));
      }
      last = std::move(r);
    }
    ResultPtr sync(PQgetResult(pg_), &PQclear);
    if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC)
      throw KvError(Fail("sync", sync.get()));
    if (failure) {
      if (retry) throw PgRetry(*failure);
      throw KvError(*failure);
    }
    return last;
  }

  Status Fail(const std::string& what, const PGresult* r) const {
    std::string msg =
        r && PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) : PQerrorMessage(pg_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return Status::IOError("postgres " + what + ": " + msg);
  }

  PGconn* pg_ = nullptr;
  const char* begin_ = nullptr;                     // BEGIN not sent yet
  bool in_txn_ = false;                             // BEGIN sent, no COMMIT/ROLLBACK yet
  std::vector<const char*> pending_;                // sent, results not read yet
  std::vector<std::vector<const char*>> deferred_;  // read-only COMMITs, each with its sync
};

std::string Value(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

// A text array literal of bytea values in hex: {"\\x0a0b",...}.
std::string HexArray(const std::vector<std::string>& keys) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "{";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out.push_back(',');
    out += "\"\\\\x";
    for (unsigned char c : keys[i]) {
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

class PgTxn final : public KvTxn {
 public:
  explicit PgTxn(Conn* c) : c_(c) {}

  std::optional<std::string> Get(const std::string& key) override {
    auto r = c_->Exec("get", {key}, {1});
    if (PQntuples(r.get()) == 0) return std::nullopt;
    return Value(r.get(), 0, 0);
  }

  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    std::vector<std::optional<std::string>> out(keys.size());
    for (size_t i = 0; i < keys.size(); i += kPage) {
      std::vector<std::string> batch(keys.begin() + i,
                                     keys.begin() + std::min(keys.size(), i + kPage));
      std::string arr = HexArray(batch);
      auto r = c_->Exec("mget", {arr}, {0});
      std::unordered_map<std::string, std::string> found;
      for (int row = 0; row < PQntuples(r.get()); ++row)
        found.emplace(Value(r.get(), row, 0), Value(r.get(), row, 1));
      for (size_t j = i; j < i + batch.size(); ++j) {  // a key may be asked twice
        auto it = found.find(keys[j]);
        if (it != found.end()) out[j] = it->second;
      }
    }
    return out;
  }

  void Set(const std::string& key, const std::string& value) override {
    c_->Send("put", {key, value}, {1, 1});
  }
  void Delete(const std::string& key) override { c_->Send("del", {key}, {1}); }
  void Append(const std::string& key, const std::string& value) override {
    blind_.push_back({key, value, false});
  }
  void IncrBy(const std::string& key, int64_t delta) override {
    blind_.push_back({key, std::to_string(delta), true});
  }

  void Scan(const std::string& prefix, const std::string& after, size_t limit, bool keys_only,
            const ScanFn& fn) override {
    // The smallest key greater than `after` is after + "\0".
    std::string lo = prefix;
    if (!after.empty() && after >= prefix) lo = after + std::string(1, '\0');
    const std::string hi = PrefixEnd(prefix);
    size_t seen = 0;
    for (;;) {
      size_t want = limit ? std::min(kPage, limit - seen) : kPage;
      std::string n = std::to_string(want);
      ResultPtr r = hi.empty() ? c_->Exec(keys_only ? "scanopenk" : "scanopen", {lo, n}, {1, 0})
                               : c_->Exec(keys_only ? "scank" : "scan", {lo, hi, n}, {1, 1, 0});
      int rows = PQntuples(r.get());
      // Rows are copied out before fn runs: fn may use this transaction.
      std::vector<std::pair<std::string, std::string>> page;
      page.reserve(static_cast<size_t>(rows));
      for (int i = 0; i < rows; ++i) page.emplace_back(Value(r.get(), i, 0), Value(r.get(), i, 1));
      r.reset();
      for (const auto& [k, v] : page) {
        if (!fn(k, v)) return;
      }
      seen += page.size();
      if (page.size() < want || (limit && seen >= limit)) return;
      lo = page.back().first + std::string(1, '\0');
    }
  }

  bool HasBlind() const { return !blind_.empty(); }
  void FlushBlind() {
    for (const auto& b : blind_)
      c_->Send(b.incr ? "incr" : "append", {b.key, b.value}, {1, b.incr ? 0 : 1});
    blind_.clear();
  }

 private:
  struct Blind {
    std::string key, value;
    bool incr;
  };
  Conn* c_;
  std::vector<Blind> blind_;
};

class PostgresKV final : public TxnKV {
 public:
  Status Open(std::string_view url) {
    url_ = std::string(url);
    auto c = std::make_unique<Conn>();
    STRATA_RETURN_IF_ERROR(c->Open(url_));
    STRATA_RETURN_IF_ERROR(c->EnsureSchema());
    STRATA_RETURN_IF_ERROR(c->Prepare());
    STRATA_RETURN_IF_ERROR(c->EnterPipeline());
    Release(std::move(c));
    return Status::Ok();
  }

  std::string_view Name() const override { return "postgres"; }

  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only) override {
    std::mt19937 rng(std::random_device{}());
    int reconnects = 0;
    for (int attempt = 0; attempt < 2000; ++attempt) {
      std::unique_ptr<Conn> c;
      bool commit_sent = false;
      try {
        auto got = Acquire();
        if (!got.has_value()) return got.error();
        c = std::move(*got);
        c->Begin(read_only ? "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"
                           : "BEGIN ISOLATION LEVEL SERIALIZABLE");
        PgTxn txn(c.get());
        Status st;
        try {
          st = body(txn);
        } catch (const KvError&) {
          throw;
        } catch (const std::exception& e) {
          st = Status::Internal(std::string("metadata transaction: ") + e.what());
        }
        if (!st.ok()) {
          c->Finish("ROLLBACK");
          Release(std::move(c));
          return st;
        }
        if (txn.HasBlind() && !read_only) txn.FlushBlind();
        commit_sent = true;
        if (read_only) {
          c->FinishReadOnly();
        } else {
          c->Finish("COMMIT");
        }
        Release(std::move(c));
        return Status::Ok();
      } catch (const PgRetry&) {
        // The server rolled the transaction back (COMMIT included: a
        // serialization failure at commit commits nothing). Leave the
        // aborted state and run the body again.
        if (!RollbackQuietly(c)) c.reset();
        if (c) Release(std::move(c));
      } catch (const KvError& e) {
        bool broken = c && c->broken();
        if (!broken && c) RollbackQuietly(c);
        c.reset();  // a connection that failed mid-transaction is not reused
        // A connection lost before COMMIT was sent changed nothing: run the
        // body again on a new one (server restart, idle timeout). After COMMIT
        // we cannot know whether it committed, so we report it.
        if (broken && !commit_sent && reconnects++ < 3) continue;
        return e.status;
      }
      int max_us = std::min(100 + attempt * 100, 20000);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % max_us));
    }
    return Status::Conflict("metadata transaction kept conflicting with other clients; retry");
  }

  Result<int64_t> Incr(const std::string& key, int64_t delta) override {
    // One statement in autocommit: the upsert is atomic on its own.
    for (int tries = 0;; ++tries) {
      auto got = Acquire();
      if (!got.has_value()) return got.error();
      std::unique_ptr<Conn> c = std::move(*got);
      try {
        std::string d = std::to_string(delta);
        auto r = c->Exec("incr", {key, d}, {1, 0});
        int64_t v = std::stoll(Value(r.get(), 0, 0));
        r.reset();
        Release(std::move(c));
        return v;
      } catch (const PgRetry& e) {
        // Only where the server's default isolation is SERIALIZABLE.
        Release(std::move(c));
        if (tries >= 100) return e.status;
      } catch (const KvError& e) {
        // A dead pooled connection never ran the statement: try a new one.
        if (!c->broken() || tries >= 3) return e.status;
      } catch (const std::exception& e) {
        return Status::Corruption("counter \"" + key + "\" is not a number: " + e.what());
      }
    }
  }

  Status ScanAll(const std::string& prefix, const KvTxn::ScanFn& fn) override {
    // Paged, each page in its own transaction, so a long scan holds no
    // snapshot and fn may run transactions of its own.
    std::string after;
    for (;;) {
      std::vector<std::pair<std::string, std::string>> page;
      STRATA_RETURN_IF_ERROR(Txn(
          [&](KvTxn& t) {
            page.clear();
            t.Scan(prefix, after, kPage, false, [&](const std::string& k, const std::string& v) {
              page.emplace_back(k, v);
              return true;
            });
            return Status::Ok();
          },
          true));
      for (const auto& [k, v] : page) {
        if (!fn(k, v)) return Status::Ok();
      }
      if (page.size() < kPage) return Status::Ok();
      after = page.back().first;
    }
  }

  Status DeleteAll() override {
    auto got = Acquire();
    if (!got.has_value()) return got.error();
    std::unique_ptr<Conn> c = std::move(*got);
    try {
      c->Command("DELETE FROM strata_kv");
    } catch (const KvError& e) {
      return e.status;
    }
    Release(std::move(c));
    return Status::Ok();
  }

 private:
  Result<std::unique_ptr<Conn>> Connect() {
    auto c = std::make_unique<Conn>();
    STRATA_RETURN_IF_ERROR(c->Open(url_));
    STRATA_RETURN_IF_ERROR(c->Prepare());
    STRATA_RETURN_IF_ERROR(c->EnterPipeline());
    return c;
  }

  Result<std::unique_ptr<Conn>> Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    return Connect();
  }

  void Release(std::unique_ptr<Conn> c) {
    if (!c || c->broken()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < kIdleConns) idle_.push_back(std::move(c));
  }

  static bool RollbackQuietly(std::unique_ptr<Conn>& c) {
    if (!c || c->broken()) return false;
    try {
      c->Abort();
      return true;
    } catch (const KvError&) {
      return false;
    }
  }

  std::string url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> idle_;
};

}  // namespace

Result<std::unique_ptr<TxnKV>> OpenPostgresKV(std::string_view url) {
  auto kv = std::make_unique<PostgresKV>();
  STRATA_RETURN_IF_ERROR(kv->Open(url));
  return std::unique_ptr<TxnKV>(std::move(kv));
}

}  // namespace strata::fsmeta
