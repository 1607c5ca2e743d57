#include "server/vector_rest.h"

#include <fmt/format.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

namespace strata::server {

using json = nlohmann::json;
using vector::Collection;
using vector::CollectionManager;
using vector::Filter;
using vector::PointId;

namespace {

constexpr log::Logger kLog("vector-rest");
// The Qdrant version we answer GET / with: @qdrant/js-client-rest warns (only)
// when its major differs or its minor is more than one away.
constexpr std::string_view kQdrantVersion = "1.18.0";

// An error with its HTTP status.
struct HttpError {
  int status;
  std::string message;
};

template <class T>
using Res = std::variant<T, HttpError>;

int HttpStatusOf(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kPreconditionFailed:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kNotSupported:
      return 400;
    default:
      return 500;
  }
}

HttpError FromStatus(const Status& st) {
  std::string prefix;
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      prefix = "Wrong input: ";
      break;
    case StatusCode::kNotFound:
      prefix = "Not found: ";
      break;
    case StatusCode::kAlreadyExists:
      prefix = "Wrong input: ";
      break;
    case StatusCode::kNotSupported:
      prefix = "Unsupported: ";
      break;
    case StatusCode::kUnavailable:
      prefix = "Service unavailable: ";
      break;
    default:
      prefix = "Service internal error: ";
      break;
  }
  return HttpError{HttpStatusOf(st), prefix + st.message()};
}

HttpError BadRequest(std::string m) { return HttpError{400, "Wrong input: " + std::move(m)}; }

// ---------------------------------------------------------------------------
// JSON <-> collection types

Result<PointId> IdFromJson(const json& v) {
  if (v.is_number_unsigned()) return PointId::Number(v.get<uint64_t>());
  if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0)
      return Status::InvalidArgument(fmt::format("point id {} is negative", v.dump()));
    return PointId::Number(v.get<uint64_t>());
  }
  if (v.is_string()) {
    auto id = PointId::ParseUuid(v.get<std::string>());
    if (!id) {
      return Status::InvalidArgument(
          fmt::format("point id {} is not an unsigned integer or a UUID", v.dump()));
    }
    return id;
  }
  return Status::InvalidArgument(
      fmt::format("point id {} is not an unsigned integer or a UUID", v.dump().substr(0, 80)));
}

json IdToJson(const PointId& id) {
  if (id.is_uuid) return id.ToString();
  return id.hi;
}

Result<std::optional<Filter>> FilterFromJson(const json* v) {
  if (v == nullptr || v->is_null()) return std::optional<Filter>();
  if (v->is_string()) {
    STRATA_ASSIGN_OR_RETURN(Filter f, vector::ParseFilterExpression(v->get<std::string>()));
    return std::optional<Filter>(std::move(f));
  }
  if (v->is_object()) {
    STRATA_ASSIGN_OR_RETURN(Filter f, vector::ParseQdrantFilter(v->dump()));
    return std::optional<Filter>(std::move(f));
  }
  return Status::InvalidArgument("filter must be a Qdrant filter object or an expression string");
}

const json* Field(const json& o, const char* name) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(name);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::vector<float>> FloatsFromJson(const json& v, std::string_view what) {
  if (!v.is_array())
    return Status::InvalidArgument(fmt::format("{} must be an array of numbers", what));
  std::vector<float> out;
  out.reserve(v.size());
  for (const auto& x : v) {
    if (!x.is_number()) {
      return Status::InvalidArgument(
          fmt::format("{} has a component that is not a number: {}", what, x.dump().substr(0, 40)));
    }
    double d = x.get<double>();
    out.push_back(static_cast<float>(d));
  }
  return out;
}

struct PayloadSelector {
  bool enabled = false;
  std::vector<std::string> include;  // empty: everything
  std::vector<std::string> exclude;
};

Result<PayloadSelector> PayloadSelectorFromJson(const json* v, bool dflt) {
  PayloadSelector s;
  s.enabled = dflt;
  if (v == nullptr) return s;
  auto strings = [](const json& a, std::vector<std::string>* out) -> Status {
    if (!a.is_array())
      return Status::InvalidArgument("with_payload fields must be an array of strings");
    for (const auto& e : a) {
      if (!e.is_string()) return Status::InvalidArgument("with_payload fields must be strings");
      out->push_back(e.get<std::string>());
    }
    return Status::Ok();
  };
  if (v->is_boolean()) {
    s.enabled = v->get<bool>();
  } else if (v->is_array()) {
    s.enabled = true;
    STRATA_RETURN_IF_ERROR(strings(*v, &s.include));
  } else if (v->is_object()) {
    s.enabled = true;
    if (const json* inc = Field(*v, "include")) STRATA_RETURN_IF_ERROR(strings(*inc, &s.include));
    if (const json* exc = Field(*v, "exclude")) STRATA_RETURN_IF_ERROR(strings(*exc, &s.exclude));
  } else {
    return Status::InvalidArgument(
        "with_payload must be a bool, a list of fields or {include|exclude}");
  }
  return s;
}

struct VectorSelector {
  bool enabled = false;
  std::vector<std::string> names;  // empty: all
};

Result<VectorSelector> VectorSelectorFromJson(const json* v) {
  VectorSelector s;
  if (v == nullptr) return s;
  if (v->is_boolean()) {
    s.enabled = v->get<bool>();
  } else if (v->is_array()) {
    s.enabled = true;
    for (const auto& e : *v) {
      if (!e.is_string()) return Status::InvalidArgument("with_vector names must be strings");
      s.names.push_back(e.get<std::string>());
    }
  } else {
    return Status::InvalidArgument("with_vector must be a bool or a list of vector names");
  }
  return s;
}

// A dotted path copied out of (or removed from) a payload object.
void CopyPath(const json& from, json* to, std::string_view path) {
  size_t dot = path.find('.');
  std::string head(path.substr(0, dot));
  auto it = from.find(head);
  if (it == from.end()) return;
  if (dot == std::string_view::npos || !it->is_object()) {
    (*to)[head] = *it;
    return;
  }
  json& sub = (*to)[head];
  if (!sub.is_object()) sub = json::object();
  CopyPath(*it, &sub, path.substr(dot + 1));
}

void RemovePath(json* obj, std::string_view path) {
  size_t dot = path.find('.');
  std::string head(path.substr(0, dot));
  if (!obj->is_object()) return;
  if (dot == std::string_view::npos) {
    obj->erase(head);
    return;
  }
  auto it = obj->find(head);
  if (it != obj->end()) RemovePath(&*it, path.substr(dot + 1));
}

json PayloadJson(const std::string& text, const PayloadSelector& sel) {
  json p = json::parse(text, nullptr, false);
  if (!p.is_object()) p = json::object();
  if (!sel.include.empty()) {
    json out = json::object();
    for (const auto& k : sel.include) CopyPath(p, &out, k);
    p = std::move(out);
  }
  for (const auto& k : sel.exclude) RemovePath(&p, k);
  return p;
}

