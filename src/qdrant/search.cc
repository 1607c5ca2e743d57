// Search: /points/search and its batch and groups forms; the query forms
// share the batch and groups plumbing and run through query.cc.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {
namespace {

using vector::Collection;
using vector::PointId;

Result<vector::FilterStrategy> StrategyFromString(const std::string& s) {
  std::string v = ToLower(s);
  if (v == "auto") return vector::FilterStrategy::kAuto;
  if (v == "graph") return vector::FilterStrategy::kGraph;
  if (v == "acorn") return vector::FilterStrategy::kAcorn;
  if (v == "exact") return vector::FilterStrategy::kExact;
  return Status::InvalidArgument(
      fmt::format("unknown filter strategy \"{}\" (auto, graph, acorn, exact)", s));
}

// A non-negative integer parameter (Qdrant's usize fields): a negative or
// fractional value is a 400 that names the parameter.
Result<uint64_t> Count(const json& v, const char* name) {
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0) {
    return Status::InvalidArgument(
        fmt::format("{} must not be negative (got {})", name, v.get<int64_t>()));
  }
  if (!v.is_number_unsigned()) {
    return Status::InvalidArgument(
        fmt::format("{} must be a non-negative integer (got {})", name, v.dump()));
  }
  return v.get<uint64_t>();
}

// A per-request index knob: a count that fits in 32 bits.
Status Knob(const json& params, const char* key, uint32_t* out) {
  const json* v = Field(params, key);
  if (v == nullptr) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(uint64_t n, Count(*v, key));
  if (n > 1'000'000) return Status::InvalidArgument(fmt::format("{} is at most 1000000", key));
  *out = uint32_t(n);
  return Status::Ok();
}

// The index knobs of "params" (Qdrant's hnsw_ef and exact; Strata's rerank =
// IVF_PQ candidates re-scored exactly, search_list = DISKANN's candidate list
// size) and of the "strata" object (also nprobe, ef, filter_strategy).
Status ParseSearchParams(const json& b, vector::SearchRequest* r) {
  if (const json* p = Field(b, "params")) {
    if (!p->is_object()) return Status::InvalidArgument("params must be a JSON object");
    STRATA_RETURN_IF_ERROR(Knob(*p, "hnsw_ef", &r->ef));
    STRATA_RETURN_IF_ERROR(Knob(*p, "rerank", &r->rerank));
    STRATA_RETURN_IF_ERROR(Knob(*p, "search_list", &r->search_list));
    if (const json* ex = Field(*p, "exact")) r->exact = ex->get<bool>();
  }
  if (const json* s = Field(b, "strata")) {
    if (!s->is_object()) return Status::InvalidArgument("strata must be a JSON object");
    STRATA_RETURN_IF_ERROR(Knob(*s, "nprobe", &r->nprobe));
    STRATA_RETURN_IF_ERROR(Knob(*s, "ef", &r->ef));
    STRATA_RETURN_IF_ERROR(Knob(*s, "rerank", &r->rerank));
    STRATA_RETURN_IF_ERROR(Knob(*s, "search_list", &r->search_list));
    if (const json* st = Field(*s, "filter_strategy")) {
      STRATA_ASSIGN_OR_RETURN(r->filter_strategy, StrategyFromString(st->get<std::string>()));
    }
  }
  return Status::Ok();
}

}  // namespace

// Common search parameters: filter, limit, offset, selectors, params.
Status ParseSearchCommon(const json& b, vector::SearchRequest* r, PayloadSelector* ps,
                         VectorSelector* vs, bool payload_default) {
  STRATA_ASSIGN_OR_RETURN(r->filter, FilterFromJson(Field(b, "filter")));
  try {
    // Qdrant: limit is a usize validated with range(min = 1).
    for (const char* key : {"limit", "top"}) {
      const json* l = Field(b, key);
      if (l == nullptr) continue;
      STRATA_ASSIGN_OR_RETURN(uint64_t n, Count(*l, "limit"));
      if (n == 0) return Status::InvalidArgument("limit must be at least 1 (got 0)");
      if (n > 100000)
        return Status::InvalidArgument(fmt::format("limit is at most 100000 (got {})", n));
      r->limit = size_t(n);
    }
    if (const json* o = Field(b, "offset")) {
      STRATA_ASSIGN_OR_RETURN(uint64_t n, Count(*o, "offset"));
      r->offset = size_t(n);
    }
    if (const json* t = Field(b, "score_threshold")) r->score_threshold = t->get<float>();
    STRATA_RETURN_IF_ERROR(ParseSearchParams(b, r));
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("bad search parameter: ") + e.what());
  }
  STRATA_RETURN_IF_ERROR(SelectorsFromBody(b, payload_default, ps, vs));
  r->with_payload = ps->enabled;
  r->with_vectors = vs->enabled;
  return Status::Ok();
}

