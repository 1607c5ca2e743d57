// MilvusService: Search and HybridSearch (service.h). Distances are reported
// as Milvus does: squared Euclidean distance for L2 (smaller is closer), the
// inner product / cosine similarity for IP and COSINE (larger is closer).
// Range search, grouping and the search iterator post-filter the engine's
// nearest hits, asking for more (x4) until enough pass or none are left.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "milvus/errors.h"
#include "milvus/search_util.h"
#include "milvus/service.h"

namespace strata::milvus {

namespace {

using json = nlohmann::json;

float Round(float v, int decimals) {
  if (decimals < 0) return v;
  const double p = std::pow(10.0, decimals);
  return static_cast<float>(std::round(v * p) / p);
}

// The vector field a search names (or the only one) and its index.
Result<std::pair<const FieldMeta*, const IndexMeta*>> SearchField(const CollectionMeta& m,
                                                                  const SearchParams& sp) {
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
    if (field == nullptr || !IsVectorType(field->type)) {
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
  return std::make_pair(field, idx);
}

Status CheckGroupField(const CollectionMeta& m, const std::string& name) {
  const FieldMeta* f = m.Field(name);
  if (f == nullptr || f->dynamic) {
    return Status::InvalidArgument(
        fmt::format("failed to get field schema by name: fieldName({}) not found", name));
  }
  if (f->type != DataType::kBool && f->type != DataType::kVarChar && !IsIntegerType(f->type)) {
    return Status::InvalidArgument(
        fmt::format("group by field {} is {}: only bool, int8-int64 and varchar fields can group",
                    name, DataTypeName(f->type)));
  }
  return Status::Ok();
}

// drop_ratio_search: the floor(n * ratio) entries of smallest |value| are
// left out of the query (ties: the later index goes first).
void DropSmallest(vector::SparseVector* q, float ratio) {
  const size_t n = q->indices.size();
  const size_t drop = static_cast<size_t>(std::floor(static_cast<double>(n) * ratio));
  if (drop == 0) return;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::fabs(q->values[a]) > std::fabs(q->values[b]);
  });
  order.resize(n - drop);
  std::sort(order.begin(), order.end());
  vector::SparseVector kept;
  for (size_t i : order) {
    kept.indices.push_back(q->indices[i]);
    kept.values.push_back(q->values[i]);
  }
  *q = std::move(kept);
}

// Milvus's JACCARD distance of 0/1 vectors: 1 - |a AND b| / |a OR b| (0 for
// two empty vectors).
float JaccardDistance(const std::vector<float>& a, const std::vector<float>& b) {
  uint32_t both = 0, either = 0;
  for (size_t j = 0; j < a.size() && j < b.size(); ++j) {
    const bool x = a[j] > 0.5f, y = b[j] > 0.5f;
    both += x && y;
    either += x || y;
  }
  return either == 0 ? 0.f : 1.f - static_cast<float>(both) / static_cast<float>(either);
}

// BIN_FLAT with JACCARD: every (filtered) row scored exactly, as BIN_FLAT is
// an exact scan; the nearest offset + limit kept (ties by id).
Result<std::vector<MilvusHit>> ExactJaccard(const vector::Collection& coll,
                                            const vector::SearchRequest& r) {
  const size_t need = r.offset + r.limit;
  std::vector<MilvusHit> best;
  auto closer = [](const MilvusHit& a, const MilvusHit& b) {
    return a.score != b.score ? a.score < b.score : a.record.id < b.record.id;
  };
  auto trim = [&]() {
    if (best.size() <= need) return;
    std::nth_element(best.begin(), best.begin() + need, best.end(), closer);
    best.resize(need);
  };
  vector::ScrollRequest sr;
  sr.filter = r.filter;
  sr.limit = 1024;
  sr.with_payload = r.with_payload;
  sr.with_vectors = true;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto page, coll.Scroll(sr));
    for (auto& rec : page.points) {
      if (std::find(r.exclude.begin(), r.exclude.end(), rec.id) != r.exclude.end()) continue;
      const vector::NamedVector* v = nullptr;
      for (const auto& x : rec.vectors) {
        if (x.name == r.vector_name) v = &x;
      }
      if (v == nullptr) continue;
      const float d = JaccardDistance(r.vector, v->values);
      if (!r.with_vectors) rec.vectors.clear();
      best.push_back({std::move(rec), d});
    }
    if (best.size() >= 4 * need + 1024) trim();
    if (!page.next_offset) break;
    sr.offset = page.next_offset;
  }
  trim();
  std::sort(best.begin(), best.end(), closer);
  best.erase(best.begin(), best.begin() + std::min(r.offset, best.size()));
  return best;
}

