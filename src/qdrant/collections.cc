// Collections: create (Qdrant's config plus the "strata" extension: index
// type and parameters, segment and planner options, typed payload fields),
// the collection info JSON, payload indexes and snapshot descriptions.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/core/strings.h>

#include "qdrant/json_convert.h"
#include "qdrant/operations.h"

namespace strata::qdrant {

using vector::Collection;
using vector::CollectionManager;

namespace {

constexpr log::Logger kLog("vector-rest");

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

// Qdrant sizes segments and scan thresholds in kilobytes of vectors; we
// count rows of the first vector field.
size_t KbToRows(uint64_t kb, uint32_t dim) {
  return std::max<size_t>(1, kb * 1024 / (4 * uint64_t{dim}));
}
uint64_t RowsToKb(size_t rows, uint32_t dim) { return uint64_t{rows} * 4 * dim / 1024; }

Result<uint64_t> Unsigned(const json& v, std::string_view what) {
  if (!v.is_number_unsigned())
    return Status::InvalidArgument(fmt::format("{} must be a non-negative integer", what));
  return v.get<uint64_t>();
}

Status Unsupported(std::string_view what, std::string_view why) {
  return Status::InvalidArgument(fmt::format("{} is not supported: {}", what, why));
}

// The index part of an hnsw_config (m, ef_construct, on_disk); the
// collection-wide keys are HnswOptionsPart's when `collection_level`.
Status HnswIndexPart(const json& h, bool collection_level, vector::IndexParams* p) {
  if (!h.is_object()) return Status::InvalidArgument("hnsw_config must be an object");
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (v.is_null()) continue;
    if (k == "m" || k == "ef_construct") {
      STRATA_ASSIGN_OR_RETURN(uint64_t n, Unsigned(v, "hnsw_config." + k));
      if (n == 0 || n > 4096)
        return Status::InvalidArgument(fmt::format(
            "hnsw_config.{} must be in 1..4096 (an index without a graph is not supported)", k));
      (k == "m" ? p->hnsw_m : p->hnsw_ef_construction) = static_cast<uint32_t>(n);
    } else if (k == "on_disk") {
      if (!v.is_boolean()) return Status::InvalidArgument("hnsw_config.on_disk must be a boolean");
      if (v.get<bool>()) return Unsupported("hnsw_config.on_disk=true", "HNSW graphs live in RAM");
    } else if (collection_level && (k == "full_scan_threshold" || k == "max_indexing_threads")) {
      continue;
    } else {
      return Unsupported("hnsw_config." + k,
                         collection_level ? "use m, ef_construct, full_scan_threshold, "
                                            "max_indexing_threads or on_disk=false"
                                          : "a vector's hnsw_config takes m, ef_construct and "
                                            "on_disk=false");
    }
  }
  return Status::Ok();
}

Status HnswOptionsPart(const json& h, uint32_t dim, vector::CollectionOptions* o) {
  if (const json* t = Field(h, "full_scan_threshold")) {
    STRATA_ASSIGN_OR_RETURN(uint64_t kb, Unsigned(*t, "hnsw_config.full_scan_threshold"));
    o->exact_max_rows = kb == 0 ? 0 : KbToRows(kb, dim);
  }
  if (const json* t = Field(h, "max_indexing_threads")) {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, Unsigned(*t, "hnsw_config.max_indexing_threads"));
    if (n > 1024)
      return Status::InvalidArgument("hnsw_config.max_indexing_threads is at most 1024");
    o->index_threads = static_cast<uint32_t>(n);
  }
  return Status::Ok();
}