namespace {

// A search body ("vector" is an array or {name, vector}).
Status ParseSearch(const json& b, vector::SearchRequest* r, PayloadSelector* ps,
                   VectorSelector* vs) {
  if (!b.is_object()) return Status::InvalidArgument("the search body must be a JSON object");
  const json* v = Field(b, "vector");
  if (v == nullptr) return Status::InvalidArgument("search needs a \"vector\"");
  if (v->is_object()) {
    const json* name = Field(*v, "name");
    const json* vals = Field(*v, "vector");
    if (name == nullptr || !name->is_string() || vals == nullptr) {
      return Status::InvalidArgument("a named search vector is {\"name\": ..., \"vector\": [...]}");
    }
    r->vector_name = name->get<std::string>();
    if (vals->is_object()) {
      STRATA_ASSIGN_OR_RETURN(r->sparse, SparseFromJson(*vals, "the sparse search vector"));
    } else {
      STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*vals, "vector"));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*v, "vector"));
  }
  if (const json* u = Field(b, "using")) {
    if (!u->is_string()) return Status::InvalidArgument("using must be a vector name");
    r->vector_name = u->get<std::string>();
  }
  return ParseSearchCommon(b, r, ps, vs, /*payload_default=*/false);
}

}  // namespace

namespace {

// The scored points of each body, and the selectors its answer uses.
struct BatchRun {
  std::vector<std::vector<vector::ScoredPoint>> results;
  std::vector<PayloadSelector> pss;
  std::vector<VectorSelector> vss;
};

Result<BatchRun> RunBatch(Collection& c, const std::vector<const json*>& bodies, bool query_shape) {
  std::vector<vector::SearchRequest> reqs(bodies.size());
  BatchRun run;
  run.pss.resize(bodies.size());
  run.vss.resize(bodies.size());
  run.results.resize(bodies.size());
  if (query_shape) {
    // Plain nearest-vector queries share one index batch; the rest run one
    // by one through the query planner.
    std::vector<vector::SearchRequest> plain;
    std::vector<size_t> where;
    for (size_t i = 0; i < bodies.size(); ++i) {
      vector::SearchRequest r;
      STRATA_ASSIGN_OR_RETURN(bool is_plain,
                              PlainNearest(c, *bodies[i], &r, &run.pss[i], &run.vss[i]));
      if (is_plain) {
        plain.push_back(std::move(r));
        where.push_back(i);
        continue;
      }
      STRATA_ASSIGN_OR_RETURN(QueryRun q, RunQuery(c, *bodies[i]));
      run.results[i] = std::move(q.points);
      run.pss[i] = std::move(q.ps);
      run.vss[i] = std::move(q.vs);
    }
    if (!plain.empty()) {
      STRATA_ASSIGN_OR_RETURN(auto res, c.SearchBatch(plain));
      for (size_t j = 0; j < plain.size(); ++j) run.results[where[j]] = std::move(res[j]);
    }
    return run;
  }
  for (size_t i = 0; i < bodies.size(); ++i) {
    STRATA_RETURN_IF_ERROR(ParseSearch(*bodies[i], &reqs[i], &run.pss[i], &run.vss[i]));
  }
  auto res = c.SearchBatch(reqs);
  if (!res) return res.error();
  run.results = std::move(*res);
  return run;
}

// A group id: a keyword or integer value of the group_by key.
std::vector<json> GroupKeys(const std::string& payload, const std::string& path) {
  json at = json::parse(payload.empty() ? "{}" : payload, nullptr, false);
  for (auto part : Split(path, '.')) {
    if (!at.is_object() || !at.contains(std::string(part))) return {};
    json next = at[std::string(part)];
    at = std::move(next);
  }
  std::vector<json> out;
  auto take = [&](const json& v) {
    if (v.is_string() || v.is_number_integer()) out.push_back(v);
  };
  if (at.is_array()) {
    for (const auto& v : at) take(v);
  } else {
    take(at);
  }
  return out;
}

}  // namespace

