// Decoding Feast's request bodies into the feature library's plain requests:
// get-online-features (features or a feature service, entity columns),
// push / write-to-online-store frames typed by the view, and materialize
// windows. Errors are kInvalidArgument with the text the client sees; what
// nlohmann throws for a field of the wrong JSON type is caught here too.
#include "feast/request_json.h"

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace strata::feast {

using features::Column;
using features::DataType;
using features::FeatureDef;
using features::FeatureViewDef;
using features::OnlineValue;
using features::Table;
using features::TimeUnit;
using features::TypeId;

namespace {

OnlineValue FromJson(const json& j) {
  if (j.is_null()) return {};
  if (j.is_boolean()) return OnlineValue{OnlineValue::kBool, j.get<bool>() ? 1 : 0, 0, {}};
  if (j.is_number_integer()) return OnlineValue::Int(j.get<int64_t>());
  if (j.is_number()) return OnlineValue::Double(j.get<double>());
  if (j.is_string()) return OnlineValue::String(j.get<std::string>());
  return {};
}

Result<int64_t> TimeFromJson(const json& j, const char* what) {
  if (j.is_number_integer()) return j.get<int64_t>() * 1000000;  // epoch seconds
  if (j.is_number()) return static_cast<int64_t>(j.get<double>() * 1e6);
  if (j.is_string()) {
    auto t = features::ParseTimestamp(j.get<std::string>(), TimeUnit::kMicro);
    if (t.ok()) return *t;
    return Status::InvalidArgument(fmt::format("{}: {}", what, t.error().message()));
  }
  return Status::InvalidArgument(fmt::format("{} must be an ISO-8601 time or epoch seconds", what));
}

// A push / write-to-online-store frame: {"col": [values...]}, typed by the view.
Result<Table> TableFromDfUnguarded(const json& df, const FeatureViewDef& v) {
  if (!df.is_object() || df.empty())
    return Status::InvalidArgument("\"df\" must be an object of columns");
  Table t;
  size_t n = SIZE_MAX;
  for (auto it = df.begin(); it != df.end(); ++it) {
    const std::string& name = it.key();
    const json& vals = it.value();
    if (!vals.is_array())
      return Status::InvalidArgument(fmt::format("df column \"{}\" must be a list", name));
    if (n == SIZE_MAX) n = vals.size();
    if (vals.size() != n)
      return Status::InvalidArgument(
          fmt::format("df column \"{}\" has {} values, others {}", name, vals.size(), n));
    DataType type;
    const FeatureDef* f = v.FindFeature(name);
    const bool is_ts =
        name == v.source.timestamp_field || name == v.source.created_timestamp_column;
    if (is_ts) {
      type = DataType::Timestamp();
    } else if (f) {
      type = f->type;
    } else {
      bool all_int = true;
      for (const json& x : vals) all_int &= x.is_null() || x.is_number_integer();
      type = all_int ? DataType::Int64() : DataType::String();
    }
    Column c(type);
    for (const json& x : vals) {
      if (x.is_null()) {
        c.AppendNull();
        continue;
      }
      auto bad = [&] {
        return Status::InvalidArgument(
            fmt::format("df column \"{}\": {} is not {}", name, x.dump(), type.ToString()));
      };
      switch (type.id) {
        case TypeId::kTimestamp: {
          STRATA_ASSIGN_OR_RETURN(int64_t us, TimeFromJson(x, name.c_str()));
          c.Append<int64_t>(features::ConvertTime(us, TimeUnit::kMicro, type.unit));
          break;
        }
        case TypeId::kBool:
          if (!x.is_boolean()) return bad();
          c.Append<uint8_t>(x.get<bool>() ? 1 : 0);
          break;
        case TypeId::kInt32:
          if (!x.is_number_integer()) return bad();
          c.Append<int32_t>(x.get<int32_t>());
          break;
        case TypeId::kInt64:
          if (!x.is_number_integer()) return bad();
          c.Append<int64_t>(x.get<int64_t>());
          break;
        case TypeId::kFloat:
          if (!x.is_number()) return bad();
          c.Append<float>(x.get<float>());
          break;
        case TypeId::kDouble:
          if (!x.is_number()) return bad();
          c.Append<double>(x.get<double>());
          break;
        case TypeId::kString:
        case TypeId::kBinary:
          if (x.is_string())
            c.AppendString(x.get<std::string>());
          else
            c.AppendString(x.dump());
          break;
        case TypeId::kDate:
          return bad();
      }
    }
    STRATA_RETURN_IF_ERROR(t.AddColumn(features::Field{name, type, true}, std::move(c)));
  }
  return t;
}

// What nlohmann throws for a field of the wrong JSON type, as a request error.
template <class F>
auto Guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("malformed request: ") + e.what());
  }
}

