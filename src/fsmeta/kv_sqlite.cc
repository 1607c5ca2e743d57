// SQLite backend of TxnKV: one `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID`
// table in WAL mode. synchronous=NORMAL by default (a committed transaction
// survives kill -9; the last ones may be lost on power loss), FULL with
// `?sync=full` (each commit fsyncs the WAL). Write transactions are BEGIN
// IMMEDIATE (one writer at a time across processes, others wait on
// busy_timeout); this process's write
// transactions are serialised by write_mu_ on one connection. Read-only
// transactions run on a pool of reader connections, concurrently with each
// other and with the writer (WAL snapshots).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <sqlite3.h>

#include "fsmeta/kv.h"
#include "fsmeta/sqlite_fault_vfs.h"

namespace strata::fsmeta {
namespace {

// A failed SQLite call as a Status: a full disk (SQLITE_FULL) is
// kResourceExhausted, a damaged file kCorruption, anything else kIOError.
Status SqliteError(sqlite3* db, const std::string& what, const std::string& path) {
  const int rc = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  std::string msg =
      "sqlite " + what + " on \"" + path + "\": " + (db ? sqlite3_errmsg(db) : "out of memory");
  if (rc == SQLITE_FULL) {
    return Status::ResourceExhausted(msg + " (free space on its filesystem, then retry)");
  }
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) return Status::Corruption(msg);
  return Status::IOError(msg);
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw KvError(Status::IOError(std::string("sqlite prepare: ") + sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() { return st_; }

 private:
  sqlite3_stmt* st_ = nullptr;
};

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;  // "" = no upper bound
}

// One connection with its prepared statements; used by one transaction at a time.
class Conn {
 public:
  ~Conn() {
    get_.reset();
    put_.reset();
    del_.reset();
    for (auto& s : scan_) s.reset();
    begin_.reset();
    begin_write_.reset();
    commit_.reset();
    rollback_.reset();
    savepoint_.reset();
    release_.reset();
    rollback_to_.reset();
    if (db_) sqlite3_close(db_);
  }

  Status Open(const std::string& path, const std::string& sync, bool create) {
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        FaultInjectingSqliteVfs()) != SQLITE_OK) {
      return SqliteError(db_, "open", path);
    }
    path_ = path;
    sqlite3_busy_timeout(db_, 30000);
    std::string sync_pragma = "PRAGMA synchronous=" + sync;
    STRATA_RETURN_IF_ERROR(Exec(sync_pragma.c_str()));
    if (create) {
      STRATA_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
      STRATA_RETURN_IF_ERROR(Exec(
          "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID"));
    }
    try {
      get_ = std::make_unique<Stmt>(db_, "SELECT v FROM kv WHERE k = ?");
      put_ = std::make_unique<Stmt>(db_, "INSERT OR REPLACE INTO kv(k, v) VALUES(?, ?)");
      del_ = std::make_unique<Stmt>(db_, "DELETE FROM kv WHERE k = ?");
      begin_ = std::make_unique<Stmt>(db_, "BEGIN");
      begin_write_ = std::make_unique<Stmt>(db_, "BEGIN IMMEDIATE");
      commit_ = std::make_unique<Stmt>(db_, "COMMIT");
      rollback_ = std::make_unique<Stmt>(db_, "ROLLBACK");
      savepoint_ = std::make_unique<Stmt>(db_, "SAVEPOINT g");
      release_ = std::make_unique<Stmt>(db_, "RELEASE g");
      rollback_to_ = std::make_unique<Stmt>(db_, "ROLLBACK TO g");
    } catch (const KvError& e) {
      return e.status;
    }
    return Status::Ok();
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      sqlite3_free(err);
      return SqliteError(db_, std::string("\"") + sql + "\"", path_);
    }
    return Status::Ok();
  }

  // Runs a prepared statement that returns no rows (BEGIN, COMMIT, ...).
  Status Step(Stmt* st, const char* what) {
    sqlite3_reset(st->get());
    int rc = sqlite3_step(st->get());
    sqlite3_reset(st->get());
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) return Status::Ok();
    return SqliteError(db_, std::string("\"") + what + "\"", path_);
  }

  // The range scan, prepared once per shape (bit 0: keys only, 1: exclusive
  // lower bound, 2: no upper bound); ?3 is the LIMIT (-1: none).
  sqlite3_stmt* Scan(bool keys_only, bool exclusive, bool unbounded) {
    const int i = (keys_only ? 1 : 0) | (exclusive ? 2 : 0) | (unbounded ? 4 : 0);
    if (!scan_[i]) {
      std::string sql = std::string("SELECT k") + (keys_only ? "" : ", v") + " FROM kv WHERE k " +
                        (exclusive ? ">" : ">=") + " ?1" + (unbounded ? "" : " AND k < ?2") +
                        " ORDER BY k LIMIT ?3";
      scan_[i] = std::make_unique<Stmt>(db_, sql.c_str());
    }
    return scan_[i]->get();
  }

  [[noreturn]] void Fail(const char* what) { throw KvError(SqliteError(db_, what, path_)); }

  sqlite3* db_ = nullptr;
  std::string path_;
  std::unique_ptr<Stmt> get_, put_, del_;
  std::unique_ptr<Stmt> scan_[8];
  std::unique_ptr<Stmt> begin_, begin_write_, commit_, rollback_;
  std::unique_ptr<Stmt> savepoint_, release_, rollback_to_;
};

