#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <strata/console/console.h>
#include <strata/core/file_util.h>
#include <strata/core/http_server.h>
#include <strata/core/log.h>
#include <strata/core/md5_mb.h>
#include <strata/core/metrics.h>
#include <strata/core/strings.h>
#include <strata/feast/handler.h>
#include <strata/features/online.h>
#include <strata/features/online_service.h>
#include <strata/features/repo.h>
#include <strata/milvus/server.h>
#include <strata/qdrant/handler.h>
#include <strata/s3/kms.h>
#include <strata/s3/lifecycle.h>
#include <strata/s3/user_store.h>
#include <strata/server/server.h>
#include <strata/vector/collection.h>

#include "server/admin_users.h"

namespace strata::server {
namespace {

constexpr log::Logger kLog("server");

// Lines of "name access_key secret_key".
Result<std::vector<s3::User>> ReadUsers(const std::string& path) {
  std::vector<s3::User> users;
  std::ifstream in(path);
  if (!in) return users;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;
    std::istringstream ls(line);
    s3::User u;
    if (!(ls >> u.name >> u.access_key >> u.secret_key))
      return Status::Corruption(fmt::format("{}:{}: expected \"name access_key secret_key\"", path, n));
    users.push_back(std::move(u));
  }
  return users;
}

}  // namespace

Result<Credentials> LoadOrCreateCredentials(const std::string& data_dir) {
  Credentials creds;
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IOError("cannot create data directory \"" + data_dir + "\": " + ec.message());
  s3::User root;
  root.name = "root";
  root.admin = true;
  const char* env_user = std::getenv("STRATA_ROOT_USER");
  const char* env_pass = std::getenv("STRATA_ROOT_PASSWORD");
  std::string path = data_dir + "/credentials";
  if (env_user != nullptr && env_pass != nullptr && *env_user && *env_pass) {
    root.access_key = env_user;
    root.secret_key = env_pass;
    if (root.access_key.size() < 3 || root.secret_key.size() < 8)
      return Status::InvalidArgument("STRATA_ROOT_USER needs at least 3 characters and STRATA_ROOT_PASSWORD at least 8");
  } else {
    STRATA_ASSIGN_OR_RETURN(auto stored, ReadUsers(path));
    if (!stored.empty()) {
      root.access_key = stored[0].access_key;
      root.secret_key = stored[0].secret_key;
    } else {
      root.access_key = s3::NewAccessKey();
      root.secret_key = s3::NewSecretKey();
      // Readable by the owner alone.
      STRATA_RETURN_IF_ERROR(WriteFileAtomic(
          path,
          fmt::format("# root credentials of this Strata data directory\nroot {} {}\n",
                      root.access_key, root.secret_key),
          {.mode = 0600}));
      creds.generated = true;
    }
  }
  creds.users.push_back(root);
  return creds;
}

Status ParseHostPort(const std::string& s, std::string& host, int& port) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("address \"" + s + "\" must be HOST:PORT");
  host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  auto p = ParseUint64(s.substr(colon + 1));
  if (!p || *p > 65535) return Status::InvalidArgument("address \"" + s + "\" has a bad port");
  port = static_cast<int>(*p);
  return Status::Ok();
}

namespace {

std::string Endpoint(const http::Server* s, bool tls) {
  if (s == nullptr) return "";
  std::string host = s->options().bind_address;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("{}://{}:{}", tls ? "https" : "http", host, s->port());
}
}  // namespace

struct StrataServer::Impl {
  ServerOptions opts;
  Credentials creds;
  std::unique_ptr<objstore::LocalEngine> engine;
  std::unique_ptr<s3::UserStore> users;  // root (fixed) + DATA/users, changed by the admin API
  std::unique_ptr<s3::Frontend> s3;
  std::unique_ptr<http::Server> s3_http;
  std::unique_ptr<s3::LifecycleStore> lifecycle_store;
  std::shared_ptr<s3::LifecycleWorker> lifecycle;  // shared with its /metrics callbacks
  std::unique_ptr<http::Server> admin_http;
  std::unique_ptr<console::Console> console;  // the web console on the admin port
  std::unique_ptr<vector::CollectionManager> collections;
  std::unique_ptr<qdrant::Handler> qdrant_handler;
  std::unique_ptr<http::Server> vector_http;
  std::unique_ptr<milvus::Server> milvus;
  std::unique_ptr<features::OnlineService> online;
  std::unique_ptr<feast::Handler> feast_handler;
  std::unique_ptr<http::Server> features_http;
  std::string features_repo;

