// Conversions between Milvus's protocol messages and the engine's values:
// schemas, column-oriented FieldData <-> rows (points with a JSON payload),
// primary keys, query vectors (PlaceholderGroup) and the key-value parameters
// of search and query. No I/O, no locks; every function is socket-free, so the
// unit tests drive them with hand-built messages.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/repeated_field.h>

#include <strata/core/result.h>
#include <strata/vector/collection.h>

#include "common.pb.h"
#include "milvus/meta.h"
#include "schema.pb.h"

namespace strata::milvus {

namespace pb = ::milvus::proto;
using FieldDataList = google::protobuf::RepeatedPtrField<pb::schema::FieldData>;
using KvList = google::protobuf::RepeatedPtrField<pb::common::KeyValuePair>;

// schema.CollectionSchema (CreateCollectionRequest.schema, serialized) to our
// description; validated (ValidateMeta).
Result<CollectionMeta> MetaFromProto(const pb::schema::CollectionSchema& s);
void MetaToProto(const CollectionMeta& m, const std::string& name, pb::schema::CollectionSchema* s);

// The rows of an Insert/Upsert. `new_id` makes the next auto_id key (only
// called when the primary key is auto_id and `insert` is true). The primary
// key values written go to *ids, in row order. All-or-nothing: any error (a
// missing or unknown field, a wrong dimension, a VARCHAR over max_length, a
// wrong type) names the field and row, and no point is returned.
struct Rows {
  std::vector<vector::Point> points;
  pb::schema::IDs ids;
};
Result<Rows> RowsFromFieldData(const CollectionMeta& m, const FieldDataList& fields,
                               uint32_t num_rows, bool insert,
                               const std::function<int64_t()>& new_id);

// The fields a search or query returns. `requested` as the SDK sends it ("*"
// = every field; names of schema fields; with a dynamic field, other names are
// dynamic keys). The primary key is added for queries (`with_primary`).
struct OutputFields {
  std::vector<const FieldMeta*> fields;  // schema fields, in request order
  std::vector<std::string> dynamic_keys;
  bool all_dynamic = false;  // "*" or "$meta": every dynamic key
  bool with_vectors = false;
  std::vector<std::string> names;  // as answered in output_fields
};
Result<OutputFields> ResolveOutputFields(const CollectionMeta& m,
                                         const google::protobuf::RepeatedPtrField<std::string>& req,
                                         bool with_primary);

// Columns of `records` for `out` (records carry payload, and vectors when
// out.with_vectors).
Status RecordsToFieldData(const CollectionMeta& m, const OutputFields& out,
                          const std::vector<const vector::Record*>& records, FieldDataList* cols);

// The primary keys of records, as IDs.
void RecordIds(const CollectionMeta& m, const std::vector<const vector::Record*>& records,
               pb::schema::IDs* ids);

// The query vectors of a SearchRequest.placeholder_group for a field of
// type `field` (FloatVector: `dim` float32 little-endian; Float16Vector /
// BFloat16Vector: `dim` IEEE half / bfloat16, converted to float32;
// BinaryVector: dim/8 bytes, unpacked to 0/1 components).
Result<std::vector<std::vector<float>>> QueryVectors(const std::string& placeholder_group,
                                                     DataType field, uint32_t dim);

// The query vectors of a search on a SPARSE_FLOAT_VECTOR field.
Result<std::vector<vector::SparseVector>> QuerySparseVectors(const std::string& placeholder_group);

// One row of Milvus's sparse format (SparseFloatArray.contents, a sparse
// placeholder value): (uint32 index, float32 value) pairs, little-endian,
// indices strictly ascending and below 2^32-1, values finite.
Result<vector::SparseVector> ParseSparseRow(const std::string& bytes);
std::string SparseRowBytes(const vector::SparseVector& sv);

// IEEE 754 half precision and bfloat16 <-> float32 (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

// search_params of a SearchRequest.
struct SearchParams {
  std::string anns_field;
  size_t topk = 10;
  size_t offset = 0;
  std::string metric;  // "" = the index's
  uint32_t ef = 0;
  uint32_t nprobe = 0;
  uint32_t search_list = 0;
  // SPARSE_FLOAT_VECTOR searches: the fraction of each query's entries with
  // the smallest |value| left out of the search, in [0, 1).
  std::optional<float> drop_ratio_search;
  int round_decimal = -1;
  // Range search, in Milvus's units (squared distance for L2): L2 keeps
  // range_filter <= d < radius, IP/COSINE radius < s <= range_filter.
  std::optional<float> radius;
  std::optional<float> range_filter;
  // Grouping: at most topk groups (after `offset` groups) of group_size hits
  // sharing the field's value; strict: only groups with group_size hits.
  std::string group_by_field;
  size_t group_size = 1;
  bool strict_group_size = false;
  // Search iterator v2 (search_iter_v2): pages of search_iter_batch_size
  // hits, each after the previous page's last score (search_iter_last_bound)
  // and the hits at that score (named by the token search_iter_id).
  bool iterator = false;
  bool iterator_v2 = false;
  size_t iter_batch_size = 0;
  std::string iter_token;
  std::optional<float> iter_last_bound;
};
Result<SearchParams> ParseSearchParams(const KvList& kv);

// query_params of a QueryRequest: limit (0 = none), offset.
struct QueryParams {
  size_t limit = 0;
  size_t offset = 0;
};
Result<QueryParams> ParseQueryParams(const KvList& kv);

// The value of key in kv, or nullopt.
std::optional<std::string> FindKv(const KvList& kv, const std::string& key);

}  // namespace strata::milvus
