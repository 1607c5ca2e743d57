// Across metadata engines: a volume dumped from one engine and loaded into
// another (SQLite -> PostgreSQL -> Redis -> SQLite) keeps every record; a
// client process killed with its locks and open files is cleaned up by
// another client on each engine; and PostgreSQL-specific behaviour
// (serialization failures rerun the transaction, dropped connections are
// replaced). The servers are started by the tests (skipped where the
// PostgreSQL binaries are not installed).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/fsmeta/meta_engine.h>

#include "fsmeta/kv.h"
#include "testutil/postgres_server.h"
#include "testutil/testutil.h"

namespace strata::fsmeta {
namespace {

using strata::testing::SharedPostgres;
using strata::testing::TempDir;

strata::testing::RedisServer* Redis() {
  static strata::testing::RedisServer server;
  static bool ok = server.Start().ok();
  return ok ? &server : nullptr;
}

// The PostgreSQL server, or a skip (binaries missing) / failure (did not start).
#define REQUIRE_POSTGRES(pg)                                                           \
  Status pg##_why;                                                                     \
  auto* pg = SharedPostgres(&pg##_why);                                                \
  if (!pg) {                                                                           \
    if (pg##_why.code() == StatusCode::kNotFound) GTEST_SKIP() << pg##_why.ToString(); \
    FAIL() << "postgres did not start: " << pg##_why.ToString();                       \
  }

std::unique_ptr<MetaEngine> Fresh(const std::string& url) {
  auto m = OpenMeta(url);
  EXPECT_OK(m);
  if (!m.has_value()) return nullptr;
  EXPECT_OK((*m)->Destroy());
  return std::move(*m);
}

TEST(EnginesTest, DumpLoadRoundTripSqlitePostgresRedis) {
  REQUIRE_POSTGRES(pg);
  ASSERT_NE(Redis(), nullptr) << "redis-server did not start";
  TempDir dir("fsmeta-engines");
  auto src = Fresh("sqlite3://" + dir.Join("a.db"));
  ASSERT_NE(src, nullptr);
  Format f;
  f.name = "roundtrip";
  f.storage = "mem://";
  f.trash_days = 0;
  ASSERT_OK(src->Init(f, false));
  Context root;
  ASSERT_OK_AND_ASSIGN(Entry d, src->Mkdir(root, kRootIno, "dir", 0755, 0));
  ASSERT_OK_AND_ASSIGN(Entry file, src->Mknod(root, d.ino, "file", S_IFREG | 0640, 0, 0));
  ASSERT_OK(src->Write(file.ino, 0, 0, Slice{7, 100, 0, 100, 0}, 1));
  ASSERT_OK(src->Write(file.ino, 3, 5, Slice{8, 100, 10, 50, 0}, 2));
  ASSERT_OK(src->Symlink(root, kRootIno, "ln", "dir/file").status());
  ASSERT_OK(src->Link(root, file.ino, kRootIno, "hard").status());
  ASSERT_OK(src->SetXattr(root, file.ino, "user.bin", std::string("\x00\xff\x01", 3), 0));
  ASSERT_OK(src->Mknod(root, d.ino, std::string("n\xff\x01z", 4), S_IFIFO | 0600, 0, 0).status());
  for (int i = 0; i < 1500; ++i) {  // more than one page of every engine's scans
    ASSERT_OK(src->Mknod(root, d.ino, "f" + std::to_string(i), S_IFREG | 0644, 0, 0).status());
  }
  std::ostringstream first;
  ASSERT_OK(src->Dump(first));

  std::string text = first.str();
  const std::vector<std::string> chain = {
      pg->Url("v7"), "redis://127.0.0.1:" + std::to_string(Redis()->port()) + "/7",
      "sqlite3://" + dir.Join("b.db")};
  for (const auto& url : chain) {
    SCOPED_TRACE(url);
    auto m = Fresh(url);
    ASSERT_NE(m, nullptr);
    std::istringstream in(text);
    ASSERT_OK(m->Load(in));
    ASSERT_OK_AND_ASSIGN(auto problems, m->Check(CheckOptions{}));
    EXPECT_TRUE(problems.empty());
    ASSERT_OK_AND_ASSIGN(Entry e, m->Lookup(root, d.ino, std::string("n\xff\x01z", 4)));
    EXPECT_TRUE(S_ISFIFO(e.attr.mode));
    ASSERT_OK_AND_ASSIGN(auto slices, m->Read(file.ino, 3));
    ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices[0].id, 8u);
    std::ostringstream out;
    ASSERT_OK(m->Dump(out));
    EXPECT_EQ(out.str(), text);
    text = out.str();
    ASSERT_OK(m->Destroy());
  }
}

// Serializable transactions that read a key and write it back (no blind
// increment): lost updates would show as a final count below the sum, so
// every conflict PostgreSQL reports must have rerun the body.
TEST(EnginesTest, PostgresSerializationFailuresRerunTheBody) {
  REQUIRE_POSTGRES(pg);
  constexpr int kThreads = 8, kEach = 60;
  std::vector<std::unique_ptr<TxnKV>> kvs;
  for (int i = 0; i < 2; ++i) {  // two clients, as two mounts
    ASSERT_OK_AND_ASSIGN(auto kv, OpenPostgresKV(pg->Url("v8")));
    kvs.push_back(std::move(kv));
  }
  ASSERT_OK(kvs[0]->DeleteAll());
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TxnKV& kv = *kvs[t % 2];
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(kv.Txn(
            [&](KvTxn& txn) {
              ++runs;
              auto v = txn.Get("counter");
              txn.Set("counter", std::to_string((v ? std::stoll(*v) : 0) + 1));
              // A second key read and written in the same transaction.
              auto w = txn.Get("other");
              txn.Set("other", std::to_string((w ? std::stoll(*w) : 0) + 2));
              return Status::Ok();
            },
            false));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::optional<std::string> counter, other;
  ASSERT_OK(kvs[0]->Txn(
      [&](KvTxn& txn) {
        counter = txn.Get("counter");
        other = txn.Get("other");
        return Status::Ok();
      },
      true));
  ASSERT_TRUE(counter && other);
  EXPECT_EQ(std::stoll(*counter), kThreads * kEach);
  EXPECT_EQ(std::stoll(*other), 2 * kThreads * kEach);
  EXPECT_GE(runs.load(), kThreads * kEach);
  // Blind increments and appends, from both clients, concurrently.
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(kvs[t % 2]->Txn(
            [&](KvTxn& txn) {
              txn.IncrBy("blind", 3);
              txn.Append("log", "x");
              return Status::Ok();
            },
            false));
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK_AND_ASSIGN(int64_t blind, kvs[1]->Incr("blind", 0));
  EXPECT_EQ(blind, 3 * kThreads * kEach);
  ASSERT_OK(kvs[0]->Txn(
      [&](KvTxn& txn) {
        auto log = txn.Get("log");
        EXPECT_EQ(log ? log->size() : 0u, static_cast<size_t>(kThreads * kEach));
        return Status::Ok();
      },
      true));
  ASSERT_OK(kvs[0]->DeleteAll());
}

// The server ends every client connection (a restart, an administrator's
// pg_terminate_backend): the next operations reconnect instead of failing.
TEST(EnginesTest, PostgresReconnectsAfterTerminatedConnections) {
  REQUIRE_POSTGRES(pg);
  auto m = Fresh(pg->Url("v9"));
  ASSERT_NE(m, nullptr);
  Format f;
  f.name = "reconnect";
  ASSERT_OK(m->Init(f, false));
  ASSERT_OK(m->NewSession(SessionInfo{}).status());
  Context root;
  ASSERT_OK(m->Mknod(root, kRootIno, "before", S_IFREG | 0644, 0, 0).status());
  const std::string kill_all =
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'v9' AND pid <> "
      "pg_backend_pid()";
  ASSERT_OK(pg->Sql("postgres", kill_all));
  ASSERT_OK(m->Mknod(root, kRootIno, "after", S_IFREG | 0644, 0, 0).status());
  ASSERT_OK(m->Lookup(root, kRootIno, "before").status());
  ASSERT_OK(pg->Sql("postgres", kill_all));
  ASSERT_OK(m->NewSliceId().status());
  ASSERT_OK(pg->Sql("postgres", kill_all));
  ASSERT_OK_AND_ASSIGN(auto sessions, m->ListSessions());
  EXPECT_EQ(sessions.size(), 1u);
  ASSERT_OK(m->Destroy());
}

// Both URL schemes reach PostgreSQL; a server that cannot be reached is an
// Unavailable error that names the URL without its password.
TEST(EnginesTest, PostgresUrlsAndConnectionErrors) {
  REQUIRE_POSTGRES(pg);
  std::string url = pg->Url("v4");
  ASSERT_OK_AND_ASSIGN(auto a, OpenMeta(url));
  EXPECT_OK(a->Destroy());
  ASSERT_OK_AND_ASSIGN(auto b, OpenMeta("postgresql://" + url.substr(strlen("postgres://"))));
  EXPECT_OK(b->Destroy());
  const int closed = strata::testing::FreePort();
  auto bad = OpenMeta("postgres://strata:s3cretpw@127.0.0.1:" + std::to_string(closed) +
                      "/v4?connect_timeout=2");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(bad.error().ToString().find("s3cretpw"), std::string::npos) << bad.error().ToString();
  EXPECT_NE(bad.error().ToString().find("strata:***@127.0.0.1"), std::string::npos)
      << bad.error().ToString();
}

// A client process killed (kill -9) while it holds a flock, a POSIX lock and
// an unlinked open file: another client's CleanStaleSessions drops its locks
// and frees the file, on every engine.
class DeadClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Url() {
    if (GetParam() == "redis") return "redis://127.0.0.1:" + std::to_string(Redis()->port()) + "/6";
    if (GetParam() == "postgres") return SharedPostgres()->Url("v6");
    return "sqlite3://" + dir_.Join("meta.db");
  }
  TempDir dir_{"fsmeta-dead"};
};

TEST_P(DeadClientTest, StaleSessionOfAKilledClientIsCleanedUp) {
  if (GetParam() == "postgres") {
    REQUIRE_POSTGRES(pg);
  }
  if (GetParam() == "redis") ASSERT_NE(Redis(), nullptr) << "redis-server did not start";
  const std::string url = Url();
  auto m = Fresh(url);
  ASSERT_NE(m, nullptr);
  Format f;
  f.name = "dead";
  f.trash_days = 0;
  ASSERT_OK(m->Init(f, false));
  ASSERT_OK(m->NewSession(SessionInfo{}).status());
  Context root;
  ASSERT_OK_AND_ASSIGN(Entry lk, m->Mknod(root, kRootIno, "locked", S_IFREG | 0644, 0, 0));
  ASSERT_OK_AND_ASSIGN(Entry gone, m->Mknod(root, kRootIno, "gone", S_IFREG | 0644, 0, 0));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto c = OpenMeta(url);
    if (!c) _exit(2);
    Context r;
    if (!(*c)->NewSession(SessionInfo{}).has_value()) _exit(3);
    if (!(*c)->Flock(r, lk.ino, 1, F_WRLCK, false).ok()) _exit(4);
    if (!(*c)->Setlk(r, lk.ino, 1, false, LockRange{F_WRLCK, 0, 99, 42}).ok()) _exit(5);
    if (!(*c)->Open(r, gone.ino, O_RDONLY).ok()) _exit(6);
    if (!(*c)->Unlink(r, kRootIno, "gone").ok()) _exit(7);
    char ok = 1;
    if (write(fds[1], &ok, 1) != 1) _exit(8);
    pause();  // killed here, without closing its session
    _exit(0);
  }
  close(fds[1]);
  char ok = 0;
  ASSERT_EQ(read(fds[0], &ok, 1), 1) << "the child client failed";
  close(fds[0]);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);

