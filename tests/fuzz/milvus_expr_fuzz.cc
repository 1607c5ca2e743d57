// Fuzzes the Milvus-style boolean expression parser (and/or/not, comparisons,
// chained ranges, in / not in, like, is [not] null, exists, array_contains*,
// string and number literals, a["b"] keys, $id), then prints and evaluates
// what it accepted (filter_common.h). Input: expression [\0 payload JSON].
#include <cstddef>
#include <cstdint>

#include "filter_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [text, payload] = strata_fuzz::SplitFilterInput(data, size);
  auto f = strata::vector::ParseFilterExpression(text);
  if (f.has_value()) strata_fuzz::EvaluateEverywhere(*f, payload);
  return 0;
}
