#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <strata/core/file_util.h>
#include <strata/features/csv.h>
#include <strata/features/io.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>

namespace strata::features {

namespace fs = std::filesystem;

std::string SourceLocation::ToString() const {
  if (line > 0) return fmt::format("{}:{}", file, line);
  return file;
}

const FeatureDef* FeatureViewDef::FindFeature(const std::string& n) const {
  for (const FeatureDef& f : features) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

const EntityDef* FeatureRepo::FindEntity(const std::string& n) const {
  for (const EntityDef& e : entities) {
    if (e.name == n) return &e;
  }
  return nullptr;
}
const FeatureViewDef* FeatureRepo::FindView(const std::string& n) const {
  for (const FeatureViewDef& v : views) {
    if (v.name == n) return &v;
  }
  return nullptr;
}
FeatureViewDef* FeatureRepo::FindView(const std::string& n) {
  for (FeatureViewDef& v : views) {
    if (v.name == n) return &v;
  }
  return nullptr;
}
const FeatureServiceDef* FeatureRepo::FindService(const std::string& n) const {
  for (const FeatureServiceDef& s : services) {
    if (s.name == n) return &s;
  }
  return nullptr;
}

std::string FeatureRepo::ResolvePath(const std::string& path) const {
  if (path.find("://") != std::string::npos) return path;
  if (!path.empty() && path[0] == '/') return path;
  return (fs::path(config.repo_dir) / path).lexically_normal().string();
}

Result<int64_t> ParseDurationSeconds(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format(
        "\"{}\" is not a duration: use e.g. 90s, 15m, 2h, 1d, 1w, 1d12h or a number of seconds", text));
  };
  if (s.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    int64_t n = 0;
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      n = n * 10 + (s[i] - '0');
      if (n > (int64_t{1} << 40)) return bad();
      ++i;
    }
    if (i == start) return bad();
    int64_t mult = 1;
    if (i < s.size()) {
      switch (s[i]) {
        case 's': mult = 1; break;
        case 'm': mult = 60; break;
        case 'h': mult = 3600; break;
        case 'd': mult = 86400; break;
        case 'w': mult = 7 * 86400; break;
        default: return bad();
      }
      ++i;
    } else if (any) {
      return bad();  // "1d5": a unit is missing
    }
    total += n * mult;
    any = true;
  }
  return total;
}

namespace {

// Whether text[i] starts a scalar or a flow collection: the first character
// of a line or a token.
bool AtTokenStart(std::string_view text, size_t i) {
  if (i == 0) return true;
  const char p = text[i - 1];
  return p == ' ' || p == '\t' || p == '\n' || p == '\r' || p == '[' || p == '{' || p == ',';
}

// The 1-based line of a YAML syntax error. yaml-cpp marks an unclosed flow
// collection ("[a, b" or "{a: 1") where it gave up looking for the closing
// bracket: a later line, or the end of the file. The mistake is the opening
// bracket, so its line is reported: the innermost "[" or "{" still open at
// the mark, skipping comments and quoted scalars.
int SyntaxErrorLine(std::string_view text, const YAML::ParserException& e) {
  const int marked = e.mark.line >= 0 ? e.mark.line + 1 : 0;
  if (e.msg != YAML::ErrorMsg::END_OF_SEQ_FLOW && e.msg != YAML::ErrorMsg::END_OF_MAP_FLOW)
    return marked;
  const size_t end =
      e.mark.pos >= 0 ? std::min(static_cast<size_t>(e.mark.pos), text.size()) : text.size();
  std::vector<int> open;  // lines of the open brackets
  int line = 1;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < end; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      comment = false;
    } else if (comment) {
    } else if (quote != 0) {
      if (quote == '"' && c == '\\' && i + 1 < end && text[i + 1] != '\n') {
        ++i;
      } else if (c == quote) {
        if (quote == '\'' && i + 1 < end && text[i + 1] == '\'') {
          ++i;  // '' inside single quotes
        } else {
          quote = 0;
        }
      }
    } else if (c == '#' && AtTokenStart(text, i)) {
      comment = true;
    } else if ((c == '"' || c == '\'') && AtTokenStart(text, i)) {
      quote = c;
    } else if ((c == '[' || c == '{') && AtTokenStart(text, i)) {
      open.push_back(line);
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
  }
  return open.empty() ? marked : open.back();
}

const std::regex kNameRe("^[A-Za-z_][A-Za-z0-9_]*$");

