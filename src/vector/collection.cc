// Collection: WAL + growing segment + sealed segments, the background worker
// that seals, indexes, compacts and merges, and the search planner.
//
// Lock order: manifest_mu_ (manifest writes, segment file removal) before mu_
// (the collection's reader/writer lock) before the WAL's internal mutexes.
// Segment objects are replaced only by the background worker (or the caller
// of an inline task), under mu_ held exclusively.
#include <fcntl.h>
#include <fmt/format.h>
#include <strata/core/checksum.h>
#include <strata/core/log.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>
#include <strata/vector/collection.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "vector/filter_eval.h"
#include "vector/payload_index.h"
#include "vector/segment.h"
#include "vector/wal.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::PayloadFieldIndex;
using internal::RowSet;
using internal::Segment;
using internal::SegmentFile;
using internal::Wal;
namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");
constexpr uint8_t kRecUpsert = 1;
constexpr uint8_t kRecDelete = 2;
constexpr char kManifestMagic[8] = {'S', 'T', 'R', 'M', 'A', 'N', 'I', '1'};

struct VectorMetrics {
  metrics::Counter& upserted;
  metrics::Counter& deleted;
  metrics::Counter& searches;
  metrics::Counter& sealed;
  metrics::Counter& index_builds;
  metrics::Counter& index_build_failures;
  metrics::Counter& compactions;
  metrics::Counter& exact_plans;
  metrics::Counter& graph_plans;
  metrics::Histogram& search_seconds;
  metrics::Histogram& build_seconds;
  metrics::Histogram& sync_seconds;
  metrics::Gauge& points;
  metrics::Gauge& collections;
};

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

// Little-endian record encoding.
void Put8(std::string* s, uint8_t v) { s->push_back(static_cast<char>(v)); }
void Put16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
void Put32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
void PutId(std::string* s, const PointId& id) {
  Put8(s, id.is_uuid ? 1 : 0);
  Put64(s, id.hi);
  Put64(s, id.lo);
}

struct Decoder {
  std::string_view d;
  bool ok = true;
  bool Need(size_t n) {
    if (!ok || d.size() < n) ok = false;
    return ok;
  }
  template <class T>
  T Get() {
    T v{};
    if (Need(sizeof(T))) {
      std::memcpy(&v, d.data(), sizeof(T));
      d.remove_prefix(sizeof(T));
    }
    return v;
  }
  PointId Id() {
    PointId id;
    id.is_uuid = Get<uint8_t>() != 0;
    id.hi = Get<uint64_t>();
    id.lo = Get<uint64_t>();
    return id;
  }
  std::string_view Bytes(size_t n) {
    if (!Need(n)) return {};
    std::string_view v = d.substr(0, n);
    d.remove_prefix(n);
    return v;
  }
};

std::string SegPath(const std::string& dir, uint64_t id) {
  return fmt::format("{}/segments/{:016d}.dat", dir, id);
}
std::string IdxPath(const std::string& dir, uint64_t id, size_t f) {
  return fmt::format("{}/segments/{:016d}.f{}.idx", dir, id, f);
}

bool UsesDisk(const IndexParams& p) {
  return p.type == IndexType::kDiskAnn ||
         (p.type == IndexType::kIvfPq && p.ivfpq_rerank == RerankStorage::kDisk);
}

// ---------------------------------------------------------------------------
// Schema and options as JSON (config.json)

std::string_view RerankName(RerankStorage r) {
  switch (r) {
    case RerankStorage::kNone:
      return "none";
    case RerankStorage::kMemory:
      return "memory";
    case RerankStorage::kDisk:
      return "disk";
  }
  return "disk";
}

json IndexParamsToJson(const IndexParams& p) {
  return json{{"type", IndexTypeName(p.type)},
              {"dim", p.dim},
              {"metric", MetricName(p.metric)},
              {"m", p.hnsw_m},
              {"ef_construction", p.hnsw_ef_construction},
              {"sq8", p.hnsw_sq8},
              {"nlist", p.ivf_nlist},
              {"pq_m", p.pq_m},
              {"pq_nbits", p.pq_nbits},
              {"rerank", RerankName(p.ivfpq_rerank)},
              {"diskann_r", p.diskann_r},
              {"diskann_l", p.diskann_l},
              {"diskann_alpha", p.diskann_alpha},
              {"seed", p.seed}};
}

Result<IndexParams> IndexParamsFromJson(const json& j) {
  IndexParams p;
  try {
    STRATA_ASSIGN_OR_RETURN(p.type, ParseIndexType(j.at("type").get<std::string>()));
    p.dim = j.at("dim").get<uint32_t>();
    STRATA_ASSIGN_OR_RETURN(p.metric, ParseMetric(j.at("metric").get<std::string>()));
    p.hnsw_m = j.value("m", p.hnsw_m);
    p.hnsw_ef_construction = j.value("ef_construction", p.hnsw_ef_construction);
    p.hnsw_sq8 = j.value("sq8", p.hnsw_sq8);
    p.ivf_nlist = j.value("nlist", p.ivf_nlist);
    p.pq_m = j.value("pq_m", p.pq_m);
    p.pq_nbits = j.value("pq_nbits", p.pq_nbits);
    std::string rr = j.value("rerank", std::string("disk"));
    p.ivfpq_rerank = rr == "none"     ? RerankStorage::kNone
                     : rr == "memory" ? RerankStorage::kMemory
                                      : RerankStorage::kDisk;
    p.diskann_r = j.value("diskann_r", p.diskann_r);
    p.diskann_l = j.value("diskann_l", p.diskann_l);
    p.diskann_alpha = j.value("diskann_alpha", p.diskann_alpha);
    p.seed = j.value("seed", p.seed);
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("bad index parameters in config.json: ") + e.what());
  }
  return p;
}

json OptionsToJson(const CollectionOptions& o) {
  return json{{"segment_rows", o.segment_rows},
              {"sync", o.sync},
              {"compact_deleted_ratio", o.compact_deleted_ratio},
              {"merge_small_rows", o.merge_small_rows},
              {"merge_max_rows", o.merge_max_rows},
              {"exact_selectivity", o.exact_selectivity},
              {"exact_max_rows", o.exact_max_rows},
              {"index_threads", o.index_threads},
              {"search_threads", o.search_threads}};
}

CollectionOptions OptionsFromJson(const json& j, CollectionOptions o) {
  if (!j.is_object()) return o;
  o.segment_rows = j.value("segment_rows", o.segment_rows);
  o.sync = j.value("sync", o.sync);
  o.compact_deleted_ratio = j.value("compact_deleted_ratio", o.compact_deleted_ratio);
  o.merge_small_rows = j.value("merge_small_rows", o.merge_small_rows);
  o.merge_max_rows = j.value("merge_max_rows", o.merge_max_rows);
  o.exact_selectivity = j.value("exact_selectivity", o.exact_selectivity);
  o.exact_max_rows = j.value("exact_max_rows", o.exact_max_rows);
  o.index_threads = j.value("index_threads", o.index_threads);
  o.search_threads = j.value("search_threads", o.search_threads);
  return o;
}

json PayloadFieldToJson(const PayloadFieldSchema& f) {
  return json{{"name", f.name}, {"type", PayloadTypeName(f.type)}, {"list", f.is_list}};
}

Result<PayloadFieldSchema> PayloadFieldFromJson(const json& j) {
  PayloadFieldSchema f;
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("type") ||
      !j["type"].is_string()) {
    return Status::Corruption("bad payload field in config.json");
  }
  f.name = j["name"].get<std::string>();
  STRATA_ASSIGN_OR_RETURN(f.type, ParsePayloadType(j["type"].get<std::string>()));
  f.is_list = j.value("list", false);
  return f;
}

Status ValidateSchema(const CollectionSchema& s) {
  if (s.vectors.empty())
    return Status::InvalidArgument("a collection needs at least one vector field");
  std::set<std::string> names;
  for (const auto& v : s.vectors) {
    if (!names.insert(v.name).second) {
      return Status::InvalidArgument(fmt::format("vector field \"{}\" is declared twice", v.name));
    }
    if (v.index.dim == 0 || v.index.dim > 65536) {
      return Status::InvalidArgument(
          fmt::format("vector field \"{}\": size must be 1..65536, got {}", v.name, v.index.dim));
    }
    IndexParams probe = v.index;
    probe.num_threads = 1;
    auto idx = CreateIndex(probe);  // validates the parameters
    if (!idx) return idx.error().WithContext(fmt::format("vector field \"{}\"", v.name));
  }
  std::set<std::string> pnames;
  for (const auto& p : s.payload) {
    if (p.name.empty()) return Status::InvalidArgument("a payload field needs a name");
    if (!pnames.insert(p.name).second) {
      return Status::InvalidArgument(fmt::format("payload field \"{}\" is declared twice", p.name));
    }
  }
  return Status::Ok();
}

