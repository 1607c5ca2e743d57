// Shared by the filter targets: a parsed filter is printed and evaluated
// against payloads, the one from the input (after a NUL byte, as JSON) and a
// few fixed ones, so the evaluator sees every condition the parser can build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <strata/vector/filter.h>

#include "vector/filter_eval.h"

namespace strata_fuzz {

// Splits "filter\0payload" (the payload part is optional).
inline std::pair<std::string_view, std::string_view> SplitFilterInput(const uint8_t* data,
                                                                      size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, {}};
  return {in.substr(0, nul), in.substr(nul + 1)};
}

inline void EvaluateEverywhere(const strata::vector::Filter& f, std::string_view payload_text) {
  using nlohmann::json;
  static const json* fixed = new json(json::array({
      json(nullptr),
      json::parse(R"({"a": 1, "b": "x", "c": [1, 2.5, "y"], "d": {"e": true, "f": null}})"),
      json::parse(
          R"({"city": "Berlin", "n": -3, "t": "2024-01-02T03:04:05Z", "arr": [{"x": 1}, {"x": 2}]})"),
  }));
  const auto id = strata::vector::PointId::Number(7);
  (void)f.ToString();
  for (const auto& p : *fixed) (void)strata::vector::internal::RowMatches(f, p, id);
  if (!payload_text.empty()) {
    json p = json::parse(payload_text, nullptr, /*allow_exceptions=*/false);
    if (p.is_object() || p.is_null()) (void)strata::vector::internal::RowMatches(f, p, id);
  }
}

}  // namespace strata_fuzz