// "file.py:12" (a `__loc__` value) as a location; the line is 0 when absent.
SourceLocation ParseLoc(const std::string& text) {
  const size_t c = text.rfind(':');
  if (c == std::string::npos || c + 1 == text.size()) return SourceLocation{text, 0};
  const std::string digits = text.substr(c + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
    return SourceLocation{text, 0};
  }
  return SourceLocation{text.substr(0, c), std::atoi(digits.c_str())};
}

struct Loader {
  std::vector<std::string> errors;
  std::string file;  // current file, relative to the repo
  // Set while loading an object that carries `__loc__` (Python definitions):
  // every location inside it is that one.
  std::optional<SourceLocation> pinned;

  SourceLocation Loc(const YAML::Node& n) const {
    if (pinned) return *pinned;
    const YAML::Mark m = n.Mark();
    return SourceLocation{file, m.line >= 0 ? m.line + 1 : 0};
  }

  // Pins locations to the map's `__loc__` (when it has one) until the returned
  // previous pin is restored.
  std::optional<SourceLocation> Pin(const YAML::Node& n) {
    std::optional<SourceLocation> prev = pinned;
    if (n.IsMap()) {
      const YAML::Node l = n["__loc__"];
      if (l && l.IsScalar()) pinned = ParseLoc(l.Scalar());
    }
    return prev;
  }
  void Error(const YAML::Node& n, std::string msg) { errors.push_back(Loc(n).ToString() + ": " + msg); }
  void Error(const SourceLocation& l, std::string msg) { errors.push_back(l.ToString() + ": " + msg); }