bool AllFinite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// A validated point ready for the WAL and the growing segment.
struct PreparedPoint {
  PointId id;
  std::string payload;  // compact JSON text, "" when none
  json parsed;          // the payload parsed (object or null)
  std::vector<std::pair<uint16_t, const std::vector<float>*>> vectors;  // field index -> values
};

struct PointLoc {
  Segment* seg = nullptr;
  uint32_t row = 0;
};

}  // namespace

std::string_view PayloadTypeName(PayloadType t) {
  switch (t) {
    case PayloadType::kKeyword:
      return "keyword";
    case PayloadType::kInteger:
      return "integer";
    case PayloadType::kFloat:
      return "float";
    case PayloadType::kBool:
      return "bool";
    case PayloadType::kTimestamp:
      return "timestamp";
  }
  return "keyword";
}

Result<PayloadType> ParsePayloadType(std::string_view name) {
  std::string n;
  for (char c : name) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (n == "keyword" || n == "uuid" || n == "text" || n == "string" || n == "varchar")
    return PayloadType::kKeyword;
  if (n == "integer" || n == "int" || n == "int64") return PayloadType::kInteger;
  if (n == "float" || n == "double") return PayloadType::kFloat;
  if (n == "bool" || n == "boolean") return PayloadType::kBool;
  if (n == "timestamp" || n == "datetime") return PayloadType::kTimestamp;
  return Status::InvalidArgument(fmt::format(
      "unknown payload type \"{}\" (use keyword, integer, float, bool, timestamp or datetime)",
      name));
}

// ---------------------------------------------------------------------------

struct Collection::Impl {
  std::string dir;
  std::string name;
  CollectionSchema schema;
  CollectionOptions opts;
  // Payload indexes created with CreatePayloadIndex (typed schema fields are indexed too).
  std::vector<PayloadFieldSchema> extra_indexes;  // guarded by mu_

  mutable std::shared_mutex mu_;
  std::vector<std::unique_ptr<Segment>> sealed;  // guarded by mu_
  std::unique_ptr<Segment> growing;              // guarded by mu_
  std::map<PointId, PointLoc> points;            // live points; guarded by mu_
  uint64_t next_segment_id = 1;                  // guarded by mu_
  bool closed = false;                           // guarded by mu_
  std::unique_ptr<Wal> wal;

  mutable std::mutex manifest_mu_;

  // Background work.
  enum class TaskKind { kPersist, kBuildIndex, kMaintain };
  struct Task {
    TaskKind kind;
    uint64_t segment = 0;
    bool force = false;
  };
  mutable std::mutex bg_mu_;
  mutable std::condition_variable bg_cv_;    // new task or stop
  mutable std::condition_variable idle_cv_;  // queue drained
  std::deque<Task> tasks;                    // guarded by bg_mu_
  bool bg_stop = false;                      // guarded by bg_mu_
  bool bg_busy = false;                      // guarded by bg_mu_
  bool maintain_queued = false;              // guarded by bg_mu_
  std::thread bg_thread;
  std::mutex inline_mu_;  // background=false: one inline runner at a time

  ~Impl() = default;

  // ----- helpers (callers hold mu_ as noted)

  int FieldIndex(const std::string& vname) const {
    if (vname.empty() && schema.vectors.size() == 1) return 0;
    for (size_t i = 0; i < schema.vectors.size(); ++i) {
      if (schema.vectors[i].name == vname) return int(i);
    }
    return -1;
  }

