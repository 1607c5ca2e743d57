// Feast's request bodies -> the feature library's plain requests. Every
// function returns kInvalidArgument (422) with the client's error text;
// none throws.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <strata/core/result.h>
#include <strata/features/online_service.h>
#include <strata/features/repo.h>
#include <strata/features/table.h>

namespace strata::feast {

// Feast's bodies keep their keys in order (values, statuses, event_timestamps).
using json = nlohmann::ordered_json;

// {"features": ["view:feature", ...] | "feature_service": "s",
//  "entities": {"driver_id": [1001, 1002]}, "full_feature_names": false}
Result<features::OnlineRequest> OnlineRequestFromJson(const json& j);

// The view a push ({"push_source_name", "to": "online"}) or a
// write-to-online-store ({"feature_view_name"}) is for.
struct PushTarget {
  std::string view;
};
Result<PushTarget> PushTargetFromJson(const json& j, bool push);

// A push / write-to-online-store frame, {"col": [values...]}, typed by the view
// (timestamps: ISO-8601 or epoch seconds).
Result<features::Table> TableFromDf(const json& df, const features::FeatureViewDef& v);

// {"start_ts": "...", "end_ts": "...", "feature_views": [...]} (no start_ts
// when incremental).
Result<features::MaterializeRequest> MaterializeRequestFromJson(const json& j, bool incremental);

}  // namespace strata::feast
