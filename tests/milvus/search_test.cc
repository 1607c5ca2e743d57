// Milvus search semantics beyond plain top-k, through the service (no
// socket): range search per metric (L2: range_filter <= d < radius;
// IP/COSINE: radius < s <= range_filter), group_by_field with group_size,
// expression templates, the search iterator v2 paging, HybridSearch with the
// RRF and weighted rankers, and query results in primary-key order. Expected
// values are computed by hand from the documented formulas.
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strata/vector/collection.h>

#include "milvus/errors.h"
#include "milvus/search_util.h"
#include "milvus/service.h"
#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

using KV = std::vector<std::pair<std::string, std::string>>;

class MilvusSearchTest : public ::testing::Test {
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

  // pk INT64, a and b FLOAT_VECTOR dim 2 (a: metric_a, b: IP), cat INT64;
  // rows pk = 0..n-1 with a = (pk, 0), b = (1, pk / 10), cat = pk % 3.
  void Make(const std::string& metric_a, int n, int64_t first_pk = 0) {
    pbs::CollectionSchema s;
    s.set_name("c");
    auto* pk = s.add_fields();
    pk->set_name("pk");
    pk->set_data_type(pbs::Int64);
    pk->set_is_primary_key(true);
    for (const char* name : {"a", "b"}) {
      auto* v = s.add_fields();
      v->set_name(name);
      v->set_data_type(pbs::FloatVector);
      auto* d = v->add_type_params();
      d->set_key("dim");
      d->set_value("2");
    }
    auto* cat = s.add_fields();
    cat->set_name("cat");
    cat->set_data_type(pbs::Int64);
    pbm::CreateCollectionRequest cr;
    cr.set_collection_name("c");
    cr.set_schema(s.SerializeAsString());
    pbc::Status st;
    ASSERT_TRUE(svc_->CreateCollection(nullptr, &cr, &st).ok());
    ASSERT_EQ(st.code(), 0) << st.reason();
    for (auto [field, metric] : {std::pair{"a", metric_a}, std::pair{"b", std::string("IP")}}) {
      pbm::CreateIndexRequest ir;
      ir.set_collection_name("c");
      ir.set_field_name(field);
      for (auto [k, v] : KV{{"index_type", "FLAT"}, {"metric_type", metric}, {"params", "{}"}}) {
        auto* p = ir.add_extra_params();
        p->set_key(k);
        p->set_value(v);
      }
      (void)svc_->CreateIndex(nullptr, &ir, &st);
      ASSERT_EQ(st.code(), 0) << st.reason();
    }
    pbm::LoadCollectionRequest lr;
    lr.set_collection_name("c");
    (void)svc_->LoadCollection(nullptr, &lr, &st);
    ASSERT_EQ(st.code(), 0) << st.reason();
    pbm::InsertRequest req;
    req.set_collection_name("c");
    req.set_num_rows(n);
    auto* fpk = req.add_fields_data();
    fpk->set_field_name("pk");
    auto* fa = req.add_fields_data();
    fa->set_field_name("a");
    fa->mutable_vectors()->set_dim(2);
    auto* fb = req.add_fields_data();
    fb->set_field_name("b");
    fb->mutable_vectors()->set_dim(2);
    auto* fc = req.add_fields_data();
    fc->set_field_name("cat");
    for (int i = 0; i < n; ++i) {
      fpk->mutable_scalars()->mutable_long_data()->add_data(first_pk + i);
      fa->mutable_vectors()->mutable_float_vector()->add_data(static_cast<float>(i));
      fa->mutable_vectors()->mutable_float_vector()->add_data(0);
      fb->mutable_vectors()->mutable_float_vector()->add_data(1);
      fb->mutable_vectors()->mutable_float_vector()->add_data(static_cast<float>(i) / 10);
      fc->mutable_scalars()->mutable_long_data()->add_data(i % 3);
    }
    pbm::MutationResult mr;
    (void)svc_->Insert(nullptr, &req, &mr);
    ASSERT_EQ(mr.status().code(), 0) << mr.status().reason();
  }

