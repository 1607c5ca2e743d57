// The console's feature-view reports computed from a view's offline source:
// online freshness (how old the newest materialized value is) and skew (PSI
// per feature between a reference window of the source and a current sample:
// another window of the source, or what the feature server served, read from
// its served-vector log). Both read the source the registry names (projected
// to the columns needed, Parquet a row group at a time), so they cost one scan
// of it per request; a serving-log report also reads every log file once.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/strings.h>
#include <strata/features/io.h>
#include <strata/features/online.h>
#include <strata/features/online_service.h>
#include <strata/features/repo.h>
#include <strata/features/skew.h>

#include "console/console_internal.h"

namespace strata::console {
namespace {

using features::Column;
using features::FeatureViewDef;
using features::Table;
using features::TimeUnit;
using features::TypeId;

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

// [start, end) in microseconds since the epoch.
struct Window {
  int64_t start = 0, end = 0;
};

// What one scan of a view's source gathered.
struct SourceScan {
  int64_t rows = 0, rows_null_ts = 0;
  int64_t min_us = kNone, max_us = kNone;
  int64_t newest_materialized_us = kNone;  // the newest row inside a materialized interval
  Table windows[2];                        // the feature columns of the rows in each window
};

// The source column that holds feature `name` (field_mapping renames source
// columns to feature names).
std::string SourceColumn(const FeatureViewDef& v, const std::string& name) {
  for (const auto& [src, dst] : v.source.field_mapping)
    if (dst == name) return src;
  return name;
}

Result<int64_t> TimeAtUs(const Column& c, size_t r) {
  switch (c.type().id) {
    case TypeId::kTimestamp:
      return features::ConvertTime(c.values<int64_t>()[r], c.type().unit, TimeUnit::kMicro);
    case TypeId::kDate:
      return static_cast<int64_t>(c.values<int32_t>()[r]) * 86'400'000'000;
    case TypeId::kString:
      return features::ParseTimestamp(c.StringAt(r), TimeUnit::kMicro);
    default:
      return Status::InvalidArgument(
          fmt::format("the timestamp column is of type {}, not a timestamp", c.type().ToString()));
  }
}

bool InMaterialized(const FeatureViewDef& v, int64_t ts) {
  for (const auto& i : v.materialization_intervals)
    if (ts >= i.start_us && ts <= i.end_us) return true;
  return false;
}

// One scan of the view's source: time range, newest materialized row and the
// rows of up to two windows (features `names`).
Result<SourceScan> ScanSource(const features::FeatureRepo& repo, const FeatureViewDef& v,
                              const std::vector<std::string>& names,
                              const std::vector<Window>& windows) {
  std::vector<std::string> cols = {v.source.timestamp_field};
  for (const auto& n : names) cols.push_back(SourceColumn(v, n));
  const std::string path = repo.ResolvePath(v.source.path);
  auto reader = features::BatchReader::Open(path, features::FormatFromPath(path), cols);
  if (!reader.ok())
    return reader.error().WithContext(fmt::format("reading view {}'s source", v.name));
  // Columns by name: the projection need not keep the order asked.
  const features::Schema& have = (*reader)->schema();
  auto index_of = [&](const std::string& col) {
    for (size_t i = 0; i < have.size(); ++i)
      if (have[i].name == col) return static_cast<int>(i);
    return -1;
  };
  std::vector<int> idx;
  for (const auto& c : cols) {
    idx.push_back(index_of(c));
    if (idx.back() < 0)
      return Status::NotFound(
          fmt::format("view {}'s source {} has no column \"{}\"", v.name, path, c));
  }
  SourceScan s;
  for (size_t w = 0; w < windows.size(); ++w) {
    features::Schema schema;
    for (size_t i = 0; i < names.size(); ++i)
      schema.push_back({names[i], have[idx[i + 1]].type, true});
    s.windows[w] = Table(schema);
  }
  Table batch;
  for (;;) {
    auto more = (*reader)->Next(&batch);
    if (!more.ok()) return more.error().WithContext(fmt::format("reading {}", path));
    if (!*more) break;
    const Column& ts = batch.column(idx[0]);
    for (size_t r = 0; r < batch.num_rows(); ++r) {
      ++s.rows;
      if (ts.IsNull(r)) {
        ++s.rows_null_ts;
        continue;
      }
      STRATA_ASSIGN_OR_RETURN(int64_t t, TimeAtUs(ts, r));
      s.min_us = s.min_us == kNone ? t : std::min(s.min_us, t);
      s.max_us = std::max(s.max_us, t);
      if (InMaterialized(v, t)) s.newest_materialized_us = std::max(s.newest_materialized_us, t);
      for (size_t w = 0; w < windows.size(); ++w) {
        if (t < windows[w].start || t >= windows[w].end) continue;
        for (size_t c = 0; c < names.size(); ++c)
          s.windows[w].column(c).AppendFrom(batch.column(idx[c + 1]), r);
      }
    }
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    size_t n = names.empty() ? 0 : s.windows[w].column(0).size();
    s.windows[w].set_num_rows(n);
  }
  return s;
}

nlohmann::json OrNull(int64_t v) {
  return v == kNone ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// The view named in the query (?view=) or body, from the served repository.
struct ViewRef {
  features::FeatureRepo repo;
  const FeatureViewDef* view = nullptr;
};

bool LoadView(const std::string& repo_dir, const std::string& name, http::ResponseWriter& w,
              ViewRef* out) {
  if (repo_dir.empty()) {
    SendError(w, 501, "NotImplemented", "this server serves no feature repository");
    return false;
  }
  auto repo = features::LoadServingRepo(repo_dir);
  if (!repo.ok()) {
    SendError(w, 500, "RegistryUnreadable", repo.error().ToString());
    return false;
  }
  out->repo = std::move(*repo);
  out->view = out->repo.FindView(name);
  if (out->view == nullptr) {
    SendError(
        w, 404, "NoSuchFeatureView",
        fmt::format("no feature view \"{}\" in the registry (run `strata features apply`?)", name));
    return false;
  }
  return true;
}

// A window's bound: microseconds since the epoch, or a timestamp string.
Result<int64_t> Bound(const nlohmann::json& j, const char* side, const char* which) {
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format(
        "{}.{} must be a timestamp (\"2024-01-01T00:00:00Z\") or microseconds since the epoch",
        side, which));
  };
  if (!j.is_object() || !j.contains(which)) return bad();
  const auto& v = j[which];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_string()) return bad();
  auto t = features::ParseTimestamp(v.get<std::string>(), TimeUnit::kMicro);
  if (!t.ok()) return bad();
  return *t;
}