Result<features::OnlineRequest> OnlineRequestUnguarded(const json& j) {
  features::OnlineRequest req;
  if (j.contains("feature_service") && !j["feature_service"].is_null()) {
    if (!j["feature_service"].is_string())
      return Status::InvalidArgument("feature_service must be a string");
    req.feature_service = j["feature_service"].get<std::string>();
  } else {
    if (!j.contains("features") || !j["features"].is_array()) {
      return Status::InvalidArgument(
          "give \"features\": [\"view:feature\", ...] or \"feature_service\"");
    }
    for (const json& f : j["features"]) {
      if (!f.is_string())
        return Status::InvalidArgument("features must be strings \"view:feature\"");
      req.features.push_back(f.get<std::string>());
    }
  }
  if (!j.contains("entities") || !j["entities"].is_object())
    return Status::InvalidArgument("\"entities\" must be an object");
  for (auto it = j["entities"].begin(); it != j["entities"].end(); ++it) {
    if (!it.value().is_array())
      return Status::InvalidArgument(fmt::format("entity \"{}\" must be a list", it.key()));
    std::vector<OnlineValue> vals;
    for (const json& x : it.value()) {
      if (x.is_object() || x.is_array())
        return Status::InvalidArgument(fmt::format("entity \"{}\" holds a non-scalar", it.key()));
      vals.push_back(FromJson(x));
    }
    req.entities.emplace_back(it.key(), std::move(vals));
  }
  if (j.contains("full_feature_names") && !j["full_feature_names"].is_null()) {
    if (!j["full_feature_names"].is_boolean())
      return Status::InvalidArgument("full_feature_names must be true or false");
    req.full_feature_names = j["full_feature_names"].get<bool>();
  }
  return req;
}

Result<PushTarget> PushTargetUnguarded(const json& j, bool push) {
  const char* key = push ? "push_source_name" : "feature_view_name";
  if (!j.contains(key) || !j[key].is_string())
    return Status::InvalidArgument(fmt::format("\"{}\" is required", key));
  PushTarget target;
  target.view = j[key].get<std::string>();
  const std::string to = j.value("to", "online");
  if (to == "offline")
    return Status::InvalidArgument("pushing to the offline store is not supported");
  return target;
}

Result<features::MaterializeRequest> MaterializeRequestUnguarded(const json& j, bool incremental) {
  features::MaterializeRequest req;
  req.incremental = incremental;
  if (j.contains("feature_views") && !j["feature_views"].is_null()) {
    if (!j["feature_views"].is_array())
      return Status::InvalidArgument("feature_views must be a list of view names");
    for (const json& v : j["feature_views"]) {
      if (!v.is_string())
        return Status::InvalidArgument("feature_views must be a list of view names");
      req.views.push_back(v.get<std::string>());
    }
  }
  STRATA_ASSIGN_OR_RETURN(req.end_us, TimeFromJson(j.value("end_ts", json()), "end_ts"));
  if (!incremental) {
    STRATA_ASSIGN_OR_RETURN(req.start_us, TimeFromJson(j.value("start_ts", json()), "start_ts"));
  }
  return req;
}

}  // namespace

Result<features::OnlineRequest> OnlineRequestFromJson(const json& j) {
  return Guarded([&] { return OnlineRequestUnguarded(j); });
}

Result<PushTarget> PushTargetFromJson(const json& j, bool push) {
  return Guarded([&] { return PushTargetUnguarded(j, push); });
}

Result<Table> TableFromDf(const json& df, const FeatureViewDef& v) {
  return Guarded([&] { return TableFromDfUnguarded(df, v); });
}

Result<features::MaterializeRequest> MaterializeRequestFromJson(const json& j, bool incremental) {
  return Guarded([&] { return MaterializeRequestUnguarded(j, incremental); });
}

}  // namespace strata::feast