  static pbm::SearchRequest Req(const std::string& field, std::vector<float> q, const KV& params,
                                const std::string& expr = "") {
    pbc::PlaceholderGroup g;
    auto* ph = g.add_placeholders();
    ph->set_tag("$0");
    ph->set_type(pbc::FloatVector);
    ph->add_values(std::string(reinterpret_cast<const char*>(q.data()), q.size() * sizeof(float)));
    pbm::SearchRequest req;
    req.set_collection_name("c");
    req.set_placeholder_group(g.SerializeAsString());
    req.set_dsl_type(pbc::BoolExprV1);
    req.set_dsl(expr);
    req.set_nq(1);
    req.add_output_fields("cat");
    auto* a = req.add_search_params();
    a->set_key("anns_field");
    a->set_value(field);
    for (const auto& [k, v] : params) {
      auto* p = req.add_search_params();
      p->set_key(k);
      p->set_value(v);
    }
    return req;
  }

  pbm::SearchResults Run(const pbm::SearchRequest& req) {
    pbm::SearchResults resp;
    (void)svc_->Search(nullptr, &req, &resp);
    return resp;
  }

  static std::vector<int64_t> Ids(const pbm::SearchResults& r) {
    const auto& d = r.results().ids().int_id().data();
    return {d.begin(), d.end()};
  }

  ::strata::testing::TempDir dir_;
  std::unique_ptr<vector::CollectionManager> mgr_;
  std::unique_ptr<MilvusServiceImpl> svc_;
};

TEST_F(MilvusSearchTest, RangeSearchL2KeepsRangeFilterToRadius) {
  Make("L2", 50);
  // From (0, 0) the squared distances are pk^2: range_filter 4 <= d < 26
  // keeps pk 2, 3, 4, 5 (25 < 26), not 1 (1 < 4) nor 6 (36).
  auto r =
      Run(Req("a", {0, 0}, {{"topk", "10"}, {"params", R"({"radius": 26, "range_filter": 4})"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_NEAR(r.results().scores(0), 4.f, 1e-4);
  // The bounds are half-open: d == radius is out, d == range_filter is in.
  r = Run(Req("a", {0, 0}, {{"topk", "10"}, {"params", R"({"radius": 25, "range_filter": 4})"}}));
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 3, 4}));
  // topk still caps the answer, offset skips into it.
  r = Run(Req("a", {0, 0}, {{"topk", "2"}, {"offset", "1"}, {"params", R"({"radius": 26})"}}));
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{1, 2}));
  // L2 needs range_filter < radius.
  r = Run(Req("a", {0, 0}, {{"topk", "2"}, {"params", R"({"radius": 4, "range_filter": 9})"}}));
  EXPECT_EQ(r.status().code(), kCodeParameterInvalid);
  EXPECT_NE(r.status().reason().find("range_filter must be less than radius"), std::string::npos);
  r = Run(Req("a", {0, 0}, {{"topk", "2"}, {"params", R"({"range_filter": 9})"}}));
  EXPECT_NE(r.status().code(), 0);  // range_filter alone
}