  void StartLifecycle() {
    s3::LifecycleOptions lo;
    lo.interval_ms = opts.lifecycle_interval_ms;
    lo.page_keys = opts.lifecycle_page_keys;
    lo.page_pause_ms = opts.lifecycle_page_pause_ms;
    lo.max_actions_per_sec = opts.lifecycle_max_actions_per_sec;
    if (!opts.test_clock_file.empty()) {
      lo.clock = s3::FileClock(opts.test_clock_file);
      kLog.Warn("lifecycle clock read from {} (test only)", opts.test_clock_file);
    }
    lifecycle_store = s3::NewEngineLifecycleStore(engine.get());
    lifecycle = std::make_shared<s3::LifecycleWorker>(lifecycle_store.get(), lo);
    auto& reg = metrics::Registry::Global();
    std::shared_ptr<s3::LifecycleWorker> w = lifecycle;
    auto gauge = [&reg, w](const char* name, const char* help, auto field) {
      reg.AddCallbackGauge(name, help,
                           [w, field] { return static_cast<double>(w->stats().*field); });
    };
    using L = s3::LifecycleStats;
    gauge("strata_s3_lifecycle_passes_total", "Lifecycle passes completed", &L::passes);
    gauge("strata_s3_lifecycle_objects_scanned_total", "Objects the lifecycle worker examined",
          &L::objects_scanned);
    gauge("strata_s3_lifecycle_objects_expired_total", "Current objects expired by lifecycle rules",
          &L::objects_expired);
    gauge("strata_s3_lifecycle_noncurrent_expired_total",
          "Noncurrent versions and delete markers removed by lifecycle rules",
          &L::noncurrent_expired);
    gauge("strata_s3_lifecycle_versions_locked_total",
          "Noncurrent versions a rule would remove, kept because Object Lock holds them",
          &L::versions_locked);
    gauge("strata_s3_lifecycle_uploads_aborted_total",
          "Incomplete multipart uploads aborted by lifecycle rules", &L::uploads_aborted);
    gauge("strata_s3_lifecycle_errors_total", "Lifecycle steps that failed (logged)", &L::errors);
    reg.AddCallbackGauge("strata_s3_lifecycle_last_pass_timestamp_seconds",
                         "When the last lifecycle pass ended (Unix seconds, lifecycle clock)",
                         [w] { return static_cast<double>(w->stats().last_pass_unix_ns) / 1e9; });
    reg.AddCallbackGauge(
        "strata_s3_lifecycle_last_pass_duration_seconds", "How long the last lifecycle pass took",
        [w] { return static_cast<double>(w->stats().last_pass_duration_ns) / 1e9; });
    lifecycle->Start();
  }

  Status StartFeatures() {
    features_repo = opts.features_repo.empty() ? opts.data_dir + "/features" : opts.features_repo;
    std::error_code ec;
    features_repo = std::filesystem::absolute(features_repo, ec).lexically_normal().string();
    if (opts.features_repo.empty()) {
      STRATA_RETURN_IF_ERROR(features::InitFeatureRepo(features_repo));
      // The default repository starts applied (an empty registry), so a fresh
      // server has nothing to warn about; definitions added later need `apply`.
      auto fresh = features::LoadFeatureRepo(features_repo);
      if (fresh.ok() && fresh->views.empty() && fresh->entities.empty() && fresh->services.empty() &&
          !std::filesystem::exists(fresh->config.registry_path, ec)) {
        auto applied = features::ApplyRepo(*fresh);
        if (!applied.ok()) return applied.error().WithContext("feature repository " + features_repo);
      }
    }
    auto repo = features::LoadServingRepo(features_repo);
    if (!repo.ok()) return repo.error().WithContext("feature repository " + features_repo);
    auto store = features::OpenOnlineStore(repo->config);
    if (!store.ok()) return store.error().WithContext("feature repository " + features_repo);
    features::OnlineServiceOptions so;
    so.logging = features::LoggingOptionsFromConfig(repo->config);
    if (opts.features_log_sample_rate >= 0) so.logging.sample_rate = opts.features_log_sample_rate;
    if (!opts.features_log_dir.empty()) so.logging.path = opts.features_log_dir;
    Status st;
    int unused = 0;
    http::ServerOptions h = HttpOptions("features", opts.features_address, unused, st);
    STRATA_RETURN_IF_ERROR(st);
    h.tls_cert_file.clear();  // TLS is the S3 frontend's option
    h.tls_key_file.clear();
    online = std::make_unique<features::OnlineService>(std::move(*repo), std::move(*store), so);
    feast::HandlerOptions fo;
    fo.api_key = opts.features_api_key;
    feast_handler = std::make_unique<feast::Handler>(online.get(), fo);
    features_http = http::FrontendServer(h, feast_handler.get());
    st = online->Open();
    if (st.ok()) st = features_http->Start();
    if (!st.ok()) {
      StopFeatures();
      if (opts.features_bind_required || st.code() == StatusCode::kInvalidArgument) return st;
      kLog.Warn("feature server not started on {}: {} (pass --features-port to choose another)",
                opts.features_address, st.ToString());
      return Status::Ok();
    }
    kLog.Info("feature server listening on {}:{}", h.bind_address, features_http->port());
    if (online->logger()) {
      kLog.Info("feature server: logging {:.3g} of served vectors to {}", so.logging.sample_rate,
                so.logging.path);
    }
    return Status::Ok();
  }