  // Checks that a map holds only `allowed` keys.
  void CheckKeys(const YAML::Node& map, const std::string& what, std::initializer_list<const char*> allowed) {
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      bool ok = false;
      for (const char* a : allowed) ok |= key == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        Error(kv.first, fmt::format("{}: unknown key \"{}\" (allowed: {})", what, key, list));
      }
    }
  }

  bool Str(const YAML::Node& map, const char* key, const std::string& what, std::string* out, bool required) {
    const YAML::Node n = map[key];
    if (!n) {
      if (required) Error(map, fmt::format("{}: \"{}\" is required", what, key));
      return false;
    }
    if (!n.IsScalar()) {
      Error(n, fmt::format("{}: \"{}\" must be a string", what, key));
      return false;
    }
    *out = n.Scalar();
    return true;
  }

  bool Bool(const YAML::Node& map, const char* key, const std::string& what, bool* out) {
    const YAML::Node n = map[key];
    if (!n) return false;
    const std::string v = n.IsScalar() ? n.Scalar() : "";
    if (v == "true" || v == "True" || v == "yes" || v == "on") {
      *out = true;
    } else if (v == "false" || v == "False" || v == "no" || v == "off") {
      *out = false;
    } else {
      Error(n, fmt::format("{}: \"{}\" must be true or false", what, key));
      return false;
    }
    return true;
  }

  void StrList(const YAML::Node& map, const char* key, const std::string& what, std::vector<std::string>* out) {
    const YAML::Node n = map[key];
    if (!n) return;
    if (n.IsScalar()) {
      out->push_back(n.Scalar());
      return;
    }
    if (!n.IsSequence()) {
      Error(n, fmt::format("{}: \"{}\" must be a list of strings", what, key));
      return;
    }
    for (const YAML::Node& item : n) {
      if (!item.IsScalar()) {
        Error(item, fmt::format("{}: \"{}\" must be a list of strings", what, key));
        continue;
      }
      out->push_back(item.Scalar());
    }
  }

  void StrMap(const YAML::Node& map, const char* key, const std::string& what, std::map<std::string, std::string>* out) {
    const YAML::Node n = map[key];
    if (!n) return;
    if (!n.IsMap()) {
      Error(n, fmt::format("{}: \"{}\" must be a map of strings", what, key));
      return;
    }
    for (const auto& kv : n) {
      if (!kv.second.IsScalar()) {
        Error(kv.second, fmt::format("{}: \"{}\" values must be strings", what, key));
        continue;
      }
      (*out)[kv.first.Scalar()] = kv.second.Scalar();
    }
  }

  void Name(const YAML::Node& n, const std::string& what, const std::string& name) {
    if (!std::regex_match(name, kNameRe)) {
      Error(n, fmt::format("{} name \"{}\" is invalid: use letters, digits and _ (not starting with a digit)", what,
                           name));
    }
  }

  void LoadEntity(const YAML::Node& n, FeatureRepo* repo) {
    if (!n.IsMap()) return Error(n, "an entity must be a map (name, join_keys, ...)");
    EntityDef e;
    e.loc = Loc(n);
    if (!Str(n, "name", "entity", &e.name, true)) return;
    const std::string what = fmt::format("entity \"{}\"", e.name);
    CheckKeys(
        n, what,
        {"name", "join_keys", "join_key", "value_type", "description", "tags", "owner", "__loc__"});
    Name(n, "entity", e.name);
    std::vector<std::string> keys;
    StrList(n, "join_keys", what, &keys);
    StrList(n, "join_key", what, &keys);
    if (keys.empty()) keys.push_back(e.name);  // Feast's default: the entity's name
    if (keys.size() != 1) {
      Error(n, fmt::format("{} has {} join keys; Feast allows exactly one (give a view several entities "
                           "for a composite key)", what, keys.size()));
    } else {
      e.join_key = keys[0];
      Name(n, "join key", e.join_key);
    }
    std::string vt;
    if (Str(n, "value_type", what, &vt, false)) {
      auto t = ParseDataType(vt);
      if (!t.ok()) Error(n["value_type"], what + ": " + t.error().message());
      else e.value_type = *t;
    }
    Str(n, "description", what, &e.description, false);
    StrMap(n, "tags", what, &e.tags);
    repo->entities.push_back(std::move(e));
  }

  void LoadView(const YAML::Node& n, FeatureRepo* repo) {
    if (!n.IsMap()) return Error(n, "a feature view must be a map (name, entities, schema, source, ...)");
    FeatureViewDef v;
    v.loc = Loc(n);
    if (!Str(n, "name", "feature view", &v.name, true)) return;
    const std::string what = fmt::format("feature view \"{}\"", v.name);
    CheckKeys(n, what,
              {"name", "entities", "ttl", "online", "offline", "schema", "source", "tags", "owner",
               "description", "__loc__"});
    Name(n, "feature view", v.name);
    StrList(n, "entities", what, &v.entities);
    if (v.entities.empty()) Error(n, what + ": \"entities\" is required (a list of entity names)");
    if (const YAML::Node ttl = n["ttl"]) {
      auto secs = ttl.IsScalar() ? ParseDurationSeconds(ttl.Scalar())
                                 : Result<int64_t>(Status::InvalidArgument("ttl must be a duration"));
      if (!secs.ok()) Error(ttl, what + ": ttl: " + secs.error().message());
      else v.ttl_seconds = *secs;
    }
    Bool(n, "online", what, &v.online);
    const YAML::Node schema = n["schema"];
    if (!schema) {
      Error(n, what + ": \"schema\" is required (a list of {name, dtype})");
    } else if (!schema.IsSequence()) {
      Error(schema, what + ": \"schema\" must be a list of {name, dtype}");
    } else {
      for (const YAML::Node& f : schema) {
        if (!f.IsMap()) {
          Error(f, what + ": each schema entry must be a map {name, dtype}");
          continue;
        }
        FeatureDef fd;
        if (!Str(f, "name", what + " schema entry", &fd.name, true)) continue;
        const std::string fw = fmt::format("{}: feature \"{}\"", what, fd.name);
        CheckKeys(f, fw, {"name", "dtype", "description", "tags"});
        Name(f, "feature", fd.name);
        std::string dtype;
        if (!Str(f, "dtype", fw, &dtype, true)) continue;
        auto t = ParseDataType(dtype);
        if (!t.ok()) {
          Error(f["dtype"], fw + ": " + t.error().message());
          continue;
        }
        fd.type = *t;
        if (v.FindFeature(fd.name)) {
          Error(f, fmt::format("{}: feature \"{}\" is declared twice", what, fd.name));
          continue;
        }
        v.features.push_back(std::move(fd));
      }
      if (schema.size() == 0) Error(schema, what + ": the schema declares no features");
    }
    const YAML::Node src = n["source"];
    if (!src) {
      Error(n, what + ": \"source\" is required (path, timestamp_field, ...)");
    } else if (!src.IsMap()) {
      Error(src, what + ": \"source\" must be a map (path, timestamp_field, ...)");
    } else {
      FileSourceDef& s = v.source;
      const std::optional<SourceLocation> outer = Pin(src);
      s.loc = Loc(src);
      const std::string sw = what + " source";
      CheckKeys(src, sw,
                {"name", "path", "file_format", "timestamp_field", "created_timestamp_column",
                 "field_mapping", "type", "description", "s3_endpoint_override", "push_source",
                 "__loc__"});
      Str(src, "push_source", sw, &s.push_source, false);
      Str(src, "name", sw, &s.name, false);
      Str(src, "path", sw, &s.path, true);
      Str(src, "timestamp_field", sw, &s.timestamp_field, true);
      Str(src, "created_timestamp_column", sw, &s.created_timestamp_column, false);
      StrMap(src, "field_mapping", sw, &s.field_mapping);
      std::string fmt_name;
      if (Str(src, "file_format", sw, &fmt_name, false)) {
        if (fmt_name == "parquet") s.format = FileFormat::kParquet;
        else if (fmt_name == "csv") s.format = FileFormat::kCsv;
        else Error(src["file_format"], fmt::format("{}: file_format \"{}\" (use parquet or csv)", sw, fmt_name));
      } else {
        std::string lower = s.path;
        std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
        const size_t q = lower.find('?');
        if (q != std::string::npos) lower.resize(q);
        if (lower.ends_with(".csv")) s.format = FileFormat::kCsv;
      }
      std::string type;
      if (Str(src, "type", sw, &type, false) && type != "file") {
        Error(src["type"], fmt::format("{}: source type \"{}\" is not supported (only file sources)", sw, type));
      }
      pinned = outer;
    }
    StrMap(n, "tags", what, &v.tags);
    Str(n, "owner", what, &v.owner, false);
    Str(n, "description", what, &v.description, false);
    repo->views.push_back(std::move(v));
  }

  void LoadService(const YAML::Node& n, FeatureRepo* repo) {
    if (!n.IsMap()) return Error(n, "a feature service must be a map (name, features)");
    FeatureServiceDef s;
    s.loc = Loc(n);
    if (!Str(n, "name", "feature service", &s.name, true)) return;
    const std::string what = fmt::format("feature service \"{}\"", s.name);
    CheckKeys(n, what,
              {"name", "features", "tags", "description", "owner", "logging_config", "__loc__"});
    Name(n, "feature service", s.name);
    const YAML::Node feats = n["features"];
    if (!feats || !feats.IsSequence() || feats.size() == 0) {
      Error(feats ? feats : n, what + ": \"features\" must be a non-empty list of views or {view: [features]}");
    } else {
      for (const YAML::Node& item : feats) {
        FeatureProjection p;
        if (item.IsScalar()) {
          p.view = item.Scalar();
          // "view:feature" shorthand
          const size_t c = p.view.find(':');
          if (c != std::string::npos) {
            p.features.push_back(p.view.substr(c + 1));
            p.view.resize(c);
          }
        } else if (item.IsMap() && item.size() == 1) {
          const auto kv = *item.begin();
          p.view = kv.first.Scalar();
          if (kv.second.IsSequence()) {
            for (const YAML::Node& f : kv.second) p.features.push_back(f.Scalar());
          } else if (kv.second.IsScalar()) {
            p.features.push_back(kv.second.Scalar());
          } else {
            Error(kv.second, what + ": a projection's features must be a list of names");
          }
        } else {
          Error(item, what + ": each item is a view name or {view: [features]}");
          continue;
        }
        s.projections.push_back(std::move(p));
      }
    }
    StrMap(n, "tags", what, &s.tags);
    Str(n, "description", what, &s.description, false);
    repo->services.push_back(std::move(s));
  }

  void LoadDefinitions(const YAML::Node& root, FeatureRepo* repo) {
    if (!root || root.IsNull()) return;
    if (!root.IsMap()) return Error(root, "a definitions file must be a map with entities, feature_views, feature_services");
    CheckKeys(root, "definitions", {"entities", "feature_views", "feature_services"});
    auto each = [&](const char* key, auto&& fn) {
      const YAML::Node list = root[key];
      if (!list) return;
      if (!list.IsSequence()) return Error(list, fmt::format("\"{}\" must be a list", key));
      for (const YAML::Node& item : list) fn(item);
    };
    auto pinned_to = [&](const YAML::Node& n, auto&& fn) {
      const std::optional<SourceLocation> prev = Pin(n);
      fn();
      pinned = prev;
    };
    each("entities", [&](const YAML::Node& n) { pinned_to(n, [&] { LoadEntity(n, repo); }); });
    each("feature_views", [&](const YAML::Node& n) { pinned_to(n, [&] { LoadView(n, repo); }); });
    each("feature_services",
         [&](const YAML::Node& n) { pinned_to(n, [&] { LoadService(n, repo); }); });
  }

  void LoadConfig(const YAML::Node& root, RepoConfig* c) {
    if (!root.IsMap()) return Error(root, "feature_store.yaml must be a map (project, registry, online_store, ...)");
    CheckKeys(root, "feature_store.yaml", {"project", "registry", "provider", "offline_store", "online_store",
                                           "entity_key_serialization_version", "batch_engine", "feature_server",
                                           "materialization", "flags"});
    if (Str(root, "project", "feature_store.yaml", &c->project, true)) Name(root["project"], "project", c->project);
    if (const YAML::Node reg = root["registry"]) {
      if (reg.IsScalar()) {
        c->registry_path = reg.Scalar();
      } else if (reg.IsMap()) {
        CheckKeys(reg, "registry", {"path", "registry_type", "cache_ttl_seconds", "cache_mode"});
        Str(reg, "path", "registry", &c->registry_path, true);
        std::string type;
        if (Str(reg, "registry_type", "registry", &type, false) && type != "file") {
          Error(reg["registry_type"], fmt::format("registry_type \"{}\" is not supported (use file)", type));
        }
      } else {
        Error(reg, "registry must be a path or a map with path");
      }
    }
    Str(root, "provider", "feature_store.yaml", &c->provider, false);
    if (c->provider != "local") Error(root["provider"], fmt::format("provider \"{}\" is not supported (use local)", c->provider));
    if (const YAML::Node off = root["offline_store"]) {
      if (off.IsMap()) {
        CheckKeys(off, "offline_store", {"type"});
        Str(off, "type", "offline_store", &c->offline_store, false);
      } else if (off.IsScalar()) {
        c->offline_store = off.Scalar();
      }
      if (c->offline_store != "file" && c->offline_store != "dask" && c->offline_store != "duckdb") {
        Error(off, fmt::format("offline_store type \"{}\" is not supported (use file)", c->offline_store));
      }
      c->offline_store = "file";
    }
    if (const YAML::Node on = root["online_store"]) {
      if (on.IsScalar()) {
        c->online_store = on.Scalar();
      } else if (on.IsMap()) {
        CheckKeys(on, "online_store",
                  {"type", "path", "connection_string", "key_ttl_seconds", "redis_type"});
        Str(on, "type", "online_store", &c->online_store, false);
        Str(on, "path", "online_store", &c->online_path, false);
        Str(on, "connection_string", "online_store", &c->redis_connection, false);
      } else {
        Error(on, "online_store must be a type name or a map");
      }
      if (c->online_store != "rocksdb" && c->online_store != "redis") {
        Error(on, fmt::format("online_store type \"{}\" is not supported (use rocksdb or redis)", c->online_store));
      }
      if (c->online_store == "redis" && c->redis_connection.empty()) {
        Error(on, "online_store: redis needs connection_string (e.g. \"127.0.0.1:6379\")");
      }
    }
    if (const YAML::Node fsrv = root["feature_server"]) {
      if (!fsrv.IsMap()) {
        Error(fsrv, "feature_server must be a map (e.g. {logging: {sample_rate: 0.1, path: data/served_log}})");
      } else {
        CheckKeys(fsrv, "feature_server", {"type", "enabled", "logging", "feature_logging"});
        if (const YAML::Node lg = fsrv["logging"]) {
          if (!lg.IsMap()) {
            Error(lg, "feature_server.logging must be a map (sample_rate, path)");
          } else {
            CheckKeys(lg, "feature_server.logging", {"sample_rate", "path", "max_rows_per_file", "max_seconds_per_file"});
            auto number = [&](const char* key, double* out) {
              const YAML::Node n = lg[key];
              if (!n) return;
              // strtod accepts what std::stod does; the whole text must be the number.
              const std::string text = n.IsScalar() ? n.Scalar() : "";
              char* end = nullptr;
              errno = 0;
              const double v = std::strtod(text.c_str(), &end);
              if (end == text.c_str() || errno == ERANGE || end != text.c_str() + text.size()) {
                Error(n, fmt::format("feature_server.logging: \"{}\" must be a number", key));
              } else {
                *out = v;
              }
            };
            number("sample_rate", &c->log_sample_rate);
            if (c->log_sample_rate < 0 || c->log_sample_rate > 1) {
              Error(lg["sample_rate"], "feature_server.logging: sample_rate must be between 0 and 1");
            }
            Str(lg, "path", "feature_server.logging", &c->log_path, false);
            number("max_rows_per_file", &c->log_max_rows_per_file);
            number("max_seconds_per_file", &c->log_max_seconds_per_file);
            if (c->log_max_rows_per_file < 1) Error(lg["max_rows_per_file"], "feature_server.logging: max_rows_per_file must be at least 1");
          }
        }
      }
    }
    if (const YAML::Node v = root["entity_key_serialization_version"]) {
      if (!v.IsScalar() || (v.Scalar() != "2" && v.Scalar() != "3")) {
        Error(v, "entity_key_serialization_version must be 2 or 3");
      } else {
        c->entity_key_serialization_version = v.Scalar() == "2" ? 2 : 3;
      }
    }
  }

  bool Parse(const fs::path& path, const std::string& rel, YAML::Node* out) {
    Result<std::string> text = ReadFileToString(path.string());
    if (!text.has_value()) {
      file = rel;
      errors.push_back(fmt::format("{}: cannot be read", rel));
      return false;
    }
    return ParseText(*text, rel, out);
  }

  bool ParseText(const std::string& text_in, const std::string& rel, YAML::Node* out) {
    file = rel;
    pinned.reset();
    const std::string* text = &text_in;
    try {
      *out = YAML::Load(*text);
      return true;
    } catch (const YAML::ParserException& e) {
      errors.push_back(
          fmt::format("{}:{}: malformed YAML: {}", rel, SyntaxErrorLine(*text, e), e.msg));
    } catch (const YAML::Exception& e) {
      errors.push_back(fmt::format("{}: {}", rel, e.what()));
    }
    return false;
  }

  // Runs one of the Load* walks over a parsed document. yaml-cpp throws on
  // misuse (a subscript of a scalar, a node that does not exist): such an
  // error becomes one of the file's errors instead of leaving the library.
  template <class Fn>
  void Walk(Fn&& fn) {
    try {
      fn();
    } catch (const YAML::Exception& e) {
      errors.push_back(fmt::format("{}: {}", file, e.what()));
    }
  }
};