TEST_F(MilvusSearchTest, RangeSearchIpKeepsRadiusToRangeFilter) {
  Make("L2", 50);
  // Field b is IP: (1, 0.1 pk) . (0, 10) = pk. radius 10 < s <= 13: 11, 12, 13.
  auto r =
      Run(Req("b", {0, 10}, {{"topk", "10"}, {"params", R"({"radius": 10, "range_filter": 13})"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{13, 12, 11}));
  r = Run(Req("b", {0, 10}, {{"topk", "10"}, {"params", R"({"radius": 13, "range_filter": 10})"}}));
  EXPECT_NE(r.status().reason().find("range_filter must be greater than radius"),
            std::string::npos);
}

TEST_F(MilvusSearchTest, GroupByFieldAndGroupSize) {
  Make("L2", 30);
  // From (0, 0): pk 0, 1, 2 are the closest of cat 0, 1, 2.
  auto r = Run(Req("a", {0, 0}, {{"topk", "2"}, {"group_by_field", "cat"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(r.results().group_by_field_values_size(), 1);
  const auto& g = r.results().group_by_field_values(0);
  EXPECT_EQ(g.field_name(), "cat");
  EXPECT_EQ(g.scalars().long_data().data(1), 1);
  // Two groups of two, listed group by group: cat 0 (0, 3), cat 1 (1, 4).
  r = Run(Req("a", {0, 0},
              {{"topk", "2"},
               {"group_by_field", "cat"},
               {"group_size", "2"},
               {"strict_group_size", "true"}}));
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{0, 3, 1, 4}));
  // offset skips whole groups.
  r = Run(Req("a", {0, 0}, {{"topk", "1"}, {"offset", "2"}, {"group_by_field", "cat"}}));
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2}));
  r = Run(Req("a", {0, 0}, {{"topk", "1"}, {"group_by_field", "nope"}}));
  EXPECT_NE(r.status().code(), 0);
}

TEST_F(MilvusSearchTest, ExpressionTemplates) {
  Make("L2", 20);
  auto req = Req("a", {0, 0}, {{"topk", "10"}}, "pk in {ids} and cat == {c}");
  auto& vals = *req.mutable_expr_template_values();
  for (int64_t x : {3, 4, 5, 6}) vals["ids"].mutable_array_val()->mutable_long_data()->add_data(x);
  vals["c"].set_int64_val(0);
  auto r = Run(req);
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{3, 6}));
  // A placeholder without a value is an error that names it.
  auto bad = Req("a", {0, 0}, {{"topk", "10"}}, "pk in {missing}");
  r = Run(bad);
  EXPECT_NE(r.status().reason().find("{missing}"), std::string::npos) << r.status().reason();
  // Braces inside a string literal are text, not placeholders.
  TemplateValues none;
  none["x"].set_string_val("q\"uote");
  auto s = ApplyExprTemplate(R"(tag == "{x}" or tag == {x})", none);
  ASSERT_OK(s);
  EXPECT_EQ(*s, R"(tag == "{x}" or tag == "q\"uote")");
}

TEST_F(MilvusSearchTest, SearchIteratorPagesThroughEveryHitOnce) {
  Make("L2", 25);
  std::vector<int64_t> seen;
  std::string token;
  std::optional<float> bound;
  // Pages of 3: pk 0 and 1 tie (0.25), so page sizes 1 and 3 both cross ties.
  for (int page = 0; page < 30; ++page) {
    const int batch = page < 2 ? 1 : 3;
    std::string params = fmt::format(
        R"({{"iterator": true, "search_iter_v2": true, "search_iter_batch_size": {})", batch);
    if (!token.empty()) {
      params +=
          fmt::format(R"(, "search_iter_id": "{}", "search_iter_last_bound": {})", token, *bound);
    }
    auto r = Run(Req("a", {0.5f, 0}, {{"topk", std::to_string(batch)}, {"params", params + "}"}}));
    ASSERT_EQ(r.status().code(), 0) << r.status().reason();
    ASSERT_TRUE(r.results().has_search_iterator_v2_results());
    token = r.results().search_iterator_v2_results().token();
    bound = r.results().search_iterator_v2_results().last_bound();
    auto ids = Ids(r);
    if (ids.empty()) break;
    seen.insert(seen.end(), ids.begin(), ids.end());
  }
  // (0.5, 0) is equally far from 0 and 1, 2 and -1...: every row once, by distance.
  ASSERT_EQ(seen.size(), 25u);
  std::set<int64_t> uniq(seen.begin(), seen.end());
  EXPECT_EQ(uniq.size(), 25u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_LE(std::abs(seen[i - 1] - 0.5), std::abs(seen[i] - 0.5)) << i;
  }
}

