// JSON <-> the collection types: point ids, filters, vectors, the with_payload
// and with_vector selectors, and the JSON of a record or a scored point, as
// Qdrant's REST API spells them.
#include "qdrant/json_convert.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <strata/core/strings.h>

namespace strata::qdrant {

using vector::Collection;
using vector::Filter;
using vector::PointId;

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
Result<vector::SparseVector> SparseFromJson(const json& v, std::string_view what) {
  if (!v.is_object())
    return Status::InvalidArgument(fmt::format("{} must be {{\"indices\", \"values\"}}", what));
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() != "indices" && it.key() != "values") {
      return Status::InvalidArgument(
          fmt::format("{}: unknown field \"{}\" (a sparse vector has \"indices\" and \"values\")",
                      what, it.key()));
    }
  }
  const json* idx = Field(v, "indices");
  const json* val = Field(v, "values");
  if (idx == nullptr || val == nullptr || !idx->is_array())
    return Status::InvalidArgument(
        fmt::format("{} needs \"indices\" (an array of unsigned integers) and \"values\"", what));
  vector::SparseVector out;
  STRATA_ASSIGN_OR_RETURN(out.values, FloatsFromJson(*val, fmt::format("{}: values", what)));
  for (const auto& x : *idx) {
    if (!x.is_number_unsigned() || x.get<uint64_t>() > 0xffffffffull) {
      return Status::InvalidArgument(fmt::format(
          "{}: indices must be unsigned 32-bit integers, got {}", what, x.dump().substr(0, 40)));
    }
    out.indices.push_back(uint32_t(x.get<uint64_t>()));
  }
  if (out.indices.size() != out.values.size()) {
    return Status::InvalidArgument(
        fmt::format("{}: indices and values must have the same length (got {} and {})", what,
                    out.indices.size(), out.values.size()));
  }
  return out;
}

json SparseToJson(const vector::SparseVector& v) {
  return json{{"indices", v.indices}, {"values", v.values}};
}

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

namespace {

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

}  // namespace

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
  if (schema.vectors.size() == 1 && schema.vectors[0].name.empty() && schema.sparse.empty()) {
    return r.vectors.empty() ? json() : json(r.vectors[0].values);
  }
  auto wanted = [&](const std::string& name) {
    return sel.names.empty() ||
           std::find(sel.names.begin(), sel.names.end(), name) != sel.names.end();
  };
  json out = json::object();
  for (const auto& nv : r.vectors) {
    if (wanted(nv.name)) out[nv.name] = nv.values;
  }
  for (const auto& sv : r.sparse) {
    if (wanted(sv.name)) out[sv.name] = SparseToJson(sv.vector);
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

Status SelectorsFromBody(const json& b, bool payload_default, PayloadSelector* ps,
                         VectorSelector* vs) {
  STRATA_ASSIGN_OR_RETURN(*ps, PayloadSelectorFromJson(Field(b, "with_payload"), payload_default));
  const json* wv = Field(b, "with_vector");
  if (wv == nullptr) wv = Field(b, "with_vectors");
  STRATA_ASSIGN_OR_RETURN(*vs, VectorSelectorFromJson(wv));
  return Status::Ok();
}

}  // namespace strata::qdrant
