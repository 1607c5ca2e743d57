// Milvus's authentication (off by default, as in Milvus standalone): a token
// is "user:password" or an API key (a token without ':'). Over gRPC it comes
// as the `authorization` metadata, base64 of the token; over REST as
// "Authorization: Bearer <token>" (or Basic user:password). The checks
// themselves are the server's (Strata's S3 user store, the API keys):
// AuthOptions carries them in.
//
// Thread-safety: Check may run concurrently; the options are read only.
#pragma once

#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include <strata/core/status.h>
#include <strata/milvus/server.h>

namespace strata::milvus {

class Authenticator {
 public:
  explicit Authenticator(AuthOptions options) : opts_(std::move(options)) {}
  bool enabled() const { return opts_.enabled; }
  // The decoded token ("user:password" or an API key): kPermissionDenied
  // with Milvus's wording when it names no user or key; Ok when auth is off.
  Status CheckToken(std::string_view token) const;
  // The gRPC `authorization` metadata (base64 of the token); nullopt = absent.
  // Returns the gRPC status Milvus answers (UNAUTHENTICATED) or OK.
  grpc::Status CheckGrpc(const grpc::ServerContext* ctx) const;
  // The REST `Authorization` header value ("Bearer <token>" or "Basic <b64>").
  Status CheckHttp(std::string_view authorization) const;

 private:
  AuthOptions opts_;
};

}  // namespace strata::milvus
