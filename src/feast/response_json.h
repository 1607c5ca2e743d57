// Encoding get-online-features answers as Feast's JSON, on the serving path.
#pragma once

#include <string>

#include <strata/features/online.h>

namespace strata::feast {

// {"metadata": {"feature_names": [...]}, "results": [{"values": [...],
// "statuses": [...], "event_timestamps": [...]}, ...]}: one result per
// column, timestamps as ISO-8601 UTC ("2023-11-15T01:13:20Z").
std::string ResponseJson(const features::OnlineResponse& r);

}  // namespace strata::feast
