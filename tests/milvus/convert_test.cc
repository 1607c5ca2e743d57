// The Milvus schema and type mapping, and the conversions between protocol
// messages and engine rows, without a socket.
#include "milvus/convert.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "milvus/meta.h"
#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

namespace ps = ::milvus::proto::schema;

ps::FieldSchema* AddField(ps::CollectionSchema* s, const std::string& name, ps::DataType t,
                          std::vector<std::pair<std::string, std::string>> params = {}) {
  auto* f = s->add_fields();
  f->set_name(name);
  f->set_data_type(t);
  for (auto& [k, v] : params) {
    auto* p = f->add_type_params();
    p->set_key(k);
    p->set_value(v);
  }
  return f;
}

// The issue's schema: id INT64 auto_id primary, embedding dim 4, text
// VARCHAR 16, source VARCHAR 256, timestamp INT64, plus a JSON field.
ps::CollectionSchema DocsSchema() {
  ps::CollectionSchema s;
  s.set_name("docs");
  auto* id = AddField(&s, "id", ps::Int64);
  id->set_is_primary_key(true);
  id->set_autoid(true);
  AddField(&s, "embedding", ps::FloatVector, {{"dim", "4"}});
  AddField(&s, "text", ps::VarChar, {{"max_length", "16"}});
  AddField(&s, "source", ps::VarChar, {{"max_length", "256"}});
  AddField(&s, "timestamp", ps::Int64);
  AddField(&s, "meta", ps::JSON);
  s.set_enable_dynamic_field(true);
  return s;
}

TEST(MilvusSchemaTest, MapsTypesOntoTheEngine) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  ASSERT_NE(m.Primary(), nullptr);
  EXPECT_EQ(m.Primary()->name, "id");
  EXPECT_TRUE(m.Primary()->auto_id);
  EXPECT_EQ(m.Field("embedding")->dim, 4u);
  EXPECT_EQ(m.Field("text")->max_length, 16u);
  EXPECT_GE(m.Field("id")->id, 100);  // Milvus field ids start at 100
  EXPECT_NE(m.Field("id")->id, m.Field("text")->id);
  ASSERT_OK_AND_ASSIGN(auto vs, ToVectorSchema(m));
  ASSERT_EQ(vs.vectors.size(), 1u);
  EXPECT_EQ(vs.vectors[0].name, "embedding");
  EXPECT_EQ(vs.vectors[0].index.dim, 4u);
  std::map<std::string, vector::PayloadType> typed;
  for (const auto& p : vs.payload) typed[p.name] = p.type;
  EXPECT_EQ(typed.at("id"), vector::PayloadType::kInteger);
  EXPECT_EQ(typed.at("timestamp"), vector::PayloadType::kInteger);
  EXPECT_EQ(typed.at("source"), vector::PayloadType::kKeyword);
  EXPECT_EQ(typed.count("meta"), 0u);  // JSON: stored, not typed
}

TEST(MilvusSchemaTest, RejectsSchemasItCannotServe) {
  auto no_pk = DocsSchema();
  no_pk.mutable_fields(0)->set_is_primary_key(false);
  no_pk.mutable_fields(0)->set_autoid(false);
  EXPECT_EQ(MetaFromProto(no_pk).error().code(), StatusCode::kInvalidArgument);

  auto float_pk = DocsSchema();
  float_pk.mutable_fields(0)->set_data_type(ps::Float);
  EXPECT_EQ(MetaFromProto(float_pk).error().code(), StatusCode::kInvalidArgument);

  auto no_len = DocsSchema();
  no_len.mutable_fields(2)->clear_type_params();
  auto r = MetaFromProto(no_len);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("max_length"), std::string::npos);

  auto int8v = DocsSchema();
  AddField(&int8v, "iv", ps::Int8Vector);
  r = MetaFromProto(int8v);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kNotSupported);
  EXPECT_NE(r.error().message().find("iv"), std::string::npos);

  // Milvus: a sparse field has no dim; a binary field's dim is a multiple of 8.
  auto sparse_dim = DocsSchema();
  AddField(&sparse_dim, "sv", ps::SparseFloatVector, {{"dim", "8"}});
  r = MetaFromProto(sparse_dim);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("sv"), std::string::npos);
  auto bin12 = DocsSchema();
  AddField(&bin12, "bv", ps::BinaryVector, {{"dim", "12"}});
  r = MetaFromProto(bin12);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("multiple of 8"), std::string::npos);

  auto no_vec = DocsSchema();
  no_vec.mutable_fields()->DeleteSubrange(1, 1);
  EXPECT_FALSE(MetaFromProto(no_vec));

  auto varchar_auto = DocsSchema();
  varchar_auto.mutable_fields(0)->set_data_type(ps::VarChar);
  auto* p = varchar_auto.mutable_fields(0)->add_type_params();
  p->set_key("max_length");
  p->set_value("64");
  EXPECT_EQ(MetaFromProto(varchar_auto).error().code(), StatusCode::kNotSupported);
}