  std::vector<PayloadFieldSchema> IndexedKeys() const {  // mu_ held
    std::vector<PayloadFieldSchema> out = schema.payload;
    for (const auto& e : extra_indexes) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const PayloadFieldSchema& f) { return f.name == e.name; });
      if (it == out.end()) {
        out.push_back(e);
      } else {
        it->type = e.type;
      }
    }
    return out;
  }

  std::unique_ptr<Segment> NewSegment(uint64_t wal_seq) {  // mu_ held exclusively (or during open)
    auto s = std::make_unique<Segment>();
    s->id = next_segment_id++;
    s->wal_first_seq = wal_seq;
    s->fields.resize(schema.vectors.size());
    for (const auto& f : IndexedKeys())
      s->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
    return s;
  }

  internal::SegmentView View(const Segment& seg) const {
    internal::SegmentView v;
    v.rows = seg.rows();
    v.ids = &seg.ids;
    v.payload = [&seg](uint32_t r) { return std::string_view(seg.payloads[r]); };
    v.indexes = &seg.payload_indexes;
    v.find_row = [this, &seg](const PointId& id, uint32_t* row) {
      auto it = points.find(id);
      if (it == points.end() || it->second.seg != &seg) return false;
      *row = it->second.row;
      return true;
    };
    return v;
  }

  RowSet LiveRows(const Segment& seg) const {
    RowSet live(seg.rows(), true);
    live.AndNot(seg.deleted);
    return live;
  }

  // Rows of seg matching the filter (live only).
  RowSet Matching(const Segment& seg, const Filter& f) const {
    RowSet live = LiveRows(seg);
    if (internal::IsTrivial(f)) return live;
    return internal::Evaluate(f, View(seg), live);
  }

  void ForEachSegment(const std::function<void(Segment&)>& fn) const {
    for (const auto& s : sealed) fn(*s);
    if (growing) fn(*growing);
  }

  // ----- writes

  Status Prepare(std::span<const Point> in, std::vector<PreparedPoint>* out) const {
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
      if (schema.vectors.size() == 1 && pp.vectors.empty()) {
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

  std::string EncodeUpsert(const std::vector<PreparedPoint>& pts) const {
    size_t bytes = 4;
    for (const auto& p : pts) {
      bytes += 17 + 4 + p.payload.size() + 2;
      for (const auto& v : p.vectors) bytes += 2 + v.second->size() * 4;
    }
    std::string s;
    s.reserve(bytes);
    Put32(&s, uint32_t(pts.size()));
    for (const auto& p : pts) {
      PutId(&s, p.id);
      Put32(&s, uint32_t(p.payload.size()));
      s += p.payload;
      Put16(&s, uint16_t(p.vectors.size()));
      for (const auto& [f, v] : p.vectors) {
        Put16(&s, f);
        s.append(reinterpret_cast<const char*>(v->data()), v->size() * 4);
      }
    }
    return s;
  }

  // Decoded upsert (replay): owns its vectors.
  struct DecodedPoint {
    PointId id;
    std::string payload;
    std::vector<std::pair<uint16_t, std::vector<float>>> vectors;
  };

  Status DecodeUpsert(std::string_view body, std::vector<DecodedPoint>* out) const {
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
  Status ApplyUpsert(
      uint64_t lsn, size_t n, const std::function<const PointId&(size_t)>& id_of,
      const std::function<const std::string&(size_t)>& payload_of,
      const std::function<const json*(size_t)>& parsed_of,
      const std::function<void(size_t, const std::function<void(uint16_t, const float*)>&)>&
          vectors_of) {
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

  size_t ApplyDelete(const std::vector<PointId>& ids) {  // mu_ held exclusively
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

  Status ReplayRecord(uint64_t lsn, uint8_t type, std::string_view body) {
    if (type == kRecUpsert) {
      std::vector<DecodedPoint> pts;
      STRATA_RETURN_IF_ERROR(DecodeUpsert(body, &pts));
      return ApplyUpsert(
          lsn, pts.size(), [&](size_t i) -> const PointId& { return pts[i].id; },
          [&](size_t i) -> const std::string& { return pts[i].payload; },
          [](size_t) -> const json* { return nullptr; },
          [&](size_t i, const std::function<void(uint16_t, const float*)>& fn) {
            for (const auto& [f, v] : pts[i].vectors) fn(f, v.data());
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

  // Seals the growing segment (mu_ held exclusively). Returns the sealed id.
  Result<uint64_t> SealLocked() {
    if (!growing || growing->rows() == 0) return uint64_t(0);
    STRATA_ASSIGN_OR_RETURN(uint64_t seq, wal->Rotate());
    uint64_t id = growing->id;
    sealed.push_back(std::move(growing));
    growing = NewSegment(seq);
    M().sealed.Inc();
    return id;
  }

  Status SyncWal(uint64_t lsn, const WriteOptions& wo) {
    if (!wo.wait || !opts.sync) return Status::Ok();
    auto t0 = std::chrono::steady_clock::now();
    Status st = wal->Sync(lsn);
    M().sync_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return st;
  }

  // ----- manifest

  // Built under mu_ (shared is enough).
  std::string ManifestBytes() const {
    uint64_t wal_start = growing ? growing->wal_first_seq : wal->current_seq();
    for (const auto& s : sealed) {
      if (!s->persisted) wal_start = std::min(wal_start, s->wal_first_seq);
    }
    std::string m(kManifestMagic, 8);
    Put32(&m, 1);
    Put64(&m, wal_start);
    Put64(&m, wal->last_lsn());
    Put64(&m, next_segment_id);
    uint32_t n = 0;
    for (const auto& s : sealed) n += s->persisted;
    Put32(&m, n);
    for (const auto& s : sealed) {
      if (!s->persisted) continue;
      Put64(&m, s->id);
      Put64(&m, s->rows());
      const auto& w = s->deleted.words();
      Put64(&m, w.size());
      m.append(reinterpret_cast<const char*>(w.data()), w.size() * 8);
    }
    Put32(&m, Crc32c(0, m.data(), m.size()));
    return m;
  }

  static uint64_t ManifestWalStart(const std::string& m) {
    uint64_t v;
    std::memcpy(&v, m.data() + 12, 8);
    return v;
  }

  // manifest_mu_ held.
  Status WriteManifest(const std::string& bytes) {
    STRATA_RETURN_IF_ERROR(internal::WriteFileAtomic(dir + "/MANIFEST", bytes));
    wal->RemoveBefore(ManifestWalStart(bytes));
    return Status::Ok();
  }

  struct Manifest {
    uint64_t wal_start = 1;
    uint64_t last_lsn = 0;
    uint64_t next_segment_id = 1;
    struct Seg {
      uint64_t id, rows;
      std::vector<uint64_t> deleted;
    };
    std::vector<Seg> segments;
  };

  static Result<Manifest> ReadManifest(const std::string& path) {
    Manifest m;
    std::ifstream in(path, std::ios::binary);
    if (!in) return m;  // a new collection
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() < 8 + 4 + 24 + 4 + 4 || std::memcmp(data.data(), kManifestMagic, 8) != 0) {
      return Status::Corruption(fmt::format("{} is damaged (bad header)", path));
    }
    uint32_t crc;
    std::memcpy(&crc, data.data() + data.size() - 4, 4);
    if (Crc32c(0, data.data(), data.size() - 4) != crc) {
      return Status::Corruption(fmt::format("{} is damaged (checksum mismatch)", path));
    }
    Decoder d{std::string_view(data).substr(8, data.size() - 12)};
    uint32_t version = d.Get<uint32_t>();
    if (version != 1)
      return Status::Corruption(fmt::format("{}: unknown version {}", path, version));
    m.wal_start = d.Get<uint64_t>();
    m.last_lsn = d.Get<uint64_t>();
    m.next_segment_id = d.Get<uint64_t>();
    uint32_t n = d.Get<uint32_t>();
    for (uint32_t i = 0; i < n && d.ok; ++i) {
      Manifest::Seg s;
      s.id = d.Get<uint64_t>();
      s.rows = d.Get<uint64_t>();
      uint64_t words = d.Get<uint64_t>();
      if (!d.Need(words * 8)) break;
      s.deleted.resize(words);
      std::memcpy(s.deleted.data(), d.Bytes(words * 8).data(), words * 8);
      m.segments.push_back(std::move(s));
    }
    if (!d.ok) return Status::Corruption(fmt::format("{} is truncated", path));
    return m;
  }

  Status WriteConfig() const {  // mu_ held (any mode)
    json j;
    j["format"] = 1;
    j["name"] = name;
    json vecs = json::array();
    for (const auto& v : schema.vectors) {
      json f = IndexParamsToJson(v.index);
      f["name"] = v.name;
      vecs.push_back(f);
    }
    j["vectors"] = vecs;
    json ps = json::array();
    for (const auto& p : schema.payload) ps.push_back(PayloadFieldToJson(p));
    j["payload_schema"] = ps;
    json xs = json::array();
    for (const auto& p : extra_indexes) xs.push_back(PayloadFieldToJson(p));
    j["payload_indexes"] = xs;
    j["options"] = OptionsToJson(opts);
    return internal::WriteFileAtomic(dir + "/config.json", j.dump(2));
  }

  // ----- building sealed segments

  // Builds the index of one field from n vectors (rows given); falls back to
  // FLAT when the configured index cannot be built.
  Status BuildFieldIndex(Segment* seg, size_t f, const std::vector<float>& data,
                         const std::vector<uint64_t>& rows, bool save) {
    auto& sf = seg->fields[f];
    sf.index.reset();
    sf.built = false;
    if (rows.empty()) return Status::Ok();
    IndexParams p = schema.vectors[f].index;
    p.num_threads = opts.index_threads;
    const std::string idx_path = IdxPath(dir, seg->id, f);
    Status st;
    if (p.type != IndexType::kFlat) {
      auto t0 = std::chrono::steady_clock::now();
      if (UsesDisk(p)) p.disk_path = idx_path + ".build";
      auto built = [&]() -> Result<std::unique_ptr<Index>> {
        STRATA_ASSIGN_OR_RETURN(auto idx, CreateIndex(p));
        if (!idx->IsTrained()) STRATA_RETURN_IF_ERROR(idx->Train(rows.size(), data.data()));
        STRATA_RETURN_IF_ERROR(idx->Add(rows.size(), data.data(), rows.data()));
        if (!save) return idx;
        STRATA_RETURN_IF_ERROR(idx->Save(idx_path));
        idx.reset();
        return Index::Load(idx_path);
      }();
      if (!p.disk_path.empty()) ::unlink(p.disk_path.c_str());
      if (built) {
        sf.index = std::move(*built);
        sf.built = true;
        M().index_builds.Inc();
        kLog.Info(
            "collection {}: segment {} field \"{}\": {} index over {} vectors built in {:.2f} s",
            name, seg->id, schema.vectors[f].name, IndexTypeName(p.type), rows.size(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        return Status::Ok();
      }
      st = built.error();
      M().index_build_failures.Inc();
      seg->index_failed = true;
      kLog.Warn(
          "collection {}: segment {} field \"{}\": {} index not built ({}); searching it exactly",
          name, seg->id, schema.vectors[f].name, IndexTypeName(p.type), st.ToString());
    }
    IndexParams fp;
    fp.type = IndexType::kFlat;
    fp.dim = p.dim;
    fp.metric = p.metric;
    fp.num_threads = opts.index_threads;
    STRATA_ASSIGN_OR_RETURN(sf.index, CreateIndex(fp));
    STRATA_RETURN_IF_ERROR(sf.index->Add(rows.size(), data.data(), rows.data()));
    sf.built = p.type == IndexType::kFlat;
    return Status::Ok();
  }

  void BuildPayloadIndexes(Segment* seg, const std::vector<PayloadFieldSchema>& keys) {
    seg->payload_indexes.clear();
    for (const auto& f : keys)
      seg->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
    if (keys.empty()) return;
    for (uint32_t r = 0; r < seg->rows(); ++r) {
      if (seg->payloads[r].empty()) continue;
      json pj = json::parse(seg->payloads[r], nullptr, false);
      if (!pj.is_object()) continue;
      for (auto& [k, idx] : seg->payload_indexes) idx->Add(r, pj);
    }
  }

  // Rewrites the given sealed segments as one persisted segment of their
  // live rows, with indexes built; then swaps it in and writes the manifest.
  Status Rewrite(const std::vector<uint64_t>& source_ids, bool is_compaction) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Segment*> sources;
    std::vector<std::pair<uint32_t, uint32_t>> origin;  // (source index, row)
    std::vector<RowSet> snap_deleted;
    auto out = std::make_unique<Segment>();
    std::vector<PayloadFieldSchema> keys;
    {
      std::unique_lock<std::shared_mutex> l(mu_);
      if (closed) return Status::Unavailable("closed");
      for (uint64_t id : source_ids) {
        for (const auto& s : sealed) {
          if (s->id == id) sources.push_back(s.get());
        }
      }
      if (sources.size() != source_ids.size()) return Status::Ok();  // already rewritten
      out->id = next_segment_id++;
      out->persisted = true;
      out->fields.resize(schema.vectors.size());
      keys = IndexedKeys();
      for (uint32_t si = 0; si < sources.size(); ++si) {
        const Segment& s = *sources[si];
        snap_deleted.push_back(s.deleted);
        for (uint32_t r = 0; r < s.rows(); ++r) {
          if (s.deleted.Test(r)) continue;
          origin.emplace_back(si, r);
          out->ids.push_back(s.ids[r]);
          out->versions.push_back(s.versions[r]);
          out->payloads.push_back(s.payloads[r]);
        }
      }
    }
    // Source rows, vectors and files are immutable from here on; only their
    // delete bitmaps change, and only under mu_.
    const size_t n = out->rows();
    out->deleted.Reset(n, false);
    out->live = n;
    std::vector<std::vector<float>> data(schema.vectors.size());
    std::vector<std::vector<uint64_t>> rows(schema.vectors.size());
    for (size_t f = 0; f < schema.vectors.size(); ++f) {
      const uint32_t dim = schema.vectors[f].index.dim;
      std::vector<float> buf(dim);
      for (uint32_t r = 0; r < n; ++r) {
        const auto& [si, sr] = origin[r];
        if (sources[si]->GetVector(f, sr, buf.data())) {
          data[f].insert(data[f].end(), buf.begin(), buf.end());
          rows[f].push_back(r);
        }
      }
    }
    const std::string path = SegPath(dir, out->id);
    if (n > 0) {
      std::vector<size_t> cursor(schema.vectors.size(), 0);
      STRATA_RETURN_IF_ERROR(
          internal::WriteSegmentFile(path, *out, schema, [&](size_t f, uint32_t r, float* o) {
            size_t& c = cursor[f];
            if (c >= rows[f].size() || rows[f][c] != r) return false;
            const uint32_t dim = schema.vectors[f].index.dim;
            std::memcpy(o, data[f].data() + c * dim, size_t(dim) * 4);
            ++c;
            return true;
          }));
      auto file = SegmentFile::Open(path);
      if (!file) return file.error();
      out->file = std::move(*file);
      out->file->ids.clear();
      out->file->ids.shrink_to_fit();
      out->file->versions.clear();
      out->file->versions.shrink_to_fit();
      out->file->payloads.clear();
      out->file->payloads.shrink_to_fit();
      for (size_t f = 0; f < schema.vectors.size(); ++f) {
        STRATA_RETURN_IF_ERROR(BuildFieldIndex(out.get(), f, data[f], rows[f], /*save=*/true));
        std::vector<float>().swap(data[f]);
      }
      BuildPayloadIndexes(out.get(), keys);
    }

    // Swap in.
    std::vector<std::unique_ptr<Segment>> retired;
    std::string manifest;
    std::lock_guard<std::mutex> ml(manifest_mu_);
    {
      std::unique_lock<std::shared_mutex> l(mu_);
      if (closed) {
        ::unlink(path.c_str());
        return Status::Unavailable("closed");
      }
      // Deletes (and overwrites) that happened while we were building.
      for (uint32_t r = 0; r < n; ++r) {
        const auto& [si, sr] = origin[r];
        if (sources[si]->deleted.Test(sr) && !snap_deleted[si].Test(sr)) {
          out->Delete(r);
        } else {
          auto it = points.find(out->ids[r]);
          if (it != points.end() && it->second.seg == sources[si] && it->second.row == sr) {
            it->second = PointLoc{out.get(), r};
          }
        }
      }
      // Payload indexes created meanwhile.
      for (const auto& f : IndexedKeys()) {
        auto it = out->payload_indexes.find(f.name);
        if (it == out->payload_indexes.end() || it->second->type() != f.type) {
          out->payload_indexes[f.name] = PayloadFieldIndex::Create(f.name, f.type);
          for (uint32_t r = 0; r < n; ++r) {
            if (out->payloads[r].empty()) continue;
            json pj = json::parse(out->payloads[r], nullptr, false);
            if (pj.is_object()) out->payload_indexes[f.name]->Add(r, pj);
          }
        }
      }
      for (auto it = sealed.begin(); it != sealed.end();) {
        if (std::find(sources.begin(), sources.end(), it->get()) != sources.end()) {
          retired.push_back(std::move(*it));
          it = sealed.erase(it);
        } else {
          ++it;
        }
      }
      if (n > 0) sealed.push_back(std::move(out));
      manifest = ManifestBytes();
    }
    Status st = WriteManifest(manifest);
    if (!st.ok()) {
      kLog.Error("collection {}: cannot write MANIFEST: {}", name, st.ToString());
      return st;
    }
    for (const auto& s : retired) {
      if (!s->persisted) continue;
      ::unlink(SegPath(dir, s->id).c_str());
      for (size_t f = 0; f < schema.vectors.size(); ++f) ::unlink(IdxPath(dir, s->id, f).c_str());
    }
    if (is_compaction) M().compactions.Inc();
    M().build_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return Status::Ok();
  }

  // Builds the real index of a persisted segment that runs on a FLAT stand-in.
  Status BuildIndexOf(uint64_t seg_id) {
    Segment* seg = nullptr;
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      for (const auto& s : sealed) {
        if (s->id == seg_id) seg = s.get();
      }
      if (seg == nullptr || !seg->persisted) return Status::Ok();
    }
    for (size_t f = 0; f < schema.vectors.size(); ++f) {
      if (!seg->fields[f].index || seg->fields[f].built) continue;
      std::vector<float> data;
      std::vector<uint64_t> rows;
      STRATA_RETURN_IF_ERROR(seg->file->VerifyField(f));
      const uint32_t dim = schema.vectors[f].index.dim;
      std::vector<float> buf(dim);
      for (uint32_t r = 0; r < seg->rows(); ++r) {
        if (seg->GetVector(f, r, buf.data())) {
          data.insert(data.end(), buf.begin(), buf.end());
          rows.push_back(r);
        }
      }
      Segment tmp;
      tmp.id = seg->id;
      tmp.fields.resize(schema.vectors.size());
      STRATA_RETURN_IF_ERROR(BuildFieldIndex(&tmp, f, data, rows, /*save=*/true));
      std::unique_lock<std::shared_mutex> l(mu_);
      seg->fields[f] = std::move(tmp.fields[f]);
      seg->index_failed |= tmp.index_failed;
    }
    return Status::Ok();
  }

  // Compaction and merging policy.
  Status Maintain(bool force) {
    std::vector<std::vector<uint64_t>> jobs;
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      std::vector<std::pair<size_t, uint64_t>> small;  // (live, id)
      for (const auto& s : sealed) {
        if (!s->persisted) continue;
        const size_t del = s->rows() - s->live;
        const bool dirty = s->live == 0 || (force && del > 0) ||
                           (opts.compact_deleted_ratio > 0 &&
                            double(del) > opts.compact_deleted_ratio * double(s->rows()));
        if (opts.merge_small_rows > 0 && s->live < opts.merge_small_rows) {
          small.emplace_back(s->live, s->id);
        } else if (dirty) {
          jobs.push_back({s->id});
        }
      }
      std::sort(small.begin(), small.end());
      std::vector<uint64_t> group;
      size_t total = 0;
      auto flush = [&] {
        if (group.size() >= 2) {
          jobs.push_back(group);
        } else if (group.size() == 1) {
          // A lone small segment: only worth rewriting for its deletes.
          for (const auto& s : sealed) {
            if (s->id == group[0] &&
                (s->live == 0 || (s->rows() > s->live &&
                                  (force || double(s->rows() - s->live) >
                                                opts.compact_deleted_ratio * double(s->rows())))))
              jobs.push_back(group);
          }
        }
        group.clear();
        total = 0;
      };
      for (const auto& [live, id] : small) {
        if (!group.empty() && total + live > opts.merge_max_rows) flush();
        group.push_back(id);
        total += live;
      }
      flush();
    }
    for (const auto& j : jobs) STRATA_RETURN_IF_ERROR(Rewrite(j, /*is_compaction=*/true));
    return Status::Ok();
  }

  // ----- background queue

  void Enqueue(Task t) {
    {
      std::lock_guard<std::mutex> l(bg_mu_);
      if (t.kind == TaskKind::kMaintain) {
        if (maintain_queued && !t.force) return;
        maintain_queued = true;
      }
      tasks.push_back(t);
    }
    bg_cv_.notify_one();
  }

  Status RunTask(const Task& t) {
    switch (t.kind) {
      case TaskKind::kPersist: {
        Status st = Rewrite({t.segment}, false);
        if (st.ok()) Enqueue(Task{TaskKind::kMaintain});
        return st;
      }
      case TaskKind::kBuildIndex:
        return BuildIndexOf(t.segment);
      case TaskKind::kMaintain: {
        {
          std::lock_guard<std::mutex> l(bg_mu_);
          maintain_queued = false;
        }
        return Maintain(t.force);
      }
    }
    return Status::Ok();
  }

  void BackgroundLoop() {
    std::unique_lock<std::mutex> l(bg_mu_);
    while (true) {
      bg_cv_.wait(l, [&] { return bg_stop || !tasks.empty(); });
      if (bg_stop) break;
      Task t = tasks.front();
      tasks.pop_front();
      bg_busy = true;
      l.unlock();
      Status st = RunTask(t);
      if (!st.ok() && st.code() != StatusCode::kUnavailable) {
        kLog.Error("collection {}: background task failed: {}", name, st.ToString());
      }
      l.lock();
      bg_busy = false;
      if (tasks.empty()) idle_cv_.notify_all();
    }
    bg_busy = false;
    idle_cv_.notify_all();
  }

  // background=false: runs queued tasks in the calling thread.
  Status RunInline() {
    if (opts.background) return Status::Ok();
    std::lock_guard<std::mutex> il(inline_mu_);
    Status first;
    while (true) {
      Task t;
      {
        std::lock_guard<std::mutex> l(bg_mu_);
        if (tasks.empty()) break;
        t = tasks.front();
        tasks.pop_front();
      }
      Status st = RunTask(t);
      if (!st.ok() && first.ok()) first = st;
    }
    return first;
  }

  void StartBackground() {
    if (opts.background) bg_thread = std::thread([this] { BackgroundLoop(); });
  }

  void StopBackground() {
    {
      std::lock_guard<std::mutex> l(bg_mu_);
      bg_stop = true;
      tasks.clear();
    }
    bg_cv_.notify_all();
    if (bg_thread.joinable()) bg_thread.join();
  }

  // ----- reads

  Record MakeRecord(const Segment& seg, uint32_t row, bool with_payload, bool with_vectors) const {
    Record r;
    r.id = seg.ids[row];
    r.version = seg.versions[row];
    if (with_payload) r.payload = seg.payloads[row].empty() ? "{}" : seg.payloads[row];
    if (with_vectors) {
      for (size_t f = 0; f < schema.vectors.size(); ++f) {
        NamedVector nv;
        nv.name = schema.vectors[f].name;
        nv.values.resize(schema.vectors[f].index.dim);
        if (seg.GetVector(f, row, nv.values.data())) r.vectors.push_back(std::move(nv));
      }
    }
    return r;
  }
};

// ---------------------------------------------------------------------------
// Collection

Collection::Collection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Collection::~Collection() { Close(); }

const std::string& Collection::name() const { return impl_->name; }
const std::string& Collection::dir() const { return impl_->dir; }
const CollectionSchema& Collection::schema() const { return impl_->schema; }

Result<std::unique_ptr<Collection>> Collection::Create(const std::string& dir, std::string name,
                                                       const CollectionSchema& schema,
                                                       const CollectionOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateSchema(schema));
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    return Status::AlreadyExists(fmt::format("directory {} already exists and is not empty", dir));
  }
  fs::create_directories(dir + "/segments", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->name = std::move(name);
  impl->schema = schema;
  impl->opts = options;
  for (auto& v : impl->schema.vectors) v.index.num_threads = 0;
  STRATA_RETURN_IF_ERROR(impl->WriteConfig());
  STRATA_RETURN_IF_ERROR(internal::SyncDirectory(fs::path(dir).parent_path().string()));
  return Open(dir, options);
}

Result<std::unique_ptr<Collection>> Collection::Open(
    const std::string& dir, const std::optional<CollectionOptions>& options) {
  auto impl = std::make_unique<Impl>();
  Impl& im = *impl;
  im.dir = dir;
  std::ifstream cin(dir + "/config.json");
  if (!cin) return Status::NotFound(fmt::format("{} is not a collection (no config.json)", dir));
  json cfg = json::parse(cin, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object())
    return Status::Corruption(fmt::format("{}/config.json is not valid JSON", dir));
  im.name = cfg.value("name", fs::path(dir).filename().string());
  if (!cfg.contains("vectors") || !cfg["vectors"].is_array()) {
    return Status::Corruption(fmt::format("{}/config.json has no vectors", dir));
  }
  for (const auto& v : cfg["vectors"]) {
    VectorFieldSchema f;
    f.name = v.value("name", "");
    STRATA_ASSIGN_OR_RETURN(f.index, IndexParamsFromJson(v));
    im.schema.vectors.push_back(std::move(f));
  }
  if (cfg.contains("payload_schema")) {
    for (const auto& p : cfg["payload_schema"]) {
      STRATA_ASSIGN_OR_RETURN(auto f, PayloadFieldFromJson(p));
      im.schema.payload.push_back(std::move(f));
    }
  }
  if (cfg.contains("payload_indexes")) {
    for (const auto& p : cfg["payload_indexes"]) {
      STRATA_ASSIGN_OR_RETURN(auto f, PayloadFieldFromJson(p));
      im.extra_indexes.push_back(std::move(f));
    }
  }
  im.opts = options ? *options
                    : OptionsFromJson(cfg.value("options", json::object()), CollectionOptions{});
  STRATA_RETURN_IF_ERROR(ValidateSchema(im.schema));

  STRATA_ASSIGN_OR_RETURN(Impl::Manifest man, Impl::ReadManifest(dir + "/MANIFEST"));
  im.next_segment_id = std::max<uint64_t>(man.next_segment_id, 1);
  const auto keys = im.IndexedKeys();
  std::set<std::string> referenced;
  std::vector<uint64_t> needs_build;
  for (auto& ms : man.segments) {
    const std::string path = SegPath(dir, ms.id);
    referenced.insert(fs::path(path).filename().string());
    auto file = SegmentFile::Open(path);
    if (!file) return file.error().WithContext(fmt::format("collection {}", im.name));
    auto seg = std::make_unique<Segment>();
    seg->id = ms.id;
    seg->persisted = true;
    seg->file = std::move(*file);
    if (seg->file->rows() != ms.rows || seg->file->fields().size() != im.schema.vectors.size()) {
      return Status::Corruption(fmt::format("segment {} does not match the MANIFEST", path));
    }
    seg->ids = std::move(seg->file->ids);
    seg->versions = std::move(seg->file->versions);
    seg->payloads = std::move(seg->file->payloads);
    seg->deleted.Reset(seg->rows(), false);
    seg->deleted.SetWords(ms.deleted);
    seg->live = seg->rows() - seg->deleted.Count();
    seg->fields.resize(im.schema.vectors.size());
    for (size_t f = 0; f < im.schema.vectors.size(); ++f) {
      const auto& fl = seg->file->fields()[f];
      if (fl.dim != im.schema.vectors[f].index.dim) {
        return Status::Corruption(
            fmt::format("segment {}: field {} has dimension {}, the schema {}", path, f, fl.dim,
                        im.schema.vectors[f].index.dim));
      }
      size_t present = 0;
      for (uint64_t w = 0; w < (seg->rows() + 63) / 64; ++w)
        present += std::popcount(fl.present[w]);
      if (present == 0) continue;
      const IndexParams& p = im.schema.vectors[f].index;
      const std::string idx_path = IdxPath(dir, seg->id, f);
      if (p.type != IndexType::kFlat && fs::exists(idx_path)) {
        referenced.insert(fs::path(idx_path).filename().string());
        auto idx = Index::Load(idx_path);
        if (idx && (*idx)->Size() == present && (*idx)->dim() == p.dim) {
          seg->fields[f].index = std::move(*idx);
          seg->fields[f].built = true;
          continue;
        }
        kLog.Warn("collection {}: index {} is unusable ({}); rebuilding it", im.name, idx_path,
                  idx ? "size mismatch" : idx.error().ToString());
      }
      // FLAT, or a stand-in until the background rebuilds the index.
      STRATA_RETURN_IF_ERROR(seg->file->VerifyField(f));
      std::vector<float> data;
      std::vector<uint64_t> rows;
      std::vector<float> buf(fl.dim);
      for (uint32_t r = 0; r < seg->rows(); ++r) {
        if (seg->GetVector(f, r, buf.data())) {
          data.insert(data.end(), buf.begin(), buf.end());
          rows.push_back(r);
        }
      }
      IndexParams fp;
      fp.type = IndexType::kFlat;
      fp.dim = p.dim;
      fp.metric = p.metric;
      STRATA_ASSIGN_OR_RETURN(seg->fields[f].index, CreateIndex(fp));
      STRATA_RETURN_IF_ERROR(seg->fields[f].index->Add(rows.size(), data.data(), rows.data()));
      seg->fields[f].built = p.type == IndexType::kFlat;
      if (!seg->fields[f].built) needs_build.push_back(seg->id);
    }
    im.BuildPayloadIndexes(seg.get(), keys);
    im.sealed.push_back(std::move(seg));
  }
  // Files of interrupted rewrites.
  std::error_code ec;
  fs::create_directories(dir + "/segments", ec);
  for (const auto& e : fs::directory_iterator(dir + "/segments", ec)) {
    std::string fname = e.path().filename().string();
    if (!referenced.count(fname)) fs::remove(e.path(), ec);
  }
  // Live points; an id live in two segments (a crash between a rewrite and
  // the WAL trim) keeps its newest version.
  for (const auto& s : im.sealed) {
    for (uint32_t r = 0; r < s->rows(); ++r) {
      if (s->deleted.Test(r)) continue;
      auto [it, inserted] = im.points.emplace(s->ids[r], PointLoc{s.get(), r});
      if (!inserted) {
        PointLoc& old = it->second;
        if (old.seg->versions[old.row] < s->versions[r]) {
          old.seg->Delete(old.row);
          old = PointLoc{s.get(), r};
        } else {
          s->Delete(r);
        }
      }
    }
  }
  im.growing = im.NewSegment(man.wal_start);
  auto wal = Wal::Open(dir + "/wal", man.wal_start, man.last_lsn + 1, im.opts.sync,
                       [&](uint64_t lsn, uint8_t type, std::string_view body) {
                         return im.ReplayRecord(lsn, type, body);
                       });
  if (!wal) return wal.error().WithContext(fmt::format("collection {}", im.name));
  im.wal = std::move(*wal);
  M().points.Add(int64_t(im.points.size()));
  M().collections.Add(1);

  std::unique_ptr<Collection> c(new Collection(std::move(impl)));
  Impl& ci = *c->impl_;
  ci.StartBackground();
  {
    std::unique_lock<std::shared_mutex> l(ci.mu_);
    if (ci.growing->rows() >= ci.opts.segment_rows) {
      STRATA_ASSIGN_OR_RETURN(uint64_t sid, ci.SealLocked());
      if (sid) ci.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sid});
    }
  }
  std::sort(needs_build.begin(), needs_build.end());
  needs_build.erase(std::unique(needs_build.begin(), needs_build.end()), needs_build.end());
  for (uint64_t id : needs_build) ci.Enqueue(Impl::Task{Impl::TaskKind::kBuildIndex, id});
  ci.Enqueue(Impl::Task{Impl::TaskKind::kMaintain});
  Status st = ci.RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", ci.name, st.ToString());
  kLog.Info("collection {} opened: {} points, {} sealed segments, growing {} rows", ci.name,
            ci.points.size(), ci.sealed.size(), ci.growing->rows());
  return c;
}

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
  std::string rec = im.EncodeUpsert(prepared);
  uint64_t lsn = 0;
  uint64_t sealed_id = 0;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    const size_t before = im.points.size();
    STRATA_ASSIGN_OR_RETURN(lsn, im.wal->Append(kRecUpsert, rec));
    Status st = im.ApplyUpsert(
        lsn, prepared.size(), [&](size_t i) -> const PointId& { return prepared[i].id; },
        [&](size_t i) -> const std::string& { return prepared[i].payload; },
        [&](size_t i) -> const json* { return &prepared[i].parsed; },
        [&](size_t i, const std::function<void(uint16_t, const float*)>& fn) {
          for (const auto& [f, v] : prepared[i].vectors) fn(f, v->data());
        });
    if (!st.ok()) {
      // Validated input cannot fail here; if it does, memory and WAL disagree.
      kLog.Error("collection {}: applying a logged upsert failed: {}", im.name, st.ToString());
      return Status::Internal("applying the upsert failed after it was logged: " + st.ToString());
    }
    M().points.Add(int64_t(im.points.size()) - int64_t(before));
    M().upserted.Inc(prepared.size());
    if (im.growing->rows() >= im.opts.segment_rows) {
      auto sid = im.SealLocked();
      if (sid) {
        sealed_id = *sid;
      } else {
        kLog.Error("collection {}: cannot seal the growing segment: {}", im.name,
                   sid.error().ToString());
      }
    }
  }
  if (sealed_id) im.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sealed_id});
  if (operation_id) *operation_id = lsn;
  STRATA_RETURN_IF_ERROR(im.SyncWal(lsn, wo));
  Status st = im.RunInline();
  if (!st.ok()) kLog.Warn("collection {}: {}", im.name, st.ToString());
  return Status::Ok();
}

