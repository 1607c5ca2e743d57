#include "cli/features_cmds.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/core/log.h>
#include <strata/feast/handler.h>
#include <strata/features/historical.h>
#include <strata/features/io.h>
#include <strata/features/online.h>
#include <strata/features/online_service.h>
#include <strata/features/parquet.h>
#include <strata/features/repo.h>
#include <strata/features/serving_log.h>
#include <strata/features/skew.h>

#include "cli/features_py.h"
#include "cli/stop_signals.h"

namespace strata::cli {

namespace {

using namespace strata::features;  // NOLINT

constexpr log::Logger kLog("features");

int Fail(const Status& st) {
  fmt::print(stderr, "strata features: {}\n", st.message().empty() ? st.ToString() : st.message());
  return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::optional<int64_t> ParseBytes(std::string s) {
  int64_t mult = 1;
  auto ends = [&](const char* suf) {
    const size_t n = std::strlen(suf);
    if (s.size() > n && s.compare(s.size() - n, n, suf) == 0) {
      s.resize(s.size() - n);
      return true;
    }
    return false;
  };
  if (ends("GiB") || ends("G"))
    mult = int64_t{1} << 30;
  else if (ends("MiB") || ends("M"))
    mult = int64_t{1} << 20;
  else if (ends("KiB") || ends("K"))
    mult = int64_t{1} << 10;
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size() || v <= 0) return std::nullopt;
    return static_cast<int64_t>(v * static_cast<double>(mult));
  } catch (...) {
    return std::nullopt;
  }
}

// The repository's config with the applied definitions (the registry), as Feast reads them.
Result<FeatureRepo> LoadApplied(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(FeatureRepo repo, LoadFeatureRepo(dir));
  if (!std::filesystem::exists(repo.config.registry_path)) {
    return Status::PreconditionFailed(
        fmt::format("no registry at {}: run `strata features apply --repo {}` first",
                    repo.config.registry_path, dir));
  }
  STRATA_ASSIGN_OR_RETURN(FeatureRepo reg, LoadRegistry(repo.config.registry_path));
  RepoConfig config = repo.config;
  reg.config = config;
  return reg;
}

void PrintPlan(const std::vector<PlanChange>& changes, bool applied) {
  int created = 0, updated = 0;
  for (const PlanChange& c : changes) {
    switch (c.kind) {
      case PlanChange::kCreate:
        fmt::print("{} {} {}\n", applied ? "Created" : "Will create", c.object, c.name);
        ++created;
        break;
      case PlanChange::kUpdate:
        fmt::print("{} {} {} ({})\n", applied ? "Updated" : "Will update", c.object, c.name,
                   c.detail);
        ++updated;
        break;
      case PlanChange::kUnchanged:
        fmt::print("No change to {} {}\n", c.object, c.name);
        break;
      case PlanChange::kNotInRepo:
        fmt::print("Not in the repository: {} {} ({})\n", c.object, c.name, c.detail);
        break;
    }
  }
  fmt::print("{} to create, {} to update\n", created, updated);
}

Result<int64_t> ParseWhen(const std::string& s) {
  if (s == "now") return NowMicros();
  return ParseTimestamp(s, TimeUnit::kMicro);
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  return out;
}

// "\r<view> 42% (4200000/10000000 rows)" on a terminal, a line per view otherwise.
void Progress(const std::string& view, int64_t done, int64_t total) {
  const bool tty = ::isatty(2);
  const int pct = total > 0 ? static_cast<int>(100 * done / total) : 100;
  if (tty) {
    fmt::print(stderr, "\r{:<32} [{:<30}] {:3}% ({}/{} rows)", view,
               std::string(static_cast<size_t>(pct * 30 / 100), '#'), pct, done, total);
    if (done >= total) fmt::print(stderr, "\n");
  } else if (done >= total) {
    fmt::print(stderr, "{}: {} rows scanned\n", view, done);
  }
}

// plan / apply
struct RepoArgs {
  std::string repo = ".";
  bool skip_sources = false;
};

int RunPlanOrApply(const RepoArgs& a, bool apply) {
  auto py_docs = CollectPythonDefinitions(a.repo);  // feature_repo/*.py, as Feast reads them
  if (!py_docs.ok()) return Fail(py_docs.error());
  auto repo = LoadFeatureRepo(a.repo, *py_docs);
  if (!repo.ok()) return Fail(repo.error());
  if (!a.skip_sources) {
    Status st = CheckSources(*repo);
    if (!st.ok()) return Fail(st);
    InferEntityTypes(&*repo);
  }
  auto changes = apply ? ApplyRepo(*repo) : PlanRepo(*repo);
  if (!changes.ok()) return Fail(changes.error());
  PrintPlan(*changes, apply);
  if (apply) fmt::print("Registry written to {}\n", repo->config.registry_path);
  return 0;
}

void RegisterPlanApply(CLI::App* feat, int* exit_code) {
  auto repo_args = std::make_shared<RepoArgs>();
  for (const char* name : {"plan", "apply"}) {
    const bool apply = std::string(name) == "apply";
    auto* cmd = feat->add_subcommand(
        name, apply ? "Validate the repository and write the registry"
                    : "Validate the repository and show what apply would change");
    cmd->add_option("--repo,-r", repo_args->repo,
                    "Feature repository directory (holds feature_store.yaml)")
        ->capture_default_str();
    cmd->add_flag("--skip-source-validation", repo_args->skip_sources,
                  "Do not open the sources to check columns");
    cmd->callback(
        [repo_args, exit_code, apply] { *exit_code = RunPlanOrApply(*repo_args, apply); });
  }
}

// historical
struct HistArgs {
  std::string repo = ".";
  std::string entities, features, service, out, timestamp_column, spill_dir, budget = "4GiB",
                                                                             codec = "zstd";
  bool full_names = false;
};

int RunHistorical(const HistArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  if (a.features.empty() && a.service.empty()) {
    return Fail(Status::InvalidArgument("give --features view:feature,... or --service NAME"));
  }
  auto repo = LoadApplied(a.repo);
  if (!repo.ok()) return Fail(repo.error());
  Result<std::vector<FeatureProjection>> refs = Status::Internal("unset");
  if (!a.service.empty()) {
    refs = ResolveService(*repo, a.service);
  } else {
    refs = ResolveFeatureRefs(*repo, SplitList(a.features));
  }
  if (!refs.ok()) return Fail(refs.error());
  HistoricalOptions opt;
  opt.full_feature_names = a.full_names;
  opt.entity_timestamp_column = a.timestamp_column;
  opt.spill_dir = a.spill_dir;
  auto budget = ParseBytes(a.budget);
  if (!budget) {
    return Fail(
        Status::InvalidArgument(fmt::format("--memory-budget \"{}\" is not a size", a.budget)));
  }
  opt.memory_budget_bytes = *budget;
  auto codec = ParseParquetCodec(a.codec);
  if (!codec.ok()) return Fail(codec.error());
  auto entities = ReadTableFile(a.entities);
  if (!entities.ok()) return Fail(entities.error().WithContext("entities"));
  HistoricalStats stats;
  auto out = GetHistoricalFeatures(*repo, *entities, *refs, opt, &stats);
  if (!out.ok()) return Fail(out.error());
  ParquetWriteOptions wopt;
  wopt.codec = *codec;
  Status st = WriteTableFile(a.out, *out, wopt);
  if (!st.ok()) return Fail(st);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr,
             "{} rows x {} columns written to {} in {:.2f} s ({} feature rows read, {} kept, {} "
             "matches, "
             "{} partitions, {} bytes spilled)\n",
             out->num_rows(), out->num_columns(), a.out, secs, stats.feature_rows_read,
             stats.feature_rows_kept, stats.matched, stats.partitions, stats.spilled_bytes);
  return 0;
}