// quantization_config: scalar int8 is HNSW's SQ8; "Disabled" (PATCH) turns
// it off; product and binary quantization are refused.
Status QuantizationPart(const json& q, vector::IndexParams* p) {
  if (q.is_null()) return Status::Ok();
  if (q.is_string() && q.get<std::string>() == "Disabled") {
    p->hnsw_sq8 = false;
    return Status::Ok();
  }
  if (!q.is_object() || q.size() != 1)
    return Status::InvalidArgument(
        "quantization_config is {\"scalar\": {\"type\": \"int8\"}} or \"Disabled\"");
  if (q.contains("product")) return Unsupported("product quantization", "use scalar int8");
  if (q.contains("binary")) return Unsupported("binary quantization", "use scalar int8");
  const json* s = Field(q, "scalar");
  if (s == nullptr || !s->is_object())
    return Status::InvalidArgument(
        fmt::format("unknown quantization \"{}\" (scalar int8 is supported)", q.begin().key()));
  for (auto it = s->begin(); it != s->end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "type") {
      if (!v.is_string() || v.get<std::string>() != "int8")
        return Status::InvalidArgument("quantization_config.scalar.type must be \"int8\"");
    } else if (k == "always_ram") {
      // The quantized vectors are always in RAM here; asking for disk is refused.
      if (!v.is_boolean() || !v.get<bool>())
        return Unsupported("quantization_config.scalar.always_ram=false",
                           "quantized vectors are kept in RAM");
    } else {
      return Unsupported("quantization_config.scalar." + k,
                         "the int8 range is each dimension's min..max");
    }
  }
  if (!s->contains("type"))
    return Status::InvalidArgument("quantization_config.scalar needs \"type\": \"int8\"");
  p->hnsw_sq8 = true;
  return Status::Ok();
}

// optimizers_config: the keys with an equivalent in CollectionOptions.
Status OptimizersPart(const json& oc, uint32_t dim, vector::CollectionOptions* o) {
  if (!oc.is_object()) return Status::InvalidArgument("optimizers_config must be an object");
  for (auto it = oc.begin(); it != oc.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (v.is_null()) continue;
    if (k == "deleted_threshold") {
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
        return Status::InvalidArgument("optimizers_config.deleted_threshold must be in 0..1");
      o->compact_deleted_ratio = v.get<double>();
    } else if (k == "indexing_threshold") {
      STRATA_ASSIGN_OR_RETURN(uint64_t kb, Unsigned(v, "optimizers_config.indexing_threshold"));
      if (kb == 0)
        return Unsupported("optimizers_config.indexing_threshold=0",
                           "segments are always indexed once sealed");
      o->segment_rows = KbToRows(kb, dim);
    } else if (k == "max_segment_size") {
      STRATA_ASSIGN_OR_RETURN(uint64_t kb, Unsigned(v, "optimizers_config.max_segment_size"));
      o->merge_max_rows = KbToRows(kb, dim);
    } else {
      return Unsupported("optimizers_config." + k,
                         "deleted_threshold, indexing_threshold and max_segment_size are");
    }
  }
  return Status::Ok();
}

Status CheckIndexKnobs(const vector::VectorFieldSchema& f) {
  if (f.index.hnsw_sq8 && f.index.type != vector::IndexType::kHnsw)
    return Status::InvalidArgument(
        fmt::format("vector \"{}\": scalar quantization applies to the HNSW index only", f.name));
  return Status::Ok();
}

// The "strata" extension may sit at the top level or inside the vector
// config: the official JS client drops unknown top-level keys but passes
// `vectors` on as it is. Collection-level keys are merged from all of them.
Result<json> MergeStrataExtension(const json& b, const json& vectors) {
  json strata_all = json::object();
  auto merge = [&](const json* s) -> Status {
    if (s == nullptr) return Status::Ok();
    if (!s->is_object()) return Status::InvalidArgument("\"strata\" must be an object");
    for (auto it = s->begin(); it != s->end(); ++it) strata_all[it.key()] = it.value();
    return Status::Ok();
  };
  if (Status st = merge(Field(b, "strata")); !st.ok()) return st;
  if (vectors.contains("size")) {
    if (Status st = merge(Field(vectors, "strata")); !st.ok()) return st;
  } else {
    for (auto it = vectors.begin(); it != vectors.end(); ++it) {
      if (Status st = merge(Field(it.value(), "strata")); !st.ok()) return st;
    }
  }
  return strata_all;
}

