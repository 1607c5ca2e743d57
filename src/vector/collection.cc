// Collection: the write path (validation, WAL records, applying them to the
// growing segment, replay), the collection's lifetime and accessors, payload
// index creation, Info, and the process's vector metrics.
//
// The rest of Collection::Impl is split by concept (collection_internal.h
// lists the files); the lock order is described there.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/coding.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/vector/collection.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::AllFinite;
using internal::Decoder;
using internal::M;
using internal::PayloadFieldIndex;
using internal::PointLoc;
using internal::PreparedPoint;
using internal::Segment;

namespace internal {

VectorMetrics& M() {
  auto& r = metrics::Registry::Global();
  static VectorMetrics m{
      r.GetCounter("strata_vector_points_upserted_total", "Points written by upserts"),
      r.GetCounter("strata_vector_points_deleted_total", "Points deleted"),
      r.GetCounter("strata_vector_searches_total", "Search queries (one per query vector)"),
      r.GetCounter("strata_vector_segments_sealed_total", "Growing segments sealed"),
      r.GetCounter("strata_vector_index_builds_total", "Segment indexes built"),
      r.GetCounter("strata_vector_index_build_failures_total",
                   "Segment index builds that failed (segment kept FLAT)"),
      r.GetCounter("strata_vector_compactions_total", "Segment rewrites by compaction or merging"),
      r.GetCounter("strata_vector_filter_plans_total", "Filtered segment searches by plan",
                   "plan=\"exact\""),
      r.GetCounter("strata_vector_filter_plans_total", "Filtered segment searches by plan",
                   "plan=\"graph\""),
      r.GetHistogram("strata_vector_search_seconds",
                     "Collection search latency (one request or batch)"),
      r.GetHistogram("strata_vector_index_build_seconds", "Time to rewrite and index one segment"),
      r.GetHistogram("strata_vector_wal_sync_seconds",
                     "Time waiting for the WAL fsync (group commit)"),
      r.GetGauge("strata_vector_points", "Live points in open collections"),
      r.GetGauge("strata_vector_collections", "Open collections"),
  };
  return m;
}

}  // namespace internal

