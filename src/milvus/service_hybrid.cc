// MilvusService: HybridSearch (service.h): each AnnSearchRequest runs as a
// Search would (its own field, filter, limit and search params), and the
// ranked lists are fused by rank_params' ranker (search_util.h: RRF or
// weighted), then cut to rank_params' offset and limit.
#include <algorithm>

#include <fmt/format.h>

#include "milvus/errors.h"
#include "milvus/search_util.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

constexpr int kMaxSubRequests = 1024;

Status CheckSubRequest(const pbm::HybridSearchRequest& req, const pbm::SearchRequest& sub,
                       const SearchParams& sp, const Ranker& ranker) {
  if (!sub.collection_name().empty() && sub.collection_name() != req.collection_name()) {
    return Status::InvalidArgument(
        fmt::format("every search request of a hybrid search must name collection {} (got {})",
                    req.collection_name(), sub.collection_name()));
  }
  // The SDKs copy the hybrid search's partition_names into every request.
  const bool same_partitions =
      std::equal(sub.partition_names().begin(), sub.partition_names().end(),
                 req.partition_names().begin(), req.partition_names().end());
  if (sub.partition_names_size() > 0 && !same_partitions) {
    return Status::NotSupported(
        "partition_names of a single search request in a hybrid search: name the partitions "
        "on the hybrid search itself");
  }
  if (!sp.group_by_field.empty()) {
    return Status::NotSupported("group_by_field in a hybrid search is not supported by Strata");
  }
  if (sp.iterator || sp.iterator_v2) {
    return Status::NotSupported("a hybrid search cannot be iterated");
  }
  // The SDKs copy the hybrid search's offset into every request: that one is
  // the fused list's (rank_params); a different one is refused.
  if (sp.offset != 0 && sp.offset != ranker.offset) {
    return Status::InvalidArgument(
        "offset of a single search request in a hybrid search: give offset to the hybrid "
        "search (rank_params)");
  }
  return Status::Ok();
}

}  // namespace

Status MilvusServiceImpl::DoHybridSearch(const pbm::HybridSearchRequest& req,
                                         pbm::SearchResults* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLoaded(req.db_name(), req.collection_name()));
  const CollectionMeta& m = *t.meta;
  if (req.requests_size() == 0 || req.requests_size() > kMaxSubRequests) {
    return Status::InvalidArgument(
        fmt::format("a hybrid search takes 1 to {} search requests, got {}", kMaxSubRequests,
                    req.requests_size()));
  }
  if (!req.function_score().empty() || req.function_chains_size() > 0) {
    return Status::NotSupported(
        "function_score / function_chains (rerank functions) are not supported by Strata: use "
        "RRFRanker or WeightedRanker");
  }
  if (!req.namespace_().empty()) return Status::NotSupported("namespace is not supported");
  STRATA_ASSIGN_OR_RETURN(auto pfilter, ReadPartitionsFilter(m, req.partition_names()));
  STRATA_ASSIGN_OR_RETURN(Ranker ranker, ParseRankParams(req.rank_params(), req.requests_size()));
  STRATA_ASSIGN_OR_RETURN(OutputFields out,
                          ResolveOutputFields(m, req.output_fields(), /*with_primary=*/true));
  // lists[sub][query]: the hits of one AnnSearchRequest for one query vector.
  std::vector<std::vector<std::vector<MilvusHit>>> lists;
  std::vector<std::string> metrics;
  size_t nq = 0;
  for (const auto& sub : req.requests()) {
    STRATA_ASSIGN_OR_RETURN(PreparedSearch ps, PrepareSearch(m, sub, pfilter));
    STRATA_RETURN_IF_ERROR(CheckSubRequest(req, sub, ps.sp, ranker));
    ps.sp.offset = 0;  // each list from its top; the offset is the fused list's
    if (nq != 0 && ps.nq() != nq) {
      return Status::InvalidArgument(
          "every search request of a hybrid search must have the same number of query vectors");
    }
    nq = ps.nq();
    auto& per_query = lists.emplace_back();
    for (size_t q = 0; q < nq; ++q) {
      STRATA_ASSIGN_OR_RETURN(auto hits,
                              RunQuery(*t.coll, ps, EngineRequest(ps, q, out.with_vectors)));
      per_query.push_back(std::move(hits));
    }
    metrics.push_back(ps.metric);
  }
  std::vector<std::vector<MilvusHit>> results(nq);
  for (size_t q = 0; q < nq; ++q) {
    std::vector<std::vector<RankedHit>> ranked;
    for (const auto& sub : lists) {
      auto& r = ranked.emplace_back();
      for (const auto& h : sub[q]) r.push_back({h.record.id, h.score});
    }
    auto fused = Fuse(ranker, ranked, metrics);
    for (size_t i = ranker.offset; i < fused.size() && i < ranker.offset + ranker.limit; ++i) {
      const FusedHit& f = fused[i];
      results[q].push_back({lists[f.list][q][f.pos].record, f.score});
    }
  }
  STRATA_RETURN_IF_ERROR(FillSearchResults(m, out, results, ranker.limit, ranker.round_decimal,
                                           /*group_field=*/"", resp->mutable_results()));
  resp->set_collection_name(req.collection_name());
  resp->set_session_ts(HybridNow());
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::HybridSearch(ServerContext*, const pbm::HybridSearchRequest* req,
                                             pbm::SearchResults* resp) {
  Status st = DoHybridSearch(*req, resp);
  if (!st.ok()) resp->clear_results();
  return Reply(st, resp->mutable_status());
}

}  // namespace strata::milvus
