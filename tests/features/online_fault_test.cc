// Faults under the feature online store while materializing. RocksDB: a full
// disk (ENOSPC after a short write) or a failing device (EIO) while writing
// rows, or an fsync that fails while the load is flushed, fails the
// materialization with an error naming the store; the values materialized
// before are still served (or, after the flush failed, the newer rows
// written before it), the view is not marked materialized
// (in memory and in the registry file), and the same materialization
// completes once the fault clears. Redis killed mid-materialize: a clear
// error, and the view it was writing is not marked materialized.
#include <string>

#include <gtest/gtest.h>

#include <strata/core/fault_injection.h>
#include <strata/features/online.h>
#include <strata/features/repo.h>

#include "features/online_repo.h"
#include "testutil/testutil.h"

namespace strata::features {
namespace {

using testrepo::kBase;
using testrepo::kH;
using testrepo::MakeRepo;

// driver 1's rate as served now (0.3 after [0, 5h], 0.8 after [0, 10h]).
Result<OnlineValue> Rate(const FeatureRepo& reg, OnlineStore* store) {
  STRATA_ASSIGN_OR_RETURN(auto feats, ResolveFeatureRefs(reg, {"stats:rate"}));
  STRATA_ASSIGN_OR_RETURN(
      OnlineResponse r, GetOnlineFeatures(reg, store, feats, {{"driver_id", {OnlineValue::Int(1)}}},
                                          false, kBase + 20 * kH));
  if (r.columns.size() != 2 || r.columns[1].values.empty()) {
    return Status::Internal("unexpected response shape");
  }
  return r.columns[1].values[0];
}

size_t SavedIntervals(const FeatureRepo& reg, const std::string& view) {
  auto saved = LoadRegistry(reg.config.registry_path);
  EXPECT_OK(saved);
  if (!saved.ok()) return 0;
  return saved->FindView(view)->materialization_intervals.size();
}

class OnlineStoreFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_ = MakeRepo(dir_.path(), "  type: rocksdb\n  path: data/online\n");
    ASSERT_OK_AND_ASSIGN(store_, OpenOnlineStore(reg_.config));
    MaterializeOptions first;
    first.start_us = kBase;
    first.end_us = kBase + 5 * kH;
    ASSERT_OK(Materialize(&reg_, store_.get(), first, nullptr));
    ASSERT_OK_AND_ASSIGN(OnlineValue v, Rate(reg_, store_.get()));
    ASSERT_EQ(OnlineValue::Double(0.3), v);
  }
  void TearDown() override { fault::ClearFaults(); }

  // Materializes [0, 10h] under the armed fault, expects `want`, then again
  // once the fault is cleared. `rows_written`: the fault comes after the rows
  // reached the store (the flush that ends the load), so the newer value may
  // be served already; the view must still not be marked.
  void CheckFailedMaterialize(StatusCode want, bool rows_written = false) {
    const uint64_t before = fault::FaultsInjected();
    MaterializeOptions second;
    second.start_us = kBase;
    second.end_us = kBase + 10 * kH;
    second.views = {"stats"};
    Status st = Materialize(&reg_, store_.get(), second, nullptr);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(want, st.code()) << st.ToString();
    EXPECT_NE(std::string::npos, st.ToString().find(dir_.Join("data/online"))) << st.ToString();
    EXPECT_LT(before, fault::FaultsInjected());
    fault::ClearFaults();
    // What was materialized before is served; the view is not marked.
    ASSERT_OK_AND_ASSIGN(OnlineValue v, Rate(reg_, store_.get()));
    if (rows_written) {
      EXPECT_TRUE(v == OnlineValue::Double(0.3) || v == OnlineValue::Double(0.8)) << v.d;
    } else {
      EXPECT_EQ(OnlineValue::Double(0.3), v) << v.d;
    }
    EXPECT_EQ(1u, reg_.FindView("stats")->materialization_intervals.size());
    EXPECT_EQ(1u, SavedIntervals(reg_, "stats"));
    // The retry completes.
    ASSERT_OK(Materialize(&reg_, store_.get(), second, nullptr));
    ASSERT_OK_AND_ASSIGN(v, Rate(reg_, store_.get()));
    EXPECT_EQ(OnlineValue::Double(0.8), v);
    EXPECT_EQ(2u, SavedIntervals(reg_, "stats"));
    // And it survives reopening the store.
    store_.reset();
    ASSERT_OK_AND_ASSIGN(store_, OpenOnlineStore(reg_.config));
    ASSERT_OK_AND_ASSIGN(v, Rate(reg_, store_.get()));
    EXPECT_EQ(OnlineValue::Double(0.8), v);
  }

  ::strata::testing::TempDir dir_{"strata-online-fault"};
  FeatureRepo reg_;
  std::unique_ptr<OnlineStore> store_;
};

TEST_F(OnlineStoreFaultTest, RocksDbEnospcShortWriteDuringMaterialize) {
  fault::InjectWriteFault(
      {.path_contains = dir_.Join("data/online"), .err = ENOSPC, .written_first = 10});
  CheckFailedMaterialize(StatusCode::kResourceExhausted);
}

TEST_F(OnlineStoreFaultTest, RocksDbEioDuringMaterialize) {
  fault::InjectWriteFault({.path_contains = dir_.Join("data/online"), .err = EIO});
  CheckFailedMaterialize(StatusCode::kIOError);
}

TEST_F(OnlineStoreFaultTest, RocksDbFsyncEioWhileTheLoadIsFlushed) {
  fault::InjectSyncFault({.path_contains = dir_.Join("data/online"), .err = EIO});
  CheckFailedMaterialize(StatusCode::kIOError, /*rows_written=*/true);
}

TEST(OnlineStoreRedisFaultTest, RedisKilledMidMaterializeMarksNoPartialView) {
  ::strata::testing::TempDir dir("strata-redis-fault");
  ::strata::testing::RedisServer redis;
  ASSERT_OK(redis.Start()) << "redis-server did not come up (is it installed?)";
  FeatureRepo reg =
      MakeRepo(dir.path(), "  type: redis\n  connection_string: \"" + redis.host_port() + "\"\n");
  ASSERT_OK_AND_ASSIGN(auto store, OpenOnlineStore(reg.config));
  MaterializeOptions opt;
  opt.start_us = kBase;
  opt.end_us = kBase + 5 * kH;
  opt.threads = 1;  // one view after the other
  std::string first, killed_in;
  opt.progress = [&](const std::string& view, int64_t, int64_t) {
    if (first.empty()) first = view;
    if (view != first && killed_in.empty()) {
      killed_in = view;  // the first view is written; the second is being scanned
      redis.Kill();
    }
  };
  Status st = Materialize(&reg, store.get(), opt, nullptr);
  ASSERT_FALSE(killed_in.empty());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kIOError)
      << st.ToString();
  EXPECT_NE(std::string::npos, st.ToString().find("redis")) << st.ToString();
  EXPECT_NE(std::string::npos, st.ToString().find("\"" + killed_in + "\"")) << st.ToString();
  // The view being written when Redis died is not marked, in memory or on disk;
  // the one completed before is.
  EXPECT_TRUE(reg.FindView(killed_in)->materialization_intervals.empty());
  EXPECT_EQ(0u, SavedIntervals(reg, killed_in));
  EXPECT_EQ(1u, reg.FindView(first)->materialization_intervals.size());
  EXPECT_EQ(1u, SavedIntervals(reg, first));
}

}  // namespace
}  // namespace strata::features