namespace {

constexpr log::Logger kLog("vector");
constexpr uint8_t kRecUpsert = 1;
constexpr uint8_t kRecDelete = 2;

// Little-endian record encoding.
void PutId(std::string* s, const PointId& id) {
  s->push_back(static_cast<char>(id.is_uuid ? 1 : 0));
  PutFixed64(s, id.hi);
  PutFixed64(s, id.lo);
}

std::string EncodeDelete(const std::vector<PointId>& ids) {
  std::string s;
  PutFixed32(&s, uint32_t(ids.size()));
  for (const auto& id : ids) PutId(&s, id);
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Collection::Impl: writes

// mu_ held exclusively (or during open).
std::unique_ptr<Segment> Collection::Impl::NewSegment(uint64_t wal_seq) {
  auto s = std::make_unique<Segment>();
  s->id = next_segment_id++;
  s->wal_first_seq = wal_seq;
  s->fields.resize(schema.vectors.size());
  s->sparse.resize(schema.sparse.size());
  for (const auto& f : IndexedKeys())
    s->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
  return s;
}

Status Collection::Impl::PrepareSparse(const Point& p, const std::string& who,
                                       PreparedPoint* pp) const {
  std::vector<bool> seen(schema.sparse.size(), false);
  for (const auto& nv : p.sparse) {
    const int f = SparseIndex(nv.name);
    if (f < 0) {
      return Status::InvalidArgument(
          fmt::format("{}: the collection has no sparse vector named \"{}\"", who, nv.name));
    }
    if (seen[f])
      return Status::InvalidArgument(
          fmt::format("{}: sparse vector \"{}\" is given twice", who, nv.name));
    seen[f] = true;
    SparseVector sorted;
    STRATA_RETURN_IF_ERROR(internal::NormalizeSparse(nv.vector, &sorted)
                               .WithContext(fmt::format("{}: sparse vector \"{}\"", who, nv.name)));
    pp->sparse.emplace_back(uint16_t(f), std::move(sorted));
  }
  return Status::Ok();
}

Status Collection::Impl::Prepare(std::span<const Point> in, std::vector<PreparedPoint>* out) const {
  // Last occurrence of an id wins.
  std::unordered_map<PointId, size_t, PointIdHash> last;
  for (size_t i = 0; i < in.size(); ++i) last[in[i].id] = i;
  out->reserve(last.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const Point& p = in[i];
    if (last[p.id] != i) continue;
    PreparedPoint pp;
    pp.id = p.id;
    const std::string who = fmt::format("point {}", p.id.ToString());
    std::vector<bool> seen(schema.vectors.size(), false);
    for (const auto& nv : p.vectors) {
      int f = FieldIndex(nv.name);
      if (f < 0) {
        return Status::InvalidArgument(
            fmt::format("{}: the collection has no vector named \"{}\"", who, nv.name));
      }
      if (seen[f])
        return Status::InvalidArgument(
            fmt::format("{}: vector \"{}\" is given twice", who, nv.name));
      seen[f] = true;
      const uint32_t dim = schema.vectors[f].index.dim;
      if (nv.values.size() != dim) {
        return Status::InvalidArgument(
            fmt::format("{}: wrong vector dimension for \"{}\": expected {}, got {}", who,
                        schema.vectors[f].name, dim, nv.values.size()));
      }
      if (!AllFinite(nv.values)) {
        return Status::InvalidArgument(fmt::format(
            "{}: vector \"{}\" has a NaN or infinite component", who, schema.vectors[f].name));
      }
      pp.vectors.emplace_back(uint16_t(f), &nv.values);
    }
    STRATA_RETURN_IF_ERROR(PrepareSparse(p, who, &pp));
    if (schema.vectors.size() == 1 && schema.sparse.empty() && pp.vectors.empty()) {
      return Status::InvalidArgument(fmt::format("{}: a vector is required", who));
    }
    if (!p.payload.empty()) {
      pp.parsed = json::parse(p.payload, nullptr, /*allow_exceptions=*/false);
      if (pp.parsed.is_discarded())
        return Status::InvalidArgument(fmt::format("{}: the payload is not valid JSON", who));
      if (pp.parsed.is_null()) {
        pp.parsed = json();
      } else if (!pp.parsed.is_object()) {
        return Status::InvalidArgument(fmt::format("{}: the payload must be a JSON object", who));
      } else {
        for (const auto& f : schema.payload) {
          STRATA_RETURN_IF_ERROR(internal::CheckTypedField(pp.parsed, f).WithContext(who));
        }
        if (!pp.parsed.empty()) {
          pp.payload = pp.parsed.dump(-1, ' ', false, json::error_handler_t::replace);
        }
      }
    }
    out->push_back(std::move(pp));
  }
  return Status::Ok();
}

std::string Collection::Impl::EncodeUpsert(const std::vector<PreparedPoint>& pts) const {
  size_t bytes = 4;
  for (const auto& p : pts) {
    bytes += 17 + 4 + p.payload.size() + 2;
    for (const auto& v : p.vectors) bytes += 2 + v.second->size() * 4;
    for (const auto& v : p.sparse) bytes += 6 + v.second.indices.size() * 8;
  }
  std::string s;
  s.reserve(bytes);
  PutFixed32(&s, uint32_t(pts.size()));
  for (const auto& p : pts) {
    PutId(&s, p.id);
    PutFixed32(&s, uint32_t(p.payload.size()));
    s += p.payload;
    PutFixed16(&s, uint16_t(p.vectors.size() + p.sparse.size()));
    for (const auto& [f, v] : p.vectors) {
      PutFixed16(&s, f);
      s.append(reinterpret_cast<const char*>(v->data()), v->size() * 4);
    }
    for (const auto& [f, v] : p.sparse) {
      PutFixed16(&s, uint16_t(f | internal::kSparseFieldBit));
      PutFixed32(&s, uint32_t(v.indices.size()));
      s.append(reinterpret_cast<const char*>(v.indices.data()), v.indices.size() * 4);
      s.append(reinterpret_cast<const char*>(v.values.data()), v.values.size() * 4);
    }
  }
  return s;
}

Status Collection::Impl::DecodeUpsert(std::string_view body, std::vector<DecodedPoint>* out) const {
  Decoder d{body};
  uint32_t n = d.Get<uint32_t>();
  for (uint32_t i = 0; i < n && d.ok; ++i) {
    DecodedPoint p;
    p.id = d.Id();
    uint32_t plen = d.Get<uint32_t>();
    p.payload = std::string(d.Bytes(plen));
    uint16_t nv = d.Get<uint16_t>();
    for (uint16_t k = 0; k < nv && d.ok; ++k) {
      uint16_t f = d.Get<uint16_t>();
      if (f & internal::kSparseFieldBit) {
        f &= uint16_t(~internal::kSparseFieldBit);
        if (f >= schema.sparse.size())
          return Status::Corruption("WAL upsert names an unknown sparse vector field");
        const uint32_t nnz = d.Get<uint32_t>();
        std::string_view ri = d.Bytes(size_t(nnz) * 4);
        std::string_view rv = d.Bytes(size_t(nnz) * 4);
        SparseVector sv;
        if (d.ok) {
          sv.indices.resize(nnz);
          sv.values.resize(nnz);
          std::memcpy(sv.indices.data(), ri.data(), ri.size());
          std::memcpy(sv.values.data(), rv.data(), rv.size());
        }
        p.sparse.emplace_back(f, std::move(sv));
        continue;
      }
      if (f >= schema.vectors.size())
        return Status::Corruption("WAL upsert names an unknown vector field");
      uint32_t dim = schema.vectors[f].index.dim;
      std::string_view raw = d.Bytes(size_t(dim) * 4);
      std::vector<float> v(dim);
      if (d.ok) std::memcpy(v.data(), raw.data(), raw.size());
      p.vectors.emplace_back(f, std::move(v));
    }
    out->push_back(std::move(p));
  }
  if (!d.ok) return Status::Corruption("truncated WAL upsert record");
  return Status::Ok();
}

// Applies an upsert to memory (mu_ held exclusively). `parsed` may be null
// entries (replay parses here).
Status Collection::Impl::ApplyUpsert(
    uint64_t lsn, size_t n, const std::function<const PointId&(size_t)>& id_of,
    const std::function<const std::string&(size_t)>& payload_of,
    const std::function<const json*(size_t)>& parsed_of,
    const std::function<void(size_t, const std::function<void(uint16_t, const float*)>&)>&
        vectors_of,
    const SparseOf& sparse_of) {
  Segment& g = *growing;
  const uint32_t first = uint32_t(g.rows());
  // Vectors per field, gathered for one batch Add each.
  std::vector<std::vector<float>> data(schema.vectors.size());
  std::vector<std::vector<uint64_t>> rows(schema.vectors.size());
  for (size_t i = 0; i < n; ++i) {
    const uint32_t row = first + uint32_t(i);
    vectors_of(i, [&](uint16_t f, const float* v) {
      data[f].insert(data[f].end(), v, v + schema.vectors[f].index.dim);
      rows[f].push_back(row);
    });
  }
  for (size_t f = 0; f < schema.vectors.size(); ++f) {
    if (rows[f].empty()) continue;
    auto& sf = g.fields[f];
    if (!sf.index) {
      IndexParams p;
      p.type = IndexType::kFlat;
      p.dim = schema.vectors[f].index.dim;
      p.metric = schema.vectors[f].index.metric;
      p.num_threads = 1;
      STRATA_ASSIGN_OR_RETURN(sf.index, CreateIndex(p));
      sf.built = schema.vectors[f].index.type == IndexType::kFlat;
    }
    STRATA_RETURN_IF_ERROR(sf.index->Add(rows[f].size(), data[f].data(), rows[f].data()));
  }
  for (size_t i = 0; i < n; ++i) {
    sparse_of(i, [&](uint16_t f, const SparseVector& v) {
      g.sparse[f].Append(first + uint32_t(i), v.indices.data(), v.values.data(), v.indices.size());
    });
  }
  json scratch;
  for (size_t i = 0; i < n; ++i) {
    const PointId& id = id_of(i);
    const uint32_t row = first + uint32_t(i);
    auto it = points.find(id);
    if (it != points.end()) it->second.seg->Delete(it->second.row);
    g.ids.push_back(id);
    g.versions.push_back(lsn);
    g.payloads.push_back(payload_of(i));
    g.deleted.Resize(g.rows());
    ++g.live;
    points[id] = PointLoc{&g, row};
    if (!g.payload_indexes.empty() && !g.payloads.back().empty()) {
      const json* pj = parsed_of(i);
      if (pj == nullptr) {
        scratch = json::parse(g.payloads.back(), nullptr, false);
        pj = &scratch;
      }
      if (pj->is_object()) {
        for (auto& [k, idx] : g.payload_indexes) idx->Add(row, *pj);
      }
    }
  }
  return Status::Ok();
}

// mu_ held exclusively.
Status Collection::Impl::UpsertLocked(const std::vector<PreparedPoint>& prepared,
                                      const std::string& rec, uint64_t* lsn, uint64_t* sealed_id) {
  *sealed_id = 0;
  const size_t before = points.size();
  STRATA_ASSIGN_OR_RETURN(*lsn, wal->Append(kRecUpsert, rec));
  Status st = ApplyUpsert(
      *lsn, prepared.size(), [&](size_t i) -> const PointId& { return prepared[i].id; },
      [&](size_t i) -> const std::string& { return prepared[i].payload; },
      [&](size_t i) -> const json* { return &prepared[i].parsed; },
      [&](size_t i, const std::function<void(uint16_t, const float*)>& fn) {
        for (const auto& [f, v] : prepared[i].vectors) fn(f, v->data());
      },
      [&](size_t i, const std::function<void(uint16_t, const SparseVector&)>& fn) {
        for (const auto& [f, v] : prepared[i].sparse) fn(f, v);
      });
  if (!st.ok()) {
    // Validated input cannot fail here; if it does, memory and WAL disagree.
    kLog.Error("collection {}: applying a logged upsert failed: {}", name, st.ToString());
    return Status::Internal("applying the upsert failed after it was logged: " + st.ToString());
  }
  M().points.Add(int64_t(points.size()) - int64_t(before));
  M().upserted.Inc(prepared.size());
  if (growing->rows() >= opts.segment_rows) {
    auto sid = SealLocked();
    if (sid) {
      *sealed_id = *sid;
    } else {
      kLog.Error("collection {}: cannot seal the growing segment: {}", name,
                 sid.error().ToString());
    }
  }
  return Status::Ok();
}

// mu_ held exclusively.
size_t Collection::Impl::ApplyDelete(const std::vector<PointId>& ids) {
  size_t n = 0;
  for (const auto& id : ids) {
    auto it = points.find(id);
    if (it == points.end()) continue;
    it->second.seg->Delete(it->second.row);
    points.erase(it);
    ++n;
  }
  return n;
}

Status Collection::Impl::ReplayRecord(uint64_t lsn, uint8_t type, std::string_view body) {
  if (type == kRecUpsert) {
    std::vector<DecodedPoint> pts;
    STRATA_RETURN_IF_ERROR(DecodeUpsert(body, &pts));
    return ApplyUpsert(
        lsn, pts.size(), [&](size_t i) -> const PointId& { return pts[i].id; },
        [&](size_t i) -> const std::string& { return pts[i].payload; },
        [](size_t) -> const json* { return nullptr; },
        [&](size_t i, const std::function<void(uint16_t, const float*)>& fn) {
          for (const auto& [f, v] : pts[i].vectors) fn(f, v.data());
        },
        [&](size_t i, const std::function<void(uint16_t, const SparseVector&)>& fn) {
          for (const auto& [f, v] : pts[i].sparse) fn(f, v);
        });
  }
  if (type == kRecDelete) {
    Decoder d{body};
    uint32_t n = d.Get<uint32_t>();
    std::vector<PointId> ids;
    for (uint32_t i = 0; i < n && d.ok; ++i) ids.push_back(d.Id());
    if (!d.ok) return Status::Corruption("truncated WAL delete record");
    ApplyDelete(ids);
    return Status::Ok();
  }
  return Status::Corruption(fmt::format("unknown WAL record type {}", type));
}

Status Collection::Impl::SyncWal(uint64_t lsn, const WriteOptions& wo) {
  if (!wo.wait || !opts.sync) return Status::Ok();
  auto t0 = std::chrono::steady_clock::now();
  Status st = wal->Sync(lsn);
  M().sync_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return st;
}

// ---------------------------------------------------------------------------
// Collection

Collection::Collection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Collection::~Collection() { Close(); }

const std::string& Collection::name() const { return impl_->name; }
const std::string& Collection::dir() const { return impl_->dir; }
const CollectionSchema& Collection::schema() const { return impl_->schema; }

void Collection::Close() {
  if (!impl_) return;
  Impl& im = *impl_;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return;
    im.closed = true;
  }
  im.StopBackground();
  if (im.wal) im.wal->Close();
  M().points.Add(-int64_t(im.points.size()));
  M().collections.Add(-1);
}

Status Collection::Upsert(std::span<const Point> points, const WriteOptions& wo,
                          uint64_t* operation_id) {
  Impl& im = *impl_;
  if (points.empty()) {
    if (operation_id) *operation_id = im.wal ? im.wal->last_lsn() : 0;
    return Status::Ok();
  }
  std::vector<PreparedPoint> prepared;
  STRATA_RETURN_IF_ERROR(im.Prepare(points, &prepared));
  const std::string rec = im.EncodeUpsert(prepared);
  uint64_t lsn = 0;
  uint64_t sealed_id = 0;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.CheckWritable());
    STRATA_RETURN_IF_ERROR(im.UpsertLocked(prepared, rec, &lsn, &sealed_id));
  }
  if (sealed_id) im.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sealed_id});
  if (operation_id) *operation_id = lsn;
  STRATA_RETURN_IF_ERROR(im.SyncWal(lsn, wo));
  Status st = im.RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", im.name, st.ToString());
  return Status::Ok();
}