// What a SearchRequest can ask that Strata does not serve: refused by name.
Status CheckUnsupported(const pbm::SearchRequest& req) {
  auto no = [](const char* what) {
    return Status::NotSupported(fmt::format("{} is not supported by Strata", what));
  };
  if (req.sub_reqs_size() > 0) return no("sub_reqs (several searches in one request)");
  if (!req.function_score().empty() || req.function_chains_size() > 0) {
    return no("function_score / function_chains (rerank functions)");
  }
  if (!req.highlighter().empty()) return no("highlighter");
  if (!req.search_aggregation().empty()) return no("search_aggregation");
  if (!req.namespace_().empty()) return no("namespace");
  return Status::Ok();
}

}  // namespace

Result<MilvusServiceImpl::PreparedSearch> MilvusServiceImpl::PrepareSearch(
    const CollectionMeta& m, const pbm::SearchRequest& req,
    const std::optional<vector::Filter>& pfilter) {
  STRATA_RETURN_IF_ERROR(CheckUnsupported(req));
  if (req.search_input_case() == pbm::SearchRequest::kIds) {
    return Status::NotSupported("search by primary keys: pass query vectors");
  }
  if (req.dsl_type() != pbc::BoolExprV1) {
    return Status::InvalidArgument("dsl_type must be BoolExprV1 (a boolean expression)");
  }
  PreparedSearch ps;
  STRATA_ASSIGN_OR_RETURN(ps.sp, ParseSearchParams(req.search_params()));
  STRATA_ASSIGN_OR_RETURN(auto fi, SearchField(m, ps.sp));
  ps.field = fi.first;
  ps.metric = fi.second->metric;
  ps.hamming = ps.metric == "HAMMING";
  ps.jaccard = ps.metric == "JACCARD";
  ps.l2 = ps.metric == "L2" || ps.hamming || ps.jaccard;
  STRATA_RETURN_IF_ERROR(CheckRange(ps.sp, ps.l2));
  if (!ps.sp.group_by_field.empty()) {
    STRATA_RETURN_IF_ERROR(CheckGroupField(m, ps.sp.group_by_field));
  }
  if (ps.field_is_sparse()) {
    STRATA_ASSIGN_OR_RETURN(ps.sparse_queries, QuerySparseVectors(req.placeholder_group()));
    if (ps.sp.drop_ratio_search) {
      for (auto& q : ps.sparse_queries) DropSmallest(&q, *ps.sp.drop_ratio_search);
    }
  } else {
    if (ps.sp.drop_ratio_search) {
      return Status::InvalidArgument(
          fmt::format("drop_ratio_search applies to sparse vector fields, {} is {}", ps.field->name,
                      DataTypeName(ps.field->type)));
    }
    STRATA_ASSIGN_OR_RETURN(ps.queries,
                            QueryVectors(req.placeholder_group(), ps.field->type, ps.field->dim));
  }
  if (req.nq() != 0 && static_cast<size_t>(req.nq()) != ps.nq()) {
    return Status::InvalidArgument(
        fmt::format("nq ({}) does not match the number of query vectors ({})", req.nq(), ps.nq()));
  }
  if (ps.sp.iterator_v2 && ps.nq() != 1) {
    return Status::InvalidArgument("a search iterator takes one query vector (nq = 1)");
  }
  if (ps.sp.iterator_v2 && ps.sp.offset != 0) {
    return Status::InvalidArgument("a search iterator takes no offset");
  }
  if (!ps.sp.iter_token.empty()) {
    STRATA_ASSIGN_OR_RETURN(ps.skip, DecodeIterToken(ps.sp.iter_token));
  }
  std::optional<vector::Filter> filter;
  if (!req.dsl().empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string expr,
                            ApplyExprTemplate(req.dsl(), req.expr_template_values()));
    STRATA_ASSIGN_OR_RETURN(filter, ParseMilvusExpr(expr));
  }
  ps.filter = AndFilters(std::move(filter), pfilter);
  return ps;
}

namespace {

// The first `need` groups (of at most group_size hits each, in order of
// their closest hit) of hits, flattened; *complete: each has group_size.
std::vector<size_t> Groups(const std::vector<MilvusHit>& hits, const std::string& field,
                           size_t group_size, size_t need, size_t* groups, bool* complete) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < hits.size(); ++i) {
    json p = json::parse(hits[i].record.payload, nullptr, false);
    const json* v = p.is_object() && p.contains(field) ? &p[field] : nullptr;
    std::string key = v != nullptr ? v->dump() : "null";
    auto& mem = members[key];
    if (mem.empty()) order.push_back(key);
    if (mem.size() < group_size) mem.push_back(i);
  }
  *groups = order.size();
  *complete = true;
  std::vector<size_t> out;
  for (size_t g = 0; g < order.size() && g < need; ++g) {
    const auto& mem = members[order[g]];
    *complete &= mem.size() == group_size;
    out.insert(out.end(), mem.begin(), mem.end());
  }
  return out;
}

}  // namespace