TEST(MilvusSchemaTest, IndexParams) {
  IndexMeta h{"embedding", "embedding", "HNSW", "IP", {{"M", "32"}, {"efConstruction", "256"}}};
  ASSERT_OK_AND_ASSIGN(auto p, ToIndexParams(h, 8));
  EXPECT_EQ(p.type, vector::IndexType::kHnsw);
  EXPECT_EQ(p.metric, vector::Metric::kInnerProduct);
  EXPECT_EQ(p.hnsw_m, 32u);
  EXPECT_EQ(p.hnsw_ef_construction, 256u);

  IndexMeta pq{"e", "e", "IVF_PQ", "L2", {{"nlist", "16"}, {"m", "3"}}};
  EXPECT_FALSE(ToIndexParams(pq, 8));  // m must divide the dimension
  pq.params = {{"nlist", "16"}, {"m", "4"}, {"nbits", "8"}};
  ASSERT_OK_AND_ASSIGN(p, ToIndexParams(pq, 8));
  EXPECT_EQ(p.type, vector::IndexType::kIvfPq);
  EXPECT_EQ(p.ivf_nlist, 16u);
  EXPECT_EQ(p.pq_m, 4u);

  IndexMeta unknown_param{"e", "e", "HNSW", "COSINE", {{"nlist", "4"}}};
  EXPECT_FALSE(ToIndexParams(unknown_param, 8));
  IndexMeta bad_metric{"e", "e", "FLAT", "HAMMING", {}};
  EXPECT_FALSE(ToIndexParams(bad_metric, 8));
  IndexMeta bad_type{"e", "e", "SCANN", "L2", {}};
  EXPECT_FALSE(ToIndexParams(bad_type, 8));
  IndexMeta autoidx{"e", "e", "AUTOINDEX", "COSINE", {}};
  ASSERT_OK_AND_ASSIGN(p, ToIndexParams(autoidx, 8));
  EXPECT_EQ(p.metric, vector::Metric::kCosine);
  IndexMeta disk{"e", "e", "DISKANN", "L2", {}};
  ASSERT_OK_AND_ASSIGN(p, ToIndexParams(disk, 8));
  EXPECT_EQ(p.type, vector::IndexType::kDiskAnn);
}

TEST(MilvusSchemaTest, MetaJsonRoundTripAndIds) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  m.loaded = true;
  m.indexes.push_back({"embedding", "idx", "HNSW", "COSINE", {{"M", "16"}}, 7});
  ASSERT_OK_AND_ASSIGN(CollectionMeta back, MetaFromJson(MetaToJson(m)));
  EXPECT_TRUE(back.loaded);
  EXPECT_TRUE(back.enable_dynamic);
  ASSERT_EQ(back.fields.size(), m.fields.size());
  EXPECT_EQ(back.Field("text")->max_length, 16u);
  ASSERT_NE(back.IndexOf("embedding"), nullptr);
  EXPECT_EQ(back.IndexOf("embedding")->params, m.indexes[0].params);
  // Older files have no partitions: "_default" is there after reading.
  ASSERT_NE(back.Partition("_default"), nullptr);
  EXPECT_TRUE(back.Partition("_default")->loaded);
  back.partitions.push_back({"p1", 9, 123, false});
  ASSERT_OK_AND_ASSIGN(CollectionMeta again, MetaFromJson(MetaToJson(back)));
  ASSERT_EQ(again.partitions.size(), 2u);
  EXPECT_EQ(again.partitions[1].name, "p1");
  EXPECT_EQ(again.partitions[1].id, 9);
  EXPECT_EQ(again.partitions[1].created_ts, 123u);
  EXPECT_FALSE(again.partitions[1].loaded);
  again.SetLoaded(false);
  again.partitions[1].loaded = true;
  again.SyncLoaded();
  EXPECT_TRUE(again.loaded);  // loaded while any partition is
  EXPECT_EQ(IntOfId(IdOfInt(-5)), -5);
  EXPECT_NE(IdOfString("a"), IdOfString("b"));
  EXPECT_EQ(IdOfString("key-1"), IdOfString("key-1"));
}

