// What the Milvus frontend keeps about a collection beyond what the vector
// engine stores: the Milvus schema (field ids, data types, the primary key,
// auto_id, max_length, the dynamic field), the indexes created through
// CreateIndex and the load state. Kept as milvus.json beside the collection's
// own files, so it is dropped, renamed and snapshotted with it.
//
// The mapping onto the engine (docs/vector.md, "Milvus"):
//   - each FLOAT_VECTOR field is a named vector of the engine collection;
//   - every scalar field, the primary key included, is a payload key; BOOL,
//     INT*, FLOAT/DOUBLE and short VARCHARs are typed payload fields (validated
//     and indexed), JSON fields are nested objects, and the dynamic field's keys
//     are top-level payload keys (so `color == "red"` filters them directly);
//   - the point id is the INT64 primary key (two's complement as uint64), or a
//     64-bit hash of a VARCHAR primary key (the string itself is the payload
//     key, so filters and results use the real value).
//
// Plain values, no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/result.h>
#include <strata/vector/filter.h>
#include <strata/vector/schema.h>

namespace strata::milvus {

// Milvus's DataType numbers (schema.proto).
enum class DataType : int32_t {
  kNone = 0,
  kBool = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat = 10,
  kDouble = 11,
  kString = 20,
  kVarChar = 21,
  kArray = 22,
  kJson = 23,
  kBinaryVector = 100,
  kFloatVector = 101,
  kFloat16Vector = 102,
  kBFloat16Vector = 103,
  kSparseFloatVector = 104,
  kInt8Vector = 105,
};
std::string DataTypeName(DataType t);  // "Int64", "FloatVector", ... ("DataType(7)" if unknown)
bool IsIntegerType(DataType t);
// FLOAT_VECTOR, FLOAT16_VECTOR, BFLOAT16_VECTOR: stored as float32 vectors
// (the half-precision ones converted on ingest and back on output).
inline bool IsFloatVectorType(DataType t) {
  return t == DataType::kFloatVector || t == DataType::kFloat16Vector ||
         t == DataType::kBFloat16Vector;
}
// Every vector type Strata serves: the float ones, SPARSE_FLOAT_VECTOR (a
// sparse field of the engine, searched through its inverted index) and
// BINARY_VECTOR (dim bits, stored as a dense engine vector of dim 0/1
// components, so that squared L2 is the Hamming distance).
inline bool IsVectorType(DataType t) {
  return IsFloatVectorType(t) || t == DataType::kSparseFloatVector || t == DataType::kBinaryVector;
}

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct FieldMeta {
  int64_t id = 0;  // Milvus field ids start at 100
  std::string name;
  std::string description;
  DataType type = DataType::kNone;
  bool primary = false;
  bool auto_id = false;
  bool nullable = false;
  bool dynamic = false;     // the "$meta" field that holds the dynamic keys
  uint32_t dim = 0;         // FLOAT_VECTOR, FLOAT16_VECTOR, BFLOAT16_VECTOR; BINARY_VECTOR: bits
  uint32_t max_length = 0;  // VARCHAR (and VARCHAR elements of an ARRAY)
  DataType element_type = DataType::kNone;  // ARRAY
  uint32_t max_capacity = 0;                // ARRAY: most elements per row
  KeyValues type_params;    // as given, answered back by DescribeCollection
  // default_value as JSON text ("" = none): written for rows that omit the
  // field or send it as null.
  std::string default_json;
};

struct IndexMeta {
  std::string field;
  std::string name;        // the index name (default: the field name)
  std::string index_type;  // upper case, as given ("HNSW", "AUTOINDEX", ...)
  std::string metric;      // "L2", "IP", "COSINE"; "IP" (sparse); "HAMMING", "JACCARD" (binary)
  KeyValues params;        // the index parameters (M, efConstruction, nlist, ...)
  int64_t id = 0;
};

// A partition: rows carry its name in the hidden payload key kPartitionKey,
// and search, query and delete restrict to it with a filter conjunction.
struct PartitionMeta {
  std::string name;
  int64_t id = 0;
  uint64_t created_ts = 0;
  bool loaded = false;
};

inline constexpr std::string_view kDefaultPartition = "_default";
// A payload key no Milvus field name can spell ('$' is not allowed in names;
// dynamic keys starting with '$' are refused on insert).
inline constexpr std::string_view kPartitionKey = "$partition";

struct CollectionMeta {
  int64_t id = 0;
  std::string description;
  bool enable_dynamic = false;
  int32_t shards = 1;
  int32_t consistency_level = 2;  // Bounded, Milvus's default
  uint64_t created_ts = 0;        // Milvus hybrid timestamp (ms << 18)
  std::vector<FieldMeta> fields;
  std::vector<IndexMeta> indexes;
  bool loaded = false;  // some partition is loaded (kept equal to any(partitions.loaded))
  KeyValues properties;
  std::vector<PartitionMeta> partitions;  // "_default" first, always present

  const FieldMeta* Primary() const;
  const FieldMeta* Field(std::string_view name) const;
  const IndexMeta* IndexOf(std::string_view field) const;
  std::vector<const FieldMeta*> VectorFields() const;  // every IsVectorType field
  const PartitionMeta* Partition(std::string_view name) const;
  PartitionMeta* MutablePartition(std::string_view name);
  // Sets every partition's load state (LoadCollection / ReleaseCollection).
  void SetLoaded(bool on);
  void SyncLoaded();  // loaded = any partition loaded
};

// Checks a schema the frontend can serve: exactly one INT64 or VARCHAR
// primary key, at least one vector field (float ones dim 1..32768, BINARY
// a multiple of 8 up to 32768, SPARSE without dim), VARCHAR with
// 1..65535 max_length, supported scalar types; assigns field ids (100, 101,
// ...) where none were given. Unsupported types are kNotSupported naming the
// field and type.
Status ValidateMeta(CollectionMeta* meta);

std::string MetaToJson(const CollectionMeta& m);
Result<CollectionMeta> MetaFromJson(std::string_view text);

// The engine schema: one vector per float or binary vector field (with its
// index, or FLAT/L2, which keeps vectors as given, before CreateIndex), one
// sparse field per SPARSE_FLOAT_VECTOR, typed payload fields for scalars.
Result<vector::CollectionSchema> ToVectorSchema(const CollectionMeta& m);

// The engine index for a Milvus index type and its parameters (upper-case
// type; params from CreateIndex: M, efConstruction, nlist, m, nbits). Unknown
// types, unknown metrics and unknown parameter names are kInvalidArgument.
Result<vector::IndexParams> ToIndexParams(const IndexMeta& idx, uint32_t dim);
// The same for a field of type `type`: binary fields take BIN_FLAT (exact)
// and BIN_IVF_FLAT (HAMMING only) with metrics HAMMING and JACCARD, mapped to
// FLAT / IVF_FLAT with L2 over the 0/1 components. Sparse fields take
// SPARSE_INVERTED_INDEX, SPARSE_WAND (and AUTOINDEX) with metric IP; their
// index is the engine's inverted index whatever the type (every algorithm
// Milvus offers is exact without drop_ratio_build), so the result has
// type kFlat and is not used.
Result<vector::IndexParams> ToFieldIndexParams(const IndexMeta& idx, const FieldMeta& f);

// The point id of a primary key value.
vector::PointId IdOfInt(int64_t pk);
vector::PointId IdOfString(std::string_view pk);
int64_t IntOfId(const vector::PointId& id);

// Milvus-style hybrid timestamp for "now": physical ms << 18.
uint64_t HybridNow();

}  // namespace strata::milvus