class SqliteTxn final : public KvTxn {
 public:
  explicit SqliteTxn(Conn* c) : c_(c) {}

  std::optional<std::string> Get(const std::string& key) override {
    sqlite3_stmt* st = c_->get_->get();
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    int rc = sqlite3_step(st);
    std::optional<std::string> out;
    if (rc == SQLITE_ROW) {
      const char* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
      out.emplace(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(st, 0)));
    } else if (rc != SQLITE_DONE) {
      sqlite3_reset(st);
      c_->Fail("get");
    }
    sqlite3_reset(st);
    return out;
  }

  std::vector<std::optional<std::string>> MultiGet(const std::vector<std::string>& keys) override {
    std::vector<std::optional<std::string>> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(Get(k));
    return out;
  }

  void Set(const std::string& key, const std::string& value) override {
    sqlite3_stmt* st = c_->put_->get();
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) {
      sqlite3_reset(st);
      c_->Fail("set");
    }
    sqlite3_reset(st);
  }

  void Delete(const std::string& key) override {
    sqlite3_stmt* st = c_->del_->get();
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) {
      sqlite3_reset(st);
      c_->Fail("delete");
    }
    sqlite3_reset(st);
  }

  void Append(const std::string& key, const std::string& value) override {
    auto v = Get(key);
    Set(key, (v ? *v : std::string()) + value);
  }

  void IncrBy(const std::string& key, int64_t delta) override {
    auto v = Get(key);
    int64_t n = v ? std::stoll(*v) : 0;
    Set(key, std::to_string(n + delta));
  }

  void Scan(const std::string& prefix, const std::string& after, size_t limit, bool keys_only,
            const ScanFn& fn) override {
    std::string lo = after.empty() ? prefix : after;
    std::string hi = PrefixEnd(prefix);
    sqlite3_stmt* st = c_->Scan(keys_only, !after.empty(), hi.empty());
    std::unique_ptr<Stmt> nested;  // a scan inside another's callback gets its own
    if (sqlite3_stmt_busy(st)) {
      nested = std::make_unique<Stmt>(c_->db_, sqlite3_sql(st));
      st = nested->get();
    }
    // Reset on every way out (fn may stop early or throw), so the statement
    // holds no read cursor past this call.
    struct Reset {
      sqlite3_stmt* st;
      ~Reset() {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
      }
    } reset{st};
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, lo.data(), static_cast<int>(lo.size()), SQLITE_STATIC);
    if (!hi.empty()) sqlite3_bind_blob(st, 2, hi.data(), static_cast<int>(hi.size()), SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, limit ? static_cast<sqlite3_int64>(limit) : -1);
    std::string k, v;
    for (;;) {
      int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) c_->Fail("scan");
      const char* kp = static_cast<const char*>(sqlite3_column_blob(st, 0));
      k.assign(kp ? kp : "", static_cast<size_t>(sqlite3_column_bytes(st, 0)));
      if (!keys_only) {
        const char* vp = static_cast<const char*>(sqlite3_column_blob(st, 1));
        v.assign(vp ? vp : "", static_cast<size_t>(sqlite3_column_bytes(st, 1)));
      }
      if (!fn(k, v)) break;
    }
  }

 private:
  Conn* c_;
};