namespace {
std::string EncodeDelete(const std::vector<PointId>& ids) {
  std::string s;
  Put32(&s, uint32_t(ids.size()));
  for (const auto& id : ids) PutId(&s, id);
  return s;
}
}  // namespace

Status Collection::Delete(std::span<const PointId> ids, const WriteOptions& wo, size_t* deleted,
                          uint64_t* operation_id) {
  Impl& im = *impl_;
  uint64_t lsn = 0;
  size_t n = 0;
  bool maintain = false;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
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

Result<std::vector<Record>> Collection::Get(std::span<const PointId> ids, bool with_payload,
                                            bool with_vectors) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  std::vector<Record> out;
  std::set<PointId> seen;
  for (const auto& id : ids) {
    auto it = im.points.find(id);
    if (it == im.points.end() || !seen.insert(id).second) continue;
    out.push_back(im.MakeRecord(*it->second.seg, it->second.row, with_payload, with_vectors));
  }
  return out;
}

Result<std::vector<ScoredPoint>> Collection::Search(const SearchRequest& req) const {
  STRATA_ASSIGN_OR_RETURN(auto all, SearchBatch(std::span<const SearchRequest>(&req, 1)));
  return std::move(all[0]);
}

Result<std::vector<std::vector<ScoredPoint>>> Collection::SearchBatch(
    std::span<const SearchRequest> reqs) const {
  const Impl& im = *impl_;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> field(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SearchRequest& r = reqs[i];
    field[i] = im.FieldIndex(r.vector_name);
    if (field[i] < 0) {
      return Status::InvalidArgument(
          r.vector_name.empty()
              ? std::string(
                    "the collection has several vectors; name the one to search (\"using\")")
              : fmt::format("the collection has no vector named \"{}\"", r.vector_name));
    }
    const uint32_t dim = im.schema.vectors[field[i]].index.dim;
    if (r.vector.size() != dim) {
      return Status::InvalidArgument(
          fmt::format("wrong query vector dimension: expected {}, got {}", dim, r.vector.size()));
    }
    if (!AllFinite(r.vector))
      return Status::InvalidArgument("the query vector has a NaN or infinite component");
  }
  std::vector<std::vector<ScoredPoint>> results(reqs.size());

  // Group requests that can share one index call per segment.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SearchRequest& r = reqs[i];
    if (r.limit == 0) continue;
    std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}", field[i], r.filter ? r.filter->ToString() : "", r.exact,
                    r.ef, r.nprobe, int(r.filter_strategy));
    groups[key].push_back(i);
  }

  std::shared_lock<std::shared_mutex> l(im.mu_);
  if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
  struct Hit {
    float distance;
    const Segment* seg;
    uint32_t row;
  };
  for (const auto& [key, members] : groups) {
    const SearchRequest& r0 = reqs[members[0]];
    const int f = field[members[0]];
    const Metric metric = im.schema.vectors[f].index.metric;
    size_t k = 0;
    for (size_t i : members)
      k = std::max(k, reqs[i].offset + reqs[i].limit + reqs[i].exclude.size());
    const size_t nq = members.size();
    std::vector<float> queries;
    queries.reserve(nq * r0.vector.size());
    for (size_t i : members)
      queries.insert(queries.end(), reqs[i].vector.begin(), reqs[i].vector.end());
    std::vector<std::vector<Hit>> hits(nq);
    const bool filtered = r0.filter && !internal::IsTrivial(*r0.filter);
    const uint32_t threads = nq >= 8 ? 0 : im.opts.search_threads;

    Status err;
    im.ForEachSegment([&](Segment& seg) {
      if (!err.ok()) return;
      const auto& sf = seg.fields[f];
      if (!sf.index || sf.index->Size() == 0 || seg.live == 0) return;
      std::optional<RowSet> allowed;
      if (filtered) {
        allowed = im.Matching(seg, *r0.filter);
        if (allowed->Empty()) return;
      } else if (seg.live < seg.rows()) {
        allowed = im.LiveRows(seg);
      }
      SearchResults res;
      // The planner: a filter that keeps few rows is answered exactly over
      // them; otherwise the index walks its graph with the filter.
      const size_t matching = allowed ? allowed->Count() : seg.live;
      const bool is_flat = sf.index->type() == IndexType::kFlat;
      const bool exact = r0.exact || r0.filter_strategy == FilterStrategy::kExact ||
                         (filtered && !is_flat &&
                          (matching <= im.opts.exact_max_rows ||
                           double(matching) <= im.opts.exact_selectivity * double(seg.live)));
      Status st;
      if (exact && (allowed || r0.exact)) {
        std::vector<uint64_t> ids;
        if (allowed) {
          allowed->Enumerate(&ids);
        } else {
          im.LiveRows(seg).Enumerate(&ids);
        }
        st = sf.index->SearchSubset(nq, queries.data(), k, ids.data(), ids.size(), &res, threads);
        if (filtered) M().exact_plans.Inc();
      } else {
        SearchParams sp;
        sp.ef = r0.ef;
        sp.nprobe = r0.nprobe;
        sp.filter = allowed ? &*allowed : nullptr;
        sp.filter_strategy = r0.filter_strategy == FilterStrategy::kExact ? FilterStrategy::kAuto
                                                                          : r0.filter_strategy;
        sp.exact_threshold = 1;  // the collection already decided against exact
        sp.num_threads = threads;
        st = sf.index->Search(nq, queries.data(), k, sp, &res);
        if (filtered) M().graph_plans.Inc();
      }
      if (!st.ok()) {
        err = st;
        return;
      }
      for (size_t q = 0; q < nq; ++q) {
        const Neighbor* row = res.Row(q);
        for (size_t j = 0; j < res.k; ++j) {
          if (row[j].id == kNoId) break;
          if (row[j].id >= seg.rows() || seg.deleted.Test(row[j].id)) continue;
          hits[q].push_back(Hit{row[j].distance, &seg, uint32_t(row[j].id)});
        }
      }
    });
    if (!err.ok()) return err;
    for (size_t qi = 0; qi < nq; ++qi) {
      const SearchRequest& r = reqs[members[qi]];
      auto& h = hits[qi];
      std::sort(h.begin(), h.end(), [](const Hit& a, const Hit& b) {
        if (a.distance != b.distance) return a.distance < b.distance;
        return a.seg->ids[a.row] < b.seg->ids[b.row];
      });
      size_t skipped = 0;
      auto& out = results[members[qi]];
      for (const Hit& x : h) {
        if (out.size() >= r.limit) break;
        const PointId& id = x.seg->ids[x.row];
        if (!r.exclude.empty() &&
            std::find(r.exclude.begin(), r.exclude.end(), id) != r.exclude.end())
          continue;
        float score = ScoreFromDistance(metric, x.distance);
        if (r.score_threshold) {
          bool ok =
              metric == Metric::kL2 ? score <= *r.score_threshold : score >= *r.score_threshold;
          if (!ok) break;  // hits are in score order
        }
        if (skipped < r.offset) {
          ++skipped;
          continue;
        }
        ScoredPoint sp;
        sp.score = score;
        sp.record = im.MakeRecord(*x.seg, x.row, r.with_payload, r.with_vectors);
        out.push_back(std::move(sp));
      }
    }
    M().searches.Inc(nq);
  }
  M().search_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return results;
}

