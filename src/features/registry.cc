// The registry: the applied definitions as one JSON document.
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/features/repo.h>

namespace strata::features {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kFormat = "strata-feature-registry/1";

json TagsJson(const std::map<std::string, std::string>& tags) {
  json j = json::object();
  for (const auto& [k, v] : tags) j[k] = v;
  return j;
}

std::map<std::string, std::string> TagsFrom(const json& j) {
  std::map<std::string, std::string> out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

json EntityJson(const EntityDef& e) {
  json j = {{"name", e.name}, {"join_key", e.join_key}, {"description", e.description}, {"tags", TagsJson(e.tags)}};
  if (e.value_type) j["value_type"] = e.value_type->ToString();
  return j;
}

json ViewJson(const FeatureViewDef& v, bool with_state) {
  json feats = json::array();
  for (const FeatureDef& f : v.features) feats.push_back({{"name", f.name}, {"dtype", f.type.ToString()}});
  json src = {{"path", v.source.path},
              {"file_format", v.source.format == FileFormat::kCsv ? "csv" : "parquet"},
              {"timestamp_field", v.source.timestamp_field},
              {"created_timestamp_column", v.source.created_timestamp_column},
              {"field_mapping", TagsJson(v.source.field_mapping)}};
  if (!v.source.push_source.empty()) src["push_source"] = v.source.push_source;
  if (!v.source.name.empty()) src["name"] = v.source.name;
  json j = {{"name", v.name},   {"entities", v.entities},         {"join_keys", v.join_keys},
            {"ttl_seconds", v.ttl_seconds}, {"online", v.online}, {"features", feats},
            {"source", src},    {"tags", TagsJson(v.tags)},       {"owner", v.owner},
            {"description", v.description}};
  if (with_state) {
    json iv = json::array();
    for (const Interval& i : v.materialization_intervals) iv.push_back({{"start_us", i.start_us}, {"end_us", i.end_us}});
    j["materialization_intervals"] = iv;
  }
  return j;
}

json ServiceJson(const FeatureServiceDef& s) {
  json p = json::array();
  for (const FeatureProjection& fp : s.projections) p.push_back({{"view", fp.view}, {"features", fp.features}});
  return {{"name", s.name}, {"features", p}, {"tags", TagsJson(s.tags)}, {"description", s.description}};
}

std::string Diff(const json& a, const json& b) {
  std::string out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key()) || a[it.key()] != it.value()) out += (out.empty() ? "" : ", ") + it.key();
  }
  return out.empty() ? "" : "changed: " + out;
}

template <class T, class F>
void PlanObjects(const char* kind, const std::vector<T>& old_objs, const std::vector<T>& new_objs, F to_json,
                 std::vector<PlanChange>* out) {
  for (const T& n : new_objs) {
    const T* o = nullptr;
    for (const T& x : old_objs) {
      if (x.name == n.name) o = &x;
    }
    if (!o) {
      out->push_back({PlanChange::kCreate, kind, n.name, ""});
      continue;
    }
    const json a = to_json(*o), b = to_json(n);
    if (a == b) {
      out->push_back({PlanChange::kUnchanged, kind, n.name, ""});
    } else {
      out->push_back({PlanChange::kUpdate, kind, n.name, Diff(a, b)});
    }
  }
  for (const T& o : old_objs) {
    bool found = false;
    for (const T& n : new_objs) found |= n.name == o.name;
    if (!found) out->push_back({PlanChange::kNotInRepo, kind, o.name, "kept in the registry (delete it explicitly)"});
  }
}

std::string IsoNow() { return FormatTimestamp(NowUnixNanos() / 1000, TimeUnit::kMicro, false); }

// PlanRepo and ApplyRepo read the registry when it exists; when its
// existence cannot be told, LoadRegistry reports why.
bool MayExist(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec) || ec;
}

}  // namespace

Status SaveRegistry(const std::string& path, const FeatureRepo& repo) {
  json j;
  j["format"] = kFormat;
  j["project"] = repo.config.project;
  j["repo_dir"] = repo.config.repo_dir;
  j["last_updated"] = IsoNow();
  j["entities"] = json::array();
  for (const EntityDef& e : repo.entities) j["entities"].push_back(EntityJson(e));
  j["feature_views"] = json::array();
  for (const FeatureViewDef& v : repo.views) j["feature_views"].push_back(ViewJson(v, true));
  j["feature_services"] = json::array();
  for (const FeatureServiceDef& s : repo.services) j["feature_services"].push_back(ServiceJson(s));
  std::string text;
  try {
    text = j.dump(2);  // throws on strings that are not UTF-8
  } catch (const json::exception& e) {
    return Status::InvalidArgument(fmt::format("cannot save the registry {}: {}", path, e.what()));
  }
  text += "\n";
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // Replaced whole, as before not synced: apply and materialize rewrite it often.
  AtomicWriteOptions write;
  write.sync = false;
  write.tmp_suffix = fmt::format(".tmp-{}", ::getpid());
  return WriteFileAtomic(path, text, write);
}

