// MilvusService: writes, flush and statistics (service.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/vector/filter.h>

#include "milvus/errors.h"
#include "milvus/search_util.h"
#include "milvus/service.h"

namespace strata::milvus {

Result<vector::Filter> ParseMilvusExpr(const std::string& expr) {
  auto f = vector::ParseFilterExpression(expr);
  if (!f) {
    return Status::InvalidArgument(
        fmt::format("cannot parse expression: {}, error: {}", expr, f.error().message()));
  }
  return std::move(*f);
}

Status MilvusServiceImpl::WriteRows(const std::string& db, const std::string& name,
                                    const std::string& partition, const std::string& ns,
                                    const FieldDataList& fields, uint32_t num_rows, bool insert,
                                    pbm::MutationResult* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, Open(db, name));
  if (!ns.empty()) return Status::NotSupported("namespace is not supported by Strata");
  STRATA_ASSIGN_OR_RETURN(std::string part, WritePartition(*t.meta, partition));
  STRATA_ASSIGN_OR_RETURN(
      Rows rows, RowsFromFieldData(*t.meta, fields, num_rows, insert, [this] { return NewId(); }));
  // The row's partition is a hidden payload key (meta.h); an upsert of a key
  // into another partition moves the row there, as Milvus's delete + insert.
  for (auto& p : rows.points) {
    nlohmann::json j = p.payload.empty() ? nlohmann::json::object()
                                         : nlohmann::json::parse(p.payload, nullptr, false);
    if (!j.is_object()) return Status::Internal("row payload is not a JSON object");
    j[std::string(kPartitionKey)] = part;
    p.payload = j.dump();
  }
  STRATA_RETURN_IF_ERROR(t.coll->Upsert(rows.points));
  *resp->mutable_ids() = std::move(rows.ids);
  for (uint32_t i = 0; i < num_rows; ++i) resp->add_succ_index(i);
  if (insert) {
    resp->set_insert_cnt(num_rows);
  } else {
    resp->set_upsert_cnt(num_rows);
  }
  resp->set_timestamp(HybridNow());
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::Insert(ServerContext*, const pbm::InsertRequest* req,
                                       pbm::MutationResult* resp) {
  Status st =
      WriteRows(req->db_name(), req->collection_name(), req->partition_name(), req->namespace_(),
                req->fields_data(), req->num_rows(), /*insert=*/true, resp);
  if (!st.ok()) {
    resp->clear_ids();
    resp->clear_succ_index();
    for (uint32_t i = 0; i < req->num_rows(); ++i) resp->add_err_index(i);
  }
  return Reply(st, resp->mutable_status());
}

grpc::Status MilvusServiceImpl::Upsert(ServerContext*, const pbm::UpsertRequest* req,
                                       pbm::MutationResult* resp) {
  Status st = Status::Ok();
  if (req->partial_update()) {
    st = Status::NotSupported("partial_update: an upsert must carry every field");
  } else if (req->field_ops_size() > 0) {
    st = Status::NotSupported("field_ops: an upsert replaces whole rows in Strata");
  }
  if (st.ok()) {
    st = WriteRows(req->db_name(), req->collection_name(), req->partition_name(), req->namespace_(),
                   req->fields_data(), req->num_rows(), /*insert=*/false, resp);
  }
  if (!st.ok()) {
    resp->clear_ids();
    resp->clear_succ_index();
    for (uint32_t i = 0; i < req->num_rows(); ++i) resp->add_err_index(i);
  }
  return Reply(st, resp->mutable_status());
}

grpc::Status MilvusServiceImpl::Delete(ServerContext*, const pbm::DeleteRequest* req,
                                       pbm::MutationResult* resp) {
  auto run = [&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(auto t, Open(req->db_name(), req->collection_name()));
    if (req->expr().empty()) {
      return Status::InvalidArgument(
          "delete plan can't be empty or always true: give an expression");
    }
    if (!req->namespace_().empty()) {
      return Status::NotSupported("namespace is not supported by Strata");
    }
    STRATA_ASSIGN_OR_RETURN(std::string expr,
                            ApplyExprTemplate(req->expr(), req->expr_template_values()));
    STRATA_ASSIGN_OR_RETURN(vector::Filter filter, ParseMilvusExpr(expr));
    // Without a partition name Milvus deletes in every partition.
    if (!req->partition_name().empty()) {
      STRATA_ASSIGN_OR_RETURN(std::string part, WritePartition(*t.meta, req->partition_name()));
      filter = *AndFilters(std::move(filter), PartitionMatch(part));
    }
    size_t deleted = 0;
    STRATA_RETURN_IF_ERROR(t.coll->DeleteByFilter(filter, {}, &deleted));
    resp->set_delete_cnt(static_cast<int64_t>(deleted));
    resp->set_timestamp(HybridNow());
    return Status::Ok();
  };
  return Reply(run(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::Flush(ServerContext*, const pbm::FlushRequest* req,
                                      pbm::FlushResponse* resp) {
  // Writes are in the WAL (fsynced) when acknowledged, so there is nothing to
  // flush; the answer names no segment, which GetFlushState reports flushed.
  for (const auto& name : req->collection_names()) {
    auto t = Open(req->db_name(), name);
    if (!t) return Reply(t.error(), resp->mutable_status());
    (*resp->mutable_coll_segids())[name];
    (*resp->mutable_flush_coll_segids())[name];
    (*resp->mutable_coll_seal_times())[name] = static_cast<int64_t>(HybridNow() >> 18) / 1000;
    (*resp->mutable_coll_flush_ts())[name] = HybridNow();
  }
  resp->set_db_name("default");
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::GetFlushState(ServerContext*, const pbm::GetFlushStateRequest* req,
                                              pbm::GetFlushStateResponse* resp) {
  if (!req->collection_name().empty()) {
    auto t = Open(req->db_name(), req->collection_name());
    if (!t) return Reply(t.error(), resp->mutable_status());
  }
  resp->set_flushed(true);
  return Reply(Status::Ok(), resp->mutable_status());
}

grpc::Status MilvusServiceImpl::GetCollectionStatistics(
    ServerContext*, const pbm::GetCollectionStatisticsRequest* req,
    pbm::GetCollectionStatisticsResponse* resp) {
  auto t = Open(req->db_name(), req->collection_name());
  if (!t) return Reply(t.error(), resp->mutable_status());
  auto* kv = resp->add_stats();
  kv->set_key("row_count");
  kv->set_value(std::to_string(t->coll->Info().points));
  return Reply(Status::Ok(), resp->mutable_status());
}

}  // namespace strata::milvus