Result<Window> ParseWindow(const nlohmann::json& body, const char* side) {
  if (!body.contains(side) || !body[side].is_object())
    return Status::InvalidArgument(fmt::format("expected \"{}\": {{\"start\", \"end\"}}", side));
  Window w;
  STRATA_ASSIGN_OR_RETURN(w.start, Bound(body[side], side, "start"));
  STRATA_ASSIGN_OR_RETURN(w.end, Bound(body[side], side, "end"));
  if (w.start >= w.end)
    return Status::InvalidArgument(fmt::format("the {} window ends before it starts", side));
  return w;
}

// The features to compare: those named (each must be the view's) or all of them.
Result<std::vector<std::string>> SkewFeatures(const nlohmann::json& body, const FeatureViewDef& v) {
  std::vector<std::string> names;
  if (body.contains("features") && !body["features"].is_null()) {
    if (!body["features"].is_array())
      return Status::InvalidArgument("features must be an array of feature names");
    for (const auto& f : body["features"]) {
      if (!f.is_string() || v.FindFeature(f.get<std::string>()) == nullptr)
        return Status::InvalidArgument(
            fmt::format("{} is not a feature of view {}", f.dump(), v.name));
      names.push_back(f.get<std::string>());
    }
  }
  if (names.empty())
    for (const auto& f : v.features) names.push_back(f.name);
  if (names.empty()) return Status::InvalidArgument("view " + v.name + " has no features");
  return names;
}

nlohmann::json PsiJson(const features::PsiResult& r) {
  nlohmann::json bins = nlohmann::json::array();
  for (const auto& b : r.bins)
    bins.push_back({{"bin", b.label}, {"reference", b.reference}, {"current", b.serving}});
  return {{"feature", r.feature},
          {"kind", r.kind},
          {"psi", r.psi},
          {"verdict", r.verdict},
          {"reference_rows", r.reference_rows},
          {"current_rows", r.serving_rows},
          {"bins", std::move(bins)}};
}

// What the feature server served for a view's features, from its log: per
// feature the values of the rows whose __log_timestamp is in the window (all
// rows without one). A log column is the feature's response name: view__name
// (full_feature_names) or the bare name.
struct LogSample {
  std::vector<std::pair<std::string, Column>> columns;  // by feature name
  int64_t files = 0, files_with_view = 0, rows = 0;     // rows: in the window
  int64_t min_us = kNone, max_us = kNone;               // log times of the view's rows
};

