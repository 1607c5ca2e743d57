// The MilvusService RPCs called directly (no socket, no ServerContext): the
// collection lifecycle, writes, search distances as Milvus reports them,
// query with count(*), delete by expression, and Milvus's error codes.
#include "milvus/service.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/vector/collection.h>

#include "milvus/errors.h"
#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

class MilvusServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vector::CollectionOptions o;
    o.background = false;
    o.sync = false;
    auto m = vector::CollectionManager::Open(dir_.path() + "/vector", o);
    ASSERT_OK(m);
    mgr_ = std::move(*m);
    svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
  }

  // "c": pk INT64 (not auto_id), v FLOAT_VECTOR dim 2, tag VARCHAR 8.
  pbc::Status Create(const std::string& name) {
    pbs::CollectionSchema s;
    s.set_name(name);
    auto* pk = s.add_fields();
    pk->set_name("pk");
    pk->set_data_type(pbs::Int64);
    pk->set_is_primary_key(true);
    auto* v = s.add_fields();
    v->set_name("v");
    v->set_data_type(pbs::FloatVector);
    auto* d = v->add_type_params();
    d->set_key("dim");
    d->set_value("2");
    auto* t = s.add_fields();
    t->set_name("tag");
    t->set_data_type(pbs::VarChar);
    auto* l = t->add_type_params();
    l->set_key("max_length");
    l->set_value("8");
    pbm::CreateCollectionRequest req;
    req.set_collection_name(name);
    req.set_schema(s.SerializeAsString());
    pbc::Status st;
    EXPECT_TRUE(svc_->CreateCollection(nullptr, &req, &st).ok());
    return st;
  }

  pbc::Status Index(const std::string& name, const std::string& metric) {
    pbm::CreateIndexRequest req;
    req.set_collection_name(name);
    req.set_field_name("v");
    auto add = [&](const std::string& k, const std::string& val) {
      auto* p = req.add_extra_params();
      p->set_key(k);
      p->set_value(val);
    };
    add("index_type", "HNSW");
    add("metric_type", metric);
    add("params", R"({"M": 8, "efConstruction": 64})");
    pbc::Status st;
    (void)svc_->CreateIndex(nullptr, &req, &st);
    return st;
  }

  pbc::Status Load(const std::string& name) {
    pbm::LoadCollectionRequest req;
    req.set_collection_name(name);
    pbc::Status st;
    (void)svc_->LoadCollection(nullptr, &req, &st);
    return st;
  }

  pbm::MutationResult Insert(const std::string& name, const std::vector<int64_t>& pks,
                             const std::vector<std::vector<float>>& vecs,
                             const std::vector<std::string>& tags,
                             const std::string& partition = "") {
    pbm::InsertRequest req;
    req.set_collection_name(name);
    req.set_partition_name(partition);
    req.set_num_rows(static_cast<uint32_t>(pks.size()));
    auto* pk = req.add_fields_data();
    pk->set_field_name("pk");
    for (auto x : pks) pk->mutable_scalars()->mutable_long_data()->add_data(x);
    auto* v = req.add_fields_data();
    v->set_field_name("v");
    v->mutable_vectors()->set_dim(2);
    for (const auto& x : vecs) {
      for (float f : x) v->mutable_vectors()->mutable_float_vector()->add_data(f);
    }
    auto* t = req.add_fields_data();
    t->set_field_name("tag");
    for (const auto& x : tags) t->mutable_scalars()->mutable_string_data()->add_data(x);
    pbm::MutationResult resp;
    (void)svc_->Insert(nullptr, &req, &resp);
    return resp;
  }

  int64_t Count(const std::string& name, const std::string& expr,
                const std::vector<std::string>& partitions = {}) {
    pbm::QueryRequest req;
    req.set_collection_name(name);
    for (const auto& p : partitions) req.add_partition_names(p);
    req.set_expr(expr);
    req.add_output_fields("count(*)");
    pbm::QueryResults resp;
    (void)svc_->Query(nullptr, &req, &resp);
    if (resp.status().code() != 0 || resp.fields_data_size() != 1) return -1;  // an error
    return resp.fields_data(0).scalars().long_data().data(0);
  }

  pbm::SearchResults Search(const std::string& name, std::vector<float> q, int topk,
                            const std::string& expr = "",
                            const std::vector<std::string>& partitions = {}) {
    pbc::PlaceholderGroup g;
    auto* ph = g.add_placeholders();
    ph->set_tag("$0");
    ph->set_type(pbc::FloatVector);
    ph->add_values(std::string(reinterpret_cast<const char*>(q.data()), q.size() * sizeof(float)));
    pbm::SearchRequest req;
    req.set_collection_name(name);
    req.set_placeholder_group(g.SerializeAsString());
    req.set_dsl_type(pbc::BoolExprV1);
    req.set_dsl(expr);
    req.set_nq(1);
    for (const auto& p : partitions) req.add_partition_names(p);
    req.add_output_fields("tag");
    auto* p = req.add_search_params();
    p->set_key("topk");
    p->set_value(std::to_string(topk));
    pbm::SearchResults resp;
    (void)svc_->Search(nullptr, &req, &resp);
    return resp;
  }

  ::strata::testing::TempDir dir_;
  std::unique_ptr<vector::CollectionManager> mgr_;
  std::unique_ptr<MilvusServiceImpl> svc_;
};