void RegisterHistorical(CLI::App* feat, int* exit_code) {
  auto h = std::make_shared<HistArgs>();
  auto* hist = feat->add_subcommand(
      "historical", "Build a point-in-time-correct training set (get_historical_features)");
  hist->add_option("--repo,-r", h->repo, "Feature repository directory")->capture_default_str();
  hist->add_option("--entities,-e", h->entities,
                   "Entity rows: Parquet or CSV with join keys and event_timestamp")
      ->required();
  auto* fopt =
      hist->add_option("--features,-f", h->features, "Comma-separated view:feature references");
  auto* sopt =
      hist->add_option("--service,-s", h->service, "A feature service instead of --features");
  fopt->excludes(sopt);
  hist->add_option("--out,-o", h->out, "Output file (.parquet or .csv; local or s3://...)")
      ->required();
  hist->add_flag("--full-feature-names", h->full_names, "Name columns view__feature");
  hist->add_option("--timestamp-column", h->timestamp_column,
                   "Entity timestamp column (default event_timestamp)");
  hist->add_option("--memory-budget", h->budget,
                   "Feature rows kept in memory before spilling (e.g. 2GiB)")
      ->capture_default_str();
  hist->add_option("--spill-dir", h->spill_dir,
                   "Where spilled partitions go (default $TMPDIR or /tmp)");
  hist->add_option("--codec", h->codec, "Parquet output codec: zstd, snappy, gzip, lz4_raw, none")
      ->capture_default_str();
  hist->callback([h, exit_code] { *exit_code = RunHistorical(*h); });
}

