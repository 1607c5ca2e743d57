// Faults injected at the file layer (core/fault_injection.h, through the
// fsmeta SQLite VFS) under the FS metadata on SQLite: a full disk (ENOSPC
// after a short write) or a failing device (EIO) while a transaction writes
// the WAL fails that operation with an error naming the database, leaves the
// committed metadata as it was (also after reopening), and operations succeed
// again once the fault clears. The same for an fsync of the WAL that fails.
#include <sys/stat.h>

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include <strata/core/fault_injection.h>
#include <strata/fsmeta/meta_engine.h>

#include "testutil/testutil.h"

namespace strata::fsmeta {
namespace {

class SqliteFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(m_, OpenMeta(url_));
    Format f;
    f.name = "faults";
    f.storage = "mem://";
    f.trash_days = 0;
    ASSERT_OK(m_->Init(f, false));
    ASSERT_OK(m_->NewSession(SessionInfo{}).status());
    ASSERT_OK(m_->Mkdir(ctx_, kRootIno, "kept", 0755, 0).status());
  }
  void TearDown() override { fault::ClearFaults(); }

  void CheckFailedMkdir(fault::WriteFault f, StatusCode want) {
    CheckFailedMkdir([&] { fault::InjectWriteFault(std::move(f)); }, want);
  }
  void CheckFailedMkdir(const std::function<void()>& arm, StatusCode want) {
    const uint64_t before = fault::FaultsInjected();
    arm();
    auto r = m_->Mkdir(ctx_, kRootIno, "lost", 0755, 0);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(want, r.error().code()) << r.error().ToString();
    EXPECT_NE(std::string::npos, r.error().ToString().find(db_)) << r.error().ToString();
    EXPECT_LT(before, fault::FaultsInjected());
    fault::ClearFaults();
    // Nothing of the failed transaction is visible; the disk works again.
    EXPECT_EQ(StatusCode::kNotFound, m_->Lookup(ctx_, kRootIno, "lost").status().code());
    ASSERT_OK(m_->Lookup(ctx_, kRootIno, "kept").status());
    ASSERT_OK(m_->Mknod(ctx_, kRootIno, "after", S_IFREG | 0644, 0, 0).status());
    m_.reset();
    ASSERT_OK_AND_ASSIGN(m_, OpenMeta(url_));
    ASSERT_OK(m_->Lookup(ctx_, kRootIno, "kept").status());
    ASSERT_OK(m_->Lookup(ctx_, kRootIno, "after").status());
    EXPECT_EQ(StatusCode::kNotFound, m_->Lookup(ctx_, kRootIno, "lost").status().code());
    ASSERT_OK(m_->Mkdir(ctx_, kRootIno, "lost", 0755, 0).status());
  }

  ::strata::testing::TempDir dir_{"strata-sqlite-fault"};
  const std::string db_ = dir_.Join("meta.db");
  std::string url_ = "sqlite3://" + db_;
  Context ctx_;
  std::unique_ptr<MetaEngine> m_;
};

TEST_F(SqliteFaultTest, EnospcShortWriteOfTheWalFailsTheTransaction) {
  CheckFailedMkdir({.path_contains = db_ + "-wal", .err = ENOSPC, .written_first = 100},
                   StatusCode::kResourceExhausted);
}

TEST_F(SqliteFaultTest, EioOnTheSecondWalWriteFailsTheTransaction) {
  CheckFailedMkdir({.path_contains = db_ + "-wal", .skip = 1, .err = EIO}, StatusCode::kIOError);
}

// With sync=full every commit fsyncs the WAL; that fsync reports EIO. The
// transaction fails naming the database and is not visible (SQLite returns
// the error instead of retrying the fsync, and the next transaction
// overwrites its frames), also not after reopening; the next one commits.
TEST_F(SqliteFaultTest, FsyncEioOfTheWalFailsTheTransaction) {
  m_.reset();
  url_ += "?sync=full";
  ASSERT_OK_AND_ASSIGN(m_, OpenMeta(url_));
  CheckFailedMkdir(
      [&] { fault::InjectSyncFault({.path_contains = db_ + "-wal", .err = EIO, .times = 1}); },
      StatusCode::kIOError);
}

}  // namespace
}  // namespace strata::fsmeta
