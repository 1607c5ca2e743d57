// The admin API for S3 users on the admin port (JSON over HTTP), what
// `strata user add|rm|ls|policy` calls on a running server:
//   GET    /admin/v1/users               -> {"users": [{"name", "access_key", "has_policy"}]}
//   POST   /admin/v1/users               {"name", "access_key"?, "secret_key"?}
//                                        -> 201 {"name", "access_key", "secret_key"}
//   DELETE /admin/v1/users/NAME          -> 204
//   GET    /admin/v1/users/NAME/policy   -> 200 the policy document | 404
//   PUT    /admin/v1/users/NAME/policy   the policy document -> 204 | 400 MalformedPolicy
//   DELETE /admin/v1/users/NAME/policy   -> 204
// Every call carries "Authorization: Bearer <root secret key>" (the root
// user's secret, as in DATA/credentials or STRATA_ROOT_PASSWORD); anything
// else answers 401. Errors are {"error": CODE, "message": TEXT}.
#pragma once

#include <strata/core/http_server.h>
#include <strata/s3/user_store.h>

namespace strata::server {

inline constexpr char kAdminUsersPath[] = "/admin/v1/users";

void AdminUsers(http::Request& req, http::ResponseWriter& w, s3::UserStore* store,
                const s3::User& root);

}  // namespace strata::server