// materialize / materialize-incremental
struct MatArgs {
  std::string repo = ".", start, end, views;
};

int RunMaterialize(const MatArgs& a, bool incremental) {
  auto repo = LoadApplied(a.repo);
  if (!repo.ok()) return Fail(repo.error());
  auto end = ParseWhen(a.end);
  if (!end.ok()) return Fail(end.error());
  auto store = OpenOnlineStore(repo->config);
  if (!store.ok()) return Fail(store.error());
  MaterializeOptions opt;
  opt.views = SplitList(a.views);
  opt.progress = Progress;
  MaterializeStats st;
  const auto t0 = std::chrono::steady_clock::now();
  Status s;
  if (incremental) {
    s = MaterializeIncremental(&*repo, store->get(), *end, opt, &st);
  } else {
    auto start = ParseWhen(a.start);
    if (!start.ok()) return Fail(start.error());
    opt.start_us = *start;
    opt.end_us = *end;
    s = Materialize(&*repo, store->get(), opt, &st);
  }
  if (!s.ok()) return Fail(s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr,
             "{} views: {} rows scanned, {} in the window, {} entities written to {} in {:.2f} s "
             "({:.0f} rows/s)\n",
             st.views, st.rows_scanned, st.rows_in_window, st.entities_written, (*store)->name(),
             secs, secs > 0 ? static_cast<double>(st.rows_scanned) / secs : 0.0);
  return 0;
}

void RegisterMaterialize(CLI::App* feat, int* exit_code) {
  auto m = std::make_shared<MatArgs>();
  for (const char* name : {"materialize", "materialize-incremental"}) {
    const bool incremental = std::string(name) == "materialize-incremental";
    auto* cmd = feat->add_subcommand(
        name, incremental
                  ? "Load new feature rows (since the last run) into the online store"
                  : "Load the latest feature rows between START and END into the online store");
    cmd->add_option("--repo,-r", m->repo, "Feature repository directory")->capture_default_str();
    if (!incremental)
      cmd->add_option("start", m->start, "Start time (ISO-8601, inclusive)")->required();
    cmd->add_option("end", m->end, "End time (ISO-8601 or now, inclusive)")->required();
    cmd->add_option("--views,-v", m->views,
                    "Comma-separated feature views (default: every online view)");
    cmd->callback([m, exit_code, incremental] { *exit_code = RunMaterialize(*m, incremental); });
  }
}