TEST_F(MilvusServiceTest, LifecycleAndL2Distances) {
  ASSERT_EQ(Create("c").code(), 0);
  EXPECT_NE(Create("c").code(), 0);  // exists
  // Loading needs an index on the vector field (Milvus's rule).
  pbc::Status st = Load("c");
  EXPECT_EQ(st.code(), kCodeIndexNotFound);
  ASSERT_EQ(Index("c", "L2").code(), 0) << Index("c", "L2").reason();
  EXPECT_EQ(Index("c", "L2").code(), 0);  // the same index again: fine
  EXPECT_NE(Index("c", "IP").code(), 0);  // another one on the same field: no
  ASSERT_EQ(Load("c").code(), 0);

  auto ins = Insert("c", {1, 2, 3}, {{0, 0}, {3, 4}, {1, 1}}, {"a", "b", "a"});
  ASSERT_EQ(ins.status().code(), 0) << ins.status().reason();
  EXPECT_EQ(ins.insert_cnt(), 3);
  EXPECT_EQ(ins.ids().int_id().data_size(), 3);
  EXPECT_EQ(Count("c", ""), 3);
  EXPECT_EQ(Count("c", "tag == \"a\""), 2);

  auto res = Search("c", {0, 0}, 3);
  ASSERT_EQ(res.status().code(), 0) << res.status().reason();
  const auto& r = res.results();
  ASSERT_EQ(r.topks(0), 3);
  EXPECT_EQ(r.ids().int_id().data(0), 1);
  EXPECT_EQ(r.ids().int_id().data(1), 3);
  EXPECT_EQ(r.ids().int_id().data(2), 2);
  // L2 is the squared distance: 0, 1^2 + 1^2, 3^2 + 4^2.
  EXPECT_NEAR(r.scores(0), 0.f, 1e-5);
  EXPECT_NEAR(r.scores(1), 2.f, 1e-4);
  EXPECT_NEAR(r.scores(2), 25.f, 1e-3);
  bool saw_tag = false;
  for (const auto& f : r.fields_data()) {
    if (f.field_name() == "tag") {
      saw_tag = true;
      EXPECT_EQ(f.scalars().string_data().data(2), "b");
    }
  }
  EXPECT_TRUE(saw_tag);

  auto filtered = Search("c", {3, 4}, 3, "tag == \"a\"");
  ASSERT_EQ(filtered.status().code(), 0);
  EXPECT_EQ(filtered.results().topks(0), 2);  // only the "a" rows match

  pbm::DeleteRequest del;
  del.set_collection_name("c");
  del.set_expr("pk in [1, 2]");
  pbm::MutationResult dr;
  (void)svc_->Delete(nullptr, &del, &dr);
  ASSERT_EQ(dr.status().code(), 0) << dr.status().reason();
  EXPECT_EQ(dr.delete_cnt(), 2);
  EXPECT_EQ(Count("c", ""), 1);

  pbm::DropCollectionRequest drop;
  drop.set_collection_name("c");
  (void)svc_->DropCollection(nullptr, &drop, &st);
  EXPECT_EQ(st.code(), 0);
  pbm::HasCollectionRequest has;
  has.set_collection_name("c");
  pbm::BoolResponse hr;
  (void)svc_->HasCollection(nullptr, &has, &hr);
  EXPECT_FALSE(hr.value());
}