class SqliteKV final : public TxnKV {
 public:
  // path may end in "?sync=normal|full" (default normal: with WAL, a committed
  // transaction survives kill -9 of the process; full also survives power loss).
  Status Open(std::string path) {
    sync_ = "NORMAL";
    if (size_t q = path.find('?'); q != std::string::npos) {
      std::string opts = path.substr(q + 1);
      path.resize(q);
      if (opts == "sync=full") {
        sync_ = "FULL";
      } else if (opts != "sync=normal") {
        return Status::InvalidArgument("unknown sqlite3 URL option \"" + opts +
                                       "\" (supported: sync=normal, sync=full)");
      }
    }
    path_ = path;
    writer_ = std::make_unique<Conn>();
    STRATA_RETURN_IF_ERROR(writer_->Open(path_, sync_, true));
    // Checkpoints (copying the WAL back into the database, with an fsync of
    // each) run on a thread of their own, not inside whichever commit crosses
    // SQLite's 1000-page mark: that commit took 10-25 ms, 80 us on every
    // transaction on average in a create-heavy run.
    sqlite3_wal_autocheckpoint(writer_->db_, 0);
    sqlite3_wal_hook(writer_->db_, &SqliteKV::WalHook, this);
    checkpointer_ = std::thread([this] { CheckpointLoop(); });
    return Status::Ok();
  }