Result<std::vector<std::string>> LogFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code tec;
    if (it->is_regular_file(tec) && StartsWith(name, "served-") && name.ends_with(".parquet"))
      files.push_back(it->path().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return Status::IOError(fmt::format("cannot list the served-vector log: {}", ec.message()));
  std::sort(files.begin(), files.end());  // names start with the logger's start time
  return files;
}

Status AddLogFile(const std::string& file, const FeatureViewDef& v,
                  const std::vector<std::string>& names, const std::optional<Window>& window,
                  LogSample* out) {
  STRATA_ASSIGN_OR_RETURN(Table t, features::ReadTableFile(file));
  std::vector<int> idx;
  bool any = false;
  for (const auto& n : names) {
    int ix = t.FieldIndex(v.name + "__" + n);
    if (ix < 0) ix = t.FieldIndex(n);
    idx.push_back(ix);
    any |= ix >= 0;
  }
  if (!any) return Status::Ok();  // requests for other views
  ++out->files_with_view;
  const int ts = t.FieldIndex("__log_timestamp");
  std::vector<size_t> rows;
  for (size_t r = 0; r < t.num_rows(); ++r) {
    if (ts >= 0 && !t.column(ts).IsNull(r)) {
      STRATA_ASSIGN_OR_RETURN(int64_t at, TimeAtUs(t.column(ts), r));
      out->min_us = out->min_us == kNone ? at : std::min(out->min_us, at);
      out->max_us = std::max(out->max_us, at);
      if (window && (at < window->start || at >= window->end)) continue;
    } else if (window) {
      continue;
    }
    rows.push_back(r);
  }
  out->rows += static_cast<int64_t>(rows.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (idx[i] < 0) continue;
    Column col = t.column(idx[i]);
    Column& dst = out->columns[i].second;
    if (dst.size() == 0 && dst.type().ToString() != col.type().ToString()) dst = Column(col.type());
    if (col.type().ToString() != dst.type().ToString()) {
      auto cast = features::CastColumn(col, dst.type());
      if (!cast.ok())
        return cast.error().WithContext(fmt::format("{}: column \"{}\"", file, names[i]));
      col = std::move(*cast);
    }
    for (size_t r : rows) dst.AppendFrom(col, r);
  }
  return Status::Ok();
}

Result<LogSample> ReadServingLog(const std::string& dir, const FeatureViewDef& v,
                                 const std::vector<std::string>& names,
                                 const std::optional<Window>& window) {
  LogSample s;
  for (const auto& n : names) {
    const features::FeatureDef* f = v.FindFeature(n);
    s.columns.emplace_back(n, Column(f ? f->type : features::DataType()));
  }
  STRATA_ASSIGN_OR_RETURN(auto files, LogFiles(dir));
  s.files = static_cast<int64_t>(files.size());
  for (const auto& file : files)
    STRATA_RETURN_IF_ERROR(AddLogFile(file, v, names, window, &s).WithContext("served-vector log"));
  // A feature never requested has no values: left out of the report.
  std::erase_if(s.columns, [](const auto& c) { return c.second.size() == 0; });
  return s;
}

std::string WindowText(const Window& w) {
  return fmt::format("[{}, {})", features::FormatTimestamp(w.start, TimeUnit::kMicro, true),
                     features::FormatTimestamp(w.end, TimeUnit::kMicro, true));
}

}  // namespace

void Console::Impl::FeatureFreshness(http::Request& req, http::ResponseWriter& w) {
  if (req.method != "GET")
    return SendError(w, 405, "MethodNotAllowed", "freshness is read with GET ?view=NAME");
  std::string name;
  for (std::string_view kv : Split(req.query, '&'))
    if (StartsWith(kv, "view="))
      if (auto d = UriDecode(kv.substr(5), true)) name = *d;
  if (name.empty()) return SendError(w, 400, "BadRequest", "name the view: ?view=NAME");
  ViewRef ref;
  if (!LoadView(opts.features_repo, name, w, &ref)) return;
  const FeatureViewDef& v = *ref.view;
  auto scan = ScanSource(ref.repo, v, {}, {});
  if (!scan.ok()) return SendError(w, 422, "SourceUnreadable", scan.error().ToString());
  int64_t last_end = kNone;
  for (const auto& i : v.materialization_intervals) last_end = std::max(last_end, i.end_us);
  SendJson(w, 200,
           nlohmann::json{{"view", v.name},
                          {"now_us", features::NowMicros()},
                          {"ttl_seconds", v.ttl_seconds},
                          {"online", v.online},
                          {"materializations", v.materialization_intervals.size()},
                          {"last_materialized_end_us", OrNull(last_end)},
                          {"newest_online_event_us", OrNull(scan->newest_materialized_us)},
                          {"source_rows", scan->rows},
                          {"source_rows_without_timestamp", scan->rows_null_ts},
                          {"source_oldest_event_us", OrNull(scan->min_us)},
                          {"source_newest_event_us", OrNull(scan->max_us)}}
               .dump());
}