Result<ScrollResult> Collection::Scroll(const ScrollRequest& req) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  ScrollResult out;
  std::unordered_map<const Segment*, RowSet> allowed;
  const bool filtered = req.filter && !internal::IsTrivial(*req.filter);
  if (filtered) {
    im.ForEachSegment([&](Segment& s) { allowed.emplace(&s, im.Matching(s, *req.filter)); });
  }
  auto it = req.offset ? im.points.lower_bound(*req.offset) : im.points.begin();
  for (; it != im.points.end(); ++it) {
    const PointLoc& loc = it->second;
    if (filtered && !allowed.at(loc.seg).Test(loc.row)) continue;
    if (out.points.size() == req.limit) {
      out.next_offset = it->first;
      break;
    }
    out.points.push_back(im.MakeRecord(*loc.seg, loc.row, req.with_payload, req.with_vectors));
  }
  return out;
}

Result<size_t> Collection::Count(const std::optional<Filter>& filter) const {
  const Impl& im = *impl_;
  std::shared_lock<std::shared_mutex> l(im.mu_);
  if (!filter || internal::IsTrivial(*filter)) return im.points.size();
  size_t n = 0;
  im.ForEachSegment([&](Segment& s) { n += im.Matching(s, *filter).Count(); });
  return n;
}