json VectorsJson(const vector::Record& r, const Collection& c, const VectorSelector& sel) {
  const auto& schema = c.schema();
  if (schema.vectors.size() == 1 && schema.vectors[0].name.empty()) {
    return r.vectors.empty() ? json() : json(r.vectors[0].values);
  }
  json out = json::object();
  for (const auto& nv : r.vectors) {
    if (!sel.names.empty() &&
        std::find(sel.names.begin(), sel.names.end(), nv.name) == sel.names.end())
      continue;
    out[nv.name] = nv.values;
  }
  return out;
}

json RecordJson(const vector::Record& r, const Collection& c, const PayloadSelector& ps,
                const VectorSelector& vs) {
  json j = json::object();
  j["id"] = IdToJson(r.id);
  if (ps.enabled) j["payload"] = PayloadJson(r.payload, ps);
  if (vs.enabled) j["vector"] = VectorsJson(r, c, vs);
  return j;
}

json ScoredJson(const vector::ScoredPoint& p, const Collection& c, const PayloadSelector& ps,
                const VectorSelector& vs) {
  json j = json::object();
  j["id"] = IdToJson(p.record.id);
  j["version"] = p.record.version;
  j["score"] = std::isfinite(p.score) ? json(p.score) : json(nullptr);
  if (ps.enabled) j["payload"] = PayloadJson(p.record.payload, ps);
  if (vs.enabled) j["vector"] = VectorsJson(p.record, c, vs);
  return j;
}

std::string_view DistanceName(vector::Metric m) {
  switch (m) {
    case vector::Metric::kL2:
      return "Euclid";
    case vector::Metric::kInnerProduct:
      return "Dot";
    case vector::Metric::kCosine:
      return "Cosine";
  }
  return "Euclid";
}

Result<vector::Metric> DistanceFromJson(const json* v) {
  if (v == nullptr || !v->is_string()) {
    return Status::InvalidArgument(
        "vectors.distance is required: \"Cosine\", \"Euclid\" or \"Dot\"");
  }
  std::string d = ToLower(v->get<std::string>());
  if (d == "cosine") return vector::Metric::kCosine;
  if (d == "euclid" || d == "l2" || d == "euclidean") return vector::Metric::kL2;
  if (d == "dot" || d == "ip") return vector::Metric::kInnerProduct;
  if (d == "manhattan")
    return Status::InvalidArgument(
        "distance \"Manhattan\" is not supported (use Cosine, Euclid or Dot)");
  return Status::InvalidArgument(
      fmt::format("unknown distance \"{}\" (use Cosine, Euclid or Dot)", v->get<std::string>()));
}

// The "strata" extension's index part, applied onto params.
Status ApplyStrataIndex(const json& s, vector::IndexParams* p) {
  if (!s.is_object()) return Status::InvalidArgument("\"strata\" must be an object");
  if (const json* t = Field(s, "index")) {
    if (!t->is_string())
      return Status::InvalidArgument(
          "strata.index must be a string (FLAT, IVF_FLAT, IVF_PQ, HNSW, DISKANN)");
    auto type = vector::ParseIndexType(t->get<std::string>());
    if (!type) return type.error().WithContext("strata.index");
    p->type = *type;
  }
  const json* params = Field(s, "params");
  if (params == nullptr) return Status::Ok();
  if (!params->is_object()) return Status::InvalidArgument("strata.params must be an object");
  try {
    for (auto it = params->begin(); it != params->end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (k == "m") {
        p->hnsw_m = v.get<uint32_t>();
      } else if (k == "ef_construction" || k == "ef_construct") {
        p->hnsw_ef_construction = v.get<uint32_t>();
      } else if (k == "sq8") {
        p->hnsw_sq8 = v.get<bool>();
      } else if (k == "nlist") {
        p->ivf_nlist = v.get<uint32_t>();
      } else if (k == "pq_m") {
        p->pq_m = v.get<uint32_t>();
      } else if (k == "pq_nbits") {
        p->pq_nbits = v.get<uint32_t>();
      } else if (k == "rerank") {
        std::string r = v.get<std::string>();
        if (r == "none") {
          p->ivfpq_rerank = vector::RerankStorage::kNone;
        } else if (r == "memory") {
          p->ivfpq_rerank = vector::RerankStorage::kMemory;
        } else if (r == "disk") {
          p->ivfpq_rerank = vector::RerankStorage::kDisk;
        } else {
          return Status::InvalidArgument("strata.params.rerank is none, memory or disk");
        }
      } else if (k == "diskann_r" || k == "r") {
        p->diskann_r = v.get<uint32_t>();
      } else if (k == "diskann_l" || k == "l") {
        p->diskann_l = v.get<uint32_t>();
      } else if (k == "diskann_alpha" || k == "alpha") {
        p->diskann_alpha = v.get<float>();
      } else if (k == "seed") {
        p->seed = v.get<uint64_t>();
      } else {
        return Status::InvalidArgument(
            fmt::format("unknown strata.params key \"{}\" (m, ef_construction, sq8, nlist, pq_m, "
                        "pq_nbits, rerank, diskann_r, "
                        "diskann_l, diskann_alpha, seed)",
                        k));
      }
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("strata.params: ") + e.what());
  }
  return Status::Ok();
}

Status ApplyHnswConfig(const json* h, vector::IndexParams* p) {
  if (h == nullptr) return Status::Ok();
  if (!h->is_object()) return Status::InvalidArgument("hnsw_config must be an object");
  try {
    if (const json* m = Field(*h, "m")) p->hnsw_m = m->get<uint32_t>();
    if (const json* e = Field(*h, "ef_construct")) p->hnsw_ef_construction = e->get<uint32_t>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("hnsw_config: ") + e.what());
  }
  return Status::Ok();
}

void ApplyQuantization(const json* q, vector::IndexParams* p) {
  if (q == nullptr || !q->is_object()) return;
  if (const json* s = Field(*q, "scalar")) {
    if (s->is_object() && s->value("type", "") == "int8") p->hnsw_sq8 = true;
  }
}

Result<vector::FilterStrategy> StrategyFromString(const std::string& s) {
  std::string v = ToLower(s);
  if (v == "auto") return vector::FilterStrategy::kAuto;
  if (v == "graph") return vector::FilterStrategy::kGraph;
  if (v == "acorn") return vector::FilterStrategy::kAcorn;
  if (v == "exact") return vector::FilterStrategy::kExact;
  return Status::InvalidArgument(
      fmt::format("unknown filter strategy \"{}\" (auto, graph, acorn, exact)", s));
}