TEST_F(MilvusSearchTest, HybridSearchRrfAndWeighted) {
  Make("L2", 20);
  // a from (0, 0): 0, 1, 2, ... ; b (IP) with (0, -1): 0, 1, 2, ... too
  // (scores -pk/10); with (0, 1): 19, 18, ...
  pbm::HybridSearchRequest h;
  h.set_collection_name("c");
  *h.add_requests() = Req("a", {0, 0}, {{"topk", "3"}});
  *h.add_requests() = Req("b", {0, 1}, {{"topk", "3"}});
  h.add_output_fields("cat");
  auto rank = [&](const KV& kv) {
    h.clear_rank_params();
    for (const auto& [k, v] : kv) {
      auto* p = h.add_rank_params();
      p->set_key(k);
      p->set_value(v);
    }
    pbm::SearchResults resp;
    (void)svc_->HybridSearch(nullptr, &h, &resp);
    return resp;
  };
  auto r = rank({{"strategy", "rrf"}, {"params", R"({"k": 60})"}, {"limit", "4"}});
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  // Lists [0, 1, 2] and [19, 18, 17]: ties at each rank, first list first.
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{0, 19, 1, 18}));
  EXPECT_NEAR(r.results().scores(0), 1.0 / 61, 1e-6);
  EXPECT_NEAR(r.results().scores(2), 1.0 / 62, 1e-6);
  // Weighted: a (L2 d = pk^2) scores 1 - 2 atan(d) / pi, b (IP s = pk / 10)
  // 0.5 + atan(s) / pi. Weights 1 and 0: list a's order; 0 and 1: list b's.
  r = rank({{"strategy", "weighted"}, {"params", R"({"weights": [1.0, 0.0]})"}, {"limit", "2"}});
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{0, 1}));
  EXPECT_NEAR(r.results().scores(1), 1 - 2 * std::atan(1.0) / M_PI, 1e-5);
  r = rank({{"strategy", "weighted"},
            {"params", R"({"weights": [0.2, 0.8]})"},
            {"limit", "1"},
            {"offset", "1"}});
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{18}));
  EXPECT_NEAR(r.results().scores(0), 0.8 * (0.5 + std::atan(1.8) / M_PI), 1e-5);
  r = rank({{"strategy", "weighted"}, {"params", R"({"weights": [1.0]})"}});
  EXPECT_NE(r.status().reason().find("weights"), std::string::npos);
  r = rank({{"strategy", "nope"}});
  EXPECT_NE(r.status().code(), 0);
  // partition_names as the SDKs send them: on the hybrid search and copied
  // into each request; a request naming other partitions is refused.
  h.add_partition_names("_default");
  for (auto& sub : *h.mutable_requests()) sub.add_partition_names("_default");
  r = rank({{"strategy", "rrf"}, {"limit", "4"}});
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{0, 19, 1, 18}));
  h.mutable_requests(1)->add_partition_names("other");
  EXPECT_NE(rank({{"strategy", "rrf"}}).status().code(), 0);
}

TEST_F(MilvusSearchTest, QueryLimitReturnsSmallestKeysInOrder) {
  Make("L2", 40);
  pbm::QueryRequest q;
  q.set_collection_name("c");
  q.set_expr("pk > 10");
  q.add_output_fields("pk");
  auto* l = q.add_query_params();
  l->set_key("limit");
  l->set_value("5");
  pbm::QueryResults resp;
  (void)svc_->Query(nullptr, &q, &resp);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().reason();
  std::vector<int64_t> pks;
  for (const auto& f : resp.fields_data()) {
    if (f.field_name() == "pk")
      pks.assign(f.scalars().long_data().data().begin(), f.scalars().long_data().data().end());
  }
  EXPECT_EQ(pks, (std::vector<int64_t>{11, 12, 13, 14, 15}));
}

// Negative INT64 keys sort before the others (their point ids are the upper
// half of the id space, so id order alone would put them last).
TEST_F(MilvusSearchTest, QueryLimitOrdersNegativeKeysFirst) {
  Make("L2", 10, /*first_pk=*/-5);
  pbm::QueryRequest q;
  q.set_collection_name("c");
  q.set_expr("pk > -4");
  q.add_output_fields("pk");
  auto* l = q.add_query_params();
  l->set_key("limit");
  l->set_value("5");
  pbm::QueryResults resp;
  (void)svc_->Query(nullptr, &q, &resp);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().reason();
  std::vector<int64_t> pks;
  for (const auto& f : resp.fields_data()) {
    if (f.field_name() == "pk") {
      pks.assign(f.scalars().long_data().data().begin(), f.scalars().long_data().data().end());
    }
  }
  EXPECT_EQ(pks, (std::vector<int64_t>{-3, -2, -1, 0, 1}));
}

