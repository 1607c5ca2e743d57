// Collections on an object store (remote.h): a writer publishes sealed
// segments and manifests with conditional PUTs, replicas follow them
// read-only, a second writer is refused, a writer that lost the store stops
// writing, and a restarted writer loses no acknowledged point.
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/objstore/object_store.h>
#include <strata/vector/collection.h>
#include <strata/vector/remote.h>

#include "testutil/testutil.h"

namespace strata::vector {
namespace {

constexpr uint32_t kDim = 8;

CollectionSchema Schema() {
  CollectionSchema s;
  VectorFieldSchema f;
  f.index.type = IndexType::kHnsw;
  f.index.dim = kDim;
  f.index.metric = Metric::kL2;
  f.index.hnsw_ef_construction = 32;
  s.vectors.push_back(f);
  return s;
}

CollectionOptions Defaults() {
  CollectionOptions o;
  o.background = false;
  o.segment_rows = 500;
  o.index_threads = 1;
  return o;
}

std::vector<float> Vec(uint64_t seed) {
  std::mt19937 rng(uint32_t(seed * 7919 + 1));
  std::normal_distribution<float> g;
  std::vector<float> v(kDim);
  for (auto& x : v) x = g(rng);
  return v;
}

std::vector<Point> Points(uint64_t from, uint64_t n) {
  std::vector<Point> out;
  for (uint64_t i = from; i < from + n; ++i) {
    Point p;
    p.id = PointId::Number(i);
    p.vectors.push_back({"", Vec(i)});
    p.payload = fmt::format("{{\"i\":{}}}", i);
    out.push_back(std::move(p));
  }
  return out;
}

class RemoteCollectionTest : public ::testing::Test {
 protected:
  VectorStorageOptions Storage(VectorStorageOptions::Role role) {
    VectorStorageOptions s;
    s.role = role;
    s.store = store_;
    s.endpoint = role == VectorStorageOptions::Role::kWriter ? "vector API test-writer:6333" : "";
    s.lease_ttl_ms = 60'000;
    s.publish_interval_ms = 3'600'000;  // the tests publish by hand
    s.poll_interval_ms = 3'600'000;     // and sync by hand
    s.cache.ram_capacity_bytes = 8 << 20;
    return s;
  }
  Result<std::unique_ptr<CollectionManager>> Writer(const std::string& sub = "writer") {
    return CollectionManager::Open(dir_.path() + "/" + sub, Defaults(),
                                   Storage(VectorStorageOptions::Role::kWriter));
  }
  Result<std::unique_ptr<CollectionManager>> Replica(const std::string& sub) {
    return CollectionManager::Open(dir_.path() + "/" + sub, Defaults(),
                                   Storage(VectorStorageOptions::Role::kReplica));
  }
  static std::vector<uint64_t> Ids(const std::vector<ScoredPoint>& r) {
    std::vector<uint64_t> out;
    for (const auto& p : r) out.push_back(p.record.id.lo);
    return out;
  }
  static std::vector<uint64_t> Search(Collection& c, uint64_t seed) {
    SearchRequest q;
    q.vector = Vec(seed + 100'000);
    q.limit = 10;
    auto r = c.Search(q);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? Ids(*r) : std::vector<uint64_t>{};
  }

  strata::testing::TempDir dir_;
  std::shared_ptr<objstore::ObjectStore> store_ = objstore::NewMemObjectStore("vecs");
};

TEST_F(RemoteCollectionTest, ReplicasSeeWhatTheWriterPublished) {
  ASSERT_OK_AND_ASSIGN(auto w, Writer());
  ASSERT_OK_AND_ASSIGN(auto wc, w->Create("docs", Schema()));
  ASSERT_OK(wc->Upsert(Points(0, 500)));
  ASSERT_OK(wc->Upsert(Points(500, 200)));
  // The segment sealed at 500 rows is published; 200 rows are still growing.
  ASSERT_OK_AND_ASSIGN(auto r1, Replica("r1"));
  ASSERT_OK_AND_ASSIGN(auto rc, r1->Get("docs"));
  ASSERT_OK_AND_ASSIGN(size_t before, rc->Count(std::nullopt));
  EXPECT_EQ(before, 500u);
  ASSERT_OK(wc->Publish());
  ASSERT_OK(r1->SyncNow());
  ASSERT_OK_AND_ASSIGN(rc, r1->Get("docs"));
  ASSERT_OK_AND_ASSIGN(size_t after, rc->Count(std::nullopt));
  EXPECT_EQ(after, 700u);
  ASSERT_OK_AND_ASSIGN(auto r2, Replica("r2"));
  ASSERT_OK_AND_ASSIGN(auto rc2, r2->Get("docs"));
  for (uint64_t q = 0; q < 20; ++q) {
    auto a = Search(*rc, q);
    EXPECT_EQ(a.size(), 10u);
    EXPECT_EQ(a, Search(*rc2, q));
    EXPECT_EQ(a, Search(*wc, q));
  }
  // Deletes reach replicas with the next manifest.
  std::vector<PointId> del = {PointId::Number(3), PointId::Number(650)};
  ASSERT_OK(wc->Delete(del));
  ASSERT_TRUE(wc->HasUnpublished());
  ASSERT_OK(wc->Publish());
  EXPECT_FALSE(wc->HasUnpublished());
  ASSERT_OK(r1->SyncNow());
  ASSERT_OK_AND_ASSIGN(rc, r1->Get("docs"));
  ASSERT_OK_AND_ASSIGN(size_t n, rc->Count(std::nullopt));
  EXPECT_EQ(n, 698u);
  ASSERT_OK_AND_ASSIGN(auto got, rc->Get(del, true, false));
  EXPECT_TRUE(got.empty());
  // A dropped collection leaves the replica.
  ASSERT_OK(w->Drop("docs"));
  ASSERT_OK(r1->SyncNow());
  EXPECT_FALSE(r1->Exists("docs"));
}

TEST_F(RemoteCollectionTest, ReplicaRefusesWritesNamingTheWriter) {
  ASSERT_OK_AND_ASSIGN(auto w, Writer());
  ASSERT_OK_AND_ASSIGN(auto wc, w->Create("docs", Schema()));
  ASSERT_OK_AND_ASSIGN(auto r, Replica("r"));
  ASSERT_OK_AND_ASSIGN(auto rc, r->Get("docs"));
  Status st = rc->Upsert(Points(0, 1));
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("read-only replica"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("test-writer:6333"), std::string::npos) << st.ToString();
  std::vector<PointId> ids = {PointId::Number(0)};
  EXPECT_EQ(rc->Delete(ids).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(rc->CreatePayloadIndex("i", PayloadType::kInteger).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(r->Create("other", Schema()).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(r->Drop("docs").code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r->ReadOnlyReason().find("test-writer"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(size_t n, rc->Count(std::nullopt));
  EXPECT_EQ(n, 0u);  // nothing changed
}

TEST_F(RemoteCollectionTest, SecondWriterIsRefusedAndRestartKeepsAcknowledgedPoints) {
  {
    ASSERT_OK_AND_ASSIGN(auto w, Writer());
    ASSERT_OK_AND_ASSIGN(auto wc, w->Create("docs", Schema()));
    ASSERT_OK(wc->Upsert(Points(0, 700)));  // 500 published, 200 only in the WAL

    auto second = Writer("other");
    ASSERT_FALSE(second.has_value());
    EXPECT_EQ(second.error().code(), StatusCode::kPreconditionFailed);
    EXPECT_NE(second.error().message().find("test-writer:6333"), std::string::npos)
        << second.error().ToString();
  }
  // The same writer (same root, same id) takes its lease back.
  ASSERT_OK_AND_ASSIGN(auto w, Writer());
  ASSERT_OK_AND_ASSIGN(auto wc, w->Get("docs"));
  ASSERT_OK_AND_ASSIGN(size_t n, wc->Count(std::nullopt));
  EXPECT_EQ(n, 700u);
  ASSERT_OK(wc->Publish());
  ASSERT_OK_AND_ASSIGN(auto r, Replica("r"));
  ASSERT_OK_AND_ASSIGN(auto rc, r->Get("docs"));
  ASSERT_OK_AND_ASSIGN(n, rc->Count(std::nullopt));
  EXPECT_EQ(n, 700u);
}

TEST_F(RemoteCollectionTest, WriterWhoseManifestWasReplacedStopsWriting) {
  ASSERT_OK_AND_ASSIGN(auto w, Writer());
  ASSERT_OK_AND_ASSIGN(auto wc, w->Create("docs", Schema()));
  ASSERT_OK(wc->Upsert(Points(0, 10)));
  // Another writer's publication: the MANIFEST's ETag is no longer ours.
  ASSERT_OK_AND_ASSIGN(std::string m, store_->GetBytes("docs/MANIFEST"));
  ASSERT_OK(store_->PutBytes("docs/MANIFEST", m + "x").status());
  Status st = wc->Publish();
  EXPECT_EQ(st.code(), StatusCode::kPreconditionFailed) << st.ToString();
  st = wc->Upsert(Points(10, 1));
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("another writer"), std::string::npos) << st.ToString();
  // What was acknowledged stays readable here.
  ASSERT_OK_AND_ASSIGN(size_t n, wc->Count(std::nullopt));
  EXPECT_EQ(n, 10u);
}

TEST_F(RemoteCollectionTest, NewWriterFetchesPublishedCollectionsAfterTheLeaseExpired) {
  VectorStorageOptions s = Storage(VectorStorageOptions::Role::kWriter);
  s.lease_ttl_ms = 300;
  {
    ASSERT_OK_AND_ASSIGN(auto a, CollectionManager::Open(dir_.path() + "/a", Defaults(), s));
    ASSERT_OK_AND_ASSIGN(auto ac, a->Create("docs", Schema()));
    ASSERT_OK(ac->Upsert(Points(0, 600)));
    ASSERT_OK(ac->Publish());
  }  // a stops renewing its lease (as if it died)
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_OK_AND_ASSIGN(auto b, Writer("b"));  // takes over the expired lease
  ASSERT_OK_AND_ASSIGN(auto bc, b->Get("docs"));
  ASSERT_OK_AND_ASSIGN(size_t n, bc->Count(std::nullopt));
  EXPECT_EQ(n, 600u);
  ASSERT_OK(bc->Upsert(Points(600, 1)));
  ASSERT_OK(bc->Publish());
  // The old writer, back, is refused while b holds the lease.
  auto again = CollectionManager::Open(dir_.path() + "/a", Defaults(), s);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), StatusCode::kPreconditionFailed) << again.error().ToString();
  ASSERT_OK_AND_ASSIGN(auto r, Replica("r"));
  ASSERT_OK_AND_ASSIGN(auto rc, r->Get("docs"));
  ASSERT_OK_AND_ASSIGN(n, rc->Count(std::nullopt));
  EXPECT_EQ(n, 601u);
}

}  // namespace
}  // namespace strata::vector