namespace {

bool WantsServingLog(const nlohmann::json& body) {
  return body.contains("current") && body["current"].is_object() &&
         body["current"].contains("serving_log");
}

// The current window of a serving-log report: none (every logged row) or
// start and end on the log's __log_timestamp.
Result<std::optional<Window>> ParseLogWindow(const nlohmann::json& body) {
  const auto& c = body["current"];
  if (!c["serving_log"].is_boolean() || !c["serving_log"].get<bool>())
    return Status::InvalidArgument("current.serving_log must be true (or leave it out)");
  for (const auto& [k, _] : c.items())
    if (k != "serving_log" && k != "start" && k != "end")
      return Status::InvalidArgument(
          fmt::format("unknown field current.{} (a serving-log window takes start and end)", k));
  if (!c.contains("start") && !c.contains("end")) return std::optional<Window>();
  STRATA_ASSIGN_OR_RETURN(Window w, ParseWindow(body, "current"));
  return std::optional<Window>(w);
}

std::string EmptyWindowMessage(const char* side, const Window& w, const std::string& what,
                               int64_t min_us, int64_t max_us) {
  std::string range = min_us == kNone
                          ? "it holds no timestamped rows"
                          : fmt::format("its events run from {} to {}",
                                        features::FormatTimestamp(min_us, TimeUnit::kMicro, true),
                                        features::FormatTimestamp(max_us, TimeUnit::kMicro, true));
  return fmt::format("the {} window {} holds no rows of {} ({}): choose a window inside it", side,
                     WindowText(w), what, range);
}

// The server's own path of the log is not for every signed-in user: errors
// name the log's files relative to it.
std::string WithoutLogDir(std::string text, const std::string& dir) {
  for (size_t p; !dir.empty() && (p = text.find(dir)) != std::string::npos;)
    text.replace(p, dir.size(), "SERVING_LOG");
  return text;
}

// Skew of the reference window of the source against what was served.
void SkewAgainstLog(const ConsoleOptions& opts, http::ResponseWriter& w,
                    const features::FeatureRepo& repo, const FeatureViewDef& v,
                    const std::vector<std::string>& names, const Window& rw,
                    const std::optional<Window>& cw) {
  if (opts.serving_log_dir.empty())
    return SendError(w, 501, "NotImplemented",
                     "the feature server is switched off on this server: no served-vector log");
  // What the feature server has queued becomes files first, so the report
  // includes the requests served until now.
  if (opts.flush_serving_log)
    if (Status st = opts.flush_serving_log(); !st.ok())
      return SendError(w, 502, "ServingLogUnwritable",
                       WithoutLogDir(st.ToString(), opts.serving_log_dir));
  auto log = ReadServingLog(opts.serving_log_dir, v, names, cw);
  if (!log.ok())
    return SendError(w, 422, "ServingLogUnreadable",
                     WithoutLogDir(log.error().ToString(), opts.serving_log_dir));
  if (log->files_with_view == 0)
    return SendError(
        w, 404, "NoServingLog",
        fmt::format("the served-vector log holds no request for view {} ({} log file(s)): turn "
                    "logging on (feature_server.logging.sample_rate in feature_store.yaml, or "
                    "`strata server --features-log-sample-rate`) and serve some requests",
                    v.name, log->files));
  if (log->columns.empty() || log->rows == 0)
    return SendError(
        w, 400, "EmptyWindow",
        cw ? EmptyWindowMessage("current", *cw, "the served-vector log for view " + v.name,
                                log->min_us, log->max_us)
           : "the served-vector log holds no values of the features asked for");
  std::vector<std::string> served;
  for (const auto& [n, _] : log->columns) served.push_back(n);
  auto scan = ScanSource(repo, v, served, {rw});
  if (!scan.ok()) return SendError(w, 422, "SourceUnreadable", scan.error().ToString());
  if (scan->windows[0].num_rows() == 0)
    return SendError(w, 400, "EmptyWindow",
                     EmptyWindowMessage("reference", rw, fmt::format("view {}'s source", v.name),
                                        scan->min_us, scan->max_us));
  auto res = features::ComputeSkew(scan->windows[0], log->columns, served);
  if (!res.ok()) return SendError(w, 400, "SkewFailed", res.error().ToString());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : *res) out.push_back(PsiJson(r));
  nlohmann::json cur = {{"source", "serving_log"},
                        {"log_files", log->files_with_view},
                        {"log_oldest_us", OrNull(log->min_us)},
                        {"log_newest_us", OrNull(log->max_us)}};
  if (cw) {
    cur["start_us"] = cw->start;
    cur["end_us"] = cw->end;
  }
  nlohmann::json missing = nlohmann::json::array();
  for (const auto& n : names)
    if (std::find(served.begin(), served.end(), n) == served.end()) missing.push_back(n);
  SendJson(w, 200,
           nlohmann::json{{"view", v.name},
                          {"reference", {{"start_us", rw.start}, {"end_us", rw.end}}},
                          {"current", std::move(cur)},
                          {"reference_rows", scan->windows[0].num_rows()},
                          {"current_rows", log->rows},
                          {"not_served", std::move(missing)},
                          {"features", std::move(out)}}
               .dump());
}

}  // namespace

