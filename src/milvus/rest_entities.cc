// The entity endpoints of the Milvus REST API (rest.h): insert, upsert,
// delete, get, query, search and hybrid_search, each built into the RPC
// request the gRPC SDKs send and answered in Milvus's REST row format.
#include <charconv>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "milvus/errors.h"
#include "milvus/rest_call.h"

namespace strata::milvus {

using json = nlohmann::json;

namespace {

json IdList(const pbs::IDs& ids, bool allow_int64) {
  json out = json::array();
  if (ids.has_int_id()) {
    for (int64_t x : ids.int_id().data())
      out.push_back(allow_int64 ? json(x) : json(std::to_string(x)));
  } else if (ids.has_str_id()) {
    for (const std::string& s : ids.str_id().data()) out.push_back(s);
  }
  return out;
}

const pbs::FieldSchema* PrimaryField(const pbs::CollectionSchema& s) {
  for (const auto& f : s.fields()) {
    if (f.is_primary_key()) return &f;
  }
  return nullptr;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

bool ValidConsistency(const std::string& s, pbc::ConsistencyLevel* lvl) {
  return pbc::ConsistencyLevel_Parse(s, lvl);
}

}  // namespace

RestReply RestHandler::Call::Entities(std::string_view action) {
  if (action == "insert") return Write(true);
  if (action == "upsert") return Write(false);
  if (action == "delete") return Delete();
  if (action == "query") return Query(false);
  if (action == "get") return Query(true);
  if (action == "search") return Search();
  if (action == "hybrid_search") return HybridSearch();
  return NotFound();
}

RestReply RestHandler::Call::Write(bool insert) {
  const std::string name = Str("collectionName", true);
  const json* data = Get("data");
  if (data == nullptr) {
    Fail(kCodeMissingRequiredParameters, "missing required parameters, error: data is required");
  }
  const pbs::CollectionSchema schema = Schema(name);
  const std::string partition = Str("partitionName", false);
  if (insert) {
    pbm::InsertRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    req.set_partition_name(partition);
    req.set_num_rows(RowsToColumns(schema, *data, req.mutable_fields_data()));
    auto resp = Rpc(&MilvusServiceImpl::Insert, req);
    return Ok({{"insertCount", resp.insert_cnt()}, {"insertIds", IdList(resp.ids(), allow_int64)}});
  }
  pbm::UpsertRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  req.set_partition_name(partition);
  req.set_num_rows(RowsToColumns(schema, *data, req.mutable_fields_data()));
  auto resp = Rpc(&MilvusServiceImpl::Upsert, req);
  return Ok({{"upsertCount", resp.upsert_cnt()}, {"upsertIds", IdList(resp.ids(), allow_int64)}});
}

// `pk in [...]` for the ids in `id` (one id or an array), typed as the key.
std::string RestHandler::Call::PkFilter(const pbs::CollectionSchema& schema, const json& id) const {
  const pbs::FieldSchema* pk = PrimaryField(schema);
  if (pk == nullptr) Fail(kCodeCheckPrimaryKey, "the collection has no primary key");
  const json ids = id.is_array() ? id : json::array({id});
  if (ids.empty()) {
    Fail(kCodeCheckPrimaryKey,
         "please check the primary key and its' type can only in [int, string], error: no ids");
  }
  std::string list;
  for (const json& v : ids) {
    if (!list.empty()) list += ", ";
    if (pk->data_type() == pbs::Int64) {
      int64_t x = 0;
      const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if ((!v.is_number_integer() && !v.is_string()) || ec != std::errc() ||
          p != s.data() + s.size()) {
        Fail(kCodeCheckPrimaryKey,
             fmt::format("please check the primary key and its' type can only in [int, string], "
                         "error: {} is not an Int64 id",
                         v.dump()));
      }
      list += std::to_string(x);
    } else {
      if (!v.is_string()) {
        Fail(kCodeCheckPrimaryKey,
             fmt::format("please check the primary key and its' type can only in [int, string], "
                         "error: {} is not a VarChar id",
                         v.dump()));
      }
      list += Quote(v.get<std::string>());
    }
  }
  return fmt::format("{} in [{}]", pk->name(), list);
}

RestReply RestHandler::Call::Delete() {
  const std::string name = Str("collectionName", true);
  pbm::DeleteRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  req.set_partition_name(Str("partitionName", false));
  std::string filter = Str("filter", false);
  if (filter.empty()) {
    const json* id = Get("id");
    if (id == nullptr) {
      Fail(kCodeMissingRequiredParameters,
           "missing required parameters, error: filter is required (or id)");
    }
    filter = PkFilter(Schema(name), *id);
  }
  req.set_expr(filter);
  if (const json* p = Get("exprParams")) TemplateParams(*p, req.mutable_expr_template_values());
  auto resp = Rpc(&MilvusServiceImpl::Delete, req);
  return Ok({{"deleteCount", resp.delete_cnt()}});
}

RestReply RestHandler::Call::Query(bool by_id) {
  const std::string name = Str("collectionName", true);
  pbm::QueryRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  std::vector<std::string> out = StrList("outputFields", false);
  if (out.empty()) out.push_back("*");
  for (const auto& f : out) req.add_output_fields(f);
  for (const auto& p : StrList("partitionNames", false)) req.add_partition_names(p);
  const std::string partition = Str("partitionName", false);
  if (!partition.empty()) req.add_partition_names(partition);
  if (by_id) {
    const json* id = Get("id");
    if (id == nullptr)
      Fail(kCodeMissingRequiredParameters, "missing required parameters, error: id is required");
    req.set_expr(PkFilter(Schema(name), *id));
  } else {
    req.set_expr(Str("filter", false));
    if (const json* p = Get("exprParams")) TemplateParams(*p, req.mutable_expr_template_values());
    const bool count = out.size() == 1 && out[0] == "count(*)";
    const int64_t limit = Int("limit", 100);
    const int64_t offset = Int("offset", 0);
    auto add = [&req](const char* k, int64_t v) {
      auto* kv = req.add_query_params();
      kv->set_key(k);
      kv->set_value(std::to_string(v));
    };
    if (offset > 0) add("offset", offset);
    if (limit > 0 && !count) add("limit", limit);
  }
  const std::string level = Str("consistencyLevel", false);
  if (!level.empty()) {
    pbc::ConsistencyLevel lvl;
    if (!ValidConsistency(level, &lvl)) {
      Fail(kCodeParameterInvalid,
           fmt::format("parameter:'{}' is incorrect, please check it", level));
    }
    req.set_consistency_level(lvl);
  } else {
    req.set_use_default_consistency(true);
  }
  auto resp = Rpc(&MilvusServiceImpl::Query, req);
  return Ok(ColumnsToRows(resp.fields_data(), nullptr, nullptr, 0, ColumnRows(resp.fields_data()),
                          allow_int64));
}

void RestHandler::Call::SearchParamsKv(
    const json& holder, const char* params_key,
    google::protobuf::RepeatedPtrField<pbc::KeyValuePair>* kv) const {
  json params = json::object();
  std::string metric;
  auto add = [kv](const std::string& k, const std::string& v) {
    auto* e = kv->Add();
    e->set_key(k);
    e->set_value(v);
  };
  if (const json* m = FindKey(holder, "metricType"); m != nullptr && m->is_string()) {
    metric = m->get<std::string>();
  }
  if (const json* sp = FindKey(holder, params_key); sp != nullptr && !sp->is_null()) {
    if (!sp->is_object()) {
      Fail(kCodeIncorrectParameterFormat,
           fmt::format("can only accept json format request, error: {} must be an object",
                       params_key));
    }
    for (auto it = sp->begin(); it != sp->end(); ++it) {
      const std::string& k = it.key();
      if (IEquals(k, "params")) {
        if (!it->is_object())
          Fail(kCodeIncorrectParameterFormat, "search params.params must be an object");
        for (auto p = it->begin(); p != it->end(); ++p) params[p.key()] = p.value();
      } else if (IEquals(k, "metricType") || IEquals(k, "metric_type")) {
        if (!it->is_string()) Fail(kCodeIncorrectParameterFormat, "metricType must be a string");
        metric = it->get<std::string>();
      } else if (IEquals(k, "ignoreGrowing") || IEquals(k, "ignore_growing")) {
        add("ignore_growing", it->dump());
      } else {
        params[k] = it.value();
      }
    }
  }
  add("params", params.dump());
  if (!metric.empty()) add("metric_type", metric);
  add("round_decimal", "-1");
}

namespace {

// The vector field a search names, or the only one.
const pbs::FieldSchema& AnnsField(const pbs::CollectionSchema& s, const std::string& name) {
  const pbs::FieldSchema* found = nullptr;
  for (const auto& f : s.fields()) {
    const bool vec = f.data_type() >= pbs::BinaryVector && f.data_type() <= pbs::Int8Vector;
    if (!vec) continue;
    if (!name.empty()) {
      if (f.name() == name) return f;
      continue;
    }
    if (found != nullptr) {
      Fail(kCodeIncorrectParameterFormat,
           fmt::format("can only accept json format request, error: search without annsField, "
                       "but already found multiple vector fields: [{}, {},,,]",
                       found->name(), f.name()));
    }
    found = &f;
  }
  if (found == nullptr) {
    Fail(kCodeIncorrectParameterFormat,
         fmt::format("can only accept json format request, error: cannot find a vector field "
                     "named: {}",
                     name));
  }
  return *found;
}

void AddKv(google::protobuf::RepeatedPtrField<pbc::KeyValuePair>* kv, const std::string& k,
           const std::string& v) {
  auto* e = kv->Add();
  e->set_key(k);
  e->set_value(v);
}

}  // namespace

RestReply RestHandler::Call::SearchReply(const pbm::SearchResults& resp) const {
  const pbs::SearchResultData& r = resp.results();
  size_t total = 0;
  if (r.ids().has_int_id()) total = static_cast<size_t>(r.ids().int_id().data_size());
  if (r.ids().has_str_id()) total = static_cast<size_t>(r.ids().str_id().data_size());
  RestReply reply = Ok(r.top_k() == 0 ? json::array()
                                      : ColumnsToRows(r.fields_data(), &r.ids(), &r.scores(), 0,
                                                      total, allow_int64));
  if (r.topks_size() > 1)
    reply.body["topks"] = json(std::vector<int64_t>(r.topks().begin(), r.topks().end()));
  return reply;
}

RestReply RestHandler::Call::Search() {
  const std::string name = Str("collectionName", true);
  const json* data = Get("data");
  if (data == nullptr)
    Fail(kCodeMissingRequiredParameters, "missing required parameters, error: data is required");
  const pbs::CollectionSchema schema = Schema(name);
  const pbs::FieldSchema& field = AnnsField(schema, Str("annsField", false));
  pbm::SearchRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  req.set_dsl(Str("filter", false));
  req.set_dsl_type(pbc::BoolExprV1);
  for (const auto& f : StrList("outputFields", false)) req.add_output_fields(f);
  for (const auto& p : StrList("partitionNames", false)) req.add_partition_names(p);
  int64_t nq = 0;
  req.set_placeholder_group(QueryVectors(field, *data, &nq));
  req.set_nq(nq);
  auto* kv = req.mutable_search_params();
  SearchParamsKv(body, "searchParams", kv);
  AddKv(kv, "topk", std::to_string(Int("limit", 100)));
  AddKv(kv, "offset", std::to_string(Int("offset", 0)));
  AddKv(kv, "anns_field", field.name());
  const std::string group = Str("groupingField", false);
  if (!group.empty()) {
    AddKv(kv, "group_by_field", group);
    const int64_t gs = Int("groupSize", 0);
    if (gs > 0) {
      AddKv(kv, "group_size", std::to_string(gs));
      AddKv(kv, "strict_group_size", Bool("strictGroupSize", false) ? "true" : "false");
    }
  }
  if (const json* p = Get("exprParams")) TemplateParams(*p, req.mutable_expr_template_values());
  const std::string level = Str("consistencyLevel", false);
  if (!level.empty()) {
    pbc::ConsistencyLevel lvl;
    if (!ValidConsistency(level, &lvl)) {
      Fail(kCodeParameterInvalid,
           "consistencyLevel can only be [Strong, Session, Bounded, "
           "Eventually, Customized], default: Bounded");
    }
    req.set_consistency_level(lvl);
  } else {
    req.set_use_default_consistency(true);
  }
  return SearchReply(Rpc(&MilvusServiceImpl::Search, req));
}

RestReply RestHandler::Call::HybridSearch() {
  const std::string name = Str("collectionName", true);
  const json* subs = Get("search");
  if (subs == nullptr || !subs->is_array() || subs->empty()) {
    Fail(kCodeMissingRequiredParameters, "missing required parameters, error: search is required");
  }
  const pbs::CollectionSchema schema = Schema(name);
  pbm::HybridSearchRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  const auto outputs = StrList("outputFields", false);
  const auto parts = StrList("partitionNames", false);
  for (const auto& f : outputs) req.add_output_fields(f);
  for (const auto& p : parts) req.add_partition_names(p);
  for (const json& sub : *subs) {
    if (!sub.is_object()) Fail(kCodeIncorrectParameterFormat, "search[] must hold objects");
    Call s{svc, sub, allow_int64, db, path};
    const json* data = s.Get("data");
    if (data == nullptr)
      Fail(kCodeMissingRequiredParameters,
           "missing required parameters, error: search[].data is required");
    const pbs::FieldSchema& field = AnnsField(schema, s.Str("annsField", false));
    pbm::SearchRequest* sr = req.add_requests();
    sr->set_db_name(db);
    sr->set_collection_name(name);
    sr->set_dsl(s.Str("filter", false));
    sr->set_dsl_type(pbc::BoolExprV1);
    for (const auto& f : outputs) sr->add_output_fields(f);
    for (const auto& p : parts) sr->add_partition_names(p);
    int64_t nq = 0;
    sr->set_placeholder_group(QueryVectors(field, *data, &nq));
    sr->set_nq(nq);
    auto* kv = sr->mutable_search_params();
    SearchParamsKv(sub, "params", kv);
    AddKv(kv, "topk", std::to_string(s.Int("limit", 100)));
    AddKv(kv, "offset", std::to_string(s.Int("offset", 0)));
    AddKv(kv, "anns_field", field.name());
    if (const json* p = s.Get("exprParams")) TemplateParams(*p, sr->mutable_expr_template_values());
  }
  auto* rank = req.mutable_rank_params();
  const json* rerank = Get("rerank");
  std::string strategy = "rrf";
  json rparams = json::object();
  if (rerank != nullptr) {
    Call rr{svc, *rerank, allow_int64, db, path};
    strategy = rr.Str("strategy", true);
    if (const json* p = rr.Get("params")) rparams = *p;
  }
  AddKv(rank, "strategy", strategy);
  AddKv(rank, "params", rparams.dump());
  AddKv(rank, "limit", std::to_string(Int("limit", 100)));
  AddKv(rank, "round_decimal", "-1");
  const std::string group = Str("groupingField", false);
  if (!group.empty()) AddKv(rank, "group_by_field", group);
  req.set_use_default_consistency(true);
  return SearchReply(Rpc(&MilvusServiceImpl::HybridSearch, req));
}

}  // namespace strata::milvus