TEST_F(MilvusServiceTest, LoadOptionsOneNodeCannotKeepAreRefused) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0);
  auto load = [&](auto set) {
    pbm::LoadCollectionRequest req;
    req.set_collection_name("c");
    set(req);
    pbc::Status st;
    (void)svc_->LoadCollection(nullptr, &req, &st);
    return st;
  };
  using Req = pbm::LoadCollectionRequest;
  EXPECT_NE(load([](Req& r) { r.set_replica_number(2); }).code(), 0);
  EXPECT_NE(load([](Req& r) { r.add_resource_groups("rg1"); }).code(), 0);
  EXPECT_NE(load([](Req& r) { r.set_skip_load_dynamic_field(true); }).code(), 0);
  EXPECT_NE(load([](Req& r) { (*r.mutable_load_params())["mmap"] = "true"; }).code(), 0);
  pbm::GetLoadStateRequest gs;
  gs.set_collection_name("c");
  pbm::GetLoadStateResponse state;
  (void)svc_->GetLoadState(nullptr, &gs, &state);
  EXPECT_EQ(state.state(), pbc::LoadState::LoadStateNotLoad);  // nothing was loaded
  EXPECT_EQ(load([](Req&) {}).code(), 0);
}

TEST_F(MilvusServiceTest, ErrorsCarryMilvusCodesAndStoreNothing) {
  pbm::DescribeCollectionRequest d;
  d.set_collection_name("nope");
  pbm::DescribeCollectionResponse dr;
  (void)svc_->DescribeCollection(nullptr, &d, &dr);
  EXPECT_EQ(dr.status().code(), kCodeCollectionNotFound);
  EXPECT_EQ(dr.status().error_code(), pbc::CollectionNotExists);
  EXPECT_NE(dr.status().reason().find("nope"), std::string::npos);

  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "COSINE").code(), 0);
  auto not_loaded = Search("c", {1, 0}, 1);
  EXPECT_EQ(not_loaded.status().code(), kCodeCollectionNotLoaded);
  ASSERT_EQ(Load("c").code(), 0);

  auto too_long = Insert("c", {1, 2}, {{1, 0}, {0, 1}}, {"ok", "too-long-tag"});
  EXPECT_EQ(too_long.status().code(), kCodeParameterInvalid);
  EXPECT_NE(too_long.status().reason().find("max length"), std::string::npos);
  auto wrong_dim = Insert("c", {1}, {{1, 0, 0}}, {"ok"});
  EXPECT_EQ(wrong_dim.status().code(), kCodeParameterInvalid);
  EXPECT_NE(wrong_dim.status().reason().find("dim"), std::string::npos);
  EXPECT_EQ(Count("c", ""), 0);  // nothing stored

  pbm::QueryRequest q;
  q.set_collection_name("c");
  q.set_expr("tag ==== 1");
  q.add_output_fields("tag");
  pbm::QueryResults qr;
  (void)svc_->Query(nullptr, &q, &qr);
  EXPECT_EQ(qr.status().code(), kCodeParameterInvalid);
  EXPECT_NE(qr.status().reason().find("cannot parse expression"), std::string::npos);

  auto wrong_q = Search("c", {1, 0, 0}, 1);
  EXPECT_NE(wrong_q.status().code(), 0);

  pbm::InsertRequest other_db;
  other_db.set_db_name("analytics");
  other_db.set_collection_name("c");
  pbm::MutationResult odr;
  (void)svc_->Insert(nullptr, &other_db, &odr);
  EXPECT_NE(odr.status().code(), 0);
  EXPECT_NE(odr.status().reason().find("database"), std::string::npos);
}