// FLOAT16 and BFLOAT16 fields: half-precision bytes in, float32 in the
// engine, the same bytes out; searched with half-precision query vectors.
TEST_F(MilvusSearchTest, HalfPrecisionVectorFields) {
  for (auto [type, name] :
       {std::pair{pbs::Float16Vector, "h16"}, std::pair{pbs::BFloat16Vector, "b16"}}) {
    const bool f16 = type == pbs::Float16Vector;
    auto enc = [&](float x) { return f16 ? FloatToHalf(x) : FloatToBFloat16(x); };
    auto bytes = [&](const std::vector<float>& v) {
      std::string b;
      for (float x : v) {
        uint16_t h = enc(x);
        b.push_back(static_cast<char>(h & 0xff));
        b.push_back(static_cast<char>(h >> 8));
      }
      return b;
    };
    pbs::CollectionSchema s;
    s.set_name(name);
    auto* pk = s.add_fields();
    pk->set_name("pk");
    pk->set_data_type(pbs::Int64);
    pk->set_is_primary_key(true);
    auto* v = s.add_fields();
    v->set_name("v");
    v->set_data_type(type);
    auto* d = v->add_type_params();
    d->set_key("dim");
    d->set_value("2");
    pbm::CreateCollectionRequest cr;
    cr.set_collection_name(name);
    cr.set_schema(s.SerializeAsString());
    pbc::Status st;
    (void)svc_->CreateCollection(nullptr, &cr, &st);
    ASSERT_EQ(st.code(), 0) << st.reason();
    pbm::CreateIndexRequest ir;
    ir.set_collection_name(name);
    ir.set_field_name("v");
    for (auto [k, val] : KV{{"index_type", "FLAT"}, {"metric_type", "L2"}, {"params", "{}"}}) {
      auto* p = ir.add_extra_params();
      p->set_key(k);
      p->set_value(val);
    }
    (void)svc_->CreateIndex(nullptr, &ir, &st);
    ASSERT_EQ(st.code(), 0) << st.reason();
    pbm::LoadCollectionRequest lr;
    lr.set_collection_name(name);
    (void)svc_->LoadCollection(nullptr, &lr, &st);
    pbm::InsertRequest req;
    req.set_collection_name(name);
    req.set_num_rows(3);
    auto* fpk = req.add_fields_data();
    fpk->set_field_name("pk");
    for (int i = 1; i <= 3; ++i) fpk->mutable_scalars()->mutable_long_data()->add_data(i);
    auto* fv = req.add_fields_data();
    fv->set_field_name("v");
    fv->mutable_vectors()->set_dim(2);
    const std::vector<float> rows = {0.5f, 0, 1.5f, 0, 3.25f, 0};
    (f16 ? *fv->mutable_vectors()->mutable_float16_vector()
         : *fv->mutable_vectors()->mutable_bfloat16_vector()) = bytes(rows);
    pbm::MutationResult mr;
    (void)svc_->Insert(nullptr, &req, &mr);
    ASSERT_EQ(mr.status().code(), 0) << mr.status().reason();

    pbc::PlaceholderGroup g;
    auto* ph = g.add_placeholders();
    ph->set_type(f16 ? pbc::Float16Vector : pbc::BFloat16Vector);
    ph->add_values(bytes({1.5f, 0}));
    pbm::SearchRequest sr;
    sr.set_collection_name(name);
    sr.set_placeholder_group(g.SerializeAsString());
    sr.set_dsl_type(pbc::BoolExprV1);
    sr.add_output_fields("v");
    auto* tk = sr.add_search_params();
    tk->set_key("topk");
    tk->set_value("2");
    auto r = Run(sr);
    ASSERT_EQ(r.status().code(), 0) << r.status().reason();
    EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 1}));
    EXPECT_NEAR(r.results().scores(1), 1.0f, 1e-6);  // (1.5 - 0.5)^2
    const pbs::FieldData* out = nullptr;
    for (const auto& f : r.results().fields_data()) {
      if (f.field_name() == "v") out = &f;
    }
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(out->type(), type);
    const std::string& got =
        f16 ? out->vectors().float16_vector() : out->vectors().bfloat16_vector();
    EXPECT_EQ(got, bytes({1.5f, 0, 0.5f, 0}));
    // A float32 query on a half-precision field is refused, naming the type.
    ph->set_type(pbc::FloatVector);
    sr.set_placeholder_group(g.SerializeAsString());
    EXPECT_NE(Run(sr).status().code(), 0);
  }
}