Status Collection::Delete(std::span<const PointId> ids, const WriteOptions& wo, size_t* deleted,
                          uint64_t* operation_id) {
  Impl& im = *impl_;
  uint64_t lsn = 0;
  size_t n = 0;
  bool maintain = false;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.CheckWritable());
    std::vector<PointId> live;
    for (const auto& id : ids) {
      if (im.points.count(id)) live.push_back(id);
    }
    std::sort(live.begin(), live.end());
    live.erase(std::unique(live.begin(), live.end()), live.end());
    if (!live.empty()) {
      for (const auto& id : live) {
        const Segment* s = im.points[id].seg;
        maintain |=
            s->persisted && im.opts.compact_deleted_ratio > 0 &&
            double(s->rows() - s->live + 1) > im.opts.compact_deleted_ratio * double(s->rows());
      }
      STRATA_ASSIGN_OR_RETURN(lsn, im.wal->Append(kRecDelete, EncodeDelete(live)));
      n = im.ApplyDelete(live);
      M().points.Add(-int64_t(n));
      M().deleted.Inc(n);
    } else {
      lsn = im.wal->last_lsn();
    }
  }
  if (deleted) *deleted = n;
  if (operation_id) *operation_id = lsn;
  if (maintain) im.Enqueue(Impl::Task{Impl::TaskKind::kMaintain});
  if (n > 0) STRATA_RETURN_IF_ERROR(im.SyncWal(lsn, wo));
  (void)im.RunInline();
  return Status::Ok();
}