  ~SqliteKV() override {
    if (checkpointer_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(ckpt_mu_);
        ckpt_stop_ = true;
      }
      ckpt_cv_.notify_all();
      checkpointer_.join();
    }
  }

  std::string_view Name() const override { return "sqlite3"; }

  Status Txn(const std::function<Status(KvTxn&)>& body, bool read_only) override {
    if (read_only) {
      std::unique_ptr<Conn> c;
      {
        std::lock_guard<std::mutex> lock(readers_mu_);
        if (!readers_.empty()) {
          c = std::move(readers_.back());
          readers_.pop_back();
        }
      }
      if (!c) {
        c = std::make_unique<Conn>();
        STRATA_RETURN_IF_ERROR(c->Open(path_, sync_, false));
      }
      Status st = Run(c.get(), body, true);
      std::lock_guard<std::mutex> lock(readers_mu_);
      if (readers_.size() < 16) readers_.push_back(std::move(c));
      return st;
    }
    return GroupWrite(body);
  }

  uint64_t Commits() const override { return commits_.load(); }

  Result<int64_t> Incr(const std::string& key, int64_t delta) override {
    int64_t out = 0;
    Status st = Txn(
        [&](KvTxn& t) {
          auto v = t.Get(key);
          out = (v ? std::stoll(*v) : 0) + delta;
          t.Set(key, std::to_string(out));
          return Status::Ok();
        },
        false);
    if (!st.ok()) return st;
    return out;
  }

  Status ScanAll(const std::string& prefix, const KvTxn::ScanFn& fn) override {
    // Paged, each page in its own read transaction, so a long scan holds no
    // snapshot and fn may run transactions of its own.
    std::string after;
    bool more = true;
    while (more) {
      std::vector<std::pair<std::string, std::string>> page;
      STRATA_RETURN_IF_ERROR(Txn(
          [&](KvTxn& t) {
            page.clear();
            t.Scan(prefix, after, 1000, false, [&](const std::string& k, const std::string& v) {
              page.emplace_back(k, v);
              return true;
            });
            return Status::Ok();
          },
          true));
      if (page.size() < 1000) more = false;
      for (auto& [k, v] : page) {
        if (!fn(k, v)) return Status::Ok();
      }
      if (!page.empty()) after = page.back().first;
    }
    return Status::Ok();
  }

  Status DeleteAll() override {
    std::lock_guard<std::mutex> lock(write_mu_);
    return writer_->Exec("DELETE FROM kv");
  }

  Status Sync() override {
    if (sync_ == "FULL") return Status::Ok();  // every commit fsynced the WAL
    std::lock_guard<std::mutex> lock(write_mu_);
    // One commit with synchronous=FULL fsyncs the WAL, and with it every frame
    // committed before (a checkpoint would skip the fsync while a reader holds
    // an old snapshot).
    STRATA_RETURN_IF_ERROR(writer_->Exec("PRAGMA synchronous=FULL"));
    Status st = Run(writer_.get(),
                    [](KvTxn& t) {
                      t.Set("Msync", "");
                      return Status::Ok();
                    },
                    false);
    Status back = writer_->Exec("PRAGMA synchronous=NORMAL");
    return st.ok() ? back : st;
  }

 private:
  // Group commit. Write transactions arriving while another group commits
  // queue up; the first of them leads: it runs every queued body in one
  // SQLite transaction, each inside a savepoint (a body that fails is rolled
  // back to its savepoint alone, as if it ran by itself), commits once, and
  // hands each caller its own status. Bodies run in arrival order, each seeing
  // the writes of those before it, so the outcome is a serial order of the
  // transactions; with sync=full the group shares one fsync of the WAL.
  struct Pending {
    const std::function<Status(KvTxn&)>* body;
    Status st;
    bool done = false;
  };

  Status GroupWrite(const std::function<Status(KvTxn&)>& body) {
    Pending me{&body};
    std::unique_lock<std::mutex> lk(group_mu_);
    group_queue_.push_back(&me);
    group_cv_.wait(lk, [&] { return me.done || !group_leader_; });
    if (me.done) return me.st;
    group_leader_ = true;
    while (!me.done) {
      std::vector<Pending*> batch;
      while (!group_queue_.empty() && batch.size() < kMaxGroup) {
        batch.push_back(group_queue_.front());
        group_queue_.pop_front();
      }
      lk.unlock();
      {
        std::lock_guard<std::mutex> w(write_mu_);
        RunGroup(batch);
      }
      lk.lock();
      for (Pending* p : batch) p->done = true;
      group_cv_.notify_all();
    }
    group_leader_ = false;
    group_cv_.notify_all();
    return me.st;
  }

  // With write_mu_ held. A backend failure anywhere (an error thrown by a
  // body, a savepoint or the commit) rolls the whole group back and runs each
  // body again on its own, so that failure is charged to its own transaction.
  void RunGroup(const std::vector<Pending*>& batch) {
    Conn* c = writer_.get();
    if (batch.size() == 1) {
      batch[0]->st = Run(c, *batch[0]->body, false);
      if (batch[0]->st.ok()) commits_.fetch_add(1);
      return;
    }
    Status st = Begin(c, false);
    if (!st.ok()) {
      for (Pending* p : batch) p->st = st;
      return;
    }
    SqliteTxn txn(c);
    bool failed = false;
    for (Pending* p : batch) {
      if (!c->Step(c->savepoint_.get(), "SAVEPOINT").ok()) {
        failed = true;
        break;
      }
      try {
        p->st = (*p->body)(txn);
      } catch (const std::exception&) {
        failed = true;
        break;
      }
      const bool undone = p->st.ok() || (c->Step(c->rollback_to_.get(), "ROLLBACK TO").ok());
      if (!undone || !c->Step(c->release_.get(), "RELEASE").ok()) {
        failed = true;
        break;
      }
    }
    if (!failed && c->Step(c->commit_.get(), "COMMIT").ok()) {
      commits_.fetch_add(1);
      return;
    }
    (void)c->Step(c->rollback_.get(), "ROLLBACK");
    for (Pending* p : batch) {
      p->st = Run(c, *p->body, false);
      if (p->st.ok()) commits_.fetch_add(1);
    }
  }

  static Status Begin(Conn* c, bool read_only) {
    Status st;
    for (int attempt = 0;; ++attempt) {
      st = read_only ? c->Step(c->begin_.get(), "BEGIN") : c->Step(c->begin_write_.get(), "BEGIN IMMEDIATE");
      if (st.ok()) return st;
      if (attempt >= 100) return st;  // busy beyond busy_timeout: another process holds it
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  static Status Run(Conn* c, const std::function<Status(KvTxn&)>& body, bool read_only) {
    Status st = Begin(c, read_only);
    if (!st.ok()) return st;
    SqliteTxn txn(c);
    try {
      st = body(txn);
    } catch (const KvError& e) {
      st = e.status;
    } catch (const std::exception& e) {
      st = Status::Internal(std::string("metadata transaction: ") + e.what());
    }
    if (!st.ok() || read_only) {
      (void)c->Step(c->rollback_.get(), "ROLLBACK");
      return st;
    }
    st = c->Step(c->commit_.get(), "COMMIT");
    if (!st.ok()) (void)c->Step(c->rollback_.get(), "ROLLBACK");
    return st;
  }

  static int WalHook(void* self, sqlite3*, const char*, int pages) {
    auto* kv = static_cast<SqliteKV*>(self);
    if (pages >= kCheckpointPages) {
      std::lock_guard<std::mutex> lock(kv->ckpt_mu_);
      kv->ckpt_wanted_ = true;
      kv->ckpt_cv_.notify_all();
    }
    return SQLITE_OK;
  }

  void CheckpointLoop() {
    Conn c;
    bool open = false;
    std::unique_lock<std::mutex> lock(ckpt_mu_);
    for (;;) {
      ckpt_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return ckpt_stop_ || ckpt_wanted_; });
      if (ckpt_stop_) return;
      ckpt_wanted_ = false;
      lock.unlock();
      if (!open) open = c.Open(path_, sync_, false).ok();
      // PASSIVE: never waits for readers or the writer; what it cannot copy
      // now it copies next time.
      if (open) (void)sqlite3_wal_checkpoint_v2(c.db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      lock.lock();
    }
  }

  static constexpr int kCheckpointPages = 1000;  // SQLite's own default threshold

  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_;  // with ckpt_mu_
  bool ckpt_wanted_ = false;         // guarded by ckpt_mu_
  bool ckpt_stop_ = false;           // guarded by ckpt_mu_
  std::thread checkpointer_;

  std::string path_, sync_;
  std::mutex write_mu_;
  std::unique_ptr<Conn> writer_;  // guarded by write_mu_
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Conn>> readers_;  // idle reader connections, guarded by readers_mu_

  static constexpr size_t kMaxGroup = 64;
  std::mutex group_mu_;
  std::condition_variable group_cv_;  // with group_mu_
  std::deque<Pending*> group_queue_;  // guarded by group_mu_
  bool group_leader_ = false;         // guarded by group_mu_
  std::atomic<uint64_t> commits_{0};
};

}  // namespace

Result<std::unique_ptr<TxnKV>> OpenSqliteKV(const std::string& path) {
  auto kv = std::make_unique<SqliteKV>();
  STRATA_RETURN_IF_ERROR(kv->Open(path));
  return std::unique_ptr<TxnKV>(std::move(kv));
}

}  // namespace strata::fsmeta