// One vector field from its config `v` (and the body's collection-wide keys).
Result<vector::VectorFieldSchema> MakeVectorField(const json& b, const std::string& fname,
                                                  const json& v) {
  const json* strata = Field(b, "strata");
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
  if (const json* h = Field(b, "hnsw_config"))
    STRATA_RETURN_IF_ERROR(HnswIndexPart(*h, /*collection_level=*/true, &f.index));
  if (const json* h = Field(v, "hnsw_config"))
    STRATA_RETURN_IF_ERROR(HnswIndexPart(*h, /*collection_level=*/false, &f.index));
  if (const json* q = Field(b, "quantization_config"))
    STRATA_RETURN_IF_ERROR(QuantizationPart(*q, &f.index));
  if (const json* q = Field(v, "quantization_config"))
    STRATA_RETURN_IF_ERROR(QuantizationPart(*q, &f.index));
  if (const json* d = Field(v, "on_disk"); d != nullptr && d->is_boolean() && d->get<bool>())
    return Unsupported("vectors.on_disk=true", "vectors are served from RAM");
  if (strata) STRATA_RETURN_IF_ERROR(ApplyStrataIndex(*strata, &f.index));
  if (const json* vs = Field(v, "strata")) STRATA_RETURN_IF_ERROR(ApplyStrataIndex(*vs, &f.index));
  STRATA_RETURN_IF_ERROR(CheckIndexKnobs(f));
  return f;
}

// "vectors": {"size", "distance", ...} (one unnamed vector) or {name: {...}, ...}.
Status VectorFieldsFromJson(const json& b, const json& vectors, vector::CollectionSchema* schema) {
  if (vectors.contains("size")) {
    auto f = MakeVectorField(b, "", vectors);
    if (!f) return f.error();
    schema->vectors.push_back(std::move(*f));
    return Status::Ok();
  }
  for (auto it = vectors.begin(); it != vectors.end(); ++it) {
    if (!it.value().is_object())
      return Status::InvalidArgument(
          fmt::format("vector \"{}\" needs size and distance", it.key()));
    auto f = MakeVectorField(b, it.key(), it.value());
    if (!f) return f.error();
    schema->vectors.push_back(std::move(*f));
  }
  if (schema->vectors.empty())
    return Status::InvalidArgument("the collection needs at least one vector");
  return Status::Ok();
}

// "sparse_vectors": {name: {"index": {...}, "modifier": "idf" | "none"}}.
// The inverted index is always in RAM and exact; index options that would
// change that are refused.
Status SparseFieldsFromJson(const json& sv, vector::CollectionSchema* schema) {
  if (!sv.is_object())
    return Status::InvalidArgument("\"sparse_vectors\" maps names to {index, modifier}");
  for (auto it = sv.begin(); it != sv.end(); ++it) {
    vector::SparseFieldSchema f;
    f.name = it.key();
    if (f.name.empty()) return Status::InvalidArgument("a sparse vector needs a non-empty name");
    const json& v = it.value();
    if (!v.is_object() && !v.is_null())
      return Status::InvalidArgument(
          fmt::format("sparse_vectors.\"{}\" must be an object", f.name));
    for (auto jt = v.begin(); v.is_object() && jt != v.end(); ++jt) {
      const json& x = jt.value();
      if (x.is_null()) continue;
      if (jt.key() == "modifier") {
        std::string m = x.is_string() ? ToLower(x.get<std::string>()) : "";
        if (m != "idf" && m != "none")
          return Status::InvalidArgument(
              fmt::format("sparse_vectors.\"{}\".modifier must be \"idf\" or \"none\"", f.name));
        f.modifier = m == "idf" ? vector::SparseModifier::kIdf : vector::SparseModifier::kNone;
      } else if (jt.key() == "index") {
        if (!x.is_object())
          return Status::InvalidArgument(
              fmt::format("sparse_vectors.\"{}\".index must be an object", f.name));
        for (auto kt = x.begin(); kt != x.end(); ++kt) {
          const json& y = kt.value();
          if (y.is_null()) continue;
          if (kt.key() == "on_disk" && y.is_boolean() && !y.get<bool>()) continue;
          if (kt.key() == "datatype" && y.is_string() && ToLower(y.get<std::string>()) == "float32")
            continue;
          if (kt.key() == "full_scan_threshold" && y.is_number_unsigned()) continue;
          return Unsupported(
              fmt::format("sparse_vectors.\"{}\".index.{}={}", f.name, kt.key(), y.dump()),
              "the sparse index is kept in RAM as float32 and searched exactly "
              "(on_disk=false, datatype=float32, full_scan_threshold accepted: every query is "
              "exact)");
        }
      } else {
        return Unsupported(fmt::format("sparse_vectors.\"{}\".{}", f.name, jt.key()),
                           "a sparse vector takes index and modifier");
      }
    }
    schema->sparse.push_back(std::move(f));
  }
  return Status::Ok();
}

