// Payload and vector edits (set, overwrite, delete keys, clear; delete named
// vectors) on points chosen by ids or by a filter, and the batch of point
// operations. The edits are Collection::UpdatePoints; by ids, a missing point
// is 404 as in Qdrant, and nothing is changed.
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::PointId;
using vector::PointUpdate;
using Kind = PointUpdate::Kind;

namespace {

// Members other than `allowed` are refused, not ignored.
Status OnlyFields(const json& b, std::string_view op, std::initializer_list<const char*> allowed) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok |= it.key() == a;
    if (it.key() == "shard_key") {
      return Status::InvalidArgument(
          fmt::format("{}: shard_key is not supported (collections have one shard)", op));
    }
    if (!ok) return Status::InvalidArgument(fmt::format("{}: unknown field \"{}\"", op, it.key()));
  }
  return Status::Ok();
}

// Applies `u` to the points of the body's "points": [ids] or "filter".
Result<json> ApplyToSelection(Collection& c, const json& b, std::string_view op,
                              const PointUpdate& u, bool wait) {
  const json* points = Field(b, "points");
  const json* filter = Field(b, "filter");
  if (points != nullptr && filter != nullptr)
    return Status::InvalidArgument(fmt::format("{}: give \"points\" or \"filter\", not both", op));
  vector::WriteOptions wo;
  wo.wait = wait;
  uint64_t opid = 0;
  if (points != nullptr) {
    if (!points->is_array())
      return Status::InvalidArgument(fmt::format("{}: \"points\" must be an array of ids", op));
    std::vector<PointId> ids;
    for (const auto& v : *points) {
      STRATA_ASSIGN_OR_RETURN(PointId id, IdFromJson(v));
      ids.push_back(id);
    }
    STRATA_RETURN_IF_ERROR(c.UpdatePoints(ids, u, wo, nullptr, &opid));
    return UpdateResult(opid, wait);
  }
  if (filter != nullptr) {
    STRATA_ASSIGN_OR_RETURN(auto f, FilterFromJson(filter));
    // An empty filter object matches every point, as in Qdrant.
    STRATA_RETURN_IF_ERROR(
        c.UpdatePointsByFilter(f ? *f : vector::Filter{}, u, wo, nullptr, &opid));
    return UpdateResult(opid, wait);
  }
  return Status::InvalidArgument(fmt::format("{} needs \"points\": [ids] or \"filter\"", op));
}

Result<std::vector<std::string>> Strings(const json* v, std::string_view what) {
  if (v == nullptr || !v->is_array())
    return Status::InvalidArgument(fmt::format("{} must be an array of strings", what));
  std::vector<std::string> out;
  for (const auto& s : *v) {
    if (!s.is_string())
      return Status::InvalidArgument(fmt::format("{} must be an array of strings", what));
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

Result<json> SetPayload(Collection& c, const json& b, bool overwrite, bool wait) {
  const std::string_view op = overwrite ? "overwrite_payload" : "set_payload";
  STRATA_RETURN_IF_ERROR(OnlyFields(b, op, {"payload", "points", "filter", "key"}));
  const json* payload = Field(b, "payload");
  if (payload == nullptr || !payload->is_object())
    return Status::InvalidArgument(fmt::format("{} needs \"payload\": {{...}}", op));
  PointUpdate u;
  u.kind = overwrite ? Kind::kOverwritePayload : Kind::kSetPayload;
  u.payload = payload->dump(-1, ' ', false, json::error_handler_t::replace);
  if (const json* key = Field(b, "key")) {
    if (overwrite) {
      return Status::InvalidArgument(
          "overwrite_payload: \"key\" is not supported; use set_payload (POST) to write under "
          "a key");
    }
    if (!key->is_string()) return Status::InvalidArgument("set_payload: \"key\" must be a string");
    u.key = key->get<std::string>();
  }
  return ApplyToSelection(c, b, op, u, wait);
}

Result<json> DeletePayload(Collection& c, const json& b, bool wait) {
  STRATA_RETURN_IF_ERROR(OnlyFields(b, "delete_payload", {"keys", "points", "filter"}));
  PointUpdate u;
  u.kind = Kind::kDeletePayloadKeys;
  STRATA_ASSIGN_OR_RETURN(u.keys, Strings(Field(b, "keys"), "delete_payload: \"keys\""));
  return ApplyToSelection(c, b, "delete_payload", u, wait);
}

Result<json> ClearPayload(Collection& c, const json& b, bool wait) {
  STRATA_RETURN_IF_ERROR(OnlyFields(b, "clear_payload", {"points", "filter"}));
  PointUpdate u;
  u.kind = Kind::kClearPayload;
  return ApplyToSelection(c, b, "clear_payload", u, wait);
}

Result<json> DeleteVectors(Collection& c, const json& b, bool wait) {
  STRATA_RETURN_IF_ERROR(OnlyFields(b, "delete_vectors", {"points", "filter", "vector"}));
  PointUpdate u;
  u.kind = Kind::kDeleteVectors;
  STRATA_ASSIGN_OR_RETURN(u.keys, Strings(Field(b, "vector"), "delete_vectors: \"vector\""));
  return ApplyToSelection(c, b, "delete_vectors", u, wait);
}

// {"operations": [{"upsert": {...}}, {"delete": {...}}, ...]}: applied in
// order; the first failing operation ends the batch (those before it stay
// applied, as in Qdrant). The shape of every operation is checked first, so a
// malformed batch changes nothing.
Result<json> Batch(Collection& c, const json& b, bool wait) {
  STRATA_RETURN_IF_ERROR(OnlyFields(b, "batch", {"operations"}));
  const json* ops = Field(b, "operations");
  if (ops == nullptr || !ops->is_array())
    return Status::InvalidArgument("batch needs \"operations\": [...]");
  static const std::set<std::string> kKinds = {
      "upsert",         "delete",        "set_payload",    "overwrite_payload",
      "delete_payload", "clear_payload", "delete_vectors", "update_vectors"};
  for (size_t i = 0; i < ops->size(); ++i) {
    const json& o = (*ops)[i];
    if (!o.is_object() || o.size() != 1 || !o.begin().value().is_object()) {
      return Status::InvalidArgument(fmt::format(
          "batch operation {}: expected one operation, e.g. {{\"upsert\": {{...}}}}", i));
    }
    const std::string& kind = o.begin().key();
    if (!kKinds.count(kind))
      return Status::InvalidArgument(
          fmt::format("batch operation {}: unknown operation \"{}\"", i, kind));
  }
  json results = json::array();
  for (size_t i = 0; i < ops->size(); ++i) {
    const std::string& kind = (*ops)[i].begin().key();
    const json& body = (*ops)[i].begin().value();
    Result<json> r = Status::Internal("unreachable");
    if (kind == "upsert") {
      r = Upsert(c, body, wait);
    } else if (kind == "delete") {
      r = Delete(c, body, wait);
    } else if (kind == "set_payload" || kind == "overwrite_payload") {
      r = SetPayload(c, body, kind == "overwrite_payload", wait);
    } else if (kind == "delete_payload") {
      r = DeletePayload(c, body, wait);
    } else if (kind == "clear_payload") {
      r = ClearPayload(c, body, wait);
    } else if (kind == "update_vectors") {
      r = UpdateVectors(c, body, wait);
    } else {
      r = DeleteVectors(c, body, wait);
    }
    if (!r) return r.error().WithContext(fmt::format("batch operation {} ({})", i, kind));
    results.push_back(std::move(*r));
  }
  return results;
}

}  // namespace strata::qdrant
