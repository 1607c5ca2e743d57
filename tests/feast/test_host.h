// A feature server on a real socket, for the tests that drive it over HTTP:
// a features::OnlineService, the Feast handler, and an http::Server on a free
// port, hosted the way `strata features serve` hosts them.
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include <strata/core/http_server.h>
#include <strata/feast/handler.h>
#include <strata/features/online_service.h>

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
    h.error_handler = [this](int status, std::string_view m, http::ResponseWriter& w) {
      handler_.HandleTransportError(status, m, w);
    };
    server_ = std::make_unique<http::Server>(
        h, [this](http::Request& req, http::ResponseWriter& w) { handler_.Handle(req, w); });
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

}  // namespace strata::feast