Status CheckStrataKeys(const json& strata_all) {
  for (auto it = strata_all.begin(); it != strata_all.end(); ++it) {
    static const char* kKeys[] = {"index",
                                  "params",
                                  "segment_rows",
                                  "exact_selectivity",
                                  "exact_max_rows",
                                  "compact_deleted_ratio",
                                  "merge_small_rows",
                                  "merge_max_rows",
                                  "index_threads",
                                  "search_threads",
                                  "sync",
                                  "payload_schema"};
    if (std::none_of(std::begin(kKeys), std::end(kKeys),
                     [&](const char* k) { return it.key() == k; })) {
      return Status::InvalidArgument(
          fmt::format("unknown key \"{}\" in \"strata\" (index, params, segment_rows, "
                      "payload_schema, exact_selectivity, "
                      "exact_max_rows, compact_deleted_ratio, merge_small_rows, merge_max_rows, "
                      "index_threads, search_threads, sync)",
                      it.key()));
    }
  }
  return Status::Ok();
}

// The extension's collection-level keys: segment and planner options, and
// the typed payload fields.
Status ApplyStrataOptions(const json* strata, vector::CollectionOptions* opts,
                          vector::CollectionSchema* schema) {
  try {
    if (const json* x = Field(*strata, "segment_rows"))
      opts->segment_rows = std::max<size_t>(1, x->get<size_t>());
    if (const json* x = Field(*strata, "exact_selectivity"))
      opts->exact_selectivity = x->get<double>();
    if (const json* x = Field(*strata, "exact_max_rows")) opts->exact_max_rows = x->get<size_t>();
    if (const json* x = Field(*strata, "compact_deleted_ratio"))
      opts->compact_deleted_ratio = x->get<double>();
    if (const json* x = Field(*strata, "merge_small_rows"))
      opts->merge_small_rows = x->get<size_t>();
    if (const json* x = Field(*strata, "merge_max_rows")) opts->merge_max_rows = x->get<size_t>();
    // Threads for index builds (0 = all cores) and for one search batch (0 =
    // all cores); fsync of the WAL before wait=true writes return. A server
    // started with --no-fsync never syncs, whatever a collection asks.
    for (auto [key, out] : {std::pair{"index_threads", &opts->index_threads},
                            std::pair{"search_threads", &opts->search_threads}}) {
      const json* x = Field(*strata, key);
      if (x == nullptr) continue;
      if (!x->is_number_unsigned() || x->get<uint64_t>() > 1024) {
        return Status::InvalidArgument(fmt::format(
            "strata.{} is a thread count from 0 (all cores) to 1024, got {}", key, x->dump()));
      }
      *out = x->get<uint32_t>();
    }
    if (const json* x = Field(*strata, "sync")) {
      if (!x->is_boolean()) return Status::InvalidArgument("strata.sync must be true or false");
      opts->sync = opts->sync && x->get<bool>();
    }
    if (const json* ps = Field(*strata, "payload_schema")) {
      if (!ps->is_object())
        return Status::InvalidArgument("strata.payload_schema maps field names to types");
      for (auto it = ps->begin(); it != ps->end(); ++it) {
        if (!it.value().is_string())
          return Status::InvalidArgument(
              "strata.payload_schema types are strings, as \"keyword[]\"");
        std::string t = it.value().get<std::string>();
        vector::PayloadFieldSchema f;
        f.name = it.key();
        if (t.size() > 2 && t.substr(t.size() - 2) == "[]") {
          f.is_list = true;
          t.resize(t.size() - 2);
        }
        auto pt = vector::ParsePayloadType(t);
        if (!pt) return pt.error();
        f.type = *pt;
        schema->payload.push_back(std::move(f));
      }
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("strata: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

Result<json> CreateCollection(CollectionManager& mgr, const std::string& name, const json& b) {
  vector::CollectionSchema schema;
  vector::CollectionOptions opts = mgr.defaults();
  const json* sparse = Field(b, "sparse_vectors");
  if (sparse != nullptr) STRATA_RETURN_IF_ERROR(SparseFieldsFromJson(*sparse, &schema));
  static const json kNoVectors = json::object();
  const json* vectors = Field(b, "vectors");
  if (vectors == nullptr && !schema.sparse.empty()) vectors = &kNoVectors;
  if (vectors == nullptr || !vectors->is_object()) {
    return Status::InvalidArgument(
        "the body needs \"vectors\": {\"size\": N, \"distance\": \"Cosine\"} or named vectors "
        "(or \"sparse_vectors\")");
  }
  STRATA_ASSIGN_OR_RETURN(json strata_all, MergeStrataExtension(b, *vectors));
  if (!vectors->empty() || schema.sparse.empty())
    STRATA_RETURN_IF_ERROR(VectorFieldsFromJson(b, *vectors, &schema));
  for (const auto& sf : schema.sparse) {
    for (const auto& df : schema.vectors) {
      if (df.name == sf.name)
        return Status::InvalidArgument(
            fmt::format("\"{}\" names both a dense and a sparse vector", sf.name));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckStrataKeys(strata_all));
  // Qdrant's keys first: the "strata" extension, more precise, overrides them.
  // Sparse-only collections size segments as if by 1-d vectors.
  const uint32_t dim0 = schema.vectors.empty() ? 1 : schema.vectors[0].index.dim;
  if (const json* h = Field(b, "hnsw_config"))
    STRATA_RETURN_IF_ERROR(HnswOptionsPart(*h, dim0, &opts));
  if (const json* oc = Field(b, "optimizers_config")) {
    STRATA_RETURN_IF_ERROR(OptimizersPart(*oc, dim0, &opts));
  }
  if (!strata_all.empty()) STRATA_RETURN_IF_ERROR(ApplyStrataOptions(&strata_all, &opts, &schema));
  auto c = mgr.Create(name, schema, opts);
  if (!c) {
    if (c.error().code() == StatusCode::kAlreadyExists) {
      return Status::AlreadyExists(fmt::format("Collection `{}` already exists!", name));
    }
    return c.error();
  }
  kLog.Info("created collection {} ({} dense and {} sparse vector field(s))", name,
            schema.vectors.size(), schema.sparse.size());
  return json(true);
}

namespace {

// PATCH's "vectors": {name: {hnsw_config, quantization_config, on_disk}}
// ("" names the unnamed vector).
Status PatchVectors(const json& vs, std::vector<vector::VectorFieldSchema>* fields) {
  if (!vs.is_object()) return Status::InvalidArgument("\"vectors\" must be an object");
  for (auto it = vs.begin(); it != vs.end(); ++it) {
    auto f = std::find_if(fields->begin(), fields->end(),
                          [&](const vector::VectorFieldSchema& x) { return x.name == it.key(); });
    if (f == fields->end())
      return Status::InvalidArgument(
          fmt::format("the collection has no vector named \"{}\"", it.key()));
    if (!it.value().is_object())
      return Status::InvalidArgument(fmt::format("vectors.\"{}\" must be an object", it.key()));
    for (auto jt = it.value().begin(); jt != it.value().end(); ++jt) {
      if (jt.key() == "hnsw_config") {
        STRATA_RETURN_IF_ERROR(HnswIndexPart(jt.value(), /*collection_level=*/false, &f->index));
      } else if (jt.key() == "quantization_config") {
        STRATA_RETURN_IF_ERROR(QuantizationPart(jt.value(), &f->index));
      } else if (jt.key() == "on_disk") {
        if (!jt.value().is_boolean() || jt.value().get<bool>())
          return Unsupported("vectors.on_disk=true", "vectors are served from RAM");
      } else {
        return Unsupported("vectors." + jt.key(),
                           "a vector takes hnsw_config, quantization_config and on_disk=false");
      }
    }
  }
  return Status::Ok();
}

// PATCH's "params": only the values a single-node collection has.
Status PatchParams(const json& p) {
  if (!p.is_object()) return Status::InvalidArgument("\"params\" must be an object");
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (v.is_null()) continue;
    if (k == "on_disk_payload" && v.is_boolean() && !v.get<bool>()) continue;
    if ((k == "replication_factor" || k == "write_consistency_factor" ||
         k == "read_fan_out_factor") &&
        v.is_number_unsigned() && v.get<uint64_t>() <= 1)
      continue;
    return Unsupported(fmt::format("params.{}={}", k, v.dump()),
                       "a collection has one replica and keeps payloads in RAM");
  }
  return Status::Ok();
}

}  // namespace

Result<json> UpdateCollection(Collection& c, const json& b) {
  vector::CollectionInfo info = c.Info();
  std::vector<vector::VectorFieldSchema> fields = info.schema.vectors;
  vector::CollectionOptions opts = info.options;
  const uint32_t dim0 = fields.empty() ? 1 : fields[0].index.dim;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (v.is_null()) continue;
    if (k == "vectors") {
      STRATA_RETURN_IF_ERROR(PatchVectors(v, &fields));
    } else if (k == "hnsw_config") {
      for (auto& f : fields)
        STRATA_RETURN_IF_ERROR(HnswIndexPart(v, /*collection_level=*/true, &f.index));
      STRATA_RETURN_IF_ERROR(HnswOptionsPart(v, dim0, &opts));
    } else if (k == "quantization_config") {
      for (auto& f : fields) STRATA_RETURN_IF_ERROR(QuantizationPart(v, &f.index));
    } else if (k == "optimizers_config") {
      STRATA_RETURN_IF_ERROR(OptimizersPart(v, dim0, &opts));
    } else if (k == "params") {
      STRATA_RETURN_IF_ERROR(PatchParams(v));
    } else if (k == "sparse_vectors" && v.is_object() && v.empty()) {
      continue;
    } else {
      return Unsupported(fmt::format("updating \"{}\"", k),
                         "PATCH changes vectors, hnsw_config, quantization_config, "
                         "optimizers_config and params");
    }
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& was = info.schema.vectors[i].index;
    const auto& now = fields[i].index;
    if (now.type != vector::IndexType::kHnsw &&
        (now.hnsw_m != was.hnsw_m || now.hnsw_ef_construction != was.hnsw_ef_construction)) {
      return Status::InvalidArgument(
          fmt::format("vector \"{}\" has a {} index: hnsw_config does not apply to it",
                      fields[i].name, vector::IndexTypeName(now.type)));
    }
    STRATA_RETURN_IF_ERROR(CheckIndexKnobs(fields[i]));
  }
  STRATA_RETURN_IF_ERROR(c.Reconfigure(opts, fields));
  kLog.Info("updated collection {}", c.name());
  return json(true);
}

json CollectionInfoJson(const Collection& c) {
  auto info = c.Info();
  json vectors;
  const auto& s = info.schema;
  auto vec_json = [&](const vector::VectorFieldSchema& f) {
    json v{{"size", f.index.dim}, {"distance", DistanceName(f.index.metric)}};
    if (f.index.type == vector::IndexType::kHnsw) {
      v["hnsw_config"] = {{"m", f.index.hnsw_m}, {"ef_construct", f.index.hnsw_ef_construction}};
    }
    if (f.index.hnsw_sq8) v["quantization_config"] = {{"scalar", {{"type", "int8"}}}};
    v["on_disk"] = false;
    return v;
  };
  if (s.vectors.size() == 1 && s.vectors[0].name.empty()) {
    vectors = vec_json(s.vectors[0]);
  } else {
    vectors = json::object();
    for (const auto& f : s.vectors) vectors[f.name] = vec_json(f);
  }
  json sparse = json::object();
  for (const auto& f : s.sparse) {
    json sv{{"index", {{"on_disk", false}, {"datatype", "float32"}}}};
    if (f.modifier == vector::SparseModifier::kIdf) sv["modifier"] = "idf";
    sparse[f.name] = std::move(sv);
  }
  vector::IndexParams no_dense;  // the defaults, for a sparse-only collection
  no_dense.dim = 1;
  const auto& idx0 = s.vectors.empty() ? no_dense : s.vectors[0].index;
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
                  {"sparse_vectors", sparse},
                  {"shard_number", 1},
                  {"replication_factor", 1},
                  {"write_consistency_factor", 1},
                  {"on_disk_payload", false}}},
                {"hnsw_config",
                 {{"m", idx0.hnsw_m},
                  {"ef_construct", idx0.hnsw_ef_construction},
                  {"full_scan_threshold", RowsToKb(info.options.exact_max_rows, idx0.dim)},
                  {"max_indexing_threads", info.options.index_threads},
                  {"on_disk", false}}},
                {"optimizer_config",
                 {{"deleted_threshold", info.options.compact_deleted_ratio},
                  {"vacuum_min_vector_number", 0},
                  {"default_segment_number", 0},
                  {"max_segment_size", RowsToKb(info.options.merge_max_rows, idx0.dim)},
                  {"memmap_threshold", nullptr},
                  {"indexing_threshold", RowsToKb(info.options.segment_rows, idx0.dim)},
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
                  {"index_threads", info.options.index_threads},
                  {"search_threads", info.options.search_threads},
                  {"sync", info.options.sync},
                  {"memory_bytes", info.memory_bytes},
                  {"disk_bytes", info.disk_bytes},
                  {"pending_tasks", info.pending_tasks}}}}},
              {"payload_schema", payload_schema}};
}