void Console::Impl::FeatureSkew(http::Request& req, http::ResponseWriter& w) {
  if (req.method != "POST")
    return SendError(w, 405, "MethodNotAllowed",
                     "skew is computed with POST {view, reference, current, features?}");
  auto body = req.ReadAllBody(64 * 1024);
  nlohmann::json j;
  if (body) j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object() || !j.contains("view") || !j["view"].is_string())
    return SendError(w, 400, "BadRequest",
                     "expected {\"view\", \"reference\": {\"start\", \"end\"}, \"current\": "
                     "{\"start\", \"end\"} or {\"serving_log\": true, \"start\"?, \"end\"?}, "
                     "\"features\"?}");
  for (const auto& [k, _] : j.items())
    if (k != "view" && k != "reference" && k != "current" && k != "features")
      return SendError(w, 400, "BadRequest",
                       fmt::format("unknown field \"{}\" (this API takes view, reference, "
                                   "current and features)",
                                   k));
  ViewRef ref;
  if (!LoadView(opts.features_repo, j["view"], w, &ref)) return;
  const FeatureViewDef& v = *ref.view;
  auto rw = ParseWindow(j, "reference");
  if (!rw.ok()) return SendError(w, 400, "BadRequest", rw.error().message());
  const bool from_log = WantsServingLog(j);
  std::optional<Window> cw;
  if (from_log) {
    auto lw = ParseLogWindow(j);
    if (!lw.ok()) return SendError(w, 400, "BadRequest", lw.error().message());
    cw = *lw;
  } else {
    auto sw = ParseWindow(j, "current");
    if (!sw.ok()) return SendError(w, 400, "BadRequest", sw.error().message());
    cw = *sw;
  }
  auto names = SkewFeatures(j, v);
  if (!names.ok()) return SendError(w, 400, "BadRequest", names.error().message());
  if (from_log) return SkewAgainstLog(opts, w, ref.repo, v, *names, *rw, cw);
  auto scan = ScanSource(ref.repo, v, *names, {*rw, *cw});
  if (!scan.ok()) return SendError(w, 422, "SourceUnreadable", scan.error().ToString());
  const Window ws[2] = {*rw, *cw};
  for (int i = 0; i < 2; ++i) {
    if (scan->windows[i].num_rows() > 0) continue;
    return SendError(
        w, 400, "EmptyWindow",
        EmptyWindowMessage(i == 0 ? "reference" : "current", ws[i],
                           fmt::format("view {}'s source", v.name), scan->min_us, scan->max_us));
  }
  auto res = features::ComputeSkew(scan->windows[0], scan->windows[1], *names);
  if (!res.ok()) return SendError(w, 400, "SkewFailed", res.error().ToString());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : *res) out.push_back(PsiJson(r));
  SendJson(w, 200,
           nlohmann::json{
               {"view", v.name},
               {"reference", {{"start_us", rw->start}, {"end_us", rw->end}}},
               {"current", {{"source", "offline"}, {"start_us", cw->start}, {"end_us", cw->end}}},
               {"reference_rows", scan->windows[0].num_rows()},
               {"current_rows", scan->windows[1].num_rows()},
               {"features", std::move(out)}}
               .dump());
}

}  // namespace strata::console
