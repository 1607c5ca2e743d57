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
// Thread-safety: Handle() runs concurrently on the HTTP server's workers.
#pragma once

#include <strata/core/http_server.h>
#include <strata/vector/collection.h>

#include <memory>
#include <string>
#include <string_view>

namespace strata::server {

struct VectorRestOptions {
  std::string api_key;                // non-empty: required in `api-key` or `Authorization: Bearer`
  size_t max_body_bytes = 256 << 20;  // larger request bodies get 413
};

class VectorRest {
 public:
  VectorRest(vector::CollectionManager* manager, VectorRestOptions options);
  ~VectorRest();

  void Handle(http::Request& req, http::ResponseWriter& w);
  // For http::ServerOptions::error_handler: errors the HTTP layer finds itself.
  void HandleTransportError(int status, std::string_view message, http::ResponseWriter& w);

  // The routing core without a socket: one request in, status and JSON out.
  struct Reply {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
  };
  Reply Dispatch(std::string_view method, std::string_view path, std::string_view query,
                 std::string_view body, std::string_view api_key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