TEST_F(MilvusServiceTest, CosineScoresAreSimilaritiesAndRenameKeepsData) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "COSINE").code(), 0);
  ASSERT_EQ(Load("c").code(), 0);
  ASSERT_EQ(Insert("c", {7, 8}, {{1, 0}, {1, 1}}, {"x", "y"}).status().code(), 0);
  auto res = Search("c", {2, 0}, 2);
  ASSERT_EQ(res.status().code(), 0);
  EXPECT_EQ(res.results().ids().int_id().data(0), 7);
  EXPECT_NEAR(res.results().scores(0), 1.f, 1e-5);
  EXPECT_NEAR(res.results().scores(1), std::sqrt(0.5f), 1e-4);

  pbm::RenameCollectionRequest rn;
  rn.set_oldname("c");
  rn.set_newname("d");
  pbc::Status st;
  (void)svc_->RenameCollection(nullptr, &rn, &st);
  ASSERT_EQ(st.code(), 0) << st.reason();
  EXPECT_EQ(Count("d", ""), 2);
  // A fresh service (a restart) reads the Milvus schema back from disk.
  svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
  EXPECT_EQ(Count("d", "pk == 8"), 1);
}

TEST_F(MilvusServiceTest, AliasesNameCollectionsAndPersist) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0);
  ASSERT_EQ(Load("c").code(), 0);
  ASSERT_EQ(Insert("c", {1}, {{1, 1}}, {"a"}).status().code(), 0);
  pbm::CreateAliasRequest ca;
  ca.set_collection_name("c");
  ca.set_alias("live");
  pbc::Status st;
  (void)svc_->CreateAlias(nullptr, &ca, &st);
  ASSERT_EQ(st.code(), 0) << st.reason();
  (void)svc_->CreateAlias(nullptr, &ca, &st);
  EXPECT_NE(st.code(), 0);  // exists
  ca.set_alias("c");
  (void)svc_->CreateAlias(nullptr, &ca, &st);
  EXPECT_NE(st.code(), 0);  // a collection's name
  EXPECT_EQ(Count("live", ""), 1);
  EXPECT_NE(Create("live").code(), 0);  // aliases and collections share names

  pbm::DropCollectionRequest drop;
  drop.set_collection_name("c");
  (void)svc_->DropCollection(nullptr, &drop, &st);
  EXPECT_NE(st.code(), 0);  // it has an alias
  EXPECT_NE(st.reason().find("live"), std::string::npos);

  // A restart reads the aliases back.
  svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
  EXPECT_EQ(Count("live", "pk == 1"), 1);
  pbm::DropAliasRequest da;
  da.set_alias("live");
  (void)svc_->DropAlias(nullptr, &da, &st);
  ASSERT_EQ(st.code(), 0);
  pbm::QueryRequest q;
  q.set_collection_name("live");
  q.set_expr("pk > 0");
  pbm::QueryResults qr;
  (void)svc_->Query(nullptr, &q, &qr);
  EXPECT_EQ(qr.status().code(), kCodeCollectionNotFound);
  (void)svc_->DropCollection(nullptr, &drop, &st);
  EXPECT_EQ(st.code(), 0) << st.reason();
}