// Common search parameters: filter, limit, offset, selectors, params.
Status ParseSearchCommon(const json& b, vector::SearchRequest* r, PayloadSelector* ps,
                         VectorSelector* vs, bool payload_default) {
  STRATA_ASSIGN_OR_RETURN(r->filter, FilterFromJson(Field(b, "filter")));
  try {
    if (const json* l = Field(b, "limit")) r->limit = l->get<size_t>();
    if (const json* l = Field(b, "top")) r->limit = l->get<size_t>();
    if (const json* o = Field(b, "offset")) r->offset = o->get<size_t>();
    if (const json* t = Field(b, "score_threshold")) r->score_threshold = t->get<float>();
    if (const json* p = Field(b, "params")) {
      if (const json* ef = Field(*p, "hnsw_ef")) r->ef = ef->get<uint32_t>();
      if (const json* ex = Field(*p, "exact")) r->exact = ex->get<bool>();
    }
    if (const json* s = Field(b, "strata")) {
      if (const json* n = Field(*s, "nprobe")) r->nprobe = n->get<uint32_t>();
      if (const json* ef = Field(*s, "ef")) r->ef = ef->get<uint32_t>();
      if (const json* st = Field(*s, "filter_strategy")) {
        STRATA_ASSIGN_OR_RETURN(r->filter_strategy, StrategyFromString(st->get<std::string>()));
      }
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("bad search parameter: ") + e.what());
  }
  if (r->limit > 100000) return Status::InvalidArgument("limit is at most 100000");
  STRATA_ASSIGN_OR_RETURN(*ps, PayloadSelectorFromJson(Field(b, "with_payload"), payload_default));
  const json* wv = Field(b, "with_vector");
  if (wv == nullptr) wv = Field(b, "with_vectors");
  STRATA_ASSIGN_OR_RETURN(*vs, VectorSelectorFromJson(wv));
  r->with_payload = ps->enabled;
  r->with_vectors = vs->enabled;
  return Status::Ok();
}

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
    if (vals->is_object()) return Status::InvalidArgument("sparse vectors are not supported");
    r->vector_name = name->get<std::string>();
    STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*vals, "vector"));
  } else {
    STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*v, "vector"));
  }
  if (const json* u = Field(b, "using")) {
    if (!u->is_string()) return Status::InvalidArgument("using must be a vector name");
    r->vector_name = u->get<std::string>();
  }
  return ParseSearchCommon(b, r, ps, vs, /*payload_default=*/false);
}

bool QueryBool(std::string_view query, std::string_view name, bool dflt) {
  for (auto part : Split(query, '&')) {
    size_t eq = part.find('=');
    std::string_view k = part.substr(0, eq);
    if (k != name) continue;
    if (eq == std::string_view::npos) return true;
    std::string v = ToLower(part.substr(eq + 1));
    return v == "true" || v == "1" || v == "yes";
  }
  return dflt;
}

metrics::Histogram& LatencyFor(const std::string& op) {
  return metrics::Registry::Global().GetHistogram("strata_vector_http_request_seconds",
                                                  "Vector REST request latency by operation",
                                                  fmt::format("op=\"{}\"", op));
}

}  // namespace

// ---------------------------------------------------------------------------

struct VectorRest::Impl {
  CollectionManager* mgr;
  VectorRestOptions opts;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  struct Ctx {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double Elapsed() const {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  };

  Reply Ok(const Ctx& ctx, json result) const {
    json j{{"result", std::move(result)}, {"status", "ok"}, {"time", ctx.Elapsed()}};
    return Reply{200, j.dump(-1, ' ', false, json::error_handler_t::replace)};
  }
  Reply Error(const Ctx& ctx, const HttpError& e) const {
    json j{{"status", {{"error", e.message}}}, {"time", ctx.Elapsed()}};
    return Reply{e.status, j.dump(-1, ' ', false, json::error_handler_t::replace)};
  }
  Reply Error(const Ctx& ctx, const Status& st) const { return Error(ctx, FromStatus(st)); }

  Res<std::shared_ptr<Collection>> Coll(const std::string& name) const {
    auto c = mgr->Get(name);
    if (!c) return HttpError{404, fmt::format("Not found: Collection `{}` doesn't exist!", name)};
    return *c;
  }

  static Res<json> ParseBody(std::string_view body, bool required) {
    if (Trim(body).empty()) {
      if (required) return BadRequest("the request needs a JSON body");
      return json::object();
    }
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded())
      return HttpError{400, "Format error in JSON body: the body is not valid JSON"};
    if (!j.is_object()) return HttpError{400, "Format error in JSON body: expected a JSON object"};
    return j;
  }

  // ----- collections

  json CollectionInfoJson(const Collection& c) const {
    auto info = c.Info();
    json vectors;
    const auto& s = info.schema;
    auto vec_json = [&](const vector::VectorFieldSchema& f) {
      json v{{"size", f.index.dim}, {"distance", DistanceName(f.index.metric)}};
      if (f.index.type == vector::IndexType::kHnsw) {
        v["hnsw_config"] = {{"m", f.index.hnsw_m}, {"ef_construct", f.index.hnsw_ef_construction}};
      }
      return v;
    };
    if (s.vectors.size() == 1 && s.vectors[0].name.empty()) {
      vectors = vec_json(s.vectors[0]);
    } else {
      vectors = json::object();
      for (const auto& f : s.vectors) vectors[f.name] = vec_json(f);
    }
    const auto& idx0 = s.vectors[0].index;
    json strata_cfg = json::array();
    for (const auto& f : s.vectors) {
      strata_cfg.push_back({{"vector", f.name},
                            {"index", vector::IndexTypeName(f.index.type)},
                            {"params",
                             {{"m", f.index.hnsw_m},
                              {"ef_construction", f.index.hnsw_ef_construction},
                              {"sq8", f.index.hnsw_sq8},
                              {"nlist", f.index.ivf_nlist},
                              {"pq_m", f.index.pq_m},
                              {"diskann_r", f.index.diskann_r},
                              {"diskann_l", f.index.diskann_l},
                              {"diskann_alpha", f.index.diskann_alpha}}}});
    }
    json payload_schema = json::object();
    for (const auto& [f, n] : info.payload_indexes) {
      std::string t(vector::PayloadTypeName(f.type));
      if (t == "timestamp") t = "datetime";
      payload_schema[f.name] = {{"data_type", t}, {"points", n}};
    }
    // Green once no seal, index build or compaction is pending (the growing
    // segment is searched exactly and needs no index, as Qdrant's small ones).
    const bool busy = info.pending_tasks > 0;
    return json{{"status", busy ? "yellow" : "green"},
                {"optimizer_status", "ok"},
                {"vectors_count", info.points * s.vectors.size()},
                {"indexed_vectors_count", info.indexed_points},
                {"points_count", info.points},
                {"segments_count", info.segments},
                {"config",
                 {{"params",
                   {{"vectors", vectors},
                    {"shard_number", 1},
                    {"replication_factor", 1},
                    {"write_consistency_factor", 1},
                    {"on_disk_payload", false}}},
                  {"hnsw_config",
                   {{"m", idx0.hnsw_m},
                    {"ef_construct", idx0.hnsw_ef_construction},
                    {"full_scan_threshold", info.options.exact_max_rows},
                    {"max_indexing_threads", info.options.index_threads},
                    {"on_disk", false}}},
                  {"optimizer_config",
                   {{"deleted_threshold", info.options.compact_deleted_ratio},
                    {"vacuum_min_vector_number", 0},
                    {"default_segment_number", 0},
                    {"max_segment_size", info.options.merge_max_rows},
                    {"memmap_threshold", nullptr},
                    {"indexing_threshold", info.options.segment_rows},
                    {"flush_interval_sec", 0},
                    {"max_optimization_threads", 1}}},
                  {"wal_config", {{"wal_capacity_mb", 0}, {"wal_segments_ahead", 0}}},
                  {"quantization_config",
                   idx0.hnsw_sq8 ? json{{"scalar", {{"type", "int8"}}}} : json(nullptr)},
                  {"strata",
                   {{"vectors", strata_cfg},
                    {"segment_rows", info.options.segment_rows},
                    {"exact_selectivity", info.options.exact_selectivity},
                    {"exact_max_rows", info.options.exact_max_rows},
                    {"memory_bytes", info.memory_bytes},
                    {"disk_bytes", info.disk_bytes},
                    {"pending_tasks", info.pending_tasks}}}}},
                {"payload_schema", payload_schema}};
  }

