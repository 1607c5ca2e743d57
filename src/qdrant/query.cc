// The universal query API (/points/query and its batch and groups forms):
// `query` as a vector, {nearest}, a point id, {recommend}, {discover},
// {context}, {order_by} or {fusion: rrf | dbsf}, over nested `prefetch`
// stages, each with its own filter, limit and `using`. A stage with prefetch
// re-scores the union of its children's points (exactly, restricted to those
// ids) or fuses their lists. Nearest-neighbour stages run on the index;
// best_score / sum_scores recommendations, discovery and context search score
// every matching point exactly, here.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::Filter;
using vector::PointId;
using vector::ScoredPoint;

namespace {

constexpr int kMaxDepth = 8;
// Qdrant's default RRF constant: score = sum over lists of 1 / (k + rank), rank from 1.
constexpr float kDefaultRrfK = 2;

struct Query {
  enum Kind {
    kNone,
    kNearest,
    kAverage,
    kBestScore,
    kSumScores,
    kDiscover,
    kContext,
    kOrderBy,
    kRrf,
    kDbsf
  };
  Kind kind = kNone;
  std::vector<float> vec;                    // kNearest, kAverage, kDiscover (target)
  std::optional<vector::SparseVector> sparse;  // kNearest on a sparse field
  std::vector<std::vector<float>> pos, neg;  // recommend examples; context pairs side by side
  json order_by;
  float rrf_k = kDefaultRrfK;
  std::vector<PointId> exclude;  // examples given by id are not answers
};

struct StageResult {
  std::vector<ScoredPoint> pts;
  bool lower_better = false;  // Euclid distances from the index
};

Result<size_t> FieldOf(const Collection& c, const std::string& name) {
  const auto& vs = c.schema().vectors;
  if (name.empty() && vs.size() == 1) return size_t{0};
  for (size_t i = 0; i < vs.size(); ++i) {
    if (vs[i].name == name) return i;
  }
  return Status::InvalidArgument(fmt::format("the collection has no vector named \"{}\"", name));
}

// Higher is closer, for every metric (Euclid: the negated distance).
float Similarity(vector::Metric m, const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0, l2 = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
    l2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  }
  switch (m) {
    case vector::Metric::kL2:
      return float(-std::sqrt(l2));
    case vector::Metric::kCosine:
      return na > 0 && nb > 0 ? float(dot / std::sqrt(na * nb)) : 0.f;
    case vector::Metric::kInnerProduct:
      return float(dot);
  }
  return float(dot);
}

constexpr size_t kNoField = ~size_t{0};

// An example: a vector, or a point id whose vector (under `using`) is taken.
Result<std::vector<float>> Example(Collection& c, const json& e, size_t field, Query* q) {
  if (e.is_array()) return FloatsFromJson(e, "example vector");
  if (field == kNoField) return Status::InvalidArgument("name the vector with \"using\"");
  STRATA_ASSIGN_OR_RETURN(PointId id, IdFromJson(e));
  std::vector<PointId> ids = {id};
  STRATA_ASSIGN_OR_RETURN(auto recs, c.Get(ids, false, true));
  if (recs.empty())
    return Status::NotFound(fmt::format("No point with id {} found", id.ToString()));
  const std::string& name = c.schema().vectors[field].name;
  q->exclude.push_back(id);
  for (const auto& nv : recs[0].vectors) {
    if (nv.name == name) return nv.values;
  }
  return Status::InvalidArgument(fmt::format("point {} has no vector \"{}\"", id.ToString(), name));
}

Status Examples(Collection& c, const json* list, size_t field, Query* q,
                std::vector<std::vector<float>>* out) {
  if (list == nullptr) return Status::Ok();
  if (!list->is_array()) return Status::InvalidArgument("examples must be an array");
  for (const auto& e : *list) {
    STRATA_ASSIGN_OR_RETURN(auto v, Example(c, e, field, q));
    out->push_back(std::move(v));
  }
  return Status::Ok();
}