// Fields a client sets that Strata does not serve are refused by name, and
// the request changes nothing (audit of the request messages).
TEST_F(MilvusSearchTest, UnservedRequestFieldsAreRefused) {
  Make("L2", 10);
  auto req = Req("a", {0, 0}, {{"topk", "3"}});
  req.set_function_score("\x0a\x00");  // any rerank function
  auto r = Run(req);
  EXPECT_NE(r.status().reason().find("function_score"), std::string::npos) << r.status().reason();
  req = Req("a", {0, 0}, {{"topk", "3"}});
  req.set_namespace_("tenant");
  EXPECT_NE(Run(req).status().reason().find("namespace"), std::string::npos);
  req = Req("a", {0, 0}, {{"topk", "3"}, {"params", R"({"order_by_fields": "cat"})"}});
  EXPECT_NE(Run(req).status().code(), 0);

  pbm::UpsertRequest up;
  up.set_collection_name("c");
  up.add_field_ops("\x08\x01");
  pbm::MutationResult mr;
  (void)svc_->Upsert(nullptr, &up, &mr);
  EXPECT_NE(mr.status().reason().find("field_ops"), std::string::npos) << mr.status().reason();

  pbm::LoadPartitionsRequest lp;
  lp.set_collection_name("c");
  lp.add_partition_names("_default");
  (*lp.mutable_load_params())["x"] = "1";
  pbc::Status st;
  (void)svc_->LoadPartitions(nullptr, &lp, &st);
  EXPECT_NE(st.reason().find("load_params"), std::string::npos) << st.reason();

  // Delete takes templates too; a missing value deletes nothing.
  pbm::DeleteRequest del;
  del.set_collection_name("c");
  del.set_expr("pk in {ids}");
  (void)svc_->Delete(nullptr, &del, &mr);
  EXPECT_NE(mr.status().code(), 0);
  for (int64_t x : {1, 2}) {
    (*del.mutable_expr_template_values())["ids"].mutable_array_val()->mutable_long_data()->add_data(
        x);
  }
  pbm::MutationResult dr;
  (void)svc_->Delete(nullptr, &del, &dr);
  ASSERT_EQ(dr.status().code(), 0) << dr.status().reason();
  EXPECT_EQ(dr.delete_cnt(), 2);
}

TEST(MilvusRankParams, Checks) {
  KvList kv;
  auto add = [&](const std::string& k, const std::string& v) {
    auto* p = kv.Add();
    p->set_key(k);
    p->set_value(v);
  };
  add("strategy", "rrf");
  add("params", R"({"k": 0})");
  EXPECT_FALSE(ParseRankParams(kv, 2).ok());  // k in (0, 16384)
  kv.Clear();
  add("strategy", "weighted");
  add("params", R"({"weights": [0.5, 1.5]})");
  EXPECT_FALSE(ParseRankParams(kv, 2).ok());  // weight in [0, 1]
  kv.Clear();
  add("strategy", "rrf");
  add("unknown", "1");
  EXPECT_FALSE(ParseRankParams(kv, 1).ok());  // refused, not ignored
  EXPECT_NEAR(NormalizeScore(0.f, "COSINE"), 0.5f, 1e-6);
  EXPECT_NEAR(NormalizeScore(0.f, "L2"), 1.f, 1e-6);
  EXPECT_NEAR(NormalizeScore(0.f, "IP"), 0.5f, 1e-6);
}

}  // namespace
}  // namespace strata::milvus
