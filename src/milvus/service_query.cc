// MilvusService: Query (service.h). Rows come back in primary-key order (as
// Milvus merges them), so `pk > last` with a limit pages through a
// collection: the SDKs' query iterators rely on it.
#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "milvus/errors.h"
#include "milvus/search_util.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

constexpr size_t kMaxQueryWindow = 16384;  // Milvus's default max result window

// Scrolls matches from `from` (inclusive) while ids are below `until` (when
// set), appending to rows until it holds `want`.
Status ScrollRange(const vector::Collection& coll, vector::ScrollRequest sr,
                   std::optional<vector::PointId> from, std::optional<uint64_t> until, size_t want,
                   std::vector<vector::Record>* rows) {
  sr.offset = from;
  while (rows->size() < want) {
    sr.limit = std::min<size_t>(want - rows->size(), 4096);
    STRATA_ASSIGN_OR_RETURN(auto page, coll.Scroll(sr));
    for (auto& r : page.points) {
      if (until && r.id.hi >= *until) return Status::Ok();
      rows->push_back(std::move(r));
    }
    if (!page.next_offset) break;
    sr.offset = page.next_offset;
  }
  return Status::Ok();
}

std::string StringPk(const vector::Record& r, const std::string& pk) {
  auto p = nlohmann::json::parse(r.payload, nullptr, false);
  return p.is_object() && p.contains(pk) && p[pk].is_string() ? p[pk].get<std::string>() : "";
}

// Up to `want` matching rows with the smallest primary keys, in key order
// (any `want` rows when not `sorted`).
// INT64 keys are point ids as two's complement, so the negative keys are the
// upper half of the id space: scrolled first. VARCHAR keys are hashed into
// ids: every match is read and sorted.
Result<std::vector<vector::Record>> ScrollByPk(const vector::Collection& coll,
                                               const CollectionMeta& m,
                                               const vector::ScrollRequest& sr, size_t want,
                                               bool sorted) {
  std::vector<vector::Record> rows;
  const FieldMeta* pk = m.Primary();
  if (!sorted) {
    STRATA_RETURN_IF_ERROR(ScrollRange(coll, sr, std::nullopt, std::nullopt, want, &rows));
    return rows;
  }
  if (pk->type == DataType::kInt64) {
    constexpr uint64_t kSign = 1ull << 63;
    STRATA_RETURN_IF_ERROR(
        ScrollRange(coll, sr, vector::PointId::Number(kSign), std::nullopt, want, &rows));
    STRATA_RETURN_IF_ERROR(ScrollRange(coll, sr, std::nullopt, kSign, want, &rows));
    return rows;
  }
  STRATA_RETURN_IF_ERROR(
      ScrollRange(coll, sr, std::nullopt, std::nullopt, std::numeric_limits<size_t>::max(), &rows));
  std::vector<std::pair<std::string, size_t>> keys;
  for (size_t i = 0; i < rows.size(); ++i) keys.emplace_back(StringPk(rows[i], pk->name), i);
  std::sort(keys.begin(), keys.end());
  std::vector<vector::Record> out;
  for (size_t i = 0; i < keys.size() && i < want; ++i)
    out.push_back(std::move(rows[keys[i].second]));
  return out;
}

}  // namespace

Status MilvusServiceImpl::DoQuery(const pbm::QueryRequest& req, pbm::QueryResults* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLoaded(req.db_name(), req.collection_name()));
  const CollectionMeta& m = *t.meta;
  STRATA_ASSIGN_OR_RETURN(auto pfilter, ReadPartitionsFilter(m, req.partition_names()));
  STRATA_ASSIGN_OR_RETURN(QueryParams qp, ParseQueryParams(req.query_params()));
  if (!req.namespace_().empty())
    return Status::NotSupported("namespace is not supported by Strata");
  std::optional<vector::Filter> filter;
  if (!req.expr().empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string expr,
                            ApplyExprTemplate(req.expr(), req.expr_template_values()));
    STRATA_ASSIGN_OR_RETURN(filter, ParseMilvusExpr(expr));
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
  vector::ScrollRequest sr;
  sr.filter = filter;
  sr.with_payload = true;
  sr.with_vectors = out.with_vectors;
  STRATA_ASSIGN_OR_RETURN(auto rows, ScrollByPk(*t.coll, m, sr, want, qp.limit != 0));
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
