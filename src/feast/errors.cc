// The one Status -> HTTP mapping of the Feast API.
#include "feast/errors.h"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::feast {
namespace {

// A protocol error's message starts with this byte and three digits of HTTP
// status; no domain message starts with a control character.
constexpr char kProtocolTag = '\x1e';

}  // namespace

Status ProtocolError(int http_status, std::string_view detail) {
  StatusCode code = StatusCode::kInvalidArgument;
  if (http_status == 401) code = StatusCode::kPermissionDenied;
  if (http_status == 413) code = StatusCode::kResourceExhausted;
  if (http_status >= 500) code = StatusCode::kInternal;
  return Status(code, fmt::format("{}{:03d}{}", kProtocolTag, http_status, detail));
}

ErrorReply ToErrorReply(const Status& st) {
  const std::string& m = st.message();
  if (m.size() >= 4 && m[0] == kProtocolTag) {
    return ErrorReply{std::atoi(m.substr(1, 3).c_str()), m.substr(4)};
  }
  int code = 500;
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      code = 422;
      break;
    case StatusCode::kNotFound:
      code = 404;
      break;
    case StatusCode::kUnavailable:
      code = 503;
      break;
    default:
      break;
  }
  return ErrorReply{code, m};
}

std::string DetailJson(std::string_view detail) {
  using json = nlohmann::ordered_json;
  // Invalid UTF-8 (a raw request path in "no endpoint ...") is replaced rather
  // than thrown.
  return json{{"detail", std::string(detail)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace strata::feast