Status Collection::DeleteByFilter(const Filter& filter, const WriteOptions& wo, size_t* deleted,
                                  uint64_t* operation_id) {
  std::vector<PointId> ids;
  {
    Impl& im = *impl_;
    std::shared_lock<std::shared_mutex> l(im.mu_);
    im.ForEachSegment([&](Segment& s) {
      im.Matching(s, filter).ForEach([&](uint32_t r) { ids.push_back(s.ids[r]); });
    });
  }
  // A point rewritten between the two locks is deleted too (its id matched);
  // the delete itself is atomic and logged as ids.
  return Delete(ids, wo, deleted, operation_id);
}

Status Collection::CreatePayloadIndex(const std::string& key, PayloadType type) {
  Impl& im = *impl_;
  if (key.empty()) return Status::InvalidArgument("a payload index needs a field name");
  std::unique_lock<std::shared_mutex> l(im.mu_);
  if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
  STRATA_RETURN_IF_ERROR(im.CheckWritable());
  for (const auto& f : im.schema.payload) {
    if (f.name == key && f.type != type) {
      return Status::InvalidArgument(
          fmt::format("payload field \"{}\" is declared {} in the schema, not {}", key,
                      PayloadTypeName(f.type), PayloadTypeName(type)));
    }
  }
  auto it = std::find_if(im.extra_indexes.begin(), im.extra_indexes.end(),
                         [&](const PayloadFieldSchema& f) { return f.name == key; });
  if (it != im.extra_indexes.end() && it->type == type) return Status::Ok();
  if (it != im.extra_indexes.end()) {
    it->type = type;
  } else {
    im.extra_indexes.push_back(PayloadFieldSchema{key, type, false});
  }
  STRATA_RETURN_IF_ERROR(im.WriteConfig());
  im.ForEachSegment([&](Segment& s) {
    auto idx = PayloadFieldIndex::Create(key, type);
    for (uint32_t r = 0; r < s.rows(); ++r) {
      if (s.payloads[r].empty()) continue;
      json pj = json::parse(s.payloads[r], nullptr, false);
      if (pj.is_object()) idx->Add(r, pj);
    }
    s.payload_indexes[key] = std::move(idx);
  });
  return Status::Ok();
}

