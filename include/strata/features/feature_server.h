// The feature server: Feast's HTTP API (python-feature-server) on :6566.
//
//   POST /get-online-features      {"features": ["view:feature", ...] | "feature_service": "s",
//                                   "entities": {"driver_id": [1001, 1002]}, "full_feature_names": false}
//        -> {"metadata": {"feature_names": [...]},
//            "results": [{"values": [...], "statuses": [...], "event_timestamps": [...]}, ...]}
//   POST /push                     {"push_source_name": "view", "df": {"col": [...]}, "to": "online"}
//   POST /write-to-online-store    {"feature_view_name": "view", "df": {"col": [...]}}
//   POST /materialize              {"start_ts": "...", "end_ts": "...", "feature_views": [...]}
//   POST /materialize-incremental  {"end_ts": "...", "feature_views": [...]}
//   GET  /health                   200 {} (also with no feature views)
//
// The registry file is re-read when it changes (checked at most every
// registry_refresh_ms), so `strata features apply` reaches a running server.
// With logging.sample_rate > 0 a sample of the served vectors is written to
// Parquet in the background (serving_log.h).
//
// Errors answer 4xx/5xx with {"detail": "..."} (FastAPI's shape) and the server
// keeps serving. Thread-safe: requests run concurrently on the HTTP server's
// workers; materialization and registry updates are serialized by a mutex.
#pragma once

#include <memory>
#include <string>

#include <strata/core/result.h>
#include <strata/features/online.h>
#include <strata/features/repo.h>
#include <strata/features/serving_log.h>

namespace strata::features {

struct FeatureServerOptions {
  std::string host = "127.0.0.1";
  int port = 6566;  // 0 = any free port
  int threads = 0;  // 0 = the HTTP server's default
  std::string api_key;  // when set, requests need "Authorization: Bearer <key>" or "X-API-Key"
  int registry_refresh_ms = 1000;  // 0: never re-read the registry
  ServingLogOptions logging;       // sample_rate 0: no logging
};

// The logging options feature_store.yaml asks for (feature_server.logging).
ServingLogOptions LoggingOptionsFromConfig(const RepoConfig& config);

// What a long-running server serves from repository `dir`: its config and, once
// `apply` has written it, its registry (before that: no definitions; the
// server picks the registry up when it appears).
Result<FeatureRepo> LoadServingRepo(const std::string& dir);

class FeatureServer {
 public:
  // `registry` is the applied repository (LoadRegistry + the repo's config);
  // the server owns it and the store.
  FeatureServer(FeatureRepo registry, std::unique_ptr<OnlineStore> store, FeatureServerOptions options);
  ~FeatureServer();
  Status Start();
  void Stop();
  int port() const;
  // The served-vector logger, or nullptr when logging is off.
  ServingLogger* logger();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::features