Status ContextPairs(Collection& c, const json* ctx, size_t field, Query* q) {
  if (ctx == nullptr) return Status::Ok();
  const json list = ctx->is_array() ? *ctx : json::array({*ctx});
  for (const auto& pair : list) {
    const json* p = Field(pair, "positive");
    const json* n = Field(pair, "negative");
    if (p == nullptr || n == nullptr)
      return Status::InvalidArgument("a context pair is {\"positive\": ..., \"negative\": ...}");
    STRATA_ASSIGN_OR_RETURN(auto pv, Example(c, *p, field, q));
    STRATA_ASSIGN_OR_RETURN(auto nv, Example(c, *n, field, q));
    q->pos.push_back(std::move(pv));
    q->neg.push_back(std::move(nv));
  }
  return Status::Ok();
}

// A query on a sparse field: a sparse vector, or a point id whose sparse
// vector under `using` is taken.
Result<Query> SparseQueryValue(Collection& c, const json& v, const std::string& name) {
  Query q;
  q.kind = Query::kNearest;
  if (v.is_object() && v.contains("indices")) {
    STRATA_ASSIGN_OR_RETURN(q.sparse, SparseFromJson(v, "the sparse query"));
    return q;
  }
  if (!v.is_number() && !v.is_string()) {
    return Status::InvalidArgument(
        fmt::format("vector \"{}\" is sparse: query it with {{\"indices\", \"values\"}} or a point "
                    "id (recommend, "
                    "discover and context take dense vectors only)",
                    name));
  }
  STRATA_ASSIGN_OR_RETURN(PointId id, IdFromJson(v));
  std::vector<PointId> ids = {id};
  STRATA_ASSIGN_OR_RETURN(auto recs, c.Get(ids, false, true));
  if (recs.empty())
    return Status::NotFound(fmt::format("No point with id {} found", id.ToString()));
  q.exclude.push_back(id);
  for (const auto& sv : recs[0].sparse) {
    if (sv.name == name) {
      q.sparse = sv.vector;
      return q;
    }
  }
  return Status::InvalidArgument(
      fmt::format("point {} has no sparse vector \"{}\"", id.ToString(), name));
}

Result<Query> ParseQueryValue(Collection& c, const json* v, size_t field) {
  Query q;
  if (v == nullptr) return q;
  if (v->is_object() && v->contains("nearest")) v = &(*v)["nearest"];
  if (v->is_object() && v->contains("indices"))
    return Status::InvalidArgument(
        "a sparse query needs \"using\": the name of a sparse vector field");
  if (v->is_array()) {
    if (!v->empty() && v->front().is_array())
      return Status::InvalidArgument("multivector queries are not supported");
    q.kind = Query::kNearest;
    STRATA_ASSIGN_OR_RETURN(q.vec, FloatsFromJson(*v, "query"));
    return q;
  }
  if (v->is_number() || v->is_string()) {
    q.kind = Query::kNearest;
    STRATA_ASSIGN_OR_RETURN(q.vec, Example(c, *v, field, &q));
    return q;
  }
  if (!v->is_object() || v->size() != 1)
    return Status::InvalidArgument(
        "query is a vector, a point id or one of {nearest}, "
        "{recommend}, {discover}, {context}, {order_by}, {fusion}");
  const std::string& kind = v->begin().key();
  const json& body = v->begin().value();
  if (kind == "recommend") {
    STRATA_RETURN_IF_ERROR(Examples(c, Field(body, "positive"), field, &q, &q.pos));
    STRATA_RETURN_IF_ERROR(Examples(c, Field(body, "negative"), field, &q, &q.neg));
    std::string strategy = body.value("strategy", "average_vector");
    if (strategy == "average_vector") {
      if (q.pos.empty())
        return Status::InvalidArgument("recommend with average_vector needs positive examples");
      q.kind = Query::kAverage;
      const size_t dim = q.pos[0].size();
      std::vector<double> ap(dim, 0), an(dim, 0);
      for (const auto& p : q.pos)
        for (size_t i = 0; i < dim && i < p.size(); ++i) ap[i] += p[i] / double(q.pos.size());
      for (const auto& n : q.neg)
        for (size_t i = 0; i < dim && i < n.size(); ++i) an[i] += n[i] / double(q.neg.size());
      // avg_pos + (avg_pos - avg_neg), or avg_pos without negatives.
      for (size_t i = 0; i < dim; ++i)
        q.vec.push_back(float(q.neg.empty() ? ap[i] : 2 * ap[i] - an[i]));
    } else if (strategy == "best_score" || strategy == "sum_scores") {
      if (q.pos.empty() && q.neg.empty())
        return Status::InvalidArgument("recommend needs positive or negative examples");
      q.kind = strategy == "best_score" ? Query::kBestScore : Query::kSumScores;
    } else {
      return Status::InvalidArgument(fmt::format(
          "unknown recommend strategy \"{}\" (average_vector, best_score, sum_scores)", strategy));
    }
    return q;
  }
  if (kind == "discover") {
    const json* t = Field(body, "target");
    if (t == nullptr) return Status::InvalidArgument("discover needs a \"target\"");
    STRATA_ASSIGN_OR_RETURN(q.vec, Example(c, *t, field, &q));
    STRATA_RETURN_IF_ERROR(ContextPairs(c, Field(body, "context"), field, &q));
    q.kind = Query::kDiscover;
    return q;
  }
  if (kind == "context") {
    STRATA_RETURN_IF_ERROR(ContextPairs(c, &body, field, &q));
    if (q.pos.empty()) return Status::InvalidArgument("context search needs at least one pair");
    q.kind = Query::kContext;
    return q;
  }
  if (kind == "order_by") {
    q.kind = Query::kOrderBy;
    q.order_by = body;
    return q;
  }
  if (kind == "fusion" || kind == "rrf") {
    if (kind == "rrf") {
      q.kind = Query::kRrf;
      if (const json* k = Field(body, "k")) {
        if (!k->is_number_unsigned() || k->get<uint64_t>() == 0)
          return Status::InvalidArgument("rrf.k must be a positive integer");
        q.rrf_k = k->get<float>();
      }
      return q;
    }
    if (body == "rrf")
      q.kind = Query::kRrf;
    else if (body == "dbsf")
      q.kind = Query::kDbsf;
    else
      return Status::InvalidArgument("fusion is \"rrf\" or \"dbsf\"");
    return q;
  }
  return Status::InvalidArgument(fmt::format(
      "query kind \"{}\" is not supported (nearest, recommend, discover, context, order_by, "
      "fusion, rrf)",
      kind));
}

