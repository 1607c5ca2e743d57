// The one Status -> HTTP mapping of the Feast API.
#include "feast/errors.h"

#include <nlohmann/json.hpp>

namespace strata::feast {
ErrorReply ToErrorReply(const Status& st) {
  const std::string& m = st.message();
  if (const int status = http::ProtocolErrorStatus(st); status != 0) return ErrorReply{status, m};
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