  EXPECT_EQ(ErrnoOf(m->Flock(root, lk.ino, 9, F_WRLCK, false)), EAGAIN);
  EXPECT_EQ(ErrnoOf(m->Setlk(root, lk.ino, 9, false, LockRange{F_RDLCK, 10, 20, 1})), EAGAIN);
  ASSERT_OK(m->GetAttr(gone.ino).status());  // sustained by the dead client
  ASSERT_OK(m->Heartbeat());
  ASSERT_OK_AND_ASSIGN(auto sessions, m->ListSessions());
  EXPECT_EQ(sessions.size(), 2u);
  ASSERT_OK_AND_ASSIGN(int cleaned, m->CleanStaleSessions(0));
  EXPECT_EQ(cleaned, 1);
  EXPECT_OK(m->Flock(root, lk.ino, 9, F_WRLCK, false));
  EXPECT_OK(m->Setlk(root, lk.ino, 9, false, LockRange{F_RDLCK, 10, 20, 1}));
  EXPECT_EQ(ErrnoOf(m->GetAttr(gone.ino).status()), ENOENT);
  ASSERT_OK_AND_ASSIGN(auto after, m->ListSessions());
  EXPECT_EQ(after.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto problems, m->Check(CheckOptions{}));
  EXPECT_TRUE(problems.empty());
  ASSERT_OK(m->Destroy());
}

INSTANTIATE_TEST_SUITE_P(Backends, DeadClientTest, ::testing::Values("sqlite", "redis", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::fsmeta
