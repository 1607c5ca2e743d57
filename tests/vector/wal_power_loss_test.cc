// Power loss under the vector WAL, simulated by core's fault-injection seam
// (fault::TrackUnsyncedWrites / WriteCrashImage): a crash image keeps only
// what fdatasync made durable. Every record whose Sync returned survives;
// records appended but not synced are dropped, or torn (a prefix kept), and
// reopening cuts the torn tail, replays the rest and appends after it.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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

class WalPowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override { fault::TrackUnsyncedWrites(true); }
  void TearDown() override { fault::TrackUnsyncedWrites(false); }
  // Appends "a" and "b" (synced) and "unsynced-c" (not), then cuts the power.
  fault::CrashImageStats CrashAfterAnUnsyncedAppend(uint64_t keep) {
    std::vector<Rec> none;
    auto w = OpenWal(dir_, &none);
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return {};
    EXPECT_TRUE((*w)->Append(1, "a").ok());
    auto b = (*w)->Append(1, "b");
    EXPECT_TRUE(b.ok() && (*w)->Sync(*b).ok());
    EXPECT_TRUE((*w)->Append(1, "unsynced-c").ok());
    auto img = fault::WriteCrashImage(dir_, image_, keep);
    EXPECT_TRUE(img.ok()) << img.error().ToString();
    return img.ok() ? *img : fault::CrashImageStats{};
  }
  ::strata::testing::TempDir tmp_;
  const std::string dir_ = tmp_.Join("wal");
  const std::string image_ = tmp_.Join("after-power-loss");
};

TEST_F(WalPowerLossTest, UnsyncedRecordIsDroppedSyncedOnesSurvive) {
  const fault::CrashImageStats st = CrashAfterAnUnsyncedAppend(0);
  EXPECT_EQ(1u, st.files);
  EXPECT_EQ(1u, st.files_cut);
  EXPECT_EQ(17u + 10u, st.bytes_dropped);  // record head + "unsynced-c"
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(image_, &recs));
  ASSERT_EQ(2u, recs.size());
  EXPECT_EQ("a", recs[0].body);
  EXPECT_EQ("b", recs[1].body);
  ASSERT_OK_AND_ASSIGN(uint64_t next, w->Append(1, "after"));
  EXPECT_EQ(recs[1].lsn + 1, next);
}

TEST_F(WalPowerLossTest, TornUnsyncedRecordIsCutAtReopen) {
  const fault::CrashImageStats st = CrashAfterAnUnsyncedAppend(9);  // 9 of its 27 bytes
  EXPECT_EQ(18u, st.bytes_dropped);
  std::vector<Rec> recs;
  {
    ASSERT_OK_AND_ASSIGN(auto w, OpenWal(image_, &recs));
    ASSERT_EQ(2u, recs.size());
    EXPECT_EQ("b", recs[1].body);
    ASSERT_OK_AND_ASSIGN(uint64_t next, w->Append(1, "after"));
    EXPECT_EQ(recs[1].lsn + 1, next);
    ASSERT_OK(w->Sync(next));
  }
  recs.clear();
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(image_, &recs));
  ASSERT_EQ(3u, recs.size());
  EXPECT_EQ("after", recs[2].body);
}

// Group commit: four writers append and Sync while the power is cut at some
// instant; every record acknowledged (Sync returned) before that instant is in
// the image, and the image replays as an unbroken lsn sequence.
TEST_F(WalPowerLossTest, EveryAcknowledgedRecordOfConcurrentWritersSurvives) {
  std::vector<Rec> none;
  ASSERT_OK_AND_ASSIGN(auto w, OpenWal(dir_, &none));
  std::mutex mu;
  std::set<std::string> acked;  // guarded by mu
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string body = std::to_string(t) + "/" + std::to_string(i);
        auto lsn = w->Append(1, body);
        if (!lsn.ok() || !w->Sync(*lsn).ok()) return;
        std::lock_guard<std::mutex> l(mu);
        acked.insert(body);
      }
    });
  }
  for (bool enough = false; !enough;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> l(mu);
    enough = acked.size() >= 200;
  }
  std::set<std::string> acked_before;
  {
    std::lock_guard<std::mutex> l(mu);
    acked_before = acked;
  }
  auto img = fault::WriteCrashImage(dir_, image_);
  stop = true;
  for (auto& th : writers) th.join();
  ASSERT_OK(img);
  w.reset();
  std::vector<Rec> recs;
  ASSERT_OK_AND_ASSIGN(auto again, OpenWal(image_, &recs));
  std::set<std::string> replayed;
  for (size_t i = 0; i < recs.size(); ++i) {
    replayed.insert(recs[i].body);
    if (i > 0) EXPECT_EQ(recs[i - 1].lsn + 1, recs[i].lsn);
  }
  for (const std::string& b : acked_before) EXPECT_TRUE(replayed.count(b)) << b << " was lost";
}

}  // namespace
}  // namespace strata::vector