// serve: the Feast HTTP API (src/feast) over the repository, on its own port.
struct ServeArgs {
  std::string repo = ".", host = "127.0.0.1", api_key, log_dir;
  int port = 6566;
  double log_sample_rate = -1;
};

int RunServe(const ServeArgs& a) {
  auto repo = LoadApplied(a.repo);
  if (!repo.ok()) return Fail(repo.error());
  auto store = OpenOnlineStore(repo->config);
  if (!store.ok()) return Fail(store.error());
  const sigset_t set = BlockStopSignals();
  OnlineServiceOptions so;
  so.logging = LoggingOptionsFromConfig(repo->config);
  if (a.log_sample_rate >= 0) so.logging.sample_rate = a.log_sample_rate;
  if (!a.log_dir.empty()) so.logging.path = a.log_dir;
  OnlineService service(std::move(*repo), std::move(*store), so);
  feast::HandlerOptions ho;
  ho.api_key = a.api_key;
  feast::Handler handler(&service, ho);
  http::ServerOptions h;
  h.name = "features";
  h.bind_address = a.host;
  h.port = a.port;
  std::unique_ptr<http::Server> server = http::FrontendServer(h, &handler);
  Status st = service.Open();
  if (st.ok()) st = server->Start();
  if (!st.ok()) return Fail(st);
  kLog.Info("feature server listening on {}:{}", a.host, server->port());
  if (service.logger()) {
    kLog.Info("feature server: logging {:.3g} of served vectors to {}", so.logging.sample_rate,
              so.logging.path);
  }
  fmt::print("Feature server listening on http://{}:{} (POST /get-online-features)\n", a.host,
             server->port());
  if (so.logging.sample_rate > 0) {
    fmt::print("Logging {:.3g} of served vectors to {}\n", so.logging.sample_rate, so.logging.path);
  }
  std::fflush(stdout);
  (void)WaitForStopSignal(set);
  server->Stop();
  st = service.Close();  // publishes the open log files
  if (!st.ok()) kLog.Warn("feature server: served-vector log: {}", st.ToString());
  return 0;
}

void RegisterServe(CLI::App* feat, int* exit_code) {
  auto sv = std::make_shared<ServeArgs>();
  auto* serve = feat->add_subcommand("serve", "Run the feature server (Feast's HTTP API) on :6566");
  serve->add_option("--repo,-r", sv->repo, "Feature repository directory")->capture_default_str();
  serve->add_option("--host,-H", sv->host, "Listen address")->capture_default_str();
  serve->add_option("--port,-p", sv->port, "Listen port")->capture_default_str();
  serve->add_option("--api-key", sv->api_key,
                    "Require this key (Authorization: Bearer, or X-API-Key)");
  serve->add_option("--log-sample-rate", sv->log_sample_rate,
                    "Log this fraction of served feature vectors to Parquet (default: "
                    "feature_server.logging in "
                    "feature_store.yaml, else 0)");
  serve->add_option("--log-dir", sv->log_dir,
                    "Directory of the served-vector log (default: data/served_log in the repo)");
  serve->callback([sv, exit_code] { *exit_code = RunServe(*sv); });
}

// snapshot: the online store's current values for the given entities, as rows.
struct SnapArgs {
  std::string repo = ".", entities, features, service, out;
  bool full_names = false;
  int64_t batch = 1000;
};