void Validate(FeatureRepo* repo, Loader* L) {
  std::set<std::string> names;
  for (const EntityDef& e : repo->entities) {
    if (!names.insert("e:" + e.name).second) L->Error(e.loc, fmt::format("entity \"{}\" is defined twice", e.name));
  }
  for (FeatureViewDef& v : repo->views) {
    const std::string what = fmt::format("feature view \"{}\"", v.name);
    if (!names.insert("v:" + v.name).second) L->Error(v.loc, what + " is defined twice");
    v.join_keys.clear();
    for (const std::string& en : v.entities) {
      const EntityDef* e = repo->FindEntity(en);
      if (!e) {
        L->Error(v.loc, fmt::format("{}: unknown entity \"{}\"", what, en));
        continue;
      }
      if (std::find(v.join_keys.begin(), v.join_keys.end(), e->join_key) != v.join_keys.end()) {
        L->Error(v.loc, fmt::format("{}: join key \"{}\" appears twice", what, e->join_key));
      }
      v.join_keys.push_back(e->join_key);
    }
    for (const FeatureDef& f : v.features) {
      if (std::find(v.join_keys.begin(), v.join_keys.end(), f.name) != v.join_keys.end()) {
        L->Error(v.loc, fmt::format("{}: feature \"{}\" has the name of a join key", what, f.name));
      }
      if (f.name == v.source.timestamp_field || f.name == v.source.created_timestamp_column) {
        L->Error(v.loc, fmt::format("{}: feature \"{}\" is the source's timestamp column", what, f.name));
      }
    }
    if (v.ttl_seconds < 0) L->Error(v.loc, what + ": ttl must not be negative");
  }
  for (const FeatureServiceDef& s : repo->services) {
    const std::string what = fmt::format("feature service \"{}\"", s.name);
    if (!names.insert("s:" + s.name).second) L->Error(s.loc, what + " is defined twice");
    for (const FeatureProjection& p : s.projections) {
      const FeatureViewDef* v = repo->FindView(p.view);
      if (!v) {
        L->Error(s.loc, fmt::format("{}: unknown feature view \"{}\"", what, p.view));
        continue;
      }
      for (const std::string& f : p.features) {
        if (!v->FindFeature(f)) {
          L->Error(s.loc, fmt::format("{}: feature view \"{}\" has no feature \"{}\"", what, p.view, f));
        }
      }
    }
  }
}