TEST_F(MilvusServiceTest, CreateIndexAfterInsertKeepsRowsAndVectors) {
  ASSERT_EQ(Create("c").code(), 0);
  // Rows before any index: stored as given (not normalised).
  ASSERT_EQ(Insert("c", {1, 2, 3}, {{3, 4}, {1, 0}, {0, 2}}, {"a", "b", "c"}).status().code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0) << Index("c", "L2").reason();
  ASSERT_EQ(Load("c").code(), 0);
  EXPECT_EQ(Count("c", ""), 3);
  auto res = Search("c", {3, 4}, 3);
  ASSERT_EQ(res.status().code(), 0) << res.status().reason();
  EXPECT_EQ(res.results().ids().int_id().data(0), 1);
  EXPECT_NEAR(res.results().scores(0), 0.f, 1e-5);
  EXPECT_NEAR(res.results().scores(1), 13.f, 1e-3);  // (3,4) to (0,2): 9 + 4
  EXPECT_NEAR(res.results().scores(2), 20.f, 1e-3);  // (3,4) to (1,0): 4 + 16
}

TEST_F(MilvusServiceTest, QueryWithoutLimitRefusesMoreThanTheWindow) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0);
  ASSERT_EQ(Load("c").code(), 0);
  const int n = 16385;  // one more than Milvus's result window
  std::vector<int64_t> pks(n);
  std::vector<std::vector<float>> vecs(n, {1, 2});
  std::vector<std::string> tags(n, "t");
  for (int i = 0; i < n; ++i) pks[i] = i;
  ASSERT_EQ(Insert("c", pks, vecs, tags).status().code(), 0);
  pbm::QueryRequest q;
  q.set_collection_name("c");
  q.set_expr("pk >= 0");
  q.add_output_fields("pk");
  pbm::QueryResults all;
  (void)svc_->Query(nullptr, &q, &all);
  EXPECT_EQ(all.status().code(), kCodeParameterInvalid);
  EXPECT_EQ(all.fields_data_size(), 0);
  q.set_expr("pk >= 1");  // exactly the window
  pbm::QueryResults window;
  (void)svc_->Query(nullptr, &q, &window);
  ASSERT_EQ(window.status().code(), 0) << window.status().reason();
  EXPECT_EQ(window.fields_data(0).scalars().long_data().data_size(), n - 1);
}

}  // namespace
}  // namespace strata::milvus

namespace strata::milvus {
namespace {

class MilvusPartitionTest : public MilvusServiceTest {
 protected:
  pbc::Status CreatePartition(const std::string& c, const std::string& p) {
    pbm::CreatePartitionRequest req;
    req.set_collection_name(c);
    req.set_partition_name(p);
    pbc::Status st;
    (void)svc_->CreatePartition(nullptr, &req, &st);
    return st;
  }
  pbc::Status DropPartition(const std::string& c, const std::string& p) {
    pbm::DropPartitionRequest req;
    req.set_collection_name(c);
    req.set_partition_name(p);
    pbc::Status st;
    (void)svc_->DropPartition(nullptr, &req, &st);
    return st;
  }
  pbc::Status ReleasePartition(const std::string& c, const std::string& p) {
    pbm::ReleasePartitionsRequest req;
    req.set_collection_name(c);
    req.add_partition_names(p);
    pbc::Status st;
    (void)svc_->ReleasePartitions(nullptr, &req, &st);
    return st;
  }
  pbc::Status LoadPartition(const std::string& c, const std::string& p) {
    pbm::LoadPartitionsRequest req;
    req.set_collection_name(c);
    req.add_partition_names(p);
    pbc::Status st;
    (void)svc_->LoadPartitions(nullptr, &req, &st);
    return st;
  }
  bool HasPartition(const std::string& c, const std::string& p) {
    pbm::HasPartitionRequest req;
    req.set_collection_name(c);
    req.set_partition_name(p);
    pbm::BoolResponse resp;
    (void)svc_->HasPartition(nullptr, &req, &resp);
    EXPECT_EQ(resp.status().code(), 0);
    return resp.value();
  }
  std::string RowCount(const std::string& c, const std::string& p) {
    pbm::GetPartitionStatisticsRequest req;
    req.set_collection_name(c);
    req.set_partition_name(p);
    pbm::GetPartitionStatisticsResponse resp;
    (void)svc_->GetPartitionStatistics(nullptr, &req, &resp);
    if (resp.status().code() != 0 || resp.stats_size() != 1) return "error";
    return resp.stats(0).value();
  }
};

TEST_F(MilvusPartitionTest, RowsStayInTheirPartition) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0);
  EXPECT_TRUE(HasPartition("c", "_default"));
  EXPECT_FALSE(HasPartition("c", "p1"));
  ASSERT_EQ(CreatePartition("c", "p1").code(), 0);
  EXPECT_EQ(CreatePartition("c", "p1").code(), 0);  // already there: Milvus answers success
  EXPECT_NE(CreatePartition("c", "1bad").code(), 0);
  EXPECT_NE(CreatePartition("c", "bad-name").code(), 0);
  EXPECT_TRUE(HasPartition("c", "p1"));