int RunSnapshot(const SnapArgs& a) {
  auto repo = LoadApplied(a.repo);
  if (!repo.ok()) return Fail(repo.error());
  if (a.features.empty() == a.service.empty()) {
    return Fail(Status::InvalidArgument("give --features or --service"));
  }
  auto feats = a.service.empty() ? ResolveFeatureRefs(*repo, SplitList(a.features))
                                 : ResolveService(*repo, a.service);
  if (!feats.ok()) return Fail(feats.error());
  std::vector<std::string> keys;
  std::vector<DataType> types;
  for (const FeatureProjection& p : *feats) {
    const FeatureViewDef* v = repo->FindView(p.view);
    for (const std::string& k : v->join_keys) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    for (const std::string& f : p.features) types.push_back(v->FindFeature(f)->type);
  }
  auto ents = ReadTableFile(a.entities, keys);
  if (!ents.ok()) return Fail(ents.error().WithContext("entities"));
  auto store = OpenOnlineStore(repo->config);
  if (!store.ok()) return Fail(store.error());
  const int64_t now = NowMicros();
  const size_t batch = static_cast<size_t>(std::max<int64_t>(1, a.batch));
  Table out;
  for (size_t b = 0; b < ents->num_rows(); b += batch) {
    const size_t e = std::min(ents->num_rows(), b + batch);
    std::vector<std::pair<std::string, std::vector<OnlineValue>>> cols;
    for (size_t k = 0; k < keys.size(); ++k) {
      std::vector<OnlineValue> vals;
      const Column& c = ents->column(k);
      for (size_t r = b; r < e; ++r) {
        vals.push_back(ValueAt(c, r));
        if (vals.back().kind == OnlineValue::kTimestamp || vals.back().kind == OnlineValue::kBool) {
          vals.back().kind = OnlineValue::kInt;
        }
      }
      cols.emplace_back(keys[k], std::move(vals));
    }
    auto resp = GetOnlineFeatures(*repo, store->get(), *feats, cols, a.full_names, now);
    if (!resp.ok()) return Fail(resp.error());
    Table rows = ServedRows(*resp, keys.size(), types, now, "snapshot");
    if (out.num_columns() == 0) {
      out = std::move(rows);
    } else if (Status st = out.Append(rows); !st.ok()) {
      return Fail(st);
    }
  }
  if (out.num_columns() == 0)
    return Fail(Status::InvalidArgument(a.entities + " holds no entity rows"));
  Status st = WriteTableFile(a.out, out);
  if (!st.ok()) return Fail(st);
  fmt::print(stderr, "{} entity rows x {} features from the {} store written to {}\n",
             out.num_rows(), types.size(), (*store)->name(), a.out);
  return 0;
}

void RegisterSnapshot(CLI::App* feat, int* exit_code) {
  auto sn = std::make_shared<SnapArgs>();
  auto* snap = feat->add_subcommand("snapshot",
                                    "Export the online store's current values for the entities "
                                    "in a file (a serving sample for skew)");
  snap->add_option("--repo,-r", sn->repo, "Feature repository directory")->capture_default_str();
  snap->add_option("--entities,-e", sn->entities, "Parquet or CSV with the join-key columns")
      ->required();
  auto* snap_f =
      snap->add_option("--features,-f", sn->features, "Comma-separated view:feature references");
  auto* snap_s =
      snap->add_option("--service,-s", sn->service, "A feature service instead of --features");
  snap_f->excludes(snap_s);
  snap->add_option("--out,-o", sn->out,
                   "Output file (.parquet or .csv), in the served-vector log's layout")
      ->required();
  snap->add_flag("--full-feature-names", sn->full_names, "Name columns view__feature");
  snap->add_option("--batch", sn->batch, "Entities per online read")->capture_default_str();
  snap->callback([sn, exit_code] { *exit_code = RunSnapshot(*sn); });
}

// skew: PSI per feature between a reference and a serving sample.
struct SkewArgs {
  std::string reference, serving, features;
  bool json = false;
  double fail_above = -1;
};