// The exact score of a point for the queries scored here.
float ExactScore(const Query& q, vector::Metric m, const std::vector<float>& v) {
  auto sim = [&](const std::vector<float>& x) { return Similarity(m, x, v); };
  switch (q.kind) {
    case Query::kBestScore: {
      float bp = -INFINITY, bn = -INFINITY;
      for (const auto& p : q.pos) bp = std::max(bp, sim(p));
      for (const auto& n : q.neg) bn = std::max(bn, sim(n));
      // Closer to a negative than to any positive: negated and squared.
      return bp >= bn ? bp : -(bn * bn);
    }
    case Query::kSumScores: {
      float s = 0;
      for (const auto& p : q.pos) s += sim(p);
      for (const auto& n : q.neg) s -= sim(n);
      return s;
    }
    case Query::kDiscover: {
      // The number of pairs whose positive side is nearer (+1) or not (-1),
      // then the target similarity squashed into (0, 1) to break ties.
      float rank = 0;
      for (size_t i = 0; i < q.pos.size(); ++i) rank += sim(q.pos[i]) > sim(q.neg[i]) ? 1 : -1;
      return rank + 1.f / (1.f + std::exp(-sim(q.vec)));
    }
    case Query::kContext: {
      float loss = 0;
      for (size_t i = 0; i < q.pos.size(); ++i)
        loss += std::min(0.f, sim(q.pos[i]) - sim(q.neg[i]));
      return loss;
    }
    default:
      return sim(q.vec);
  }
}

std::optional<Filter> And(const std::optional<Filter>& a, const std::optional<Filter>& b) {
  if (!a) return b;
  if (!b) return a;
  return Filter::And({*a, *b});
}

bool Excluded(const Query& q, const PointId& id) {
  return std::find(q.exclude.begin(), q.exclude.end(), id) != q.exclude.end();
}

// Sorts best first, drops below the threshold, keeps `n`.
void Finish(std::vector<ScoredPoint>* pts, std::optional<float> threshold, size_t n) {
  std::stable_sort(pts->begin(), pts->end(),
                   [](const ScoredPoint& a, const ScoredPoint& b) { return a.score > b.score; });
  if (threshold) std::erase_if(*pts, [&](const ScoredPoint& p) { return p.score < *threshold; });
  if (pts->size() > n) pts->resize(n);
}

