// A feature server on a real socket, for the tests that drive it over HTTP:
// a features::OnlineService, the Feast handler, and an http::Server on a free
// port, hosted the way `strata features serve` hosts them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <strata/core/http_client.h>
#include <strata/core/http_server.h>
#include <strata/feast/handler.h>
#include <strata/features/online_service.h>

#include "testutil/testutil.h"

namespace strata::feast {

class TestFeatureServer {
 public:
  TestFeatureServer(features::FeatureRepo registry, std::unique_ptr<features::OnlineStore> store,
                    features::OnlineServiceOptions options = {}, HandlerOptions handler = {})
      : service_(std::move(registry), std::move(store), std::move(options)),
        handler_(&service_, std::move(handler)) {
    http::ServerOptions h;
    h.name = "features";
    h.port = 0;
    server_ = http::FrontendServer(h, &handler_);
  }
  ~TestFeatureServer() { Stop(); }

  Status Start() {
    STRATA_RETURN_IF_ERROR(service_.Open());
    return server_->Start();
  }
  // Stops serving, then publishes the open log files.
  void Stop() {
    server_->Stop();
    (void)service_.Close();
  }
  int port() const { return server_->port(); }
  features::ServingLogger* logger() { return service_.logger(); }

 private:
  features::OnlineService service_;
  Handler handler_;
  std::unique_ptr<http::Server> server_;
};

// POSTs a JSON body to a test server and returns the parsed answer (status in *status).
inline nlohmann::json PostJson(http::HttpClient& c, int port, const std::string& path,
                               const std::string& body, int* status) {
  http::ClientRequest req;
  req.method = "POST";
  req.host = "127.0.0.1";
  req.port = static_cast<uint16_t>(port);
  req.target = path;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body;
  auto resp = c.Send(req);
  EXPECT_OK(resp);
  if (!resp.ok()) return nlohmann::json();
  *status = (*resp)->status();
  auto text = (*resp)->ReadAll();
  EXPECT_OK(text);
  return nlohmann::json::parse(*text, nullptr, false);
}

}  // namespace strata::feast