void PrintSkewJson(const std::vector<PsiResult>& res) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PsiResult& r : res) {
    nlohmann::ordered_json bins = nlohmann::ordered_json::array();
    for (const PsiBin& b : r.bins)
      bins.push_back({{"bin", b.label}, {"reference", b.reference}, {"serving", b.serving}});
    out.push_back({{"feature", r.feature},
                   {"kind", r.kind},
                   {"psi", r.psi},
                   {"verdict", r.verdict},
                   {"reference_rows", r.reference_rows},
                   {"serving_rows", r.serving_rows},
                   {"bins", bins}});
  }
  fmt::print("{}\n", out.dump(2));
}

int RunSkew(const SkewArgs& a) {
  auto ref = ReadTableFile(a.reference);
  if (!ref.ok()) return Fail(ref.error().WithContext("reference"));
  auto srv = ReadServingSample(a.serving, SplitList(a.features));
  if (!srv.ok()) return Fail(srv.error().WithContext("serving"));
  auto res = ComputeSkew(*ref, *srv, SplitList(a.features));
  if (!res.ok()) return Fail(res.error());
  bool over = false;
  for (const PsiResult& r : *res) over |= a.fail_above >= 0 && r.psi >= a.fail_above;
  if (a.json) {
    PrintSkewJson(*res);
  } else {
    fmt::print("{:<28} {:<12} {:>10}  {:<12} {:>10} {:>10}\n", "feature", "kind", "psi", "verdict",
               "reference", "serving");
    for (const PsiResult& r : *res) {
      fmt::print("{:<28} {:<12} {:>10.4f}  {:<12} {:>10} {:>10}\n", r.feature, r.kind, r.psi,
                 r.verdict, r.reference_rows, r.serving_rows);
    }
    fmt::print("(PSI < 0.1 stable, 0.1-0.25 moderate, >= 0.25 significant)\n");
  }
  return over ? 3 : 0;
}

void RegisterSkew(CLI::App* feat, int* exit_code) {
  auto sk = std::make_shared<SkewArgs>();
  auto* skew = feat->add_subcommand(
      "skew", "Training-serving skew: PSI per feature (10 quantile bins, 1e-4 for empty bins)");
  skew->add_option("--reference", sk->reference,
                   "Reference sample: a training set or an offline window (.parquet/.csv)")
      ->required();
  skew->add_option("--serving", sk->serving,
                   "Serving sample: a served-vector log directory (served-*.parquet), one log "
                   "file, or an online "
                   "snapshot (.parquet/.csv)")
      ->required();
  skew->add_option("--features", sk->features,
                   "Comma-separated columns (default: every shared non-timestamp column)");
  skew->add_flag("--json", sk->json, "Print JSON instead of a table");
  skew->add_option("--fail-above", sk->fail_above,
                   "Exit 3 when a feature's PSI is at or above this (e.g. 0.25)");
  skew->callback([sk, exit_code] { *exit_code = RunSkew(*sk); });
}

// convert: any supported file to Parquet (our writer) or CSV.
struct ConvArgs {
  std::string in, out, codec = "zstd", dictionary = "auto";
  int page_version = 1;
  int64_t row_group_rows = 1 << 20;
};

int RunConvert(const ConvArgs& a) {
  auto codec = ParseParquetCodec(a.codec);
  if (!codec.ok()) return Fail(codec.error());
  ParquetWriteOptions opt;
  opt.codec = *codec;
  opt.data_page_version = a.page_version;
  opt.row_group_rows = a.row_group_rows;
  if (a.dictionary == "always")
    opt.dictionary = ParquetWriteOptions::Dictionary::kAlways;
  else if (a.dictionary == "never")
    opt.dictionary = ParquetWriteOptions::Dictionary::kNever;
  else if (a.dictionary != "auto") {
    return Fail(Status::InvalidArgument("--dictionary must be auto, always or never"));
  }
  auto t = ReadTableFile(a.in);
  if (!t.ok()) return Fail(t.error());
  Status st = WriteTableFile(a.out, *t, opt);
  if (!st.ok()) return Fail(st);
  fmt::print(stderr, "{} rows x {} columns written to {}\n", t->num_rows(), t->num_columns(),
             a.out);
  return 0;
}