Result<std::vector<MilvusHit>> MilvusServiceImpl::RunQuery(const vector::Collection& coll,
                                                           const PreparedSearch& ps,
                                                           vector::SearchRequest r) {
  const SearchParams& sp = ps.sp;
  const bool grouping = !sp.group_by_field.empty();
  const bool post = sp.radius || grouping || sp.iterator_v2;
  std::vector<MilvusHit> out;
  if (!post) {
    r.limit = sp.topk;
    r.offset = sp.offset;
    return SearchHits(coll, ps, r);
  }
  const size_t page = sp.iterator_v2 ? std::min(sp.iter_batch_size, sp.topk) : sp.topk;
  const size_t need = sp.offset + page;  // hits, or groups when grouping
  const size_t points = std::max<size_t>(coll.Info().points, 1);
  size_t k = std::min(points, std::max<size_t>(64, 2 * need * (grouping ? sp.group_size : 1)));
  r.offset = 0;
  r.exclude = ps.skip;
  while (true) {
    r.limit = k;
    STRATA_ASSIGN_OR_RETURN(auto hits, SearchHits(coll, ps, r));
    bool exhausted = hits.size() < k || k >= points;
    out.clear();
    for (auto& h : hits) {
      const float d = h.score;
      if (sp.iter_last_bound && Closer(d, *sp.iter_last_bound, ps.l2)) continue;  // earlier page
      if (PastRadius(sp, d, ps.l2)) {
        exhausted = true;
        break;
      }
      if (InRange(sp, d, ps.l2)) out.push_back({std::move(h.record), d});
    }
    if (!grouping) {
      if (out.size() >= need || exhausted) {
        if (out.size() > need) out.resize(need);
        out.erase(out.begin(), out.begin() + std::min(sp.offset, out.size()));
        return out;
      }
    } else {
      size_t groups = 0;
      bool complete = false;
      auto idx = Groups(out, sp.group_by_field, sp.group_size, need, &groups, &complete);
      if (exhausted || (groups >= need && (complete || !sp.strict_group_size))) {
        // Skip the first `offset` groups: count group starts in idx order.
        std::vector<MilvusHit> sel;
        size_t g = 0;
        std::string last;
        for (size_t i = 0; i < idx.size(); ++i) {
          json p = json::parse(out[idx[i]].record.payload, nullptr, false);
          std::string key =
              p.is_object() && p.contains(sp.group_by_field) ? p[sp.group_by_field].dump() : "null";
          if (i == 0 || key != last) ++g;
          last = key;
          if (g > sp.offset) sel.push_back(std::move(out[idx[i]]));
        }
        return sel;
      }
    }
    k = std::min(points, k * 4);
  }
}

Result<std::vector<MilvusHit>> MilvusServiceImpl::SearchHits(const vector::Collection& coll,
                                                             const PreparedSearch& ps,
                                                             const vector::SearchRequest& r) {
  if (ps.jaccard) return ExactJaccard(coll, r);
  STRATA_ASSIGN_OR_RETURN(auto hits, coll.Search(r));
  std::vector<MilvusHit> out;
  out.reserve(hits.size());
  for (auto& h : hits) {
    float d = MilvusScore(h.score, ps.l2);
    if (ps.hamming) d = std::round(d);  // the sqrt and square of an integer
    out.push_back({std::move(h.record), d});
  }
  return out;
}

Status MilvusServiceImpl::FillSearchResults(const CollectionMeta& m, const OutputFields& out,
                                            const std::vector<std::vector<MilvusHit>>& results,
                                            size_t topk, int round_decimal,
                                            const std::string& group_field,
                                            pbs::SearchResultData* rd) {
  rd->set_num_queries(static_cast<int64_t>(results.size()));
  rd->set_top_k(static_cast<int64_t>(topk));
  rd->set_primary_field_name(m.Primary()->name);
  std::vector<const vector::Record*> records;
  for (const auto& hits : results) {
    rd->add_topks(static_cast<int64_t>(hits.size()));
    for (const auto& h : hits) {
      records.push_back(&h.record);
      rd->add_scores(Round(h.score, round_decimal));
    }
  }
  RecordIds(m, records, rd->mutable_ids());
  STRATA_RETURN_IF_ERROR(RecordsToFieldData(m, out, records, rd->mutable_fields_data()));
  for (const auto& n : out.names) rd->add_output_fields(n);
  if (!group_field.empty()) {
    OutputFields g;
    g.fields.push_back(m.Field(group_field));
    g.names.push_back(group_field);
    FieldDataList cols;
    STRATA_RETURN_IF_ERROR(RecordsToFieldData(m, g, records, &cols));
    *rd->mutable_group_by_field_value() = cols.Get(0);
    *rd->add_group_by_field_values() = cols.Get(0);
  }
  rd->set_all_search_count(static_cast<int64_t>(records.size()));
  return Status::Ok();
}