  pbm::ShowPartitionsRequest show;
  show.set_collection_name("c");
  pbm::ShowPartitionsResponse shown;
  (void)svc_->ShowPartitions(nullptr, &show, &shown);
  ASSERT_EQ(shown.status().code(), 0);
  ASSERT_EQ(shown.partition_names_size(), 2);
  EXPECT_EQ(shown.partition_names(0), "_default");
  EXPECT_EQ(shown.partition_names(1), "p1");
  EXPECT_NE(shown.partitionids(0), shown.partitionids(1));

  ASSERT_EQ(Insert("c", {1, 2}, {{0, 0}, {1, 0}}, {"a", "a"}).status().code(), 0);
  ASSERT_EQ(Insert("c", {3, 4, 5}, {{0, 1}, {5, 5}, {0, 0}}, {"a", "b", "b"}, "p1").status().code(),
            0);
  EXPECT_EQ(Insert("c", {6}, {{0, 0}}, {"a"}, "nope").status().code(), kCodePartitionNotFound);
  EXPECT_EQ(RowCount("c", "_default"), "2");
  EXPECT_EQ(RowCount("c", "p1"), "3");
  EXPECT_EQ(RowCount("c", "nope"), "error");

  ASSERT_EQ(Load("c").code(), 0);
  EXPECT_EQ(Count("c", ""), 5);
  EXPECT_EQ(Count("c", "", {"p1"}), 3);
  EXPECT_EQ(Count("c", "", {"_default"}), 2);
  EXPECT_EQ(Count("c", "tag == \"a\"", {"p1"}), 1);
  // An upsert into another partition moves the row: primary keys are unique
  // across the collection.
  {
    pbm::UpsertRequest up;
    up.set_collection_name("c");
    up.set_partition_name("p1");
    up.set_num_rows(1);
    auto* pk = up.add_fields_data();
    pk->set_field_name("pk");
    pk->mutable_scalars()->mutable_long_data()->add_data(2);
    auto* v = up.add_fields_data();
    v->set_field_name("v");
    v->mutable_vectors()->set_dim(2);
    v->mutable_vectors()->mutable_float_vector()->add_data(1);
    v->mutable_vectors()->mutable_float_vector()->add_data(0);
    auto* t = up.add_fields_data();
    t->set_field_name("tag");
    t->mutable_scalars()->mutable_string_data()->add_data("m");
    pbm::MutationResult ur;
    (void)svc_->Upsert(nullptr, &up, &ur);
    ASSERT_EQ(ur.status().code(), 0) << ur.status().reason();
    EXPECT_EQ(Count("c", "", {"p1"}), 4);
    EXPECT_EQ(Count("c", "", {"_default"}), 1);
    EXPECT_EQ(Count("c", "tag == \"m\"", {"p1"}), 1);
    // Put it back so the counts below hold.
    up.set_partition_name("");
    t->mutable_scalars()->mutable_string_data()->set_data(0, "a");
    (void)svc_->Upsert(nullptr, &up, &ur);
    ASSERT_EQ(ur.status().code(), 0) << ur.status().reason();
    EXPECT_EQ(Count("c", "", {"_default"}), 2);
  }
  auto res = Search("c", {0, 0}, 10, "", {"p1"});
  ASSERT_EQ(res.status().code(), 0) << res.status().reason();
  ASSERT_EQ(res.results().topks(0), 3);
  for (int i = 0; i < 3; ++i) EXPECT_GE(res.results().ids().int_id().data(i), 3);
  EXPECT_EQ(Search("c", {0, 0}, 10, "", {"nope"}).status().code(), kCodePartitionNotFound);

