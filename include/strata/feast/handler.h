// Feast's HTTP API (python-feature-server) over a features::OnlineService:
//
//   POST /get-online-features      {"features": ["view:feature", ...] | "feature_service": "s",
//                                   "entities": {"driver_id": [1001, 1002]},
//                                   "full_feature_names": false}
//        -> {"metadata": {"feature_names": [...]},
//            "results": [{"values": [...], "statuses": [...], "event_timestamps": [...]}, ...]}
//   POST /push                     {"push_source_name": "view", "df": {"col": [...]}, "to":
//   "online"} POST /write-to-online-store    {"feature_view_name": "view", "df": {"col": [...]}}
//   POST /materialize              {"start_ts": "...", "end_ts": "...", "feature_views": [...]}
//   POST /materialize-incremental  {"end_ts": "...", "feature_views": [...]}
//   GET  /health                   200 {} (also with no feature views)
//
// An adapter at the edge: it maps JSON to the service's requests and Status
// to HTTP, and binds no port. A host (server/, `strata features serve`, or a
// test through http::ServeInMemory) calls Handle() for each request and passes
// HandleTransportError() as the HTTP server's error_handler. Errors answer
// 4xx/5xx with {"detail": "..."} (FastAPI's shape) and the server keeps
// serving. The service is borrowed and must outlive the handler.
//
// Thread-safety: Handle() runs concurrently on the HTTP server's workers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <strata/core/http_server.h>
#include <strata/features/online_service.h>

namespace strata::feast {

struct HandlerOptions {
  // Non-empty: requests (except GET /health) need "Authorization: Bearer <key>"
  // or "X-API-Key: <key>".
  std::string api_key;
  size_t max_body_bytes = 64 << 20;  // larger request bodies get 413
};

class Handler {
 public:
  Handler(features::OnlineService* service, HandlerOptions options);
  ~Handler();
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  void Handle(http::Request& req, http::ResponseWriter& w);
  // For http::ServerOptions::error_handler: errors the HTTP layer finds itself.
  void HandleTransportError(int status, std::string_view message, http::ResponseWriter& w);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::feast
