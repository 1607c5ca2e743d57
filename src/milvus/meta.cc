// The Milvus schema kept beside a collection: validation, milvus.json, and
// the mapping onto the engine's schema and index parameters (meta.h).
#include "milvus/meta.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::milvus {

using json = nlohmann::json;

namespace {

// VARCHAR fields longer than this are stored but not given a keyword payload
// index: long texts are rarely filtered on by equality, and a bitmap per
// distinct value would cost more than it saves.
constexpr uint32_t kIndexedVarcharMax = 1024;
constexpr uint32_t kMaxDim = 32768;

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

json KvToJson(const KeyValues& kv) {
  json a = json::array();
  for (const auto& [k, v] : kv) a.push_back(json::array({k, v}));
  return a;
}

KeyValues KvFromJson(const json& j) {
  KeyValues out;
  if (!j.is_array()) return out;
  for (const auto& p : j) {
    if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string())
      out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  }
  return out;
}

Result<uint32_t> ParseUint(std::string_view what, std::string_view v, uint32_t lo, uint32_t hi) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < lo || x > hi) {
    return Status::InvalidArgument(
        fmt::format("{} must be an integer in [{}, {}], got \"{}\"", what, lo, hi, v));
  }
  return static_cast<uint32_t>(x);
}

// Milvus's rules for default_value: scalar, non-key fields, of the field's
// type and range.
Status ValidateDefault(const FieldMeta& f) {
  if (f.primary || f.type == DataType::kJson || f.type == DataType::kArray ||
      IsVectorType(f.type)) {
    return Status::InvalidArgument(fmt::format("default value is not supported for field {} ({}{})",
                                               f.name, DataTypeName(f.type),
                                               f.primary ? ", the primary key" : ""));
  }
  json v = json::parse(f.default_json, nullptr, false);
  bool ok = false;
  switch (f.type) {
    case DataType::kBool:
      ok = v.is_boolean();
      break;
    case DataType::kInt8:
      ok = v.is_number_integer() && v.get<int64_t>() >= -128 && v.get<int64_t>() <= 127;
      break;
    case DataType::kInt16:
      ok = v.is_number_integer() && v.get<int64_t>() >= -32768 && v.get<int64_t>() <= 32767;
      break;
    case DataType::kInt32:
      ok = v.is_number_integer() && v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
      break;
    case DataType::kInt64:
      ok = v.is_number_integer();
      break;
    case DataType::kFloat:
    case DataType::kDouble:
      ok = v.is_number();
      break;
    case DataType::kVarChar:
      ok = v.is_string() && v.get<std::string>().size() <= f.max_length;
      break;
    default:
      break;
  }
  if (!ok) {
    return Status::InvalidArgument(fmt::format(
        "the default value {} of field {} does not fit its type {}{}", f.default_json, f.name,
        DataTypeName(f.type), f.type == DataType::kVarChar ? " and max_length" : ""));
  }
  return Status::Ok();
}

// ARRAY: a scalar element type (not JSON or ARRAY), max_capacity in
// [1, 4096], max_length for VARCHAR elements.
Status ValidateArray(const FieldMeta& f) {
  const DataType e = f.element_type;
  if (e != DataType::kBool && !IsIntegerType(e) && e != DataType::kFloat &&
      e != DataType::kDouble && e != DataType::kVarChar) {
    return Status::InvalidArgument(fmt::format(
        "element type {} of array field {} is not supported (Bool, Int8-64, Float, Double, "
        "VarChar)",
        DataTypeName(e), f.name));
  }
  if (f.max_capacity == 0 || f.max_capacity > 4096) {
    return Status::InvalidArgument(fmt::format(
        "type param(max_capacity) of array field {} should be in range [1, 4096]", f.name));
  }
  if (e == DataType::kVarChar && (f.max_length == 0 || f.max_length > 65535)) {
    return Status::InvalidArgument(fmt::format(
        "type param(max_length) of array field {} (VarChar elements) should be in (0, 65535]",
        f.name));
  }
  if (f.primary) return Status::InvalidArgument("an array field cannot be the primary key");
  return Status::Ok();
}

