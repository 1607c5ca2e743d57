// Faults injected at the file layer (core/fault_injection.h) under the vector
// WAL: a full disk (ENOSPC, with a short write first) or a failing device
// (EIO) fails the append with a clear error, leaves nothing half-written
// behind for later appends or replay, and appends resume once the fault clears.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/fault_injection.h>

#include "testutil/testutil.h"
#include "vector/wal.h"

namespace strata::vector {
namespace {

using internal::Wal;

struct Rec {
  uint64_t lsn;
  std::string body;
};

Result<std::unique_ptr<Wal>> OpenWal(const std::string& dir, std::vector<Rec>* out) {
  return Wal::Open(dir, 1, 1, true, [out](uint64_t lsn, uint8_t, std::string_view body) {
    out->push_back(Rec{lsn, std::string(body)});
    return Status::Ok();
  });
}

class WalFaultTest : public ::testing::Test {
 protected:
  void TearDown() override { fault::ClearFaults(); }
  ::strata::testing::TempDir tmp_;
};

TEST_F(WalFaultTest, EnospcShortWriteFailsTheAppendAndLeavesNoTornRecord) {
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK_AND_ASSIGN(uint64_t a, w->Append(1, "first"));
    ASSERT_OK(w->Sync(a));
    const uint64_t before = fault::FaultsInjected();
    fault::InjectWriteFault(
        {.path_contains = ".log", .err = ENOSPC, .written_first = 7, .times = 1});
    auto b = w->Append(1, std::string(1000, 'x'));
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(StatusCode::kResourceExhausted, b.error().code()) << b.error().ToString();
    EXPECT_NE(std::string::npos, b.error().ToString().find(".log")) << b.error().ToString();
    EXPECT_EQ(before + 1, fault::FaultsInjected());
    // The disk has room again: the next append takes the failed one's place.
    ASSERT_OK_AND_ASSIGN(uint64_t c, w->Append(1, "third"));
    EXPECT_EQ(a + 1, c);
    ASSERT_OK(w->Sync(c));
  }
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
  ASSERT_EQ(2u, recs.size());
  EXPECT_EQ("first", recs[0].body);
  EXPECT_EQ("third", recs[1].body);
  EXPECT_EQ(recs[0].lsn + 1, recs[1].lsn);
}

TEST_F(WalFaultTest, EioOnEveryWriteUntilItClears) {
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK(w->Append(1, "kept").status());
    fault::InjectWriteFault({.path_contains = "", .err = EIO});
    for (int i = 0; i < 3; ++i) {
      auto r = w->Append(1, "lost");
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(StatusCode::kIOError, r.error().code()) << r.error().ToString();
    }
    fault::ClearFaults();
    ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "after"));
    ASSERT_OK(w->Sync(lsn));
  }
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
  ASSERT_EQ(2u, recs.size());
  EXPECT_EQ("kept", recs[0].body);
  EXPECT_EQ("after", recs[1].body);
}

// Rotation writes the new file's header; when that write fails the WAL keeps
// appending to the old file, and what was acknowledged replays after reopen.
TEST_F(WalFaultTest, FailedRotationKeepsTheOldFile) {
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK(w->Append(1, "one").status());
    fault::InjectWriteFault({.path_contains = "0000000000000002.log", .err = ENOSPC, .times = 1});
    auto rot = w->Rotate();
    ASSERT_FALSE(rot.ok());
    EXPECT_EQ(StatusCode::kResourceExhausted, rot.error().code());
    ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "two"));
    ASSERT_OK(w->Sync(lsn));
    ASSERT_OK(w->Rotate().status());  // the fault has cleared
    ASSERT_OK_AND_ASSIGN(lsn, w->Append(1, "three"));
    ASSERT_OK(w->Sync(lsn));
  }
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
  ASSERT_EQ(3u, recs.size());
  EXPECT_EQ("one", recs[0].body);
  EXPECT_EQ("two", recs[1].body);
  EXPECT_EQ("three", recs[2].body);
}

// A rotation that failed part-way through the new file's header leaves no
// file that a reopen would take for a damaged log.
TEST_F(WalFaultTest, ReopenAfterAFailedRotation) {
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "one"));
    ASSERT_OK(w->Sync(lsn));
    fault::InjectWriteFault(
        {.path_contains = "0000000000000002.log", .err = ENOSPC, .written_first = 5, .times = 1});
    ASSERT_FALSE(w->Rotate().ok());
  }
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
  ASSERT_EQ(1u, recs.size());
  EXPECT_EQ("one", recs[0].body);
  ASSERT_OK_AND_ASSIGN(uint64_t lsn, w->Append(1, "two"));
  EXPECT_EQ(recs[0].lsn + 1, lsn);
}

}  // namespace
}  // namespace strata::vector