  Res<json> CreateCollection(const std::string& name, const json& b) {
    vector::CollectionSchema schema;
    vector::CollectionOptions opts = mgr->defaults();
    const json* vectors = Field(b, "vectors");
    if (vectors == nullptr || !vectors->is_object()) {
      return BadRequest(
          "the body needs \"vectors\": {\"size\": N, \"distance\": \"Cosine\"} or named vectors");
    }
    // The extension may sit at the top level or inside the vector config: the
    // official JS client drops unknown top-level keys but passes `vectors` on
    // as it is. Collection-level keys are merged from all of them.
    json strata_all = json::object();
    auto merge = [&](const json* s) -> Status {
      if (s == nullptr) return Status::Ok();
      if (!s->is_object()) return Status::InvalidArgument("\"strata\" must be an object");
      for (auto it = s->begin(); it != s->end(); ++it) strata_all[it.key()] = it.value();
      return Status::Ok();
    };
    if (Status st = merge(Field(b, "strata")); !st.ok()) return FromStatus(st);
    if (vectors->contains("size")) {
      if (Status st = merge(Field(*vectors, "strata")); !st.ok()) return FromStatus(st);
    } else {
      for (auto it = vectors->begin(); it != vectors->end(); ++it) {
        if (Status st = merge(Field(it.value(), "strata")); !st.ok()) return FromStatus(st);
      }
    }
    const json* strata = Field(b, "strata");
    auto make_field = [&](const std::string& fname,
                          const json& v) -> Result<vector::VectorFieldSchema> {
      vector::VectorFieldSchema f;
      f.name = fname;
      f.index.type = vector::IndexType::kHnsw;
      f.index.hnsw_m = 16;
      f.index.hnsw_ef_construction = 100;  // Qdrant's defaults
      const json* size = Field(v, "size");
      if (size == nullptr || !size->is_number_unsigned() || size->get<uint64_t>() == 0 ||
          size->get<uint64_t>() > 65536) {
        return Status::InvalidArgument(fmt::format("vector{} size must be an integer in 1..65536",
                                                   fname.empty() ? "" : " \"" + fname + "\""));
      }
      f.index.dim = size->get<uint32_t>();
      STRATA_ASSIGN_OR_RETURN(f.index.metric, DistanceFromJson(Field(v, "distance")));
      STRATA_RETURN_IF_ERROR(ApplyHnswConfig(Field(b, "hnsw_config"), &f.index));
      STRATA_RETURN_IF_ERROR(ApplyHnswConfig(Field(v, "hnsw_config"), &f.index));
      ApplyQuantization(Field(b, "quantization_config"), &f.index);
      ApplyQuantization(Field(v, "quantization_config"), &f.index);
      if (strata) STRATA_RETURN_IF_ERROR(ApplyStrataIndex(*strata, &f.index));
      if (const json* vs = Field(v, "strata"))
        STRATA_RETURN_IF_ERROR(ApplyStrataIndex(*vs, &f.index));
      return f;
    };
    if (vectors->contains("size")) {
      auto f = make_field("", *vectors);
      if (!f) return FromStatus(f.error());
      schema.vectors.push_back(std::move(*f));
    } else {
      for (auto it = vectors->begin(); it != vectors->end(); ++it) {
        if (!it.value().is_object())
          return BadRequest(fmt::format("vector \"{}\" needs size and distance", it.key()));
        auto f = make_field(it.key(), it.value());
        if (!f) return FromStatus(f.error());
        schema.vectors.push_back(std::move(*f));
      }
      if (schema.vectors.empty()) return BadRequest("the collection needs at least one vector");
    }
    if (const json* sv = Field(b, "sparse_vectors"); sv != nullptr && !sv->empty()) {
      return BadRequest("sparse vectors are not supported");
    }
    for (auto it = strata_all.begin(); it != strata_all.end(); ++it) {
      static const char* kKeys[] = {"index",
                                    "params",
                                    "segment_rows",
                                    "exact_selectivity",
                                    "exact_max_rows",
                                    "compact_deleted_ratio",
                                    "merge_small_rows",
                                    "merge_max_rows",
                                    "payload_schema"};
      if (std::none_of(std::begin(kKeys), std::end(kKeys),
                       [&](const char* k) { return it.key() == k; })) {
        return BadRequest(
            fmt::format("unknown key \"{}\" in \"strata\" (index, params, segment_rows, "
                        "payload_schema, exact_selectivity, "
                        "exact_max_rows, compact_deleted_ratio, merge_small_rows, merge_max_rows)",
                        it.key()));
      }
    }
    if (!strata_all.empty()) {
      const json* strata = &strata_all;
      try {
        if (const json* x = Field(*strata, "segment_rows"))
          opts.segment_rows = std::max<size_t>(1, x->get<size_t>());
        if (const json* x = Field(*strata, "exact_selectivity"))
          opts.exact_selectivity = x->get<double>();
        if (const json* x = Field(*strata, "exact_max_rows"))
          opts.exact_max_rows = x->get<size_t>();
        if (const json* x = Field(*strata, "compact_deleted_ratio"))
          opts.compact_deleted_ratio = x->get<double>();
        if (const json* x = Field(*strata, "merge_small_rows"))
          opts.merge_small_rows = x->get<size_t>();
        if (const json* x = Field(*strata, "merge_max_rows"))
          opts.merge_max_rows = x->get<size_t>();
        if (const json* ps = Field(*strata, "payload_schema")) {
          if (!ps->is_object())
            return BadRequest("strata.payload_schema maps field names to types");
          for (auto it = ps->begin(); it != ps->end(); ++it) {
            if (!it.value().is_string())
              return BadRequest("strata.payload_schema types are strings, as \"keyword[]\"");
            std::string t = it.value().get<std::string>();
            vector::PayloadFieldSchema f;
            f.name = it.key();
            if (t.size() > 2 && t.substr(t.size() - 2) == "[]") {
              f.is_list = true;
              t.resize(t.size() - 2);
            }
            auto pt = vector::ParsePayloadType(t);
            if (!pt) return FromStatus(pt.error());
            f.type = *pt;
            schema.payload.push_back(std::move(f));
          }
        }
      } catch (const json::exception& e) {
        return BadRequest(std::string("strata: ") + e.what());
      }
    }
    if (const json* oc = Field(b, "optimizers_config")) {
      // Qdrant's indexing_threshold is in kilobytes of vectors; as rows:
      if (const json* t = Field(*oc, "indexing_threshold");
          t != nullptr && t->is_number_unsigned() && Field(strata_all, "segment_rows") == nullptr) {
        const size_t kb = t->get<size_t>();
        if (kb > 0)
          opts.segment_rows = std::max<size_t>(1000, kb * 1024 / (4 * schema.vectors[0].index.dim));
      }
    }
    auto c = mgr->Create(name, schema, opts);
    if (!c) {
      if (c.error().code() == StatusCode::kAlreadyExists) {
        return HttpError{409, fmt::format("Wrong input: Collection `{}` already exists!", name)};
      }
      return FromStatus(c.error());
    }
    kLog.Info("created collection {} ({} vector field(s), {} index, dim {})", name,
              schema.vectors.size(), vector::IndexTypeName(schema.vectors[0].index.type),
              schema.vectors[0].index.dim);
    return json(true);
  }