Status Collection::CreatePayloadIndex(const std::string& key, PayloadType type) {
  Impl& im = *impl_;
  if (key.empty()) return Status::InvalidArgument("a payload index needs a field name");
  std::unique_lock<std::shared_mutex> l(im.mu_);
  if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
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

Status Collection::Compact(bool seal_growing) {
  Impl& im = *impl_;
  if (seal_growing) {
    uint64_t sid = 0;
    {
      std::unique_lock<std::shared_mutex> l(im.mu_);
      if (im.closed)
        return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
      STRATA_ASSIGN_OR_RETURN(sid, im.SealLocked());
    }
    if (sid) im.Enqueue(Impl::Task{Impl::TaskKind::kPersist, sid});
  }
  im.Enqueue(Impl::Task{Impl::TaskKind::kMaintain, 0, true});
  STRATA_RETURN_IF_ERROR(im.RunInline());
  return WaitIdle();
}

Status Collection::WaitIdle() const {
  const Impl& im = *impl_;
  if (!im.opts.background) return Status::Ok();
  std::unique_lock<std::mutex> l(im.bg_mu_);
  im.idle_cv_.wait(l, [&] { return im.bg_stop || (im.tasks.empty() && !im.bg_busy); });
  return Status::Ok();
}

Status Collection::Snapshot(const std::string& dest) const {
  const Impl& im = *impl_;
  std::error_code ec;
  if (fs::exists(dest, ec))
    return Status::AlreadyExists(fmt::format("snapshot directory {} already exists", dest));
  std::lock_guard<std::mutex> ml(im.manifest_mu_);
  std::string manifest;
  std::vector<std::pair<std::string, uint64_t>> wal_files;
  std::vector<std::string> seg_files;
  {
    std::unique_lock<std::shared_mutex> l(im.mu_);
    if (im.closed) return Status::Unavailable(fmt::format("collection \"{}\" is closed", im.name));
    STRATA_RETURN_IF_ERROR(im.wal->Sync(im.wal->last_lsn()));
    manifest = im.ManifestBytes();
    wal_files = im.wal->Files(Impl::ManifestWalStart(manifest));
    for (const auto& s : im.sealed) {
      if (!s->persisted) continue;
      seg_files.push_back(SegPath(im.dir, s->id));
      for (size_t f = 0; f < im.schema.vectors.size(); ++f) {
        std::string p = IdxPath(im.dir, s->id, f);
        if (fs::exists(p, ec)) seg_files.push_back(p);
      }
    }
  }
  // Segment files are immutable and cannot be removed while manifest_mu_ is
  // held; WAL files only grow, so copying each up to its recorded size is a
  // consistent cut.
  const std::string tmp = dest + ".partial";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp + "/segments", ec);
  fs::create_directories(tmp + "/wal", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", tmp, ec.message()));
  auto fail = [&](Status st) {
    fs::remove_all(tmp, ec);
    return st;
  };
  fs::copy_file(im.dir + "/config.json", tmp + "/config.json", ec);
  if (ec) return fail(Status::IOError("cannot copy config.json: " + ec.message()));
  for (const auto& p : seg_files) {
    std::string to = tmp + "/segments/" + fs::path(p).filename().string();
    fs::create_hard_link(p, to, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(p, to, ec);
      if (ec) return fail(Status::IOError(fmt::format("cannot copy {}: {}", p, ec.message())));
    }
  }
  for (const auto& [p, size] : wal_files) {
    std::ifstream in(p, std::ios::binary);
    std::ofstream out(tmp + "/wal/" + fs::path(p).filename().string(), std::ios::binary);
    std::vector<char> buf(1 << 20);
    uint64_t left = size;
    while (left > 0 && in) {
      in.read(buf.data(), std::streamsize(std::min<uint64_t>(left, buf.size())));
      out.write(buf.data(), in.gcount());
      left -= uint64_t(in.gcount());
    }
    if (left != 0 || !out) return fail(Status::IOError(fmt::format("cannot copy {}", p)));
  }
  Status st = internal::WriteFileAtomic(tmp + "/MANIFEST", manifest);
  if (!st.ok()) return fail(st);
  fs::rename(tmp, dest, ec);
  if (ec) return fail(Status::IOError(fmt::format("cannot rename {}: {}", tmp, ec.message())));
  return internal::SyncDirectory(fs::path(dest).parent_path().string());
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

// ---------------------------------------------------------------------------
// CollectionManager

Status CollectionManager::ValidateName(const std::string& name) {
  if (name.empty() || name.size() > 255) {
    return Status::InvalidArgument("collection names are 1 to 255 characters long");
  }
  if (name[0] == '.') return Status::InvalidArgument("collection names do not start with '.'");
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      return Status::InvalidArgument(fmt::format(
          "collection name \"{}\" has a character other than letters, digits, '_', '-' and '.'",
          name));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<CollectionManager>> CollectionManager::Open(
    const std::string& root, const CollectionOptions& defaults) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", root, ec.message()));
  std::unique_ptr<CollectionManager> m(new CollectionManager(root, defaults));
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_directory() || name.empty() || name[0] == '.') continue;
    if (name.find(".dropping-") != std::string::npos) {
      fs::remove_all(e.path(), ec);
      continue;
    }
    if (!fs::exists(e.path() / "config.json")) {
      kLog.Warn("skipping {}: not a collection (no config.json)", e.path().string());
      continue;
    }
    // Stored options, with the process-wide ones (fsync, background work)
    // from this manager: `strata server --no-fsync` applies to every collection.
    CollectionOptions opts;
    {
      std::ifstream cin(e.path() / "config.json");
      json cfg = json::parse(cin, nullptr, false);
      if (cfg.is_object()) opts = OptionsFromJson(cfg.value("options", json::object()), opts);
    }
    opts.sync = defaults.sync;
    opts.background = defaults.background;
    auto c = Collection::Open(e.path().string(), opts);
    if (!c) {
      kLog.Error("collection {} cannot be opened and is skipped: {}", name, c.error().ToString());
      continue;
    }
    m->collections_[name] = std::shared_ptr<Collection>(std::move(*c));
  }
  if (ec) return Status::IOError(fmt::format("cannot list {}: {}", root, ec.message()));
  return m;
}

