// Filters over points: point ids, the filter AST, and its two text forms.
//
// A Filter is a tree of Conditions. It is built from Qdrant's JSON filter
// (`{"must": [...], "should": [...], "must_not": [...]}`, ParseQdrantFilter)
// or from a Milvus-style boolean expression (`source == "arxiv" and ts > 100`,
// ParseFilterExpression); both produce the same tree, so the collection layer
// plans and evaluates one thing. Semantics follow Qdrant's where the two
// differ (docs/vector.md, "Filters"):
//   - a key is a path into the JSON payload ("a.b", "a[].b"); arrays match
//     when any element matches;
//   - match/range/like on a missing or null field is false; must_not (kNot) is
//     a plain complement, so it includes points that lack the field;
//   - is_empty: the field is missing, null or []; is_null: the field is null
//     (or an array holding a null), a missing field is not null.
//
// Value types, no I/O, no locks: thread-compatible.
#pragma once

#include <strata/core/result.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::vector {

// A point id: an unsigned 64-bit integer or a UUID (as Qdrant's ExtendedPointId).
// Numbers order before UUIDs; both order by value.
struct PointId {
  bool is_uuid = false;
  uint64_t hi = 0;  // the number, or the first 8 bytes of the UUID
  uint64_t lo = 0;  // the last 8 bytes of the UUID (0 for numbers)

  static PointId Number(uint64_t n) { return PointId{false, n, 0}; }
  // "550e8400-e29b-41d4-a716-446655440000" (hyphens optional, any case).
  static Result<PointId> ParseUuid(std::string_view s);
  // A decimal number or a UUID.
  static Result<PointId> Parse(std::string_view s);
  // "42" or the lower-case hyphenated UUID.
  std::string ToString() const;

  friend auto operator<=>(const PointId&, const PointId&) = default;
  friend bool operator==(const PointId&, const PointId&) = default;
};

struct PointIdHash {
  size_t operator()(const PointId& id) const {
    uint64_t h =
        id.hi * 0x9E3779B97F4A7C15ull ^ (id.lo + 0x632BE59BD9B4E019ull + (id.is_uuid ? 1 : 0));
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// A literal in a condition.
struct FilterValue {
  enum class Type : uint8_t { kBool, kInt, kDouble, kString };
  Type type = Type::kInt;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;

  static FilterValue Bool(bool v) {
    FilterValue x;
    x.type = Type::kBool;
    x.b = v;
    return x;
  }
  static FilterValue Int(int64_t v) {
    FilterValue x;
    x.type = Type::kInt;
    x.i = v;
    return x;
  }
  static FilterValue Double(double v) {
    FilterValue x;
    x.type = Type::kDouble;
    x.d = v;
    return x;
  }
  static FilterValue String(std::string v) {
    FilterValue x;
    x.type = Type::kString;
    x.s = std::move(v);
    return x;
  }
  bool operator==(const FilterValue&) const = default;
};

// One node of the filter tree.
struct Condition {
  enum class Kind : uint8_t {
    kTrue,         // matches every point (an empty filter)
    kAnd,          // all children
    kOr,           // any child (an empty kOr matches nothing)
    kNot,          // children[0] does not match
    kMinShould,    // at least min_count children
    kMatch,        // key has a value equal to values[0]
    kMatchAny,     // key has a value in values
    kMatchExcept,  // key has a value not in values (missing/null fields: false)
    kRange,        // key has a number (or timestamp) within the bounds
    kLike,         // key has a string matching pattern (SQL LIKE: % and _)
    kText,         // key has a string containing pattern (Qdrant match.text)
    kIsNull,       // key is null
    kIsEmpty,      // key is missing, null or []
    kHasId,        // the point id is in ids
    kValuesCount,  // the number of values at key is within the bounds
    kNested,       // some element of the array at key matches children[0]
  };
  Kind kind = Kind::kTrue;
  std::string key;
  std::vector<FilterValue> values;
  // kRange, kValuesCount. For kRange, `datetime` says the bounds were given as
  // RFC 3339 timestamps (converted to seconds since the epoch); then payload
  // strings are parsed as timestamps too.
  std::optional<double> gt, gte, lt, lte;
  bool datetime = false;
  std::string pattern;       // kLike, kText
  std::vector<PointId> ids;  // kHasId
  std::vector<Condition> children;
  uint32_t min_count = 0;  // kMinShould

  static Condition True() { return Condition{}; }
  static Condition And(std::vector<Condition> c);
  static Condition Or(std::vector<Condition> c);
  static Condition Not(Condition c);
  static Condition Match(std::string key, FilterValue v);
  static Condition MatchAny(std::string key, std::vector<FilterValue> v);
  static Condition MatchExcept(std::string key, std::vector<FilterValue> v);
  static Condition Range(std::string key, std::optional<double> gt, std::optional<double> gte,
                         std::optional<double> lt, std::optional<double> lte);
  static Condition IsNull(std::string key);
  static Condition IsEmpty(std::string key);
  static Condition HasId(std::vector<PointId> ids);

  // A compact, deterministic text form (for logs, tests and cache keys).
  std::string ToString() const;
};

using Filter = Condition;

// Parses Qdrant's JSON Filter object (text). Unsupported conditions (geo)
// and malformed input are kInvalidArgument with a message naming the part.
Result<Filter> ParseQdrantFilter(std::string_view json);

// Parses a Milvus-style boolean expression:
//   expr   := or ; or := and (("or"|"||") and)* ; and := not (("and"|"&&") not)*
//   not    := ("not"|"!") not | "(" expr ")" | predicate
//   predicate: key OP literal | literal OP key | lit < key < lit (chained range)
//              | key [not] in [lit, ...] | key [not] like "pat%" | key is [not] null
//              | exists key | array_contains(key, lit) | array_contains_any(key, [..])
//              | array_contains_all(key, [..]) | true | false
//   OP: == != < <= > >= ; literals: integers, floats, "strings" or 'strings',
//   true/false (any case), [lists]; keys: a.b, a["b"], or $id for the point id.
// `key is null` is Qdrant's is_empty (missing or null), as Milvus treats a
// missing dynamic field as null.
Result<Filter> ParseFilterExpression(std::string_view expr);

// Seconds since the epoch from an RFC 3339 / ISO 8601 timestamp
// ("2024-01-02T03:04:05.5Z", "2024-01-02 03:04:05", "2024-01-02", with an
// optional +hh:mm offset; no offset means UTC).
std::optional<double> ParseTimestamp(std::string_view s);

}  // namespace strata::vector
