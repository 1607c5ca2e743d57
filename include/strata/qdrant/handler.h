// The Qdrant-compatible REST API (the subset @qdrant/js-client-rest 1.x uses)
// over a vector::CollectionManager. An adapter at the edge: it maps JSON to
// the collection API and Status to HTTP, and owns no storage.
//
// Responses use Qdrant's envelope, {"result": ..., "status": "ok", "time": s},
// and its error shape, {"status": {"error": "..."}, "time": s}. Extensions:
// a "strata" object in the create-collection body chooses the index type and
// parameters and declares typed payload fields; a filter may be a Milvus-style
// expression string wherever Qdrant takes a filter object (docs/vector.md).
//
// The handler binds no port: a host (server/, or a test through
// http::ServeInMemory) calls Handle() for each request and passes
// HandleTransportError() as the HTTP server's error_handler. The manager is
// borrowed and must outlive the handler.
//
// Thread-safety: Handle() runs concurrently on the HTTP server's workers.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <strata/core/http_server.h>
#include <strata/vector/collection.h>

namespace strata::qdrant {

struct HandlerOptions {
  std::string api_key;                // non-empty: required in `api-key` or `Authorization: Bearer`
  size_t max_body_bytes = 256 << 20;  // larger request bodies get 413
  // Snapshot uploads stream to a file under the manager's root instead.
  uint64_t max_upload_bytes = uint64_t{64} << 30;
  // Test-only fault hook (unset in production): called with "before" just
  // before a request's operation runs and with "after" once it has run; the
  // seconds it returns are added to the request's measured time, as a slow
  // queue or a slow disk would add them, so a test reaches the `timeout`
  // paths without sleeping.
  std::function<double(std::string_view stage)> inject_delay;
};

class Handler {
 public:
  Handler(vector::CollectionManager* manager, HandlerOptions options);
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

}  // namespace strata::qdrant