// Column-oriented insert data for DocsSchema: rows with vectors (dim 4).
struct Columns {
  FieldDataList fields;
  ps::FieldData* vec;
  ps::FieldData* text;
};
Columns MakeColumns(uint32_t n, uint32_t dim = 4) {
  Columns c;
  c.vec = c.fields.Add();
  c.vec->set_field_name("embedding");
  c.vec->set_type(ps::FloatVector);
  c.vec->mutable_vectors()->set_dim(dim);
  for (uint32_t i = 0; i < n * dim; ++i)
    c.vec->mutable_vectors()->mutable_float_vector()->add_data(float(i));
  c.text = c.fields.Add();
  c.text->set_field_name("text");
  auto* src = c.fields.Add();
  src->set_field_name("source");
  auto* ts = c.fields.Add();
  ts->set_field_name("timestamp");
  auto* meta = c.fields.Add();
  meta->set_field_name("meta");
  for (uint32_t i = 0; i < n; ++i) {
    c.text->mutable_scalars()->mutable_string_data()->add_data("t" + std::to_string(i));
    src->mutable_scalars()->mutable_string_data()->add_data(i % 2 ? "arxiv" : "web");
    ts->mutable_scalars()->mutable_long_data()->add_data(1000 + i);
    meta->mutable_scalars()->mutable_json_data()->add_data("{\"k\":" + std::to_string(i) + "}");
  }
  return c;
}

TEST(MilvusConvertTest, RowsFromColumns) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  Columns c = MakeColumns(3);
  auto* dyn = c.fields.Add();
  dyn->set_field_name("$meta");
  dyn->set_is_dynamic(true);
  for (int i = 0; i < 3; ++i)
    dyn->mutable_scalars()->mutable_json_data()->add_data("{\"color\":\"red\"}");
  int64_t next = 41;
  ASSERT_OK_AND_ASSIGN(Rows rows, RowsFromFieldData(m, c.fields, 3, true, [&] { return ++next; }));
  ASSERT_EQ(rows.points.size(), 3u);
  ASSERT_EQ(rows.ids.int_id().data_size(), 3);
  EXPECT_EQ(rows.ids.int_id().data(0), 42);
  EXPECT_EQ(rows.points[2].id, IdOfInt(44));
  ASSERT_EQ(rows.points[1].vectors.size(), 1u);
  EXPECT_EQ(rows.points[1].vectors[0].name, "embedding");
  EXPECT_EQ(rows.points[1].vectors[0].values, (std::vector<float>{4, 5, 6, 7}));
  auto p = nlohmann::json::parse(rows.points[1].payload);
  EXPECT_EQ(p["id"], 43);
  EXPECT_EQ(p["source"], "arxiv");
  EXPECT_EQ(p["timestamp"], 1001);
  EXPECT_EQ(p["meta"]["k"], 1);
  EXPECT_EQ(p["color"], "red");  // dynamic keys are top-level payload keys
}

