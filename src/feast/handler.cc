// Feast's HTTP API: the API key, body limits, the routes, and the one place a
// Status becomes an HTTP reply (through errors.h). Request decoding lives in
// request_json.cc, the get-online-features encoding in response_json.cc, and
// everything the routes do in features::OnlineService.
#include <exception>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <strata/feast/handler.h>

#include "feast/errors.h"
#include "feast/request_json.h"
#include "feast/response_json.h"

namespace strata::feast {
namespace {

void WriteError(const Status& st, http::ResponseWriter& w) {
  ErrorReply e = ToErrorReply(st);
  w.SetStatus(e.status);
  w.AddHeader("Content-Type", "application/json");
  (void)w.Send(DetailJson(e.detail));
}

}  // namespace

struct Handler::Impl {
  features::OnlineService* service;
  HandlerOptions options;

  Status CheckKey(const http::Request& req) const {
    if (options.api_key.empty()) return Status::Ok();
    auto auth = req.Header("Authorization");
    auto key = req.Header("X-API-Key");
    const bool ok =
        (auth && *auth == "Bearer " + options.api_key) || (key && *key == options.api_key);
    if (!ok && req.path != "/health") return ProtocolError(401, "missing or wrong API key");
    return Status::Ok();
  }

  Result<json> ParseBody(http::Request& req) const {
    auto raw = req.ReadAllBody(options.max_body_bytes);
    if (!raw.ok()) return ProtocolError(413, raw.error().message());
    json j = json::parse(*raw, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Status::InvalidArgument("the request body must be a JSON object");
    return j;
  }

  Result<std::string> GetOnline(http::Request& req) {
    STRATA_ASSIGN_OR_RETURN(json j, ParseBody(req));
    STRATA_ASSIGN_OR_RETURN(features::OnlineRequest request, OnlineRequestFromJson(j));
    STRATA_ASSIGN_OR_RETURN(features::OnlineAnswer answer, service->GetOnlineFeatures(request));
    std::string body = ResponseJson(answer.response);
    service->LogServed(std::move(answer));
    return body;
  }

  // /push and /write-to-online-store
  Result<std::string> Push(http::Request& req, bool push) {
    STRATA_ASSIGN_OR_RETURN(json j, ParseBody(req));
    STRATA_ASSIGN_OR_RETURN(PushTarget target, PushTargetFromJson(j, push));
    features::WriteRequest write;
    write.view = target.view;
    write.push_source = push;
    write.rows = [&j](const features::FeatureViewDef& v) {
      return TableFromDf(j.value("df", json()), v);
    };
    STRATA_RETURN_IF_ERROR(service->WriteToOnlineStore(write));
    return json::object().dump();
  }

  Result<std::string> Materialize(http::Request& req, bool incremental) {
    STRATA_ASSIGN_OR_RETURN(json j, ParseBody(req));
    STRATA_ASSIGN_OR_RETURN(features::MaterializeRequest request,
                            MaterializeRequestFromJson(j, incremental));
    STRATA_ASSIGN_OR_RETURN(features::MaterializeStats st, service->Materialize(request));
    return json{{"views", st.views},
                {"rows_scanned", st.rows_scanned},
                {"entities_written", st.entities_written}}
        .dump();
  }

  Result<std::string> Route(http::Request& req) {
    STRATA_RETURN_IF_ERROR(CheckKey(req));
    if (req.path == "/get-online-features" && req.method == "POST") return GetOnline(req);
    if (req.path == "/health") {
      if (req.method != "GET") return ProtocolError(405, "use GET");
      return json::object().dump();
    }
    if (req.method != "POST")
      return ProtocolError(req.path == "/get-online-features" ? 405 : 404, "not found");
    if (req.path == "/push" || req.path == "/write-to-online-store")
      return Push(req, req.path == "/push");
    if (req.path == "/materialize" || req.path == "/materialize-incremental")
      return Materialize(req, req.path == "/materialize-incremental");
    return Status::NotFound(fmt::format("no endpoint {}", req.path));
  }
};

Handler::Handler(features::OnlineService* service, HandlerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->service = service;
  impl_->options = std::move(options);
}

Handler::~Handler() = default;

void Handler::Handle(http::Request& req, http::ResponseWriter& w) {
  Result<std::string> body = Status::Internal("unset");
  try {
    body = impl_->Route(req);
  } catch (const json::exception& e) {
    // The decoders catch what nlohmann throws where they parse; this and the
    // next are the net, so that no exception leaves the adapter.
    body = Status::InvalidArgument(std::string("malformed request: ") + e.what());
  } catch (const std::exception& e) {
    body = ProtocolError(500, std::string("internal error: ") + e.what());
  }
  if (body.ok()) {
    w.SetStatus(200);
    w.AddHeader("Content-Type", "application/json");
    (void)w.Send(*body);
    return;
  }
  WriteError(body.error(), w);
}

void Handler::HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) {
  WriteError(ProtocolError(status, message), w);
}

}  // namespace strata::feast
