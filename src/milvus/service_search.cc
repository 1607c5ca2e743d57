// MilvusService: Search and Query (service.h). Distances are reported as
// Milvus does: squared Euclidean distance for L2 (smaller is closer), the
// inner product / cosine similarity for IP and COSINE (larger is closer).
#include <cmath>

#include <fmt/format.h>

#include "milvus/errors.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

constexpr size_t kMaxQueryWindow = 16384;  // Milvus's default max result window

float Round(float v, int decimals) {
  if (decimals < 0) return v;
  const double p = std::pow(10.0, decimals);
  return static_cast<float>(std::round(v * p) / p);
}

}  // namespace

Status MilvusServiceImpl::DoSearch(const pbm::SearchRequest& req, pbm::SearchResults* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLoaded(req.db_name(), req.collection_name()));
  const CollectionMeta& m = *t.meta;
  STRATA_ASSIGN_OR_RETURN(auto pfilter, ReadPartitionsFilter(m, req.partition_names()));
  if (req.search_input_case() == pbm::SearchRequest::kIds) {
    return Status::NotSupported("search by primary keys: pass query vectors");
  }
  if (req.dsl_type() != pbc::BoolExprV1) {
    return Status::InvalidArgument("dsl_type must be BoolExprV1 (a boolean expression)");
  }
  STRATA_ASSIGN_OR_RETURN(SearchParams sp, ParseSearchParams(req.search_params()));
  const FieldMeta* field = nullptr;
  if (sp.anns_field.empty()) {
    auto vf = m.VectorFields();
    if (vf.size() != 1) {
      return Status::InvalidArgument(
          "anns_field is required: the collection has several vector fields");
    }
    field = vf[0];
  } else {
    field = m.Field(sp.anns_field);
    if (field == nullptr || field->type != DataType::kFloatVector) {
      return Status::InvalidArgument(fmt::format(
          "failed to get field schema by name: fieldName({}) not found", sp.anns_field));
    }
  }
  const IndexMeta* idx = m.IndexOf(field->name);
  if (idx == nullptr) {
    return MilvusError(kCodeIndexNotFound, fmt::format("index not found[field={}]", field->name));
  }
  if (!sp.metric.empty() && sp.metric != idx->metric) {
    return Status::InvalidArgument(
        fmt::format("metric type not match: invalid parameter[expected={}][actual={}]", idx->metric,
                    sp.metric));
  }
  STRATA_ASSIGN_OR_RETURN(auto queries, QueryVectors(req.placeholder_group(), field->dim));
  if (req.nq() != 0 && static_cast<size_t>(req.nq()) != queries.size()) {
    return Status::InvalidArgument(fmt::format(
        "nq ({}) does not match the number of query vectors ({})", req.nq(), queries.size()));
  }
  std::optional<vector::Filter> filter;
  if (!req.dsl().empty()) {
    STRATA_ASSIGN_OR_RETURN(filter, ParseMilvusExpr(req.dsl()));
  }
  filter = AndFilters(std::move(filter), std::move(pfilter));
  // Milvus returns the primary key among the fields too; the SDKs read it there.
  STRATA_ASSIGN_OR_RETURN(OutputFields out,
                          ResolveOutputFields(m, req.output_fields(), /*with_primary=*/true));
  std::vector<vector::SearchRequest> reqs(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    auto& r = reqs[i];
    r.vector_name = field->name;
    r.vector = std::move(queries[i]);
    r.limit = sp.topk;
    r.offset = sp.offset;
    r.filter = filter;
    r.with_payload = true;  // VARCHAR keys and output fields live in the payload
    r.with_vectors = out.with_vectors;
    r.ef = sp.ef;
    r.nprobe = sp.nprobe;
    r.search_list = sp.search_list;
  }
  STRATA_ASSIGN_OR_RETURN(auto results, t.coll->SearchBatch(reqs));
  auto* rd = resp->mutable_results();
  rd->set_num_queries(static_cast<int64_t>(results.size()));
  rd->set_top_k(static_cast<int64_t>(sp.topk));
  rd->set_primary_field_name(m.Primary()->name);
  std::vector<const vector::Record*> records;
  const bool l2 = idx->metric == "L2";
  for (const auto& hits : results) {
    rd->add_topks(static_cast<int64_t>(hits.size()));
    for (const auto& h : hits) {
      records.push_back(&h.record);
      const float d = l2 ? h.score * h.score : h.score;
      rd->add_scores(Round(d, sp.round_decimal));
    }
  }
  RecordIds(m, records, rd->mutable_ids());
  STRATA_RETURN_IF_ERROR(RecordsToFieldData(m, out, records, rd->mutable_fields_data()));
  for (const auto& n : out.names) rd->add_output_fields(n);
  rd->set_all_search_count(static_cast<int64_t>(records.size()));
  resp->set_collection_name(req.collection_name());
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::Search(ServerContext*, const pbm::SearchRequest* req,
                                       pbm::SearchResults* resp) {
  Status st = DoSearch(*req, resp);
  if (!st.ok()) resp->clear_results();
  return Reply(st, resp->mutable_status());
}

