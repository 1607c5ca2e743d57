// RestHandler: Milvus's RESTful API v2 (POST /v2/vectordb/{collections,
// entities,indexes,partitions,aliases}/<action>, JSON bodies) as a thin
// mapping onto MilvusServiceImpl: each request becomes the RPC request the
// gRPC SDKs would send, runs through the same method, and its response is
// written as Milvus's REST JSON: {"code":0,"data":...} or
// {"code":N,"message":...} with Milvus's codes (HTTP 200 either way, as
// Milvus answers; 401 for a refused token, 404/405 for an unknown path or
// method). Dispatch needs no socket, so the mapping is unit-tested directly.
//
// Thread-safety: requests run concurrently; the handler holds no state of
// its own (the service and authenticator are borrowed).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>

#include "milvus/auth.h"
#include "milvus/rest_convert.h"
#include "milvus/service.h"

namespace strata::milvus {

struct RestRequest {
  std::string_view path;  // "/v2/vectordb/collections/create"
  std::string_view body;
  std::string_view authorization;  // the Authorization header ("" when absent)
  bool allow_int64 = false;        // Accept-Type-Allow-Int64: int64 as numbers, not strings
};
struct RestReply {
  int http_status = 200;
  nlohmann::json body;
};

class RestHandler {
 public:
  RestHandler(MilvusServiceImpl* service, const Authenticator* auth) : svc_(service), auth_(auth) {}

  RestReply Dispatch(const RestRequest& req) const;

  // The http::Server frontend interface (http_server.h).
  void Handle(http::Request& req, http::ResponseWriter& w) const;
  void HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) const;

  struct Call;  // one request being served (rest.cc)

 private:
  MilvusServiceImpl* svc_;
  const Authenticator* auth_;
};

}  // namespace strata::milvus