void RegisterConvert(CLI::App* feat, int* exit_code) {
  auto c = std::make_shared<ConvArgs>();
  auto* conv = feat->add_subcommand(
      "convert", "Convert between Parquet and CSV with Strata's reader and writer");
  conv->add_option("input", c->in, "Input file (.parquet or .csv; local or s3://...)")->required();
  conv->add_option("output", c->out, "Output file (.parquet or .csv)")->required();
  conv->add_option("--codec", c->codec, "zstd, snappy, gzip, lz4_raw, none")->capture_default_str();
  conv->add_option("--dictionary", c->dictionary, "auto (strings), always, never")
      ->capture_default_str();
  conv->add_option("--page-version", c->page_version, "Data page version (1 or 2)")
      ->capture_default_str();
  conv->add_option("--row-group-rows", c->row_group_rows, "Rows per row group")
      ->capture_default_str();
  conv->callback([c, exit_code] { *exit_code = RunConvert(*c); });
}

// parquet-info: the footer, as our reader sees it.
int RunParquetInfo(const std::string& path) {
  auto src = OpenSourceFile(path);
  if (!src.ok()) return Fail(src.error());
  auto r = ParquetReader::Open(std::move(*src));
  if (!r.ok()) return Fail(r.error());
  const ParquetReader& pr = **r;
  fmt::print("{}: {} rows, {} row groups, created by {}\n", path, pr.num_rows(),
             pr.num_row_groups(), pr.created_by());
  for (size_t i = 0; i < pr.schema().size(); ++i) {
    const Field& f = pr.schema()[i];
    fmt::print("  {:<24} {:<22} {:<12} {}{}\n", f.name, f.type.ToString(),
               pr.column_info()[i].physical, pr.column_info()[i].logical,
               f.nullable ? "" : " NOT NULL");
  }
  for (int g = 0; g < pr.num_row_groups(); ++g) {
    const ParquetRowGroupInfo& rg = pr.row_group(g);
    fmt::print("row group {}: {} rows\n", g, rg.num_rows);
    for (size_t i = 0; i < rg.columns.size(); ++i) {
      const ParquetChunkInfo& ci = rg.columns[i];
      std::string enc;
      for (const std::string& e : ci.encodings) enc += (enc.empty() ? "" : ",") + e;
      fmt::print("  {:<24} {:<8} {:<28} {:>10} bytes ({} raw){}\n", pr.schema()[i].name, ci.codec,
                 enc, ci.compressed_bytes, ci.uncompressed_bytes,
                 ci.null_count ? fmt::format(", {} nulls", *ci.null_count) : "");
    }
  }
  return 0;
}

void RegisterParquetInfo(CLI::App* feat, int* exit_code) {
  auto info_path = std::make_shared<std::string>();
  auto* info = feat->add_subcommand("parquet-info",
                                    "Show a Parquet file's schema, row groups and statistics");
  info->add_option("file", *info_path, "Parquet file (local or s3://...)")->required();
  info->callback([info_path, exit_code] { *exit_code = RunParquetInfo(*info_path); });
}

}  // namespace

void RegisterFeaturesCommands(CLI::App& app, int* exit_code) {
  auto* feat = app.add_subcommand(
      "features", "Feature store: definitions, registry, training sets (Feast-compatible)");
  feat->require_subcommand(1);
  RegisterPlanApply(feat, exit_code);
  RegisterHistorical(feat, exit_code);
  RegisterMaterialize(feat, exit_code);
  RegisterServe(feat, exit_code);
  RegisterSnapshot(feat, exit_code);
  RegisterSkew(feat, exit_code);
  RegisterConvert(feat, exit_code);
  RegisterParquetInfo(feat, exit_code);
}

}  // namespace strata::cli
