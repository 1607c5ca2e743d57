// Private to the collection layer: evaluating a Filter against one segment.
//
// Evaluate() turns a filter into the set of matching rows. Leaves on keys with
// a payload index are answered from the index; has_id from the id lookup; the
// rest by parsing each candidate row's payload once and testing the leaves
// row by row (RowMatches), restricted to the rows the indexed parts of an AND
// already kept. Both paths implement the semantics described in filter.h.
#pragma once

#include <strata/vector/filter.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vector/payload_index.h"

namespace strata::vector::internal {

// SQL LIKE: % matches any run, _ one character, backslash escapes.
bool LikeMatch(std::string_view pattern, std::string_view s);

// Whether one payload (a parsed JSON object; null for none) matches.
bool RowMatches(const Condition& c, const nlohmann::json& payload, const PointId& id);

// What Evaluate needs of a segment.
struct SegmentView {
  size_t rows = 0;
  const std::vector<PointId>* ids = nullptr;
  // Row -> payload JSON text ("" for none).
  std::function<std::string_view(uint32_t)> payload;
  const std::map<std::string, std::unique_ptr<PayloadFieldIndex>, std::less<>>* indexes = nullptr;
  // id -> row in this segment, live or not; false when absent.
  std::function<bool(const PointId&, uint32_t*)> find_row;
};

// Rows of `domain` that match `c`.
RowSet Evaluate(const Condition& c, const SegmentView& seg, const RowSet& domain);

// True for a filter that matches everything (kTrue, or an AND of such).
bool IsTrivial(const Condition& c);  // kTrue, or an AND of nothing

}  // namespace strata::vector::internal