TEST(MilvusConvertTest, RejectsBadRowsNamingTheProblem) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  auto ids = [] { return int64_t{1}; };
  auto expect_error = [&](const FieldDataList& f, uint32_t n, const std::string& fragment) {
    auto r = RowsFromFieldData(m, f, n, true, ids);
    ASSERT_FALSE(r) << fragment;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(fragment), std::string::npos) << r.error().message();
  };
  expect_error(MakeColumns(2, 3).fields, 2, "dim");  // wrong dimension
  Columns c = MakeColumns(2);
  c.text->mutable_scalars()->mutable_string_data()->set_data(1, std::string(17, 'x'));
  expect_error(c.fields, 2, "max length");
  c = MakeColumns(2);
  c.fields.DeleteSubrange(1, 1);  // no text column
  expect_error(c.fields, 2, "text");
  c = MakeColumns(2);
  auto* pk = c.fields.Add();
  pk->set_field_name("id");
  pk->mutable_scalars()->mutable_long_data()->add_data(1);
  pk->mutable_scalars()->mutable_long_data()->add_data(2);
  expect_error(c.fields, 2, "auto_id");
  c = MakeColumns(2);
  c.fields.Add()->set_field_name("nope");
  expect_error(c.fields, 2, "nope");
  c = MakeColumns(2);
  c.text->mutable_scalars()->mutable_long_data()->add_data(1);  // wrong type for VARCHAR
  expect_error(c.fields, 2, "text");
  expect_error(MakeColumns(2).fields, 3, "num_rows");
}

TEST(MilvusConvertTest, OutputFieldsAndColumns) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  google::protobuf::RepeatedPtrField<std::string> req;
  *req.Add() = "source";
  *req.Add() = "color";  // a dynamic key
  ASSERT_OK_AND_ASSIGN(OutputFields out, ResolveOutputFields(m, req, true));
  ASSERT_EQ(out.fields.size(), 2u);
  EXPECT_EQ(out.fields[0]->name, "id");
  EXPECT_EQ(out.dynamic_keys, std::vector<std::string>{"color"});
  EXPECT_FALSE(out.with_vectors);

  vector::Record r1, r2;
  r1.id = IdOfInt(5);
  r1.payload = R"({"id":5,"source":"arxiv","color":"red","size":3})";
  r2.id = IdOfInt(6);
  r2.payload = R"({"id":6,"source":"web"})";
  FieldDataList cols;
  ASSERT_OK(RecordsToFieldData(m, out, {&r1, &r2}, &cols));
  ASSERT_EQ(cols.size(), 3);
  EXPECT_EQ(cols[0].scalars().long_data().data(1), 6);
  EXPECT_EQ(cols[1].scalars().string_data().data(0), "arxiv");
  EXPECT_TRUE(cols[2].is_dynamic());
  EXPECT_EQ(cols[2].scalars().json_data().data(0), R"({"color":"red"})");
  EXPECT_EQ(cols[2].scalars().json_data().data(1), "{}");

  // The hidden partition key never shows among the dynamic keys.
  google::protobuf::RepeatedPtrField<std::string> star;
  *star.Add() = "$meta";  // every dynamic key
  ASSERT_OK_AND_ASSIGN(OutputFields all, ResolveOutputFields(m, star, true));
  r1.payload = R"({"id":5,"source":"arxiv","color":"red","$partition":"p1"})";
  FieldDataList cols2;
  ASSERT_OK(RecordsToFieldData(m, all, {&r1}, &cols2));
  bool saw_meta = false;
  for (const auto& c : cols2) {
    if (!c.is_dynamic()) continue;
    saw_meta = true;
    EXPECT_EQ(c.scalars().json_data().data(0), R"({"color":"red"})");
  }
  EXPECT_TRUE(saw_meta);

  m.enable_dynamic = false;
  EXPECT_FALSE(ResolveOutputFields(m, req, true));  // "color" is no field
}

TEST(MilvusConvertTest, RefusesTheReservedPartitionKeyAsADynamicKey) {
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(DocsSchema()));
  Columns c = MakeColumns(1);
  auto* dyn = c.fields.Add();
  dyn->set_field_name("$meta");
  dyn->set_is_dynamic(true);
  dyn->mutable_scalars()->mutable_json_data()->add_data(R"({"$partition":"p9"})");
  auto r = RowsFromFieldData(m, c.fields, 1, true, [] { return int64_t{1}; });
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("reserved"), std::string::npos) << r.error().message();
}

