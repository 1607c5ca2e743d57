// The one Status -> HTTP mapping of the Qdrant API, and its envelope.
#include "qdrant/errors.h"


namespace strata::qdrant {
namespace {

using json = nlohmann::json;

int HttpStatusOf(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kPreconditionFailed:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kNotSupported:
      return 400;
    default:
      return 500;
  }
}

}  // namespace

ErrorReply ToErrorReply(const Status& st) {
  const std::string& m = st.message();
  if (const int status = http::ProtocolErrorStatus(st); status != 0) return ErrorReply{status, m};
  std::string prefix;
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      prefix = "Wrong input: ";
      break;
    case StatusCode::kNotFound:
      prefix = "Not found: ";
      break;
    case StatusCode::kAlreadyExists:
      prefix = "Wrong input: ";
      break;
    case StatusCode::kNotSupported:
      prefix = "Unsupported: ";
      break;
    case StatusCode::kUnavailable:
      prefix = "Service unavailable: ";
      break;
    default:
      prefix = "Service internal error: ";
      break;
  }
  return ErrorReply{HttpStatusOf(st), prefix + st.message()};
}

std::string OkBody(json result, double seconds) {
  json j{{"result", std::move(result)}, {"status", "ok"}, {"time", seconds}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ErrorBody(const ErrorReply& e, double seconds) {
  json j{{"status", {{"error", e.message}}}, {"time", seconds}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace strata::qdrant
