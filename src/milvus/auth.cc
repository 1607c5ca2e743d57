// Token checks for the Milvus frontend (auth.h).
#include "milvus/auth.h"

#include <fmt/format.h>

#include <strata/core/strings.h>

namespace strata::milvus {

Status Authenticator::CheckToken(std::string_view token) const {
  if (!opts_.enabled) return Status::Ok();
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) {
    for (const std::string& k : opts_.api_keys) {
      if (!k.empty() && k == token) return Status::Ok();
    }
    return Status::PermissionDenied("auth check failure, please check api key is correct");
  }
  const std::string_view user = token.substr(0, colon);
  const std::string_view password = token.substr(colon + 1);
  if (!user.empty() && opts_.verify_password && opts_.verify_password(user, password)) {
    return Status::Ok();
  }
  return Status::PermissionDenied(
      "auth check failure, please check username and password are correct");
}

grpc::Status Authenticator::CheckGrpc(const grpc::ServerContext* ctx) const {
  if (!opts_.enabled) return grpc::Status::OK;
  if (ctx == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing authorization in header");
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing authorization in header");
  }
  const std::string_view raw(it->second.data(), it->second.size());
  std::optional<std::string> token = Base64Decode(raw);
  if (!token) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token format");
  Status st = CheckToken(*token);
  if (!st.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, st.message());
  return grpc::Status::OK;
}

Status Authenticator::CheckHttp(std::string_view authorization) const {
  if (!opts_.enabled) return Status::Ok();
  std::string_view v = Trim(authorization);
  auto strip = [&v](std::string_view scheme) {
    if (v.size() > scheme.size() && IEquals(v.substr(0, scheme.size()), scheme)) {
      v = Trim(v.substr(scheme.size()));
      return true;
    }
    return false;
  };
  if (strip("Basic ")) {
    std::optional<std::string> token = Base64Decode(v);
    if (!token || token->find(':') == std::string::npos) {
      return Status::PermissionDenied("user hasn't authenticated: malformed Basic credentials");
    }
    return CheckToken(*token);
  }
  if (strip("Bearer ") && !v.empty()) return CheckToken(v);
  return Status::PermissionDenied(
      "user hasn't authenticated: send \"Authorization: Bearer <user>:<password>\" or an API key");
}

}  // namespace strata::milvus