Status Collected(const Loader& L) {
  std::string msg;
  for (const std::string& e : L.errors) msg += (msg.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(msg);
}

}  // namespace

Result<FeatureRepo> LoadFeatureRepo(const std::string& dir) { return LoadFeatureRepo(dir, {}); }

Result<FeatureRepo> LoadFeatureRepo(const std::string& dir,
                                    const std::vector<DefinitionDocument>& extra) {
  std::error_code ec;
  const fs::path root = fs::absolute(dir, ec);
  if (ec || !fs::is_directory(root, ec)) {
    return Status::NotFound(fmt::format("feature repository \"{}\" is not a directory", dir));
  }
  const fs::path cfg_path = root / "feature_store.yaml";
  if (!fs::exists(cfg_path, ec)) {
    return Status::NotFound(fmt::format("{} has no feature_store.yaml: is this a feature repository?", root.string()));
  }
  FeatureRepo repo;
  repo.config.repo_dir = root.lexically_normal().string();
  Loader L;
  YAML::Node cfg;
  if (L.Parse(cfg_path, "feature_store.yaml", &cfg)) L.Walk([&] { L.LoadConfig(cfg, &repo.config); });
  if (repo.config.registry_path.empty()) repo.config.registry_path = "data/registry.json";
  repo.config.registry_path = repo.ResolvePath(repo.config.registry_path);
  if (repo.config.online_path.empty()) repo.config.online_path = "data/online_store";
  repo.config.online_path = repo.ResolvePath(repo.config.online_path);
  if (repo.config.log_path.empty()) repo.config.log_path = "data/served_log";
  repo.config.log_path = repo.ResolvePath(repo.config.log_path);

  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      if (name.starts_with(".") || name == "node_modules" || name == "__pycache__") it.disable_recursion_pending();
      continue;
    }
    const std::string ext = p.extension().string();
    if ((ext == ".yaml" || ext == ".yml") && p != cfg_path && !name.starts_with(".")) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    YAML::Node doc;
    std::error_code rel_ec;
    const fs::path rel = fs::relative(p, root, rel_ec);
    if (L.Parse(p, rel_ec ? p.string() : rel.string(), &doc)) L.Walk([&] { L.LoadDefinitions(doc, &repo); });
  }
  for (const DefinitionDocument& d : extra) {
    YAML::Node doc;
    if (L.ParseText(d.text, d.file, &doc)) L.Walk([&] { L.LoadDefinitions(doc, &repo); });
  }
  Validate(&repo, &L);
  if (!L.errors.empty()) return Collected(L);
  return repo;
}