  // A delete naming a partition leaves the other partitions' rows alone.
  pbm::DeleteRequest del;
  del.set_collection_name("c");
  del.set_partition_name("p1");
  del.set_expr("tag == \"a\"");
  pbm::MutationResult dr;
  (void)svc_->Delete(nullptr, &del, &dr);
  ASSERT_EQ(dr.status().code(), 0) << dr.status().reason();
  EXPECT_EQ(dr.delete_cnt(), 1);
  EXPECT_EQ(Count("c", "tag == \"a\""), 2);

  // Dropping: never "_default", never while loaded; then its rows are gone.
  EXPECT_NE(DropPartition("c", "_default").code(), 0);
  EXPECT_NE(DropPartition("c", "p1").code(), 0);
  ASSERT_EQ(ReleasePartition("c", "p1").code(), 0);
  EXPECT_EQ(Count("c", ""), 2);           // only the loaded partition is searched
  EXPECT_EQ(Count("c", "", {"p1"}), -1);  // not loaded: an error
  ASSERT_EQ(DropPartition("c", "p1").code(), 0);
  EXPECT_FALSE(HasPartition("c", "p1"));
  EXPECT_EQ(Count("c", ""), 2);
  pbm::GetCollectionStatisticsRequest cs;
  cs.set_collection_name("c");
  pbm::GetCollectionStatisticsResponse csr;
  (void)svc_->GetCollectionStatistics(nullptr, &cs, &csr);
  ASSERT_EQ(csr.stats_size(), 1);
  EXPECT_EQ(csr.stats(0).value(), "2");
}

TEST_F(MilvusPartitionTest, PartitionsAndLoadStatePersist) {
  ASSERT_EQ(Create("c").code(), 0);
  ASSERT_EQ(Index("c", "L2").code(), 0);
  ASSERT_EQ(CreatePartition("c", "p1").code(), 0);
  ASSERT_EQ(Insert("c", {1}, {{0, 0}}, {"a"}, "p1").status().code(), 0);
  ASSERT_EQ(LoadPartition("c", "p1").code(), 0);
  // A fresh service reads milvus.json again.
  svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
  EXPECT_TRUE(HasPartition("c", "p1"));
  pbm::GetLoadStateRequest ls;
  ls.set_collection_name("c");
  ls.add_partition_names("p1");
  pbm::GetLoadStateResponse lr;
  (void)svc_->GetLoadState(nullptr, &ls, &lr);
  EXPECT_EQ(lr.state(), pbc::LoadStateLoaded);
  ls.set_partition_names(0, "_default");
  (void)svc_->GetLoadState(nullptr, &ls, &lr);
  EXPECT_EQ(lr.state(), pbc::LoadStateNotLoad);
  EXPECT_EQ(Count("c", ""), 1);  // the loaded partition only
  EXPECT_EQ(Count("c", "", {"_default"}), -1);
  pbm::ShowPartitionsRequest show;
  show.set_collection_name("c");
  show.set_type(pbm::InMemory);
  pbm::ShowPartitionsResponse shown;
  (void)svc_->ShowPartitions(nullptr, &show, &shown);
  ASSERT_EQ(shown.partition_names_size(), 1);  // InMemory lists the loaded ones
  EXPECT_EQ(shown.partition_names(0), "p1");
}

}  // namespace
}  // namespace strata::milvus
