// JSON <-> the collection types of the Qdrant API: point ids, filters,
// vectors, the with_payload / with_vector selectors, and the JSON of records
// and scored points. Pure functions; errors are kInvalidArgument.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <strata/core/result.h>
#include <strata/vector/collection.h>

namespace strata::qdrant {

using json = nlohmann::json;

// The member `name` of an object, or nullptr when absent, null, or `o` is no object.
const json* Field(const json& o, const char* name);

// An unsigned integer or a UUID string.
Result<vector::PointId> IdFromJson(const json& v);
json IdToJson(const vector::PointId& id);

// A Qdrant filter object or a filter expression string; absent or null: none.
Result<std::optional<vector::Filter>> FilterFromJson(const json* v);

Result<std::vector<float>> FloatsFromJson(const json& v, std::string_view what);
// Qdrant's sparse vector {"indices": [u32...], "values": [number...]}.
Result<vector::SparseVector> SparseFromJson(const json& v, std::string_view what);
json SparseToJson(const vector::SparseVector& v);

struct PayloadSelector {
  bool enabled = false;
  std::vector<std::string> include;  // empty: everything
  std::vector<std::string> exclude;
};
Result<PayloadSelector> PayloadSelectorFromJson(const json* v, bool dflt);

struct VectorSelector {
  bool enabled = false;
  std::vector<std::string> names;  // empty: all
};
Result<VectorSelector> VectorSelectorFromJson(const json* v);

// with_payload (default payload_default) and with_vector / with_vectors of a body.
Status SelectorsFromBody(const json& b, bool payload_default, PayloadSelector* ps,
                         VectorSelector* vs);

// The stored payload text, narrowed by the selector's include / exclude paths.
json PayloadJson(const std::string& text, const PayloadSelector& sel);
json VectorsJson(const vector::Record& r, const vector::Collection& c, const VectorSelector& sel);
// {"id", "payload"?, "vector"?}
json RecordJson(const vector::Record& r, const vector::Collection& c, const PayloadSelector& ps,
                const VectorSelector& vs);
// {"id", "version", "score", "payload"?, "vector"?}
json ScoredJson(const vector::ScoredPoint& p, const vector::Collection& c,
                const PayloadSelector& ps, const VectorSelector& vs);

// A boolean query parameter: "?wait", "?wait=true|1|yes".
bool QueryBool(std::string_view query, std::string_view name, bool dflt);

}  // namespace strata::qdrant