std::vector<ScoredPoint> Fuse(const Query& q, const std::vector<StageResult>& lists, size_t n,
                              std::optional<float> threshold) {
  std::map<PointId, ScoredPoint> acc;
  for (const auto& l : lists) {
    double mean = 0, var = 0;
    for (const auto& p : l.pts) mean += p.score / double(l.pts.size());
    for (const auto& p : l.pts) var += (p.score - mean) * (p.score - mean) / double(l.pts.size());
    const double sd = std::sqrt(var);
    for (size_t r = 0; r < l.pts.size(); ++r) {
      const ScoredPoint& p = l.pts[r];
      float add = 0;
      if (q.kind == Query::kRrf) {
        add = 1.f / (q.rrf_k + float(r + 1));
      } else {
        // DBSF: each list's scores normalised over mean +- 3 sd, then summed.
        double s = l.lower_better ? -p.score : p.score;
        double m = l.lower_better ? -mean : mean;
        double lo = m - 3 * sd, hi = m + 3 * sd;
        add = hi > lo ? float(std::clamp((s - lo) / (hi - lo), 0.0, 1.0)) : 0.5f;
      }
      auto [it, fresh] = acc.try_emplace(p.record.id, p);
      if (fresh) it->second.score = 0;
      it->second.score += add;
    }
  }
  std::vector<ScoredPoint> out;
  for (auto& [id, p] : acc) out.push_back(std::move(p));
  Finish(&out, threshold, n);
  return out;
}

Status CheckFields(const json& st, bool top) {
  for (auto it = st.begin(); it != st.end(); ++it) {
    static const char* kTop[] = {"prefetch",     "query",       "using",           "filter",
                                 "params",       "limit",       "score_threshold", "offset",
                                 "with_payload", "with_vector", "with_vectors",    "strata"};
    const std::string& k = it.key();
    if (k == "lookup_from" || k == "shard_key")
      return Status::InvalidArgument(fmt::format("{} is not supported", k));
    if (k == "consistency" || k == "timeout")
      return Status::InvalidArgument(
          fmt::format("{} is a URL parameter (?{}=...), not a field of the query body", k, k));
    bool ok = std::any_of(std::begin(kTop), std::end(kTop), [&](const char* x) { return k == x; });
    if (!top && (k == "offset" || k == "with_payload" || k == "with_vector" || k == "with_vectors"))
      ok = false;
    if (!ok) return Status::InvalidArgument(fmt::format("query field \"{}\" is not supported", k));
  }
  return Status::Ok();
}

Result<StageResult> RunStage(Collection& c, const json& st, const std::optional<Filter>& outer,
                             int depth, bool top);