Status CheckSources(const FeatureRepo& repo) {
  std::vector<std::string> errors;
  for (const FeatureViewDef& v : repo.views) {
    const std::string where = fmt::format("{}: feature view \"{}\" source \"{}\"", v.source.loc.ToString(), v.name,
                                          v.source.path);
    auto schema = ReadSourceSchema(repo.ResolvePath(v.source.path), v.source.format);
    if (!schema.ok()) {
      errors.push_back(where + ": " + schema.error().message());
      continue;
    }
    auto find = [&](const std::string& name) -> const Field* {
      std::string col = name;
      for (const auto& [from, to] : v.source.field_mapping) {
        if (to == name) col = from;
      }
      for (const Field& f : *schema) {
        if (f.name == col) return &f;
      }
      return nullptr;
    };
    auto need = [&](const std::string& name, const char* role) -> const Field* {
      const Field* f = find(name);
      if (!f) {
        std::string have;
        for (const Field& sf : *schema) have += (have.empty() ? "" : ", ") + sf.name;
        errors.push_back(fmt::format("{}: has no {} column \"{}\" (columns: {})", where, role, name, have));
      }
      return f;
    };
    if (const Field* ts = need(v.source.timestamp_field, "timestamp")) {
      if (ts->type.id != TypeId::kTimestamp && ts->type.id != TypeId::kDate) {
        errors.push_back(fmt::format("{}: timestamp column \"{}\" is {}, not a timestamp", where, ts->name,
                                     ts->type.ToString()));
      }
    }
    if (!v.source.created_timestamp_column.empty()) {
      if (const Field* c = need(v.source.created_timestamp_column, "created timestamp")) {
        if (c->type.id != TypeId::kTimestamp && c->type.id != TypeId::kDate) {
          errors.push_back(fmt::format("{}: created column \"{}\" is {}, not a timestamp", where, c->name,
                                       c->type.ToString()));
        }
      }
    }
    for (const std::string& k : v.join_keys) need(k, "join key");
    for (const FeatureDef& f : v.features) {
      if (const Field* sf = need(f.name, "feature")) {
        if (!CanCast(sf->type, f.type)) {
          errors.push_back(fmt::format("{}: feature \"{}\" is declared {} but the column is {}", where, f.name,
                                       f.type.ToString(), sf->type.ToString()));
        }
      }
    }
  }
  if (errors.empty()) return Status::Ok();
  std::string msg;
  for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(msg);
}