  // The feature server's HTTP side first, then the log files it wrote.
  void StopFeatures() {
    if (features_http) features_http->Stop();
    features_http.reset();
    feast_handler.reset();
    if (online) {
      Status st = online->Close();
      if (!st.ok()) kLog.Warn("feature server: served-vector log: {}", st.ToString());
    }
    online.reset();
  }

  http::ServerOptions HttpOptions(const std::string& name, const std::string& address, int& port_out,
                                  Status& st) {
    http::ServerOptions h;
    h.name = name;
    st = ParseHostPort(address, h.bind_address, h.port);
    h.threads = opts.threads;
    h.max_connections = opts.max_connections;
    h.max_connections_per_ip = opts.max_connections_per_ip;
    h.max_header_bytes = opts.max_header_bytes;
    h.header_timeout_ms = opts.header_timeout_ms;
    h.idle_timeout_ms = opts.idle_timeout_ms;
    h.io_timeout_ms = opts.io_timeout_ms;
    h.tls_cert_file = opts.tls_cert_file;
    h.tls_key_file = opts.tls_key_file;
    (void)port_out;
    return h;
  }

  // The console acts through the frontends in-process, as their own clients would.
  void StartConsole() {
    console::ConsoleOptions co;
    s3::UserStore* store = users.get();
    co.find_user = [store](std::string_view ak) -> std::optional<console::ConsoleUser> {
      auto table = store->Snapshot();
      auto it = table->by_key.find(std::string(ak));
      if (it == table->by_key.end()) return std::nullopt;
      const s3::User& u = it->second->user;
      return console::ConsoleUser{u.name, u.access_key, u.secret_key, u.admin};
    };
    if (s3) {
      co.s3 = http::FrontendHandler(s3.get());
      co.s3_endpoint = Endpoint(s3_http.get(), !opts.tls_cert_file.empty());
    }
    co.region = opts.region;
    if (vector_http) co.vector = http::FrontendHandler(qdrant_handler.get());
    co.vector_api_key = opts.vector_api_key;
    if (features_http) {
      co.features = http::FrontendHandler(feast_handler.get());
      co.features_repo = features_repo;
    }
    co.features_api_key = opts.features_api_key;
    co.metrics_text = [] { return metrics::Registry::Global().ExportPrometheus(); };
    console = std::make_unique<console::Console>(std::move(co));
    (void)console->Start();
  }

  void Admin(http::Request& req, http::ResponseWriter& w) {
    if (StartsWith(req.path, kAdminUsersPath)) {
      AdminUsers(req, w, users.get(), creds.users[0]);
    } else if (console && console::Console::Serves(req.path)) {
      console->Handle(req, w);
    } else if (req.path == "/metrics") {
      w.AddHeader("Content-Type", "text/plain; version=0.0.4");
      (void)w.Send(metrics::Registry::Global().ExportPrometheus());
    } else if (req.path == "/health" || req.path == "/health/live" || req.path == "/health/ready" ||
               req.path == "/minio/health/live") {
      w.AddHeader("Content-Type", "application/json");
      (void)w.Send("{\"status\":\"ok\"}\n");
    } else {
      w.SetStatus(404);
      w.AddHeader("Content-Type", "text/plain");
      (void)w.Send("not found: try / (the console), /metrics or /health\n");
    }
  }
};

StrataServer::StrataServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(options);
}

StrataServer::~StrataServer() { Stop(); }

