// Collection::UpdatePoints: payload changes (set, overwrite, delete keys,
// clear) and vector removal on points that exist. Each is a read-modify-write
// under the collection's write lock, logged as an ordinary upsert record, so
// replay, payload indexes, sealing and snapshots need nothing new; the price
// is that the edited points' vectors are logged again.
#include <algorithm>
#include <set>
#include <shared_mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/log.h>
#include <strata/vector/collection.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::PreparedPoint;
using internal::Segment;

namespace {

constexpr log::Logger kLog("vector");

// "a.b.c" -> {"a", "b", "c"}. Array paths are refused rather than read as
// object keys containing brackets.
Result<std::vector<std::string>> KeyPath(const std::string& path) {
  if (path.find_first_of("[]") != std::string::npos) {
    return Status::InvalidArgument(fmt::format(
        "payload key \"{}\": array paths ([] or [n]) are not supported; use object keys", path));
  }
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (part.empty())
      return Status::InvalidArgument(fmt::format("payload key \"{}\" has an empty part", path));
    parts.push_back(std::move(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

void ErasePath(json* obj, const std::vector<std::string>& path, size_t i = 0) {
  if (!obj->is_object()) return;
  if (i + 1 == path.size()) {
    obj->erase(path[i]);
    return;
  }
  auto it = obj->find(path[i]);
  if (it != obj->end()) ErasePath(&*it, path, i + 1);
}

// The parsed form of a PointUpdate, checked before the lock is taken.
struct Edit {
  const PointUpdate* u = nullptr;
  json value;                                  // kSetPayload / kOverwritePayload
  std::vector<std::string> key;                // kSetPayload's nested path
  std::vector<std::vector<std::string>> keys;  // kDeletePayloadKeys
  std::set<std::string> vector_names;          // kDeleteVectors
};

Result<Edit> ParseEdit(const PointUpdate& u, const CollectionSchema& schema) {
  Edit e;
  e.u = &u;
  using K = PointUpdate::Kind;
  if (u.kind == K::kSetPayload || u.kind == K::kOverwritePayload) {
    e.value = json::parse(u.payload.empty() ? "{}" : u.payload, nullptr, false);
    if (!e.value.is_object())
      return Status::InvalidArgument("the new payload must be a JSON object");
  }
  if (u.kind == K::kSetPayload && !u.key.empty()) {
    STRATA_ASSIGN_OR_RETURN(e.key, KeyPath(u.key));
  } else if (!u.key.empty()) {
    return Status::InvalidArgument("a key path applies to setting a payload only");
  }
  if (u.kind == K::kDeletePayloadKeys) {
    for (const auto& k : u.keys) {
      STRATA_ASSIGN_OR_RETURN(auto p, KeyPath(k));
      e.keys.push_back(std::move(p));
    }
  }
  if (u.kind == K::kDeleteVectors) {
    if (schema.vectors.size() == 1 && schema.sparse.empty()) {
      return Status::InvalidArgument(
          "the collection has a single vector, which a point cannot lose; delete the point "
          "instead");
    }
    for (const auto& name : u.keys) {
      bool known = false;
      for (const auto& f : schema.vectors) known |= f.name == name;
      for (const auto& f : schema.sparse) known |= f.name == name;
      if (!known)
        return Status::InvalidArgument(
            fmt::format("the collection has no vector named \"{}\"", name));
      e.vector_names.insert(name);
    }
  }
  if (u.kind == K::kUpdateVectors) {
    if (u.vectors.empty() && u.sparse.empty())
      return Status::InvalidArgument("update_vectors needs at least one point");
    for (const auto& [id, vecs] : u.sparse) {
      for (const auto& v : vecs) {
        bool known = false;
        for (const auto& f : schema.sparse) known |= f.name == v.name;
        if (!known)
          return Status::InvalidArgument(fmt::format(
              "point {}: the collection has no sparse vector named \"{}\"", id.ToString(), v.name));
      }
    }
    for (const auto& [id, vecs] : u.vectors) {
      auto sit = u.sparse.find(id);
      if (vecs.empty() && (sit == u.sparse.end() || sit->second.empty()))
        return Status::InvalidArgument(
            fmt::format("point {}: update_vectors needs at least one vector", id.ToString()));
      for (const auto& v : vecs) {
        bool known = false;
        for (const auto& f : schema.vectors) known |= f.name == v.name;
        if (!known)
          return Status::InvalidArgument(fmt::format(
              "point {}: the collection has no vector named \"{}\"", id.ToString(), v.name));
      }
    }
  } else if (!u.vectors.empty() || !u.sparse.empty()) {
    return Status::InvalidArgument("new vectors apply to update_vectors only");
  }
  return e;
}

// Applies the edit to one record's payload and vectors.
void ApplyEdit(const Edit& e, Record* r) {
  using K = PointUpdate::Kind;
  switch (e.u->kind) {
    case K::kSetPayload: {
      json pj = json::parse(r->payload, nullptr, false);
      if (!pj.is_object()) pj = json::object();
      json* at = &pj;
      for (const auto& k : e.key) {
        json& next = (*at)[k];
        if (!next.is_object()) next = json::object();
        at = &next;
      }
      at->update(e.value);  // top-level merge: Qdrant's set_payload
      r->payload = pj.dump(-1, ' ', false, json::error_handler_t::replace);
      break;
    }
    case K::kOverwritePayload:
      r->payload = e.value.dump(-1, ' ', false, json::error_handler_t::replace);
      break;
    case K::kDeletePayloadKeys: {
      json pj = json::parse(r->payload, nullptr, false);
      if (!pj.is_object()) pj = json::object();
      for (const auto& p : e.keys) ErasePath(&pj, p);
      r->payload = pj.dump(-1, ' ', false, json::error_handler_t::replace);
      break;
    }
    case K::kClearPayload:
      r->payload.clear();
      break;
    case K::kDeleteVectors:
      std::erase_if(r->vectors,
                    [&](const NamedVector& v) { return e.vector_names.count(v.name) > 0; });
      std::erase_if(r->sparse,
                    [&](const NamedSparseVector& v) { return e.vector_names.count(v.name) > 0; });
      break;
    case K::kUpdateVectors: {
      auto sit = e.u->sparse.find(r->id);
      if (sit != e.u->sparse.end()) {
        for (const auto& nv : sit->second) {
          std::erase_if(r->sparse, [&](const NamedSparseVector& v) { return v.name == nv.name; });
          r->sparse.push_back(nv);
        }
      }
      auto it = e.u->vectors.find(r->id);
      if (it == e.u->vectors.end()) break;
      for (const auto& nv : it->second) {
        auto old = std::find_if(r->vectors.begin(), r->vectors.end(),
                                [&](const NamedVector& v) { return v.name == nv.name; });
        if (old != r->vectors.end()) {
          old->values = nv.values;
        } else {
          r->vectors.push_back(nv);
        }
      }
      break;
    }
  }
}

}  // namespace

Status Collection::Impl::UpdateSelected(
    const std::function<Status(std::vector<std::pair<const Segment*, uint32_t>>*)>& select,
    const PointUpdate& update, const WriteOptions& wo, size_t* updated, uint64_t* operation_id) {
  STRATA_ASSIGN_OR_RETURN(Edit edit, ParseEdit(update, schema));
  uint64_t lsn = 0;
  uint64_t sealed_id = 0;
  size_t n = 0;
  {
    std::unique_lock<std::shared_mutex> l(mu_);
    if (closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", name));
    STRATA_RETURN_IF_ERROR(CheckWritable());
    std::vector<std::pair<const Segment*, uint32_t>> rows;
    STRATA_RETURN_IF_ERROR(select(&rows));
    std::vector<Point> pts;
    pts.reserve(rows.size());
    for (const auto& [seg, row] : rows) {
      Record r = MakeRecord(*seg, row, /*with_payload=*/true, /*with_vectors=*/true);
      ApplyEdit(edit, &r);
      pts.push_back(Point{r.id, std::move(r.vectors), std::move(r.payload), std::move(r.sparse)});
    }
    if (pts.empty()) {
      lsn = wal->last_lsn();
    } else {
      std::vector<PreparedPoint> prepared;
      STRATA_RETURN_IF_ERROR(Prepare(pts, &prepared));
      STRATA_RETURN_IF_ERROR(UpsertLocked(prepared, EncodeUpsert(prepared), &lsn, &sealed_id));
      n = prepared.size();
    }
  }
  if (updated) *updated = n;
  if (operation_id) *operation_id = lsn;
  if (sealed_id) Enqueue(Task{TaskKind::kPersist, sealed_id});
  if (n > 0) STRATA_RETURN_IF_ERROR(SyncWal(lsn, wo));
  Status st = RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", name, st.ToString());
  return Status::Ok();
}

Status Collection::UpdatePoints(std::span<const PointId> ids, const PointUpdate& update,
                                const WriteOptions& wo, size_t* updated, uint64_t* operation_id) {
  Impl& im = *impl_;
  return im.UpdateSelected(
      [&](std::vector<std::pair<const Segment*, uint32_t>>* rows) {
        std::set<PointId> seen;
        for (const auto& id : ids) {
          auto it = im.points.find(id);
          if (it == im.points.end())
            return Status::NotFound(fmt::format("No point with id {} found", id.ToString()));
          if (seen.insert(id).second) rows->emplace_back(it->second.seg, it->second.row);
        }
        return Status::Ok();
      },
      update, wo, updated, operation_id);
}

Status Collection::UpdatePointsByFilter(const Filter& filter, const PointUpdate& update,
                                        const WriteOptions& wo, size_t* updated,
                                        uint64_t* operation_id) {
  if (update.kind == PointUpdate::Kind::kUpdateVectors)
    return Status::InvalidArgument("update_vectors selects points by id, not by filter");
  Impl& im = *impl_;
  return im.UpdateSelected(
      [&](std::vector<std::pair<const Segment*, uint32_t>>* rows) {
        im.ForEachSegment([&](Segment& s) {
          im.Matching(s, filter).ForEach([&](uint32_t r) { rows->emplace_back(&s, r); });
        });
        return Status::Ok();
      },
      update, wo, updated, operation_id);
}

}  // namespace strata::vector
