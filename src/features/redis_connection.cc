// connection_string parsing for the Redis online stores.
#include "features/redis_connection.h"

#include <charconv>

#include <fmt/format.h>

namespace strata::features {

namespace {

bool ParseInt(const std::string& s, int* out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<redis::Endpoint> ParseRedisConnection(const std::string& connection) {
  redis::Endpoint endpoint;
  std::string hostport = connection;
  const size_t comma = connection.find(',');
  if (comma != std::string::npos) {
    hostport = connection.substr(0, comma);
    std::string rest = connection.substr(comma + 1);
    while (!rest.empty()) {
      const size_t c = rest.find(',');
      const std::string item = rest.substr(0, c);
      rest = c == std::string::npos ? "" : rest.substr(c + 1);
      if (item.rfind("db=", 0) == 0) {
        if (!ParseInt(item.substr(3), &endpoint.db) || endpoint.db < 0) {
          return Status::InvalidArgument(fmt::format(
              "redis connection_string \"{}\": \"{}\" is not a database number", connection, item));
        }
      } else if (item.rfind("password=", 0) == 0) {
        endpoint.password = item.substr(9);
      } else if (item == "ssl=false" || item == "ssl=False") {
        // plain TCP, as without the option
      } else {
        // Feast's ssl=true, cluster nodes ("host2:6379") and the rest: not implemented, so not
        // accepted.
        return Status::InvalidArgument(
            fmt::format("redis connection_string \"{}\": \"{}\" is not supported "
                        "(host:port[,db=N][,password=P])",
                        connection, item));
      }
    }
  }
  const size_t colon = hostport.rfind(':');
  endpoint.host = colon == std::string::npos ? hostport : hostport.substr(0, colon);
  const std::string port = colon == std::string::npos ? "6379" : hostport.substr(colon + 1);
  if (!ParseInt(port, &endpoint.port) || endpoint.port <= 0 || endpoint.port > 65535) {
    return Status::InvalidArgument(fmt::format(
        "redis connection_string \"{}\": \"{}\" is not a port number", connection, port));
  }
  return endpoint;
}

Status DrainReplies(redis::Connection& conn, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    STRATA_ASSIGN_OR_RETURN(redis::Reply r, conn.GetReply());
    if (r.is_error()) return Status::IOError("redis: " + r.str);
  }
  return Status::Ok();
}

}  // namespace strata::features
