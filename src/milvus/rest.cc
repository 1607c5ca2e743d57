// Milvus RESTful API v2 over MilvusServiceImpl (rest.h): routing, request
// parameters, and the collection / index / partition / alias endpoints. The
// entity endpoints are in rest_entities.cc.
#include "milvus/rest.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/core/strings.h>

#include "milvus/errors.h"
#include "milvus/rest_call.h"

namespace strata::milvus {

using json = nlohmann::json;

namespace {
constexpr log::Logger kLog("milvus");
}  // namespace

// ---- parameters ----

const json* RestHandler::Call::Get(std::string_view key) const {
  const json* v = FindKey(body, key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

std::string RestHandler::Call::Str(std::string_view key, bool required) const {
  const json* v = Get(key);
  if (v == nullptr) {
    if (required) {
      Fail(kCodeMissingRequiredParameters,
           fmt::format("missing required parameters, error: {} is required", key));
    }
    return "";
  }
  if (!v->is_string()) {
    Fail(kCodeIncorrectParameterFormat,
         fmt::format("can only accept json format request, error: {} must be a string", key));
  }
  return v->get<std::string>();
}

int64_t RestHandler::Call::Int(std::string_view key, int64_t dflt) const {
  const json* v = Get(key);
  if (v == nullptr) return dflt;
  if (!v->is_number_integer()) {
    Fail(kCodeIncorrectParameterFormat,
         fmt::format("can only accept json format request, error: {} must be an integer", key));
  }
  return v->get<int64_t>();
}

bool RestHandler::Call::Bool(std::string_view key, bool dflt) const {
  const json* v = Get(key);
  if (v == nullptr) return dflt;
  if (!v->is_boolean()) {
    Fail(kCodeIncorrectParameterFormat,
         fmt::format("can only accept json format request, error: {} must be true or false", key));
  }
  return v->get<bool>();
}

std::vector<std::string> RestHandler::Call::StrList(std::string_view key, bool required) const {
  const json* v = Get(key);
  std::vector<std::string> out;
  if (v == nullptr) {
    if (required) {
      Fail(kCodeMissingRequiredParameters,
           fmt::format("missing required parameters, error: {} is required", key));
    }
    return out;
  }
  if (!v->is_array()) {
    Fail(kCodeIncorrectParameterFormat,
         fmt::format("can only accept json format request, error: {} must be an array", key));
  }
  for (const json& e : *v) {
    if (!e.is_string()) {
      Fail(kCodeIncorrectParameterFormat,
           fmt::format("can only accept json format request, error: {} must hold strings", key));
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

void RestHandler::Call::Check(const grpc::Status& g, const pbc::Status& st) {
  if (!g.ok()) Fail(kCodeUndefined, g.error_message());
  if (st.code() != 0 || st.error_code() != pbc::Success) {
    Fail(st.code() != 0 ? st.code() : kCodeUndefined, st.reason());
  }
}

RestReply RestHandler::Call::Ok(json data) {
  return RestReply{200, json{{"code", 0}, {"data", std::move(data)}}};
}

pbs::CollectionSchema RestHandler::Call::Schema(const std::string& collection) const {
  pbm::DescribeCollectionRequest req;
  req.set_db_name(db);
  req.set_collection_name(collection);
  auto resp = Rpc(&MilvusServiceImpl::DescribeCollection, req);
  return resp.schema();
}

// ---- collections ----

namespace {

std::string ParamText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

pbs::FieldSchema FieldFromJson(const json& f, bool auto_id) {
  if (!f.is_object()) Fail(kCodeIncorrectParameterFormat, "schema.fields must hold objects");
  RestHandler::Call c{nullptr, f, false, "", ""};
  pbs::FieldSchema out;
  out.set_name(c.Str("fieldName", true));
  out.set_data_type(DataTypeFromName(c.Str("dataType", true)));
  out.set_is_primary_key(c.Bool("isPrimary", false));
  out.set_is_partition_key(c.Bool("isPartitionKey", false));
  out.set_is_clustering_key(c.Bool("isClusteringKey", false));
  out.set_nullable(c.Bool("nullable", false));
  out.set_description(c.Str("description", false));
  if (out.is_primary_key()) out.set_autoid(auto_id);
  if (out.data_type() == pbs::Array) {
    out.set_element_type(DataTypeFromName(c.Str("elementDataType", true)));
  }
  if (const json* p = c.Get("elementTypeParams")) {
    if (!p->is_object()) Fail(kCodeIncorrectParameterFormat, "elementTypeParams must be an object");
    for (auto it = p->begin(); it != p->end(); ++it) {
      auto* kv = out.add_type_params();
      kv->set_key(it.key());
      kv->set_value(ParamText(it.value()));
    }
  }
  if (const json* d = c.Get("defaultValue")) {
    pbs::ValueField* v = out.mutable_default_value();
    switch (out.data_type()) {
      case pbs::Bool:
        if (!d->is_boolean()) Fail(kCodeParameterInvalid, "defaultValue: expected a bool");
        v->set_bool_data(d->get<bool>());
        break;
      case pbs::Int8:
      case pbs::Int16:
      case pbs::Int32:
        if (!d->is_number_integer())
          Fail(kCodeParameterInvalid, "defaultValue: expected an integer");
        v->set_int_data(d->get<int32_t>());
        break;
      case pbs::Int64:
        if (!d->is_number_integer())
          Fail(kCodeParameterInvalid, "defaultValue: expected an integer");
        v->set_long_data(d->get<int64_t>());
        break;
      case pbs::Float:
        if (!d->is_number()) Fail(kCodeParameterInvalid, "defaultValue: expected a number");
        v->set_float_data(d->get<float>());
        break;
      case pbs::Double:
        if (!d->is_number()) Fail(kCodeParameterInvalid, "defaultValue: expected a number");
        v->set_double_data(d->get<double>());
        break;
      case pbs::VarChar:
        if (!d->is_string()) Fail(kCodeParameterInvalid, "defaultValue: expected a string");
        v->set_string_data(d->get<std::string>());
        break;
      default:
        Fail(kCodeParameterInvalid, fmt::format("defaultValue is not supported for {} fields",
                                                DataTypeToName(out.data_type())));
    }
  }
  return out;
}

// An indexParams entry as a CreateIndexRequest (Milvus's convertToExtraParams).
pbm::CreateIndexRequest IndexRequest(const std::string& db, const std::string& coll,
                                     const json& p) {
  RestHandler::Call c{nullptr, p, false, db, ""};
  pbm::CreateIndexRequest req;
  req.set_db_name(db);
  req.set_collection_name(coll);
  req.set_field_name(c.Str("fieldName", true));
  req.set_index_name(c.Str("indexName", false));
  auto add = [&req](const std::string& k, const std::string& v) {
    auto* kv = req.add_extra_params();
    kv->set_key(k);
    kv->set_value(v);
  };
  std::string type = c.Str("indexType", false);
  const json* params = c.Get("params");
  if (params != nullptr && !params->is_object()) {
    Fail(kCodeIncorrectParameterFormat, "indexParams[].params must be an object");
  }
  if (type.empty() && params != nullptr) {
    if (const json* t = FindKey(*params, "index_type")) type = ParamText(*t);
  }
  if (!type.empty()) add("index_type", type);
  const std::string metric = c.Str("metricType", false);
  if (!metric.empty()) add("metric_type", metric);
  if (params != nullptr && !params->empty()) {
    json rest = *params;
    rest.erase("index_type");
    if (!rest.empty()) add("params", rest.dump());
  }
  return req;
}

}  // namespace

RestReply RestHandler::Call::CreateCollection() {
  const std::string name = Str("collectionName", true);
  pbm::CreateCollectionRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  pbs::CollectionSchema schema;
  schema.set_name(name);
  schema.set_description(Str("description", false));
  const json* params = Get("params");
  if (params != nullptr && !params->is_object()) {
    Fail(kCodeIncorrectParameterFormat, "params must be an object");
  }
  Call p{svc, params != nullptr ? *params : json::object(), false, db, path};
  const json* sch = Get("schema");
  const json* fields = sch != nullptr ? FindKey(*sch, "fields") : nullptr;
  const bool quick = fields == nullptr || !fields->is_array() || fields->empty();
  std::vector<pbm::CreateIndexRequest> indexes;
  if (quick) {
    // Milvus's quick setup: a primary key, one FLOAT_VECTOR field, the
    // dynamic field on, an AUTOINDEX and a load.
    const int64_t dim = Int("dimension", 0);
    if (dim <= 0) {
      Fail(kCodeParameterInvalid,
           "invalid parameter[expected=collectionName & dimension][actual=collectionName]: "
           "dimension is required for quickly create collection(default metric type: COSINE)");
    }
    std::string id_type = Str("idType", false);
    pbs::FieldSchema* pk = schema.add_fields();
    pk->set_name(Str("primaryFieldName", false).empty() ? "id" : Str("primaryFieldName", false));
    pk->set_is_primary_key(true);
    pk->set_autoid(Bool("autoID", false));
    if (id_type == "VarChar" || id_type == "Varchar") {
      pk->set_data_type(pbs::VarChar);
      auto* kv = pk->add_type_params();
      kv->set_key("max_length");
      const json* ml = p.Get("max_length");
      kv->set_value(ml != nullptr ? ParamText(*ml) : "65535");
    } else if (id_type.empty() || id_type == "Int64" || id_type == "int64") {
      pk->set_data_type(pbs::Int64);
    } else {
      Fail(kCodeParameterInvalid,
           fmt::format("invalid parameter[expected=Int64, Varchar][actual={}]"
                       ": idType can only be [Int64, VarChar], default: Int64",
                       id_type));
    }
    pbs::FieldSchema* vec = schema.add_fields();
    const std::string vname = Str("vectorFieldName", false);
    vec->set_name(vname.empty() ? "vector" : vname);
    vec->set_data_type(pbs::FloatVector);
    auto* kv = vec->add_type_params();
    kv->set_key("dim");
    kv->set_value(std::to_string(dim));
    schema.set_enable_dynamic_field(p.Get("enableDynamicField") == nullptr ||
                                    ParamText(*p.Get("enableDynamicField")) == "true");
    json ip = {{"fieldName", vec->name()}, {"indexName", vec->name()}, {"indexType", "AUTOINDEX"}};
    const std::string metric = Str("metricType", false);
    ip["metricType"] = metric.empty() ? "COSINE" : metric;
    indexes.push_back(IndexRequest(db, name, ip));
  } else {
    Call s{svc, *sch, false, db, path};
    const bool auto_id = s.Bool("autoID", false);
    schema.set_enable_dynamic_field(s.Bool("enableDynamicField", false));
    for (const json& f : *fields) *schema.add_fields() = FieldFromJson(f, auto_id);
    if (const json* ips = Get("indexParams")) {
      if (!ips->is_array()) Fail(kCodeIncorrectParameterFormat, "indexParams must be an array");
      for (const json& ip : *ips) indexes.push_back(IndexRequest(db, name, ip));
    }
    for (const auto& ir : indexes) {
      bool found = false;
      for (const auto& f : schema.fields()) found |= f.name() == ir.field_name();
      if (!found) {
        Fail(kCodeMissingRequiredParameters,
             fmt::format("missing required parameters, error: `{}` hasn't defined in schema",
                         ir.field_name()));
      }
    }
  }
  req.set_schema(schema.SerializeAsString());
  if (const json* v = p.Get("shardsNum")) req.set_shards_num(std::stoi(ParamText(*v)));
  if (const json* v = p.Get("partitionsNum")) req.set_num_partitions(std::stoll(ParamText(*v)));
  if (const json* v = p.Get("consistencyLevel")) {
    pbc::ConsistencyLevel lvl;
    if (!pbc::ConsistencyLevel_Parse(ParamText(*v), &lvl)) {
      Fail(kCodeParameterInvalid,
           "consistencyLevel can only be [Strong, Session, Bounded, "
           "Eventually, Customized], default: Bounded");
    }
    req.set_consistency_level(lvl);
  }
  if (const json* v = p.Get("ttlSeconds")) {
    auto* kv = req.add_properties();
    kv->set_key("collection.ttl.seconds");
    kv->set_value(ParamText(*v));
  }
  pbc::Status st;
  Check((svc->*(&MilvusServiceImpl::CreateCollection))(nullptr, &req, &st), st);
  if (!quick && indexes.empty()) return Ok(json::object());
  for (const auto& ir : indexes) {
    pbc::Status ist;
    Check(svc->CreateIndex(nullptr, &ir, &ist), ist);
  }
  pbm::LoadCollectionRequest load;
  load.set_db_name(db);
  load.set_collection_name(name);
  pbc::Status lst;
  Check(svc->LoadCollection(nullptr, &load, &lst), lst);
  return Ok(json::object());
}

RestReply RestHandler::Call::DescribeCollection() {
  const std::string name = Str("collectionName", true);
  pbm::DescribeCollectionRequest req;
  req.set_db_name(db);
  req.set_collection_name(name);
  auto coll = Rpc(&MilvusServiceImpl::DescribeCollection, req);
  json fields = json::array();
  bool auto_id = false;
  for (const auto& f : coll.schema().fields()) {
    if (f.is_dynamic() || f.name() == "$meta") continue;
    if (f.is_primary_key()) auto_id = f.autoid();
    json fj = {{"name", f.name()},
               {"type", DataTypeToName(f.data_type())},
               {"id", f.fieldid()},
               {"primaryKey", f.is_primary_key()},
               {"partitionKey", f.is_partition_key()},
               {"clusteringKey", f.is_clustering_key()},
               {"autoId", f.autoid()},
               {"nullable", f.nullable()},
               {"description", f.description()}};
    json params = json::array();
    for (const auto& kv : f.type_params())
      params.push_back({{"key", kv.key()}, {"value", kv.value()}});
    fj["params"] = params;
    if (f.data_type() == pbs::Array) fj["elementType"] = DataTypeToName(f.element_type());
    fields.push_back(std::move(fj));
  }
  pbm::GetLoadStateRequest ls;
  ls.set_db_name(db);
  ls.set_collection_name(name);
  pbm::GetLoadStateResponse lsr;
  (void)svc->GetLoadState(nullptr, &ls, &lsr);
  pbm::DescribeIndexRequest di;
  di.set_db_name(db);
  di.set_collection_name(name);
  pbm::DescribeIndexResponse dir;
  (void)svc->DescribeIndex(nullptr, &di, &dir);
  json indexes = json::array();
  for (const auto& d : dir.index_descriptions()) {
    std::string metric;
    for (const auto& kv : d.params()) {
      if (kv.key() == "metric_type") metric = kv.value();
    }
    indexes.push_back(
        {{"indexName", d.index_name()}, {"fieldName", d.field_name()}, {"metricType", metric}});
  }
  json props = json::array();
  for (const auto& kv : coll.properties())
    props.push_back({{"key", kv.key()}, {"value", kv.value()}});
  json aliases = json::array();
  for (const auto& a : coll.aliases()) aliases.push_back(a);
  return Ok({{"collectionName", coll.collection_name()},
             {"collectionID", coll.collectionid()},
             {"description", coll.schema().description()},
             {"autoId", auto_id},
             {"fields", fields},
             {"functions", json::array()},
             {"aliases", aliases},
             {"indexes", indexes},
             {"load", pbc::LoadState_Name(lsr.state())},
             {"shardsNum", coll.shards_num()},
             {"partitionsNum", coll.num_partitions()},
             {"consistencyLevel", pbc::ConsistencyLevel_Name(coll.consistency_level())},
             {"enableDynamicField", coll.schema().enable_dynamic_field()},
             {"properties", props}});
}

namespace {
json RowCount(const google::protobuf::RepeatedPtrField<pbc::KeyValuePair>& stats) {
  for (const auto& kv : stats) {
    if (kv.key() == "row_count") {
      auto n = ParseUint64(kv.value());
      return n ? json{{"rowCount", *n}} : json{{"rowCount", kv.value()}};
    }
  }
  return json{{"rowCount", 0}};
}
}  // namespace

RestReply RestHandler::Call::Collections(std::string_view action) {
  if (action == "create") return CreateCollection();
  if (action == "describe") return DescribeCollection();
  if (action == "list") {
    pbm::ShowCollectionsRequest req;
    req.set_db_name(db);
    auto resp = Rpc(&MilvusServiceImpl::ShowCollections, req);
    return Ok(json(
        std::vector<std::string>(resp.collection_names().begin(), resp.collection_names().end())));
  }
  const std::string name = Str("collectionName", true);
  if (action == "has") {
    pbm::HasCollectionRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    return Ok({{"has", Rpc(&MilvusServiceImpl::HasCollection, req).value()}});
  }
  if (action == "drop")
    return Simple<pbm::DropCollectionRequest>(&MilvusServiceImpl::DropCollection, name);
  if (action == "load")
    return Simple<pbm::LoadCollectionRequest>(&MilvusServiceImpl::LoadCollection, name);
  if (action == "release") {
    return Simple<pbm::ReleaseCollectionRequest>(&MilvusServiceImpl::ReleaseCollection, name);
  }
  if (action == "rename") {
    pbm::RenameCollectionRequest req;
    req.set_db_name(db);
    req.set_oldname(name);
    req.set_newname(Str("newCollectionName", true));
    const std::string new_db = Str("newDbName", false);
    req.set_newdbname(new_db.empty() ? db : new_db);
    pbc::Status st;
    Check(svc->RenameCollection(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  if (action == "get_stats") {
    pbm::GetCollectionStatisticsRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    return Ok(RowCount(Rpc(&MilvusServiceImpl::GetCollectionStatistics, req).stats()));
  }
  if (action == "get_load_state") {
    pbm::GetLoadStateRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    for (const auto& p : StrList("partitionNames", false)) req.add_partition_names(p);
    auto resp = Rpc(&MilvusServiceImpl::GetLoadState, req);
    if (resp.state() == pbc::LoadStateNotExist) {
      Fail(kCodeCollectionNotFound, fmt::format("collection not found[collection={}]", name));
    }
    json data = {{"loadState", pbc::LoadState_Name(resp.state())}};
    if (resp.state() != pbc::LoadStateNotLoad) {
      pbm::GetLoadingProgressRequest pr;
      pr.set_db_name(db);
      pr.set_collection_name(name);
      for (const auto& p : req.partition_names()) pr.add_partition_names(p);
      const int64_t progress = Rpc(&MilvusServiceImpl::GetLoadingProgress, pr).progress();
      data["loadProgress"] = progress;
      data["loadState"] = progress >= 100 ? "LoadStateLoaded" : "LoadStateLoading";
    }
    return Ok(data);
  }
  return NotFound();
}

// ---- indexes, partitions, aliases ----

RestReply RestHandler::Call::Indexes(std::string_view action) {
  const std::string name = Str("collectionName", true);
  if (action == "create") {
    const json* ips = Get("indexParams");
    if (ips == nullptr || !ips->is_array() || ips->empty()) {
      Fail(kCodeMissingRequiredParameters,
           "missing required parameters, error: indexParams is required");
    }
    for (const json& ip : *ips) {
      pbm::CreateIndexRequest req = IndexRequest(db, name, ip);
      pbc::Status st;
      Check(svc->CreateIndex(nullptr, &req, &st), st);
    }
    return Ok(json::object());
  }
  pbm::DescribeIndexRequest di;
  di.set_db_name(db);
  di.set_collection_name(name);
  if (action == "list") {
    pbm::DescribeIndexResponse resp;
    Check(svc->DescribeIndex(nullptr, &di, &resp), pbc::Status());
    if (resp.status().code() != 0 && resp.status().code() != kCodeIndexNotFound) {
      Check(grpc::Status::OK, resp.status());
    }
    json names = json::array();
    for (const auto& d : resp.index_descriptions()) names.push_back(d.index_name());
    return Ok(names);
  }
  const std::string index = Str("indexName", true);
  if (action == "describe") {
    di.set_index_name(index);
    auto resp = Rpc(&MilvusServiceImpl::DescribeIndex, di);
    json out = json::array();
    for (const auto& d : resp.index_descriptions()) {
      std::string metric, type;
      for (const auto& kv : d.params()) {
        if (kv.key() == "metric_type") metric = kv.value();
        if (kv.key() == "index_type") type = kv.value();
      }
      out.push_back({{"indexName", d.index_name()},
                     {"fieldName", d.field_name()},
                     {"indexType", type},
                     {"metricType", metric},
                     {"totalRows", d.total_rows()},
                     {"pendingRows", d.pending_index_rows()},
                     {"indexedRows", d.indexed_rows()},
                     {"indexState", pbc::IndexState_Name(d.state())},
                     {"failReason", d.index_state_fail_reason()}});
    }
    return Ok(out);
  }
  if (action == "drop") {
    pbm::DropIndexRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    req.set_index_name(index);
    pbc::Status st;
    Check(svc->DropIndex(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  return NotFound();
}

RestReply RestHandler::Call::Partitions(std::string_view action) {
  const std::string name = Str("collectionName", true);
  if (action == "list") {
    pbm::ShowPartitionsRequest req;
    req.set_db_name(db);
    req.set_collection_name(name);
    auto resp = Rpc(&MilvusServiceImpl::ShowPartitions, req);
    return Ok(json(
        std::vector<std::string>(resp.partition_names().begin(), resp.partition_names().end())));
  }
  if (action == "load" || action == "release") {
    const auto parts = StrList("partitionNames", true);
    pbc::Status st;
    if (action == "load") {
      pbm::LoadPartitionsRequest req;
      req.set_db_name(db);
      req.set_collection_name(name);
      for (const auto& p : parts) req.add_partition_names(p);
      Check(svc->LoadPartitions(nullptr, &req, &st), st);
    } else {
      pbm::ReleasePartitionsRequest req;
      req.set_db_name(db);
      req.set_collection_name(name);
      for (const auto& p : parts) req.add_partition_names(p);
      Check(svc->ReleasePartitions(nullptr, &req, &st), st);
    }
    return Ok(json::object());
  }
  const std::string part = Str("partitionName", true);
  auto fill = [&](auto& req) {
    req.set_db_name(db);
    req.set_collection_name(name);
    req.set_partition_name(part);
  };
  if (action == "has") {
    pbm::HasPartitionRequest req;
    fill(req);
    return Ok({{"has", Rpc(&MilvusServiceImpl::HasPartition, req).value()}});
  }
  if (action == "get_stats") {
    pbm::GetPartitionStatisticsRequest req;
    fill(req);
    return Ok(RowCount(Rpc(&MilvusServiceImpl::GetPartitionStatistics, req).stats()));
  }
  pbc::Status st;
  if (action == "create") {
    pbm::CreatePartitionRequest req;
    fill(req);
    Check(svc->CreatePartition(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  if (action == "drop") {
    pbm::DropPartitionRequest req;
    fill(req);
    Check(svc->DropPartition(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  return NotFound();
}

RestReply RestHandler::Call::Aliases(std::string_view action) {
  if (action == "list") {
    pbm::ListAliasesRequest req;
    req.set_db_name(db);
    req.set_collection_name(Str("collectionName", false));
    auto resp = Rpc(&MilvusServiceImpl::ListAliases, req);
    return Ok(json(std::vector<std::string>(resp.aliases().begin(), resp.aliases().end())));
  }
  const std::string alias = Str("aliasName", true);
  pbc::Status st;
  if (action == "describe") {
    pbm::DescribeAliasRequest req;
    req.set_db_name(db);
    req.set_alias(alias);
    auto resp = Rpc(&MilvusServiceImpl::DescribeAlias, req);
    return Ok({{"dbName", resp.db_name().empty() ? db : resp.db_name()},
               {"collectionName", resp.collection()},
               {"aliasName", resp.alias()}});
  }
  if (action == "drop") {
    pbm::DropAliasRequest req;
    req.set_db_name(db);
    req.set_alias(alias);
    Check(svc->DropAlias(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  const std::string coll = Str("collectionName", true);
  if (action == "create") {
    pbm::CreateAliasRequest req;
    req.set_db_name(db);
    req.set_alias(alias);
    req.set_collection_name(coll);
    Check(svc->CreateAlias(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  if (action == "alter") {
    pbm::AlterAliasRequest req;
    req.set_db_name(db);
    req.set_alias(alias);
    req.set_collection_name(coll);
    Check(svc->AlterAlias(nullptr, &req, &st), st);
    return Ok(json::object());
  }
  return NotFound();
}

RestReply RestHandler::Call::NotFound() const {
  return RestReply{404, json{{"code", 404},
                             {"message", fmt::format("unknown Milvus REST endpoint {}: see the "
                                                     "list in docs/vector.md",
                                                     path)}}};
}

// ---- routing ----

namespace {
// The endpoints served (docs/vector.md); any other path is 404.
bool Known(std::string_view category, std::string_view action) {
  static const std::map<std::string_view, std::vector<std::string_view>> kEndpoints = {
      {"collections",
       {"create", "describe", "has", "list", "drop", "rename", "get_stats", "load", "release",
        "get_load_state"}},
      {"entities", {"insert", "upsert", "delete", "search", "query", "get", "hybrid_search"}},
      {"indexes", {"create", "describe", "list", "drop"}},
      {"partitions", {"create", "drop", "has", "list", "load", "release", "get_stats"}},
      {"aliases", {"create", "describe", "list", "drop", "alter"}},
  };
  auto it = kEndpoints.find(category);
  return it != kEndpoints.end() &&
         std::find(it->second.begin(), it->second.end(), action) != it->second.end();
}
}  // namespace

RestReply RestHandler::Dispatch(const RestRequest& r) const {
  constexpr std::string_view kPrefix = "/v2/vectordb/";
  json body;
  Call c{svc_, body, r.allow_int64, "default", ""};
  c.path = r.path;
  try {
    if (Status st = auth_->CheckHttp(r.authorization); !st.ok()) {
      return RestReply{401, json{{"code", kCodeNeedAuthenticate},
                                 {"message", "user hasn't authenticated: " + st.message()}}};
    }
    if (r.path.substr(0, kPrefix.size()) != kPrefix) return c.NotFound();
    std::string_view rest = r.path.substr(kPrefix.size());
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return c.NotFound();
    const std::string_view category = rest.substr(0, slash);
    const std::string_view action = rest.substr(slash + 1);
    if (!Known(category, action)) return c.NotFound();
    body = r.body.empty() ? json::object() : json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return RestReply{200, json{{"code", kCodeIncorrectParameterFormat},
                                 {"message",
                                  "can only accept json format request, error: the "
                                  "body is not a JSON object"}}};
    }
    const std::string dbname = c.Str("dbName", false);
    if (!dbname.empty()) c.db = dbname;
    if (category == "collections") return c.Collections(action);
    if (category == "entities") return c.Entities(action);
    if (category == "indexes") return c.Indexes(action);
    if (category == "partitions") return c.Partitions(action);
    if (category == "aliases") return c.Aliases(action);
    return c.NotFound();
  } catch (const RestFailure& f) {
    return RestReply{200, json{{"code", f.code}, {"message", f.message}}};
  } catch (const std::exception& e) {  // json type errors and the like
    return RestReply{200, json{{"code", kCodeIncorrectParameterFormat},
                               {"message", std::string("can only accept json format request, "
                                                       "error: ") +
                                               e.what()}}};
  }
}

void RestHandler::Handle(http::Request& req, http::ResponseWriter& w) const {
  w.AddHeader("Content-Type", "application/json");
  if (req.method != "POST") {
    w.SetStatus(405);
    w.AddHeader("Allow", "POST");
    (void)w.Send(
        json{{"code", 405}, {"message", "the Milvus REST API takes POST requests with a JSON body"}}
            .dump());
    return;
  }
  auto body = req.ReadAllBody(size_t{64} << 20);
  if (!body.ok()) {
    w.SetStatus(body.error().code() == StatusCode::kResourceExhausted ? 413 : 400);
    w.CloseAfter();
    (void)w.Send(
        json{{"code", kCodeIncorrectParameterFormat}, {"message", body.error().message()}}.dump());
    return;
  }
  RestRequest r;
  r.path = req.path;
  r.body = *body;
  r.authorization = req.Header("Authorization").value_or("");
  r.allow_int64 = IEquals(Trim(req.Header("Accept-Type-Allow-Int64").value_or("")), "true");
  RestReply reply = Dispatch(r);
  w.SetStatus(reply.http_status);
  (void)w.Send(reply.body.dump(-1, ' ', false, json::error_handler_t::replace));
}

void RestHandler::HandleTransportError(int status, std::string_view message,
                                       http::ResponseWriter& w) const {
  w.SetStatus(status);
  w.AddHeader("Content-Type", "application/json");
  (void)w.Send(json{{"code", status}, {"message", std::string(message)}}.dump());
  kLog.Debug("REST transport error {}: {}", status, message);
}

}  // namespace strata::milvus
