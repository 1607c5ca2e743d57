#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <strata/core/log.h>
#include <strata/server/server.h>

#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "cli/transfer_cmds.h"
#include "cli/datapath_cmds.h"
#include "cli/features_cmds.h"
#include "cli/fs_cmds.h"
#include "cli/user_cmds.h"

namespace strata::cli {
namespace {

constexpr log::Logger kLog("server");

// Every client connection is a descriptor, and the usual soft limit (1024) is
// far below --max-connections: raise it to the hard limit, as nginx's
// worker_rlimit_nofile and systemd's LimitNOFILE= are used to.
void RaiseDescriptorLimit(const server::ServerOptions& opts) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t before = rl.rlim_cur;
  rlim_t target = rl.rlim_max;
  if (target == RLIM_INFINITY)
    target = 1 << 20;  // Linux refuses more than fs.nr_open (default 2^20)
  if (before < target) {
    rl.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      kLog.Warn("cannot raise the open-file limit (ulimit -n) from {} to {}: {}", before, target,
                std::strerror(errno));
      rl.rlim_cur = before;
    }
  }
  if (rl.rlim_cur != before) {
    kLog.Info("open-file limit (ulimit -n): {} (raised from {})", rl.rlim_cur, before);
  } else {
    kLog.Info("open-file limit (ulimit -n): {}", rl.rlim_cur);
  }
  if (opts.enable_s3 && rl.rlim_cur < static_cast<rlim_t>(opts.max_connections) + 256) {
    kLog.Warn(
        "open-file limit {} is below --max-connections {}: when descriptors run out, new "
        "connections wait (raise the hard limit: ulimit -Hn, LimitNOFILE=)",
        rl.rlim_cur, opts.max_connections);
  }
}

// The S3 lifecycle worker's options; --test-clock-file is hidden (tests only).
void AddLifecycleOptions(CLI::App* srv, server::ServerOptions& o) {
  srv->add_flag(
      "--no-lifecycle{false}", o.enable_lifecycle,
      "Do not run the S3 lifecycle worker (bucket lifecycle rules are kept, not applied)");
  srv->add_option("--lifecycle-interval-ms", o.lifecycle_interval_ms,
                  "Time from the start of one lifecycle pass to the next")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{7} * 24 * 3600 * 1000));
  srv->add_option("--lifecycle-page-keys", o.lifecycle_page_keys,
                  "Keys the lifecycle worker reads per listing page")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  srv->add_option("--lifecycle-page-pause-ms", o.lifecycle_page_pause_ms,
                  "Pause of the lifecycle worker after each page of keys")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{60'000}));
  srv->add_option("--lifecycle-rate", o.lifecycle_max_actions_per_sec,
                  "Lifecycle expirations and aborts per second (0 = unlimited)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  srv->add_option("--test-clock-file", o.test_clock_file,
                  "Test only: the lifecycle worker's current time is the Unix time in this file")
      ->group("");
}

