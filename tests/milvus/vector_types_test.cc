// SPARSE_FLOAT_VECTOR and BINARY_VECTOR fields through the service (no
// socket). Expected values come from Milvus's documented semantics, computed
// by hand: sparse rows are (uint32 index, float32 value) pairs with ascending
// indices, scored by inner product over shared indices; binary rows are
// dim/8 bytes, HAMMING counts differing bits, JACCARD is
// 1 - |a AND b| / |a OR b|.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <strata/vector/collection.h>

#include "milvus/convert.h"
#include "milvus/service.h"
#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

using KV = std::vector<std::pair<std::string, std::string>>;
using Sparse = std::map<uint32_t, float>;

std::string SparseBytes(const Sparse& s) {
  std::string out;
  for (const auto& [i, v] : s) {
    char b[8];
    std::memcpy(b, &i, 4);
    std::memcpy(b + 4, &v, 4);
    out.append(b, 8);
  }
  return out;
}

class MilvusVectorTypesTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    svc_.reset();
    mgr_.reset();
    vector::CollectionOptions o;
    o.background = false;
    o.sync = false;
    o.segment_rows = 4;  // small segments: sealed (indexed) rows are searched too
    auto m = vector::CollectionManager::Open(dir_.path() + "/vector", o);
    ASSERT_OK(m);
    mgr_ = std::move(*m);
    svc_ = std::make_unique<MilvusServiceImpl>(mgr_.get());
  }

  // pk INT64 primary plus `vectors` (name, type, dim; dim 0 = none given).
  pbc::Status Create(const std::string& name,
                     const std::vector<std::tuple<std::string, pbs::DataType, int>>& vectors) {
    pbs::CollectionSchema s;
    s.set_name(name);
    auto* pk = s.add_fields();
    pk->set_name("pk");
    pk->set_data_type(pbs::Int64);
    pk->set_is_primary_key(true);
    for (const auto& [n, t, dim] : vectors) {
      auto* v = s.add_fields();
      v->set_name(n);
      v->set_data_type(t);
      if (dim > 0) {
        auto* d = v->add_type_params();
        d->set_key("dim");
        d->set_value(std::to_string(dim));
      }
    }
    pbm::CreateCollectionRequest req;
    req.set_collection_name(name);
    req.set_schema(s.SerializeAsString());
    pbc::Status st;
    (void)svc_->CreateCollection(nullptr, &req, &st);
    return st;
  }

  pbc::Status Index(const std::string& name, const std::string& field, const std::string& type,
                    const std::string& metric, const std::string& params = "{}") {
    pbm::CreateIndexRequest req;
    req.set_collection_name(name);
    req.set_field_name(field);
    auto add = [&](const std::string& k, const std::string& v) {
      auto* p = req.add_extra_params();
      p->set_key(k);
      p->set_value(v);
    };
    add("index_type", type);
    if (!metric.empty()) add("metric_type", metric);
    add("params", params);
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

  static pbs::FieldData* Pks(pbm::InsertRequest* req, const std::vector<int64_t>& pks) {
    req->set_num_rows(static_cast<uint32_t>(pks.size()));
    auto* pk = req->add_fields_data();
    pk->set_field_name("pk");
    for (auto x : pks) pk->mutable_scalars()->mutable_long_data()->add_data(x);
    return pk;
  }
  static void AddSparse(pbm::InsertRequest* req, const std::string& field,
                        const std::vector<std::string>& rows) {
    auto* f = req->add_fields_data();
    f->set_field_name(field);
    f->set_type(pbs::SparseFloatVector);
    for (const auto& r : rows) f->mutable_vectors()->mutable_sparse_float_vector()->add_contents(r);
  }
  static void AddDense(pbm::InsertRequest* req, const std::string& field,
                       const std::vector<std::vector<float>>& rows) {
    auto* f = req->add_fields_data();
    f->set_field_name(field);
    f->mutable_vectors()->set_dim(2);
    for (const auto& r : rows) {
      for (float x : r) f->mutable_vectors()->mutable_float_vector()->add_data(x);
    }
  }
  static void AddBinary(pbm::InsertRequest* req, const std::string& field, int dim,
                        const std::string& bytes) {
    auto* f = req->add_fields_data();
    f->set_field_name(field);
    f->mutable_vectors()->set_dim(dim);
    f->mutable_vectors()->set_binary_vector(bytes);
  }
  pbm::MutationResult Insert(pbm::InsertRequest req, const std::string& name) {
    req.set_collection_name(name);
    pbm::MutationResult resp;
    (void)svc_->Insert(nullptr, &req, &resp);
    return resp;
  }

  static pbm::SearchRequest Req(const std::string& field, pbc::PlaceholderType type,
                                const std::vector<std::string>& queries, const KV& params) {
    pbc::PlaceholderGroup g;
    auto* ph = g.add_placeholders();
    ph->set_tag("$0");
    ph->set_type(type);
    for (const auto& q : queries) ph->add_values(q);
    pbm::SearchRequest req;
    req.set_placeholder_group(g.SerializeAsString());
    req.set_dsl_type(pbc::BoolExprV1);
    req.set_nq(static_cast<int64_t>(queries.size()));
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
  pbm::SearchResults Search(const std::string& name, pbm::SearchRequest req) {
    req.set_collection_name(name);
    pbm::SearchResults resp;
    (void)svc_->Search(nullptr, &req, &resp);
    return resp;
  }
  static std::vector<int64_t> Ids(const pbm::SearchResults& r) {
    const auto& d = r.results().ids().int_id().data();
    return {d.begin(), d.end()};
  }
  static std::vector<float> Scores(const pbm::SearchResults& r) {
    const auto& d = r.results().scores();
    return {d.begin(), d.end()};
  }

  pbm::QueryResults Query(const std::string& name, const std::string& expr,
                          const std::vector<std::string>& out) {
    pbm::QueryRequest req;
    req.set_collection_name(name);
    req.set_expr(expr);
    for (const auto& o : out) req.add_output_fields(o);
    pbm::QueryResults resp;
    (void)svc_->Query(nullptr, &req, &resp);
    return resp;
  }
  int64_t Count(const std::string& name) {
    auto r = Query(name, "", {"count(*)"});
    if (r.status().code() != 0) return -1;
    return r.fields_data(0).scalars().long_data().data(0);
  }

  // "s": dense v (dim 2, HNSW L2) and sparse sv (SPARSE_INVERTED_INDEX IP),
  // rows 1..4 with sv = {1: 0.5, 3: 1}, {3: 2}, {7: 1}, {}.
  void MakeSparse() {
    ASSERT_EQ(Create("s", {{"v", pbs::FloatVector, 2}, {"sv", pbs::SparseFloatVector, 0}}).code(),
              0);
    ASSERT_EQ(Index("s", "v", "HNSW", "L2", R"({"M": 8, "efConstruction": 32})").code(), 0);
    auto st = Index("s", "sv", "SPARSE_INVERTED_INDEX", "IP", R"({"drop_ratio_build": 0})");
    ASSERT_EQ(st.code(), 0) << st.reason();
    ASSERT_EQ(Load("s").code(), 0);
    pbm::InsertRequest req;
    Pks(&req, {1, 2, 3, 4});
    AddDense(&req, "v", {{0, 0}, {1, 0}, {2, 0}, {3, 0}});
    AddSparse(&req, "sv",
              {SparseBytes({{1, 0.5f}, {3, 1.f}}), SparseBytes({{3, 2.f}}), SparseBytes({{7, 1.f}}),
               SparseBytes({})});
    auto r = Insert(req, "s");
    ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  }

  ::strata::testing::TempDir dir_;
  std::unique_ptr<vector::CollectionManager> mgr_;
  std::unique_ptr<MilvusServiceImpl> svc_;
};

TEST_F(MilvusVectorTypesTest, SparseSearchScoresByInnerProduct) {
  MakeSparse();
  // q = {1: 1, 3: 1}: row 2 scores 2, row 1 0.5 + 1; rows 3 and 4 share no
  // index with q and are not hits.
  auto q = SparseBytes({{1, 1.f}, {3, 1.f}});
  auto r = Search("s", Req("sv", pbc::SparseFloatVector, {q}, {{"topk", "10"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Scores(r), (std::vector<float>{2.f, 1.5f}));
  // A metric other than the index's is refused, as Milvus does.
  r = Search("s", Req("sv", pbc::SparseFloatVector, {q}, {{"metric_type", "L2"}}));
  EXPECT_NE(r.status().code(), 0);
  // Dense query vectors on the sparse field: refused.
  float d[2] = {1, 0};
  r = Search("s", Req("sv", pbc::FloatVector, {std::string(reinterpret_cast<char*>(d), 8)}, {}));
  EXPECT_NE(r.status().code(), 0);
  // Sparse rows come back as inserted (the empty one too).
  auto qr = Query("s", "pk in [1, 4]", {"sv"});
  ASSERT_EQ(qr.status().code(), 0) << qr.status().reason();
  const pbs::FieldData* sv = nullptr;
  for (const auto& f : qr.fields_data()) {
    if (f.field_name() == "sv") sv = &f;
  }
  ASSERT_NE(sv, nullptr);
  EXPECT_EQ(sv->type(), pbs::SparseFloatVector);
  ASSERT_EQ(sv->vectors().sparse_float_vector().contents_size(), 2);
  EXPECT_EQ(sv->vectors().sparse_float_vector().contents(0), SparseBytes({{1, 0.5f}, {3, 1.f}}));
  EXPECT_EQ(sv->vectors().sparse_float_vector().contents(1), "");
  EXPECT_EQ(sv->vectors().sparse_float_vector().dim(), 4);  // largest index + 1
}

TEST_F(MilvusVectorTypesTest, SparseDropRatioSearchLeavesOutTheSmallestQueryValues) {
  MakeSparse();
  // q = {1: 0.1, 3: 1}: row 1 scores 0.05 + 1; with drop_ratio_search 0.5
  // the smaller half of q (index 1) is dropped and row 1 scores 1.
  auto q = SparseBytes({{1, 0.1f}, {3, 1.f}});
  auto r = Search("s", Req("sv", pbc::SparseFloatVector, {q}, {{"topk", "10"}}));
  ASSERT_EQ(Ids(r), (std::vector<int64_t>{2, 1}));
  EXPECT_FLOAT_EQ(Scores(r)[1], 1.05f);
  r = Search("s", Req("sv", pbc::SparseFloatVector, {q},
                      {{"topk", "10"}, {"params", R"({"drop_ratio_search": 0.5})"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  ASSERT_EQ(Ids(r), (std::vector<int64_t>{2, 1}));
  EXPECT_FLOAT_EQ(Scores(r)[1], 1.f);
  // Out of [0, 1), or on a dense field: refused.
  r = Search("s",
             Req("sv", pbc::SparseFloatVector, {q}, {{"params", R"({"drop_ratio_search": 1.0})"}}));
  EXPECT_NE(r.status().code(), 0);
  float d[2] = {1, 0};
  r = Search("s", Req("v", pbc::FloatVector, {std::string(reinterpret_cast<char*>(d), 8)},
                      {{"params", R"({"drop_ratio_search": 0.2})"}}));
  EXPECT_NE(r.status().reason().find("drop_ratio_search"), std::string::npos);
}

TEST_F(MilvusVectorTypesTest, SparseIndexAndRowChecks) {
  ASSERT_EQ(Create("s", {{"v", pbs::FloatVector, 2}, {"sv", pbs::SparseFloatVector, 0}}).code(), 0);
  EXPECT_NE(Index("s", "sv", "SPARSE_INVERTED_INDEX", "L2").code(), 0);
  EXPECT_NE(Index("s", "sv", "HNSW", "IP").code(), 0);
  auto st = Index("s", "sv", "SPARSE_WAND", "IP", R"({"drop_ratio_build": 0.2})");
  EXPECT_NE(st.reason().find("drop_ratio_build"), std::string::npos) << st.reason();
  EXPECT_NE(Index("s", "sv", "SPARSE_WAND", "IP", R"({"nope": 1})").code(), 0);
  // Loading needs every vector field indexed, the sparse one too.
  ASSERT_EQ(Index("s", "v", "FLAT", "L2").code(), 0);
  EXPECT_NE(Load("s").code(), 0);
  st = Index("s", "sv", "SPARSE_WAND", "", R"({"inverted_index_algo": "DAAT_MAXSCORE"})");
  ASSERT_EQ(st.code(), 0) << st.reason();
  ASSERT_EQ(Load("s").code(), 0);
  pbm::DescribeIndexRequest di;
  di.set_collection_name("s");
  di.set_field_name("sv");
  pbm::DescribeIndexResponse dr;
  (void)svc_->DescribeIndex(nullptr, &di, &dr);
  ASSERT_EQ(dr.index_descriptions_size(), 1);
  std::map<std::string, std::string> kv;
  for (const auto& p : dr.index_descriptions(0).params()) kv[p.key()] = p.value();
  EXPECT_EQ(kv["index_type"], "SPARSE_WAND");
  EXPECT_EQ(kv["metric_type"], "IP");  // Milvus's default for sparse fields

  // Bad rows: unsorted or repeated indices, a short row, NaN. Nothing stored.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string unsorted = SparseBytes({{5, 1.f}}) + SparseBytes({{2, 1.f}});
  std::string repeated = SparseBytes({{5, 1.f}}) + SparseBytes({{5, 1.f}});
  for (const std::string& bad :
       {unsorted, repeated, std::string("\x01\x02\x03"), SparseBytes({{1, nan}})}) {
    pbm::InsertRequest req;
    Pks(&req, {1, 2});
    AddDense(&req, "v", {{0, 0}, {1, 1}});
    AddSparse(&req, "sv", {SparseBytes({{1, 1.f}}), bad});
    auto r = Insert(req, "s");
    EXPECT_NE(r.status().code(), 0);
    EXPECT_NE(r.status().reason().find("sv"), std::string::npos) << r.status().reason();
  }
  EXPECT_EQ(Count("s"), 0);
}

TEST_F(MilvusVectorTypesTest, SparseRowsSurviveReindexAndReopen) {
  ASSERT_EQ(Create("s", {{"v", pbs::FloatVector, 2}, {"sv", pbs::SparseFloatVector, 0}}).code(), 0);
  pbm::InsertRequest req;
  Pks(&req, {1, 2});
  AddDense(&req, "v", {{0, 0}, {1, 1}});
  AddSparse(&req, "sv", {SparseBytes({{4, 1.f}}), SparseBytes({{4, 3.f}, {9, 1.f}})});
  ASSERT_EQ(Insert(req, "s").status().code(), 0);
  // The dense index created over existing rows copies them: sparse vectors too.
  auto st = Index("s", "v", "HNSW", "L2");
  ASSERT_EQ(st.code(), 0) << st.reason();
  ASSERT_EQ(Index("s", "sv", "SPARSE_INVERTED_INDEX", "IP").code(), 0);
  ASSERT_EQ(Load("s").code(), 0);
  Reopen();
  auto r = Search("s", Req("sv", pbc::SparseFloatVector, {SparseBytes({{4, 1.f}})}, {}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Scores(r), (std::vector<float>{3.f, 1.f}));
}

TEST_F(MilvusVectorTypesTest, HybridSearchDenseAndSparse) {
  MakeSparse();
  // Dense from (3, 0) (L2): 4, 3, 2, 1. Sparse {7: 1}: only row 3.
  // RRF k=60: row 3 = 1/62 + 1/61 first, then row 4 (1/61), row 2 (1/63).
  float d[2] = {3, 0};
  pbm::HybridSearchRequest h;
  h.set_collection_name("s");
  *h.add_requests() =
      Req("v", pbc::FloatVector, {std::string(reinterpret_cast<char*>(d), 8)}, {{"topk", "3"}});
  *h.add_requests() = Req("sv", pbc::SparseFloatVector, {SparseBytes({{7, 1.f}})}, {{"topk", "3"}});
  for (const auto& [k, v] : KV{{"strategy", "rrf"}, {"params", R"({"k": 60})"}, {"limit", "3"}}) {
    auto* p = h.add_rank_params();
    p->set_key(k);
    p->set_value(v);
  }
  pbm::SearchResults resp;
  (void)svc_->HybridSearch(nullptr, &h, &resp);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().reason();
  EXPECT_EQ(Ids(resp), (std::vector<int64_t>{3, 4, 2}));
  EXPECT_NEAR(Scores(resp)[0], 1.0 / 62 + 1.0 / 61, 1e-6);
}

// Bits in numpy.packbits order: bit j of a row is bit 7 - j % 8 of byte j / 8.
std::string Bits(const std::string& s) {
  std::string out((s.size() + 7) / 8, '\0');
  for (size_t j = 0; j < s.size(); ++j) {
    if (s[j] == '1') out[j / 8] |= static_cast<char>(1u << (7 - j % 8));
  }
  return out;
}

class MilvusBinaryTest : public MilvusVectorTypesTest {
 protected:
  // Rows 1..4 of 16 bits, searched from q below:
  //   q  = 1111000000000000
  //   r1 = 1111000000000000  hamming 0, jaccard 0
  //   r2 = 1100000000000000  hamming 2, jaccard 1 - 2/4 = 0.5
  //   r3 = 1111111111110000  hamming 8, jaccard 1 - 4/12 = 0.667
  //   r4 = 0000000000000111  hamming 7, jaccard 1 - 0/7 = 1
  void Make(const std::string& name, const std::string& type, const std::string& metric) {
    ASSERT_EQ(Create(name, {{"bv", pbs::BinaryVector, 16}}).code(), 0);
    auto st = Index(name, "bv", type, metric);
    ASSERT_EQ(st.code(), 0) << st.reason();
    ASSERT_EQ(Load(name).code(), 0);
    pbm::InsertRequest req;
    Pks(&req, {1, 2, 3, 4});
    AddBinary(&req, "bv", 16,
              Bits("1111000000000000") + Bits("1100000000000000") + Bits("1111111111110000") +
                  Bits("0000000000000111"));
    auto r = Insert(req, name);
    ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  }
  const std::string q_ = Bits("1111000000000000");
};

TEST_F(MilvusBinaryTest, BinFlatHamming) {
  Make("b", "BIN_FLAT", "HAMMING");
  auto r = Search("b", Req("bv", pbc::BinaryVector, {q_}, {{"topk", "4"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{1, 2, 4, 3}));
  EXPECT_EQ(Scores(r), (std::vector<float>{0, 2, 7, 8}));
  // Range search on HAMMING (smaller is closer): range_filter <= d < radius.
  r = Search("b", Req("bv", pbc::BinaryVector, {q_},
                      {{"topk", "4"}, {"params", R"({"radius": 8, "range_filter": 1})"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 4}));
  // The rows come back packed as inserted.
  auto qr = Query("b", "pk == 3", {"bv"});
  ASSERT_EQ(qr.status().code(), 0) << qr.status().reason();
  for (const auto& f : qr.fields_data()) {
    if (f.field_name() != "bv") continue;
    EXPECT_EQ(f.type(), pbs::BinaryVector);
    EXPECT_EQ(f.vectors().dim(), 16);
    EXPECT_EQ(f.vectors().binary_vector(), Bits("1111111111110000"));
  }
  // A query of the wrong size, or float query vectors: refused.
  r = Search("b", Req("bv", pbc::BinaryVector, {q_ + q_}, {}));
  EXPECT_NE(r.status().code(), 0);
  float d[16] = {};
  r = Search("b", Req("bv", pbc::FloatVector, {std::string(reinterpret_cast<char*>(d), 64)}, {}));
  EXPECT_NE(r.status().code(), 0);
}

TEST_F(MilvusBinaryTest, BinFlatJaccardIsExact) {
  Make("b", "BIN_FLAT", "JACCARD");
  auto r = Search("b", Req("bv", pbc::BinaryVector, {q_}, {{"topk", "3"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_EQ(Scores(r).size(), 3u);
  EXPECT_FLOAT_EQ(Scores(r)[1], 0.5f);
  EXPECT_NEAR(Scores(r)[2], 1 - 4.0 / 12, 1e-6);
  // offset, and a filter.
  r = Search("b", Req("bv", pbc::BinaryVector, {q_}, {{"topk", "2"}, {"offset", "1"}}));
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{2, 3}));
  auto req = Req("bv", pbc::BinaryVector, {q_}, {{"topk", "2"}});
  req.set_dsl("pk > 2");
  r = Search("b", req);
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{3, 4}));
}

TEST_F(MilvusBinaryTest, BinIvfFlatHammingAndRefusals) {
  Make("b", "BIN_IVF_FLAT", "HAMMING");
  auto r = Search("b", Req("bv", pbc::BinaryVector, {q_}, {{"topk", "2"}}));
  ASSERT_EQ(r.status().code(), 0) << r.status().reason();
  EXPECT_EQ(Ids(r), (std::vector<int64_t>{1, 2}));

  ASSERT_EQ(Create("x", {{"bv", pbs::BinaryVector, 16}}).code(), 0);
  auto st = Index("x", "bv", "BIN_IVF_FLAT", "JACCARD", R"({"nlist": 4})");
  EXPECT_NE(st.reason().find("BIN_FLAT"), std::string::npos) << st.reason();
  EXPECT_NE(Index("x", "bv", "HNSW", "HAMMING").code(), 0);
  EXPECT_NE(Index("x", "bv", "BIN_FLAT", "L2").code(), 0);
  // Milvus's default metric for binary fields is HAMMING.
  ASSERT_EQ(Index("x", "bv", "BIN_FLAT", "").code(), 0);
  ASSERT_EQ(Load("x").code(), 0);
  // A float field takes no binary metric.
  ASSERT_EQ(Create("f", {{"v", pbs::FloatVector, 2}}).code(), 0);
  EXPECT_NE(Index("f", "v", "FLAT", "HAMMING").code(), 0);
  // Rows of the wrong size: refused, nothing stored.
  pbm::InsertRequest req;
  Pks(&req, {1, 2});
  AddBinary(&req, "bv", 16, Bits("1111") + Bits("1"));
  auto ins = Insert(req, "x");
  EXPECT_NE(ins.status().code(), 0);
  EXPECT_NE(ins.status().reason().find("bv"), std::string::npos);
  EXPECT_EQ(Count("x"), 0);
}

}  // namespace
}  // namespace strata::milvus