vector::SearchRequest MilvusServiceImpl::EngineRequest(const PreparedSearch& ps, size_t q,
                                                       bool with_vectors) {
  vector::SearchRequest r;
  r.vector_name = ps.field->name;
  if (ps.field_is_sparse()) {
    r.sparse = ps.sparse_queries[q];
  } else {
    r.vector = ps.queries[q];
  }
  r.filter = ps.filter;
  r.with_payload = true;  // VARCHAR keys and output fields live in the payload
  r.with_vectors = with_vectors;
  r.ef = ps.sp.ef;
  r.nprobe = ps.sp.nprobe;
  r.search_list = ps.sp.search_list;
  return r;
}

Status MilvusServiceImpl::DoSearch(const pbm::SearchRequest& req, pbm::SearchResults* resp) {
  STRATA_ASSIGN_OR_RETURN(auto t, OpenLoaded(req.db_name(), req.collection_name()));
  const CollectionMeta& m = *t.meta;
  STRATA_ASSIGN_OR_RETURN(auto pfilter, ReadPartitionsFilter(m, req.partition_names()));
  STRATA_ASSIGN_OR_RETURN(PreparedSearch ps, PrepareSearch(m, req, pfilter));
  // Milvus returns the primary key among the fields too; the SDKs read it there.
  STRATA_ASSIGN_OR_RETURN(OutputFields out,
                          ResolveOutputFields(m, req.output_fields(), /*with_primary=*/true));
  std::vector<std::vector<MilvusHit>> results;
  const bool simple =
      !ps.sp.radius && ps.sp.group_by_field.empty() && !ps.sp.iterator_v2 && !ps.jaccard;
  if (simple) {  // one engine batch
    std::vector<vector::SearchRequest> reqs;
    for (size_t i = 0; i < ps.nq(); ++i) {
      reqs.push_back(EngineRequest(ps, i, out.with_vectors));
      reqs.back().limit = ps.sp.topk;
      reqs.back().offset = ps.sp.offset;
    }
    STRATA_ASSIGN_OR_RETURN(auto batch, t.coll->SearchBatch(reqs));
    for (auto& hits : batch) {
      auto& dst = results.emplace_back();
      for (auto& h : hits) {
        float d = MilvusScore(h.score, ps.l2);
        if (ps.hamming) d = std::round(d);
        dst.push_back({std::move(h.record), d});
      }
    }
  } else {
    for (size_t i = 0; i < ps.nq(); ++i) {
      STRATA_ASSIGN_OR_RETURN(auto hits,
                              RunQuery(*t.coll, ps, EngineRequest(ps, i, out.with_vectors)));
      results.push_back(std::move(hits));
    }
  }
  auto* rd = resp->mutable_results();
  STRATA_RETURN_IF_ERROR(FillSearchResults(m, out, results, ps.sp.topk, ps.sp.round_decimal,
                                           ps.sp.group_by_field, rd));
  if (ps.sp.iterator_v2) {
    auto* it = rd->mutable_search_iterator_v2_results();
    const auto& hits = results[0];
    if (hits.empty()) {
      it->set_token(ps.sp.iter_token.empty() ? EncodeIterToken({}) : ps.sp.iter_token);
      it->set_last_bound(ps.sp.iter_last_bound.value_or(0));
    } else {
      const float last = hits.back().score;
      std::vector<vector::PointId> at_bound;
      // Hits at the same bound as the previous page's stay skipped.
      if (ps.sp.iter_last_bound && *ps.sp.iter_last_bound == last) at_bound = ps.skip;
      for (const auto& h : hits) {
        if (h.score == last) at_bound.push_back(h.record.id);
      }
      it->set_token(EncodeIterToken(at_bound));
      it->set_last_bound(last);
    }
  }
  resp->set_collection_name(req.collection_name());
  resp->set_session_ts(HybridNow());
  return Status::Ok();
}

grpc::Status MilvusServiceImpl::Search(ServerContext*, const pbm::SearchRequest* req,
                                       pbm::SearchResults* resp) {
  Status st = DoSearch(*req, resp);
  if (!st.ok()) resp->clear_results();
  return Reply(st, resp->mutable_status());
}

}  // namespace strata::milvus