Result<json> CreateIndex(Collection& c, const json& b) {
  const json* name = Field(b, "field_name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
    return Status::InvalidArgument("create index needs \"field_name\"");
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
    return Status::InvalidArgument(
        "create index needs \"field_schema\": \"keyword\" | \"integer\" | \"float\" | \"bool\" | "
        "\"datetime\"");
  }
  if (type == "geo") return Status::InvalidArgument("geo payload indexes are not supported");
  auto pt = vector::ParsePayloadType(type);
  if (!pt) return pt.error();
  Status st = c.CreatePayloadIndex(name->get<std::string>(), *pt);
  if (!st.ok()) return st;
  return UpdateResult(c.Info().last_operation, true);
}

Result<json> UpdateAliases(CollectionManager& mgr, const json& b) {
  const json* actions = Field(b, "actions");
  if (actions == nullptr || !actions->is_array())
    return Status::InvalidArgument("update aliases needs \"actions\": [...]");
  using K = vector::AliasAction::Kind;
  std::vector<vector::AliasAction> list;
  auto str = [](const json& o, const char* k, std::string* out) -> Status {
    const json* v = Field(o, k);
    if (v == nullptr || !v->is_string())
      return Status::InvalidArgument(fmt::format("alias action needs \"{}\": \"...\"", k));
    *out = v->get<std::string>();
    return Status::Ok();
  };
  for (const auto& a : *actions) {
    if (!a.is_object() || a.size() != 1 || !a.begin().value().is_object())
      return Status::InvalidArgument(
          "each alias action is {\"create_alias\" | \"delete_alias\" | \"rename_alias\": {...}}");
    const std::string& kind = a.begin().key();
    const json& o = a.begin().value();
    vector::AliasAction x;
    if (kind == "create_alias") {
      x.kind = K::kCreate;
      STRATA_RETURN_IF_ERROR(str(o, "collection_name", &x.collection));
      STRATA_RETURN_IF_ERROR(str(o, "alias_name", &x.alias));
    } else if (kind == "delete_alias") {
      x.kind = K::kDelete;
      STRATA_RETURN_IF_ERROR(str(o, "alias_name", &x.alias));
    } else if (kind == "rename_alias") {
      x.kind = K::kRename;
      STRATA_RETURN_IF_ERROR(str(o, "old_alias_name", &x.alias));
      STRATA_RETURN_IF_ERROR(str(o, "new_alias_name", &x.new_alias));
    } else {
      return Status::InvalidArgument(fmt::format("unknown alias action \"{}\"", kind));
    }
    list.push_back(std::move(x));
  }
  STRATA_RETURN_IF_ERROR(mgr.UpdateAliases(list));
  return json(true);
}

json AliasesJson(const CollectionManager& mgr, const std::string& collection) {
  json out = json::array();
  for (const auto& [a, c] : mgr.Aliases()) {
    if (collection.empty() || c == collection)
      out.push_back({{"alias_name", a}, {"collection_name", c}});
  }
  return json{{"aliases", out}};
}

json SnapshotJson(const CollectionManager& mgr, const std::string& coll, const std::string& snap) {
  std::error_code ec;
  const std::string dir = mgr.root() + "/.snapshots/" + coll + "/" + snap;
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

}  // namespace strata::qdrant
