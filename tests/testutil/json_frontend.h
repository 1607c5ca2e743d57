// Calls a JSON protocol frontend (qdrant::Handler, feast::Handler, ...) in
// memory, as its unit tests do: one request through http::ServeInMemory, with
// the frontend's own replies to errors the HTTP layer finds, and the answer
// parsed as JSON (a body that is not JSON parses to a discarded value).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <strata/core/http_server.h>

namespace strata::testing {

struct JsonAnswer {
  int status = 0;
  nlohmann::json body;
  std::string text;
  std::string content_type;
};

template <class Frontend>
JsonAnswer CallJson(Frontend& frontend, const std::string& method, const std::string& target,
                    const std::string& body = {},
                    std::vector<std::pair<std::string, std::string>> headers = {},
                    http::ServerOptions options = {}) {
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  http::RecordedResponse r =
      http::ServeInMemory(http::FrontendHandler(&frontend),
                          http::FormatRequest(method, target, headers, body),
                          http::WithFrontendErrors(std::move(options), &frontend));
  JsonAnswer a;
  a.status = r.status;
  a.text = r.body;
  a.content_type = std::string(r.Header("Content-Type").value_or(""));
  a.body = nlohmann::json::parse(r.body, nullptr, false);
  return a;
}

}  // namespace strata::testing
