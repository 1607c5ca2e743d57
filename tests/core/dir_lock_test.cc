#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/core/dir_lock.h>

#include "testutil/testutil.h"

namespace strata {
namespace {

using ::strata::testing::ReadFileOrEmpty;
using ::strata::testing::TempDir;

TEST(DirLockTest, SecondHolderIsRefusedWithThePid) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(DirLock first, DirLock::Open(dir.path(), "LOCK", "the thing", "stop it"));
  EXPECT_TRUE(first.held());
  EXPECT_EQ(ReadFileOrEmpty(dir.Join("LOCK")), fmt::format("{}\n", ::getpid()));
  // flock conflicts between two open file descriptions, in one process too.
  Result<DirLock> second = DirLock::Open(dir.path(), "LOCK", "the thing", "stop it");
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), StatusCode::kPreconditionFailed);
  const std::string msg = second.error().ToString();
  EXPECT_NE(msg.find(fmt::format("in use by process {}", ::getpid())), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.path()), std::string::npos) << msg;
  EXPECT_NE(msg.find("stop it"), std::string::npos) << msg;
}

TEST(DirLockTest, ReleasedWhenDestroyedOrMoved) {
  TempDir dir;
  {
    ASSERT_OK_AND_ASSIGN(DirLock a, DirLock::Open(dir.path(), "LOCK", "x", "y"));
    DirLock b = std::move(a);  // the lock moves with the object
    EXPECT_TRUE(b.held());
    EXPECT_FALSE(DirLock::Open(dir.path(), "LOCK", "x", "y").has_value());
  }
  ASSERT_OK_AND_ASSIGN(DirLock again, DirLock::Open(dir.path(), "LOCK", "x", "y"));
  EXPECT_TRUE(again.held());
}

TEST(DirLockTest, AKilledHolderLeavesNoStaleLock) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto l = DirLock::Open(dir.path(), "LOCK", "x", "y");
    const char c = l.has_value() ? '1' : '0';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // until SIGKILL
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  Result<DirLock> refused = DirLock::Open(dir.path(), "LOCK", "x", "y");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().ToString().find(fmt::format("process {}", child)), std::string::npos);
  ::kill(child, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_OK_AND_ASSIGN(DirLock mine, DirLock::Open(dir.path(), "LOCK", "x", "y"));
  EXPECT_TRUE(mine.held());
}

TEST(DirLockTest, MissingDirectoryIsAnErrorNamingIt) {
  TempDir dir;
  Result<DirLock> r = DirLock::Open(dir.Join("no/such/dir"), "LOCK", "x", "y");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().code(), StatusCode::kPreconditionFailed);
  EXPECT_NE(r.error().ToString().find("no/such/dir"), std::string::npos);
}

}  // namespace
}  // namespace strata
