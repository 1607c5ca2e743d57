// Qdrant's error replies and response envelope: the one mapping from Status
// to an HTTP status and Qdrant's error text, and the JSON bodies around every
// answer. Every route returns Status/Result; only this file turns them into
// HTTP.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>
#include <strata/core/status.h>

namespace strata::qdrant {

// An error as the wire carries it: the HTTP status and the text of
// {"status": {"error": text}}.
struct ErrorReply {
  int status = 500;
  std::string message;
};

// Domain errors: the code picks the HTTP status and Qdrant's class prefix
// ("Wrong input: ", "Not found: ", ...). A Status made by ProtocolError keeps
// the HTTP status and text it was given.
ErrorReply ToErrorReply(const Status& st);

// Errors of the protocol itself are http::ProtocolError (core/http_server.h).
using http::ProtocolError;

// {"result": ..., "status": "ok", "time": seconds}
std::string OkBody(nlohmann::json result, double seconds);
// {"status": {"error": "..."}, "time": seconds}
std::string ErrorBody(const ErrorReply& e, double seconds);

}  // namespace strata::qdrant