Status ValidateField(FieldMeta& f) {
  if (f.name.empty()) return Status::InvalidArgument("a field has no name");
  switch (f.type) {
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kJson:
      break;
    case DataType::kArray:
      STRATA_RETURN_IF_ERROR(ValidateArray(f));
      break;
    case DataType::kVarChar:
      if (f.max_length == 0) {
        return Status::InvalidArgument(
            fmt::format("type param(max_length) should be specified for the field({})", f.name));
      }
      if (f.max_length > 65535) {
        return Status::InvalidArgument(fmt::format(
            "the maximum length specified for the field({}) should be in (0, 65535]", f.name));
      }
      break;
    case DataType::kFloatVector:
    case DataType::kFloat16Vector:
    case DataType::kBFloat16Vector:
      if (f.dim == 0 || f.dim > kMaxDim) {
        return Status::InvalidArgument(
            fmt::format("dim of the vector field({}) should be in range 1 ~ {}", f.name, kMaxDim));
      }
      if (f.nullable) {
        return Status::NotSupported(
            fmt::format("vector field({}) cannot be nullable in Strata", f.name));
      }
      break;
    case DataType::kBinaryVector:
      if (f.dim == 0 || f.dim > kMaxDim || f.dim % 8 != 0) {
        return Status::InvalidArgument(fmt::format(
            "dim of the binary vector field({}) should be a multiple of 8 in range 8 ~ {}, got {}",
            f.name, kMaxDim, f.dim));
      }
      if (f.nullable) {
        return Status::NotSupported(
            fmt::format("vector field({}) cannot be nullable in Strata", f.name));
      }
      break;
    case DataType::kSparseFloatVector:
      if (f.dim != 0) {
        return Status::InvalidArgument(
            fmt::format("dim should not be specified for the sparse vector field({})", f.name));
      }
      if (f.nullable) {
        return Status::NotSupported(
            fmt::format("vector field({}) cannot be nullable in Strata", f.name));
      }
      break;
    default:
      return Status::NotSupported(fmt::format(
          "field \"{}\": data type {} is not supported by Strata's Milvus API (supported: Bool, "
          "Int8, Int16, Int32, Int64, Float, Double, VarChar, JSON, Array, FloatVector, "
          "Float16Vector, BFloat16Vector, BinaryVector, SparseFloatVector)",
          f.name, DataTypeName(f.type)));
  }
  if (f.primary && f.type != DataType::kInt64 && f.type != DataType::kVarChar) {
    return Status::InvalidArgument(
        fmt::format("the data type of primary key should be Int64 or VarChar, field \"{}\" is {}",
                    f.name, DataTypeName(f.type)));
  }
  if (f.auto_id && !f.primary) {
    return Status::InvalidArgument(
        fmt::format("auto_id can only be set on the primary key, not on \"{}\"", f.name));
  }
  if (f.auto_id && f.type != DataType::kInt64) {
    return Status::NotSupported(
        fmt::format("auto_id on a {} primary key (\"{}\") is not supported: use Int64",
                    DataTypeName(f.type), f.name));
  }
  if (!f.default_json.empty()) STRATA_RETURN_IF_ERROR(ValidateDefault(f));
  if (f.primary && f.nullable) {
    return Status::InvalidArgument(fmt::format("primary field({}) cannot be nullable", f.name));
  }
  return Status::Ok();
}

}  // namespace

std::string DataTypeName(DataType t) {
  switch (t) {
    case DataType::kNone:
      return "None";
    case DataType::kBool:
      return "Bool";
    case DataType::kInt8:
      return "Int8";
    case DataType::kInt16:
      return "Int16";
    case DataType::kInt32:
      return "Int32";
    case DataType::kInt64:
      return "Int64";
    case DataType::kFloat:
      return "Float";
    case DataType::kDouble:
      return "Double";
    case DataType::kString:
      return "String";
    case DataType::kVarChar:
      return "VarChar";
    case DataType::kArray:
      return "Array";
    case DataType::kJson:
      return "JSON";
    case DataType::kBinaryVector:
      return "BinaryVector";
    case DataType::kFloatVector:
      return "FloatVector";
    case DataType::kFloat16Vector:
      return "Float16Vector";
    case DataType::kBFloat16Vector:
      return "BFloat16Vector";
    case DataType::kSparseFloatVector:
      return "SparseFloatVector";
    case DataType::kInt8Vector:
      return "Int8Vector";
  }
  return fmt::format("DataType({})", static_cast<int32_t>(t));
}

bool IsIntegerType(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}

