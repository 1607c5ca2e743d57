// Collection config: the schema and options as JSON (config.json), their
// validation, and the payload type names.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/file_util.h>
#include <strata/vector/collection.h>
#include <strata/vector/schema.h>

#include "vector/collection_internal.h"

namespace strata::vector {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

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

}  // namespace

namespace internal {

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

Status ValidateSchema(const CollectionSchema& s) {
  if (s.vectors.empty() && s.sparse.empty())
    return Status::InvalidArgument("a collection needs at least one dense or sparse vector field");
  if (s.sparse.size() >= internal::kSparseFieldBit || s.vectors.size() >= internal::kSparseFieldBit)
    return Status::InvalidArgument("too many vector fields");
  std::set<std::string> names;
  for (const auto& v : s.sparse) {
    if (v.name.empty()) return Status::InvalidArgument("a sparse vector field needs a name");
    if (!names.insert(v.name).second) {
      return Status::InvalidArgument(fmt::format("vector field \"{}\" is declared twice", v.name));
    }
  }
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

}  // namespace internal

using internal::OptionsFromJson;
using internal::ValidateSchema;

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
// Collection::Impl: config.json

// mu_ held (any mode).
Status Collection::Impl::WriteConfig() const {
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
  json sparse = json::array();
  for (const auto& v : schema.sparse) {
    sparse.push_back(
        {{"name", v.name}, {"modifier", v.modifier == SparseModifier::kIdf ? "idf" : "none"}});
  }
  j["sparse_vectors"] = sparse;
  json ps = json::array();
  for (const auto& p : schema.payload) ps.push_back(PayloadFieldToJson(p));
  j["payload_schema"] = ps;
  json xs = json::array();
  for (const auto& p : extra_indexes) xs.push_back(PayloadFieldToJson(p));
  j["payload_indexes"] = xs;
  j["options"] = OptionsToJson(opts);
  config_version.fetch_add(1);
  return WriteFileAtomic(dir + "/config.json", j.dump(2));
}

Status Collection::Impl::LoadConfig(const std::optional<CollectionOptions>& options) {
  std::ifstream cin(dir + "/config.json");
  if (!cin) return Status::NotFound(fmt::format("{} is not a collection (no config.json)", dir));
  json cfg = json::parse(cin, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object())
    return Status::Corruption(fmt::format("{}/config.json is not valid JSON", dir));
  name = cfg.value("name", fs::path(dir).filename().string());
  if (!cfg.contains("vectors") || !cfg["vectors"].is_array()) {
    return Status::Corruption(fmt::format("{}/config.json has no vectors", dir));
  }
  for (const auto& v : cfg["vectors"]) {
    VectorFieldSchema f;
    f.name = v.value("name", "");
    STRATA_ASSIGN_OR_RETURN(f.index, IndexParamsFromJson(v));
    schema.vectors.push_back(std::move(f));
  }
  if (cfg.contains("sparse_vectors") && cfg["sparse_vectors"].is_array()) {
    for (const auto& v : cfg["sparse_vectors"]) {
      SparseFieldSchema f;
      f.name = v.value("name", "");
      f.modifier =
          v.value("modifier", "none") == "idf" ? SparseModifier::kIdf : SparseModifier::kNone;
      schema.sparse.push_back(std::move(f));
    }
  }
  if (cfg.contains("payload_schema")) {
    for (const auto& p : cfg["payload_schema"]) {
      STRATA_ASSIGN_OR_RETURN(auto f, PayloadFieldFromJson(p));
      schema.payload.push_back(std::move(f));
    }
  }
  if (cfg.contains("payload_indexes")) {
    for (const auto& p : cfg["payload_indexes"]) {
      STRATA_ASSIGN_OR_RETURN(auto f, PayloadFieldFromJson(p));
      extra_indexes.push_back(std::move(f));
    }
  }
  opts = options ? *options
                 : OptionsFromJson(cfg.value("options", json::object()), CollectionOptions{});
  return ValidateSchema(schema);
}

}  // namespace strata::vector