int RunServer(server::ServerOptions opts, const std::string& log_level) {
  log::SetLevel(log::ParseLevel(log_level));
  RaiseDescriptorLimit(opts);
  // Block the stop signals before any thread starts so they reach sigwait only.
  const sigset_t set = BlockStopSignals();

  server::StrataServer srv(opts);
  Status st = srv.Start();
  if (!st.ok()) {
    fmt::print(stderr, "strata server: {}\n", st.ToString());
    return 1;
  }
  const auto& creds = srv.credentials();
  fmt::print("Strata server is running (data: {})\n", opts.data_dir);
  if (opts.enable_s3) {
    fmt::print("  S3 API:     {}\n", srv.s3_endpoint());
    fmt::print("  AccessKey:  {}\n  SecretKey:  {}{}\n", creds.users[0].access_key,
               creds.users[0].secret_key,
               creds.generated ? fmt::format("   (generated, stored in {}/credentials)", opts.data_dir)
                               : "");
  }
  if (opts.enable_vector && srv.vector_port() != 0) {
    fmt::print("  Vector API: {} (Qdrant-compatible){}\n", srv.vector_endpoint(),
               opts.vector_api_key.empty() ? "" : ", api-key required");
  }
  if (srv.milvus_port() != 0) {
    fmt::print("  Milvus API: {} (gRPC{}, Milvus-compatible{})\n", opts.milvus_address,
               opts.milvus_rest ? " and REST v2" : "", opts.milvus_auth ? ", token required" : "");
  }
  if (opts.enable_features && srv.features_port() != 0) {
    fmt::print("  Features:   {} (Feast-compatible; repository {}){}\n", srv.features_endpoint(), srv.features_repo(),
               opts.features_api_key.empty() ? "" : ", API key required");
  }
  if (opts.enable_admin) {
    fmt::print("  Metrics:    {}/metrics\n", srv.admin_endpoint());
    fmt::print("  Health:     {}/health\n", srv.admin_endpoint());
  }
  if (opts.enable_s3) {
    fmt::print("\nTry it:\n  export AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={}\n"
               "  aws --endpoint-url {} s3 mb s3://my-bucket\n",
               creds.users[0].access_key, creds.users[0].secret_key, srv.s3_endpoint());
  }
  std::fflush(stdout);
  const int sig = WaitForStopSignal(set);
  fmt::print(stderr, "strata server: received {}, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  srv.Stop();
  return 0;
}

// strata server's flags for vector collections on an object store
// (docs/scale-out.md): the one writer and its read-only replicas.
void AddVectorStorageOptions(CLI::App* srv, server::ServerOptions& sopts) {
  srv->add_option(
      "--vector-storage", sopts.vector_storage,
      "Keep sealed vector segments and manifests in this object store (s3://BUCKET/PREFIX?"
      "endpoint=..., file://...); this server is its one writer (docs/scale-out.md)");
  srv->add_option("--vector-replica-of", sopts.vector_replica_of,
                  "Serve a read-only replica of the vector collections in this object store");
  srv->add_option("--vector-publish-interval-ms", sopts.vector_publish_interval_ms,
                  "Writer: unpublished vector writes are sealed and published after this long")
      ->capture_default_str();
  srv->add_option("--vector-poll-interval-ms", sopts.vector_poll_interval_ms,
                  "Replica: how often the published manifests are checked")
      ->capture_default_str();
  srv->add_option("--vector-cache-bytes", sopts.vector_cache_bytes,
                  "Replica: disk cache (DATA/vector-cache) for segments read from the store")
      ->capture_default_str();
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"Strata: the storage layer for AI teams (S3 object store, and more)", "strata"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");

  server::ServerOptions sopts;
  std::string log_level = "info";
  bool no_fsync = false;
  auto* srv = app.add_subcommand("server",
                                 "Run every Strata service in one process (S3 on :9000, admin on "
                                 ":9001, vector on :6333, Milvus on :19530, features on :6566)");
  int features_port = 6566;
  int milvus_port = 19530;
  std::string milvus_host = "127.0.0.1";
  std::string features_host = "127.0.0.1";
  srv->add_option("--data", sopts.data_dir, "Data directory (objects, metadata, credentials)")
      ->capture_default_str();
  srv->add_option("--s3-address", sopts.s3_address, "S3 API listen address")->capture_default_str();
  srv->add_option("--kms-key-file", sopts.kms_key_file,
                  "Master key of S3 server-side encryption, 64 hex chars (default: DATA/kms-master.key, "
                  "created 0600 at first start)");
  srv->add_option("--kms-key", sopts.kms_keys,
                  "Declare a named SSE-KMS key id (repeatable; the first is the default; none: \"aws/s3\")");
  srv->add_option("--admin-address", sopts.admin_address, "Admin listen address (/metrics, /health)")
      ->capture_default_str();
  srv->add_flag("--no-s3{false}", sopts.enable_s3, "Do not serve the S3 API");
  srv->add_flag("--no-admin{false}", sopts.enable_admin, "Do not serve the admin endpoint");
  srv->add_option("--vector-address", sopts.vector_address, "Vector (Qdrant-compatible REST) listen address")
      ->capture_default_str();
  srv->add_flag("--no-vector{false}", sopts.enable_vector, "Do not serve the vector API");
  AddVectorStorageOptions(srv, sopts);
  srv->add_option("--vector-api-key", sopts.vector_api_key,
                  "Require this key in the api-key header of vector API requests (also STRATA_VECTOR_API_KEY)");
  srv->add_option("--milvus-port", milvus_port,
                  "Milvus-compatible gRPC API port (over the vector collections); 0 disables it")
      ->capture_default_str();
  srv->add_option("--milvus-host", milvus_host, "Milvus API listen address")->capture_default_str();
  srv->add_flag(
      "--milvus-auth", sopts.milvus_auth,
      "Require a Milvus token (user:password of an S3 user, or a --milvus-api-key) on the "
      "Milvus gRPC and REST API (also STRATA_MILVUS_AUTH=1)");
  srv->add_option("--milvus-api-key", sopts.milvus_api_keys,
                  "An API key accepted as a Milvus token with --milvus-auth (repeatable; also "
                  "STRATA_MILVUS_API_KEY)");
  srv->add_flag("--no-milvus-rest{false}", sopts.milvus_rest,
                "Serve only gRPC on the Milvus port, not the RESTful API v2");
  srv->add_option("--features-repo", sopts.features_repo,
                  "Feature repository served on the feature port (default: DATA/features, created empty)");
  srv->add_option("--features-port", features_port, "Feature server (Feast HTTP API) port; 0 disables it")
      ->capture_default_str();
  srv->add_option("--features-host", features_host, "Feature server listen address")->capture_default_str();
  srv->add_option("--features-api-key", sopts.features_api_key,
                  "Require this key (Authorization: Bearer or X-API-Key) on the feature server (also STRATA_FEATURES_API_KEY)");
  srv->add_option("--features-log-sample-rate", sopts.features_log_sample_rate,
                  "Log this fraction of served feature vectors to Parquet (default: the repository's feature_server.logging)");
  srv->add_option("--features-log-dir", sopts.features_log_dir,
                  "Directory of the served-vector log (default: REPO/data/served_log)");
  srv->add_option("--warm-dir", sopts.warm_dirs,
                  "A `strata warm` cache directory (or a directory of them) whose progress the "
                  "console shows (repeatable)");
  srv->add_option("--checkpoint-dir", sopts.checkpoint_dirs,
                  "A local checkpoint directory of `strata ckpt --dir` (or a directory of run "
                  "directories) the console lists (repeatable)");
  srv->add_option("--region", sopts.region, "Region reported to clients")->capture_default_str();
  srv->add_option("--domain", sopts.domains, "Domains for virtual-host-style requests (bucket.DOMAIN)")
      ->capture_default_str();
  srv->add_option("--tls-cert", sopts.tls_cert_file, "PEM certificate: serve S3 over HTTPS");
  srv->add_option("--tls-key", sopts.tls_key_file, "PEM private key for --tls-cert");
  srv->add_option("--threads", sopts.threads, "HTTP worker threads (0 = 4 x cores, at least 8)")
      ->capture_default_str();
  srv->add_option(
         "--max-connections", sopts.max_connections,
         "Open client connections per frontend (at the limit the oldest idle ones are closed)")
      ->capture_default_str();
  srv->add_option("--max-connections-per-ip", sopts.max_connections_per_ip,
                  "Open client connections per frontend from one address (0 = no cap)")
      ->capture_default_str();
  srv->add_option("--max-header-bytes", sopts.max_header_bytes, "Largest request head accepted")
      ->capture_default_str();
  srv->add_option(
         "--header-timeout-ms", sopts.header_timeout_ms,
         "Time to send a complete request head, from accept (a silent connection is closed then)")
      ->capture_default_str();
  srv->add_option("--idle-timeout-ms", sopts.idle_timeout_ms,
                  "Keep-alive idle timeout between requests")
      ->capture_default_str();
  srv->add_option("--io-timeout-ms", sopts.io_timeout_ms, "Timeout of each body read or write")
      ->capture_default_str();
  srv->add_flag("--no-fsync", no_fsync,
                "Do not fsync on commit (faster; an acknowledged write still survives kill -9 but not power loss)");
  srv->add_option("--log-level", log_level, "trace|debug|info|warn|error")->capture_default_str();
  AddLifecycleOptions(srv, sopts);

  int transfer_rc = -1;  // set by the transfer subcommands' callbacks (run inside parse)
  RegisterTransferCommands(app, &transfer_rc);
  RegisterDatapathCommands(app, &transfer_rc);
  RegisterFeaturesCommands(app, &transfer_rc);
  RegisterFsCommands(app, &transfer_rc);
  RegisterUserCommands(app, &transfer_rc);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help/version (0) or the error
    return rc == 0 ? 0 : 2;      // 2: usage error, as the transfer commands document
  }
  if (transfer_rc >= 0) return transfer_rc;

  if (srv->parsed()) {
    if (const char* env = std::getenv("STRATA_DATA"); env != nullptr && srv->count("--data") == 0)
      sopts.data_dir = env;
    sopts.sync = !no_fsync;
    sopts.vector_bind_required = srv->count("--vector-address") > 0;
    if (features_port < 0 || features_port > 65535) {
      fmt::print(stderr, "strata server: --features-port must be 0..65535\n");
      return 2;
    }
    if (milvus_port < 0 || milvus_port > 65535) {
      fmt::print(stderr, "strata server: --milvus-port must be 0..65535\n");
      return 2;
    }
    sopts.enable_milvus = milvus_port != 0;
    sopts.milvus_address =
        (milvus_host.find(':') != std::string::npos ? "[" + milvus_host + "]" : milvus_host) + ":" +
        std::to_string(milvus_port);
    sopts.milvus_bind_required = srv->count("--milvus-port") > 0 || srv->count("--milvus-host") > 0;
    sopts.enable_features = features_port != 0;
    sopts.features_address = (features_host.find(':') != std::string::npos ? "[" + features_host + "]" : features_host) +
                             ":" + std::to_string(features_port);
    sopts.features_bind_required = srv->count("--features-port") > 0 || srv->count("--features-host") > 0;
    if (const char* k = std::getenv("STRATA_FEATURES_API_KEY"); k != nullptr && sopts.features_api_key.empty())
      sopts.features_api_key = k;
    if (const char* a = std::getenv("STRATA_MILVUS_AUTH");
        a != nullptr && std::string_view(a) == "1")
      sopts.milvus_auth = true;
    if (const char* k = std::getenv("STRATA_MILVUS_API_KEY"); k != nullptr && *k != '\0')
      sopts.milvus_api_keys.emplace_back(k);
    if (const char* k = std::getenv("STRATA_VECTOR_API_KEY"); k != nullptr && sopts.vector_api_key.empty())
      sopts.vector_api_key = k;
    return RunServer(sopts, log_level);
  }
  return 0;
}

}  // namespace strata::cli