CollectionManager::~CollectionManager() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [n, c] : collections_) c->Close();
}

Result<std::shared_ptr<Collection>> CollectionManager::Create(
    const std::string& name, const CollectionSchema& schema,
    const std::optional<CollectionOptions>& options) {
  STRATA_RETURN_IF_ERROR(ValidateName(name));
  std::lock_guard<std::mutex> l(mu_);
  if (collections_.count(name))
    return Status::AlreadyExists(fmt::format("collection \"{}\" already exists", name));
  const std::string dir = root_ + "/" + name;
  std::error_code ec;
  if (fs::exists(dir, ec)) fs::remove_all(dir, ec);  // debris of a failed create
  auto c = Collection::Create(dir, name, schema, options ? *options : defaults_);
  if (!c) {
    fs::remove_all(dir, ec);
    return c.error();
  }
  std::shared_ptr<Collection> sp(std::move(*c));
  collections_[name] = sp;
  return sp;
}

Result<std::shared_ptr<Collection>> CollectionManager::Get(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = collections_.find(name);
  if (it == collections_.end())
    return Status::NotFound(fmt::format("collection \"{}\" does not exist", name));
  return it->second;
}

bool CollectionManager::Exists(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  return collections_.count(name) > 0;
}

Status CollectionManager::Drop(const std::string& name) {
  std::shared_ptr<Collection> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = collections_.find(name);
    if (it == collections_.end())
      return Status::NotFound(fmt::format("collection \"{}\" does not exist", name));
    c = it->second;
    collections_.erase(it);
  }
  c->Close();
  const std::string dir = root_ + "/" + name;
  const std::string trash = fmt::format("{}/.{}.dropping-{}", root_, name, NowUnixNanos());
  std::error_code ec;
  fs::rename(dir, trash, ec);
  if (ec) return Status::IOError(fmt::format("cannot remove {}: {}", dir, ec.message()));
  (void)internal::SyncDirectory(root_);
  fs::remove_all(trash, ec);
  return Status::Ok();
}

