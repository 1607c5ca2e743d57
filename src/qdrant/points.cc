// Points: upsert (a list of points or a column batch), delete (by ids or by
// filter), retrieve, get one, scroll and count.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::PointId;

namespace {

// A point's "vector": an array, or an object of named vectors.
Status VectorsOf(const json& v, bool single_unnamed, vector::Point* p) {
  if (v.is_array()) {
    vector::NamedVector nv;
    STRATA_ASSIGN_OR_RETURN(
        nv.values, FloatsFromJson(v, fmt::format("the vector of point {}", p->id.ToString())));
    p->vectors.push_back(std::move(nv));
    return Status::Ok();
  }
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.value().is_object()) {
        vector::NamedSparseVector sv;
        sv.name = it.key();
        STRATA_ASSIGN_OR_RETURN(
            sv.vector, SparseFromJson(it.value(), fmt::format("sparse vector \"{}\" of point {}",
                                                              it.key(), p->id.ToString())));
        p->sparse.push_back(std::move(sv));
        continue;
      }
      vector::NamedVector nv;
      nv.name = it.key();
      if (single_unnamed && nv.name.empty()) nv.name = "";
      STRATA_ASSIGN_OR_RETURN(
          nv.values, FloatsFromJson(it.value(), fmt::format("vector \"{}\" of point {}", it.key(),
                                                            p->id.ToString())));
      p->vectors.push_back(std::move(nv));
    }
    return Status::Ok();
  }
  return Status::InvalidArgument(fmt::format(
      "point {}: vector must be an array or an object of named vectors", p->id.ToString()));
}

Status PayloadOf(const json* v, vector::Point* p) {
  if (v == nullptr) return Status::Ok();
  if (!v->is_object()) {
    return Status::InvalidArgument(
        fmt::format("point {}: payload must be a JSON object", p->id.ToString()));
  }
  if (!v->empty()) p->payload = v->dump(-1, ' ', false, json::error_handler_t::replace);
  return Status::Ok();
}

// "points": [{"id", "vector", "payload"}, ...]
Result<std::vector<vector::Point>> PointsFromList(const json* points, bool single_unnamed) {
  std::vector<vector::Point> pts;
  if (!points->is_array()) return Status::InvalidArgument("\"points\" must be an array");
  pts.reserve(points->size());
  for (const auto& pj : *points) {
    if (!pj.is_object())
      return Status::InvalidArgument("each point is an object with id, vector and payload");
    vector::Point p;
    const json* id = Field(pj, "id");
    if (id == nullptr) return Status::InvalidArgument("a point has no id");
    auto pid = IdFromJson(*id);
    if (!pid) return pid.error();
    p.id = *pid;
    const json* v = Field(pj, "vector");
    if (v == nullptr) v = Field(pj, "vectors");
    if (v != nullptr) {
      Status st = VectorsOf(*v, single_unnamed, &p);
      if (!st.ok()) return st;
    }
    Status st = PayloadOf(Field(pj, "payload"), &p);
    if (!st.ok()) return st;
    pts.push_back(std::move(p));
  }
  return pts;
}