  // ----- points

  Res<std::vector<vector::Point>> PointsFromBody(const Collection& c, const json& b) {
    std::vector<vector::Point> pts;
    const bool single_unnamed =
        c.schema().vectors.size() == 1 && c.schema().vectors[0].name.empty();
    auto vectors_of = [&](const json& v, vector::Point* p) -> Status {
      if (v.is_array()) {
        vector::NamedVector nv;
        STRATA_ASSIGN_OR_RETURN(
            nv.values, FloatsFromJson(v, fmt::format("the vector of point {}", p->id.ToString())));
        p->vectors.push_back(std::move(nv));
        return Status::Ok();
      }
      if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (it.value().is_object())
            return Status::InvalidArgument("sparse vectors are not supported");
          vector::NamedVector nv;
          nv.name = it.key();
          if (single_unnamed && nv.name.empty()) nv.name = "";
          STRATA_ASSIGN_OR_RETURN(
              nv.values, FloatsFromJson(it.value(), fmt::format("vector \"{}\" of point {}",
                                                                it.key(), p->id.ToString())));
          p->vectors.push_back(std::move(nv));
        }
        return Status::Ok();
      }
      return Status::InvalidArgument(fmt::format(
          "point {}: vector must be an array or an object of named vectors", p->id.ToString()));
    };
    auto payload_of = [&](const json* v, vector::Point* p) -> Status {
      if (v == nullptr) return Status::Ok();
      if (!v->is_object()) {
        return Status::InvalidArgument(
            fmt::format("point {}: payload must be a JSON object", p->id.ToString()));
      }
      if (!v->empty()) p->payload = v->dump(-1, ' ', false, json::error_handler_t::replace);
      return Status::Ok();
    };
    if (const json* points = Field(b, "points")) {
      if (!points->is_array()) return BadRequest("\"points\" must be an array");
      pts.reserve(points->size());
      for (const auto& pj : *points) {
        if (!pj.is_object())
          return BadRequest("each point is an object with id, vector and payload");
        vector::Point p;
        const json* id = Field(pj, "id");
        if (id == nullptr) return BadRequest("a point has no id");
        auto pid = IdFromJson(*id);
        if (!pid) return FromStatus(pid.error());
        p.id = *pid;
        const json* v = Field(pj, "vector");
        if (v == nullptr) v = Field(pj, "vectors");
        if (v != nullptr) {
          Status st = vectors_of(*v, &p);
          if (!st.ok()) return FromStatus(st);
        }
        Status st = payload_of(Field(pj, "payload"), &p);
        if (!st.ok()) return FromStatus(st);
        pts.push_back(std::move(p));
      }
      return pts;
    }
    if (const json* batch = Field(b, "batch")) {
      const json* ids = Field(*batch, "ids");
      if (ids == nullptr || !ids->is_array()) return BadRequest("batch.ids must be an array");
      const json* vecs = Field(*batch, "vectors");
      const json* payloads = Field(*batch, "payloads");
      if (payloads != nullptr && (!payloads->is_array() || payloads->size() != ids->size())) {
        return BadRequest("batch.payloads must be an array as long as batch.ids");
      }
      if (vecs != nullptr && vecs->is_array() && vecs->size() != ids->size()) {
        return BadRequest("batch.vectors must be as long as batch.ids");
      }
      for (size_t i = 0; i < ids->size(); ++i) {
        vector::Point p;
        auto pid = IdFromJson((*ids)[i]);
        if (!pid) return FromStatus(pid.error());
        p.id = *pid;
        if (vecs != nullptr) {
          if (vecs->is_array()) {
            Status st = vectors_of((*vecs)[i], &p);
            if (!st.ok()) return FromStatus(st);
          } else if (vecs->is_object()) {
            for (auto it = vecs->begin(); it != vecs->end(); ++it) {
              if (!it.value().is_array() || it.value().size() != ids->size()) {
                return BadRequest(
                    fmt::format("batch.vectors[\"{}\"] must be as long as batch.ids", it.key()));
              }
              vector::NamedVector nv;
              nv.name = it.key();
              auto vals = FloatsFromJson(it.value()[i], "a batch vector");
              if (!vals) return FromStatus(vals.error());
              nv.values = std::move(*vals);
              p.vectors.push_back(std::move(nv));
            }
          }
        }
        if (payloads != nullptr) {
          Status st = payload_of(&(*payloads)[i], &p);
          if ((*payloads)[i].is_null()) st = Status::Ok();
          if (!st.ok()) return FromStatus(st);
        }
        pts.push_back(std::move(p));
      }
      return pts;
    }
    return BadRequest("the body needs \"points\": [...] or \"batch\": {...}");
  }

  json UpdateResult(uint64_t op, bool wait) const {
    return json{{"operation_id", op}, {"status", wait ? "completed" : "acknowledged"}};
  }

  Res<json> Upsert(Collection& c, const json& b, bool wait) {
    auto pts = PointsFromBody(c, b);
    if (auto* e = std::get_if<HttpError>(&pts)) return *e;
    vector::WriteOptions wo;
    wo.wait = wait;
    uint64_t op = 0;
    Status st = c.Upsert(std::get<0>(pts), wo, &op);
    if (!st.ok()) return FromStatus(st);
    return UpdateResult(op, wait);
  }

  Res<json> Delete(Collection& c, const json& b, bool wait) {
    vector::WriteOptions wo;
    wo.wait = wait;
    uint64_t op = 0;
    if (const json* points = Field(b, "points")) {
      if (!points->is_array()) return BadRequest("\"points\" must be an array of ids");
      std::vector<PointId> ids;
      for (const auto& v : *points) {
        auto id = IdFromJson(v);
        if (!id) return FromStatus(id.error());
        ids.push_back(*id);
      }
      Status st = c.Delete(ids, wo, nullptr, &op);
      if (!st.ok()) return FromStatus(st);
      return UpdateResult(op, wait);
    }
    if (const json* f = Field(b, "filter")) {
      auto filter = FilterFromJson(f);
      if (!filter) return FromStatus(filter.error());
      if (!filter->has_value()) return BadRequest("the delete filter is empty");
      Status st = c.DeleteByFilter(**filter, wo, nullptr, &op);
      if (!st.ok()) return FromStatus(st);
      return UpdateResult(op, wait);
    }
    return BadRequest("delete needs \"points\": [ids] or \"filter\"");
  }

  Res<json> Retrieve(Collection& c, const json& b) {
    const json* ids = Field(b, "ids");
    if (ids == nullptr || !ids->is_array()) return BadRequest("retrieve needs \"ids\": [...]");
    std::vector<PointId> list;
    for (const auto& v : *ids) {
      auto id = IdFromJson(v);
      if (!id) return FromStatus(id.error());
      list.push_back(*id);
    }
    auto ps = PayloadSelectorFromJson(Field(b, "with_payload"), true);
    if (!ps) return FromStatus(ps.error());
    const json* wv = Field(b, "with_vector");
    if (wv == nullptr) wv = Field(b, "with_vectors");
    auto vs = VectorSelectorFromJson(wv);
    if (!vs) return FromStatus(vs.error());
    auto recs = c.Get(list, ps->enabled, vs->enabled);
    if (!recs) return FromStatus(recs.error());
    json out = json::array();
    for (const auto& r : *recs) out.push_back(RecordJson(r, c, *ps, *vs));
    return out;
  }

  Res<json> GetPoint(Collection& c, const std::string& id_text) {
    auto id = PointId::Parse(id_text);
    if (!id) return FromStatus(id.error());
    std::vector<PointId> list = {*id};
    auto recs = c.Get(list, true, true);
    if (!recs) return FromStatus(recs.error());
    if (recs->empty())
      return HttpError{404, fmt::format("Not found: No point with id {} found", id_text)};
    PayloadSelector ps;
    ps.enabled = true;
    VectorSelector vs;
    vs.enabled = true;
    return RecordJson((*recs)[0], c, ps, vs);
  }

  Res<json> SearchBatchOf(Collection& c, const std::vector<const json*>& bodies, bool query_shape) {
    std::vector<vector::SearchRequest> reqs(bodies.size());
    std::vector<PayloadSelector> pss(bodies.size());
    std::vector<VectorSelector> vss(bodies.size());
    std::vector<char> scroll_like(bodies.size(), 0);
    for (size_t i = 0; i < bodies.size(); ++i) {
      bool no_vector = false;
      Status st = query_shape ? ParseQuery(c, *bodies[i], &reqs[i], &pss[i], &vss[i], &no_vector)
                              : ParseSearch(*bodies[i], &reqs[i], &pss[i], &vss[i]);
      if (!st.ok()) return FromStatus(st);
      scroll_like[i] = no_vector;
    }
    std::vector<vector::SearchRequest> real;
    std::vector<size_t> where;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!scroll_like[i]) {
        real.push_back(reqs[i]);
        where.push_back(i);
      }
    }
    std::vector<json> rows(reqs.size(), json::array());
    if (!real.empty()) {
      auto res = c.SearchBatch(real);
      if (!res) return FromStatus(res.error());
      for (size_t j = 0; j < real.size(); ++j) {
        const size_t i = where[j];
        for (const auto& p : (*res)[j]) rows[i].push_back(ScoredJson(p, c, pss[i], vss[i]));
      }
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!scroll_like[i]) continue;
      // A query without a vector lists points in id order (as Qdrant's).
      vector::ScrollRequest sr;
      sr.filter = reqs[i].filter;
      sr.limit = reqs[i].offset + reqs[i].limit;
      sr.with_payload = reqs[i].with_payload;
      sr.with_vectors = reqs[i].with_vectors;
      auto page = c.Scroll(sr);
      if (!page) return FromStatus(page.error());
      for (size_t k = reqs[i].offset; k < page->points.size(); ++k) {
        vector::ScoredPoint sp;
        sp.record = page->points[k];
        sp.score = 0;
        rows[i].push_back(ScoredJson(sp, c, pss[i], vss[i]));
      }
    }
    json out = json::array();
    for (auto& r : rows) out.push_back(query_shape ? json{{"points", std::move(r)}} : std::move(r));
    return out;
  }

  // /points/query: query is a vector, {nearest: vector|id}, or a point id.
  Status ParseQuery(Collection& c, const json& b, vector::SearchRequest* r, PayloadSelector* ps,
                    VectorSelector* vs, bool* scroll_like) {
    if (!b.is_object()) return Status::InvalidArgument("the query body must be a JSON object");
    if (const json* pf = Field(b, "prefetch"); pf != nullptr && !(pf->is_array() && pf->empty())) {
      return Status::InvalidArgument("prefetch (hybrid queries) is not supported");
    }
    if (const json* u = Field(b, "using")) {
      if (!u->is_string()) return Status::InvalidArgument("using must be a vector name");
      r->vector_name = u->get<std::string>();
    }
    STRATA_RETURN_IF_ERROR(ParseSearchCommon(b, r, ps, vs, /*payload_default=*/false));
    const json* q = Field(b, "query");
    if (q == nullptr) {
      *scroll_like = true;
      return Status::Ok();
    }
    if (q->is_object()) {
      if (const json* n = Field(*q, "nearest")) {
        q = n;
      } else {
        return Status::InvalidArgument(
            fmt::format("query kind {} is not supported (use a vector, a point id or nearest)",
                        q->begin() == q->end() ? "{}" : q->begin().key()));
      }
    }
    if (q->is_array()) {
      if (!q->empty() && q->front().is_array())
        return Status::InvalidArgument("multivector queries are not supported");
      STRATA_ASSIGN_OR_RETURN(r->vector, FloatsFromJson(*q, "query"));
      return Status::Ok();
    }
    if (q->is_object()) return Status::InvalidArgument("sparse query vectors are not supported");
    // A point id: search with that point's vector, excluding the point.
    STRATA_ASSIGN_OR_RETURN(PointId id, IdFromJson(*q));
    std::vector<PointId> ids = {id};
    STRATA_ASSIGN_OR_RETURN(auto recs, c.Get(ids, false, true));
    if (recs.empty())
      return Status::NotFound(fmt::format("No point with id {} found", id.ToString()));
    const auto& schema = c.schema();
    std::string want = r->vector_name;
    if (want.empty() && schema.vectors.size() == 1) want = schema.vectors[0].name;
    for (const auto& nv : recs[0].vectors) {
      if (nv.name == want) r->vector = nv.values;
    }
    if (r->vector.empty()) {
      return Status::InvalidArgument(
          fmt::format("point {} has no vector \"{}\"", id.ToString(), want));
    }
    r->exclude.push_back(id);
    return Status::Ok();
  }

  Res<json> Scroll(Collection& c, const json& b) {
    vector::ScrollRequest sr;
    auto f = FilterFromJson(Field(b, "filter"));
    if (!f) return FromStatus(f.error());
    sr.filter = *f;
    try {
      if (const json* l = Field(b, "limit")) sr.limit = l->get<size_t>();
    } catch (const json::exception&) {
      return BadRequest("limit must be an unsigned integer");
    }
    if (const json* o = Field(b, "offset")) {
      auto id = IdFromJson(*o);
      if (!id) return FromStatus(id.error());
      sr.offset = *id;
    }
    if (const json* ob = Field(b, "order_by")) {
      return BadRequest("order_by is not supported; scroll returns points in id order");
    }
    auto ps = PayloadSelectorFromJson(Field(b, "with_payload"), true);
    if (!ps) return FromStatus(ps.error());
    const json* wv = Field(b, "with_vector");
    if (wv == nullptr) wv = Field(b, "with_vectors");
    auto vs = VectorSelectorFromJson(wv);
    if (!vs) return FromStatus(vs.error());
    sr.with_payload = ps->enabled;
    sr.with_vectors = vs->enabled;
    auto page = c.Scroll(sr);
    if (!page) return FromStatus(page.error());
    json pts = json::array();
    for (const auto& r : page->points) pts.push_back(RecordJson(r, c, *ps, *vs));
    return json{
        {"points", pts},
        {"next_page_offset", page->next_offset ? IdToJson(*page->next_offset) : json(nullptr)}};
  }

  Res<json> Count(Collection& c, const json& b) {
    auto f = FilterFromJson(Field(b, "filter"));
    if (!f) return FromStatus(f.error());
    auto n = c.Count(*f);
    if (!n) return FromStatus(n.error());
    return json{{"count", *n}};
  }

  Res<json> CreateIndex(Collection& c, const json& b) {
    const json* name = Field(b, "field_name");
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
      return BadRequest("create index needs \"field_name\"");
    }
    const json* schema = Field(b, "field_schema");
    if (schema == nullptr) schema = Field(b, "field_type");
    std::string type;
    if (schema != nullptr && schema->is_string()) {
      type = schema->get<std::string>();
    } else if (schema != nullptr && schema->is_object() && schema->contains("type") &&
               (*schema)["type"].is_string()) {
      type = (*schema)["type"].get<std::string>();
    } else {
      return BadRequest(
          "create index needs \"field_schema\": \"keyword\" | \"integer\" | \"float\" | \"bool\" | "
          "\"datetime\"");
    }
    if (type == "geo") return BadRequest("geo payload indexes are not supported");
    auto pt = vector::ParsePayloadType(type);
    if (!pt) return FromStatus(pt.error());
    Status st = c.CreatePayloadIndex(name->get<std::string>(), *pt);
    if (!st.ok()) return FromStatus(st);
    return UpdateResult(c.Info().last_operation, true);
  }

  Res<json> Route(std::string_view method, const std::vector<std::string>& seg,
                  std::string_view query, std::string_view body, std::string* op) {
    auto body_json = [&](bool required) { return ParseBody(body, required); };
    if (seg.size() >= 2 && seg[0] == "collections") {
      const std::string& name = seg[1];
      if (seg.size() == 2) {
        if (method == "GET") {
          *op = "get_collection";
          auto c = Coll(name);
          if (auto* e = std::get_if<HttpError>(&c)) return *e;
          return CollectionInfoJson(*std::get<0>(c));
        }
        if (method == "PUT") {
          *op = "create_collection";
          auto b = body_json(true);
          if (auto* e = std::get_if<HttpError>(&b)) return *e;
          return CreateCollection(name, std::get<0>(b));
        }
        if (method == "PATCH") {
          *op = "update_collection";
          auto c = Coll(name);
          if (auto* e = std::get_if<HttpError>(&c)) return *e;
          return json(true);  // accepted; tuning knobs of Qdrant's optimizer have no equivalent
        }
        if (method == "DELETE") {
          *op = "delete_collection";
          Status st = mgr->Drop(name);
          if (st.code() == StatusCode::kNotFound) return json(false);
          if (!st.ok()) return FromStatus(st);
          return json(true);
        }
        return HttpError{405, "Method not allowed"};
      }
      if (seg.size() == 3 && seg[2] == "exists" && method == "GET") {
        *op = "collection_exists";
        return json{{"exists", mgr->Exists(name)}};
      }
      *op = "points";
      auto cr = Coll(name);
      if (auto* e = std::get_if<HttpError>(&cr)) return *e;
      Collection& c = *std::get<0>(cr);
      const std::string& s2 = seg[2];
      const bool wait = QueryBool(query, "wait", false);
      if (s2 == "index") {
        if (seg.size() == 3 && (method == "PUT" || method == "POST")) {
          *op = "create_index";
          auto b = body_json(true);
          if (auto* e = std::get_if<HttpError>(&b)) return *e;
          return CreateIndex(c, std::get<0>(b));
        }
        if (seg.size() == 4 && method == "DELETE") {
          *op = "delete_index";
          Status st = c.DropPayloadIndex(seg[3]);
          if (!st.ok()) return FromStatus(st);
          return UpdateResult(c.Info().last_operation, true);
        }
      }
      if (s2 == "snapshots" && seg.size() == 3) {
        if (method == "POST") {
          *op = "create_snapshot";
          auto snap = mgr->CreateSnapshot(name);
          if (!snap) return FromStatus(snap.error());
          return SnapshotJson(name, *snap);
        }
        if (method == "GET") {
          *op = "list_snapshots";
          auto list = mgr->ListSnapshots(name);
          if (!list) return FromStatus(list.error());
          json out = json::array();
          for (const auto& s : *list) out.push_back(SnapshotJson(name, s));
          return out;
        }
      }
      if (s2 == "points") {
        if (seg.size() == 3) {
          if (method == "PUT") {
            *op = "upsert";
            auto b = body_json(true);
            if (auto* e = std::get_if<HttpError>(&b)) return *e;
            return Upsert(c, std::get<0>(b), wait);
          }
          if (method == "POST") {
            *op = "retrieve";
            auto b = body_json(true);
            if (auto* e = std::get_if<HttpError>(&b)) return *e;
            return Retrieve(c, std::get<0>(b));
          }
          return HttpError{405, "Method not allowed"};
        }
        const std::string& s3 = seg[3];
        if (method == "GET" && seg.size() == 4) {
          *op = "get_point";
          return GetPoint(c, s3);
        }
        if (method != "POST") return HttpError{405, "Method not allowed"};
        auto b = body_json(s3 != "count" && s3 != "scroll");
        if (auto* e = std::get_if<HttpError>(&b)) return *e;
        const json& bj = std::get<0>(b);
        if (seg.size() == 4) {
          if (s3 == "delete") {
            *op = "delete";
            return Delete(c, bj, wait);
          }
          if (s3 == "search" || s3 == "query") {
            *op = s3;
            auto r = SearchBatchOf(c, {&bj}, s3 == "query");
            if (auto* e = std::get_if<HttpError>(&r)) return *e;
            return std::move(std::get<0>(r)[0]);
          }
          if (s3 == "scroll") {
            *op = "scroll";
            return Scroll(c, bj);
          }
          if (s3 == "count") {
            *op = "count";
            return Count(c, bj);
          }
        }
        if (seg.size() == 5 && (s3 == "search" || s3 == "query") && seg[4] == "batch") {
          *op = s3 + "_batch";
          const json* searches = Field(bj, "searches");
          if (searches == nullptr || !searches->is_array())
            return BadRequest("batch needs \"searches\": [...]");
          std::vector<const json*> bodies;
          for (const auto& s : *searches) bodies.push_back(&s);
          return SearchBatchOf(c, bodies, s3 == "query");
        }
      }
      return HttpError{404,
                       fmt::format("Not found: no route for {} /{}", method, fmt::join(seg, "/"))};
    }
    if (seg.size() == 1 && seg[0] == "collections" && method == "GET") {
      *op = "list_collections";
      json list = json::array();
      for (const auto& n : mgr->List()) list.push_back({{"name", n}});
      return json{{"collections", list}};
    }
    return HttpError{404,
                     fmt::format("Not found: no route for {} /{}", method, fmt::join(seg, "/"))};
  }

  json SnapshotJson(const std::string& coll, const std::string& snap) const {
    std::error_code ec;
    const std::string dir = mgr->root() + "/.snapshots/" + coll + "/" + snap;
    uint64_t size = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
      if (e.is_regular_file(ec)) size += e.file_size(ec);
    }
    auto t = std::filesystem::last_write_time(dir, ec);
    auto sys = std::chrono::time_point_cast<std::chrono::nanoseconds>(
        t - std::filesystem::file_time_type::clock::now() + std::chrono::system_clock::now());
    std::string when = FormatIso8601(sys.time_since_epoch().count());
    if (!when.empty() && when.back() == 'Z') when.pop_back();
    return json{{"name", snap}, {"creation_time", when}, {"size", size}};
  }
};