// A stage's own query over the points `among` (all matching ones when null).
Result<StageResult> Evaluate(Collection& c, const Query& q, const vector::SearchRequest& base,
                             size_t field, const std::optional<Filter>& filter, size_t n,
                             const std::vector<PointId>* among) {
  StageResult out;
  const auto metric =
      field == kNoField ? vector::Metric::kInnerProduct : c.schema().vectors[field].index.metric;
  std::optional<Filter> f = filter;
  if (among != nullptr) f = And(f, Filter::HasId(*among));
  if (q.sparse) {
    vector::SearchRequest r = base;
    r.sparse = q.sparse;
    r.filter = f;
    r.limit = n;
    r.offset = 0;
    r.exclude = q.exclude;
    r.with_payload = r.with_vectors = false;
    STRATA_ASSIGN_OR_RETURN(out.pts, c.Search(r));
    return out;
  }
  if (q.kind == Query::kNearest || q.kind == Query::kAverage) {
    vector::SearchRequest r = base;
    r.vector = q.vec;
    r.vector_name = c.schema().vectors[field].name;
    r.filter = f;
    r.limit = n;
    r.offset = 0;
    r.exclude = q.exclude;
    r.with_payload = r.with_vectors = false;
    if (among != nullptr) r.exact = true;  // re-scoring a known set of points
    STRATA_ASSIGN_OR_RETURN(out.pts, c.Search(r));
    out.lower_better = metric == vector::Metric::kL2;
    return out;
  }
  if ((q.kind == Query::kOrderBy || q.kind == Query::kNone) && base.score_threshold)
    return Status::InvalidArgument("score_threshold needs a query that scores points");
  if (q.kind == Query::kOrderBy) {
    STRATA_ASSIGN_OR_RETURN(out.pts, OrderedPoints(c, q.order_by, f, n, false));
    return out;
  }
  if (q.kind == Query::kNone) {
    vector::ScrollRequest sr;
    sr.filter = f;
    sr.limit = n;
    sr.with_payload = false;
    STRATA_ASSIGN_OR_RETURN(auto page, c.Scroll(sr));
    for (auto& r : page.points) out.pts.push_back(ScoredPoint{std::move(r), 0});
    return out;
  }
  // Exact scoring of every candidate.
  vector::ScrollRequest sr;
  sr.filter = f;
  sr.limit = c.Info().points + 1;
  sr.with_payload = false;
  sr.with_vectors = true;
  STRATA_ASSIGN_OR_RETURN(auto page, c.Scroll(sr));
  const std::string& name = c.schema().vectors[field].name;
  for (auto& r : page.points) {
    if (Excluded(q, r.id)) continue;
    for (const auto& nv : r.vectors) {
      if (nv.name != name) continue;
      ScoredPoint p{vector::Record{r.id, r.version, "", {}}, ExactScore(q, metric, nv.values)};
      out.pts.push_back(std::move(p));
    }
  }
  Finish(&out.pts, base.score_threshold, n);
  return out;
}

Result<StageResult> RunStage(Collection& c, const json& st, const std::optional<Filter>& outer,
                             int depth, bool top) {
  if (depth > kMaxDepth)
    return Status::InvalidArgument(fmt::format("prefetch is nested deeper than {}", kMaxDepth));
  if (!st.is_object()) return Status::InvalidArgument("a query or prefetch is a JSON object");
  STRATA_RETURN_IF_ERROR(CheckFields(st, top));
  vector::SearchRequest base;
  PayloadSelector ps;
  VectorSelector vs;
  STRATA_RETURN_IF_ERROR(ParseSearchCommon(st, &base, &ps, &vs, /*payload_default=*/false));
  std::string using_;
  if (const json* u = Field(st, "using")) {
    if (!u->is_string()) return Status::InvalidArgument("using must be a vector name");
    using_ = u->get<std::string>();
  }
  Result<size_t> fr = FieldOf(c, using_);
  const size_t field = fr ? *fr : kNoField;
  const bool sparse = std::any_of(c.schema().sparse.begin(), c.schema().sparse.end(),
                                  [&](const auto& f) { return f.name == using_; });
  const json* qv = Field(st, "query");
  if (qv != nullptr && qv->is_object() && qv->contains("nearest")) qv = &(*qv)["nearest"];
  Query q;
  if (sparse && qv != nullptr &&
      ((qv->is_object() && qv->contains("indices")) || qv->is_number() || qv->is_string() ||
       qv->is_array() ||
       (qv->is_object() &&
        (qv->contains("recommend") || qv->contains("discover") || qv->contains("context"))))) {
    STRATA_ASSIGN_OR_RETURN(q, SparseQueryValue(c, *qv, using_));
    base.vector_name = using_;
    fr = size_t{0};  // the sparse field stands in for a dense one
  } else {
    STRATA_ASSIGN_OR_RETURN(q, ParseQueryValue(c, qv, field));
  }
  // Fusion, order_by and a plain listing need no vector field.
  if (!fr && q.kind != Query::kNone && q.kind != Query::kOrderBy && q.kind != Query::kRrf &&
      q.kind != Query::kDbsf)
    return fr.error();
  const std::optional<Filter> filter = And(outer, base.filter);
  const size_t n = base.limit + base.offset;
  std::vector<StageResult> children;
  if (const json* pf = Field(st, "prefetch")) {
    const json list = pf->is_array() ? *pf : json::array({*pf});
    for (const auto& child : list) {
      // The outer filter narrows every prefetch, as in Qdrant.
      STRATA_ASSIGN_OR_RETURN(StageResult r, RunStage(c, child, filter, depth + 1, false));
      children.push_back(std::move(r));
    }
  }
  StageResult out;
  const bool fusion = q.kind == Query::kRrf || q.kind == Query::kDbsf;
  if (fusion) {
    if (children.empty()) return Status::InvalidArgument("fusion needs \"prefetch\" to fuse");
    out.pts = Fuse(q, children, n, base.score_threshold);
  } else if (!children.empty()) {
    if (q.kind == Query::kNone)
      return Status::InvalidArgument("a query with \"prefetch\" needs a \"query\" to rank them");
    std::vector<PointId> among;
    for (const auto& ch : children)
      for (const auto& p : ch.pts) among.push_back(p.record.id);
    std::sort(among.begin(), among.end());
    among.erase(std::unique(among.begin(), among.end()), among.end());
    if (!among.empty()) {
      STRATA_ASSIGN_OR_RETURN(out, Evaluate(c, q, base, field, filter, n, &among));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(out, Evaluate(c, q, base, field, filter, n, nullptr));
  }
  if (base.offset > 0)
    out.pts.erase(out.pts.begin(), out.pts.begin() + std::min(base.offset, out.pts.size()));
  return out;
}

}  // namespace