Status Collection::DropPayloadIndex(const std::string& key) {
  Impl& im = *impl_;
  std::unique_lock<std::shared_mutex> l(im.mu_);
  if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
  STRATA_RETURN_IF_ERROR(im.CheckWritable());
  for (const auto& f : im.schema.payload) {
    if (f.name == key) {
      return Status::InvalidArgument(
          fmt::format("payload field \"{}\" is typed in the schema; its index stays", key));
    }
  }
  auto it = std::find_if(im.extra_indexes.begin(), im.extra_indexes.end(),
                         [&](const PayloadFieldSchema& f) { return f.name == key; });
  if (it == im.extra_indexes.end())
    return Status::NotFound(fmt::format("no payload index on \"{}\"", key));
  im.extra_indexes.erase(it);
  STRATA_RETURN_IF_ERROR(im.WriteConfig());
  im.ForEachSegment([&](Segment& s) { s.payload_indexes.erase(key); });
  return Status::Ok();
}

Status Collection::Reconfigure(const CollectionOptions& options,
                               std::span<const VectorFieldSchema> vectors) {
  Impl& im = *impl_;
  std::vector<uint64_t> rebuild;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.CheckWritable());
    if (vectors.size() != im.schema.vectors.size())
      return Status::InvalidArgument(
          "the vector fields of a collection cannot be added or removed");
    bool changed = false;
    for (size_t f = 0; f < vectors.size(); ++f) {
      const IndexParams& a = im.schema.vectors[f].index;
      const IndexParams& b = vectors[f].index;
      if (vectors[f].name != im.schema.vectors[f].name || a.dim != b.dim || a.metric != b.metric ||
          a.type != b.type) {
        return Status::InvalidArgument(
            fmt::format("vector \"{}\": its name, size, distance and index type cannot change",
                        im.schema.vectors[f].name));
      }
      changed |= a.hnsw_m != b.hnsw_m || a.hnsw_ef_construction != b.hnsw_ef_construction ||
                 a.hnsw_sq8 != b.hnsw_sq8;
    }
    const CollectionSchema old_schema = im.schema;
    const CollectionOptions old_opts = im.opts;
    for (size_t f = 0; f < vectors.size(); ++f) {
      IndexParams& a = im.schema.vectors[f].index;
      a.hnsw_m = vectors[f].index.hnsw_m;
      a.hnsw_ef_construction = vectors[f].index.hnsw_ef_construction;
      a.hnsw_sq8 = vectors[f].index.hnsw_sq8;
    }
    CollectionOptions o = options;
    o.sync = im.opts.sync;
    o.background = im.opts.background;
    im.opts = o;
    if (Status st = im.WriteConfig(); !st.ok()) {
      im.schema = old_schema;
      im.opts = old_opts;
      return st;
    }
    if (changed) {
      for (const auto& seg : im.sealed) {
        if (seg->persisted) rebuild.push_back(seg->id);
      }
    }
  }
  for (uint64_t id : rebuild)
    im.Enqueue(Impl::Task{Impl::TaskKind::kBuildIndex, id, /*force=*/true});
  Status st = im.RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", im.name, st.ToString());
  return Status::Ok();
}