std::vector<std::string> CollectionManager::List() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [n, c] : collections_) out.push_back(n);
  return out;
}

Result<std::string> CollectionManager::CreateSnapshot(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto c, Get(name));
  const auto now = std::chrono::system_clock::now();
  const int64_t secs =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%d-%H-%M-%S", &tm);
  std::string snap = fmt::format("{}-{}-{}", name, ts, NowUnixNanos() % 1000000);
  std::string dir = fmt::format("{}/.snapshots/{}", root_, name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  STRATA_RETURN_IF_ERROR(c->Snapshot(dir + "/" + snap));
  return snap;
}

Result<std::vector<std::string>> CollectionManager::ListSnapshots(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(auto c, Get(name));
  std::vector<std::pair<fs::file_time_type, std::string>> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fmt::format("{}/.snapshots/{}", root_, name), ec)) {
    std::string n = e.path().filename().string();
    if (n.size() > 8 && n.substr(n.size() - 8) == ".partial") continue;
    v.emplace_back(fs::last_write_time(e.path(), ec), n);
  }
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto& [t, n] : v) out.push_back(n);
  return out;
}

Result<std::shared_ptr<Collection>> CollectionManager::RestoreSnapshot(
    const std::string& snapshot_dir, const std::string& name) {
  STRATA_RETURN_IF_ERROR(ValidateName(name));
  std::lock_guard<std::mutex> l(mu_);
  if (collections_.count(name))
    return Status::AlreadyExists(fmt::format("collection \"{}\" already exists", name));
  std::error_code ec;
  if (!fs::exists(snapshot_dir + "/config.json", ec)) {
    return Status::NotFound(fmt::format("{} is not a collection snapshot", snapshot_dir));
  }
  const std::string dir = root_ + "/" + name;
  fs::copy(snapshot_dir, dir, fs::copy_options::recursive, ec);
  if (ec) {
    fs::remove_all(dir, ec);
    return Status::IOError(fmt::format("cannot copy {}: {}", snapshot_dir, ec.message()));
  }
  // The snapshot's config carries the old name.
  {
    std::ifstream in(dir + "/config.json");
    json cfg = json::parse(in, nullptr, false);
    if (cfg.is_object()) {
      cfg["name"] = name;
      STRATA_RETURN_IF_ERROR(internal::WriteFileAtomic(dir + "/config.json", cfg.dump(2)));
    }
  }
  auto c = Collection::Open(dir);
  if (!c) {
    fs::remove_all(dir, ec);
    return c.error();
  }
  std::shared_ptr<Collection> sp(std::move(*c));
  collections_[name] = sp;
  return sp;
}

}  // namespace strata::vector