VectorRest::VectorRest(CollectionManager* manager, VectorRestOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->mgr = manager;
  impl_->opts = std::move(options);
}

VectorRest::~VectorRest() = default;

VectorRest::Reply VectorRest::Dispatch(std::string_view method, std::string_view path,
                                       std::string_view query, std::string_view body,
                                       std::string_view api_key) {
  Impl& im = *impl_;
  Impl::Ctx ctx;
  std::vector<std::string> seg;
  for (auto part : Split(path, '/')) {
    if (part.empty()) continue;
    auto dec = UriDecode(part);
    if (!dec) return im.Error(ctx, BadRequest("the path is not validly percent-encoded"));
    seg.push_back(*dec);
  }
  std::string op = "other";
  Reply reply;
  if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "livez" || seg[0] == "readyz") &&
      method == "GET") {
    reply = Reply{200, "healthz check passed", "text/plain"};
    op = "health";
  } else if (!im.opts.api_key.empty() && api_key != im.opts.api_key) {
    reply = im.Error(
        ctx,
        HttpError{401, api_key.empty() ? "Must provide an API key or an Authorization bearer token"
                                       : "Invalid API key or JWT"});
    op = "unauthorized";
  } else if (seg.empty() && method == "GET") {
    json j{{"title", "strata vector (qdrant-compatible API)"},
           {"version", kQdrantVersion},
           {"commit", "strata-0.1.0"}};
    reply = Reply{200, j.dump()};
    op = "root";
  } else if (seg.size() == 1 && seg[0] == "metrics" && method == "GET") {
    reply = Reply{200, metrics::Registry::Global().ExportPrometheus(), "text/plain; version=0.0.4"};
    op = "metrics";
  } else {
    Res<json> r = HttpError{500, "unreachable"};
    try {
      r = im.Route(method, seg, query, body, &op);
    } catch (const std::exception& e) {
      // nlohmann's get<>() on a wrong type throws; anything else is a bug.
      kLog.Warn("{} {}: {}", method, path, e.what());
      r = BadRequest(std::string("bad request body: ") + e.what());
    }
    if (auto* e = std::get_if<HttpError>(&r)) {
      reply = im.Error(ctx, *e);
    } else {
      reply = im.Ok(ctx, std::move(std::get<0>(r)));
    }
  }
  metrics::Registry::Global()
      .GetCounter("strata_vector_http_requests_total",
                  "Vector REST requests by operation and HTTP status",
                  fmt::format("op=\"{}\",code=\"{}\"", op, reply.status))
      .Inc();
  LatencyFor(op).Observe(ctx.Elapsed());
  return reply;
}

