#include <strata/features/feature_server.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/core/log.h>
#include <strata/core/strings.h>

namespace strata::features {

namespace {

using json = nlohmann::ordered_json;  // keys in Feast's order: values, statuses, event_timestamps

constexpr log::Logger kLog("features");

struct HttpError {
  int status;
  std::string detail;
};

std::string IsoUtc(int64_t us) {
  std::string s = FormatTimestamp(us, TimeUnit::kMicro, false);
  s[10] = 'T';
  return s + "Z";
}

// IsoUtc without fmt or temporaries: it runs for every feature value of a
// response (5,000 in a 100 x 50 answer).
void AppendIsoUtc(std::string* out, int64_t us) {
  int64_t secs = us / 1000000, frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  if (y < 0 || y > 9999) {
    *out += IsoUtc(us);
    return;
  }
  char b[32];
  auto two = [](char* p, unsigned v) {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  two(b, static_cast<unsigned>(y / 100));
  two(b + 2, static_cast<unsigned>(y % 100));
  b[4] = '-';
  two(b + 5, m);
  b[7] = '-';
  two(b + 8, d);
  b[10] = 'T';
  two(b + 11, static_cast<unsigned>(rem / 3600));
  b[13] = ':';
  two(b + 14, static_cast<unsigned>(rem / 60 % 60));
  b[16] = ':';
  two(b + 17, static_cast<unsigned>(rem % 60));
  size_t n = 19;
  if (frac) {
    b[n++] = '.';
    int digits = 6;
    while (frac % 10 == 0) {
      frac /= 10;
      --digits;
    }
    for (int i = digits - 1; i >= 0; --i) {
      b[n + static_cast<size_t>(i)] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    n += static_cast<size_t>(digits);
  }
  b[n++] = 'Z';
  out->append(b, n);
}

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
    auto t = ParseTimestamp(j.get<std::string>(), TimeUnit::kMicro);
    if (t.ok()) return *t;
    return Status::InvalidArgument(fmt::format("{}: {}", what, t.error().message()));
  }
  return Status::InvalidArgument(fmt::format("{} must be an ISO-8601 time or epoch seconds", what));
}

// A push / write-to-online-store frame: {"col": [values...]}, typed by the view.
Result<Table> TableFromDf(const json& df, const FeatureViewDef& v) {
  if (!df.is_object() || df.empty()) return Status::InvalidArgument("\"df\" must be an object of columns");
  Table t;
  size_t n = SIZE_MAX;
  for (auto it = df.begin(); it != df.end(); ++it) {
    const std::string& name = it.key();
    const json& vals = it.value();
    if (!vals.is_array()) return Status::InvalidArgument(fmt::format("df column \"{}\" must be a list", name));
    if (n == SIZE_MAX) n = vals.size();
    if (vals.size() != n) return Status::InvalidArgument(fmt::format("df column \"{}\" has {} values, others {}", name, vals.size(), n));
    DataType type;
    const FeatureDef* f = v.FindFeature(name);
    const bool is_ts = name == v.source.timestamp_field || name == v.source.created_timestamp_column;
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
        return Status::InvalidArgument(fmt::format("df column \"{}\": {} is not {}", name, x.dump(), type.ToString()));
      };
      switch (type.id) {
        case TypeId::kTimestamp: {
          STRATA_ASSIGN_OR_RETURN(int64_t us, TimeFromJson(x, name.c_str()));
          c.Append<int64_t>(ConvertTime(us, TimeUnit::kMicro, type.unit));
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
          if (x.is_string()) c.AppendString(x.get<std::string>());
          else c.AppendString(x.dump());
          break;
        case TypeId::kDate: return bad();
      }
    }
    STRATA_RETURN_IF_ERROR(t.AddColumn(Field{name, type, true}, std::move(c)));
  }
  return t;
}

void JsonString(std::string* out, std::string_view v) {
  out->push_back('"');
  for (unsigned char c : v) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// std::to_chars: no format-string parsing per value (a 100 x 50 answer has 5,000).
template <class T>
void AppendNumber(std::string* out, T v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void JsonValue(std::string* out, const OnlineValue& v) {
  switch (v.kind) {
    case OnlineValue::kNull: *out += "null"; break;
    case OnlineValue::kBool: *out += v.i ? "true" : "false"; break;
    case OnlineValue::kInt: AppendNumber(out, v.i); break;
    case OnlineValue::kDouble:
      if (std::isfinite(v.d)) {
        AppendNumber(out, v.d);  // shortest round-trip form, as fmt's "{}"
      } else {
        *out += "null";
      }
      break;
    case OnlineValue::kString: JsonString(out, v.s); break;
    case OnlineValue::kBytes: JsonString(out, Base64Encode(v.s)); break;
    case OnlineValue::kTimestamp:
      out->push_back('"');
      AppendIsoUtc(out, v.i);
      out->push_back('"');
      break;
  }
}

// The column-oriented response, written directly: a 100-entity x 50-feature
// answer is 15,000 JSON values, too many for a DOM on the serving path.
std::string ResponseJson(const OnlineResponse& r) {
  std::string out;
  const size_t rows = r.columns.empty() ? 0 : r.columns[0].values.size();
  out.reserve(64 + r.columns.size() * rows * 64);  // ~18 bytes of value, 10 of status, 24 of time
  struct RowTs {
    int64_t us = 0;
    std::string text;  // one allocation per row, reused across the view's columns
  };
  std::vector<RowTs> row_ts(rows);
  out += "{\"metadata\":{\"feature_names\":[";
  for (size_t i = 0; i < r.names.size(); ++i) {
    if (i) out.push_back(',');
    JsonString(&out, r.names[i]);
  }
  out += "]},\"results\":[";
  for (size_t c = 0; c < r.columns.size(); ++c) {
    const OnlineResponse::Column& col = r.columns[c];
    out += c ? ",{\"values\":[" : "{\"values\":[";
    for (size_t i = 0; i < col.values.size(); ++i) {
      if (i) out.push_back(',');
      JsonValue(&out, col.values[i]);
    }
    out += "],\"statuses\":[";
    for (size_t i = 0; i < col.statuses.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('"');
      out += col.statuses[i];
      out.push_back('"');
    }
    out += "],\"event_timestamps\":[";
    for (size_t i = 0; i < col.event_ts_us.size(); ++i) {
      if (i) out.push_back(',');
      // The features of a view share each row's timestamp: format it once per row.
      RowTs& cached = row_ts[i];
      if (cached.us != col.event_ts_us[i] || cached.text.empty()) {
        cached.us = col.event_ts_us[i];
        cached.text.clear();
        AppendIsoUtc(&cached.text, cached.us);
      }
      out.push_back('"');
      out += cached.text;
      out.push_back('"');
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

}  // namespace

struct FeatureServer::Impl {
  FeatureRepo registry;
  std::unique_ptr<OnlineStore> store;
  FeatureServerOptions options;
  std::unique_ptr<http::Server> server;
  std::unique_ptr<ServingLogger> logger;
  // Registry refresh: the file's stamp when last read; next_refresh_us gates
  // the stat to once per interval across all request threads.
  std::string registry_path;
  RepoConfig config;
  std::atomic<int64_t> next_refresh_us{0};
  std::mutex refresh_mu;  // guards reg_mtime, reg_size
  std::filesystem::file_time_type reg_mtime{};
  uintmax_t reg_size = 0;
  // Readers share the registry; a materialization works on a copy (so reads go
  // on meanwhile) and swaps it in. materialize_mu serializes materializations.
  std::shared_mutex registry_mu;  // guards registry
  std::mutex materialize_mu;

  void Handle(http::Request& req, http::ResponseWriter& w) {
    int status = 200;
    std::string body;
    try {
      if (req.path == "/get-online-features" && req.method == "POST") {
        CheckKey(req);
        body = GetOnline(ParseBody(req));
      } else {
        body = Route(req).dump();
      }
    } catch (const HttpError& e) {
      status = e.status;
      body = json{{"detail", e.detail}}.dump();
    } catch (const nlohmann::json::exception& e) {  // a field of the wrong JSON type
      status = 422;
      body = json{{"detail", std::string("malformed request: ") + e.what()}}.dump();
    } catch (const std::exception& e) {
      status = 500;
      body = json{{"detail", std::string("internal error: ") + e.what()}}.dump();
    }
    w.SetStatus(status);
    w.AddHeader("Content-Type", "application/json");
    (void)w.Send(body);
  }

  void CheckKey(http::Request& req) {
    if (options.api_key.empty()) return;
    auto auth = req.Header("Authorization");
    auto key = req.Header("X-API-Key");
    const bool ok = (auth && *auth == "Bearer " + options.api_key) || (key && *key == options.api_key);
    if (!ok && req.path != "/health") throw HttpError{401, "missing or wrong API key"};
  }

  static void Check(const Status& st) {
    if (st.ok()) return;
    int code = 500;
    switch (st.code()) {
      case StatusCode::kInvalidArgument: code = 422; break;
      case StatusCode::kNotFound: code = 404; break;
      case StatusCode::kUnavailable: code = 503; break;
      default: break;
    }
    throw HttpError{code, st.message()};
  }

  json ParseBody(http::Request& req) {
    auto raw = req.ReadAllBody(64 << 20);
    if (!raw.ok()) throw HttpError{413, raw.error().message()};
    json j = json::parse(*raw, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw HttpError{422, "the request body must be a JSON object"};
    return j;
  }

  json Route(http::Request& req) {
    CheckKey(req);
    if (req.path == "/health") {
      if (req.method != "GET") throw HttpError{405, "use GET"};
      return json::object();
    }
    if (req.method != "POST") throw HttpError{req.path == "/get-online-features" ? 405 : 404, "not found"};
    if (req.path == "/push" || req.path == "/write-to-online-store") return Push(ParseBody(req), req.path == "/push");
    if (req.path == "/materialize" || req.path == "/materialize-incremental") {
      return MaterializeReq(ParseBody(req), req.path == "/materialize-incremental");
    }
    throw HttpError{404, fmt::format("no endpoint {}", req.path)};
  }

  void StampRegistry() {
    std::error_code ec;
    reg_mtime = std::filesystem::last_write_time(registry_path, ec);
    if (ec) reg_mtime = {};
    reg_size = ec ? 0 : std::filesystem::file_size(registry_path, ec);
  }

  // Re-reads the registry when its file changed (at most once per interval
  // unless forced). A registry that cannot be read keeps the old one serving.
  void MaybeRefresh(bool force) {
    if (registry_path.empty() || (!force && options.registry_refresh_ms <= 0)) return;
    const int64_t now = NowMicros();
    int64_t next = next_refresh_us.load(std::memory_order_relaxed);
    if (!force) {
      if (now < next) return;
      if (!next_refresh_us.compare_exchange_strong(next, now + int64_t{options.registry_refresh_ms} * 1000)) return;
    }
    std::lock_guard<std::mutex> g(refresh_mu);
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(registry_path, ec);
    if (ec) return;
    const uintmax_t size = std::filesystem::file_size(registry_path, ec);
    if (ec || (mtime == reg_mtime && size == reg_size)) return;
    reg_mtime = mtime;
    reg_size = size;
    auto r = LoadRegistry(registry_path);
    if (!r.ok()) {
      kLog.Warn("feature server: keeping the previous registry: {}", r.error().ToString());
      return;
    }
    r->config = config;
    std::unique_lock<std::shared_mutex> l(registry_mu);
    registry = std::move(*r);
    kLog.Info("feature server: registry {} reloaded ({} feature views)", registry_path, registry.views.size());
  }

  std::string GetOnline(const json& j) {
    MaybeRefresh(false);
    const bool log = logger && logger->Sample();
    std::vector<DataType> log_types;
    std::vector<FeatureProjection> feats;
    std::shared_lock<std::shared_mutex> l(registry_mu);
    {
      if (j.contains("feature_service") && !j["feature_service"].is_null()) {
        if (!j["feature_service"].is_string()) throw HttpError{422, "feature_service must be a string"};
        auto r = ResolveService(registry, j["feature_service"].get<std::string>());
        Check(r.error());
        feats = std::move(*r);
      } else {
        if (!j.contains("features") || !j["features"].is_array()) {
          throw HttpError{422, "give \"features\": [\"view:feature\", ...] or \"feature_service\""};
        }
        std::vector<std::string> refs;
        for (const json& f : j["features"]) {
          if (!f.is_string()) throw HttpError{422, "features must be strings \"view:feature\""};
          refs.push_back(f.get<std::string>());
        }
        auto r = ResolveFeatureRefs(registry, refs);
        Check(r.error());
        feats = std::move(*r);
      }
    }
    if (!j.contains("entities") || !j["entities"].is_object()) throw HttpError{422, "\"entities\" must be an object"};
    std::vector<std::pair<std::string, std::vector<OnlineValue>>> entities;
    for (auto it = j["entities"].begin(); it != j["entities"].end(); ++it) {
      if (!it.value().is_array()) throw HttpError{422, fmt::format("entity \"{}\" must be a list", it.key())};
      std::vector<OnlineValue> vals;
      for (const json& x : it.value()) {
        if (x.is_object() || x.is_array()) throw HttpError{422, fmt::format("entity \"{}\" holds a non-scalar", it.key())};
        vals.push_back(FromJson(x));
      }
      entities.emplace_back(it.key(), std::move(vals));
    }
    bool full = false;
    if (j.contains("full_feature_names") && !j["full_feature_names"].is_null()) {
      if (!j["full_feature_names"].is_boolean()) throw HttpError{422, "full_feature_names must be true or false"};
      full = j["full_feature_names"].get<bool>();
    }
    const int64_t now = NowMicros();
    Result<OnlineResponse> r = GetOnlineFeatures(registry, store.get(), feats, entities, full, now);
    if (log && r.ok()) {
      for (const FeatureProjection& p : feats) {
        const FeatureViewDef* v = registry.FindView(p.view);
        for (const std::string& f : p.features) {
          const FeatureDef* d = v ? v->FindFeature(f) : nullptr;
          log_types.push_back(d ? d->type : DataType::Double());
        }
      }
    }
    l.unlock();
    Check(r.error());
    std::string body = ResponseJson(*r);
    if (log) logger->Log(std::move(*r), entities.size(), std::move(log_types), now);
    return body;
  }

  json Push(const json& j, bool push) {
    const char* key = push ? "push_source_name" : "feature_view_name";
    if (!j.contains(key) || !j[key].is_string()) throw HttpError{422, fmt::format("\"{}\" is required", key)};
    const std::string view = j[key].get<std::string>();
    const std::string to = j.value("to", "online");
    if (to == "offline") throw HttpError{422, "pushing to the offline store is not supported"};
    MaybeRefresh(false);
    std::shared_lock<std::shared_mutex> l(registry_mu);
    const FeatureViewDef* v = registry.FindView(view);
    if (!v) throw HttpError{404, fmt::format("unknown feature view \"{}\" (push sources are named after their view)", view)};
    auto t = TableFromDf(j.value("df", json()), *v);
    Check(t.error());
    Check(WriteToOnlineStore(registry, store.get(), view, *t));
    return json::object();
  }

  json MaterializeReq(const json& j, bool incremental) {
    MaterializeOptions opt;
    if (j.contains("feature_views") && !j["feature_views"].is_null()) {
      if (!j["feature_views"].is_array()) throw HttpError{422, "feature_views must be a list of view names"};
      for (const json& v : j["feature_views"]) {
        if (!v.is_string()) throw HttpError{422, "feature_views must be a list of view names"};
        opt.views.push_back(v.get<std::string>());
      }
    }
    auto end = TimeFromJson(j.value("end_ts", json()), "end_ts");
    Check(end.error());
    std::lock_guard<std::mutex> m(materialize_mu);
    // Materializing rewrites the registry file: start from its latest content
    // so a recent `apply` is not undone.
    MaybeRefresh(true);
    FeatureRepo copy;
    {
      std::shared_lock<std::shared_mutex> l(registry_mu);
      copy = registry;
    }
    MaterializeStats st;
    if (incremental) {
      Check(MaterializeIncremental(&copy, store.get(), *end, opt, &st));
    } else {
      auto start = TimeFromJson(j.value("start_ts", json()), "start_ts");
      Check(start.error());
      opt.start_us = *start;
      opt.end_us = *end;
      Check(Materialize(&copy, store.get(), opt, &st));
    }
    {
      std::unique_lock<std::shared_mutex> l(registry_mu);
      registry = std::move(copy);
    }
    return {{"views", st.views}, {"rows_scanned", st.rows_scanned}, {"entities_written", st.entities_written}};
  }
};

FeatureServer::FeatureServer(FeatureRepo registry, std::unique_ptr<OnlineStore> store, FeatureServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->registry = std::move(registry);
  impl_->store = std::move(store);
  impl_->options = std::move(options);
  impl_->registry_path = impl_->registry.config.registry_path;
  impl_->config = impl_->registry.config;
}

FeatureServer::~FeatureServer() { Stop(); }

Status FeatureServer::Start() {
  impl_->StampRegistry();
  impl_->next_refresh_us = NowMicros() + int64_t{impl_->options.registry_refresh_ms} * 1000;
  if (impl_->options.logging.sample_rate > 0 && !impl_->logger) {
    STRATA_ASSIGN_OR_RETURN(impl_->logger, ServingLogger::Open(impl_->options.logging));
  }
  http::ServerOptions so;
  so.name = "features";
  so.bind_address = impl_->options.host;
  so.port = impl_->options.port;
  so.threads = impl_->options.threads;
  so.error_handler = [](int status, std::string_view message, http::ResponseWriter& w) {
    w.SetStatus(status);
    w.AddHeader("Content-Type", "application/json");
    (void)w.Send(json{{"detail", std::string(message)}}.dump());
  };
  Impl* impl = impl_.get();
  impl_->server = std::make_unique<http::Server>(so, [impl](http::Request& req, http::ResponseWriter& w) {
    impl->Handle(req, w);
  });
  STRATA_RETURN_IF_ERROR(impl_->server->Start());
  kLog.Info("feature server listening on {}:{}", impl_->options.host, impl_->server->port());
  if (impl_->logger) {
    kLog.Info("feature server: logging {:.3g} of served vectors to {}", impl_->options.logging.sample_rate,
              impl_->options.logging.path);
  }
  return Status::Ok();
}

void FeatureServer::Stop() {
  if (impl_ && impl_->server) {
    impl_->server->Stop();
    impl_->server.reset();
  }
  if (impl_ && impl_->logger) {
    Status st = impl_->logger->Close();
    if (!st.ok()) kLog.Warn("feature server: served-vector log: {}", st.ToString());
    impl_->logger.reset();
  }
}

int FeatureServer::port() const { return impl_->server ? impl_->server->port() : 0; }

ServingLogger* FeatureServer::logger() { return impl_->logger.get(); }

ServingLogOptions LoggingOptionsFromConfig(const RepoConfig& config) {
  ServingLogOptions o;
  o.sample_rate = config.log_sample_rate;
  o.path = config.log_path;
  o.max_rows_per_file = static_cast<int64_t>(config.log_max_rows_per_file);
  o.max_seconds_per_file = config.log_max_seconds_per_file;
  return o;
}

Result<FeatureRepo> LoadServingRepo(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(FeatureRepo repo, LoadFeatureRepo(dir));
  std::error_code ec;
  if (!std::filesystem::exists(repo.config.registry_path, ec)) {
    kLog.Warn("feature repository {} has no registry yet: serving no feature views until "
              "`strata features apply --repo {}` writes {}",
              repo.config.repo_dir, dir, repo.config.registry_path);
    FeatureRepo empty;
    empty.config = repo.config;
    return empty;
  }
  STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadRegistry(repo.config.registry_path));
  reg.config = repo.config;
  return reg;
}

}  // namespace strata::features
