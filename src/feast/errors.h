// Feast's error replies: the one mapping from Status to an HTTP status and
// the {"detail": "..."} body FastAPI answers with. Every route returns
// Status/Result; only this file turns them into HTTP.
#pragma once

#include <string>
#include <string_view>

#include <strata/core/http_server.h>
#include <strata/core/status.h>

namespace strata::feast {

struct ErrorReply {
  int status = 500;
  std::string detail;
};

// Domain errors: kInvalidArgument 422 (FastAPI's validation status),
// kNotFound 404, kUnavailable 503, anything else 500; the detail is the
// message. A Status made by ProtocolError keeps the status it was given.
ErrorReply ToErrorReply(const Status& st);

// Errors of the protocol itself are http::ProtocolError (core/http_server.h).
using http::ProtocolError;

// {"detail": "..."}
std::string DetailJson(std::string_view detail);

}  // namespace strata::feast