void VectorRest::Handle(http::Request& req, http::ResponseWriter& w) {
  std::string_view key;
  if (auto k = req.Header("api-key")) {
    key = *k;
  } else if (auto a = req.Header("authorization")) {
    std::string_view v = *a;
    if (v.size() > 7 && IEquals(v.substr(0, 7), "bearer ")) key = Trim(v.substr(7));
  }
  std::string body;
  if (req.content_length.value_or(0) > 0 || req.chunked) {
    auto b = req.ReadAllBody(impl_->opts.max_body_bytes);
    if (!b) {
      Impl::Ctx ctx;
      Reply r =
          b.error().code() == StatusCode::kResourceExhausted
              ? impl_->Error(
                    ctx,
                    HttpError{413,
                              fmt::format("Payload error: the request body is larger than {} bytes",
                                          impl_->opts.max_body_bytes)})
              : impl_->Error(
                    ctx, HttpError{400, "cannot read the request body: " + b.error().message()});
      w.SetStatus(r.status);
      w.AddHeader("Content-Type", r.content_type);
      w.CloseAfter();
      (void)w.Send(r.body);
      return;
    }
    body = std::move(*b);
  }
  Reply r = Dispatch(req.method, req.path, req.query, body, key);
  w.SetStatus(r.status);
  w.AddHeader("Content-Type", r.content_type);
  (void)w.Send(r.body);
}

void VectorRest::HandleTransportError(int status, std::string_view message,
                                      http::ResponseWriter& w) {
  Impl::Ctx ctx;
  Reply r = impl_->Error(ctx, HttpError{status, std::string(message)});
  w.SetStatus(r.status);
  w.AddHeader("Content-Type", r.content_type);
  (void)w.Send(r.body);
}

}  // namespace strata::server