Status StrataServer::Start() {
  Impl& im = *impl_;
  STRATA_ASSIGN_OR_RETURN(im.creds, LoadOrCreateCredentials(im.opts.data_dir));
  STRATA_ASSIGN_OR_RETURN(im.users, s3::UserStore::Open(im.creds.users, im.opts.data_dir + "/users"));
  objstore::EngineOptions eo;
  eo.data_dir = im.opts.data_dir + "/store";
  eo.sync = im.opts.sync;
  STRATA_ASSIGN_OR_RETURN(im.engine, objstore::LocalEngine::Open(eo));
  auto& reg = metrics::Registry::Global();
  objstore::LocalEngine* engine = im.engine.get();
  reg.AddCallbackGauge("strata_objstore_orphans_removed_at_open",
                       "Data files left by a crash and removed at start",
                       [engine] { return static_cast<double>(engine->GetStats().orphans_removed_at_open); });
  // How the MD5 batcher (core/md5_mb.h) hashed the PUT bodies: 8-lane kernel,
  // two interleaved streams, or one stream alone.
  reg.AddCallbackGauge("strata_md5_kernel_blocks", "64-byte blocks hashed by the 8-lane MD5 kernel",
                       [] { return static_cast<double>(md5::GetBatchStats().kernel_blocks); });
  reg.AddCallbackGauge("strata_md5_idle_lane_blocks", "Lane-blocks the 8-lane MD5 kernel left idle",
                       [] { return static_cast<double>(md5::GetBatchStats().idle_blocks); });
  reg.AddCallbackGauge("strata_md5_pair_blocks", "MD5 blocks hashed two streams at a time",
                       [] { return static_cast<double>(md5::GetBatchStats().pair_blocks); });
  reg.AddCallbackGauge("strata_md5_scalar_blocks", "MD5 blocks the batcher hashed one stream alone",
                       [] { return static_cast<double>(md5::GetBatchStats().scalar_blocks); });
  reg.AddCallbackGauge("strata_md5_fill_timeouts", "Times the MD5 batcher stopped waiting for open streams' next chunks",
                       [] { return static_cast<double>(md5::GetBatchStats().fill_timeouts); });
  if (im.opts.enable_s3) {
    s3::FrontendOptions fo;
    fo.region = im.opts.region;
    // Object Lock retention is judged by the same movable clock as lifecycle (tests only).
    if (!im.opts.test_clock_file.empty()) fo.clock = s3::FileClock(im.opts.test_clock_file);
    fo.user_store = im.users.get();
    fo.domains = im.opts.domains;
    s3::KmsOptions ko;
    ko.master_key_file =
        im.opts.kms_key_file.empty() ? im.opts.data_dir + "/kms-master.key" : im.opts.kms_key_file;
    ko.key_ids = im.opts.kms_keys;
    STRATA_ASSIGN_OR_RETURN(fo.kms, s3::KeyManager::Open(ko));
    im.s3 = std::make_unique<s3::Frontend>(engine, fo);
    Status st;
    int unused = 0;
    http::ServerOptions h = im.HttpOptions("s3", im.opts.s3_address, unused, st);
    STRATA_RETURN_IF_ERROR(st);
    im.s3_http = http::FrontendServer(h, im.s3.get());
    STRATA_RETURN_IF_ERROR(im.s3_http->Start());
    http::Server* srv = im.s3_http.get();
    reg.AddCallbackGauge("strata_http_s3_open_connections", "Open S3 client connections",
                         [srv] { return static_cast<double>(srv->GetStats().open_connections); });
    reg.AddCallbackGauge("strata_http_s3_header_timeouts", "Connections closed for a slow request head",
                         [srv] { return static_cast<double>(srv->GetStats().header_timeouts); });
    reg.AddCallbackGauge("strata_http_s3_idle_timeouts",
                         "Keep-alive connections closed idle past the idle timeout",
                         [srv] { return static_cast<double>(srv->GetStats().idle_timeouts); });
    reg.AddCallbackGauge(
        "strata_http_s3_connections_accepted", "S3 client connections accepted",
        [srv] { return static_cast<double>(srv->GetStats().connections_accepted); });
    reg.AddCallbackGauge(
        "strata_http_s3_connections_evicted",
        "Idle S3 connections closed to make room for a new one (at a connection limit)",
        [srv] { return static_cast<double>(srv->GetStats().connections_evicted); });
    reg.AddCallbackGauge(
        "strata_http_s3_connections_rejected",
        "S3 connections answered 503: over --max-connections-per-ip with all busy",
        [srv] { return static_cast<double>(srv->GetStats().connections_rejected); });
    reg.AddCallbackGauge("strata_http_s3_accept_paused",
                         "1 while the S3 port is not accepting (at the connection limit)",
                         [srv] { return srv->GetStats().accept_paused ? 1.0 : 0.0; });
    if (im.opts.enable_lifecycle) im.StartLifecycle();
  }
  if (im.opts.enable_vector) {
    vector::CollectionOptions vo;
    vo.sync = im.opts.sync;
    STRATA_ASSIGN_OR_RETURN(im.collections,
                            vector::CollectionManager::Open(im.opts.data_dir + "/vector", vo));
    qdrant::HandlerOptions ro;
    ro.api_key = im.opts.vector_api_key;
    im.qdrant_handler = std::make_unique<qdrant::Handler>(im.collections.get(), ro);
    Status st;
    int unused = 0;
    http::ServerOptions h = im.HttpOptions("vector", im.opts.vector_address, unused, st);
    STRATA_RETURN_IF_ERROR(st);
    h.tls_cert_file.clear();  // TLS is the S3 frontend's option
    h.tls_key_file.clear();
    im.vector_http = http::FrontendServer(h, im.qdrant_handler.get());
    if (Status vs = im.vector_http->Start(); !vs.ok()) {
      if (im.opts.vector_bind_required) return vs;
      kLog.Warn("vector API not started on {}: {} (pass --vector-address to choose another)",
                im.opts.vector_address, vs.ToString());
      im.vector_http.reset();
    }
  }
  if (im.opts.enable_vector && im.opts.enable_milvus) {
    milvus::ServerOptions mo;
    mo.address = im.opts.milvus_address;
    im.milvus = std::make_unique<milvus::Server>(im.collections.get(), mo);
    if (Status ms = im.milvus->Start(); !ms.ok()) {
      if (im.opts.milvus_bind_required) return ms;
      kLog.Warn("Milvus API not started on {}: {} (pass --milvus-port to choose another)",
                im.opts.milvus_address, ms.ToString());
      im.milvus.reset();
    }
  }
  if (im.opts.enable_features) STRATA_RETURN_IF_ERROR(im.StartFeatures());
  if (im.opts.enable_admin) {
    Status st;
    int unused = 0;
    http::ServerOptions h = im.HttpOptions("admin", im.opts.admin_address, unused, st);
    STRATA_RETURN_IF_ERROR(st);
    h.threads = 4;  // the console's uploads and downloads stream through here
    h.tls_cert_file.clear();
    h.tls_key_file.clear();
    im.StartConsole();
    Impl* p = &im;
    im.admin_http = std::make_unique<http::Server>(h, [p](http::Request& r, http::ResponseWriter& w) {
      p->Admin(r, w);
    });
    STRATA_RETURN_IF_ERROR(im.admin_http->Start());
  }
  kLog.Info("serving data directory {}", im.opts.data_dir);
  return Status::Ok();
}