Result<FeatureRepo> LoadRegistry(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.has_value()) {
    return Status::NotFound(fmt::format("no registry at {}: run `strata features apply` first", path));
  }
  const json j = json::parse(*text, nullptr, false);
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (j.is_discarded() || !j.is_object() || format == j.end() || !format->is_string() ||
      format->get<std::string>() != kFormat) {
    return Status::Corruption(fmt::format("{} is not a Strata feature registry", path));
  }
  FeatureRepo repo;
  try {
    repo.config.project = j.at("project").get<std::string>();
    repo.config.repo_dir = j.value("repo_dir", "");
    repo.config.registry_path = path;
    for (const json& e : j.at("entities")) {
      EntityDef d;
      d.name = e.at("name");
      d.join_key = e.at("join_key");
      d.description = e.value("description", "");
      d.tags = TagsFrom(e.value("tags", json::object()));
      if (e.contains("value_type")) {
        auto t = ParseDataType(e["value_type"].get<std::string>());
        if (t.ok()) d.value_type = *t;
      }
      repo.entities.push_back(std::move(d));
    }
    for (const json& v : j.at("feature_views")) {
      FeatureViewDef d;
      d.name = v.at("name");
      d.entities = v.at("entities").get<std::vector<std::string>>();
      d.join_keys = v.at("join_keys").get<std::vector<std::string>>();
      d.ttl_seconds = v.at("ttl_seconds");
      d.online = v.at("online");
      for (const json& f : v.at("features")) {
        auto t = ParseDataType(f.at("dtype").get<std::string>());
        if (!t.ok()) return Status::Corruption(fmt::format("{}: {}", path, t.error().message()));
        d.features.push_back({f.at("name"), *t});
      }
      const json& s = v.at("source");
      d.source.path = s.at("path");
      d.source.format = s.value("file_format", "parquet") == "csv" ? FileFormat::kCsv : FileFormat::kParquet;
      d.source.timestamp_field = s.at("timestamp_field");
      d.source.created_timestamp_column = s.value("created_timestamp_column", "");
      d.source.field_mapping = TagsFrom(s.value("field_mapping", json::object()));
      d.source.push_source = s.value("push_source", "");
      d.source.name = s.value("name", "");
      d.tags = TagsFrom(v.value("tags", json::object()));
      d.owner = v.value("owner", "");
      d.description = v.value("description", "");
      for (const json& i : v.value("materialization_intervals", json::array())) {
        d.materialization_intervals.push_back({i.at("start_us"), i.at("end_us")});
      }
      repo.views.push_back(std::move(d));
    }
    for (const json& s : j.at("feature_services")) {
      FeatureServiceDef d;
      d.name = s.at("name");
      for (const json& p : s.at("features")) d.projections.push_back({p.at("view"), p.at("features")});
      d.tags = TagsFrom(s.value("tags", json::object()));
      d.description = s.value("description", "");
      repo.services.push_back(std::move(d));
    }
  } catch (const json::exception& e) {
    return Status::Corruption(fmt::format("{}: malformed registry: {}", path, e.what()));
  }
  return repo;
}

Result<std::vector<PlanChange>> PlanRepo(const FeatureRepo& repo) {
  FeatureRepo old;
  if (MayExist(repo.config.registry_path)) {
    STRATA_ASSIGN_OR_RETURN(old, LoadRegistry(repo.config.registry_path));
  }
  std::vector<PlanChange> out;
  PlanObjects("entity", old.entities, repo.entities, EntityJson, &out);
  PlanObjects("feature view", old.views, repo.views, [](const FeatureViewDef& v) { return ViewJson(v, false); }, &out);
  PlanObjects("feature service", old.services, repo.services, ServiceJson, &out);
  return out;
}

Result<std::vector<PlanChange>> ApplyRepo(const FeatureRepo& repo) {
  FeatureRepo old;
  if (MayExist(repo.config.registry_path)) {
    STRATA_ASSIGN_OR_RETURN(old, LoadRegistry(repo.config.registry_path));
    if (!old.config.project.empty() && old.config.project != repo.config.project) {
      return Status::PreconditionFailed(fmt::format(
          "the registry at {} belongs to project \"{}\", not \"{}\"", repo.config.registry_path, old.config.project,
          repo.config.project));
    }
  }
  STRATA_ASSIGN_OR_RETURN(auto changes, PlanRepo(repo));
  FeatureRepo next = repo;
  // Keep materialization state of views whose source and keys did not change,
  // and definitions the repository no longer holds (Feast deletes nothing on apply).
  for (FeatureViewDef& v : next.views) {
    const FeatureViewDef* o = old.FindView(v.name);
    if (o && o->source.path == v.source.path && o->join_keys == v.join_keys) {
      v.materialization_intervals = o->materialization_intervals;
    }
  }
  for (const EntityDef& e : old.entities) {
    if (!next.FindEntity(e.name)) next.entities.push_back(e);
  }
  for (const FeatureViewDef& v : old.views) {
    if (!next.FindView(v.name)) next.views.push_back(v);
  }
  for (const FeatureServiceDef& s : old.services) {
    if (!next.FindService(s.name)) next.services.push_back(s);
  }
  STRATA_RETURN_IF_ERROR(SaveRegistry(repo.config.registry_path, next));
  return changes;
}

}  // namespace strata::features
