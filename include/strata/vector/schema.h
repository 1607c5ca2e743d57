// The value types of the vector database: a collection's schema (vector
// fields with their index parameters, typed payload fields), its options, and
// the points and records that go in and come out (collection.h).
//
// Plain values: no ownership beyond their own members, no synchronisation
// (copy them freely; share one across threads only for reading). The
// collection internals (segments, payload indexes) use these types without
// depending on the Collection class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/vector/filter.h>
#include <strata/vector/index.h>

namespace strata::vector {

// Typed payload fields are validated on upsert and get a payload index.
enum class PayloadType : uint8_t {
  kKeyword = 0,
  kInteger = 1,
  kFloat = 2,
  kBool = 3,
  kTimestamp = 4
};
std::string_view PayloadTypeName(
    PayloadType t);  // "keyword", "integer", "float", "bool", "timestamp"
// Also accepts Qdrant's names: "datetime", "uuid" (keyword), "text" (keyword).
Result<PayloadType> ParsePayloadType(std::string_view name);

struct PayloadFieldSchema {
  std::string name;  // a payload key path ("source", "meta.lang")
  PayloadType type = PayloadType::kKeyword;
  bool is_list = false;  // values are arrays of `type` (a single value is accepted too)
};

struct VectorFieldSchema {
  std::string name;   // "" for the default (unnamed) vector, as Qdrant's single-vector config
  IndexParams index;  // dim, metric, type and parameters of the sealed segments' index
};

// A sparse vector: term ids with weights (indices unique; stored sorted by index).
struct SparseVector {
  std::vector<uint32_t> indices;
  std::vector<float> values;  // one per index
};

// Qdrant's sparse vector modifier: kIdf multiplies each query weight by the
// term's inverse document frequency over the collection's live points,
// ln(1 + (N - n + 0.5) / (n + 0.5)) (N points with the field, n with the term).
enum class SparseModifier : uint8_t { kNone = 0, kIdf = 1 };

// A sparse vector field: an inverted index (posting list per term id) per
// segment, scored by dot product.
struct SparseFieldSchema {
  std::string name;  // unique among dense and sparse fields; never ""
  SparseModifier modifier = SparseModifier::kNone;
};

struct CollectionSchema {
  // Dense fields; names unique. A collection needs at least one dense or sparse field.
  std::vector<VectorFieldSchema> vectors;
  std::vector<SparseFieldSchema> sparse;    // sparse fields
  std::vector<PayloadFieldSchema> payload;  // typed fields (the rest of a payload is kept as is)
};

struct CollectionOptions {
  // Rows in the growing segment that trigger sealing and index building. The
  // growing segment is searched exactly, so this bounds that scan.
  size_t segment_rows = 20'000;
  // fsync the WAL before wait=true writes return (false: write() only).
  bool sync = true;
  // A sealed segment whose deleted fraction exceeds this is compacted in the
  // background (0 disables automatic compaction).
  double compact_deleted_ratio = 0.2;
  // Sealed segments smaller than this many live rows are merged together in
  // the background, up to merge_max_rows per merged segment (0 disables).
  size_t merge_small_rows = 5'000;
  size_t merge_max_rows = 200'000;
  // Filtered search: a segment whose filter matches at most this fraction of
  // its live rows (or at most exact_max_rows rows) is searched exactly over the
  // matching rows; otherwise the index walks its graph with the filter.
  double exact_selectivity = 0.03;
  size_t exact_max_rows = 2'000;
  // Threads for index builds (0 = all cores) and for searching one batch
  // (0 = auto: one thread for batches under 8 queries, all cores above; N:
  // at most N threads for any batch).
  uint32_t index_threads = 0;
  uint32_t search_threads = 0;
  // false: no background thread; sealing, index builds and compaction run
  // inline in the call that triggers them (deterministic tests, tools).
  bool background = true;
};

struct NamedVector {
  std::string name;  // "" = the default vector
  std::vector<float> values;
};

struct NamedSparseVector {
  std::string name;
  SparseVector vector;
};

struct Point {
  PointId id;
  std::vector<NamedVector> vectors;
  std::string payload;  // a JSON object as text; "" = no payload
  std::vector<NamedSparseVector> sparse;
};

struct Record {
  PointId id;
  uint64_t version = 0;              // the operation (WAL sequence number) that wrote it
  std::string payload;               // JSON object text ("{}" when none); empty unless asked for
  std::vector<NamedVector> vectors;  // empty unless asked for
  std::vector<NamedSparseVector> sparse;  // empty unless vectors are asked for
};

struct ScoredPoint {
  Record record;
  // Qdrant's score: Euclidean distance for L2 (smaller is closer), the dot
  // product / cosine similarity for IP and COSINE (larger is closer).
  float score = 0;
};

}  // namespace strata::vector