CollectionInfo Collection::Info() const {
  const Impl& im = *impl_;
  CollectionInfo info;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  info.name = im.name;
  info.schema = im.schema;
  info.options = im.opts;
  info.points = im.points.size();
  info.segments = im.sealed.size() + (im.growing && im.growing->rows() > 0 ? 1 : 0);
  std::map<std::string, size_t> counts;
  im.ForEachSegment([&](Segment& s) {
    if (s.persisted && s.AllBuilt()) info.indexed_points += s.live;
    info.memory_bytes += s.MemoryBytes();
    if (s.file) info.disk_bytes += s.file->size();
    for (const auto& [k, idx] : s.payload_indexes) counts[k] += idx->points();
  });
  if (im.wal) {
    info.disk_bytes += im.wal->bytes();
    info.last_operation = im.wal->last_lsn();
  }
  info.memory_bytes += im.points.size() * (sizeof(PointId) + sizeof(PointLoc) + 32);
  for (const auto& f : im.IndexedKeys()) info.payload_indexes.emplace_back(f, counts[f.name]);
  {
    std::lock_guard<std::mutex> bl(im.bg_mu_);
    info.pending_tasks = im.tasks.size() + (im.bg_busy ? 1 : 0);
  }
  return info;
}

}  // namespace strata::vector