void StrataServer::Stop() {
  if (impl_->lifecycle) impl_->lifecycle->Stop();
  if (impl_->s3_http) impl_->s3_http->Stop();
  if (impl_->admin_http) impl_->admin_http->Stop();
  impl_->console.reset();
  if (impl_->vector_http) impl_->vector_http->Stop();
  if (impl_->milvus) impl_->milvus->Stop();
  impl_->milvus.reset();
  impl_->s3_http.reset();
  impl_->admin_http.reset();
  impl_->vector_http.reset();
  impl_->StopFeatures();
  impl_->qdrant_handler.reset();
  impl_->collections.reset();
  impl_->s3.reset();
  impl_->users.reset();
  impl_->lifecycle.reset();
  impl_->lifecycle_store.reset();
  impl_->engine.reset();
}

int StrataServer::s3_port() const { return impl_->s3_http ? impl_->s3_http->port() : 0; }
int StrataServer::admin_port() const { return impl_->admin_http ? impl_->admin_http->port() : 0; }
int StrataServer::vector_port() const { return impl_->vector_http ? impl_->vector_http->port() : 0; }
int StrataServer::milvus_port() const { return impl_->milvus ? impl_->milvus->port() : 0; }
int StrataServer::features_port() const {
  return impl_->features_http ? impl_->features_http->port() : 0;
}
const Credentials& StrataServer::credentials() const { return impl_->creds; }
std::string StrataServer::features_repo() const { return impl_->features_repo; }

std::string StrataServer::s3_endpoint() const {
  return Endpoint(impl_->s3_http.get(), !impl_->opts.tls_cert_file.empty());
}
std::string StrataServer::admin_endpoint() const { return Endpoint(impl_->admin_http.get(), false); }
std::string StrataServer::vector_endpoint() const { return Endpoint(impl_->vector_http.get(), false); }
std::string StrataServer::features_endpoint() const {
  return Endpoint(impl_->features_http.get(), false);
}

}  // namespace strata::server