Result<std::vector<FeatureProjection>> ResolveFeatureRefs(const FeatureRepo& repo, const std::vector<std::string>& refs) {
  std::vector<FeatureProjection> out;
  for (const std::string& ref : refs) {
    const size_t c = ref.find(':');
    if (c == std::string::npos || c == 0 || c + 1 == ref.size()) {
      return Status::InvalidArgument(fmt::format("feature reference \"{}\" must be view:feature", ref));
    }
    const std::string view = ref.substr(0, c), feat = ref.substr(c + 1);
    const FeatureViewDef* v = repo.FindView(view);
    if (!v) return Status::NotFound(fmt::format("unknown feature view \"{}\" (in \"{}\")", view, ref));
    if (!v->FindFeature(feat)) {
      std::string have;
      for (const FeatureDef& f : v->features) have += (have.empty() ? "" : ", ") + f.name;
      return Status::NotFound(fmt::format("feature view \"{}\" has no feature \"{}\" (it has: {})", view, feat, have));
    }
    auto it = std::find_if(out.begin(), out.end(), [&](const FeatureProjection& p) { return p.view == view; });
    if (it == out.end()) {
      out.push_back({view, {feat}});
    } else if (std::find(it->features.begin(), it->features.end(), feat) == it->features.end()) {
      it->features.push_back(feat);
    }
  }
  if (out.empty()) return Status::InvalidArgument("no features requested");
  return out;
}