TEST(MilvusConvertTest, QueryVectorsAndSearchParams) {
  ::milvus::proto::common::PlaceholderGroup g;
  auto* ph = g.add_placeholders();
  ph->set_tag("$0");
  ph->set_type(::milvus::proto::common::FloatVector);
  float v[4] = {1, 2, 3, 4};
  ph->add_values(std::string(reinterpret_cast<char*>(v), sizeof v));
  ASSERT_OK_AND_ASSIGN(auto qs, QueryVectors(g.SerializeAsString(), DataType::kFloatVector, 4));
  ASSERT_EQ(qs.size(), 1u);
  EXPECT_EQ(qs[0], (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(QueryVectors(g.SerializeAsString(), DataType::kFloatVector, 8));  // wrong dimension
  ph->set_type(::milvus::proto::common::BinaryVector);
  EXPECT_EQ(QueryVectors(g.SerializeAsString(), DataType::kFloatVector, 4).error().code(),
            StatusCode::kNotSupported);

  KvList kv;
  auto add = [&](const std::string& k, const std::string& val) {
    auto* p = kv.Add();
    p->set_key(k);
    p->set_value(val);
  };
  add("anns_field", "embedding");
  add("topk", "7");
  add("offset", "2");
  add("metric_type", "COSINE");
  add("params", R"({"ef": 128})");
  add("ignore_growing", "false");
  ASSERT_OK_AND_ASSIGN(SearchParams sp, ParseSearchParams(kv));
  EXPECT_EQ(sp.topk, 7u);
  EXPECT_EQ(sp.offset, 2u);
  EXPECT_EQ(sp.ef, 128u);
  EXPECT_EQ(sp.anns_field, "embedding");
  add("radius", "0.5");  // range search
  ASSERT_OK_AND_ASSIGN(sp, ParseSearchParams(kv));
  EXPECT_EQ(sp.radius, 0.5f);
  add("level", "2");  // not supported, and said so
  EXPECT_EQ(ParseSearchParams(kv).error().code(), StatusCode::kNotSupported);
  KvList bad;
  auto* p = bad.Add();
  p->set_key("params");
  p->set_value(R"({"efx": 1})");
  EXPECT_FALSE(ParseSearchParams(bad));
  p->set_key("topk");
  p->set_value("0");
  EXPECT_FALSE(ParseSearchParams(bad));
  // Query: ignore_growing=true would hide unflushed rows, which Strata cannot
  // do; false is what every query does anyway.
  KvList q;
  auto* qp = q.Add();
  qp->set_key("ignore_growing");
  qp->set_value("false");
  EXPECT_OK(ParseQueryParams(q).status());
  qp->set_value("true");
  EXPECT_EQ(ParseQueryParams(q).error().code(), StatusCode::kNotSupported);
}

// default_value: an omitted field, or a null row, takes the default; the
// default must fit the field; DescribeCollection answers it back.
TEST(MilvusConvertTest, DefaultValues) {
  auto s = DocsSchema();
  s.mutable_fields(3)->mutable_default_value()->set_string_data("unknown");  // source
  s.mutable_fields(4)->mutable_default_value()->set_long_data(7);            // timestamp
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(s));
  EXPECT_EQ(m.Field("source")->default_json, "\"unknown\"");
  ASSERT_OK_AND_ASSIGN(CollectionMeta back, MetaFromJson(MetaToJson(m)));
  EXPECT_EQ(back.Field("timestamp")->default_json, "7");
  ps::CollectionSchema described;
  MetaToProto(m, "docs", &described);
  EXPECT_EQ(described.fields(4).default_value().long_data(), 7);

  Columns c = MakeColumns(3);
  ASSERT_EQ(c.fields.Get(3).field_name(), "timestamp");
  c.fields.DeleteSubrange(3, 1);  // no timestamp column
  auto* src = c.fields.Mutable(2);
  ASSERT_EQ(src->field_name(), "source");
  for (bool v : {true, false, true}) src->add_valid_data(v);  // row 1: null
  int64_t next = 0;
  ASSERT_OK_AND_ASSIGN(Rows rows, RowsFromFieldData(m, c.fields, 3, true, [&] { return ++next; }));
  auto p1 = nlohmann::json::parse(rows.points[1].payload);
  EXPECT_EQ(p1["source"], "unknown");
  EXPECT_EQ(p1["timestamp"], 7);
  EXPECT_EQ(nlohmann::json::parse(rows.points[0].payload)["source"], "web");

  auto bad = DocsSchema();
  bad.mutable_fields(4)->mutable_default_value()->set_string_data("x");  // INT64 field
  EXPECT_FALSE(MetaFromProto(bad));
  bad = DocsSchema();
  bad.mutable_fields(2)->mutable_default_value()->set_string_data(std::string(17, 'x'));  // > 16
  EXPECT_FALSE(MetaFromProto(bad));
  bad = DocsSchema();
  bad.mutable_fields(5)->mutable_default_value()->set_string_data("{}");  // JSON
  EXPECT_FALSE(MetaFromProto(bad));
}

// ARRAY fields: element_type and max_capacity checked on insert, stored as
// a JSON array, answered back as ArrayArray of the element type.
TEST(MilvusConvertTest, ArrayFields) {
  auto s = DocsSchema();
  auto* tags = AddField(&s, "tags", ps::Array, {{"max_capacity", "3"}, {"max_length", "8"}});
  tags->set_element_type(ps::VarChar);
  ASSERT_OK_AND_ASSIGN(CollectionMeta m, MetaFromProto(s));
  EXPECT_EQ(m.Field("tags")->max_capacity, 3u);
  ASSERT_OK_AND_ASSIGN(CollectionMeta back, MetaFromJson(MetaToJson(m)));
  EXPECT_EQ(back.Field("tags")->element_type, DataType::kVarChar);
  ps::CollectionSchema described;
  MetaToProto(m, "docs", &described);
  EXPECT_EQ(described.fields(6).element_type(), ps::VarChar);

  Columns c = MakeColumns(2);
  auto* col = c.fields.Add();
  col->set_field_name("tags");
  auto* arr = col->mutable_scalars()->mutable_array_data();
  arr->set_element_type(ps::VarChar);
  for (auto row : {std::vector<std::string>{"a", "b"}, std::vector<std::string>{}}) {
    auto* e = arr->add_data()->mutable_string_data();
    for (const auto& x : row) e->add_data(x);
  }
  int64_t next = 0;
  ASSERT_OK_AND_ASSIGN(Rows rows, RowsFromFieldData(m, c.fields, 2, true, [&] { return ++next; }));
  EXPECT_EQ(nlohmann::json::parse(rows.points[0].payload)["tags"], nlohmann::json({"a", "b"}));

  std::vector<vector::Record> recs(2);
  recs[0].payload = rows.points[0].payload;
  recs[1].payload = rows.points[1].payload;
  OutputFields out;
  out.fields.push_back(m.Field("tags"));
  FieldDataList cols;
  ASSERT_OK(RecordsToFieldData(m, out, {&recs[0], &recs[1]}, &cols));
  const auto& got = cols.Get(0).scalars().array_data();
  EXPECT_EQ(got.element_type(), ps::VarChar);
  ASSERT_EQ(got.data_size(), 2);
  EXPECT_EQ(got.data(0).string_data().data(1), "b");
  EXPECT_EQ(got.data(1).string_data().data_size(), 0);

  // Over max_capacity, a too-long element, a wrong element type: refused.
  arr->mutable_data(1)->mutable_string_data()->add_data("1");
  for (const char* x : {"2", "3", "4"}) arr->mutable_data(1)->mutable_string_data()->add_data(x);
  EXPECT_FALSE(RowsFromFieldData(m, c.fields, 2, true, [&] { return ++next; }));
  arr->mutable_data(1)->mutable_string_data()->Clear();
  arr->mutable_data(1)->mutable_string_data()->add_data("toolongvalue");
  EXPECT_FALSE(RowsFromFieldData(m, c.fields, 2, true, [&] { return ++next; }));
  arr->mutable_data(1)->mutable_long_data()->add_data(1);
  EXPECT_FALSE(RowsFromFieldData(m, c.fields, 2, true, [&] { return ++next; }));
  auto bad = DocsSchema();
  AddField(&bad, "a", ps::Array, {{"max_capacity", "3"}})->set_element_type(ps::JSON);
  EXPECT_FALSE(MetaFromProto(bad));
}

TEST(MilvusConvertTest, HalfPrecisionConversions) {
  // IEEE 754 binary16 encodings.
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);               // the largest half
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);                   // overflow: infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToHalf(1.0f / 3), 0x3555);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half round-trips
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  // bfloat16: the top 16 bits of the float32, rounded to nearest even.
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(3.14159265f), 0x4049);
  EXPECT_EQ(BFloat16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(BFloat16ToFloat(0xbf80), -1.0f);
}

}  // namespace
}  // namespace strata::milvus
