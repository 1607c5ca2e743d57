// Fuzzes the Qdrant JSON filter parser (must / should / must_not / min_should,
// match value / any / except / text, range, datetime range, is_null,
// is_empty, has_id, values_count, nested), then prints and evaluates what it
// accepted (filter_common.h). Input: filter JSON [\0 payload JSON].
#include <cstddef>
#include <cstdint>

#include "filter_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [text, payload] = strata_fuzz::SplitFilterInput(data, size);
  auto f = strata::vector::ParseQdrantFilter(text);
  if (f.has_value()) strata_fuzz::EvaluateEverywhere(*f, payload);
  return 0;
}