Result<QueryRun> RunQuery(Collection& c, const json& b) {
  QueryRun run;
  STRATA_RETURN_IF_ERROR(SelectorsFromBody(b, /*payload_default=*/false, &run.ps, &run.vs));
  STRATA_ASSIGN_OR_RETURN(StageResult r, RunStage(c, b, std::nullopt, 0, true));
  if (!run.ps.enabled && !run.vs.enabled) {
    run.points = std::move(r.pts);
    return run;
  }
  // Payloads and vectors of the answers, read once at the end.
  std::vector<PointId> ids;
  for (const auto& p : r.pts) ids.push_back(p.record.id);
  STRATA_ASSIGN_OR_RETURN(auto recs, c.Get(ids, run.ps.enabled, run.vs.enabled));
  std::map<PointId, vector::Record*> by_id;
  for (auto& rec : recs) by_id[rec.id] = &rec;
  for (auto& p : r.pts) {
    auto it = by_id.find(p.record.id);
    if (it == by_id.end()) continue;  // deleted meanwhile
    p.record.payload = it->second->payload;
    p.record.vectors = it->second->vectors;
    p.record.sparse = it->second->sparse;
    run.points.push_back(std::move(p));
  }
  return run;
}

Result<bool> PlainNearest(Collection& c, const json& b, vector::SearchRequest* r,
                          PayloadSelector* ps, VectorSelector* vs) {
  if (!b.is_object() || b.contains("prefetch")) return false;
  const json* q = Field(b, "query");
  if (q != nullptr && q->is_object() && q->size() == 1 && q->contains("nearest"))
    q = &(*q)["nearest"];
  if (q == nullptr || !q->is_array() || q->empty() || !q->front().is_number()) return false;
  if (const json* u = Field(b, "using"); u != nullptr && u->is_string()) {
    const auto& sp = c.schema().sparse;
    if (std::any_of(sp.begin(), sp.end(), [&](const auto& f) { return f.name == *u; }))
      return false;  // RunQuery answers a dense vector on a sparse field
  }
  STRATA_RETURN_IF_ERROR(CheckFields(b, /*top=*/true));
  STRATA_RETURN_IF_ERROR(ParseSearchCommon(b, r, ps, vs, /*payload_default=*/false));
  if (const json* u = Field(b, "using")) {
    if (!u->is_string()) return Status::InvalidArgument("using must be a vector name");
    r->vector_name = u->get<std::string>();
  }
  STRATA_RETURN_IF_ERROR(FieldOf(c, r->vector_name).status());
  STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*q, "query"));
  return true;
}

Result<json> LegacyToQuery(const json& b, bool discover) {
  if (!b.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  json q = json::object();
  json out = json::object();
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const bool example_key = discover ? (k == "target" || k == "context")
                                      : (k == "positive" || k == "negative" || k == "strategy");
    (example_key ? q[k] : out[k]) = it.value();
  }
  if (discover && !q.contains("context")) q["context"] = json::array();
  out["query"] = json{{discover ? "discover" : "recommend", q}};
  return out;
}

}  // namespace strata::qdrant