Result<std::vector<FeatureProjection>> ResolveService(const FeatureRepo& repo, const std::string& service) {
  const FeatureServiceDef* s = repo.FindService(service);
  if (!s) return Status::NotFound(fmt::format("unknown feature service \"{}\"", service));
  std::vector<FeatureProjection> out;
  for (const FeatureProjection& p : s->projections) {
    const FeatureViewDef* v = repo.FindView(p.view);
    if (!v) return Status::NotFound(fmt::format("feature service \"{}\" names unknown view \"{}\"", service, p.view));
    FeatureProjection full = p;
    if (full.features.empty()) {
      for (const FeatureDef& f : v->features) full.features.push_back(f.name);
    }
    out.push_back(std::move(full));
  }
  return out;
}

Status InitFeatureRepo(const std::string& dir, const std::string& project) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create feature repository {}: {}", dir, ec.message()));
  const fs::path cfg = fs::path(dir) / "feature_store.yaml";
  if (fs::exists(cfg, ec)) return Status::Ok();
  const std::string text = fmt::format(
      "# Created by Strata. Definitions go in any other *.yaml file here; then run\n"
      "#   strata features apply --repo {}\n"
      "project: {}\n"
      "registry: data/registry.json\n"
      "provider: local\n"
      "online_store:\n"
      "  type: rocksdb\n"
      "  path: data/online_store\n"
      "entity_key_serialization_version: 3\n",
      dir, project);
  AtomicWriteOptions write;
  write.sync = false;
  Status st = WriteFileAtomic(cfg.string(), text, write);
  if (!st.ok()) return Status::IOError(fmt::format("cannot create {}: {}", cfg.string(), st.message()));
  return Status::Ok();
}

void InferEntityTypes(FeatureRepo* repo) {
  for (EntityDef& e : repo->entities) {
    if (e.value_type) continue;
    for (const FeatureViewDef& v : repo->views) {
      if (std::find(v.entities.begin(), v.entities.end(), e.name) == v.entities.end()) continue;
      auto schema = ReadSourceSchema(repo->ResolvePath(v.source.path), v.source.format);
      if (!schema.ok()) continue;
      std::string col = e.join_key;
      for (const auto& [from, to] : v.source.field_mapping) {
        if (to == e.join_key) col = from;
      }
      for (const Field& f : *schema) {
        if (f.name == col) e.value_type = f.type;
      }
      if (e.value_type) break;
    }
  }
}

}  // namespace strata::features