const FieldMeta* CollectionMeta::Primary() const {
  for (const auto& f : fields) {
    if (f.primary) return &f;
  }
  return nullptr;
}

const FieldMeta* CollectionMeta::Field(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const IndexMeta* CollectionMeta::IndexOf(std::string_view field) const {
  for (const auto& i : indexes) {
    if (i.field == field) return &i;
  }
  return nullptr;
}

std::vector<const FieldMeta*> CollectionMeta::VectorFields() const {
  std::vector<const FieldMeta*> out;
  for (const auto& f : fields) {
    if (IsVectorType(f.type)) out.push_back(&f);
  }
  return out;
}

Status ValidateMeta(CollectionMeta* m) {
  int primaries = 0;
  int vectors = 0;
  std::set<std::string> names;
  int64_t next_id = 100;
  for (const auto& f : m->fields) next_id = std::max(next_id, f.id + 1);
  for (auto& f : m->fields) {
    STRATA_RETURN_IF_ERROR(ValidateField(f));
    if (!names.insert(f.name).second) {
      return Status::InvalidArgument(fmt::format("duplicated field name {} found", f.name));
    }
    if (f.name == "$meta") {
      return Status::InvalidArgument("\"$meta\" is reserved for the dynamic field");
    }
    if (f.id < 100) f.id = next_id++;
    primaries += f.primary ? 1 : 0;
    vectors += IsVectorType(f.type) ? 1 : 0;
  }
  if (primaries != 1) {
    return Status::InvalidArgument(primaries == 0
                                       ? "schema does not contain primary key field"
                                       : "there are more than one primary key in the schema");
  }
  if (vectors == 0) return Status::InvalidArgument("schema does not contain vector field");
  return Status::Ok();
}

const PartitionMeta* CollectionMeta::Partition(std::string_view name) const {
  for (const auto& p : partitions) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

PartitionMeta* CollectionMeta::MutablePartition(std::string_view name) {
  for (auto& p : partitions) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

void CollectionMeta::SetLoaded(bool on) {
  for (auto& p : partitions) p.loaded = on;
  loaded = on;
}

void CollectionMeta::SyncLoaded() {
  loaded = false;
  for (const auto& p : partitions) loaded |= p.loaded;
}

namespace {
void EnsureDefaultPartition(CollectionMeta* m) {
  if (m->Partition(kDefaultPartition) != nullptr) return;
  PartitionMeta p;
  p.name = std::string(kDefaultPartition);
  p.id = m->id + 1;
  p.created_ts = m->created_ts;
  p.loaded = m->loaded;
  m->partitions.insert(m->partitions.begin(), std::move(p));
}
}  // namespace

std::string MetaToJson(const CollectionMeta& m) {
  json j;
  j["format"] = 1;
  j["id"] = m.id;
  j["description"] = m.description;
  j["enable_dynamic"] = m.enable_dynamic;
  j["shards"] = m.shards;
  j["consistency_level"] = m.consistency_level;
  j["created_ts"] = m.created_ts;
  j["loaded"] = m.loaded;
  j["properties"] = KvToJson(m.properties);
  json fs = json::array();
  for (const auto& f : m.fields) {
    fs.push_back({{"id", f.id},
                  {"name", f.name},
                  {"description", f.description},
                  {"type", static_cast<int32_t>(f.type)},
                  {"primary", f.primary},
                  {"auto_id", f.auto_id},
                  {"nullable", f.nullable},
                  {"dim", f.dim},
                  {"max_length", f.max_length},
                  {"element_type", static_cast<int32_t>(f.element_type)},
                  {"max_capacity", f.max_capacity},
                  {"type_params", KvToJson(f.type_params)}});
    if (!f.default_json.empty()) fs.back()["default"] = f.default_json;
  }
  j["fields"] = fs;
  json is = json::array();
  for (const auto& i : m.indexes) {
    is.push_back({{"field", i.field},
                  {"name", i.name},
                  {"index_type", i.index_type},
                  {"metric", i.metric},
                  {"params", KvToJson(i.params)},
                  {"id", i.id}});
  }
  j["indexes"] = is;
  json ps = json::array();
  for (const auto& p : m.partitions) {
    ps.push_back(
        {{"name", p.name}, {"id", p.id}, {"created_ts", p.created_ts}, {"loaded", p.loaded}});
  }
  j["partitions"] = ps;
  return j.dump(2);
}

Result<CollectionMeta> MetaFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j["fields"].is_array())
    return Status::Corruption("milvus.json is not a Milvus collection description");
  CollectionMeta m;
  m.id = j.value("id", int64_t{0});
  m.description = j.value("description", "");
  m.enable_dynamic = j.value("enable_dynamic", false);
  m.shards = j.value("shards", 1);
  m.consistency_level = j.value("consistency_level", 2);
  m.created_ts = j.value("created_ts", uint64_t{0});
  m.loaded = j.value("loaded", false);
  m.properties = KvFromJson(j.value("properties", json::array()));
  for (const auto& f : j["fields"]) {
    FieldMeta x;
    x.id = f.value("id", int64_t{0});
    x.name = f.value("name", "");
    x.description = f.value("description", "");
    x.type = static_cast<DataType>(f.value("type", 0));
    x.primary = f.value("primary", false);
    x.auto_id = f.value("auto_id", false);
    x.nullable = f.value("nullable", false);
    x.dim = f.value("dim", 0u);
    x.max_length = f.value("max_length", 0u);
    x.element_type = static_cast<DataType>(f.value("element_type", 0));
    x.max_capacity = f.value("max_capacity", 0u);
    x.type_params = KvFromJson(f.value("type_params", json::array()));
    x.default_json = f.value("default", "");
    m.fields.push_back(std::move(x));
  }
  if (j.contains("indexes") && j["indexes"].is_array()) {
    for (const auto& i : j["indexes"]) {
      IndexMeta x;
      x.field = i.value("field", "");
      x.name = i.value("name", "");
      x.index_type = i.value("index_type", "");
      x.metric = i.value("metric", "");
      x.params = KvFromJson(i.value("params", json::array()));
      x.id = i.value("id", int64_t{0});
      m.indexes.push_back(std::move(x));
    }
  }
  if (j.contains("partitions") && j["partitions"].is_array()) {
    for (const auto& p : j["partitions"]) {
      PartitionMeta x;
      x.name = p.value("name", "");
      x.id = p.value("id", int64_t{0});
      x.created_ts = p.value("created_ts", uint64_t{0});
      x.loaded = p.value("loaded", false);
      m.partitions.push_back(std::move(x));
    }
  }
  EnsureDefaultPartition(&m);
  m.SyncLoaded();
  return m;
}

Result<vector::IndexParams> ToIndexParams(const IndexMeta& idx, uint32_t dim) {
  vector::IndexParams p;
  p.dim = dim;
  const std::string metric = Upper(idx.metric.empty() ? "COSINE" : idx.metric);
  if (metric == "L2") {
    p.metric = vector::Metric::kL2;
  } else if (metric == "IP") {
    p.metric = vector::Metric::kInnerProduct;
  } else if (metric == "COSINE") {
    p.metric = vector::Metric::kCosine;
  } else {
    return Status::InvalidArgument(fmt::format(
        "metric type {} is not supported for float vectors, supported: L2, IP, COSINE", metric));
  }
  const std::string type = Upper(idx.index_type.empty() ? "AUTOINDEX" : idx.index_type);
  std::set<std::string> allowed;
  if (type == "FLAT") {
    p.type = vector::IndexType::kFlat;
  } else if (type == "IVF_FLAT") {
    p.type = vector::IndexType::kIvfFlat;
    allowed = {"nlist"};
  } else if (type == "IVF_PQ") {
    p.type = vector::IndexType::kIvfPq;
    allowed = {"nlist", "m", "nbits"};
  } else if (type == "HNSW") {
    p.type = vector::IndexType::kHnsw;
    allowed = {"M", "efConstruction"};
  } else if (type == "DISKANN") {
    p.type = vector::IndexType::kDiskAnn;
  } else if (type == "AUTOINDEX") {
    // Milvus picks the index for AUTOINDEX; Strata's choice is HNSW at its defaults.
    p.type = vector::IndexType::kHnsw;
  } else {
    return Status::InvalidArgument(fmt::format(
        "invalid index type: {} (supported: FLAT, IVF_FLAT, IVF_PQ, HNSW, DISKANN, AUTOINDEX)",
        type));
  }
  for (const auto& [k, v] : idx.params) {
    if (!allowed.count(k)) {
      return Status::InvalidArgument(
          fmt::format("index parameter \"{}\" is not supported for {} index", k, type));
    }
    if (k == "M") {
      STRATA_ASSIGN_OR_RETURN(p.hnsw_m, ParseUint("M", v, 2, 2048));
    } else if (k == "efConstruction") {
      STRATA_ASSIGN_OR_RETURN(p.hnsw_ef_construction, ParseUint("efConstruction", v, 1, 1 << 20));
    } else if (k == "nlist") {
      STRATA_ASSIGN_OR_RETURN(p.ivf_nlist, ParseUint("nlist", v, 1, 65536));
    } else if (k == "m") {
      STRATA_ASSIGN_OR_RETURN(p.pq_m, ParseUint("m", v, 1, dim));
      if (dim % p.pq_m != 0) {
        return Status::InvalidArgument(fmt::format(
            "dimension must be able to be divided by `m`, dimension: {}, m: {}", dim, p.pq_m));
      }
    } else if (k == "nbits") {
      STRATA_ASSIGN_OR_RETURN(p.pq_nbits, ParseUint("nbits", v, 8, 8));
    }
  }
  return p;
}

namespace {

Status CheckParams(const IndexMeta& idx, const std::string& type,
                   const std::set<std::string>& allowed) {
  for (const auto& [k, v] : idx.params) {
    if (!allowed.count(k)) {
      return Status::InvalidArgument(
          fmt::format("index parameter \"{}\" is not supported for {} index", k, type));
    }
  }
  return Status::Ok();
}

// SPARSE_INVERTED_INDEX / SPARSE_WAND: the engine's exact inverted index.
Status CheckSparseIndex(const IndexMeta& idx, const FieldMeta& f) {
  const std::string type = Upper(idx.index_type.empty() ? "AUTOINDEX" : idx.index_type);
  if (type != "SPARSE_INVERTED_INDEX" && type != "SPARSE_WAND" && type != "AUTOINDEX") {
    return Status::InvalidArgument(fmt::format(
        "invalid index type {} for sparse vector field {} (supported: SPARSE_INVERTED_INDEX, "
        "SPARSE_WAND, AUTOINDEX)",
        type, f.name));
  }
  const std::string metric = Upper(idx.metric.empty() ? "IP" : idx.metric);
  if (metric == "BM25") {
    return Status::NotSupported(fmt::format(
        "metric BM25 on field {} needs a BM25 function, which Strata does not support: use IP",
        f.name));
  }
  if (metric != "IP") {
    return Status::InvalidArgument(fmt::format(
        "metric type {} is not supported for sparse float vectors, supported: IP", metric));
  }
  STRATA_RETURN_IF_ERROR(CheckParams(idx, type, {"drop_ratio_build", "inverted_index_algo"}));
  for (const auto& [k, v] : idx.params) {
    if (k == "drop_ratio_build") {
      double r = -1;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
      if (ec != std::errc() || p != v.data() + v.size() || r < 0 || r >= 1) {
        return Status::InvalidArgument(
            fmt::format("drop_ratio_build must be a number in [0, 1), got \"{}\"", v));
      }
      if (r != 0) {
        return Status::NotSupported(
            "drop_ratio_build > 0 is not supported: Strata's sparse index keeps every value "
            "(search with drop_ratio_search instead)");
      }
    } else if (v != "DAAT_MAXSCORE" && v != "DAAT_WAND" && v != "TAAT_NAIVE") {
      return Status::InvalidArgument(fmt::format(
          "inverted_index_algo must be DAAT_MAXSCORE, DAAT_WAND or TAAT_NAIVE, got \"{}\"", v));
    }
  }
  return Status::Ok();
}

// BIN_FLAT / BIN_IVF_FLAT over the 0/1 expansion: squared L2 of 0/1 vectors
// is their Hamming distance, so the engine's L2 indexes rank by HAMMING.
// JACCARD is scored exactly by the frontend (service_search.cc), so only the
// exact BIN_FLAT takes it.
Result<vector::IndexParams> BinaryIndexParams(const IndexMeta& idx, const FieldMeta& f) {
  vector::IndexParams p;
  p.dim = f.dim;
  p.metric = vector::Metric::kL2;
  const std::string metric = Upper(idx.metric.empty() ? "HAMMING" : idx.metric);
  if (metric != "HAMMING" && metric != "JACCARD") {
    return Status::InvalidArgument(fmt::format(
        "metric type {} is not supported for binary vectors, supported: HAMMING, JACCARD", metric));
  }
  const std::string type = Upper(idx.index_type.empty() ? "AUTOINDEX" : idx.index_type);
  if (type == "BIN_FLAT" || type == "AUTOINDEX") {
    p.type = vector::IndexType::kFlat;
    STRATA_RETURN_IF_ERROR(CheckParams(idx, type, {}));
  } else if (type == "BIN_IVF_FLAT") {
    if (metric == "JACCARD") {
      return Status::NotSupported(fmt::format(
          "BIN_IVF_FLAT with metric JACCARD is not supported by Strata (field {}): use BIN_FLAT "
          "for JACCARD, or BIN_IVF_FLAT with HAMMING",
          f.name));
    }
    p.type = vector::IndexType::kIvfFlat;
    STRATA_RETURN_IF_ERROR(CheckParams(idx, type, {"nlist"}));
    for (const auto& [k, v] : idx.params) {
      STRATA_ASSIGN_OR_RETURN(p.ivf_nlist, ParseUint("nlist", v, 1, 65536));
    }
  } else {
    return Status::InvalidArgument(fmt::format(
        "invalid index type {} for binary vector field {} (supported: BIN_FLAT, BIN_IVF_FLAT, "
        "AUTOINDEX)",
        type, f.name));
  }
  return p;
}

}  // namespace

Result<vector::IndexParams> ToFieldIndexParams(const IndexMeta& idx, const FieldMeta& f) {
  if (f.type == DataType::kSparseFloatVector) {
    STRATA_RETURN_IF_ERROR(CheckSparseIndex(idx, f));
    vector::IndexParams p;
    p.type = vector::IndexType::kFlat;
    return p;
  }
  if (f.type == DataType::kBinaryVector) return BinaryIndexParams(idx, f);
  return ToIndexParams(idx, f.dim);
}

Result<vector::CollectionSchema> ToVectorSchema(const CollectionMeta& m) {
  vector::CollectionSchema s;
  for (const auto& f : m.fields) {
    if (f.type == DataType::kSparseFloatVector) {
      s.sparse.push_back(vector::SparseFieldSchema{f.name, vector::SparseModifier::kNone});
      continue;
    }
    if (IsVectorType(f.type)) {
      const IndexMeta* idx = m.IndexOf(f.name);
      vector::IndexParams p;
      if (idx != nullptr) {
        STRATA_ASSIGN_OR_RETURN(p, ToFieldIndexParams(*idx, f));
      } else {
        // Before CreateIndex: exact segments, and L2 so that vectors are kept
        // as given (a COSINE index would store them normalised), whatever
        // metric the index created later asks for.
        p.type = vector::IndexType::kFlat;
        p.metric = vector::Metric::kL2;
        p.dim = f.dim;
      }
      s.vectors.push_back(vector::VectorFieldSchema{f.name, p});
      continue;
    }
    vector::PayloadFieldSchema pf;
    pf.name = f.name;
    if (f.type == DataType::kBool) {
      pf.type = vector::PayloadType::kBool;
    } else if (IsIntegerType(f.type)) {
      pf.type = vector::PayloadType::kInteger;
    } else if (f.type == DataType::kFloat || f.type == DataType::kDouble) {
      pf.type = vector::PayloadType::kFloat;
    } else if (f.type == DataType::kVarChar && f.max_length <= kIndexedVarcharMax) {
      pf.type = vector::PayloadType::kKeyword;
    } else {
      continue;  // JSON and long VARCHAR: stored, filtered by scanning
    }
    s.payload.push_back(std::move(pf));
  }
  return s;
}

vector::PointId IdOfInt(int64_t pk) { return vector::PointId::Number(static_cast<uint64_t>(pk)); }

vector::PointId IdOfString(std::string_view pk) {
  // FNV-1a, then a 64-bit finaliser (splitmix64) so that similar keys spread.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : pk) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return vector::PointId::Number(h);
}

int64_t IntOfId(const vector::PointId& id) { return static_cast<int64_t>(id.hi); }

uint64_t HybridNow() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return static_cast<uint64_t>(ms) << 18;
}

}  // namespace strata::milvus