// "batch": {"ids": [...], "vectors": [...] | {name: [...]}, "payloads": [...]}
Result<std::vector<vector::Point>> PointsFromBatch(const json* batch, bool single_unnamed) {
  std::vector<vector::Point> pts;
  const json* ids = Field(*batch, "ids");
  if (ids == nullptr || !ids->is_array())
    return Status::InvalidArgument("batch.ids must be an array");
  const json* vecs = Field(*batch, "vectors");
  const json* payloads = Field(*batch, "payloads");
  if (payloads != nullptr && (!payloads->is_array() || payloads->size() != ids->size())) {
    return Status::InvalidArgument("batch.payloads must be an array as long as batch.ids");
  }
  if (vecs != nullptr && vecs->is_array() && vecs->size() != ids->size()) {
    return Status::InvalidArgument("batch.vectors must be as long as batch.ids");
  }
  for (size_t i = 0; i < ids->size(); ++i) {
    vector::Point p;
    auto pid = IdFromJson((*ids)[i]);
    if (!pid) return pid.error();
    p.id = *pid;
    if (vecs != nullptr) {
      if (vecs->is_array()) {
        Status st = VectorsOf((*vecs)[i], single_unnamed, &p);
        if (!st.ok()) return st;
      } else if (vecs->is_object()) {
        for (auto it = vecs->begin(); it != vecs->end(); ++it) {
          if (!it.value().is_array() || it.value().size() != ids->size()) {
            return Status::InvalidArgument(
                fmt::format("batch.vectors[\"{}\"] must be as long as batch.ids", it.key()));
          }
          if (it.value()[i].is_object()) {
            vector::NamedSparseVector sv;
            sv.name = it.key();
            STRATA_ASSIGN_OR_RETURN(sv.vector,
                                    SparseFromJson(it.value()[i], "a batch sparse vector"));
            p.sparse.push_back(std::move(sv));
            continue;
          }
          vector::NamedVector nv;
          nv.name = it.key();
          auto vals = FloatsFromJson(it.value()[i], "a batch vector");
          if (!vals) return vals.error();
          nv.values = std::move(*vals);
          p.vectors.push_back(std::move(nv));
        }
      }
    }
    if (payloads != nullptr) {
      Status st = PayloadOf(&(*payloads)[i], &p);
      if ((*payloads)[i].is_null()) st = Status::Ok();
      if (!st.ok()) return st;
    }
    pts.push_back(std::move(p));
  }
  return pts;
}

Result<std::vector<vector::Point>> PointsFromBody(const Collection& c, const json& b) {
  const bool single_unnamed = c.schema().vectors.size() == 1 && c.schema().vectors[0].name.empty();
  if (const json* points = Field(b, "points")) return PointsFromList(points, single_unnamed);
  if (const json* batch = Field(b, "batch")) return PointsFromBatch(batch, single_unnamed);
  return Status::InvalidArgument("the body needs \"points\": [...] or \"batch\": {...}");
}

}  // namespace

json UpdateResult(uint64_t op, bool wait) {
  return json{{"operation_id", op}, {"status", wait ? "completed" : "acknowledged"}};
}

Result<json> Upsert(Collection& c, const json& b, bool wait) {
  auto pts = PointsFromBody(c, b);
  if (!pts) return pts.error();
  vector::WriteOptions wo;
  wo.wait = wait;
  uint64_t op = 0;
  Status st = c.Upsert(*pts, wo, &op);
  if (!st.ok()) return st;
  return UpdateResult(op, wait);
}

// {"points": [{"id", "vector"}]}: one atomic UpdatePoints; a missing id is
// 404 and nothing changes.
Result<json> UpdateVectors(Collection& c, const json& b, bool wait) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (it.key() != "points")
      return Status::InvalidArgument(
          fmt::format("update_vectors: field \"{}\" is not supported", it.key()));
  }
  const json* points = Field(b, "points");
  if (points == nullptr || !points->is_array() || points->empty())
    return Status::InvalidArgument("update_vectors needs \"points\": [{\"id\", \"vector\"}, ...]");
  const bool single_unnamed = c.schema().vectors.size() == 1 && c.schema().vectors[0].name.empty();
  vector::PointUpdate u;
  u.kind = vector::PointUpdate::Kind::kUpdateVectors;
  std::vector<PointId> ids;
  for (const auto& pj : *points) {
    const json* id = pj.is_object() ? Field(pj, "id") : nullptr;
    const json* v = pj.is_object() ? Field(pj, "vector") : nullptr;
    if (id == nullptr || v == nullptr)
      return Status::InvalidArgument("update_vectors: each point needs \"id\" and \"vector\"");
    vector::Point p;
    STRATA_ASSIGN_OR_RETURN(p.id, IdFromJson(*id));
    STRATA_RETURN_IF_ERROR(VectorsOf(*v, single_unnamed, &p));
    ids.push_back(p.id);
    u.vectors[p.id] = std::move(p.vectors);  // an id given twice: the last wins
    u.sparse[p.id] = std::move(p.sparse);
  }
  vector::WriteOptions wo;
  wo.wait = wait;
  uint64_t op = 0;
  STRATA_RETURN_IF_ERROR(c.UpdatePoints(ids, u, wo, nullptr, &op));
  return UpdateResult(op, wait);
}

