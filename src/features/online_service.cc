// OnlineService: the feature server's domain side (registry reload, feature
// resolution, online reads, writes, materialization, served-vector logging),
// moved out of the HTTP adapter (src/feast) so that it needs no socket.
#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/features/online_service.h>

namespace strata::features {

namespace {

constexpr log::Logger kLog("features");

}  // namespace

OnlineService::OnlineService(FeatureRepo registry, std::unique_ptr<OnlineStore> store,
                             OnlineServiceOptions options)
    : store_(std::move(store)),
      options_(std::move(options)),
      registry_path_(registry.config.registry_path),
      config_(registry.config),
      registry_(std::move(registry)) {}

OnlineService::~OnlineService() {
  Status st = Close();
  if (!st.ok()) kLog.Warn("feature server: served-vector log: {}", st.ToString());
}

Status OnlineService::Open() {
  StampRegistry();
  next_refresh_us_ = NowMicros() + int64_t{options_.registry_refresh_ms} * 1000;
  if (options_.logging.sample_rate > 0 && !logger_) {
    STRATA_ASSIGN_OR_RETURN(logger_, ServingLogger::Open(options_.logging));
  }
  return Status::Ok();
}

Status OnlineService::Close() {
  if (!logger_) return Status::Ok();
  Status st = logger_->Close();
  logger_.reset();
  return st;
}

ServingLogger* OnlineService::logger() { return logger_.get(); }

void OnlineService::StampRegistry() {
  std::error_code ec;
  reg_mtime_ = std::filesystem::last_write_time(registry_path_, ec);
  if (ec) reg_mtime_ = {};
  reg_size_ = ec ? 0 : std::filesystem::file_size(registry_path_, ec);
}

// Re-reads the registry when its file changed (at most once per interval
// unless forced). A registry that cannot be read keeps the old one serving.
void OnlineService::MaybeRefresh(bool force) {
  if (registry_path_.empty() || (!force && options_.registry_refresh_ms <= 0)) return;
  const int64_t now = NowMicros();
  int64_t next = next_refresh_us_.load(std::memory_order_relaxed);
  if (!force) {
    if (now < next) return;
    if (!next_refresh_us_.compare_exchange_strong(
            next, now + int64_t{options_.registry_refresh_ms} * 1000))
      return;
  }
  std::lock_guard<std::mutex> g(refresh_mu_);
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(registry_path_, ec);
  if (ec) return;
  const uintmax_t size = std::filesystem::file_size(registry_path_, ec);
  if (ec || (mtime == reg_mtime_ && size == reg_size_)) return;
  reg_mtime_ = mtime;
  reg_size_ = size;
  auto r = LoadRegistry(registry_path_);
  if (!r.ok()) {
    kLog.Warn("feature server: keeping the previous registry: {}", r.error().ToString());
    return;
  }
  r->config = config_;
  std::unique_lock<std::shared_mutex> l(registry_mu_);
  registry_ = std::move(*r);
  kLog.Info("feature server: registry {} reloaded ({} feature views)", registry_path_,
            registry_.views.size());
}

Result<OnlineAnswer> OnlineService::GetOnlineFeatures(const OnlineRequest& request) {
  MaybeRefresh(false);
  OnlineAnswer answer;
  answer.sampled = logger_ && logger_->Sample();
  std::vector<FeatureProjection> feats;
  std::shared_lock<std::shared_mutex> l(registry_mu_);
  if (request.feature_service) {
    STRATA_ASSIGN_OR_RETURN(feats, ResolveService(registry_, *request.feature_service));
  } else {
    STRATA_ASSIGN_OR_RETURN(feats, ResolveFeatureRefs(registry_, request.features));
  }
  answer.now_us = NowMicros();
  STRATA_ASSIGN_OR_RETURN(
      answer.response, features::GetOnlineFeatures(registry_, store_.get(), feats, request.entities,
                                                   request.full_feature_names, answer.now_us));
  if (answer.sampled) {
    for (const FeatureProjection& p : feats) {
      const FeatureViewDef* v = registry_.FindView(p.view);
      for (const std::string& f : p.features) {
        const FeatureDef* d = v ? v->FindFeature(f) : nullptr;
        answer.feature_types.push_back(d ? d->type : DataType::Double());
      }
    }
    answer.key_columns = request.entities.size();
  }
  return answer;
}

void OnlineService::LogServed(OnlineAnswer&& answer) {
  if (!answer.sampled || !logger_) return;
  logger_->Log(std::move(answer.response), answer.key_columns, std::move(answer.feature_types),
               answer.now_us);
}

Status OnlineService::WriteToOnlineStore(const WriteRequest& request) {
  MaybeRefresh(false);
  std::shared_lock<std::shared_mutex> l(registry_mu_);
  std::vector<const FeatureViewDef*> views;
  if (request.push_source) {
    for (const FeatureViewDef& v : registry_.views) {
      if (v.source.push_source == request.view) views.push_back(&v);
    }
  }
  if (views.empty()) {
    const FeatureViewDef* v = registry_.FindView(request.view);
    if (!v) {
      if (request.push_source) {
        return Status::NotFound(fmt::format(
            "no feature view is fed by push source \"{}\" (nor named so)", request.view));
      }
      return Status::NotFound(fmt::format("unknown feature view \"{}\"", request.view));
    }
    views.push_back(v);
  }
  for (const FeatureViewDef* v : views) {
    STRATA_ASSIGN_OR_RETURN(Table t, request.rows(*v));
    STRATA_RETURN_IF_ERROR(features::WriteToOnlineStore(registry_, store_.get(), v->name, t));
  }
  return Status::Ok();
}

Result<MaterializeStats> OnlineService::Materialize(const MaterializeRequest& request) {
  MaterializeOptions opt;
  opt.views = request.views;
  std::lock_guard<std::mutex> m(materialize_mu_);
  // Materializing rewrites the registry file: start from its latest content
  // so a recent `apply` is not undone.
  MaybeRefresh(true);
  FeatureRepo copy;
  {
    std::shared_lock<std::shared_mutex> l(registry_mu_);
    copy = registry_;
  }
  MaterializeStats st;
  if (request.incremental) {
    STRATA_RETURN_IF_ERROR(MaterializeIncremental(&copy, store_.get(), request.end_us, opt, &st));
  } else {
    opt.start_us = request.start_us;
    opt.end_us = request.end_us;
    STRATA_RETURN_IF_ERROR(features::Materialize(&copy, store_.get(), opt, &st));
  }
  {
    std::unique_lock<std::shared_mutex> l(registry_mu_);
    registry_ = std::move(copy);
  }
  return st;
}

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
    kLog.Warn(
        "feature repository {} has no registry yet: serving no feature views until "
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
