// Faults injected at the file layer (core/fault_injection.h) under the vector
// WAL: a full disk (ENOSPC, with a short write first) or a failing device
// (EIO) fails the append with a clear error, leaves nothing half-written
// behind for later appends or replay, and appends resume once the fault clears.
#include <filesystem>
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

size_t LogFiles(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().extension() == ".log";
  return n;
}

// fdatasync of the log reports EIO (fsyncgate: Linux may have dropped the
// pages and reports it once). The waiting append fails; the log then refuses
// appends, syncs and rotation even after the device recovers, instead of
// retrying the fsync and acknowledging records that may not be on disk. A
// reopen replays what is there and appends go on in a fresh file.
TEST_F(WalFaultTest, FsyncEioPoisonsTheLogUntilReopen) {
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK_AND_ASSIGN(uint64_t a, w->Append(1, "acked"));
    ASSERT_OK(w->Sync(a));
    const uint64_t before = fault::FaultsInjected();
    fault::InjectSyncFault({.path_contains = ".log", .err = EIO, .times = 1});
    ASSERT_OK_AND_ASSIGN(uint64_t b, w->Append(1, "unsynced"));
    Status st = w->Sync(b);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(StatusCode::kIOError, st.code()) << st.ToString();
    EXPECT_NE(std::string::npos, st.ToString().find("fdatasync " + tmp_.path())) << st.ToString();
    EXPECT_EQ(before + 1, fault::FaultsInjected());
    // The device works again (times = 1), but nothing more is acknowledged.
    st = w->Sync(b);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(std::string::npos, st.ToString().find("reopen")) << st.ToString();
    auto c = w->Append(1, "refused");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(StatusCode::kIOError, c.error().code()) << c.error().ToString();
    EXPECT_FALSE(w->Rotate().ok());
    EXPECT_EQ(before + 1, fault::FaultsInjected());
  }
  EXPECT_EQ(2u, LogFiles(tmp_.path()));  // closing started a fresh file
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_GE(recs.size(), 1u);
    EXPECT_EQ("acked", recs[0].body);
    for (const Rec& r : recs) EXPECT_NE("refused", r.body);
    ASSERT_OK_AND_ASSIGN(uint64_t d, w->Append(1, "after"));
    EXPECT_GT(d, recs.back().lsn);
    ASSERT_OK(w->Sync(d));
  }
  EXPECT_EQ(2u, LogFiles(tmp_.path()));
  recs.clear();
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
  ASSERT_GE(recs.size(), 2u);
  EXPECT_EQ("acked", recs.front().body);
  EXPECT_EQ("after", recs.back().body);
}

// The same under a power-loss simulation that models the dropped pages: a
// file whose fsync failed never gets its un-synced bytes durable again. A log
// that kept appending to that file after a reopen would lose records it
// acknowledged later; the fresh file keeps them.
TEST_F(WalFaultTest, AfterAFailedFsyncLaterAcknowledgedRecordsSurvivePowerLoss) {
  fault::TrackUnsyncedWrites(true);
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK_AND_ASSIGN(uint64_t a, w->Append(1, "acked"));
    ASSERT_OK(w->Sync(a));
    fault::InjectSyncFault({.path_contains = ".log", .err = EIO, .times = 1});
    ASSERT_OK_AND_ASSIGN(uint64_t b, w->Append(1, "unsynced"));
    ASSERT_FALSE(w->Sync(b).ok());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(tmp_.path(), &recs));
    ASSERT_OK_AND_ASSIGN(uint64_t c, w->Append(1, "acked later"));
    ASSERT_OK(w->Sync(c));
    ::strata::testing::TempDir images;
    const std::string image = images.Join("image");
    ASSERT_OK_AND_ASSIGN(auto stats, fault::WriteCrashImage(tmp_.path(), image));
    EXPECT_GE(stats.files_cut, 1u);  // "unsynced" is gone from the image
    fault::TrackUnsyncedWrites(false);
    std::vector<Rec> after;
    ASSERT_OK_AND_ASSIGN(auto w2, OpenWal(image, &after));
    std::vector<std::string> bodies;
    for (const Rec& r : after) bodies.push_back(r.body);
    EXPECT_EQ((std::vector<std::string>{"acked", "acked later"}), bodies);
  }
}

}  // namespace
}  // namespace strata::vector