Result<json> SearchBatch(Collection& c, const std::vector<const json*>& bodies, bool query_shape) {
  STRATA_ASSIGN_OR_RETURN(BatchRun run, RunBatch(c, bodies, query_shape));
  json out = json::array();
  for (size_t i = 0; i < bodies.size(); ++i) {
    json rows = json::array();
    for (const auto& p : run.results[i]) rows.push_back(ScoredJson(p, c, run.pss[i], run.vss[i]));
    out.push_back(query_shape ? json{{"points", std::move(rows)}} : std::move(rows));
  }
  return out;
}

// search/groups and query/groups: the best `group_size` points of each of the
// best `limit` groups (by their best point), read from a search that widens
// until the groups are full or the collection is exhausted.
Result<json> SearchGroups(Collection& c, const json& b, bool query_shape) {
  const json* gb = Field(b, "group_by");
  if (gb == nullptr || !gb->is_string() || gb->get<std::string>().empty())
    return Status::InvalidArgument("groups need \"group_by\": a payload key");
  if (Field(b, "with_lookup") != nullptr)
    return Status::InvalidArgument("with_lookup is not supported");
  auto positive = [&](const char* k, size_t dflt) -> Result<size_t> {
    const json* v = Field(b, k);
    if (v == nullptr) return dflt;
    if (!v->is_number_unsigned() || v->get<uint64_t>() == 0 || v->get<uint64_t>() > 10000)
      return Status::InvalidArgument(fmt::format("{} must be an integer in 1..10000", k));
    return v->get<size_t>();
  };
  STRATA_ASSIGN_OR_RETURN(size_t group_size, positive("group_size", 3));
  STRATA_ASSIGN_OR_RETURN(size_t limit, positive("limit", 10));
  if (Field(b, "offset") != nullptr) return Status::InvalidArgument("groups take no offset");
  PayloadSelector ps;
  VectorSelector vs;
  STRATA_RETURN_IF_ERROR(SelectorsFromBody(b, /*payload_default=*/false, &ps, &vs));
  json inner = b;
  for (const char* k : {"group_by", "group_size", "limit", "with_lookup"}) inner.erase(k);
  inner["with_payload"] = true;
  const std::string key = gb->get<std::string>();
  const size_t total = c.Info().points;
  size_t fetch = std::max<size_t>(16, limit * group_size * 2);
  std::vector<std::pair<json, std::vector<vector::ScoredPoint>>> groups;
  while (true) {
    inner["limit"] = std::min<size_t>(std::max<size_t>(fetch, 1), 100000);
    STRATA_ASSIGN_OR_RETURN(BatchRun run, RunBatch(c, {&inner}, query_shape));
    groups.clear();
    bool full = true;
    for (const auto& p : run.results[0]) {
      for (const auto& k : GroupKeys(p.record.payload, key)) {
        auto it =
            std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == k; });
        if (it == groups.end()) {
          if (groups.size() >= limit) continue;
          groups.emplace_back(k, std::vector<vector::ScoredPoint>{});
          it = groups.end() - 1;
        }
        if (it->second.size() < group_size) it->second.push_back(p);
      }
    }
    for (const auto& g : groups) full &= g.second.size() >= group_size;
    full &= groups.size() >= limit;
    if (full || run.results[0].size() < inner["limit"].get<size_t>() || fetch >= total ||
        fetch >= 100000)
      break;
    fetch *= 4;
  }
  json out = json::array();
  for (const auto& [k, pts] : groups) {
    json hits = json::array();
    for (const auto& p : pts) hits.push_back(ScoredJson(p, c, ps, vs));
    out.push_back({{"id", k}, {"hits", hits}});
  }
  return json{{"groups", out}};
}

}  // namespace strata::qdrant