Status MilvusServiceImpl::DoQuery(const pbm::QueryRequest& req, pbm::QueryResults* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLoaded(req.db_name(), req.collection_name()));
  const CollectionMeta& m = *t.meta;
  STRATA_ASSIGN_OR_RETURN(auto pfilter, ReadPartitionsFilter(m, req.partition_names()));
  STRATA_ASSIGN_OR_RETURN(QueryParams qp, ParseQueryParams(req.query_params()));
  std::optional<vector::Filter> filter;
  if (!req.expr().empty()) {
    STRATA_ASSIGN_OR_RETURN(filter, ParseMilvusExpr(req.expr()));
  }
  // Milvus's "empty expression needs a limit" rule is about the user's
  // expression, so it is checked before the partition restriction joins it.
  const bool user_filter = filter.has_value();
  filter = AndFilters(std::move(filter), std::move(pfilter));
  resp->set_collection_name(req.collection_name());
  resp->set_primary_field_name(m.Primary()->name);
  bool count = false;
  for (const auto& f : req.output_fields()) count |= f == "count(*)";
  if (count) {
    if (req.output_fields_size() != 1) {
      return Status::InvalidArgument("count(*) cannot be queried together with other fields");
    }
    if (qp.limit != 0 || qp.offset != 0) {
      return Status::InvalidArgument("count entities with pagination is not allowed");
    }
    STRATA_ASSIGN_OR_RETURN(size_t n, t.coll->Count(filter));
    auto* fd = resp->add_fields_data();
    fd->set_field_name("count(*)");
    fd->set_type(pbs::Int64);
    fd->mutable_scalars()->mutable_long_data()->add_data(static_cast<int64_t>(n));
    resp->add_output_fields("count(*)");
    return Status::Ok();
  }
  if (!user_filter && qp.limit == 0) {
    return Status::InvalidArgument("empty expression should be used with limit");
  }
  STRATA_ASSIGN_OR_RETURN(OutputFields out,
                          ResolveOutputFields(m, req.output_fields(), /*with_primary=*/true));
  // Without a limit every match is returned, up to Milvus's result window;
  // more than that is an error rather than a silently cut answer.
  const size_t want = qp.limit != 0 ? qp.offset + qp.limit : kMaxQueryWindow + 1;
  std::vector<vector::Record> rows;
  vector::ScrollRequest sr;
  sr.filter = filter;
  sr.with_payload = true;
  sr.with_vectors = out.with_vectors;
  while (rows.size() < want) {
    sr.limit = std::min<size_t>(want - rows.size(), 4096);
    STRATA_ASSIGN_OR_RETURN(auto page, t.coll->Scroll(sr));
    for (auto& r : page.points) rows.push_back(std::move(r));
    if (!page.next_offset) break;
    sr.offset = page.next_offset;
  }
  if (qp.limit == 0 && rows.size() > kMaxQueryWindow) {
    return Status::InvalidArgument(fmt::format(
        "more than {} rows match the expression: give a limit (and offset) or a narrower "
        "expression",
        kMaxQueryWindow));
  }
  std::vector<const vector::Record*> records;
  for (size_t i = qp.offset; i < rows.size(); ++i) records.push_back(&rows[i]);
  STRATA_RETURN_IF_ERROR(RecordsToFieldData(m, out, records, resp->mutable_fields_data()));
  for (const auto& n : out.names) resp->add_output_fields(n);
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::Query(ServerContext*, const pbm::QueryRequest* req,
                                      pbm::QueryResults* resp) {
  Status st = DoQuery(*req, resp);
  if (!st.ok()) {
    resp->clear_fields_data();
    resp->clear_output_fields();
  }
  return Reply(st, resp->mutable_status());
}

}  // namespace strata::milvus