Result<json> Delete(Collection& c, const json& b, bool wait) {
  vector::WriteOptions wo;
  wo.wait = wait;
  uint64_t op = 0;
  if (const json* points = Field(b, "points")) {
    if (!points->is_array()) return Status::InvalidArgument("\"points\" must be an array of ids");
    std::vector<PointId> ids;
    for (const auto& v : *points) {
      auto id = IdFromJson(v);
      if (!id) return id.error();
      ids.push_back(*id);
    }
    Status st = c.Delete(ids, wo, nullptr, &op);
    if (!st.ok()) return st;
    return UpdateResult(op, wait);
  }
  if (const json* f = Field(b, "filter")) {
    auto filter = FilterFromJson(f);
    if (!filter) return filter.error();
    if (!filter->has_value()) return Status::InvalidArgument("the delete filter is empty");
    Status st = c.DeleteByFilter(**filter, wo, nullptr, &op);
    if (!st.ok()) return st;
    return UpdateResult(op, wait);
  }
  return Status::InvalidArgument("delete needs \"points\": [ids] or \"filter\"");
}

Result<json> Retrieve(Collection& c, const json& b) {
  const json* ids = Field(b, "ids");
  if (ids == nullptr || !ids->is_array())
    return Status::InvalidArgument("retrieve needs \"ids\": [...]");
  std::vector<PointId> list;
  for (const auto& v : *ids) {
    auto id = IdFromJson(v);
    if (!id) return id.error();
    list.push_back(*id);
  }
  PayloadSelector ps;
  VectorSelector vs;
  STRATA_RETURN_IF_ERROR(SelectorsFromBody(b, /*payload_default=*/true, &ps, &vs));
  auto recs = c.Get(list, ps.enabled, vs.enabled);
  if (!recs) return recs.error();
  json out = json::array();
  for (const auto& r : *recs) out.push_back(RecordJson(r, c, ps, vs));
  return out;
}

Result<json> GetPoint(Collection& c, const std::string& id_text) {
  auto id = PointId::Parse(id_text);
  if (!id) return id.error();
  std::vector<PointId> list = {*id};
  auto recs = c.Get(list, true, true);
  if (!recs) return recs.error();
  if (recs->empty()) return Status::NotFound(fmt::format("No point with id {} found", id_text));
  PayloadSelector ps;
  ps.enabled = true;
  VectorSelector vs;
  vs.enabled = true;
  return RecordJson((*recs)[0], c, ps, vs);
}

Result<json> Scroll(Collection& c, const json& b) {
  vector::ScrollRequest sr;
  auto f = FilterFromJson(Field(b, "filter"));
  if (!f) return f.error();
  sr.filter = *f;
  try {
    if (const json* l = Field(b, "limit")) sr.limit = l->get<size_t>();
  } catch (const json::exception&) {
    return Status::InvalidArgument("limit must be an unsigned integer");
  }
  if (const json* o = Field(b, "offset")) {
    auto id = IdFromJson(*o);
    if (!id) return id.error();
    sr.offset = *id;
  }
  PayloadSelector ps;
  VectorSelector vs;
  STRATA_RETURN_IF_ERROR(SelectorsFromBody(b, /*payload_default=*/true, &ps, &vs));
  if (Field(b, "order_by") != nullptr) return ScrollOrdered(c, b, sr.filter, sr.limit, ps, vs);
  sr.with_payload = ps.enabled;
  sr.with_vectors = vs.enabled;
  auto page = c.Scroll(sr);
  if (!page) return page.error();
  json pts = json::array();
  for (const auto& r : page->points) pts.push_back(RecordJson(r, c, ps, vs));
  return json{
      {"points", pts},
      {"next_page_offset", page->next_offset ? IdToJson(*page->next_offset) : json(nullptr)}};
}

Result<json> Count(Collection& c, const json& b) {
  auto f = FilterFromJson(Field(b, "filter"));
  if (!f) return f.error();
  auto n = c.Count(*f);
  if (!n) return n.error();
  return json{{"count", *n}};
}

}  // namespace strata::qdrant
